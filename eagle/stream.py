"""Streams: in-order queues of work on one device.

:class:`StreamRef` names a raw stream (a fork branch, a conditional body, a foreign
library's stream) without owning it; :class:`Stream` owns one made by the backend."""
from _thread import get_ident

from ._handle import Owner, raw_int
from ._seam_ffi import ffi
from .errors import EagleTypeError, EagleValueError, HandleError


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
        """Borrow a raw stream value (e.g. a ``cudaStream_t`` from another library)."""
        from ._loader import backend as _backend
        return cls(_backend(backend), raw)

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
        from .exec import run
        return run(kernel, args, n, stream=self, backend=self._backend, **kw)

    def copy(self, dst, src, nbytes=None):
        """Copy in stream order; see :func:`eagle.copy`."""
        from .memory import copy
        return copy(dst, src, nbytes, stream=self, backend=self._backend)

    def host_func(self, fn):
        """Run the Python callable ``fn()`` in stream order; see :func:`eagle.host_func`."""
        from .memory import host_func
        return host_func(fn, stream=self, backend=self._backend)


class Stream(StreamRef):
    """A stream the backend created for eagle; released by :meth:`close` or garbage collection.

    Get one from :meth:`Backend.stream`.

    ``synchronize()`` blocks until every piece of work enqueued on this stream has finished, then
    raises the exception a host function enqueued on this backend raised, if any. It is a bound
    call (eagle/_hotpath.py): no Python frame between the caller and the backend."""

    __slots__ = ("synchronize",)

    def __init__(self, backend, device=-1, non_blocking=False, flags=None):
        b = backend
        desc = ffi.new("struct eagle_backend_stream_desc*")
        desc.struct_size = ffi.sizeof(desc[0])
        desc.flags = (1 if non_blocking else 0) if flags is None else flags
        desc.device = device
        out = ffi.new("eagle_backend_stream*")
        b._check("eagle_backend_stream_create", b._f.stream_create(desc, out))
        handle = out[0]
        raw = ffi.new("uint64_t*")
        status = b._f.stream_ptr(handle, raw)
        if status:
            b._f.stream_release(handle)
            b._check("eagle_backend_stream_ptr", status)
        self._own(b, handle, "stream_release")
        self._raw = int(raw[0])
        self.synchronize = self._bind("stream_synchronize", watch=b._host_errors)


def raw_stream(backend, stream):
    """The raw value of ``stream`` (a Stream, StreamRef, raw int or None for the default stream),
    checking that it belongs to ``backend``."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    if isinstance(stream, StreamRef):
        if stream._backend is not backend:
            raise EagleValueError(f"eagle: the stream belongs to the {stream._backend.kind} backend "
                             f"'{stream._backend.path}', not to the {backend.kind} backend "
                             f"'{backend.path}'")
        return stream.handle
    raw = getattr(stream, "ptr", None)  # a foreign stream object exposing its raw value
    if isinstance(raw, int):
        return raw
    raise EagleTypeError(f"eagle: expected an eagle stream or a raw stream int, got {type(stream).__name__}")


__all__ = ["Stream", "StreamRef", "raw_stream", "raw_int", "HandleError"]
