"""Launched by tests/test_distributed.py under mpiexec: one rank leaves early (an error outside
any collective, or SystemExit(0)) while the others wait for it in a collective. The job must end
(naming that rank), never hang; ranks that all leave together exit 0.

    mpiexec -n 2 python tests/mpi_worker_exit.py MODE FAILING_RANK
MODE: collector-add (Collector.add refuses a chunk on FAILING_RANK, uncaught, no fail_fast; the
others gather), collector-recovered (the refused chunk is caught and given again right: the
gather succeeds), exit0-one (sys.exit(0) on FAILING_RANK inside fail_fast; the others wait in a
barrier), exit0-all (every rank calls sys.exit(0) inside fail_fast)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from eagle import distributed as ed  # noqa: E402
from eagle.errors import EagleError  # noqa: E402


def collector(mode, failing):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    n = 12
    col = ed.Collector(n, comm)
    part = ed.split(n, comm.Get_size(), comm.Get_rank())
    x = np.arange(part.base, part.base + part.count, dtype=np.float64)
    if comm.Get_rank() == failing:
        try:
            col.add(part, x=x[:-1])  # one sample short: refused on this rank only
        except EagleError:
            if mode == "collector-add":
                raise
        # collector-recovered: the chunk again, right
    col.add(part, x=x)
    out = col.gather(root=None)
    assert out["x"].tolist() == list(range(n))
    print(f"rank {comm.Get_rank()}: finished", flush=True)


def exit0(mode, failing):
    with ed.fail_fast(exit_grace_s=2.0) as comm:
        if mode == "exit0-all" or comm.Get_rank() == failing:
            sys.exit(0)
        comm.Barrier()  # the other ranks wait here for the one that left
        print(f"rank {comm.Get_rank()}: finished", flush=True)


if __name__ == "__main__":
    mode, failing = sys.argv[1], int(sys.argv[2])
    (collector if mode.startswith("collector") else exit0)(mode, failing)
