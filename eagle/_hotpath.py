"""The hot call path: the seam calls a replay loop makes every step, with the thread check in C.

``Stream.synchronize``, ``Launcher.launch`` and ``Launcher.synchronize`` each make one call of the
shape ``eagle_backend_status fn(handle)``. They go through a *call* function:

    status = call(fn, owner, handle[, times])

which calls ``fn(handle)`` (``times`` times, stopping at the first nonzero status) only when the
calling thread is ``owner`` and returns the status; otherwise it calls nothing and returns
:data:`NOT_CALLED` (nonzero, never a seam status). A caller treats any nonzero result as its slow
path: :meth:`eagle._handle.Owner._failed` re-checks the thread and raises.

There are two call functions with that contract:

- :data:`compiled_call`, the ``eagle._hotcall`` extension (stable ABI), built with the wheel when
  CPython's headers are there. It takes addresses and saves the cost of a cffi ABI-mode call and of
  the thread check in Python.
- :func:`python_call`, which calls through cffi. It serves builds without the extension and
  traced backends (``eagle.backend(..., trace=True)`` counts calls in Python wrappers).

:func:`caller` picks one for a backend; :func:`fn_arg` and :func:`handle_arg` convert a seam
function and a cffi handle into what that call function takes.
"""
from _thread import get_ident

from ._seam_ffi import ffi

try:
    from ._hotcall import NOT_CALLED
    from ._hotcall import call as compiled_call
except ImportError:  # built without CPython's headers: every call goes through cffi
    compiled_call = None
    NOT_CALLED = 1 << 40


def python_call(fn, owner, handle, times=1):
    """The contract of ``eagle._hotcall.call``, through cffi (``fn`` a seam function, ``handle`` cdata)."""
    if owner != get_ident():
        return NOT_CALLED
    if times == 1:
        return fn(handle)
    if times < 1:
        return NOT_CALLED
    status = 0
    for _ in range(times):
        status = fn(handle)
        if status:
            break
    return status


def caller(backend):
    """The call function for ``backend``'s hot calls."""
    if compiled_call is not None and not backend._traced:
        return compiled_call
    return python_call


def fn_arg(call, fn):
    """What ``call`` takes for the seam function ``fn`` (an entry of ``backend._f``)."""
    return int(ffi.cast("uintptr_t", fn)) if call is compiled_call else fn


def handle_arg(call, handle):
    """What ``call`` takes for the cffi handle ``handle``."""
    return int(ffi.cast("uintptr_t", handle)) if call is compiled_call else handle
