"""What can a reorder win on the card, and what does it cost? (issue 17, diagnostic)

1. The card's step kernel (osc_steps_active, K steps, FP64 RK4) over `count` live samples of
   N = 10^6, through an index map that is either scattered (the live samples spread uniformly,
   as without reorder) or contiguous (0 .. count-1, as right after a reorder). The difference is
   all a reorder can win per iteration on this card.
2. An unfired reorder (ActiveSet(reorder=0.5).compact() with every sample live, so it never
   fires) against a plain compaction, in a graph of R calls: what every iteration pays for
   having reorder on.

    python3 benchmarks/diag/reorder_gain.py [--n 1000000] [--k 32]
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def timed(graph, reps):
    graph.launch()
    graph.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        graph.launch()
        graph.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--calls", type=int, default=20, help="launches recorded in one graph")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--backend", default="cuda")
    args = ap.parse_args()
    import eagle
    import oscillators

    b = eagle.backend(args.backend)
    n, K, R = args.n, args.k, args.calls
    k = oscillators.load_kernels(b)
    omega, zeta, _ = oscillators.workload(n)
    om, ze = b.asarray(omega), b.asarray(zeta)
    x, v = b.asarray(np.ones(n)), b.zeros(n)
    done = b.zeros(n, "int32")
    target = b.asarray(np.full(n, 1 << 30, np.int32))  # nobody finishes while timed
    mask = b.zeros(n, "uint8")
    s = b.stream()
    rng = np.random.default_rng(7)
    print(f"step kernel osc_steps_active, N={n}, K={K}, {R} launches a graph, median of {args.reps}")
    print("| live fraction | scattered (us/launch) | contiguous (us/launch) | scattered / contiguous | won per launch (us) |")
    print("|---|---|---|---|---|")
    for frac in (1.0, 0.5, 0.3, 0.2, 0.1, 0.05):
        count = int(n * frac)
        scattered = np.sort(rng.choice(n, count, replace=False)).astype(np.int32)
        times = []
        for imap_host in (scattered, np.arange(count, dtype=np.int32)):
            imap = b.asarray(np.concatenate([imap_host, np.zeros(n - count, np.int32)]))
            cnt = b.asarray(np.array([count], np.uint32))

            def step(st, imap=imap, cnt=cnt):
                st.run(k.osc_steps_active, [x, v, om, ze, done, target, mask, K, imap, cnt], n)

            g = eagle.Graph.build([step] * R, planes=[x], stream=s)
            times.append(timed(g, args.reps) / R * 1e6)
        print(f"| {frac:g} | {times[0]:.2f} | {times[1]:.2f} | {times[0] / times[1]:.3f} | {times[0] - times[1]:.2f} |",
              flush=True)

    print(f"\nunfired reorder: ActiveSet.compact() with every sample live, N={n}, {R} calls a graph")
    m2 = b.zeros(n, "uint8")
    plain = eagle.ActiveSet(m2, backend=b, stream=s)
    m3 = b.zeros(n, "uint8")
    planes = [b.zeros(n) for _ in range(4)] + [b.zeros(n, "int32") for _ in range(2)]
    reo = eagle.ActiveSet(m3, reorder=0.5, planes=planes, backend=b, stream=s)
    res = {}
    for name, aset in (("compact", plain), ("compact + unfired reorder", reo)):
        g = eagle.Graph.build([aset] * R, planes=[aset.mask], stream=s)
        res[name] = timed(g, args.reps) / R * 1e6
        print(f"- {name}: {res[name]:.2f} us a call")
    print(f"- an unfired reorder costs {res['compact + unfired reorder'] - res['compact']:.2f} us a call")


if __name__ == "__main__":
    main()
