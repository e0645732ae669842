"""Does reorder= pay for a body that waits on memory? (issue 17, diagnostic)

n samples, each owning 8 double rows of a (8, n) plane, take one step a WHILE iteration (a
multiply-add on each of their 8 values: 128 bytes for 16 flops) until their own step count
(log-uniform in 1..T, scattered over the samples, as on the oscillator card) is reached. The loop
is recorded with an ActiveSet without reorder, and with reorder=theta owning the plane; both
results must be equal (after restore()). Times are the graph's launch + synchronize.

    python3 benchmarks/diag/reorder_memory_bound.py --backend cpu --n 2097152
"""
import argparse
import math
import os
import statistics
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(os.path.dirname(HERE), "kernels", "memory_bound.c")


def build(b, mod, n, T, theta):
    import eagle
    i = np.arange(n, dtype=np.int64)
    u = ((i * 2654435761) % (1 << 32)) / float(1 << 32)
    target = b.asarray(np.maximum(1, np.floor(np.exp(u * math.log(T)))).astype(np.int32))
    p, done, mask = b.zeros((8, n)), b.zeros(n, "int32"), b.zeros(n, "uint8")
    s = b.stream()
    aset = eagle.ActiveSet(mask, reorder=theta, planes=[p, done, target] if theta else (), backend=b, stream=s)

    def reset(st):
        st.run(mod.mb_reset, [p, done, mask], n)

    def step(st):
        st.run(mod.mb_step_active, [p, done, target, mask, aset.index_map, aset.count], n)

    loop = eagle.repeat_while([step, aset], aset, T + 1, name="one step + compact")
    g = eagle.Graph.build([reset, aset, loop], planes=[mask, p, done, target], stream=s, toggle=False)
    return g, aset, p, loop


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--n", type=int, default=1 << 21)
    ap.add_argument("--T", type=int, default=64, help="step counts are log-uniform in 1..T-1")
    ap.add_argument("--theta", type=float, default=0.5)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    import eagle
    b = eagle.backend(args.backend)
    mod = eagle.compile(SOURCE, backend=b, kernels=["mb_reset", "mb_step_active"])
    runs = {name: build(b, mod, args.n, args.T, theta) for name, theta in (("no reorder", None),
                                                                            (f"reorder {args.theta:g}", args.theta))}
    times, restore = {k: [] for k in runs}, []
    for rep in range(args.reps + 1):
        for name, (g, aset, p, loop) in runs.items():
            t0 = time.perf_counter()
            g.launch()
            g.synchronize()
            if rep:
                times[name].append(time.perf_counter() - t0)
            if aset.theta is not None:
                t0 = time.perf_counter()
                aset.restore()
                if rep:
                    restore.append(time.perf_counter() - t0)
    results = [np.asarray(p.numpy()) for (_, _, p, _) in runs.values()]
    same = np.array_equal(results[0], results[1])
    iters = {name: g.ran(loop) for name, (g, _, _, loop) in runs.items()}
    print(f"backend {args.backend}, n = {args.n}, steps log-uniform in 1..{args.T - 1}, median of {args.reps}")
    print("| loop | graph (ms) | min (ms) | WHILE iterations |")
    print("|---|---|---|---|")
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(ts) * 1e3:.2f} | {min(ts) * 1e3:.2f} | {iters[name]} |")
    names = list(times)
    ratio = statistics.median(times[names[1]]) / statistics.median(times[names[0]])
    print(f"- with reorder / without: {ratio:.3f}x; restore() after each run {statistics.median(restore) * 1e3:.2f} ms "
          f"(not in the graph's time); results equal: {'PASS' if same else 'FAIL'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
