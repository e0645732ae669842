"""Interop: ordering between streams of other libraries, by DLPack stream codes."""
from ._seam_ffi import ffi

#: "No stream given" for fence(): INT64_MIN.
STREAM_NONE = -(1 << 63)


def _code(backend, s):
    if s is None:
        return STREAM_NONE
    from .stream import raw_stream  # passes ints through
    return raw_stream(backend, s)


def fence(backend, producer, consumer, device_type=None, device_id=0):
    """Order ``consumer`` after the work enqueued so far on ``producer`` without blocking.

    Streams are DLPack stream codes of ``device_type`` (default: the backend's first), eagle
    streams, or None (no stream given)."""
    dt = backend.device_types[0] if device_type is None else int(device_type)
    backend._check("eagle_backend_fence",
                   backend._f.fence(dt, int(device_id), _code(backend, producer), _code(backend, consumer)))


def event_pool_created(backend):
    out = ffi.new("int64_t*")
    backend._check("eagle_backend_event_pool_created", backend._f.event_pool_created(out))
    return int(out[0])
