"""The public names that code built on eagle's core uses: ``eagle.distributed``, the benchmarks,
a layer of your own. Everything here is also what eagle itself uses, re-exported from the module
that owns it, so an extension reads the same arrays, refuses the same arguments and speaks the
same seam as eagle does, without importing eagle's private modules (tests/test_layers.py).

The seam binding
    ``ffi`` (the cffi binding of ``eagle_backend.h``: struct types for raw seam calls through
    ``Backend``'s loaded library) and ``CONSTANTS`` (every macro and enumerator of the header,
    generated from it: eagle/_seam_meta.py).
Arrays
    ``address_of(obj) -> ArrayInfo`` (pointer, size, device, read-only flag and the object to keep
    alive, of any array eagle accepts) and ``is_host(obj)`` (the host can read it directly);
    ``order_before(obj, stream)`` orders ``stream`` after the array library's pending work on it.
Backends
    ``resolve(arrays, backend=, streams=, what=)`` -> ``(Backend, device)``, the one resolver
    eagle's calls use; ``own_stream(backend)``, the stream a call given no stream runs on.
Kinds
    ``HOST_DEVICE_TYPES`` (DLPack device types the host can read), ``VISIBILITY_ENV`` (kind -> the
    environment variable that limits the devices a process sees).
Argument checks
    ``integer(value, what, minimum=, maximum=)`` and ``real(value, what)``, which raise eagle's
    own errors naming ``what``; ``INT32_MAX``, ``INT64_MIN``, ``UINT32_MAX``.
The compiled hot path
    ``hot_path_compiled(bound_call)``: whether a bound call (``Stream.synchronize``,
    ``Launcher.launch``) runs through the compiled half of eagle._hotcall;
    ``cffi_fallback()``: a context in which new bound calls take the cffi fallback, as a build
    without the compiled half does (for benchmarks that compare the two);
    ``launch_releasing_gil(launcher)``: ``launcher.launch`` bound to release the GIL around every
    call, as ``EAGLE_LAUNCH_RELEASES_GIL=1`` makes every launch do;
    ``python_host_calls_pending()``: Python host functions enqueued and not yet run."""
import contextlib

from . import _hotcall
from ._alloc import is_host, order_before
from ._arrays import ArrayInfo, address_of
from ._device_kind import HOST_DEVICE_TYPES, VISIBILITY_ENV
from ._inflight import attention_list, own_stream
from ._resolve import resolve
from ._seam_ffi import ffi
from ._seam_meta import CONSTANTS
from ._validate import INT32_MAX, INT64_MIN, UINT32_MAX, integer, real


def hot_path_compiled(bound_call):
    """True when ``bound_call`` (a bound seam call such as ``Stream.synchronize``) runs through
    the compiled half of eagle._hotcall, False on its cffi fallback."""
    return _hotcall.is_compiled(bound_call)


def python_host_calls_pending():
    """Python host functions enqueued (not in a recording) that have not run yet."""
    return _hotcall.host_calls_pending()


def launch_releasing_gil(launcher):
    """A callable that launches ``launcher`` (an :class:`eagle.Launcher`) once, releasing the GIL
    around the seam call whatever eagle's launch policy (eagle/_hotcall/__init__.py)."""
    return _hotcall.hot(_hotcall.bind(launcher, "launcher_launch", None, True, _hotcall.GIL_RELEASE))


def blocking_synchronize(owner):
    """``owner``'s (a Stream's or Launcher's) synchronize as a bound call with no completion query:
    the wait blocks in C, as before waits were interruptible (benchmarks/bench_wait_poll.py
    compares the two)."""
    name = "launcher_synchronize" if hasattr(owner, "launch") else "stream_synchronize"
    return _hotcall.hot(_hotcall.bind(owner, name, watch=attention_list(owner._backend, owner._thread)))


@contextlib.contextmanager
def cffi_fallback():
    """Bound calls made inside take eagle's cffi fallback (eagle._hotcall.py_bound_call), as a
    build without the compiled half does; the compiled hot path is restored on leaving."""
    compiled_type = _hotcall.CompiledBoundCall
    _hotcall.CompiledBoundCall = None
    try:
        yield
    finally:
        _hotcall.CompiledBoundCall = compiled_type


__all__ = ["blocking_synchronize", "ffi", "CONSTANTS", "ArrayInfo", "address_of", "is_host", "order_before", "resolve", "own_stream",
           "HOST_DEVICE_TYPES", "VISIBILITY_ENV", "integer", "real", "INT32_MAX", "INT64_MIN", "UINT32_MAX",
           "hot_path_compiled", "python_host_calls_pending", "cffi_fallback", "launch_releasing_gil"]
