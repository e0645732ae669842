"""Dynamic load balance: ranks take chunks of samples from a shared counter.

For problems whose cost per sample varies by orders of magnitude, a static split leaves the
rank holding the expensive samples working long after the others finish. Here the samples are
cut into a table of chunks that every rank computes identically (:func:`chunk_table`: guided
self-scheduling, large chunks first, then smaller ones down to ``min_chunk``, so the tail is
short), and a rank that is free takes the next chunk index from a counter held in an MPI window
on one rank (``MPI.Win.Allocate`` + ``Fetch_and_op(SUM)`` under a shared ``Lock``: one-sided, the
holder of the counter does nothing to serve it). Each chunk is a :class:`Partition`, used exactly
like a rank's static share; which rank ran which chunk varies from run to run, the results do
not. :class:`Collector` records each chunk's results and assembles them in global order.

Progress. Many MPI libraries complete a fetch-and-op only when the rank holding the window
enters the MPI library (seen here with MPICH: a ``take`` waited the full second its holder spent
computing). The holder of the counter is itself computing, mostly inside the backend with the GIL
released, so :class:`SharedCounter` runs a small thread on the holder that enters MPI every
``poll`` seconds (``Iprobe`` on a private communicator) while the counter is open; it needs
``MPI_THREAD_MULTIPLE`` (mpi4py's default) and is skipped, with a warning, otherwise. MPI
libraries with their own asynchronous progress (``MPIR_CVAR_ASYNC_PROGRESS=1`` for MPICH) or
network atomics do not need it (``poll=None``)."""
import threading
import time
import warnings

import numpy as np

from ..extend import INT64_MIN, integer, real
from ..errors import EagleTypeError, EagleValueError, HandleError
from . import liveness
from .failure import abort_at_exit_unless_settled, check, settled
from .gather import check_root, gatherv
from .partition import Partition, _check_n, check_part


def chunk_table(n_samples, size, *, min_chunk=1, max_chunk=None, factor=2):
    """The chunks ``[(base, count), ...]`` covering ``[0, n_samples)`` in order (pure, no MPI).

    Guided self-scheduling: each chunk is ``ceil(remaining / (factor * size))`` samples, clamped to
    ``[min_chunk, max_chunk]``; the last one may be shorter. Every rank computes the same table."""
    n = _check_n(n_samples)
    size = integer(size, "eagle.distributed.chunk_table: size", minimum=1)
    min_chunk = integer(min_chunk, "eagle.distributed.chunk_table: min_chunk", minimum=1)
    factor = integer(factor, "eagle.distributed.chunk_table: factor", minimum=1)
    if max_chunk is not None:
        max_chunk = integer(max_chunk, "eagle.distributed.chunk_table: max_chunk", minimum=1)
        if max_chunk < min_chunk:
            raise EagleValueError(f"eagle.distributed.chunk_table: max_chunk {max_chunk} < min_chunk {min_chunk}")
    out, base = [], 0
    while base < n:
        rem = n - base
        c = max(min_chunk, -(-rem // (factor * size)))
        if max_chunk is not None:
            c = min(c, max_chunk)
        c = min(c, rem)
        out.append((base, c))
        base += c
    return out


class SharedCounter:
    """An int64 counter in an MPI window on ``root``; :meth:`take` is an atomic fetch-and-add
    any rank may call at any time. Creating and :meth:`close` are collective.

    Parameters
    ----------
    comm : mpi4py communicator, optional
    root : int
        The rank whose memory holds the counter.
    poll : float or None
        Seconds between the holder's progress calls (see the module's note); None: no thread.
    """

    def __init__(self, comm=None, root=0, *, poll=1e-4):
        from ._mpi import mpi, world
        self._MPI = MPI = mpi()
        self.comm = comm = world(comm)
        self._win, self._pcomm = None, None
        err, same = None, None
        try:  # checked here, then agreed: every rank raises, or every rank allocates the window
            self.root = check_root(root, comm, "SharedCounter", none=False)
            if poll is not None:
                poll = real(poll, "eagle.distributed.SharedCounter: poll")
                if not 0 < poll < float("inf"):
                    raise EagleValueError(f"eagle.distributed.SharedCounter: poll must be > 0 seconds (or None), "
                                          f"got {poll}")
            same = {"root": self.root, "poll is None": poll is None}
        except Exception as e:  # noqa: BLE001 - reported on every rank by check()
            err = e
        check(comm, err, what="SharedCounter", same=same)
        mine = comm.Get_rank() == self.root
        self._win = MPI.Win.Allocate(8 if mine else 0, 8, comm=comm)
        self._one = np.ones(1, np.int64)
        self._old = np.zeros(1, np.int64)
        self._thread, self._stop, self._pcomm = None, threading.Event(), None
        if poll is not None and comm.Get_size() > 1:  # the same decision on every rank: Dup is collective
            if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
                if mine:
                    warnings.warn("eagle.distributed.SharedCounter: MPI was initialized without THREAD_MULTIPLE, "
                                  "so no progress thread runs; other ranks' takes may wait until this rank "
                                  "calls MPI", RuntimeWarning, stacklevel=2)
            else:
                # Iprobe on a communicator of the window's group drives its progress (one on
                # COMM_SELF was seen not to: MPICH progresses per communicator context)
                self._pcomm = comm.Dup()
                if mine:
                    self._thread = threading.Thread(target=self._progress, args=(float(poll),),
                                                    name="eagle-counter-progress", daemon=True)
                    self._thread.start()
        self.reset()

    def _progress(self, poll):
        """On the holder: enter MPI every ``poll`` seconds so remote fetch-and-ops complete."""
        while not self._stop.is_set():
            self._pcomm.Iprobe()
            time.sleep(poll)

    def _open(self, what):
        if self._win is None:
            raise HandleError(f"eagle.distributed.SharedCounter.{what}: the counter is closed")
        return self._win

    def reset(self, value=0):
        """Set the counter to ``value`` (the holder's value counts). Collective."""
        value = integer(value, "eagle.distributed.SharedCounter.reset: value", minimum=INT64_MIN)
        MPI, win = self._MPI, self._open("reset")
        liveness.barrier(self.comm, "SharedCounter.reset")  # nobody still taking from the previous round
        if self.comm.Get_rank() == self.root:
            win.Lock(self.root, MPI.LOCK_EXCLUSIVE)
            win.Put(np.array([value], np.int64), self.root, 0)
            win.Unlock(self.root)
        liveness.barrier(self.comm, "SharedCounter.reset")

    def take(self, k=1):
        """Add ``k`` to the counter and return the value before (one-sided, atomic)."""
        k = integer(k, "eagle.distributed.SharedCounter.take: k", minimum=INT64_MIN)
        MPI, win = self._MPI, self._open("take")
        self._one[0] = k
        win.Lock(self.root, MPI.LOCK_SHARED)
        win.Fetch_and_op(self._one, self._old, self.root, 0, MPI.SUM)
        win.Unlock(self.root)
        return int(self._old[0])

    def close(self):
        """Stop the progress thread and free the window. Collective; idempotent."""
        if self._pcomm is not None:
            liveness.barrier(self.comm, "SharedCounter.close")  # every rank's last take has completed
            if self._thread is not None:
                self._stop.set()
                self._thread.join()
                self._thread = None
            self._pcomm.Free()
            self._pcomm = None
        if self._win is not None:
            self._win.Free()
            self._win = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def chunks(n_samples, comm=None, *, min_chunk=1, max_chunk=None, factor=2, counter=None, table=None):
    """Yield this rank's chunks (:class:`Partition`) until all samples are taken. Collective:
    every rank must iterate to the end (each rank's last take finds the table exhausted).

    Parameters
    ----------
    n_samples : int
    comm : mpi4py communicator, optional
    min_chunk, max_chunk, factor : int
        Passed to :func:`chunk_table`. On a GPU, ``min_chunk`` should fill the device (some
        10^5 samples); on cpu, a few thousand.
    counter : SharedCounter, optional
        Reuse one (it is reset here); default: a new one, freed when the iteration ends.
    table : list of (base, count), optional
        A chunk table of your own (identical on every rank); default :func:`chunk_table`.
    """
    from ._mpi import world
    comm = world(comm)
    err, same = None, None
    try:  # checked here, then agreed: every rank raises, or every rank takes from one counter
        n = _check_n(n_samples)
        if table is None:
            table = chunk_table(n, comm.Get_size(), min_chunk=min_chunk, max_chunk=max_chunk, factor=factor)
            same = {"n_samples": n, "min_chunk": min_chunk, "max_chunk": max_chunk, "factor": factor}
        else:
            table = _check_table(table, n)
            same = {"n_samples": n, "table": _digest(table)}
        if counter is not None and not isinstance(counter, SharedCounter):
            raise EagleTypeError(f"eagle.distributed.chunks: counter must be a SharedCounter, got "
                                 f"{type(counter).__name__}")
        same["counter"] = "new" if counter is None else "given"
    except Exception as e:  # noqa: BLE001 - reported on every rank by check()
        err = e
    check(comm, err, what="chunks", same=same)
    own = counter is None
    c = SharedCounter(comm) if own else counter
    if not own:
        c.reset()
    while True:
        i = c.take(1)
        if i >= len(table):
            break
        base, count = table[i]
        yield Partition(int(base), int(count), n)
    # Freed only when the table is exhausted, never while unwinding an exception: freeing is
    # collective, and the other ranks may still be taking (fail_fast then aborts the job).
    if own:
        c.close()


def _check_table(table, n_samples):
    """A chunk table of the caller's: ``(base, count)`` pairs of integers inside ``[0, n_samples)``."""
    what = "eagle.distributed.chunks: table"
    try:
        rows = [tuple(row) for row in table]
    except TypeError:
        raise EagleTypeError(f"{what} must be a list of (base, count) pairs, got {type(table).__name__}") from None
    out = []
    for i, row in enumerate(rows):
        if len(row) != 2:
            raise EagleValueError(f"{what}[{i}] must be a (base, count) pair, got {row!r:.60}")
        base = integer(row[0], f"{what}[{i}]: base", minimum=0)
        count = integer(row[1], f"{what}[{i}]: count", minimum=0)
        if base + count > n_samples:
            raise EagleValueError(f"{what}[{i}] = {(base, count)} reaches past the {n_samples} samples of the run")
        out.append((base, count))
    return out


def _digest(table):
    """A short name of a chunk table, for telling ranks with different tables apart."""
    import hashlib
    h = hashlib.sha256(np.asarray(table, np.int64).reshape(-1, 2).tobytes()).hexdigest()[:16]
    return f"{len(table)} chunks, sha256 {h}"


class Collector:
    """Per-chunk results of one rank, assembled in global sample order by :meth:`gather`.

    ``add(part, name=array, ...)`` copies each array (host, last axis of length ``part.count``).
    It checks what one call can (the chunk lies inside the run, the names match the earlier
    chunks', the last axis holds the chunk's samples) and raises at once. That every chunk of a
    plane, on every rank, has one dtype and one leading shape is checked by :meth:`gather`, which
    is collective: a plane whose chunks differ makes every rank raise :class:`RankFailed` naming
    it and its dtypes or shapes, where an error in ``add`` would leave the other ranks waiting."""

    def __init__(self, n_samples, comm=None):
        from ._mpi import world
        self.comm = world(comm)
        self.n_samples = _check_n(n_samples)
        self._parts = []
        self._data = {}

    def add(self, part, **arrays):
        """Record the results of chunk ``part`` (a :class:`Partition` from :func:`chunks`).

        A refused chunk raises on this rank only (the others cannot know): should this rank then
        exit without a later ``add`` or ``gather`` succeeding, its exit ends the job
        (``MPI_Abort``, naming the error) instead of leaving the other ranks waiting in
        :meth:`gather` for ever."""
        try:
            self._add(part, arrays)
        except Exception as e:
            abort_at_exit_unless_settled(self, self.comm, f"eagle.distributed.Collector.add raised "
                                                          f"{type(e).__name__}: {e}")
            raise
        settled(self)

    def _add(self, part, arrays):
        what = "eagle.distributed.Collector.add"
        part = check_part(part, self.n_samples, what)
        if not arrays:
            raise EagleValueError(f"{what}: give the results as name=array")
        if self._parts and set(arrays) != set(self._data):
            raise EagleValueError(f"{what}: chunk {tuple(part)} gives {sorted(arrays)}, earlier chunks gave "
                                  f"{sorted(self._data)}")
        copies = {}
        for name, a in arrays.items():
            a = np.array(a, copy=True)
            if a.ndim not in (1, 2) or a.shape[-1] != part.count:
                raise EagleValueError(f"{what}: {name} has shape {a.shape}; its last axis must hold the chunk's "
                                      f"{part.count} samples")
            if a.dtype.hasobject:
                raise EagleTypeError(f"{what}: {name} has dtype {a.dtype}, which holds Python objects, not data")
            copies[name] = a
        for name, a in copies.items():  # all checked first: a refused chunk leaves nothing behind
            self._data.setdefault(name, []).append(a)
        self._parts.append((part.base, part.count))

    @property
    def parts(self):
        """The ``(base, count)`` of the chunks this rank ran, in the order it ran them."""
        return list(self._parts)

    def _kinds(self):
        """name -> (leading shape, dtype) of this rank's chunks; a plane whose chunks differ is refused."""
        kinds = {}
        for name, arrs in sorted(self._data.items()):
            dtypes = list(dict.fromkeys(a.dtype for a in arrs))  # dtypes hash as they compare
            leads = list(dict.fromkeys(a.shape[:-1] for a in arrs))
            if len(dtypes) > 1:
                raise EagleValueError(f"eagle.distributed.Collector.gather: the chunks of plane {name!r} have "
                                      f"different dtypes: {', '.join(map(str, dtypes))}")
            if len(leads) > 1:
                raise EagleValueError(f"eagle.distributed.Collector.gather: the chunks of plane {name!r} have "
                                      f"different leading shapes: {', '.join(map(str, leads))}")
            kinds[name] = (leads[0], dtypes[0])
        return kinds

    def gather(self, root=0):
        """Every rank's chunks, put in place: name -> array over all samples on ``root`` (every
        rank when None), None elsewhere. Collective; checks that the chunks of a plane agree in
        dtype and leading shape on every rank, and that the chunks cover every sample once."""
        comm = self.comm
        err, kinds = None, None
        settled(self)  # in a collective now: an error is reported on every rank from here on
        try:
            root = check_root(root, comm, "Collector.gather")
            kinds = self._kinds()
        except Exception as e:  # noqa: BLE001 - reported on every rank by check()
            err = e
        check(comm, err, what="Collector.gather", same={"root": root, "n_samples": self.n_samples})
        everyone = liveness.allgather(comm, (kinds, self._parts), "Collector.gather")
        parts = [p for _, p in everyone]
        holders = [(r, k) for r, (k, _) in enumerate(everyone) if k]  # a rank that ran no chunk has no say
        kinds = holders[0][1] if holders else {}
        err = None
        for name in sorted({name for _, k in holders for name in k}):
            seen = [(r, k.get(name)) for r, k in holders]
            if any(v != seen[0][1] for _, v in seen):
                err = (f"the ranks collected plane {name!r} differently (leading shape, dtype): "
                       + "; ".join(f"rank {r}: {'none' if v is None else (v[0], str(v[1]))}" for r, v in seen))
                break
        if err is None:
            covered = np.zeros(self.n_samples, np.int32)
            for plist in parts:
                for b, c in plist:
                    covered[b:b + c] += 1
            if covered.size and not np.all(covered == 1):
                bad = int(np.flatnonzero(covered != 1)[0])
                err = (f"the chunks do not cover every sample exactly once (sample {bad} taken "
                       f"{int(covered[bad])} times)")
        if err is not None:  # every rank found it in the same data: every rank raises
            check(comm, err, what="Collector.gather")
        # each rank's chunks side by side, in the order it ran them; then every chunk put in place
        totals = [sum(c for _, c in plist) for plist in parts]
        out = {}
        for name in sorted(kinds):
            lead, dtype = kinds[name]
            mine = self._data.get(name)
            local = np.concatenate(mine, axis=-1) if mine else np.empty(tuple(lead) + (0,), dtype)
            packed = gatherv(local, totals, comm, root)
            if packed is None:
                out[name] = None
                continue
            full = np.empty(packed.shape[:-1] + (self.n_samples,), packed.dtype)
            at = 0
            for plist in parts:
                for b, c in plist:
                    full[..., b:b + c] = packed[..., at:at + c]
                    at += c
            out[name] = full
        return out
