"""The oscillator card across MPI ranks, one process per GPU (or per CPU share).

Each rank integrates its share of the N damped oscillators of the card
(benchmarks/oscillators.py): its planes hold samples [base, base + count), the reset kernel is
launched over the global samples with ``job.run`` (planes through ``job.plane``), the ActiveSet
and the drained K-step kernel work on the rank's own positions (ActiveSet.drain: each lane steps its
sample until it is done, then takes the next live one), and the whole program is one recorded
graph per rank, every sample's loop decided on the device. Rank 0 gathers x and v in sample order and writes
them to one .npz file; with --check it also runs the card in one process and compares bit for bit.

    mpiexec -n 2 python examples/card_mpi.py --backend cpu --n 20000 --check --out card.npz
    mpiexec -n 2 python examples/card_mpi.py --backend cuda --n 2000000      # one GPU per rank
"""
import argparse
import math
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "examples", "oscillator"))
import oscillators  # noqa: E402  (the card's workload and kernels)
from oscillator import at_least, backend_name  # noqa: E402  (the examples' argument types)


def load_kernels(backend, device):
    """The card's kernels (its one C source, examples/oscillator/oscillator.c) compiled by the
    kind's own compiler for this rank's device, bit-exact (exact=True) as the one-process card
    (oscillators.Card) is: --check compares the two bit for bit."""
    import eagle
    return eagle.compile(oscillators.ONE_SOURCE, backend=backend, device=device, exact=True,
                         kernels=["osc_reset", "osc_steps_drain", "osc_single"])


class RankCard:
    """The card's eagle program over one rank's share (``job.count`` samples from ``job.base``).

    ``steps`` replaces the card's step counts when given: a function of the global sample
    indices (int64) returning int32 step counts (the dynamic-balance workload uses it)."""

    def __init__(self, job, kind, K=32, part=None, steps=None):
        import eagle
        self.job, self.K = job, K
        self.part = p = part or job.part
        self.backend = b = job.backend or eagle.backend(kind)
        dev = max(job.device, 0)  # -1: a host backend's one device
        self.k = load_kernels(b, dev)
        omega, zeta, target = oscillators.workload(p.count, base=p.base)
        if steps is not None:
            target = np.asarray(steps(job.samples(p)), np.int32)
        self.host = (omega, zeta, target)
        # planes allocated through the seam on this rank's device (eagle arrays, DLPack)
        self.omega, self.zeta = b.asarray(omega, device=dev), b.asarray(zeta, device=dev)
        self.target = b.asarray(target, device=dev)
        self.x, self.v = b.zeros(p.count, device=dev), b.zeros(p.count, device=dev)
        self.done, self.mask = b.zeros(p.count, "int32", device=dev), b.zeros(p.count, "uint8", device=dev)
        self.stream = b.stream(device=job.device)
        self.graph = None
        if p.count == 0:
            return  # a rank with no samples records nothing; it still gathers
        self.aset = eagle.ActiveSet(self.mask, backend=self.backend, stream=self.stream)
        self.max_iters = math.ceil(int(target.max()) / K) + 1
        self.graph = eagle.Graph.build([self.reset, self.aset, self.steps, self.aset],
                                       planes=[self.mask, self.x, self.v, self.omega, self.zeta, self.done,
                                               self.target],
                                       stream=self.stream, toggle=False)

    def reset(self, s):
        """A sample kernel: lanes are the global samples of the share, planes biased by base."""
        j, p = self.job, self.part
        self.job.run(s, self.k.osc_reset, [j.plane(self.x, p), j.plane(self.v, p), j.plane(self.done, p),
                                           j.plane(self.mask, p)], part=p)

    def steps(self, s):
        """The drained step kernel over the rank's ActiveSet: positions are the rank's own."""
        self.aset.drain(s, self.k.osc_steps_drain, [self.x, self.v, self.omega, self.zeta, self.done, self.target,
                                                    self.mask, self.K], self.max_iters)

    def run(self):
        """Replay the recorded program once and wait for it."""
        if self.graph is not None:
            self.graph.launch()
            self.graph.synchronize()

    def result(self):
        """x and v of the share, on the host."""
        return self.x.numpy(), self.v.numpy()


def one_process(kind, n, K):
    """The card's result computed the one-process way (benchmarks/oscillators.py's Card)."""
    card = oscillators.Card(kind, n, K)
    card.run_graph()
    return card.result()


def main(argv=None):
    from eagle import distributed as ed
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", type=backend_name, default="cpu", help="eagle kind: cpu or cuda")
    ap.add_argument("--n", type=at_least(1), default=20000, help="oscillators over all ranks (>= 1)")
    ap.add_argument("--k", type=at_least(1), default=32, help="steps per sample per round (>= 1)")
    ap.add_argument("--out", help="write x, v of all samples to this .npz file (from rank 0)")
    ap.add_argument("--check", action="store_true", help="rank 0 also runs the card in one process and compares")
    args = ap.parse_args(argv)

    with ed.fail_fast() as comm:
        job = ed.Job(args.n, backend=args.backend, comm=comm)
        card = RankCard(job, args.backend, args.k)
        comm.Barrier()
        t0 = time.perf_counter()
        card.run()
        comm.Barrier()
        elapsed = time.perf_counter() - t0
        x, v = card.result()
        if args.out:
            path = job.save(args.out, x=x, v=v)
            if path:
                print(f"wrote {path}")
        gx, gv = job.gather(x), job.gather(v)
        devices = comm.gather(job.device)
        ok = True
        if job.rank == 0:
            print(f"card over {job.size} rank(s), backend {args.backend}, devices {devices} (-1: the host), "
                  f"N={args.n}: {elapsed * 1e3:.1f} ms")
            if args.check:
                rx, rv = one_process(args.backend, args.n, args.k)
                ok = np.array_equal(gx, rx) and np.array_equal(gv, rv)
                print(f"check gathered == one process (bit for bit): {'PASS' if ok else 'FAIL'}")
        ok = comm.bcast(ok, root=0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
