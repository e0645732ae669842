"""Ending the job from one rank, naming it: its message and traceback on stderr, then MPI_Abort.
Used by failure.py (fail_fast, unsettled errors) and liveness.py (a rank that is gone)."""
import os
import sys
import time
import traceback

_FORWARD_S = 0.5


def _describe(exc):
    return f"{type(exc).__name__}: {exc}"


def abort(comm, exc, exit_code):
    """Write ``eagle.distributed: rank R of S (host H, pid P) failed: <exc>`` and its traceback
    to stderr, then ``comm.Abort(exit_code)``: every rank of the job ends."""
    import socket
    head = (f"eagle.distributed: rank {comm.Get_rank()} of {comm.Get_size()} "
            f"(host {socket.gethostname()}, pid {os.getpid()}) failed: {_describe(exc)}")
    try:
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        sys.stderr.write(f"{head}\n{tb}{head}\n")
        sys.stderr.flush()
        sys.stdout.flush()
        # The launcher forwards our stderr through a pipe and tears it down at MPI_Abort: give it
        # a moment to pass the message on (without this, MPICH's hydra lost it in ~1 of 6 runs).
        time.sleep(_FORWARD_S)
    finally:
        comm.Abort(exit_code)
