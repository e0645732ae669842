"""Conditional nodes decided on the device: IF, WHILE and SWITCH.

A conditional is recorded on a stream being captured. Its guard is a pair of device
``uint32`` words: the region runs iff ``*count != *baseline`` (baseline 0 when absent). A
WHILE also takes a ``uint32[2]`` cell ``[remaining, ran]`` and ``loop_cap``; a SWITCH runs the
case ``*count`` selects."""
from ._arrays import address_of
from ._handle import Owner
from ._seam_ffi import ffi
from ._stream_arg import raw_stream
from .stream import StreamRef
from .errors import EagleTypeError, EagleValueError


def _addr(x, what):
    if x is None:
        return 0
    dtype = getattr(x, "dtype", None)
    if dtype is not None and getattr(dtype, "kind", "u") not in "iu":
        raise EagleTypeError(f"eagle: the conditional's {what} word(s) must be uint32, got an array of {dtype}")
    info = address_of(x)
    need = 8 if what == "counter" else 4
    if info.nbytes is not None and info.nbytes < need:
        raise EagleValueError(f"eagle: the conditional's {what} word(s) need {need} bytes, "
                              f"the array has {info.nbytes}")
    return info.ptr


class Conditional(Owner):
    """One conditional node being recorded. ``begin()`` opens the body and returns its stream;
    ``end()`` closes it. For a SWITCH use ``begin_case(i)`` for each case."""

    __slots__ = ("_origin_raw",)
    _what = "conditional"

    def __init__(self, backend, origin, count, baseline=None, counter=None, loop_cap=0,
                 case_count=0, device=-1):
        b = backend
        if case_count:
            b.require("eagle_backend_conditional_begin_case")
        else:
            b.require("conditional")
        if counter is not None and int(loop_cap) < 1:
            raise EagleValueError(f"eagle: a WHILE needs loop_cap >= 1, got {loop_cap}")
        self._origin_raw = raw_stream(b, origin)
        desc = ffi.new("struct eagle_backend_conditional_desc*")
        desc.struct_size = ffi.sizeof(desc[0])
        desc.device = device
        desc.loop_cap = int(loop_cap)
        desc.origin = self._origin_raw
        desc.count_ptr = _addr(count, "count")
        desc.baseline_ptr = _addr(baseline, "baseline")
        desc.counter_ptr = _addr(counter, "counter")
        desc.case_count = int(case_count)
        out = ffi.new("eagle_backend_conditional*")
        b.call.conditional_create(desc, out)
        self._own(b, out[0], "conditional_release", ends_capture=True)  # an open body's capture
        cap = b._capturing.get(self._origin_raw)
        if cap is not None:
            cap.adopt_conditional(self)  # released with the capture if it ends in an exception

    def _adopt(self, raw):
        cap = self._backend._capturing.get(self._origin_raw)
        if cap is not None:
            cap.adopt_stream(raw)
        return StreamRef(self._backend, raw)

    def begin(self):
        """Open the body (case 0 of a SWITCH); returns the body's :class:`StreamRef`."""
        b = self._backend
        out = ffi.new("uint64_t*")
        b.call.conditional_begin(self._live(), out)
        return self._adopt(out[0])

    def begin_case(self, index):
        """SWITCH: close the open case body and open case ``index``; returns its stream."""
        b = self._backend
        out = ffi.new("uint64_t*")
        b.call.conditional_begin_case(self._live(), int(index), out)
        return self._adopt(out[0])

    @property
    def body_stream(self):
        b = self._backend
        out = ffi.new("uint64_t*")
        b.call.conditional_body_stream(self._live(), out)
        return StreamRef(b, out[0])

    @property
    def is_loop(self):
        b = self._backend
        out = ffi.new("int32_t*")
        b.call.conditional_is_loop(self._live(), out)
        return bool(out[0])

    def end(self):
        """Close the body and the node; the origin's later work follows the node."""
        b = self._backend
        b.call.conditional_end(self._live())

    def __enter__(self):
        return self.begin()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.end()
        self.close()
        return False
