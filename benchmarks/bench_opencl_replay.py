"""Issue 31: a replay of a recorded graph of small kernels against the same kernels launched
eagerly, on the opencl kind (cl_khr_command_buffer: PoCL in CI), or any kind that records.

    EAGLE_BACKEND_OPENCL=build-opencl/libeagle_opencl.so python benchmarks/bench_opencl_replay.py \
        [--kind opencl] [--kernels 20] [--n 1024] [--calls 200] [--rounds 11]

Each case does the same work on the same array, on one stream, timed on the host (wall), per
launch of `kernels` kernels (x += 1 over n doubles each):

- eager: `kernels` x ``Stream.run(add_one, [x], n)``, then ``Stream.synchronize()``: eagle's
  Python, the seam call, the backend's argument setting and one clEnqueueNDRangeKernel per kernel;
- replay: one ``Launcher.launch()`` of a graph that recorded the same launches, then
  ``Launcher.synchronize()`` (on opencl: one clEnqueueCommandBufferKHR of `kernels` commands);
- eager, no wait / replay, no wait: the same `calls` times in a row with one synchronize at the
  end (the launch cost itself; the device runs behind).

The figures are medians over rounds of the per-launch mean of `calls` launches (rounds
interleave the cases, alternating which goes first), and the best round. The array's final
value is checked against the number of kernels run."""
import argparse
import os
import statistics
import sys
import time

import numpy as np

import eagle

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _machine import header, interleave_pairs  # noqa: E402

KERNEL = r"""
#include <eagle/kernel.h>
EAGLE_KERNEL(add_one, (double*, x)) { (void)n; x[i] += 1.0; }
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kind", default="opencl")
    ap.add_argument("--kernels", type=int, default=20)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=11)
    args = ap.parse_args()
    header("EAGLE_BACKEND_OPENCL", "EAGLE_OPENCL_COMMAND_BUFFER", "EAGLE_OPENCL_PLATFORM")
    b = eagle.backend(args.kind)
    print(f"backend: {b}")
    if not all(b.provides(g) for g in ("capturer", "captured", "graph", "launcher")):
        print(f"the {args.kind} backend does not record: {b.unavailable.get('capturer')}")
        return 1
    mod = b.compile(KERNEL, name="add_one.c", exact=True)
    n, k = args.n, args.kernels
    x = b.zeros(n)
    s = b.stream()
    with b.capture(s):
        pass  # warm the capture path once
    with b.capture(s) as cap:
        for _ in range(k):
            s.run(mod.add_one, [x], n)
    lau = b.graph_from_captured(cap.captured).launcher()
    lau.set_stream(s)
    ran = [0]

    def eager(wait_each):
        def go():
            t0 = time.perf_counter()
            for _ in range(args.calls):
                for _ in range(k):
                    s.run(mod.add_one, [x], n)
                if wait_each:
                    s.synchronize()
            s.synchronize()
            ran[0] += args.calls * k
            return (time.perf_counter() - t0) / args.calls
        return go

    def replay(wait_each):
        def go():
            t0 = time.perf_counter()
            for _ in range(args.calls):
                lau.launch()
                if wait_each:
                    lau.synchronize()
            lau.synchronize()
            ran[0] += args.calls * k
            return (time.perf_counter() - t0) / args.calls
        return go

    eager(True)(), replay(True)()  # warm-up (first-launch costs)
    pairs = {"launch + wait": (eager(True), replay(True)), "launches, one wait": (eager(False), replay(False))}
    samples = interleave_pairs(pairs, args.rounds)
    got = x.numpy()
    if not np.array_equal(got, np.full(n, float(ran[0]))):
        print(f"WRONG: x is {got[:4]}, {ran[0]} kernels ran")
        return 1
    print(f"{k} kernels of x += 1 over n={n} doubles, per launch of all {k} "
          f"(median of {args.rounds} rounds of {args.calls}; best round):")
    for name, (e, r) in samples.items():
        me, mr = statistics.median(e), statistics.median(r)
        print(f"  {name:20s} eager {1e6 * me:8.1f} us (best {1e6 * min(e):8.1f})   replay {1e6 * mr:8.1f} us "
              f"(best {1e6 * min(r):8.1f})   eager / replay {me / mr:5.2f}x")
    print(f"  kernel nodes in the launcher: {lau.kernel_node_count}; x checked: {ran[0]} kernels ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
