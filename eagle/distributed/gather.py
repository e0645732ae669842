"""Results of every rank in one array, in global sample order, and in one file.

A rank's share of a plane is a host array whose last axis is its ``count`` (shape ``(count,)``
or ``(w, count)``). ``gather`` puts the shares side by side along that axis with ``Gatherv``
(``Allgatherv`` when every rank wants the result), the counts taken from the partition, so the
result has shape ``(n_samples,)`` or ``(w, n_samples)``. Shapes, dtypes (fields and byte order
included) and the arguments that must agree (``n_samples``, ``root``) are checked collectively
first, in one ``allgather``: a rank with a wrong share, or ranks that disagree, make every rank
raise :class:`RankFailed`. ``save`` writes the gathered planes as one ``.npz`` file from ``root``
and agrees on the write's outcome the same way.

Device arrays are copied to the host first through the backend (``to_host``)."""
import os

import numpy as np

from ..extend import address_of, integer, is_host, order_before, resolve
from ..errors import EagleTypeError, EagleValueError
from . import liveness
from .failure import check
from .partition import _check_n
from .partition import counts as _counts


def to_host(array, backend=None, stream=None):
    """A numpy array with ``array``'s data: host arrays as they are, device arrays copied
    through ``backend`` (default: the kind the array's DLPack device names)."""
    if isinstance(array, np.ndarray):
        return array
    if hasattr(array, "__array_interface__"):
        return np.asarray(array)
    if is_host(array):
        return np.from_dlpack(array)
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
    if a.dtype.hasobject:
        return (f"its share has dtype {a.dtype}, which holds Python objects, not data: only arrays of "
                "plain data (numbers, bools, fixed-size structs) can be gathered")
    return None


def check_root(root, comm, what, *, none=True):
    """``root`` as a rank of ``comm`` (None passes when ``none``: every rank receives)."""
    if root is None and none:
        return None
    return integer(root, f"eagle.distributed.{what}: root", minimum=0, maximum=comm.Get_size() - 1)


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

    Raises
    ------
    RankFailed
        On every rank, when a rank's share or arguments are wrong, or when the ranks disagree on
        ``n_samples``, ``root``, the dtype or the leading shape (checked in one ``allgather``
        before any data moves).
    """
    from ._mpi import world
    comm = world(comm)
    size, rank = comm.Get_size(), comm.Get_rank()
    err, a, same = None, None, None
    try:
        n = _check_n(n_samples)
        root = check_root(root, comm, "gather")
        cnts = _counts(n, size)
        a = np.ascontiguousarray(to_host(share, backend))
        err = _describe_share(a, cnts[rank])
        same = {"n_samples": n, "root": root, "dtype": a.dtype, "leading shape": a.shape[:-1]}
    except Exception as e:  # noqa: BLE001 - reported on every rank by check()
        err = e
    check(comm, err, what="gather", same=same)
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
        # nonblocking, waited for by liveness.wait: a rank that is gone ends the job, not a hang
        if root is None:
            req = comm.Iallgatherv(send, [rows_out[j].view(np.uint8), nbytes, displs, MPI.BYTE])
        else:
            req = comm.Igatherv(send, [rows_out[j].view(np.uint8), nbytes, displs, MPI.BYTE] if recv else None,
                                root=root)
        liveness.wait(req, comm, "gather")
    return out


def save(path, shares, n_samples, comm=None, *, root=0, backend=None):
    """Gather each plane of ``shares`` (name -> this rank's share) and write them to ``path``
    as one ``.npz`` file (``numpy.load(path)[name]``), from ``root``. Collective.

    ``.npz`` is appended to a path without it. The file is written to a new temporary file beside
    ``path`` (removed if the write fails) and renamed into place, so a reader never sees a partial
    file. ``root`` is the rank that writes: an int (not None). Any name is a valid plane name.
    Returns the path written on ``root``, None elsewhere; when the write fails, every rank raises
    :class:`RankFailed`."""
    from ._mpi import world
    comm = world(comm)
    err, same, target = None, None, None
    try:
        n = _check_n(n_samples)
        if root is None:
            raise EagleValueError("eagle.distributed.save: root must be the rank that writes the file, not None")
        root = check_root(root, comm, "save", none=False)
        if not isinstance(shares, dict) or not shares:
            raise EagleValueError("eagle.distributed.save: shares must be a non-empty dict name -> this rank's share")
        bad = [k for k in shares if not isinstance(k, str) or not k]
        if bad:
            raise EagleTypeError(f"eagle.distributed.save: plane names must be non-empty strings, got {bad[0]!r}")
        target = _target(path)
        if comm.Get_rank() == root and not os.path.isdir(os.path.dirname(target) or "."):
            raise EagleValueError(f"eagle.distributed.save: the folder of {target!r} does not exist")
        same = {"planes": tuple(sorted(shares)), "root": root, "n_samples": n}
    except Exception as e:  # noqa: BLE001 - reported on every rank by check()
        err = e
    check(comm, err, what="save", same=same)
    full = {name: gather(shares[name], n, comm, root=root, backend=backend) for name in same["planes"]}
    err = None
    if comm.Get_rank() == root:
        try:
            _write_npz(target, full)
        except Exception as e:  # noqa: BLE001 - reported on every rank by check()
            err = e
    check(comm, err, what=f"save (writing {target!r} on rank {root})")
    return target if comm.Get_rank() == root else None


def _target(path):
    """The ``.npz`` file ``path`` names (``.npz`` appended when it is missing); a name that is
    empty but for ``.npz`` is refused."""
    try:
        path = os.fspath(path)
    except TypeError:
        raise EagleTypeError(f"eagle.distributed.save: path must be a str or os.PathLike, got "
                             f"{type(path).__name__}") from None
    if not isinstance(path, str):
        raise EagleTypeError(f"eagle.distributed.save: path must be a str, got {type(path).__name__}")
    if not path.endswith(".npz"):
        path += ".npz"
    if not os.path.basename(path)[:-4]:
        raise EagleValueError(f"eagle.distributed.save: path {path[:-4]!r} names no file: give a file name")
    return path


def _write_npz(path, arrays):
    """``arrays`` (name -> numpy array) as the ``.npz`` file ``path``, what ``numpy.savez`` writes
    (one ``name.npy`` member each, uncompressed), with no name reserved: numpy.savez takes the
    names as keywords, so planes called ``file`` or ``allow_pickle`` would not be written. Written
    to a new temporary file in the same folder, then renamed over ``path``."""
    import zipfile
    fd, tmp = _new_temp(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            with zipfile.ZipFile(fh, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
                for name, a in arrays.items():
                    with zf.open(name + ".npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, np.asanyarray(a), allow_pickle=False)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _new_temp(path):
    """A new file beside ``path``, ``(fd, name)``, under a name no other file has (``O_EXCL``),
    created with mode 0666 less the umask like any new file (``tempfile.mkstemp``'s are 0600)."""
    import secrets
    folder, base = os.path.split(path)
    for _ in range(100):
        tmp = os.path.join(folder, f".{base}.{secrets.token_hex(6)}.part")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"eagle.distributed.save: no free temporary name beside {path!r}")
