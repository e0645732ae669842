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

from ..errors import EagleValueError
from .failure import check
from .gather import gatherv
from .partition import Partition, _check_n


def chunk_table(n_samples, size, *, min_chunk=1, max_chunk=None, factor=2):
    """The chunks ``[(base, count), ...]`` covering ``[0, n_samples)`` in order (pure, no MPI).

    Guided self-scheduling: each chunk is ``ceil(remaining / (factor * size))`` samples, clamped to
    ``[min_chunk, max_chunk]``; the last one may be shorter. Every rank computes the same table."""
    n = _check_n(n_samples)
    size, min_chunk, factor = int(size), int(min_chunk), int(factor)
    if size < 1 or min_chunk < 1 or factor < 1:
        raise EagleValueError(f"eagle.distributed.chunk_table: size, min_chunk and factor must be >= 1, "
                              f"got {size}, {min_chunk}, {factor}")
    if max_chunk is not None and int(max_chunk) < min_chunk:
        raise EagleValueError(f"eagle.distributed.chunk_table: max_chunk {max_chunk} < min_chunk {min_chunk}")
    out, base = [], 0
    while base < n:
        rem = n - base
        c = max(min_chunk, -(-rem // (factor * size)))
        if max_chunk is not None:
            c = min(c, int(max_chunk))
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
        self.root = int(root)
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

    def reset(self, value=0):
        """Set the counter to ``value``. Collective."""
        MPI, win = self._MPI, self._win
        self.comm.Barrier()  # nobody still taking from the previous round
        if self.comm.Get_rank() == self.root:
            win.Lock(self.root, MPI.LOCK_EXCLUSIVE)
            win.Put(np.array([value], np.int64), self.root, 0)
            win.Unlock(self.root)
        self.comm.Barrier()

    def take(self, k=1):
        """Add ``k`` to the counter and return the value before (one-sided, atomic)."""
        MPI, win = self._MPI, self._win
        self._one[0] = k
        win.Lock(self.root, MPI.LOCK_SHARED)
        win.Fetch_and_op(self._one, self._old, self.root, 0, MPI.SUM)
        win.Unlock(self.root)
        return int(self._old[0])

    def close(self):
        """Stop the progress thread and free the window. Collective; idempotent."""
        if self._pcomm is not None:
            self.comm.Barrier()  # every rank's last take has completed
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
    n = _check_n(n_samples)
    if table is None:
        table = chunk_table(n, comm.Get_size(), min_chunk=min_chunk, max_chunk=max_chunk, factor=factor)
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


class Collector:
    """Per-chunk results of one rank, assembled in global sample order by :meth:`gather`.

    ``add(part, name=array, ...)`` copies each array (host, last axis of length ``part.count``)."""

    def __init__(self, n_samples, comm=None):
        from ._mpi import world
        self.comm = world(comm)
        self.n_samples = _check_n(n_samples)
        self._parts = []
        self._data = {}

    def add(self, part, **arrays):
        """Record the results of chunk ``part`` (a :class:`Partition` from :func:`chunks`)."""
        if not arrays:
            raise EagleValueError("eagle.distributed.Collector.add: give the results as name=array")
        if self._parts and set(arrays) != set(self._data):
            raise EagleValueError(f"eagle.distributed.Collector.add: chunk {part} gives {sorted(arrays)}, "
                                  f"earlier chunks gave {sorted(self._data)}")
        for name, a in arrays.items():
            a = np.array(a, copy=True)
            if a.ndim not in (1, 2) or a.shape[-1] != part.count:
                raise EagleValueError(f"eagle.distributed.Collector.add: {name} has shape {a.shape}; its last "
                                      f"axis must hold the chunk's {part.count} samples")
            self._data.setdefault(name, []).append(a)
        self._parts.append((int(part.base), int(part.count)))

    @property
    def parts(self):
        """The ``(base, count)`` of the chunks this rank ran, in the order it ran them."""
        return list(self._parts)

    def gather(self, root=0):
        """Every rank's chunks, put in place: name -> array over all samples on ``root`` (every
        rank when None), None elsewhere. Collective; checks that the chunks cover every sample once."""
        comm = self.comm
        kinds = {name: (arrs[0].shape[:-1], arrs[0].dtype.str) for name, arrs in self._data.items()}
        everyone = [k for k in comm.allgather(kinds) if k]
        err = None
        if any(k != everyone[0] for k in everyone):
            err = f"the ranks collected different results (name: (leading shape, dtype)): {everyone}"
        check(comm, err, what="Collector.gather")
        kinds = everyone[0] if everyone else {}
        parts = comm.allgather(self._parts)
        covered = np.zeros(self.n_samples, np.int32)
        for plist in parts:
            for b, c in plist:
                covered[b:b + c] += 1
        if covered.size and not np.all(covered == 1):
            bad = int(np.flatnonzero(covered != 1)[0])
            check(comm, f"the chunks do not cover every sample exactly once (sample {bad} taken "
                        f"{int(covered[bad])} times)", what="Collector.gather")
        # each rank's chunks side by side, in the order it ran them; then every chunk put in place
        totals = [sum(c for _, c in plist) for plist in parts]
        out = {}
        for name in sorted(kinds):
            lead, dtype = kinds[name]
            mine = self._data.get(name)
            local = np.concatenate(mine, axis=-1) if mine else np.empty(tuple(lead) + (0,), np.dtype(dtype))
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

