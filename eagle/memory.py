"""Copies, page-locked host memory and host functions, in stream order (seam minor 6).

Seam objects: every function takes the :class:`eagle.Backend` to work on as its first argument;
``eagle.copy`` and friends (eagle/api.py) decide it from the arrays."""
import weakref

from . import _seam_meta as meta
from ._arrays import address_of
from ._device_kind import HOST_DEVICE_TYPES
from ._handle import raw_int
from ._seam_ffi import ffi
from ._status import remember_callback_exception
from ._stream_arg import raw_stream
from .errors import EagleTypeError, EagleValueError

_C = meta.CONSTANTS
H2D, D2H, D2D, H2H = (_C[f"EAGLE_BACKEND_MEMCPY_{d}"] for d in ("H2D", "D2H", "D2D", "H2H"))


def copy(backend, dst, src, nbytes=None, *, stream=None, direction=None):
    """Copy ``nbytes`` (default: the whole of ``src``) from ``src`` to ``dst`` in stream order.

    ``dst``/``src`` are arrays (their DLPack device gives the direction) or int addresses (then
    pass ``direction``: ``'h2d'``, ``'d2h'``, ``'d2d'``, ``'h2h'``). A size mismatch is refused:
    nothing is ever truncated silently."""
    b = backend
    b.require("eagle_backend_memcpy")
    d, s = address_of(dst), address_of(src)
    if nbytes is None:
        if s.nbytes is None:
            raise EagleValueError("eagle.copy: give nbytes when src is a raw address")
        nbytes = s.nbytes
    nbytes = int(nbytes)
    if nbytes < 0:
        raise EagleValueError(f"eagle.copy: nbytes must be >= 0, got {nbytes}")
    for info, what in ((d, "dst"), (s, "src")):
        if info.nbytes is not None and info.nbytes < nbytes:
            raise EagleValueError(f"eagle.copy: {what} holds {info.nbytes} bytes, the copy needs {nbytes}")
    if direction is None:
        if d.device_type is None or s.device_type is None:
            raise EagleValueError("eagle.copy: give direction= when dst or src is a raw address")
        dh, sh = d.device_type in HOST_DEVICE_TYPES, s.device_type in HOST_DEVICE_TYPES
        code = {(True, True): H2H, (False, True): H2D, (True, False): D2H, (False, False): D2D}[(dh, sh)]
    else:
        try:
            code = {"h2d": H2D, "d2h": D2H, "d2d": D2D, "h2h": H2H}[str(direction).lower()]
        except KeyError:
            raise EagleValueError(f"eagle.copy: direction must be h2d, d2h, d2d or h2h, got {direction!r}") from None
    b.call.memcpy(d.ptr, s.ptr, nbytes, code, raw_stream(b, stream))


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
    free_fn(ptr)


def pinned(backend, shape, dtype="float64"):
    """A numpy array over page-locked host memory that frees itself with its last view."""
    import numpy as np
    b = backend
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    count = 1
    for s in shape:
        if s < 0:
            raise EagleValueError(f"eagle.pinned: negative dimension in shape {shape}")
        count *= s
    nbytes = count * dtype.itemsize
    mem = PinnedMemory(b, max(nbytes, 1))
    raw = np.asarray(mem)  # holds `mem` as its base
    return raw[:nbytes].view(dtype).reshape(shape)


class _HostCall:
    """One Python callable enqueued as a host function; ``once`` for eager enqueues."""

    __slots__ = ("fn", "backend", "once", "cdata")

    def __init__(self, fn, backend, once):
        self.fn, self.backend, self.once = fn, backend, once
        self.cdata = ffi.new_handle(self)


@ffi.callback("void(void*)")
def _trampoline(user_data):
    call = ffi.from_handle(user_data)
    try:
        call.fn()
    except BaseException as e:  # noqa: BLE001 - kept and re-raised at the next synchronize
        remember_callback_exception(e)
        call.backend._host_errors.append(e)
    finally:
        if call.once:
            call.backend._pending_calls.discard(call)


def host_func(backend, fn, *, stream=None):
    """Run the Python callable ``fn()`` in stream order (a host node when the stream is captured).

    An exception ``fn`` raises is re-raised by the next ``synchronize()`` on that backend."""
    b = backend
    b.require("eagle_backend_host_func")
    if not callable(fn):
        raise EagleTypeError(f"eagle.host_func: {fn!r} is not callable")
    raw = raw_stream(b, stream)
    cap = b._capturing.get(raw)
    call = _HostCall(fn, b, once=cap is None)
    if cap is None:
        b._pending_calls.add(call)
    else:
        cap.keep(call)
    status = b._f.host_func(raw, _trampoline, call.cdata)
    if status:
        b._pending_calls.discard(call)
        b._check("eagle_backend_host_func", status)
