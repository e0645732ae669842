"""Status -> exception, in exactly one place.

A failed seam call is turned into an exception here, with the backend's
``last_error`` copied at once (it is only valid until the next seam call on this thread)."""
import threading

from . import errors
from ._seam_meta import CONSTANTS as _C
from ._seam_meta import STATUS_NAMES as _NAMES

_UNAVAILABLE = _C["EAGLE_BACKEND_UNAVAILABLE"]
_CALLBACK_FAILED = _C["EAGLE_BACKEND_CALLBACK_FAILED"]
_EXCEPTION_OF_STATUS = {
    _C["EAGLE_BACKEND_INVALID_ARGUMENT"]: errors.EagleValueError,
    _C["EAGLE_BACKEND_INDEX"]: errors.EagleIndexError,
    _C["EAGLE_BACKEND_INTEROP"]: errors.InteropError,
    _UNAVAILABLE: errors.BackendUnavailable,
    _C["EAGLE_BACKEND_UNSUPPORTED"]: errors.Unsupported,
    _C["EAGLE_BACKEND_COMPILE_FAILED"]: errors.CompileError,
}

# Where one call's status means something narrower than the status does in general: the
# allocators answer UNAVAILABLE when the memory cannot be had (eagle_backend.h), which is an
# out-of-memory error, not a missing backend.
_EXCEPTION_OF_CALL_STATUS = {
    ("eagle_backend_mem_alloc", _UNAVAILABLE): errors.EagleMemoryError,
    ("eagle_backend_host_alloc", _UNAVAILABLE): errors.EagleMemoryError,
}

_pending = threading.local()


def remember_callback_exception(exc: BaseException) -> None:
    """Called by a callback trampoline: keep the exception for the CALLBACK_FAILED that follows."""
    _pending.exc = exc


def status_name(status: int) -> str:
    return _NAMES.get(status, "undefined")


def exception_for(symbol: str, status: int, message: str) -> BaseException:
    """The exception a failed call of ``symbol`` raises; ``message`` is the copied last error."""
    if status == _CALLBACK_FAILED:
        exc = getattr(_pending, "exc", None)
        _pending.exc = None
        if exc is not None:
            return exc
    cls = _EXCEPTION_OF_CALL_STATUS.get((symbol, status)) or _EXCEPTION_OF_STATUS.get(status)
    text = message or "(the backend left no message)"
    if text.startswith(symbol + ": "):  # backends name the failing seam function themselves
        text = text[len(symbol) + 2:]
    if cls is not None:
        return cls(f"{symbol}: {text}")
    return errors.EagleError(f"{symbol} failed with status {status} ({status_name(status)}): {text}")
