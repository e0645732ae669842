"""Copies, page-locked host memory and host functions, in stream order (seam minor 6).

Seam objects: every function takes the :class:`eagle.Backend` to work on as its first argument;
``eagle.copy`` and friends (eagle/api.py) decide it from the arrays."""
import weakref

from . import _seam_meta as meta
from . import _validate
from ._arrays import address_of
from ._device_kind import HOST_DEVICE_TYPES
from ._handle import raw_int
from ._inflight import enqueue_host_call
from ._inflight.releases import free_when_safe
from ._seam_ffi import ffi
from ._stream_arg import raw_stream
from .errors import EagleTypeError, EagleValueError

_C = meta.CONSTANTS
H2D, D2H, D2D, H2H = (_C[f"EAGLE_BACKEND_MEMCPY_{d}"] for d in ("H2D", "D2H", "D2D", "H2H"))
_BY_NAME = {"h2d": H2D, "d2h": D2H, "d2d": D2D, "h2h": H2H}
_BY_PLACE = {(True, True): H2H, (False, True): H2D, (True, False): D2H, (False, False): D2D}  # (dst, src) on host


def enqueue_copy(backend, dst, src, nbytes=None, *, stream=None, direction=None):
    """Enqueue a copy of ``nbytes`` (default: the whole of ``src``) from ``src`` to ``dst`` on
    ``stream``: ``(None, raw stream, refs)``, where ``refs`` must stay alive until the stream has
    run the copy (eagle._inflight.submit decides who keeps them).

    ``dst``/``src`` are arrays (their DLPack device gives the direction) or int addresses (then
    pass ``direction``: ``'h2d'``, ``'d2h'``, ``'d2d'``, ``'h2h'``). A size mismatch is refused:
    nothing is ever truncated silently."""
    b = backend
    b.require("eagle_backend_memcpy")
    d, s = address_of(dst), address_of(src)
    nbytes = _validate.size(nbytes, s, "eagle.copy", "nbytes", "src")
    _validate.writable(d, "eagle.copy: dst")
    _validate.holds(d, nbytes, "eagle.copy: dst")
    _validate.holds(s, nbytes, "eagle.copy: src")
    if direction is None:
        if d.device_type is None or s.device_type is None:
            raise EagleValueError("eagle.copy: give direction= when dst or src is a raw address")
        code = _BY_PLACE[d.device_type in HOST_DEVICE_TYPES, s.device_type in HOST_DEVICE_TYPES]
    else:
        code = _BY_NAME.get(str(direction).lower())
        if code is None:
            raise EagleValueError(f"eagle.copy: direction must be h2d, d2h, d2d or h2h, got {direction!r}")
    # a raw int address on the host side (every side on a kind whose device memory is the host's)
    # is checked for being memory of this process at all (eagle/_validate.py: host_range)
    host_kind = all(t in HOST_DEVICE_TYPES for t in b.device_types)
    if d.device_type is None and (host_kind or code in (H2H, D2H)):
        _validate.host_range(d.ptr, nbytes, "eagle.copy: dst")
    if s.device_type is None and (host_kind or code in (H2H, H2D)):
        _validate.host_range(s.ptr, nbytes, "eagle.copy: src")
    raw = raw_stream(b, stream)
    b.call.memcpy(d.ptr, s.ptr, nbytes, code, raw)
    return None, raw, (d.keepalive, s.keepalive)


class PinnedMemory:
    """Page-locked host memory from the backend; freed when the last view of it goes away."""

    __slots__ = ("ptr", "nbytes", "_finalizer", "__weakref__")

    def __init__(self, backend, nbytes):
        backend.require("eagle_backend_host_alloc")
        backend.require("eagle_backend_host_free")
        out = ffi.new("void**")
        backend.call.host_alloc(int(nbytes), 0, out)
        self.ptr = out[0]
        self.nbytes = int(nbytes)
        self._finalizer = weakref.finalize(self, _host_free, backend._f.host_free, out[0], backend)

    @property
    def __array_interface__(self):
        return {"shape": (self.nbytes,), "typestr": "|u1", "version": 3,
                "data": (raw_int(self.ptr), False)}


def _host_free(free_fn, ptr, backend):
    free_when_safe(free_fn, ptr)  # see eagle/_inflight/releases.py (`backend` held until here)


def pinned(backend, shape, dtype="float64"):
    """A numpy array over page-locked host memory that frees itself with its last view."""
    import numpy as np
    b = backend
    try:
        dtype = np.dtype(dtype)
    except TypeError as e:
        raise EagleTypeError(f"eagle.pinned: {dtype!r} is no dtype ({e})") from None
    shape = _validate.shape(shape, "eagle.pinned")
    count = 1
    for s in shape:
        count *= s
    nbytes = _validate.integer(count * dtype.itemsize, f"eagle.pinned: the size of {shape} x {dtype}",
                               maximum=(1 << 62))
    mem = PinnedMemory(b, max(nbytes, 1))
    raw = np.asarray(mem)  # holds `mem` as its base
    return raw[:nbytes].view(dtype).reshape(shape)


def host_func(backend, fn, *, stream=None):
    """Run the Python callable ``fn()`` in stream order (a host node when the stream is captured).

    An exception ``fn`` raises is re-raised by the next ``synchronize()`` of a stream or launcher
    of the thread that enqueued it. The call stays pending (and alive) until it has run
    (eagle/_inflight/host_calls.py)."""
    b = backend
    b.require("eagle_backend_host_func")
    if not callable(fn):
        raise EagleTypeError(f"eagle.host_func: {fn!r} is not callable")
    enqueue_host_call(b, raw_stream(b, stream), fn)
