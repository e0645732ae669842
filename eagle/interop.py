"""Interop: ordering between streams of other libraries, by DLPack stream codes."""
from . import _seam_meta as meta
from . import _validate
from ._seam_ffi import ffi
from ._stream_arg import raw_stream

#: "No stream given" for fence(): INT64_MIN.
STREAM_NONE = meta.CONSTANTS["EAGLE_BACKEND_STREAM_NONE"]


def _code(backend, s):
    if s is None:
        return STREAM_NONE
    if isinstance(s, int) and not isinstance(s, bool):
        # a DLPack stream code (negative codes are the protocol's own), as the seam's int64 takes it
        return _validate.integer(s, "eagle.fence: a stream code", minimum=_validate.INT64_MIN)
    # a raw stream value (0 .. 2**64-1) as the same int64 takes it: one past INT64_MAX is refused, not wrapped
    return _validate.integer(raw_stream(backend, s), f"eagle.fence: the raw value of a {type(s).__name__}",
                             minimum=0)


def fence(backend, producer, consumer, device_type=None, device_id=0):
    """Order ``consumer`` after the work enqueued so far on ``producer`` without blocking.

    Streams are DLPack stream codes of ``device_type`` (default: the backend's first), eagle
    streams, or None (no stream given)."""
    dt = backend.device_types[0] if device_type is None else int(device_type)
    backend.call.fence(dt, int(device_id), _code(backend, producer), _code(backend, consumer))


def event_pool_created(backend):
    out = ffi.new("int64_t*")
    backend.call.event_pool_created(out)
    return int(out[0])
