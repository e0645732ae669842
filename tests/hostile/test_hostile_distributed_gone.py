"""A rank that leaves outside eagle.distributed.fail_fast ends the job, never a hang (issue 42).

Under ``mpiexec -n 2`` (MPICH from pip, or any MPI on PATH; skipped naming why where there is
none), one rank raises or exits 0 before a collective the other is waiting in: the Job's creation,
a gather, an eagle.ode distributed solve. The job must end nonzero within a bounded time (the
waiting rank sees the other is gone: eagle/distributed/liveness.py), naming what happened, with
no rank printing that it finished."""
import os
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

BOUND_S = 30.0  # the job ends well within this (the liveness grace is 2 s); a hang is killed at 120 s


@pytest.mark.parametrize("when,how", [("solve", "exit"),
                                      pytest.param("early", "exit", marks=pytest.mark.slow),
                                      pytest.param("late", "raise", marks=pytest.mark.slow),
                                      pytest.param("early", "raise", marks=pytest.mark.slow),
                                      pytest.param("late", "exit", marks=pytest.mark.slow),
                                      pytest.param("solve", "raise", marks=pytest.mark.slow)])
def test_a_rank_gone_outside_fail_fast_ends_the_job(when, how):
    from distributed_support import mpiexec_or_skip
    cmd = mpiexec_or_skip(2) + [sys.executable, os.path.join(HERE, "mpi_worker_gone.py"), when, how, "1"]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the job hung (killed after 120 s): {e.stdout!r} {e.stderr!r}")
    took = time.monotonic() - t0
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "finished" not in out, out
    assert took < BOUND_S, f"the job took {took:.1f} s to end; {out}"
    if how == "raise":
        assert "fails outside fail_fast" in out, out
    else:
        assert "ended while this rank waited for them" in out, out
