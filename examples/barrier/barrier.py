"""An up-and-out barrier call by Monte Carlo on eagle: paths stop at different times (knocked out at
their first crossing, or at maturity), so an ActiveSet keeps only the live paths running, inside a
WHILE decided on the device. The random numbers are counter-based (barrier.c), so the price does
not depend on the device or on the order lanes run in.

    python examples/barrier/barrier.py --backend cpu --n 100000
    python examples/barrier/barrier.py --backend cuda --n 10000000
"""
import argparse
import math
import os
import sys

import numpy as np

import eagle

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "oscillator"))
from oscillator import at_least, backend_name  # noqa: E402  (the examples' argument types)

#: The contract and the model: S0, strike, barrier, steps to maturity, drift and volatility per step.
PARAMS = dict(s0=100.0, strike=100.0, barrier=115.0, T=250, drift=0.01, vol=1.2, seed=20261130)


def _mix64(z):
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def numpy_reference(n, s0, strike, barrier, T, drift, vol, seed):
    """The same paths, stepped with numpy: (payoff, stopping step) per path."""
    with np.errstate(over="ignore"):
        path = np.arange(n, dtype=np.uint64)
        s = np.full(n, s0)
        t = np.zeros(n, np.int32)
        live = np.ones(n, bool)
        knocked = np.zeros(n, bool)
        for step in range(T):
            z = np.full(n, -6.0)
            for k in range(12):
                h = _mix64(np.uint64(seed) ^ _mix64(path ^ _mix64(np.uint64((step << 4) | k))))
                z = z + (h >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
            s = np.where(live, s + drift + vol * z, s)
            t = np.where(live, step + 1, t)
            crossed = live & (s >= barrier)
            knocked |= crossed
            live &= ~crossed
        payoff = np.where(knocked, 0.0, np.maximum(s - strike, 0.0))
    return payoff, t


def run(backend, n, K=16, params=PARAMS):
    """Simulate n paths on ``backend``; returns (payoff, stopping step) as numpy arrays."""
    p = dict(params)
    b = eagle.backend(backend)
    mod = b.compile(os.path.join(HERE, "barrier.c"), exact=True)  # the same bits on every kind
    s, t, payoff, mask = b.empty(n), b.empty(n, "int32"), b.empty(n), b.empty(n, "uint8")
    stream = b.stream()
    aset = eagle.ActiveSet(mask, backend=b, stream=stream)

    def reset(st):
        st.run(mod.barrier_reset, [s, t, payoff, mask, p["s0"]], n)

    def advance(st):
        st.run(mod.barrier_steps_active, [s, t, payoff, mask, p["drift"], p["vol"], p["barrier"], p["strike"],
                                          p["T"], K, p["seed"], aset.index_map, aset.count], n)

    loop = eagle.repeat_while([advance, aset], aset, math.ceil(p["T"] / K) + 1, name="K steps")
    graph = eagle.Graph.build([reset, aset, loop], planes=[s, t, payoff, mask], stream=stream, toggle=False)
    graph.launch()
    graph.synchronize()
    return payoff.numpy(), t.numpy()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", type=backend_name, required=True, help="cpu, cuda, hip or gpu")
    ap.add_argument("--n", type=at_least(2), default=100000,
                    help="paths (>= 2: the price's error bar is their standard deviation)")
    args = ap.parse_args()
    payoff, t = run(args.backend, args.n)
    price, se = payoff.mean(), payoff.std(ddof=1) / math.sqrt(args.n)
    out = np.mean(t < PARAMS["T"])
    print(f"{args.n} paths on {args.backend}: price {price:.4f} +- {se:.4f}; knocked out {out:.1%}; "
          f"mean stopping step {t.mean():.1f}")


if __name__ == "__main__":
    main()
