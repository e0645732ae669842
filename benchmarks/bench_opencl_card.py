"""The oscillator card on the opencl kind against another kind in the same run (issue 31).

Times Graph.launch + synchronize of the card as examples/oscillator/oscillator.py builds it (reset,
one drained launch, compaction; exact mode), after one warm-up launch, and checks that every kind
gave the first kind's bits. The opencl backend is the library $EAGLE_BACKEND_OPENCL (built from
backends/opencl); $EAGLE_OPENCL_PLATFORM picks the platform (e.g. NVIDIA).

    python benchmarks/bench_opencl_card.py --kinds cuda,opencl --n 1000000
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np

import eagle

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples", "oscillator"))
import oscillator as card  # noqa: E402


def build(kind, n, K=32):
    b = eagle.backend(kind)
    mod = b.compile(os.path.join(card.HERE, "oscillator.c"), exact=True)
    omega, zeta, steps = card.workload(n)
    x, v = b.empty(n), b.empty(n)
    done, mask = b.empty(n, "int32"), b.empty(n, "uint8")
    om, ze, target = b.asarray(omega), b.asarray(zeta), b.asarray(steps)
    stream = b.stream()
    aset = eagle.ActiveSet(mask, backend=b, stream=stream)
    rounds = math.ceil(int(steps.max()) / K) + 1

    def reset(s):
        s.run(mod.osc_reset, [x, v, done, mask], n)

    def drain(s):
        aset.drain(s, mod.osc_steps_drain, [x, v, om, ze, done, target, mask, K], rounds, compacted=False)

    graph = eagle.Graph.build([reset, drain, aset], planes=[mask, x, v, om, ze, done, target], stream=stream,
                              toggle=False)
    return b, graph, (x, v, mod, om, ze, done, target, mask)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kinds", default="cpu,opencl", help="comma-separated kinds; the first is the reference")
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    out, ref = {"n": args.n, "reps": args.reps, "kinds": {}}, None
    for kind in args.kinds.split(","):
        b, graph, keep = build(kind, args.n)
        graph.launch()
        graph.synchronize()  # warm-up (first-launch costs: kernel JIT, allocation)
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            graph.launch()
            graph.synchronize()
            times.append(time.perf_counter() - t0)
        x, v = keep[0].numpy(), keep[1].numpy()
        same = None if ref is None else bool(np.array_equal(x, ref[0]) and np.array_equal(v, ref[1]))
        ref = ref or (x, v)
        out["kinds"][kind] = {"backend": str(b), "median_ms": 1e3 * statistics.median(times),
                              "min_ms": 1e3 * min(times), "bits_equal_to_first": same,
                              "decides_on_device": graph.decides_on_device}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
