"""A failing rank ends the job with its own message, never a hang.

Two tools, for the two kinds of failure:

- :func:`agree` runs a piece of work on every rank and then checks, collectively, that it
  succeeded everywhere. If any rank failed, every rank raises :class:`RankFailed` naming the
  failing ranks and their messages, so all ranks leave the collective together and no rank is
  left waiting in the next one. eagle.distributed's own collectives check their inputs this way.
- :func:`fail_fast` is for everything else: an exception escaping its block on one rank is
  printed (``eagle.distributed: rank R of S failed: ...`` and the traceback) to that rank's
  stderr, and the rank calls ``MPI_Abort``, which ends every rank of the job; ``mpiexec`` then
  exits nonzero. Without it, the other ranks would wait forever in their next collective."""
import contextlib
import os
import sys
import time
import traceback

from ..errors import EagleError


class RankFailed(EagleError, RuntimeError):
    """Raised on every rank when the work of one or more ranks failed.

    Attributes
    ----------
    failures : dict
        rank -> the message of the exception that rank raised.
    """

    def __init__(self, message, failures):
        super().__init__(message)
        self.failures = failures


def _describe(exc):
    return f"{type(exc).__name__}: {exc}"


def agree(comm, fn, *args, what="the work", **kw):
    """``fn(*args, **kw)`` on every rank of ``comm``, then a collective check that it succeeded.

    Returns ``fn``'s result on every rank when all succeeded. Otherwise raises, on every rank,
    :class:`RankFailed` listing each failing rank's message (the local exception is chained on
    the ranks that failed). Collective: every rank of ``comm`` must call it.
    """
    try:
        result, err = fn(*args, **kw), None
    except Exception as e:  # noqa: BLE001 - reported collectively below, then re-raised
        result, err = None, e
    check(comm, err, what=what)
    return result


def check(comm, error=None, *, what="the work"):
    """Collective: raise :class:`RankFailed` on every rank if ``error`` (an exception, a message or
    None for success) is set on any rank of ``comm``."""
    msg = None if error is None else (error if isinstance(error, str) else _describe(error))
    msgs = comm.allgather(msg)
    failures = {r: m for r, m in enumerate(msgs) if m is not None}
    if failures:
        size = comm.Get_size()
        same = {}
        for r, m in failures.items():  # ranks failing with one message are named together
            same.setdefault(m, []).append(r)
        lines = "; ".join(f"rank{'s' if len(rs) > 1 else ''} {', '.join(map(str, rs))}: {m}"
                          for m, rs in same.items())
        exc = RankFailed(f"eagle.distributed: {what} failed on {len(failures)} of {size} rank(s): {lines}", failures)
        if isinstance(error, BaseException):
            raise exc from error
        raise exc


_FORWARD_S = 0.5


@contextlib.contextmanager
def fail_fast(comm=None, *, exit_code=1):
    """Abort the whole job when an exception escapes the block on any rank.

    The failing rank writes ``eagle.distributed: rank R of S (host H, pid P) failed: <error>``
    and the traceback to its stderr, flushes, and calls ``comm.Abort(exit_code)``: every rank
    ends and ``mpiexec`` returns nonzero. ``SystemExit(0)`` and a normal exit pass through.

    Parameters
    ----------
    comm : mpi4py communicator, optional
        Default ``MPI.COMM_WORLD``.
    exit_code : int
        The code passed to ``MPI_Abort``.
    """
    from ._mpi import world
    comm = world(comm)
    try:
        yield comm
    except SystemExit as e:
        if e.code in (None, 0):
            raise
        _abort(comm, e, exit_code if not isinstance(e.code, int) else e.code)
    except BaseException as e:  # noqa: BLE001 - KeyboardInterrupt too: the job must not hang
        _abort(comm, e, exit_code)


def _abort(comm, exc, exit_code):
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
