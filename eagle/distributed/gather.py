"""Results of every rank in one array, in global sample order, and in one file.

A rank's share of a plane is a host array whose last axis is its ``count`` (shape ``(count,)``
or ``(w, count)``). ``gather`` puts the shares side by side along that axis with ``Gatherv``
(``Allgatherv`` when every rank wants the result), the counts taken from the partition, so the
result has shape ``(n_samples,)`` or ``(w, n_samples)``. Shapes and dtypes are checked
collectively first: a rank with a wrong share makes every rank raise :class:`RankFailed`.

Device arrays are copied to the host first through the backend (``to_host``)."""
import os

import numpy as np

from ..errors import EagleTypeError, EagleValueError
from .failure import check
from .partition import counts as _counts


def to_host(array, backend=None, stream=None):
    """A numpy array with ``array``'s data: host arrays as they are, device arrays copied
    through ``backend`` (default: the kind the array's DLPack device names)."""
    if isinstance(array, np.ndarray):
        return array
    if hasattr(array, "__array_interface__"):
        return np.asarray(array)
    from .._alloc import is_host
    if is_host(array):
        return np.from_dlpack(array)
    from .._arrays import address_of
    from .._resolve import resolve
    b, _ = resolve((array,), backend=backend, what="eagle.distributed")
    try:
        dtype, shape = np.dtype(str(array.dtype).split(".")[-1]), tuple(array.shape)
    except (AttributeError, TypeError):
        raise EagleTypeError(f"eagle.distributed: cannot copy a {type(array).__name__} to the host: it has no "
                             "dtype/shape; pass a numpy array") from None
    out = np.empty(shape, dtype)
    src = address_of(array)
    if src.nbytes != out.nbytes:
        raise EagleValueError(f"eagle.distributed: a {type(array).__name__} of shape {shape} holds "
                              f"{src.nbytes} bytes, expected {out.nbytes}")
    own = stream is None
    s = b.stream(device=src.device_id) if own else stream
    from .._alloc import order_before
    order_before(array, s)  # the array library's pending writes, before the copy
    b.copy(out, src, out.nbytes, stream=s, direction="d2h")
    s.synchronize()
    if own:
        s.close()
    return out


def _describe_share(a, count):
    if a.ndim not in (1, 2) or a.shape[-1] != count:
        return (f"its share has shape {a.shape}, expected ({count},) or (w, {count}): "
                f"the last axis holds this rank's {count} samples")
    return None


def gather(share, n_samples, comm=None, *, root=0, backend=None):
    """Gather every rank's share of a plane into one array over all samples. Collective.

    Parameters
    ----------
    share : array, shape (count,) or (w, count)
        This rank's samples ``[base, base + count)`` of the plane (host or device memory).
    n_samples : int
        The run's total; the counts come from :func:`eagle.distributed.split`.
    comm : mpi4py communicator, optional
    root : int or None
        The rank that receives the result; None: every rank does (``Allgatherv``).
    backend : Backend or kind, optional
        For copying a device share to the host (default: from where it lives).

    Returns
    -------
    numpy.ndarray or None
        Shape ``(n_samples,)`` or ``(w, n_samples)`` on the receiving rank(s), None elsewhere.
    """
    from ._mpi import world
    comm = world(comm)
    size, rank = comm.Get_size(), comm.Get_rank()
    cnts = _counts(n_samples, size)
    err, a = None, None
    try:
        a = np.ascontiguousarray(to_host(share, backend))
        err = _describe_share(a, cnts[rank])
    except Exception as e:  # noqa: BLE001 - reported on every rank by check()
        err = e
    check(comm, err, what="gather (this rank's share)")
    meta = comm.allgather((a.dtype.str, a.shape[:-1]))
    if len(set(meta)) != 1:
        check(comm, f"shares differ across ranks: (dtype, leading shape) per rank {meta}", what="gather")
    return gatherv(a, cnts, comm, root)


def gatherv(share, counts, comm, root=0):
    """Shares of the given lengths (last axis) concatenated in rank order along the last axis,
    on ``root`` (every rank when None). Collective; the shares must agree in dtype and leading
    shape (checked by the callers). Rows of a (w, count) share are gathered one by one, so each
    row lands contiguous."""
    from ._mpi import mpi
    MPI = mpi()
    a = np.ascontiguousarray(share)
    lead = a.shape[:-1]
    w = int(np.prod(lead)) if lead else 1
    n = int(sum(counts))
    rank = comm.Get_rank()
    recv = root is None or rank == root
    out = np.empty(lead + (n,), a.dtype) if recv else None
    rows_in = a.reshape(w, a.shape[-1])
    rows_out = out.reshape(w, n) if recv else None
    nbytes = [int(c) * a.dtype.itemsize for c in counts]
    displs = [sum(nbytes[:r]) for r in range(len(nbytes))]
    for j in range(w):
        send = [rows_in[j].view(np.uint8), nbytes[rank], MPI.BYTE]
        if root is None:
            comm.Allgatherv(send, [rows_out[j].view(np.uint8), nbytes, displs, MPI.BYTE])
        else:
            comm.Gatherv(send, [rows_out[j].view(np.uint8), nbytes, displs, MPI.BYTE] if recv else None,
                         root=root)
    return out


def save(path, shares, n_samples, comm=None, *, root=0, backend=None):
    """Gather each plane of ``shares`` (name -> this rank's share) and write them to ``path``
    as one ``.npz`` file (``numpy.load(path)[name]``), from ``root``. Collective.

    The file is written beside ``path`` and renamed into place, so a reader never sees a partial
    file. Returns the path written on ``root``, None elsewhere."""
    from ._mpi import world
    comm = world(comm)
    names = sorted(shares) if isinstance(shares, dict) else None
    everyone = comm.allgather(names)
    err = None
    if not names:
        err = "shares must be a non-empty dict name -> this rank's share"
    elif any(o != names for o in everyone):
        err = f"the ranks save different planes: {everyone}"
    check(comm, err, what="save")
    full = {name: gather(shares[name], n_samples, comm, root=root, backend=backend) for name in names}
    if comm.Get_rank() != root:
        return None
    path = os.fspath(path)
    if not path.endswith(".npz"):
        path += ".npz"
    tmp = path[:-4] + ".tmp.npz"
    np.savez(tmp, **full)
    os.replace(tmp, path)
    return path
