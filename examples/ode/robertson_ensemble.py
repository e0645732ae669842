"""Robertson's chemical kinetics as an ensemble: N samples whose first rate constant k1 is spread
+-20 % around 0.04, solved by eagle.ode's Rodas5P (the Jacobian derived from the traced right-hand
side), and the three species plotted against log-time (the classic picture of a stiff problem:
y2 rises to 3.6e-5 within 1e-3 s and the rest happens over 1e5 s).

    y1' = -k1 y1 + k3 y2 y3,  y2' = k1 y1 - k2 y2^2 - k3 y2 y3,  y3' = k2 y2^2
    k2 = 3e7, k3 = 1e4, y(0) = (1, 0, 0), t in [0, 1e5], rtol 1e-6, atol 1e-10

    python examples/ode/robertson_ensemble.py --backend cpu --n 1000 --out robertson.png
    python examples/ode/robertson_ensemble.py --backend cuda --n 1000000 --no-plot

matplotlib is optional (and --no-plot skips the picture): the script then writes the curves to a
.npz instead, or nothing with --no-plot.
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "oscillator"))
from oscillator import at_least, backend_name  # noqa: E402  (the examples' argument types)

T_END, N_EVAL = 1e5, 61


def robertson(t, y, k1, k2, k3):
    return [-k1 * y[0] + k3 * y[1] * y[2],
            k1 * y[0] - k2 * y[1] ** 2 - k3 * y[1] * y[2],
            k2 * y[1] ** 2]


def run(backend, n, method="Rodas5P"):
    """Solve the n samples; returns (k1 (n,), t_eval (T,), the solution): sol.ys is (n, 3, T)."""
    import eagle.ode
    k1 = 0.04 * np.linspace(0.8, 1.2, n)
    y0 = np.tile([1.0, 0.0, 0.0], (n, 1))
    t_eval = np.logspace(-6, 5, N_EVAL)
    sol = eagle.ode.solve_ivp(robertson, (0.0, T_END), y0, method=method, args=(k1, 3e7, 1e4), t_eval=t_eval,
                              rtol=1e-6, atol=1e-10, backend=backend)
    return k1, t_eval, sol


def save(k1, t_eval, sol, out):
    """The picture (PNG, matplotlib's Agg backend) of every species against log t, one thin line
    per sample (at most 200 drawn), y2 scaled by 1e4 as in Hairer and Wanner's figure; or the
    curves to a .npz beside it when matplotlib is not installed. Returns the path written."""
    ys = np.asarray(sol.ys)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        path = os.path.splitext(out)[0] + ".npz"
        np.savez(path, k1=k1, t=t_eval, ys=ys, status=sol.status)
        print(f"matplotlib is not installed (pip install matplotlib for the picture): wrote the curves to {path}")
        return path
    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=120)
    pick = np.linspace(0, len(k1) - 1, min(len(k1), 200)).astype(int)
    for c, (label, scale) in enumerate([("$y_1$", 1.0), ("$10^4\\,y_2$", 1e4), ("$y_3$", 1.0)]):
        color = ["tab:blue", "tab:red", "tab:green"][c]
        for j, s in enumerate(pick):
            ax.semilogx(t_eval, scale * ys[s, c], color=color, lw=0.4, alpha=0.5, label=label if j == 0 else None)
    ax.set_xlabel("t")
    ax.set_ylabel("concentration")
    ax.set_title(f"Robertson's kinetics, {len(k1)} samples, k1 in [{k1.min():.3g}, {k1.max():.3g}] "
                 f"(eagle.ode, {sol.method})")
    ax.legend(loc="center left")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    print(f"wrote {out}")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", type=backend_name, required=True, help="cpu, cuda, hip or gpu")
    ap.add_argument("--n", type=at_least(1), default=1000, help="samples (>= 1)")
    ap.add_argument("--method", default="Rodas5P", choices=["Rodas5P", "Kvaerno5", "Rosenbrock23"])
    ap.add_argument("--out", default="robertson.png", help="the PNG to write (.npz without matplotlib)")
    ap.add_argument("--no-plot", action="store_true", help="solve and report only")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    k1, t_eval, sol = run(args.backend, args.n, args.method)
    seconds = time.perf_counter() - t
    failed = int(np.count_nonzero(sol.status != 0))
    print(f"{args.n} Robertson samples on {args.backend} in {seconds:.2f} s ({args.method}, Jacobian "
          f"{sol.jacobian}): {int(np.max(sol.n_accepted))} accepted steps at most, {failed} failed")
    if not args.no_plot:
        save(k1, t_eval, sol, args.out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
