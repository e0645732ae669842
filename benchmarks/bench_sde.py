"""eagle.ode.solve_sde timed (issue 30): geometric Brownian motion and an up-and-out call whose paths
stop at the barrier (a terminal event), FP64, 252 steps, in eagle's default mode and bit-exact.

The model is benchmarks/bench_mc.py's (S0 100, r 0.05, sigma 0.2, one year, strike 100, barrier 115),
one shared y0 and number arguments (sent once, N = n_paths). A timing is the median of 5 solves of
an SdeSolver after a first solve that compiles and records the graph; it covers the launch and the
wait, not reading the results back (sol.y is read after the clock stops).

    python benchmarks/bench_sde.py cuda 24     # 2^24 paths on the H200
    python benchmarks/bench_sde.py cpu 14
"""
import sys
import time

import numpy as np

import eagle
import eagle.ode

R, SIGMA, S0, STRIKE, BARRIER, STEPS = 0.05, 0.2, 100.0, 100.0, 115.0, 252


def drift(t, y, r, s):
    return (r * y[0],)


def vol(t, y, r, s):
    return (s * y[0],)


def knocked(t, y, r, s):
    return y[0] - BARRIER


knocked.terminal, knocked.direction = True, 1


def main(kind, log2n):
    n = 1 << log2n
    for name, events in (("gbm", None), ("barrier", [knocked])):
        for exact in (False, True):
            sv = eagle.ode.SdeSolver(drift, vol, t_span=(0.0, 1.0), dt=1.0 / STEPS, events=events, exact=exact,
                                     seed=1, progress=False, backend=kind)
            y0 = np.array([S0])
            sv.solve(y0, (R, SIGMA), n_paths=n)  # compile and record
            ts = []
            for _ in range(5):
                t0 = time.perf_counter()
                sol = sv.solve(y0, (R, SIGMA), n_paths=n)
                ts.append(time.perf_counter() - t0)
            ms = 1e3 * float(np.median(ts))
            st, y = sol.status, sol.y[:, 0]
            value = np.where(st == 1, 0.0, np.maximum(y - STRIKE, 0.0)) if events else y
            mv = eagle.mean_var(np.ascontiguousarray(value))
            steps = sol.n_steps
            print(f"{name:8s} exact={exact!s:5s} N=2^{log2n} {ms:9.2f} ms  {n * STEPS / ms / 1e6:8.3f} G path-steps/s "
                  f"(grid)  {steps.sum() / ms / 1e6:8.3f} G taken/s  {'payoff' if events else 'S_T'} "
                  f"{mv.mean:.4f} +- {mv.stderr:.4f}  knocked {np.mean(st == 1):.1%}  mean steps {steps.mean():.1f}")
    print(f"E[S_T] closed form {S0 * np.exp(R):.4f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cpu", int(sys.argv[2]) if len(sys.argv) > 2 else 14)
