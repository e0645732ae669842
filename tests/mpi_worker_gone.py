"""Launched by tests/hostile/test_hostile_distributed_gone.py under mpiexec: one rank leaves
outside eagle.distributed.fail_fast (it raises, or exits 0) while the others wait for it in an
eagle.distributed collective -- the Job's creation ("early") or a gather ("late"), and an
eagle.ode distributed solve ("solve"). The job must end within seconds, never hang.

    mpiexec -n 2 python tests/mpi_worker_gone.py WHEN HOW FAILING_RANK
WHEN: early, late, solve; HOW: raise, exit."""
import sys

import numpy as np

from eagle import distributed as ed  # noqa: E402
from mpi4py import MPI  # noqa: E402

when, how, failing = sys.argv[1], sys.argv[2], int(sys.argv[3])
comm = MPI.COMM_WORLD


def leave():
    if how == "raise":
        raise RuntimeError(f"rank {comm.Get_rank()} fails outside fail_fast")
    sys.exit(0)


if when == "solve":
    import eagle.ode
    if comm.Get_rank() == failing:
        leave()
    eagle.ode.solve_ivp(lambda t, y: [-y[0]], (0.0, 1.0), np.ones((64, 1)), backend="cpu", distributed=True)
elif when == "late":
    job = ed.Job(8, backend="cpu")
    if comm.Get_rank() == failing:
        leave()
    job.gather(np.zeros(job.count))
else:
    if comm.Get_rank() == failing:
        leave()
    ed.Job(8, backend="cpu")
print(f"rank {comm.Get_rank()}: finished", flush=True)
