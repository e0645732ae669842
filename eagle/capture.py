"""Capture: record the work enqueued on a stream instead of running it.

``with backend.capture(stream) as cap: ...`` records; ``cap.captured`` is the result,
which :meth:`Backend.graph_from_captured` turns into a replayable graph."""
import weakref

from ._handle import Owner
from ._seam_ffi import ffi
from ._stream_arg import raw_stream
from .errors import EagleError


class Captured(Owner):
    """Recorded work, owned until a graph consumes it."""

    __slots__ = ("keepalive",)
    _what = "captured graph"

    def __init__(self, backend, handle, keepalive):
        self._own(backend, handle, "captured_release")
        self.keepalive = keepalive  # host functions the recording refers to

    @property
    def is_valid(self):
        """True when the recording holds at least one node (it can become a graph)."""
        out = ffi.new("int32_t*")
        self._backend.call.captured_is_valid(self._live(), out)
        return bool(out[0])


class Capture(Owner):
    """A capturer bound to one stream. ``begin()`` ... ``end() -> Captured``; or use it as a
    context manager, which begins on entry and ends on exit into :attr:`captured`."""

    __slots__ = ("stream", "captured", "_keepalive", "_raw", "_opened")
    _what = "capturer"

    def __init__(self, backend, stream, device=-1):
        b = backend
        self._raw = raw_stream(b, stream)
        desc = ffi.new("struct eagle_backend_capturer_desc*")
        desc.struct_size = ffi.sizeof(desc[0])
        desc.device = device
        desc.stream = self._raw
        out = ffi.new("eagle_backend_capturer*")
        b.call.capturer_create(desc, out)
        self._own(b, out[0], "capturer_release", ends_capture=True)
        self.stream = stream
        self.captured = None
        self._keepalive = []
        self._opened = []  # weak refs to the conditionals created on this recording's streams

    def begin(self):
        """Start recording the stream's work."""
        b = self._backend
        h = self._live()
        # recorded first: an interrupt landing around the seam call may leave the record saying
        # captured when the stream is not (calls given no stream are refused, arrays kept by the
        # recording), never the other way (work recorded while its arrays are held as if it ran)
        before = b._capturing.get(self._raw)
        b._capturing[self._raw] = self
        try:
            b.call.capturer_begin(h)
        except EagleError:  # refused (a stream already captured, say): the record as it was
            if before is not None:
                b._capturing[self._raw] = before
            elif b._capturing.get(self._raw) is self:
                del b._capturing[self._raw]
            raise

    def end(self):
        """Stop recording; return the :class:`Captured` work."""
        b = self._backend
        h = self._live()
        out = ffi.new("eagle_backend_captured*")
        status = b._f.capturer_end(h, out)
        b._forget_capture(self)
        b._check("eagle_backend_capturer_end", status)
        self.captured = Captured(b, out[0], self._keepalive)
        self._keepalive = []
        return self.captured

    def adopt_stream(self, raw):
        """Note that work on ``raw`` (a fork branch, a conditional body) belongs to this capture."""
        self._backend._capturing[int(raw)] = self

    def adopt_conditional(self, conditional):
        """Note a conditional node recorded on one of this capture's streams: a capture that ends
        in an exception releases it at once, so no body stream is left capturing (until the
        garbage collector finds it, a capturing stream blocks device-wide work such as a device
        synchronize in another library)."""
        self._opened.append(weakref.ref(conditional))

    def keep(self, obj):
        """Keep ``obj`` alive as long as the recording (and graphs made of it) live."""
        self._keepalive.append(obj)

    def abandon(self):
        """Stop recording and drop what was recorded: the conditionals opened on this capture's
        streams are released (innermost first, ending their bodies' captures), then the capturer
        itself. Idempotent; what ``end()`` already returned is not touched."""
        opened, self._opened = self._opened, []
        for ref in reversed(opened):
            c = ref()
            if c is not None:
                c.close()
        self._backend._forget_capture(self)
        self.close()

    def close(self):
        """Release the capturer now (a recording still open is dropped, and its stream no longer
        counts as capturing). Idempotent."""
        super().close()  # from its first step that counts (the handle gone) the record skips it
        self._backend._forget_capture(self)

    def __enter__(self):
        self.begin()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abandon()
            return False
        try:
            self.end()
        except BaseException:
            self.abandon()  # e.g. a body left open: nothing stays capturing
            raise
        self._opened = []
        self.close()
        return False
