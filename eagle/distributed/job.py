"""Job: one rank's part of a run, the object a distributed program is written against.

A :class:`Job` holds the communicator, this rank's :class:`Partition` and, where a backend is
named, the device chosen for the rank. The contract between a rank's planes and its kernels:

- **Planes are this rank's share.** Every plane a rank allocates has ``count`` samples on its last
  axis (``(count,)`` or ``(w, count)``): sample ``base + j`` lives at position ``j``.
- **Kernels see the global sample index.** :meth:`Job.run` launches a kernel over lanes
  ``[base, base + count)`` of ``n_samples`` (the partition triple the seam passes to kernels),
  and :meth:`Job.plane` gives each plane to the kernel as an address biased by ``-base`` elements,
  so a kernel written for one process (``x[i]`` for ``i`` in ``[base, base + count)``) runs
  unchanged on a rank and reads and writes the rank's share. A result that depends on the sample
  index (a seed, a parameter sweep) is therefore the same on any number of ranks. For a
  ``(w, count)`` plane the row stride the kernel uses must be ``count`` (pass ``job.count`` as an
  argument), not ``n_samples``.
- **An ActiveSet is per rank.** Built over the rank's mask, its ``index_map`` holds *positions*
  in the rank's share (0 .. count-1) and its lanes are local: launch lane kernels with the plain
  ``stream.run(kernel, args, job.count)`` and pass the planes as they are; the global sample of
  position ``p`` is ``job.base + p``.
- **A rank with no samples** (``count == 0``, when ``n_samples < size``) builds nothing and
  still takes part in every collective (gather, save, chunks).

Graph.build records a rank's program like any other: the steps call ``job.run`` for sample
kernels and ``stream.run`` for lane kernels, and the graph is replayed with ``launch()``."""
import numpy as np

from ..extend import ArrayInfo, address_of
from ..errors import EagleValueError
from .failure import agree as _agree
from .failure import check as _check
from .failure import fail_fast as _fail_fast
from .partition import Partition, split


class GlobalPlane(int):
    """A plane's address biased by ``-base`` elements, as a kernel argument: a kernel indexing it
    with the global sample ``i`` reaches position ``i - base`` of the plane. Keeps the plane alive."""

    def __new__(cls, address, plane, part):
        self = super().__new__(cls, address)
        self.plane, self.part = plane, part
        return self

    def __repr__(self):
        return f"<eagle.distributed.GlobalPlane 0x{int(self):x} samples [{self.part.base}, {self.part.stop})>"

    def __eagle_array__(self):
        """(ArrayInfo, dtype, shape) for a kernel's typed pointer parameter: the plane's dtype, and
        its shape with the sample axis counted from global sample 0 (base + the plane's own), as
        the biased address reaches it."""
        info = address_of(self.plane)
        shape = tuple(self.plane.shape)
        virtual = shape[:-1] + (self.part.base + shape[-1],) if shape else shape
        return (ArrayInfo(int(self), info.nbytes, info.device_type, info.device_id, self.plane, info.readonly),
                self.plane.dtype, virtual)


class Job:
    """This rank's part of a run over ``n_samples`` samples. Creating one is collective.

    Parameters
    ----------
    n_samples : int
        The run's total number of samples.
    comm : mpi4py communicator, optional
        Default ``MPI.COMM_WORLD``.
    backend : Backend or kind, optional
        The backend this rank runs on. When given, a device is chosen for the rank
        (:func:`eagle.distributed.select_device`: one GPU per rank); when None the job chooses no
        device and kernels run on the streams they are given.
    device : int, str or sequence of int, optional
        Override of the device choice (see :func:`select_device`).
    allow_shared_device : bool
        Warn instead of refusing when two ranks of one node get one device.

    Attributes
    ----------
    comm, rank, size : the communicator, this rank, the number of ranks
    part : Partition
        ``(base, count, n_samples)`` of this rank; also ``base``, ``count``, ``n_samples``.
    backend : Backend or None
    device : int
        The device chosen for this rank; -1 for a host backend or when no backend was named.
    """

    def __init__(self, n_samples, *, comm=None, backend=None, device=None, allow_shared_device=False):
        from ._mpi import world
        self.comm = comm = world(comm)
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.backend, self.device = None, -1
        err, same = None, None
        try:  # checked here, then agreed: every rank raises, or every rank goes on to select_device
            self.part = split(n_samples, self.size, self.rank)
            if backend is not None:
                from .. import backend as _backend
                self.backend = _backend(backend)
            same = {"n_samples": self.part.n_samples, "backend": None if self.backend is None else self.backend.kind,
                    "allow_shared_device": bool(allow_shared_device)}
        except Exception as e:  # noqa: BLE001 - reported on every rank by check()
            err = e
        _check(comm, err, what="Job", same=same)
        if self.backend is not None:
            from .device import select_device
            self.device = select_device(self.backend, comm, device=device, allow_shared=allow_shared_device)

    # -- the partition -------------------------------------------------------------------------
    @property
    def base(self):
        return self.part.base

    @property
    def count(self):
        return self.part.count

    @property
    def n_samples(self):
        return self.part.n_samples

    @property
    def empty(self):
        """True when this rank holds no samples (more ranks than samples)."""
        return self.part.count == 0

    def samples(self, part=None):
        """The global sample indices of this rank's share (or of ``part``), as int64."""
        p = part or self.part
        return np.arange(p.base, p.stop, dtype=np.int64)

    def share(self, full, part=None):
        """This rank's share of an array over all samples (a view of its last axis)."""
        p = part or self.part
        if full.shape[-1] != p.n_samples:
            raise EagleValueError(f"eagle.distributed: an array over all samples must have {p.n_samples} on "
                                  f"its last axis, got shape {tuple(full.shape)}")
        return full[..., p.base:p.stop]

    # -- kernels ---------------------------------------------------------------------------------
    def plane(self, array, part=None):
        """``array`` (this rank's share, or ``part``'s) as a kernel argument indexed by global sample.

        Checks that the last axis holds the share's ``count`` samples and returns a
        :class:`GlobalPlane`: the array's address minus ``base`` elements."""
        p = part or self.part
        shape = tuple(getattr(array, "shape", ()))
        if len(shape) not in (1, 2) or shape[-1] != p.count:
            raise EagleValueError(f"eagle.distributed: rank {self.rank}: a plane of samples [{p.base}, {p.stop}) "
                                  f"must have shape ({p.count},) or (w, {p.count}), got {shape}")
        info = address_of(array)
        itemsize = info.nbytes // max(1, int(np.prod(shape))) if info.nbytes else 0
        if p.count and not itemsize:
            raise EagleValueError(f"eagle.distributed: rank {self.rank}: cannot tell the item size of a "
                                  f"{type(array).__name__}")
        bias = p.base * itemsize
        if info.ptr < bias:
            raise EagleValueError(f"eagle.distributed: rank {self.rank}: the plane's address 0x{info.ptr:x} is "
                                  f"below its bias of {bias} bytes")
        return GlobalPlane(info.ptr - bias, array, p)

    def run(self, stream, kernel, args, *, part=None, block=0):
        """Launch ``kernel`` over this rank's samples (or ``part``'s) on ``stream``.

        The kernel gets ``args`` then ``(base, count, n_samples)``: its lanes are the global
        samples ``[base, base + count)``. Pass planes through :meth:`plane`. Capturable: use it in
        the steps of ``eagle.Graph.build``. Returns False for an empty share (nothing launched)."""
        p = part or self.part
        if hasattr(stream, "run"):
            return stream.run(kernel, args, p.n_samples, base=p.base, count=p.count, n_samples=p.n_samples,
                              block=block)
        if self.backend is None:
            raise EagleValueError("eagle.distributed.Job.run: give an eagle Stream (it names its backend), or "
                                  "name backend= when creating the Job")
        return self.backend.run(kernel, args, p.n_samples, base=p.base, count=p.count, n_samples=p.n_samples,
                                block=block, stream=stream, device=self.device)

    # -- results ---------------------------------------------------------------------------------
    def gather(self, share, root=0):
        """This rank's share of a plane and every other rank's, in one array on ``root`` (every
        rank when None); see :func:`eagle.distributed.gather`. Collective."""
        from .gather import gather
        return gather(share, self.n_samples, self.comm, root=root, backend=self.backend)

    def save(self, path, /, root=0, **shares):
        """Gather ``name=share`` planes and write them to one ``.npz`` file from ``root`` (a rank,
        not None); see :func:`eagle.distributed.save`. Collective."""
        from .gather import save
        return save(path, shares, self.n_samples, self.comm, root=root, backend=self.backend)

    # -- dynamic load balance ---------------------------------------------------------------------
    def chunks(self, **kw):
        """This rank's chunks of samples taken from a shared counter (see
        :func:`eagle.distributed.chunks`); each is a :class:`Partition` for ``run``/``plane``."""
        from .dynamic import chunks
        return chunks(self.n_samples, self.comm, **kw)

    def collector(self):
        """A :class:`Collector` for per-chunk results of this job."""
        from .dynamic import Collector
        return Collector(self.n_samples, self.comm)

    # -- failure ----------------------------------------------------------------------------------
    def agree(self, fn, *args, what="the work", **kw):
        """``fn(*args, **kw)`` on every rank, then raise on every rank if any failed. Collective."""
        return _agree(self.comm, fn, *args, what=what, **kw)

    def fail_fast(self):
        """A context manager: an exception escaping it on this rank aborts the whole job with its message."""
        return _fail_fast(self.comm)

    def __repr__(self):
        dev = "" if self.backend is None else f" {self.backend.kind}:{self.device}"
        return (f"<eagle.distributed.Job rank {self.rank}/{self.size} samples [{self.base}, {self.part.stop}) "
                f"of {self.n_samples}{dev}>")


__all__ = ["Job", "GlobalPlane", "Partition"]
