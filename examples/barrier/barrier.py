"""An up-and-out barrier call by Monte Carlo on eagle: paths stop at different times (knocked out at
their first crossing, or at maturity), so an ActiveSet keeps only the live paths running, inside a
WHILE decided on the device. The normals come from <eagle/random.h> (Philox4x32-10, Box-Muller), so
the price does not depend on the device or on the order lanes run in; the result's mean and
standard error are reduced on the device (eagle.mean_var) and printed beside the closed form.

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

#: Broadie, Glasserman & Kou (1997): a barrier watched at steps of volatility vol is priced like
#: one watched all the time at a distance BGK_BETA * vol further away; BGK_BETA = -zeta(1/2) / sqrt(2 pi).
BGK_BETA = 0.5825971579390106


def _ndtr(x):
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _pdf(x):
    return math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def continuous_price(s0, strike, barrier, T, drift, vol, seed=None):
    """The up-and-out call with the barrier watched at every instant, in closed form: X_T of
    X = s0 + drift t + vol W_t has, on the paths that never reach the barrier B, the density
    phi(x; m, v) - exp(2 drift (B - s0) / vol^2) phi(x; 2B - s0 + drift T, v) for x < B (the
    reflection principle), m = s0 + drift T, v = vol^2 T; the price integrates (x - strike) over
    [strike, B) against it. ``seed`` is ignored (it lets PARAMS be passed whole)."""
    sd = vol * math.sqrt(T)

    def piece(m):  # integral over [strike, B) of (x - strike) phi(x; m, sd^2)
        b, k = (barrier - m) / sd, (strike - m) / sd
        return (m - strike) * (_ndtr(b) - _ndtr(k)) + sd * (_pdf(k) - _pdf(b))

    if barrier <= max(s0, strike):
        return 0.0
    return piece(s0 + drift * T) - math.exp(2.0 * drift * (barrier - s0) / vol**2) * piece(2.0 * barrier - s0 + drift * T)


def discrete_price_bgk(s0, strike, barrier, T, drift, vol, seed=None):
    """The price of the barrier watched once a step (as the paths are), by Broadie-Glasserman-Kou's
    continuity correction: the continuous price with the barrier moved up by BGK_BETA * vol."""
    return continuous_price(s0, strike, barrier + BGK_BETA * vol, T, drift, vol)


def path_normals(backend, n, T, seed):
    """Z[t, i]: the normal path i draws at step t (barrier.c's barrier_normals), as numpy."""
    b = eagle.backend(backend)
    mod = b.compile(os.path.join(HERE, "barrier.c"), exact=True)  # the bits simulate() draws
    z = b.empty(T * n)
    s = b.stream()
    s.run(mod.barrier_normals, [z, T, seed], n)
    s.synchronize()
    return z.numpy().reshape(T, n)


def numpy_reference(n, s0, strike, barrier, T, drift, vol, seed, backend):
    """The same paths stepped with numpy, from the same normals (drawn by ``backend``):
    (payoff, stopping step) per path."""
    z = path_normals(backend, n, T, seed)
    s = np.full(n, s0)
    t = np.zeros(n, np.int32)
    live = np.ones(n, bool)
    knocked = np.zeros(n, bool)
    for step in range(T):
        s = np.where(live, s + drift + vol * z[step], s)
        t = np.where(live, step + 1, t)
        crossed = live & (s >= barrier)
        knocked |= crossed
        live &= ~crossed
    payoff = np.where(knocked, 0.0, np.maximum(s - strike, 0.0))
    return payoff, t


def simulate(backend, n, K=16, params=PARAMS):
    """Simulate n paths on ``backend``; returns the (payoff, stopping step) planes on its device."""
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
    return payoff, t


def run(backend, n, K=16, params=PARAMS):
    """Simulate n paths on ``backend``; returns (payoff, stopping step) as numpy arrays."""
    payoff, t = simulate(backend, n, K, params)
    return payoff.numpy(), t.numpy()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", type=backend_name, required=True, help="cpu, cuda, hip or gpu")
    ap.add_argument("--n", type=at_least(2), default=100000,
                    help="paths (>= 2: the price's error bar is their standard deviation)")
    args = ap.parse_args()
    payoff, t = simulate(args.backend, args.n)
    price = eagle.mean_var(payoff)            # on the device: the payoffs stay there
    steps = t.numpy()
    out = np.mean(steps < PARAMS["T"])
    print(f"{args.n} paths on {args.backend}: price {price.mean:.4f} +- {price.stderr:.4f} "
          f"(closed form, continuity-corrected: {discrete_price_bgk(**PARAMS):.4f}); knocked out {out:.1%}; "
          f"mean stopping step {steps.mean():.1f}")


if __name__ == "__main__":
    main()
