"""What interruptible waits cost (issue 28): eagle's wait, which polls the seam's completion query
(eagle_backend_stream_query / launcher_query, seam minor 8) so that signals are handled, against
the blocking synchronize it replaced, bound the same way (eagle._hotcall, no query) on the same
handles, interleaved in one run (one process: the device VM's launch-cost modes do not mix in).

    python benchmarks/bench_wait_poll.py [--backend cpu|cuda] [--rounds 15] [--calls 400]

Cases (each: eagle's wait vs the blocking one, per call, median over rounds):
- an idle stream (the wait is one seam call either way);
- ``s.run(k, [x], n)`` then the wait: a worker round trip (~10-50 us), inside the spin phase;
- a replay of a one-kernel graph, then the launcher's wait;
- kernels of about 0.3, 1, 3 and 10 ms, then the wait: past the spin phase, where the polled wait
  sleeps between queries (its cost is the wake-up latency it adds).
The figures depend on the machine's load; compare the two columns of one run."""
import argparse
import statistics
import time

import numpy as np

import eagle
from eagle import benchknobs

SRC = r"""
#include <eagle/kernel.h>
EAGLE_KERNEL(add1, (double*, x)) { (void)n; x[i] += 1.0; }
EAGLE_KERNEL(busy, (double*, x), (int64_t, steps)) {
    (void)n; double v = x[i]; for (int64_t k = 0; k < steps; ++k) v = v * 0.999999 + 1e-9; x[i] = v; }
"""


def blocking(owner, name):
    """The wait as it was: the same bound call with no completion query (it blocks in C)."""
    assert name in ("stream_synchronize", "launcher_synchronize"), name
    return benchknobs.blocking_synchronize(owner)


def per_call(fn, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def calibrate(b, s, mod, x, seconds):
    """Steps of `busy` over one lane that take about `seconds` (median of 5 runs, after a warm-up)."""
    def took(steps):
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            s.run(mod.busy, [x, steps], 1)
            s.synchronize()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)
    took(1000)
    steps = 1000
    while (dt := took(steps)) < 0.005:
        steps *= 4
    return max(1, int(steps * seconds / dt))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--backend", default="cpu")
    args = ap.parse_args()
    b = eagle.backend(args.backend)
    mod = eagle.compile(SRC, backend=b, name="bench_wait_poll.c")
    s = b.stream()
    x = eagle.zeros(64, backend=b)
    old_s = blocking(s, "stream_synchronize")
    g = eagle.Graph.build([lambda st: st.run(mod.add1, [x], 64)], planes=[x], stream=s)
    launcher = g._launcher
    old_l = blocking(launcher, "launcher_synchronize")
    assert benchknobs.hot_path_compiled(s.synchronize), "built without eagle._hotcall: nothing to compare"

    def run_then(wait):
        def f():
            s.run(mod.add1, [x], 64)
            wait()
        return f

    def replay_then(wait):
        def f():
            launcher.launch()
            wait()
        return f

    cases = {
        "idle stream": (s.synchronize, old_s, args.calls * 10),
        "run + wait (worker round trip)": (run_then(s.synchronize), run_then(old_s), args.calls),
        "graph replay + launcher wait": (replay_then(launcher.synchronize), replay_then(old_l), args.calls),
    }
    for ms in (0.3, 1.0, 3.0, 10.0):
        steps = calibrate(b, s, mod, x, ms / 1000)

        def busy_then(wait, steps=steps):
            def f():
                s.run(mod.busy, [x, steps], 1)
                wait()
            return f
        calls = max(5, int(args.calls * 0.3 / ms / 4))
        cases[f"kernel of ~{ms:g} ms + wait"] = (busy_then(s.synchronize), busy_then(old_s), calls)

    results = {k: ([], []) for k in cases}
    for r in range(args.rounds):
        for name, (new, old, calls) in cases.items():
            pair = [(0, new), (1, old)] if r % 2 == 0 else [(1, old), (0, new)]
            for i, fn in pair:
                results[name][i].append(per_call(fn, calls))
    print(f"backend {b.kind} ({b.path}); {args.rounds} interleaved rounds; median us per call")
    print(f"{'case':36s} {'polled (us)':>12s} {'blocking (us)':>14s} {'ratio':>7s}")
    for name, (new, old) in results.items():
        n, o = statistics.median(new) * 1e6, statistics.median(old) * 1e6
        print(f"{name:36s} {n:12.1f} {o:14.1f} {n / o:7.3f}")


if __name__ == "__main__":
    main()
