"""The oscillator card on the cpu kind against its OpenMP reference, interleaved in one process for
a host shared with other work: each round runs every case once (the order alternating), rounds
wait until the host is idle, and medians are reported.

Cases: eagle's single kernel (osc_single through run_device) and the graph (WHILE + compaction),
the same two on a second cpu backend library given with --before (an A/B of two builds, e.g. the
libeagle_cpu.so of main), and the OpenMP loop over the same per-sample body (static and dynamic
schedules; oscillators.peer_openmp).

    python benchmarks/cpu_interleaved.py --n 100000 --rounds 9
    python benchmarks/cpu_interleaved.py --n 100000 --rounds 9 --before /path/to/old/libeagle_cpu.so
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oscillators as osc  # noqa: E402


def host_busy(dt=0.5):
    """Fraction of the host's CPU time not idle over dt seconds (/proc/stat); 0 where unknown."""
    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]
    try:
        a = snap()
        time.sleep(dt)
        b = snap()
    except OSError:
        return 0.0
    return 1.0 - (b[1] - a[1]) / max(1, b[0] - a[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--before", help="path of another libeagle_cpu.so to time beside the installed one")
    ap.add_argument("--idle", type=float, default=0.08, help="busy fraction under which a round may start")
    ap.add_argument("--max-wait", type=float, default=300.0, help="seconds a round waits for an idle host")
    args = ap.parse_args(argv)

    after = osc.Card("cpu", args.n, args.k)
    cards = [("", after)]
    if args.before:
        cards.insert(0, ("before: ", osc.Card(args.before, args.n, args.k)))
        cards[1] = ("after:  ", after)
    cases = []
    for label, c in cards:
        cases += [(f"{label}eagle single kernel", c.run_single, c), (f"{label}eagle graph", c.run_graph, c)]
    omega, zeta, steps = after.host
    threads = None
    for dynamic in (False, True):
        run, _, threads = osc.peer_openmp(omega, zeta, steps, dynamic)
        cases.append((f"OpenMP schedule({'dynamic, 256' if dynamic else 'static'})", run, None))
    ok = True
    bits = {}
    for name, fn, c in cases:
        fn()
        if c is not None:
            x, v = (c.result() if "graph" in name else (c.x.numpy(), c.v.numpy()))
            bits[name] = (x.copy(), v.copy())
    ref = bits[cases[0][0]]
    for name, (x, v) in bits.items():
        same = np.array_equal(x, ref[0]) and np.array_equal(v, ref[1])
        ok &= same
        print(f"{name}: {'same bits as ' + cases[0][0] if same else 'DIFFERENT bits from ' + cases[0][0]}")

    times = {name: [] for name, _, _ in cases}
    waited, busy = 0.0, []
    for r in range(args.rounds):
        t0 = time.perf_counter()
        while (u := host_busy()) > args.idle and time.perf_counter() - t0 < args.max_wait:
            time.sleep(0.5)
        waited += time.perf_counter() - t0
        busy.append(u)
        for name, fn, _ in (cases if r % 2 == 0 else cases[::-1]):
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    base = statistics.median(times[cases[-2][0]])
    print(f"\nN={args.n} K={args.k} rounds={args.rounds}; eagle cpu threads "
          f"{after.backend.device_props().sm_count}, OpenMP threads {threads}, host CPUs {os.cpu_count()}; "
          f"host busy before a round (median) {100 * statistics.median(busy):.0f}%, waited {waited:.0f} s, "
          f"load average {os.getloadavg()[0]:.2f}")
    print("\n| case | median ms | min ms | OpenMP static / case |\n|---|---|---|---|")
    for name, _, _ in cases:
        m = statistics.median(times[name])
        print(f"| {name} | {m * 1e3:.2f} | {min(times[name]) * 1e3:.2f} | {base / m:.3f} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
