"""A bouncing-ball ensemble: N balls dropped from 1 m, restitution e spread over [0.05, 0.95], each
impact an event that reverses and damps the velocity (eagle.ode events with an affect); the number
of impacts in [0, 3] s plotted against e.

    x'' = -g,  at x = 0 falling: x' <- -e x',  x(0) = 1, x'(0) = 0,  t in [0, 3]

The impacts of one ball are at t1 = sqrt(2/g), then after flights 2 e^k v1 / g (v1 = g t1): they
accumulate at t1 (1 + 2e/(1-e)) (a Zeno limit) -- before 3 s for e below about 0.74. Such a ball
is stopped with the max_events failure code instead of stepping forever: at its 65th impact, or
sooner (small e) when its impacts come within the root finder's resolution of each other (~1e-12
s at t ~ 1); the plot shows the impacts each counted. Tsit5 at rtol 1e-9, atol 1e-12.

    python examples/ode/bouncing_balls.py --backend cpu --n 2000 --out bounces.png
    python examples/ode/bouncing_balls.py --backend cuda --n 1000000 --out bounces.png

matplotlib is optional: without it the script writes the counts to a .npz instead.
"""
import argparse
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "oscillator"))
from oscillator import at_least, backend_name  # noqa: E402  (the examples' argument types)

G, T_END, MAX_EVENTS = 9.81, 3.0, 64


def falling(t, y, e):
    return (y[1], -G)


def floor(t, y, e):
    return y[0]


floor.direction = -1
floor.affect = lambda t, y, e: (y[0], -e * y[1])


def run(backend, n):
    import eagle.ode
    e = np.linspace(0.05, 0.95, n)
    sol = eagle.ode.solve_ivp(falling, (0.0, T_END), np.array([1.0, 0.0]), args=(e,), events=floor,
                              max_events=MAX_EVENTS, rtol=1e-9, atol=1e-12, backend=backend)
    return e, sol


def closed_form_count(e):
    """Impacts in [0, T_END] of a ball with restitution e (infinitely many past its Zeno limit)."""
    t1 = math.sqrt(2.0 / G)
    if t1 * (1 + 2 * e / (1 - e)) <= T_END:
        return math.inf
    t, v, k = t1, G * t1, 1
    while True:
        v *= e
        t += 2 * v / G
        if t > T_END:
            return k
        k += 1


def save(e, count, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        path = os.path.splitext(out)[0] + ".npz"
        np.savez(path, e=e, count=count)
        print(f"matplotlib is not installed (pip install matplotlib for the picture): wrote the counts to {path}")
        return path
    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    ax.plot(e, count, ".", markersize=1)
    ax.set_xlabel("restitution coefficient e")
    ax.set_ylabel(f"impacts in [0, {T_END:g}] s (Zeno: stopped at {MAX_EVENTS + 1})")
    ax.set_title(f"{len(e)} bouncing balls (eagle.ode events with an affect)")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    print(f"wrote {out}")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", type=backend_name, required=True, help="cpu, cuda, hip or gpu")
    ap.add_argument("--n", type=at_least(2), default=2000, help="balls (>= 2)")
    ap.add_argument("--out", default="bouncing_balls.png", help="the PNG to write (.npz without matplotlib)")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    e, sol = run(args.backend, args.n)
    seconds = time.perf_counter() - t
    count = sol.n_events[:, 0]
    want = np.array([closed_form_count(x) for x in e])
    finite = np.isfinite(want)
    wrong = int(np.count_nonzero(count[finite] != want[finite]))
    zeno = int(np.count_nonzero(~finite))
    print(f"{args.n} balls on {args.backend} in {seconds:.2f} s: {int(np.sum(sol.n_accepted))} accepted steps; "
          f"{zeno} reach their Zeno limit (stopped by max_events), {wrong} counts differ from the closed form")
    save(e, count, args.out)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
