"""Python host calls in flight: a Python callable enqueued as a host function, kept alive (with
its backend and the cffi handle the backend passes back) until it has run, its exception put in
the enqueuing thread's attention list (re-raised by that thread's next synchronize).

The count of those that may still run is kept in eagle._hotcall (``host_calls_add``): a launch
keeps the GIL only while none can be pending."""
import threading
from _thread import get_ident

from .._hotcall import host_calls_add
from .._seam_ffi import ffi
from .._status import remember_callback_exception
from .attention import Finished, attention_list


class HostCall:
    """One Python callable enqueued as a host function. ``errors`` is the enqueuing thread's
    attention list; ``once`` for eager enqueues, which stay in :data:`PENDING` (and so alive, with
    their backend) until they have run."""

    __slots__ = ("fn", "backend", "once", "cdata", "errors")
    #: read by eagle.launcher.holds_python_host_calls: a graph holding one runs Python on replay
    runs_python_on_host = True

    def __init__(self, fn, backend, once):
        self.fn, self.backend, self.once = fn, backend, once
        self.errors = attention_list(backend, get_ident())
        self.cdata = ffi.new_handle(self)


#: Eager host calls not yet run. Module-level, so a queued call keeps its backend (and the cffi
#: handle the backend will pass back) alive whatever happens to the Backend object.
PENDING = set()
_lock = threading.Lock()


def reset_lock():
    """A new lock (in a child made by fork(): another thread may have held this one at the fork)."""
    global _lock
    _lock = threading.Lock()


@ffi.callback("void(void*)")
def _trampoline(user_data):
    call = ffi.from_handle(user_data)
    try:
        call.fn()
    except BaseException as e:  # noqa: BLE001 - kept and re-raised at the next synchronize
        remember_callback_exception(e)
        call.errors.append(e)
    finally:
        if call.once:  # dropped later on the enqueuing thread (see Finished): it may hold arrays
            with _lock:
                PENDING.discard(call)
            call.errors.append(Finished(call))
            host_calls_add(-1)


def enqueue_host_call(backend, raw, fn):
    """Enqueue the Python callable ``fn()`` on the stream ``raw`` of ``backend``: a host node of
    the recording when the stream is captured (the recording keeps the call), else pending until
    it has run."""
    b = backend
    cap = b._capturing.get(raw)
    call = HostCall(fn, b, once=cap is None)
    if cap is None:
        with _lock:
            PENDING.add(call)
        host_calls_add(1)  # pending until it has run: launches release the GIL meanwhile (eagle._hotcall)
    else:
        cap.keep(call)
    status = b._f.host_func(raw, _trampoline, call.cdata)
    if status:
        if cap is None:
            with _lock:
                PENDING.discard(call)
            host_calls_add(-1)
        b._check("eagle_backend_host_func", status)
