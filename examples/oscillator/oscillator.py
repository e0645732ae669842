"""The oscillator card on eagle's one-source path: compile oscillator.c for the chosen kind, allocate
the planes through eagle, record reset + compact + one drained launch of the K-step kernel (each
lane steps its sample until the sample is done, then takes the next live one) once, launch it, and
read the result with numpy. With --loop while (or reorder=) the steps run instead as a WHILE decided
on the device: (K steps over the live samples, compact) until none is live -- the form for a body
that needs every sample to finish a round before the next one starts.

    python examples/oscillator/oscillator.py --backend cpu --n 10000
    python examples/oscillator/oscillator.py --backend cuda --n 1000000
"""
import argparse
import math
import os

import numpy as np

import eagle

HERE = os.path.dirname(os.path.abspath(__file__))
DT = 1e-3


def workload(n):
    """omega, zeta (float64) and each sample's step count (int32, log-uniform in 1..999)."""
    i = np.arange(n, dtype=np.int64)
    omega = 1.0 + (i % 97) / 97.0
    zeta = 0.01 + 0.2 * ((7 * i) % 101) / 101.0
    u = ((i * 2654435761) % (1 << 32)) / float(1 << 32)
    steps = np.maximum(1, np.floor(np.exp(u * math.log(1000.0)))).astype(np.int32)
    return omega, zeta, steps


def numpy_reference(omega, zeta, steps):
    """The same RK4, as a masked numpy loop to the longest sample."""
    c1, c2 = 2.0 * zeta * omega, omega * omega
    x, v = np.ones_like(omega), np.zeros_like(omega)
    h, h2, h6 = DT, 0.5 * DT, DT / 6.0
    for k in range(int(steps.max())):
        k1x, k1v = v, -c1 * v - c2 * x
        x2, v2 = x + h2 * k1x, v + h2 * k1v
        k2x, k2v = v2, -c1 * v2 - c2 * x2
        x3, v3 = x + h2 * k2x, v + h2 * k2v
        k3x, k3v = v3, -c1 * v3 - c2 * x3
        x4, v4 = x + h * k3x, v + h * k3v
        k4x, k4v = v4, -c1 * v4 - c2 * x4
        xn = x + h6 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        vn = v + h6 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
        live = k < steps
        x, v = np.where(live, xn, x), np.where(live, vn, v)
    return x, v


def run(backend, n, K=32, reorder=None, loop="drain", exact=True):
    """Integrate n oscillators on ``backend``; returns (x, v) as numpy arrays. ``loop``: 'drain'
    (one drained launch) or 'while' (a WHILE of K steps + compaction; reorder= needs it).
    ``exact``: compile bit-exact (the card's promise: every kind, and numpy_reference, give the
    same bits); False: eagle's default mode, which fuses multiply-adds (faster, and within
    rounding of the exact result)."""
    b = eagle.backend(backend)
    mod = b.compile(os.path.join(HERE, "oscillator.c"), exact=exact)
    omega, zeta, steps = workload(n)
    x, v = b.empty(n), b.empty(n)
    done, mask = b.empty(n, "int32"), b.empty(n, "uint8")
    om, ze, target = b.asarray(omega), b.asarray(zeta), b.asarray(steps)
    stream = b.stream()
    planes = [x, v, om, ze, done, target]
    aset = eagle.ActiveSet(mask, reorder=reorder, planes=planes if reorder else (), backend=b, stream=stream)
    rounds = math.ceil(int(steps.max()) / K) + 1  # calls of the step body a sample may need, at most

    def reset(s):
        s.run(mod.osc_reset, [x, v, done, mask], n)

    def drain(s):
        aset.drain(s, mod.osc_steps_drain, [x, v, om, ze, done, target, mask, K], rounds)

    def advance(s):
        s.run(mod.osc_steps_active, [x, v, om, ze, done, target, mask, K, aset.index_map, aset.count], n)

    if loop == "drain" and reorder is None:
        program = [reset, aset, drain, aset]  # the last compaction leaves aset.live == 0
    else:
        program = [reset, aset, eagle.repeat_while([advance, aset], aset, rounds, name="K steps")]
    graph = eagle.Graph.build(program, planes=[mask] + planes, stream=stream, toggle=False)
    graph.launch()
    graph.synchronize()
    if reorder:
        aset.restore()
    return x.numpy(), v.numpy()


# The command-line argument types of the examples (barrier.py and card_mpi.py use them too): each
# returns the value or raises ArgumentTypeError, which argparse reports as "argument --n: must be
# >= 1, got 0" before exiting with status 2, so a bad value never reaches the run.

def at_least(minimum):
    """An argparse ``type=``: the argument as an int >= ``minimum``."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value
    return parse


def backend_name(text):
    """An argparse ``type=``: the backend as eagle.backend takes it (a kind, 'gpu' or a library's
    path), refused when blank; eagle says whether such a backend is installed."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"must name a backend (cpu, cuda, hip, gpu or a library's path), got {text!r}")
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", type=backend_name, required=True, help="cpu, cuda, hip or gpu")
    ap.add_argument("--n", type=at_least(1), default=10000, help="oscillators (>= 1)")
    ap.add_argument("--K", type=at_least(1), default=32, help="steps per sample per round (>= 1)")
    ap.add_argument("--loop", choices=("drain", "while"), default="drain")
    args = ap.parse_args()
    x, v = run(args.backend, args.n, args.K, loop=args.loop)
    print(f"{args.n} oscillators on {args.backend}: x[:4] = {x[:4]}, |x| max = {np.abs(x).max():.6f}")


if __name__ == "__main__":
    main()
