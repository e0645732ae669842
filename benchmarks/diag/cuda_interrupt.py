"""Where a cuda process goes after Ctrl-C of a kernel that never ends (issue 28): each stage is
printed as it starts; a stage that hangs shows in the faulthandler dumps (every 6 s).

    timeout 60 python benchmarks/diag/cuda_interrupt.py [--pre-alloc] [--graph] [--kind cuda]

--graph launches the kernel as a replayed graph (eagle.Graph.build) and waits on the graph.
"""
import argparse
import faulthandler
import os
import signal
import sys
import threading
import time

import numpy as np

import eagle

SRC = """
#include <eagle/kernel.h>
EAGLE_KERNEL(forever, (double*, x)) { (void)n; volatile double* v = x; while (v[i] >= 0.0) {} }
EAGLE_KERNEL(axpb, (double*, y), (double, a), (double, b)) { (void)n; y[i] = y[i] * a + b; }
"""


def stage(what):
    print(f"[{time.monotonic() - T0:7.3f}] {what}", flush=True)


T0 = time.monotonic()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", default="cuda")
    ap.add_argument("--pre-alloc", action="store_true", help="allocate and fill y before the kernel starts")
    ap.add_argument("--graph", action="store_true", help="the kernel in a replayed graph")
    args = ap.parse_args()
    faulthandler.dump_traceback_later(6, repeat=True)
    # a background job of a non-interactive shell (`python ... &`) starts with SIGINT ignored, and
    # Python then installs no handler for it: the diagnosis needs KeyboardInterrupt
    signal.signal(signal.SIGINT, signal.default_int_handler)
    b = eagle.backend(args.kind)
    mod = eagle.compile(SRC, backend=b, name="waits.c")
    x = eagle.zeros(4, backend=b)
    y = eagle.asarray(np.arange(4.0), backend=b) if args.pre_alloc else None
    s = b.stream()
    stage(f"enqueue forever on {s}" + (" (a graph)" if args.graph else ""))
    if args.graph:
        g = eagle.Graph.build([lambda st: st.run(mod.forever, [x], 4)], planes=[x], stream=s)
        g.launch()
        wait = g.synchronize
        sync = g._launcher._bound[-1]
        stage(f"the graph's wait: {sync!r}, interruptible: {getattr(sync, 'interruptible', '(the cffi path)')}")
    else:
        s.run(mod.forever, [x], 4)
        wait = s.synchronize
    threading.Timer(0.4, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    stage("synchronize (SIGINT in 0.4 s)")
    try:
        wait()
        stage("synchronize returned (?)")
    except KeyboardInterrupt:
        stage("KeyboardInterrupt")
    stage("b.stream()")
    s2 = b.stream()
    if y is None:
        stage("eagle.asarray (allocation + copy)")
        y = eagle.asarray(np.arange(4.0), backend=b)
    stage("s2.run axpb")
    s2.run(mod.axpb, [y, 2.0, 1.0], 4)
    stage("s2.synchronize")
    s2.synchronize()
    stage("y.numpy()")
    print(y.numpy().tolist(), flush=True)
    stage("s2.close")
    s2.close()
    stage("end of main: interpreter exit follows")


if __name__ == "__main__":
    main()
    sys.stdout.flush()
