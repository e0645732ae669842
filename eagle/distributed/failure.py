"""A failing rank ends the job with its own message, never a hang.

Two tools, for the two kinds of failure:

- :func:`agree` runs a piece of work on every rank and then checks, collectively, that it
  succeeded everywhere. If any rank failed, every rank raises :class:`RankFailed` naming the
  failing ranks and their messages, so all ranks leave the collective together and no rank is
  left waiting in the next one. eagle.distributed's own collectives check their inputs this way:
  each rank validates its arguments locally, then one :func:`check` reports any rank's error and
  compares the arguments that must be the same on every rank (``n_samples``, ``root``, ...)
  before the collective proper starts, so ranks that disagree raise instead of hanging.
- :func:`fail_fast` is for everything else: an exception escaping its block on one rank is
  printed (``eagle.distributed: rank R of S failed: ...`` and the traceback) to that rank's
  stderr, and the rank calls ``MPI_Abort``, which ends every rank of the job; ``mpiexec`` then
  exits nonzero. Without it, the other ranks would wait forever in their next collective. A
  rank that leaves the block early with ``SystemExit(0)`` waits (a grace period) for the others
  to leave it too, and ends the job when they do not: they could wait for it for ever.
- :func:`abort_at_exit_unless_settled` is for errors a rank raises outside any collective that
  the others cannot see (``Collector.add``): unless the rank settles it (a later success), the
  rank's exit ends the job instead of leaving the others waiting in the next collective."""
import atexit
import contextlib
import time

from ..errors import EagleError
from ._ending import abort as _abort


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


def check(comm, error=None, *, what="the work", same=None):
    """Collective: raise :class:`RankFailed` on every rank if ``error`` (an exception, a message or
    None for success) is set on any rank of ``comm``, or else if the ranks disagree on ``same``.

    ``same`` (a dict name -> value, or None) holds the arguments that must be the same on every
    rank (compared by type and ``==``; plain values: ints, strings, tuples, numpy dtypes). A rank
    with an error sends none. The message names each argument that differs and every rank's
    value, as does the exception's ``failures`` (every rank: none is more at fault than another).
    One ``allgather`` in all."""
    from . import liveness
    liveness.abort_on_uncaught(comm)  # an exception escaping any rank from now on ends the job
    msg = None if error is None else (error if isinstance(error, str) else _describe(error))
    everyone = liveness.allgather(comm, (msg, None if msg is not None else same), what)
    size = comm.Get_size()
    failures = {r: m for r, (m, _) in enumerate(everyone) if m is not None}
    if failures:
        exc = RankFailed(f"eagle.distributed: {what} failed on {len(failures)} of {size} rank(s): "
                         f"{_by_message(failures)}", failures)
        if isinstance(error, BaseException):
            raise exc from error
        raise exc
    values = [s or {} for _, s in everyone]
    names = list(dict.fromkeys(k for v in values for k in v))
    differ = [k for k in names if any(not _equal(v.get(k, _MISSING), values[0].get(k, _MISSING)) for v in values)]
    if differ:
        failures = {r: ", ".join(f"{k} = {_show(v.get(k, _MISSING))}" for k in differ) for r, v in enumerate(values)}
        raise RankFailed(f"eagle.distributed: {what}: the ranks disagree on {', '.join(differ)}, which must be "
                         f"the same on every rank: {_by_message(failures)}", failures)


class _Missing:
    def __repr__(self):
        return "(not given)"


_MISSING = _Missing()


def _equal(a, b):
    return type(a) is type(b) and bool(a == b)  # by type first: numpy's dtype('f8') == None is True


def _show(v):
    return str(v) if hasattr(v, "descr") else repr(v)  # a dtype as numpy names it: float64, [('a', '<f8')]


def _by_message(failures):
    """``rank 0: m0; ranks 1, 2: m1``: ranks with one message named together."""
    same = {}
    for r, m in failures.items():
        same.setdefault(m, []).append(r)
    return "; ".join(f"rank{'s' if len(rs) > 1 else ''} {', '.join(map(str, rs))}: {m}" for m, rs in same.items())


@contextlib.contextmanager
def fail_fast(comm=None, *, exit_code=1, exit_grace_s=10.0):
    """Abort the whole job when an exception escapes the block on any rank.

    The failing rank writes ``eagle.distributed: rank R of S (host H, pid P) failed: <error>``
    and the traceback to its stderr, flushes, and calls ``comm.Abort(exit_code)``: every rank
    ends and ``mpiexec`` returns nonzero.

    Collective: every rank of ``comm`` enters the block (it makes a communicator of its own for
    the leaving below). Leaving it is agreed: a rank that ends the block waits there until every
    rank has left it, normally or by ``SystemExit(0)`` (or ``sys.exit()``), and then goes on (a
    rank that leaves by ``SystemExit(0)`` exits). A rank that leaves by ``SystemExit(0)`` while
    another is still inside after ``exit_grace_s`` seconds ends the job (``MPI_Abort`` with
    ``exit_code``, naming itself): the ranks still inside could wait for it for ever.

    Parameters
    ----------
    comm : mpi4py communicator, optional
        Default ``MPI.COMM_WORLD``.
    exit_code : int
        The code passed to ``MPI_Abort``.
    exit_grace_s : float
        How long a rank leaving by ``SystemExit(0)`` waits for the others to leave too.
    """
    from ._mpi import world
    comm = world(comm)
    leaving = comm.Dup()  # the agreement on leaving never mixes with the block's own collectives
    try:
        yield comm
    except SystemExit as e:
        if e.code not in (None, 0):
            _abort(comm, e, exit_code if not isinstance(e.code, int) else e.code)
        if not _all_leave(leaving, exit_grace_s):
            _abort(comm, SystemExit(f"this rank left the fail_fast block with SystemExit({e.code}) and after "
                                    f"{exit_grace_s:g} s other ranks were still inside it, which could wait "
                                    "for it for ever"), exit_code)
        leaving.Free()
        raise
    except BaseException as e:  # noqa: BLE001 - KeyboardInterrupt too: the job must not hang
        _abort(comm, e, exit_code)
    else:
        _all_leave(leaving, None)
        leaving.Free()


def _all_leave(leaving, grace_s):
    """A barrier on ``leaving``: True once every rank has reached it, False when ``grace_s``
    seconds (None: no limit) pass first. Polls, so that signals are handled meanwhile."""
    req = leaving.Ibarrier()
    deadline = None if grace_s is None else time.monotonic() + grace_s
    pause = 1e-4
    while not req.Test():
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
    return True


_unsettled = {}  # id(owner) -> (comm, message): errors this rank has not settled yet
_hook = []


def abort_at_exit_unless_settled(owner, comm, message):
    """Remember that ``owner`` (a Collector) raised ``message`` outside any collective on this
    rank: unless :func:`settled` is called for it first, this rank's exit ends the job
    (``MPI_Abort``), so that the other ranks, which cannot know, do not wait for it for ever in
    their next collective (``Collector.gather``)."""
    _unsettled[id(owner)] = (comm, message)
    if not _hook:
        _hook.append(True)
        atexit.register(_abort_unsettled)  # after mpi4py's own hook: runs before MPI_Finalize


def settled(owner):
    """``owner``'s earlier error has been dealt with (it went on to succeed)."""
    _unsettled.pop(id(owner), None)


def _abort_unsettled():
    if not _unsettled:
        return
    comm, message = next(iter(_unsettled.values()))
    _abort(comm, SystemExit(f"{message}; this rank is exiting with it unsettled, and the other ranks would "
                            "wait for its results for ever"), 1)
