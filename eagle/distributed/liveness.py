"""A rank that is gone never leaves the others waiting for it.

Under ``mpiexec`` a rank that exits (or raises, or is killed) outside :func:`fail_fast` before a
collective its peers are in leaves them waiting for ever: MPI itself neither notices nor says.
eagle.distributed's collectives therefore wait by polling a nonblocking request (:func:`wait`),
and between polls look at the job's other ranks on this host: the processes with this rank's
parent (the launcher's proxy: hydra's, Open MPI's, slurmstepd) whose environment names a rank of
the launch (``PMI_RANK``, ``PMIX_RANK``, ``OMPI_COMM_WORLD_RANK``, ``SLURM_PROCID``; Linux
/proc). A rank of the communicator that is gone (exited, or a zombie), or one of the launch's
node-local ranks that was never seen (it ended before this rank first looked), for longer than
:data:`GRACE_S` (data it sent before it ended still arrives meanwhile) ends the job: the waiting
rank writes which rank is gone and in which collective, then calls ``MPI_Abort``, so ``mpiexec``
returns nonzero within seconds instead of never.

Also, once eagle.distributed runs a collective in a job of several ranks, an exception that
escapes the program on any rank ends the job the same way (:func:`abort_on_uncaught`): the other
ranks could otherwise wait for it for ever.

A rank that ends normally (or by ``sys.exit``) is alive for a while in ``MPI_Finalize``, which
waits for the others: at its end eagle names its main thread ``eagle-left`` (:func:`_mark_leaving`,
registered when eagle.distributed is imported), which the ranks of this host read.

What this cannot see: a rank on another host that ends while the ranks of this host wait (no
process of it is here to look at). Such a rank's host's own ranks see it when they are in the
collective too; for a job of one rank per host, run the work in :func:`fail_fast`."""
import os
import sys
import time

#: Seconds a rank must have been gone before the waiting rank ends the job.
GRACE_S = 2.0
#: Seconds between looks at the other ranks while a collective waits.
LOOK_S = 0.25

_RANK_VARS = ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID")
_LOCAL_SIZE_VARS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCAL_NRANKS")

_peers = None  # {world rank: pid} of this launch's other ranks on this host, once looked up


def _read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


#: The name a rank's main thread takes when the program ends (see :func:`_mark_leaving`): a rank
#: in MPI_Finalize is alive but will join no collective again.
LEFT = b"eagle-left"


def _alive(pid):
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return False
    state = stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3]
    if state in (b"Z", b"X"):
        return False
    return (_read(f"/proc/{pid}/comm") or b"").strip() != LEFT


def _mark_leaving():
    """At the program's end (before MPI_Finalize, which waits), a rank of a job of several names
    its main thread LEFT, so that the ranks of this host still waiting for it in a collective see
    it is gone (Linux; nothing elsewhere)."""
    mpi_mod = sys.modules.get("mpi4py.MPI")
    if mpi_mod is None or not sys.platform.startswith("linux"):
        return
    try:
        if not mpi_mod.Is_initialized() or mpi_mod.Is_finalized() or mpi_mod.COMM_WORLD.Get_size() < 2:
            return
        import ctypes
        libc = ctypes.CDLL(None)
        libc.prctl(15, ctypes.c_char_p(LEFT), 0, 0, 0)  # PR_SET_NAME, of the calling (main) thread
    except Exception:  # noqa: BLE001 - best effort at exit
        pass


def register_leaving():
    """Have :func:`_mark_leaving` run at the program's end, before the atexit functions (mpi4py's
    MPI_Finalize is one); once."""
    import threading
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        try:
            register(_mark_leaving)
            return
        except RuntimeError:  # the interpreter is already shutting down
            return
    import atexit
    atexit.register(_mark_leaving)


def local_peers():
    """{world rank: pid} of this launch's other ranks on this host ({} where they cannot be
    found: not Linux, no launcher variable naming ranks)."""
    global _peers
    if _peers is not None:
        return _peers
    found = {}
    var = next((v for v in _RANK_VARS if v in os.environ), None)
    parent = os.getppid()
    if sys.platform.startswith("linux") and var is not None and parent > 1:
        key = var.encode() + b"="
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            stat = _read(f"/proc/{name}/stat")
            if stat is None:
                continue
            fields = stat[stat.rfind(b")") + 2:].split()
            if len(fields) < 2 or int(fields[1]) != parent:
                continue
            env = _read(f"/proc/{name}/environ") or b""
            for item in env.split(b"\0"):
                if item.startswith(key):
                    try:
                        found[int(item[len(key):])] = int(name)
                    except ValueError:
                        pass
    _peers = found
    return found


def _local_expected():
    for v in _LOCAL_SIZE_VARS:
        try:
            return int(os.environ[v])
        except (KeyError, ValueError):
            continue
    return None


def gone(comm):
    """The ranks of ``comm`` (its own numbering) that are known to have ended, and whether some
    node-local rank of the launch was never seen (ended before this rank first looked)."""
    peers = local_peers()
    if not peers and _local_expected() in (None, 1):
        return [], False
    try:
        from mpi4py import MPI
        world_of = MPI.Group.Translate_ranks(comm.Get_group(), list(range(comm.Get_size())),
                                             MPI.COMM_WORLD.Get_group())
    except Exception:  # noqa: BLE001 - no mapping: nothing is claimed
        return [], False
    dead = [r for r, w in enumerate(world_of) if w in peers and not _alive(peers[w])]
    expected = _local_expected()
    missing = expected is not None and len(peers) + 1 < expected
    return dead, missing


def wait(req, comm, what):
    """Wait for the nonblocking request ``req`` of a collective over ``comm`` (``what`` names it),
    polling; end the job (see the module docstring) when a rank it waits for is gone."""
    if req.Test():
        return
    pause, next_look, since = 1e-4, time.monotonic() + LOOK_S, None
    while not req.Test():
        time.sleep(pause)
        pause = min(pause * 2, 0.02)
        now = time.monotonic()
        if now < next_look:
            continue
        next_look = now + LOOK_S
        dead, missing = gone(comm)
        if not dead and not missing:
            since = None
            continue
        if since is None:
            since = now
        elif now - since >= GRACE_S:
            from ._ending import abort as _abort
            who = (f"rank(s) {', '.join(map(str, dead))} of {comm.Get_size()} ended" if dead else
                   "a rank of this host ended before this rank first looked for it")
            _abort(comm, RuntimeError(f"{who} while this rank waited for them in {what}: they left without "
                                      "joining it (an exit or an exception outside eagle.distributed.fail_fast); "
                                      "the job is ended so that no rank waits for ever"), 1)


def allgather(comm, obj, what):
    """``comm.allgather(obj)`` (pickled objects), waited for by :func:`wait`."""
    import pickle

    import numpy as np
    data = np.frombuffer(pickle.dumps(obj), np.uint8)
    size = comm.Get_size()
    sizes = np.zeros(size, np.int64)
    from ._mpi import mpi
    MPI = mpi()
    wait(comm.Iallgather([np.array([data.size], np.int64), MPI.INT64_T], [sizes, MPI.INT64_T]), comm, what)
    displs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    out = np.empty(int(sizes.sum()), np.uint8)
    wait(comm.Iallgatherv([data, MPI.BYTE], [out, sizes.tolist(), displs.tolist(), MPI.BYTE]), comm, what)
    return [pickle.loads(out[d:d + s].tobytes()) for d, s in zip(displs.tolist(), sizes.tolist())]


def barrier(comm, what):
    """``comm.Barrier()``, waited for by :func:`wait`."""
    wait(comm.Ibarrier(), comm, what)


_hooked = []


def abort_on_uncaught(comm):
    """From now on an exception that escapes the program on this rank ends the job (a job of
    several ranks only): printed as Python prints it, then ``MPI_Abort``."""
    if _hooked or comm.Get_size() < 2:
        return
    _hooked.append(True)
    previous = sys.excepthook

    def hook(tp, value, tb):
        if previous is not sys.__excepthook__:  # a hook of the program's own runs first
            previous(tp, value, tb)
        from mpi4py import MPI
        from ._ending import abort as _abort
        _abort(MPI.COMM_WORLD, value if isinstance(value, BaseException) else tp(), 1)

    sys.excepthook = hook
