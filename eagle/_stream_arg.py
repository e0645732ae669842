"""What a ``stream=`` argument may be, turned into the raw ``uint64`` value the seam takes.

Accepted, everywhere eagle takes ``stream=``:

- ``None``: the kind's default stream (raw value 0), for the calls that only order work
  (``host_func``, ``fence``) and for queries; a call that does work on arrays never gets here with
  None: eagle/_inflight.py runs it on eagle's own stream;
- an eagle stream (:class:`eagle.Stream`, :class:`eagle.StreamRef`) of the same backend;
- a raw stream value as an int (a ``cudaStream_t`` as an integer, say);
- any object that speaks the CUDA stream protocol, ``__cuda_stream__() -> (version, handle)``
  (cuda.core, recent CuPy and torch streams);
- a foreign stream object that exposes its raw value as an int attribute ``ptr`` (CuPy) or
  ``cuda_stream`` (torch).

Work enqueued on a foreign stream runs in that stream's order: eagle's work follows what its
owner enqueued before. This module is on the ground floor: it imports no seam object."""
from .errors import EagleTypeError, EagleValueError

_RAW_ATTRIBUTES = ("ptr", "cuda_stream")
_UINT64_MAX = (1 << 64) - 1


def _as_raw(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        raise EagleTypeError(f"eagle: {what} gave a {type(value).__name__}, not an int stream value")
    if not 0 <= value <= _UINT64_MAX:
        raise EagleValueError(f"eagle: {what} gave {value}, which is no raw stream value (0 .. 2**64-1)")
    return value


def raw_stream(backend, stream):
    """The raw value of ``stream`` for ``backend`` (see the module docstring).

    An eagle stream of another backend is refused, naming both backends."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return _as_raw(stream, "the stream")
    raw_for = getattr(stream, "_raw_for", None)  # eagle's own streams
    if raw_for is not None:
        return raw_for(backend)
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        try:
            version, handle = protocol()
        except (TypeError, ValueError):
            raise EagleTypeError(f"eagle: {type(stream).__name__}.__cuda_stream__() must return "
                                 "(version, handle)") from None
        return _as_raw(handle, f"{type(stream).__name__}.__cuda_stream__()")
    for attr in _RAW_ATTRIBUTES:
        value = getattr(stream, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return _as_raw(value, f"{type(stream).__name__}.{attr}")
    raise EagleTypeError(f"eagle: cannot use a {type(stream).__name__} as a stream; pass an eagle stream, "
                         "a raw stream int, or an object with __cuda_stream__")


def backend_of_stream(stream):
    """The eagle backend an eagle stream belongs to; None for anything else."""
    if getattr(stream, "_raw_for", None) is None:
        return None
    return stream._backend
