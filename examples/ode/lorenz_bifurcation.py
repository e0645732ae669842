"""The Lorenz system's bifurcation picture: N trajectories, rho spread over [0, 200], each solved
by eagle.ode, and rho plotted against the local maxima of z once the transient has passed.

    x' = 10 (y - x),  y' = x (rho - z) - y,  z' = x y - 8/3 z,  u0 = (1, 0, 0),  t in [0, 40]

Tsit5 at rtol 1e-6, atol 1e-8; z is sampled by dense output (t_eval) on [20, 40] and its local
maxima found on those samples (refined by a parabola through the three points around each). Below
rho = 1 every trajectory falls to the origin; up to rho ~ 24.7 to a fixed point with z = rho - 1;
beyond, the chaotic band and its periodic windows.

    python examples/ode/lorenz_bifurcation.py --backend cpu --n 2000 --out lorenz.png
    python examples/ode/lorenz_bifurcation.py --backend cuda --n 100000 --out lorenz.png

matplotlib is optional: without it the script says so and writes the points to a .npz instead.
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "oscillator"))
from oscillator import at_least, backend_name  # noqa: E402  (the examples' argument types)

T_TRANSIENT, T_END, N_EVAL = 20.0, 40.0, 1000
RHO_MAX = 200.0


def lorenz(t, y, rho):
    sigma, beta = 10.0, 8.0 / 3.0
    return (sigma * (y[1] - y[0]), y[0] * (rho - y[2]) - y[1], y[0] * y[1] - beta * y[2])


def run(backend, n, rho_max=RHO_MAX, n_eval=N_EVAL):
    """Solve the n trajectories; returns (rho (n,), the solution). sol.ys[:, 2, :] is z on t_eval."""
    import eagle.ode
    rho = np.linspace(0.0, rho_max, n)
    y0 = np.tile([1.0, 0.0, 0.0], (n, 1))
    t_eval = np.linspace(T_TRANSIENT, T_END, n_eval)
    sol = eagle.ode.solve_ivp(lorenz, (0.0, T_END), y0, method="Tsit5", args=(rho,), t_eval=t_eval,
                              rtol=1e-6, atol=1e-8, backend=backend)
    return rho, sol


def local_maxima(z):
    """(sample index, value) of every interior local maximum of z (n, T) along time, each refined by
    the vertex of the parabola through it and its two neighbours (equally spaced samples)."""
    a, b, c = z[:, :-2], z[:, 1:-1], z[:, 2:]
    hit = (b > a) & (b >= c)
    i, k = np.nonzero(hit)
    a, b, c = a[i, k], b[i, k], c[i, k]
    curvature = a - 2.0 * b + c                      # < 0 at a maximum; 0 only on a flat top
    safe = np.where(curvature < 0.0, curvature, -1.0)
    vertex = np.where(curvature < 0.0, b - (c - a) ** 2 / (8.0 * safe), b)
    return i, vertex


def save(rho, sol, out):
    """Write the picture to `out` (PNG, matplotlib's Agg backend, no display), or the points to a
    .npz beside it when matplotlib is not installed. Returns the path written."""
    i, zmax = local_maxima(np.asarray(sol.ys)[:, 2, :])
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        path = os.path.splitext(out)[0] + ".npz"
        np.savez(path, rho=rho, max_rho=rho[i], max_z=zmax, final_z=np.asarray(sol.y)[:, 2], status=sol.status)
        print(f"matplotlib is not installed (pip install matplotlib for the picture): wrote the points to {path}")
        return path
    fig, ax = plt.subplots(figsize=(9, 6), dpi=120)
    ax.plot(rho[i], zmax, ".", markersize=0.5, color="k", alpha=0.3)
    still = np.bincount(i, minlength=len(rho)) == 0          # no maximum after the transient: at rest
    ax.plot(rho[still], np.asarray(sol.y)[still, 2], ".", markersize=2, color="tab:blue")
    ax.set_xlabel(r"$\rho$")
    ax.set_ylabel(r"local maxima of $z$ for $t \in [%g, %g]$ (blue: final $z$ at rest)" % (T_TRANSIENT, T_END))
    ax.set_title(f"Lorenz system, {len(rho)} trajectories (eagle.ode, Tsit5)")
    ax.set_xlim(0.0, rho.max() if len(rho) > 1 else 1.0)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    print(f"wrote {out}")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", type=backend_name, required=True, help="cpu, cuda, hip or gpu")
    ap.add_argument("--n", type=at_least(2), default=2000, help="trajectories (>= 2)")
    ap.add_argument("--out", default="lorenz_bifurcation.png", help="the PNG to write (.npz without matplotlib)")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    rho, sol = run(args.backend, args.n)
    seconds = time.perf_counter() - t
    failed = int(np.count_nonzero(sol.status != 0))
    print(f"{args.n} Lorenz trajectories on {args.backend} in {seconds:.2f} s: "
          f"{int(np.sum(sol.n_accepted))} accepted steps, {failed} failed")
    save(rho, sol, args.out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
