"""Ctrl-C during a drained run calibrated to last 60 s (ActiveSet.drain on one stream, issue 42):
prints the time from SIGINT to KeyboardInterrupt, the time the next drain of the same ActiveSet
takes (1000 rounds), and the monotonic time of its last line; run it under `time` (or compare
with the shell's clock) for the exit.

    python benchmarks/diag/interrupt_drain.py [--kind cpu]
"""
import os, signal, threading, time, sys
import argparse as _ap
import numpy as np
import eagle
KIND = _ap.ArgumentParser(); KIND.add_argument("--kind", default="cpu"); KIND = KIND.parse_args().kind
b = eagle.backend(KIND)
mod = eagle.compile("""
#include <eagle/kernel.h>
EAGLE_KERNEL(adv, (double*, x), (uint8_t*, m)) { x[i] += 1.0; if (x[i] > 1e300) m[i] = 1; }
""", backend=b, kernels=["adv", "adv_drain"], name="d.c")
n = 8
x = eagle.zeros(n, backend=b); m = eagle.zeros(n, "uint8", backend=b)
a = eagle.ActiveSet(m, backend=b)
s = b.stream()
# calibrate: rounds for ~60 s
a.drain(s, mod.adv_drain, [x, m], 10**6, compacted=False); t=time.monotonic(); s.synchronize(); 
per = (time.monotonic()-t)/1e6
rounds = int(60/per)
print("rounds", rounds, "per", per, flush=True)
def go():
    a.drain(s, mod.adv_drain, [x, m], rounds, compacted=False)
    s.synchronize()
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
try:
    go(); print("not interrupted")
except KeyboardInterrupt:
    print("KI after", time.monotonic()-t0 - 1.0, flush=True)
t1 = time.monotonic()
x2 = eagle.zeros(n, backend=b)
a.drain(s, mod.adv_drain, [x2, m], 1000, compacted=False); s.synchronize()
print("next run took", time.monotonic()-t1, x2.numpy()[:3], flush=True)
print("exiting at", time.monotonic(), flush=True)
