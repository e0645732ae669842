"""Launched by tests/test_distributed.py under mpiexec: one rank fails, the others wait in a
collective. The job must end with the failing rank's message, not hang.

    mpiexec -n 2 python tests/mpi_worker_fail.py MODE FAILING_RANK
MODE: bad-plane (a share of the wrong length given to a kernel), kernel-error (the backend
refuses the launch), raise (a plain exception)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import eagle  # noqa: E402
from eagle import distributed as ed  # noqa: E402
from distributed_support import KERNEL_SOURCE  # noqa: E402


def main(mode, failing):
    with ed.fail_fast() as comm:
        job = ed.Job(1000, backend="cpu", comm=comm)
        import eagle.kernels as ek
        k = ek.load("cpu", KERNEL_SOURCE, ["mix"])
        s = job.backend.stream()
        n = job.count + (3 if job.rank == failing and mode == "bad-plane" else 0)
        x, ids = np.zeros(n), np.zeros(n, np.int64)
        if job.rank == failing:
            if mode == "kernel-error":
                job.run(s, 0, [job.plane(x), job.plane(ids)])
            elif mode == "raise":
                raise RuntimeError("planted failure")
        job.run(s, k.mix, [job.plane(x), job.plane(ids)])
        s.synchronize()
        comm.Barrier()  # the other ranks wait here for the failing one
        job.gather(x)
        print(f"rank {job.rank}: finished", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
