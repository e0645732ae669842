"""Streams: in-order queues of work on one device.

:class:`StreamRef` names a raw stream (a fork branch, a conditional body, a foreign
library's stream) without owning it; :class:`Stream` owns one made by the backend.

Both speak the CUDA stream protocol (``__cuda_stream__``) on backends whose memory is a CUDA or
HIP device's, so CuPy, torch and cuda.core can enqueue on eagle's streams too."""
from _thread import get_ident
from functools import partial

from . import _validate
from . import exec as _exec
from . import memory as _memory
from ._inflight import attention_list, stream_released, submit
from ._device_kind import CUDA_STREAM_PROTOCOL_TYPES
from ._handle import Owner, raw_int
from ._seam_ffi import ffi
from ._seam_meta import CONSTANTS
from ._stream_arg import raw_stream
from .errors import EagleTypeError, EagleValueError, HandleError


_NON_BLOCKING = CONSTANTS["EAGLE_BACKEND_STREAM_NON_BLOCKING"]


class StreamRef(Owner):
    """A raw stream of one backend, borrowed: eagle does not release it.

    Work-issuing calls (``run``, ``copy``, ``host_func``, ...) accept a StreamRef, a
    :class:`Stream` or a raw int wherever they take ``stream``."""

    __slots__ = ("_raw",)
    _what = "stream"

    def __init__(self, backend, raw):
        self._own(backend, True, None)
        self._raw = int(raw)

    @classmethod
    def from_handle(cls, backend, raw):
        """Borrow a raw stream value of ``backend`` (an :class:`eagle.Backend`), e.g. a
        ``cudaStream_t`` from another library, or anything ``stream=`` accepts."""
        return cls(backend, raw_stream(backend, raw))

    def _raw_for(self, backend):
        """The raw value, for work on ``backend`` (refused for another backend's stream)."""
        if self._backend is not backend:
            raise EagleValueError(f"eagle: the stream belongs to the {self._backend.kind} backend "
                                  f"'{self._backend.path}', not to the {backend.kind} backend "
                                  f"'{backend.path}'")
        return self.handle

    @property
    def __cuda_stream__(self):
        """The CUDA stream protocol: ``stream.__cuda_stream__() -> (0, raw)``. Only on backends
        that serve CUDA or HIP memory (AttributeError elsewhere)."""
        if not CUDA_STREAM_PROTOCOL_TYPES.intersection(self._backend.device_types):
            raise AttributeError(f"the {self._backend.kind} backend's streams are no CUDA streams")
        return self._cuda_stream

    def _cuda_stream(self):
        return (0, self.handle)

    @property
    def handle(self):
        """The raw stream value as an int (0 is the kind's default stream)."""
        if self._thread != get_ident():  # Owner._live's check, inline: no extra call per use
            self._refuse()
        return self._raw

    def __int__(self):
        return self.handle

    def __repr__(self):
        return f"<eagle.{type(self).__name__} {self._backend.kind} 0x{self._raw:x}>"

    # -- work on this stream (thin forwards to the functions that do it) ------------------------
    def run(self, kernel, args, n, **kw):
        """Launch ``kernel`` over ``n`` lanes on this stream; see :func:`eagle.run`."""
        return submit(self._backend, self, _exec.enqueue_run, kernel, args, n, **kw)

    def copy(self, dst, src, nbytes=None, *, direction=None):
        """Copy in stream order; see :func:`eagle.copy`."""
        return submit(self._backend, self, _memory.enqueue_copy, dst, src, nbytes, direction=direction)

    def host_func(self, fn):
        """Run the Python callable ``fn()`` in stream order; see :func:`eagle.host_func`."""
        return _memory.host_func(self._backend, fn, stream=self)


class Stream(StreamRef):
    """A stream the backend created for eagle; released by :meth:`close` or garbage collection.

    Get one from :meth:`Backend.stream`.

    ``synchronize()`` blocks until every piece of work enqueued on this stream has finished, then
    raises the exception a host function enqueued on this backend raised, if any. It is a bound
    call (eagle/_hotcall/__init__.py): no Python frame between the caller and the backend."""

    __slots__ = ("synchronize",)

    def __init__(self, backend, device=-1, non_blocking=False, flags=None):
        b = backend
        desc = ffi.new("struct eagle_backend_stream_desc*")
        desc.struct_size = ffi.sizeof(desc[0])
        desc.flags = (_NON_BLOCKING if non_blocking else 0) if flags is None else _validate.integer(
            flags, "Backend.stream: flags", minimum=0, maximum=_validate.UINT32_MAX)
        desc.device = _validate.integer(device, "Backend.stream: device", minimum=-1, maximum=_validate.INT32_MAX)
        out = ffi.new("eagle_backend_stream*")
        b.call.stream_create(desc, out)
        handle = out[0]
        raw = ffi.new("uint64_t*")
        try:
            b.call.stream_ptr(handle, raw)
        except BaseException:
            b._f.stream_release(handle)
            raise
        self._raw = int(raw[0])
        # the release waits for the stream's work, so after it the arrays eagle holds for that
        # work (eagle/_inflight/holds.py) can go
        self._own(b, handle, "stream_release", partial(stream_released, b, self._raw), query="stream_query")
        self.synchronize = self._bind("stream_synchronize", watch=attention_list(b, get_ident()),
                                      query="stream_query")



__all__ = ["Stream", "StreamRef", "raw_stream", "raw_int", "HandleError"]
