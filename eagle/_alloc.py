"""Small device buffers on the planes' device, allocated the way the planes were.

Beside a :class:`eagle.DeviceArray` the seam's allocator is used (minor 7); otherwise eagle
allocates like the arrays it is given: numpy for host
memory; the array's own namespace (``__array_namespace__()``) where it has one; else the top-level
module of the array's type (``zeros(shape, dtype=getattr(mod, name), device=...)``). No framework
is named. Reading and writing a few words goes through the host directly for host memory, and
through ``eagle.copy`` on a stream for device memory."""
import sys

import numpy as np

from ._arrays import address_of, dlpack_device
from ._device_kind import HOST_DEVICE_TYPES
from .errors import EagleTypeError


def is_host(like):
    """True when ``like`` (an array, or None for plain host memory) lives in host-readable memory."""
    if like is None or hasattr(like, "__array_interface__"):
        return True
    return dlpack_device(like)[0] in HOST_DEVICE_TYPES


def _namespace(like):
    get = getattr(like, "__array_namespace__", None)
    if get is not None:
        try:
            return get()
        except Exception:  # noqa: BLE001 - some arrays advertise it but refuse old API versions
            pass
    return sys.modules.get(type(like).__module__.split(".")[0])


def zeros(shape, dtype, like=None):
    """Zeros of ``shape``/``dtype`` (a numpy dtype name) on the device ``like`` lives on.

    Where the namespace lacks the dtype (e.g. an unsigned type), bytes of the same size are
    allocated instead (uint8, last axis scaled): callers use these buffers by address."""
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    from .array import DeviceArray, zeros as seam_zeros
    if isinstance(like, DeviceArray):  # memory the seam allocated: allocate beside it the same way
        return seam_zeros(like.backend, shape, dtype, device=like.device_id)
    if like is None or hasattr(like, "__array_interface__") or (
            not hasattr(like, "__cuda_array_interface__") and is_host(like)):
        return np.zeros(shape, dtype)
    ns = _namespace(like)
    if ns is None or not hasattr(ns, "zeros"):
        raise EagleTypeError(f"eagle: cannot allocate beside a {type(like).__name__}: its module has no zeros()")
    device = getattr(like, "device", None)
    name = dtype.name
    if getattr(ns, name, None) is None:
        name = "uint8"
        shape = shape[:-1] + ((shape[-1] if shape else 1) * dtype.itemsize,)
    kind = getattr(ns, name)
    try:
        return ns.zeros(shape, dtype=kind, device=device)
    except TypeError:
        # A zeros() without device= allocates on the current device: make `like`'s device current
        # where its device object can be entered (a context manager), else refuse rather than
        # allocate on the wrong device.
        if device is not None and hasattr(device, "__enter__"):
            with device:
                return ns.zeros(shape, dtype=kind)
        if device is None:
            return ns.zeros(shape, dtype=kind)
        raise EagleTypeError(f"eagle: cannot allocate beside a {type(like).__name__} on {device!r}: "
                             "its zeros() takes no device= and its device cannot be made current") from None


def _host_view(arr, dtype, count):
    """A numpy view of the first ``count`` ``dtype`` items of host array ``arr``."""
    if isinstance(arr, np.ndarray):
        return arr.reshape(-1).view(np.uint8)[:count * np.dtype(dtype).itemsize].view(dtype)
    info = address_of(arr)
    import ctypes
    buf = (ctypes.c_char * (count * np.dtype(dtype).itemsize)).from_address(info.ptr)
    return np.frombuffer(buf, dtype=dtype, count=count)


def order_before(arr, stream):
    """Order the array library's pending work on ``arr`` (e.g. the fill of a fresh buffer) before
    ``stream``, through the DLPack protocol's ``__dlpack__(stream=...)``; a no-op where refused."""
    export = getattr(arr, "__dlpack__", None)
    if export is None or stream is None:
        return
    try:
        export(stream=stream.handle)
    except Exception:  # noqa: BLE001 - an exporter without stream support: nothing to order
        pass


def read(arr, dtype, count, backend, stream):
    """The first ``count`` items of ``arr`` as a fresh numpy array. Device memory is copied on
    ``stream`` (an eagle Stream), which is then synchronized; host memory is read directly (the
    caller has synchronized the work that writes it)."""
    if is_host(arr):
        return _host_view(arr, dtype, count).copy()
    out = np.zeros(count, dtype)
    order_before(arr, stream)
    backend.copy(out, address_of(arr).ptr, out.nbytes, stream=stream, direction="d2h")
    stream.synchronize()
    return out


def write(arr, values, dtype, backend, stream):
    """Write ``values`` into the first items of ``arr`` (host directly, device via a copy on
    ``stream``, synchronized so the source may go away)."""
    src = np.ascontiguousarray(values, dtype=dtype).reshape(-1)
    if is_host(arr):
        _host_view(arr, dtype, src.size)[...] = src
        return
    order_before(arr, stream)
    backend.copy(address_of(arr).ptr, src, src.nbytes, stream=stream, direction="h2d")
    stream.synchronize()



# The out-of-stream-order words (eagle/_inflight/cancel.py's stopping of interrupted work): their
# source words (never freed: a copy may read its source after the call returns) and the
# non-blocking stream per (backend, device) they are copied on, so that they are not ordered
# behind the work running on the device. A device whose copies wait for its running kernels
# (PoCL's cpu device, whose worker threads run the kernel) lands them only after that work.
_WORDS = {v: np.full(1, v, np.uint32) for v in (0, 1)}
_side_streams = {}
#: Seconds the out-of-order copies are waited for before the caller goes on without them.
SIDE_WAIT_S = 0.2


def _side_stream(backend, device):
    key = (id(backend), device)
    side = _side_streams.get(key)
    if side is None or side[0] is not backend:
        side = _side_streams[key] = (backend, backend.stream(device, non_blocking=True))
    return side[1]


def _landed(stream, seconds):
    """True once ``stream``'s work has run, polled for at most ``seconds`` (never blocking on it)."""
    import time
    keeper = stream._keeper
    deadline = time.monotonic() + seconds
    while not keeper.done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.0005)
    return True


def write_now(arr, index, value, backend, before=None):
    """Set the uint32 word ``index`` of ``arr`` to ``value`` (0 or 1) now, out of stream order:
    host memory directly; device memory by a copy on a side stream, with the work enqueued on
    ``before`` (a stream value) from now on ordered after it (eagle.fence), waited for at most
    :data:`SIDE_WAIT_S`. Returns whether the word is written. Main thread only (the side stream
    belongs to the thread that made it)."""
    if is_host(arr):
        _host_view(arr, np.uint32, index + 1)[index] = value
        return True
    st = _side_stream(backend, int(dlpack_device(arr)[1]))
    backend.copy(address_of(arr).ptr + 4 * index, _WORDS[value], 4, stream=st, direction="h2d")
    if before is not None:
        try:
            backend.fence(st, before)
        except Exception:  # noqa: BLE001 - a stream the fence refuses: wait for the write instead
            if not _landed(st, 10.0):
                st.synchronize()  # the write must land before anything enqueued on `before` after this
            return True
    return _landed(st, SIDE_WAIT_S)


def read_now(arr, index, backend):
    """The uint32 word ``index`` of ``arr`` now, out of stream order (as :func:`write_now`), or
    None when the copy did not land within :data:`SIDE_WAIT_S`."""
    if is_host(arr):
        return int(_host_view(arr, np.uint32, index + 1)[index])
    st = _side_stream(backend, int(dlpack_device(arr)[1]))
    out = np.zeros(1, np.uint32)  # held by eagle until the copy has run (eagle/_inflight/holds.py)
    backend.copy(out, address_of(arr).ptr + 4 * index, 4, stream=st, direction="d2h")
    return int(out[0]) if _landed(st, SIDE_WAIT_S) else None


def write_in_order(arr, index, value, backend, stream):
    """Enqueue on ``stream`` (a stream value) the write of the uint32 word ``index`` of ``arr`` to
    ``value`` (0 or 1): it runs after the work enqueued there before it."""
    backend.copy(address_of(arr).ptr + 4 * index, _WORDS[value], 4, stream=stream,
                 direction="h2h" if is_host(arr) else "h2d")
