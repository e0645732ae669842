"""What forward sensitivities cost a stiff ensemble (issue 40 with issue 39's methods): Robertson's
kinetics (k1 +-20 % per sample, t in [0, 1e5], rtol 1e-6, atol 1e-10) solved plain and with its
sensitivities to P = 1, 3 and 6 parameters (k1; k1, k2, k3; those and y0), each a
SensitivitySolver compiled once, timed back to back (best of --reps after a warm-up). The issue's
bound is (1 + P) x a plain solve; a Rosenbrock method's sensitivities share y's LU (eagle/ode/
_linalg.py's solve_w), so they cost less.

    python benchmarks/bench_stiff_sensitivity.py --backend cpu --n 2048
    python benchmarks/bench_stiff_sensitivity.py --backend cuda --n 1048576
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]
import _machine  # noqa: E402

import eagle.ode as eo  # noqa: E402


def rober(t, y, k1, k2, k3):
    return (-k1 * y[0] + k3 * y[1] * y[2],
            k1 * y[0] - k2 * y[1] * y[1] - k3 * y[1] * y[2],
            k2 * y[1] * y[1])


SPECS = [(1, ("k1",)), (3, ("k1", "k2", "k3")), (6, ("k1", "k2", "k3", "y0"))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--methods", default="Rodas5P,Rosenbrock23")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args(argv)
    _machine.header()
    k1 = 0.04 * np.linspace(0.8, 1.2, a.n)
    y0 = np.tile([1.0, 0.0, 0.0], (a.n, 1))
    args = (k1, 3e7, 1e4)
    kw = dict(t_span=(0.0, 1e5), n_state=3, n_args=3, rtol=1e-6, atol=1e-10, backend=a.backend)
    for method in a.methods.split(","):
        solvers = [(0, eo.Solver(rober, method=method, **kw))]
        solvers += [(p, eo.SensitivitySolver(rober, method=method, sensitivity=s, **kw)) for p, s in SPECS]
        best = {}
        for p, s in solvers + solvers[:1]:  # the plain solve again last: the drift over the run
            s.solve(y0, args)
            times = []
            for _ in range(a.reps):
                t = time.perf_counter()
                sol = s.solve(y0, args)
                times.append(time.perf_counter() - t)
            assert np.all(sol.status == 0), sol.failure
            best.setdefault(p, []).append(min(times))
        plain = min(best[0])
        print(f"{method}, N = {a.n}, {a.backend}: plain {plain * 1e3:.1f} ms (first and last "
              f"{', '.join(f'{x * 1e3:.1f}' for x in best[0])} ms)")
        for p, _ in SPECS:
            print(f"  P = {p}: {best[p][0] * 1e3:9.1f} ms = {best[p][0] / plain:5.2f} x plain (bound 1 + P = {1 + p})")


if __name__ == "__main__":
    main()
