"""Knobs for eagle's benchmarks (benchmarks/), not for code built on eagle: the seam binding's raw
cffi objects and the hot path's internals, so a benchmark can time one seam call, compare the
compiled hot path with its cffi fallback, or a blocking wait with the polled one, without
importing eagle's private modules (tests/test_layers.py). Nothing here is a stable API; the
extension API is :mod:`eagle.extend`.

The seam binding
    ``ffi`` (the cffi binding of ``eagle_backend.h``: struct types for raw seam calls through
    ``Backend``'s loaded library) and ``CONSTANTS`` (every macro and enumerator of the header,
    generated from it: eagle/_seam_meta.py); ``own_stream(backend)``, the stream a call given no
    stream runs on.
The compiled hot path
    ``hot_path_compiled(bound_call)``: whether a bound call (``Stream.synchronize``,
    ``Launcher.launch``) runs through the compiled half of eagle._hotcall;
    ``cffi_fallback()``: a context in which new bound calls take the cffi fallback, as a build
    without the compiled half does;
    ``launch_releasing_gil(launcher)``: ``launcher.launch`` bound to release the GIL around every
    call, as ``EAGLE_LAUNCH_RELEASES_GIL=1`` makes every launch do;
    ``blocking_synchronize(owner)``: a wait that blocks in C with no completion query;
    ``python_host_calls_pending()``: Python host functions enqueued and not yet run."""
import contextlib

from . import _hotcall
from ._inflight import attention_list, own_stream
from ._seam_ffi import ffi
from ._seam_meta import CONSTANTS


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


__all__ = ["ffi", "CONSTANTS", "own_stream", "hot_path_compiled", "python_host_calls_pending", "cffi_fallback",
           "launch_releasing_gil", "blocking_synchronize"]
