"""The hot call path: the seam calls a replay loop makes every step, with no Python frame.

``Stream.synchronize``, ``Launcher.launch`` and ``Launcher.synchronize`` each make one call of the
shape ``eagle_backend_status fn(handle)``. Each of them is a *bound call* stored on the object
(the compiled one as its vectorcall method ``call``, see :func:`hot`):
calling it checks that the calling thread owns the handle, makes the call (``launch(n)``: n calls,
stopping at the first failure) and returns ``None``. Whenever it cannot succeed quietly -- the
wrong thread, a closed or consumed handle, a nonzero status, a pending host-function error -- it
calls ``owner._hot_failed(symbol, status)`` (status :data:`NOT_CALLED` when nothing was called),
which raises the right eagle error (:meth:`eagle._handle.Owner._hot_failed`); arguments it does not
take go to ``owner._hot_bad_args(symbol, args)``. ``disarm()`` makes
every later call go there; the owner calls it when its handle is closed or consumed.

Two implementations keep that contract:

- ``eagle._hotcall._compiled.BoundCall`` (C, stable ABI; backends/python/hotcall.c), built with
  the wheel (a build without CPython's headers fails unless ``-DEAGLE_HOTCALL=OFF`` is set). It
  saves the Python frame, the thread check in Python and cffi's own call cost.
- :func:`py_bound_call`, which calls through cffi: for builds without the extension and for traced
  backends (``eagle.backend(..., trace=True)`` counts calls in Python wrappers).

:func:`bind` picks one.

Waits (``query=``, seam minor 8): a synchronize bound with its completion query
(``eagle_backend_stream_query``, ``eagle_backend_launcher_query``) waits interruptibly on the main
thread: it polls the query with the GIL released and runs Python's signal handlers between
polls, so Ctrl-C (KeyboardInterrupt) or an alarm's exception reaches the caller within tens of
milliseconds while the work stays enqueued and the handle usable (wait again, or leave it).
Each interrupted wait is noted in :data:`INTERRUPTED` as (query address, handle) ints, for
eagle/_inflight/releases.py: until that work has finished, releases and frees that could wait
for the device are put off. The first poll is made at once and a found-done query has the synchronize's effects, so a wait
on finished work is still one seam call; short waits spin (yielding) before they sleep
(backends/python/hotcall.c gives the schedule). On other threads (Python handles signals on the
main thread only), for backends without the query and with ``EAGLE_WAIT_BLOCKING=1`` (for programs
that never need Ctrl-C during a wait and want the blocking wait's wake-up), a wait is the blocking
synchronize.

The GIL (``gil=``, see backends/python/hotcall.c): cffi releases it around every call, and so do
the synchronizes here. A launch of work with no Python in it (``GIL_WHEN_QUIET``) keeps it while
no Python host function can be pending, which saves the release and retake (about a tenth of a
replay's enqueue cost): a launch that blocks on a full queue then waits only for the device,
never for a host function that needs the GIL. The count of Python host functions that may
still run is kept here (:func:`host_calls_add`): eagle/_inflight/host_calls.py adds its eager ones, and launches
of graphs with Python host nodes (``GIL_COUNTED``) add theirs until their launcher's
synchronize. Python callbacks other libraries enqueue (CuPy's ``launch_host_func``, say) are not
counted: a program that mixes those with tight replay loops sets ``EAGLE_LAUNCH_RELEASES_GIL=1``
and every launch releases the GIL, as before.
"""
import os
import threading
import time
from _thread import get_ident

from .. import BORROWED_FROM
from .._seam_ffi import ffi
from ..errors import HandleError

if BORROWED_FROM:  # a source checkout: the compiled half lives in the installed copy
    __path__.append(os.path.join(BORROWED_FROM, "_hotcall"))

try:
    from ._compiled import NOT_CALLED, GIL_RELEASE, GIL_WHEN_QUIET, GIL_COUNTED
    from ._compiled import host_calls_add, host_calls_pending
    from ._compiled import BoundCall as CompiledBoundCall
except ImportError:  # built with EAGLE_HOTCALL=OFF: every call goes through cffi, which releases the GIL
    CompiledBoundCall = None
    NOT_CALLED = 1 << 40
    GIL_RELEASE, GIL_WHEN_QUIET, GIL_COUNTED = 0, 1, 2

    def host_calls_add(k):
        """Nothing keeps the GIL without the compiled calls, so nothing needs the count."""

    def host_calls_pending():
        return 0

try:  # the waits a signal interrupted, (query address, handle) ints (hotcall.c's INTERRUPTED)
    from ._compiled import INTERRUPTED
except ImportError:  # the cffi path (or an older compiled half, whose waits are not noted)
    INTERRUPTED = []

try:  # callables called with an interrupted wait's owner once it is noted (hotcall.c's ON_INTERRUPT)
    from ._compiled import ON_INTERRUPT
except ImportError:  # the cffi path calls the same list (py_bound_call)
    ON_INTERRUPT = []


def _call_interrupt_hooks(owner):
    """The cffi path's note of an interrupted wait: each ON_INTERRUPT hook with its owner,
    anything they raise dropped (the handler's exception is what the wait raises)."""
    for hook in list(ON_INTERRUPT):
        try:
            hook(owner)
        except BaseException:  # noqa: BLE001 - a second interrupt landing in the hook, say
            pass

try:  # eagle/_inflight/markers.py's release markers: a C host function and never-freed words (hotcall.c)
    from ._compiled import RELEASE_MARKER, marker_slab
except ImportError:  # without them the markers are Python callbacks (they need the GIL)
    RELEASE_MARKER = marker_slab = None

#: ``EAGLE_WAIT_BLOCKING=1``: waits block in the synchronizes, never poll (see the module docstring).
WAIT_BLOCKING = os.environ.get("EAGLE_WAIT_BLOCKING", "0") not in ("", "0")

#: ``EAGLE_LAUNCH_RELEASES_GIL=1``: every launch releases the GIL (see the module docstring).
LAUNCH_RELEASES_GIL = os.environ.get("EAGLE_LAUNCH_RELEASES_GIL", "0") not in ("", "0")


#: The thread Python runs signal handlers on: only waits there poll (see the module docstring).
MAIN_THREAD = threading.main_thread().ident


def poll_until_done(query, handle, done):
    """The interruptible wait of the cffi path: query ``handle`` (a cffi seam query and its
    handle; ``done`` an ``int32_t*`` for its answer) until done, sleeping between polls in
    time.sleep, which runs Python's signal handlers (their exception propagates, the work stays
    enqueued). Returns the last query's status."""
    status = query(handle, done)
    pause, t0 = 1e-5, None
    while status == 0 and not done[0]:
        if t0 is None:
            t0 = time.monotonic()
        time.sleep(pause)
        pause = min(2e-3, max(1e-5, (time.monotonic() - t0) / 32))
        status = query(handle, done)
    return status


def py_bound_call(fn, handle, owner, failed, symbol, watch, counted=False, gil=GIL_RELEASE, partner=None,
                  query=None):
    """The bound-call contract through cffi (``fn`` a seam function of ``backend._f``, ``handle``
    the cffi handle); see the module docstring. A closure (cheaper to call than an object's
    ``__call__``) with ``disarm`` as an attribute. cffi releases the GIL around every call;
    ``GIL_COUNTED`` and ``partner`` keep the host-call count as the compiled call does (the
    closure's ``outstanding`` is a one-element list)."""
    armed = [True]
    outstanding = [0]
    done = ffi.new("int32_t*") if query is not None else None

    def report_to(method, arg):
        obj = failed()
        if obj is None:
            raise HandleError(f"eagle: the object this call of {symbol} was taken from has been "
                              "garbage-collected and its handle released; keep the object, not only "
                              "its bound method")
        return getattr(obj, method)(symbol, arg)

    def bound(*args):
        times = 1
        if args:
            if len(args) != 1 or not counted or not isinstance(args[0], int) or args[0] < 0:
                return report_to("_hot_bad_args", args)
            times = args[0]
        if not armed[0] or owner != get_ident():
            return report_to("_hot_failed", NOT_CALLED)
        if times == 0:
            return None
        obj = failed()  # held during the call: its finalizer cannot release the handle meanwhile
        if obj is None:
            return report_to("_hot_failed", NOT_CALLED)
        if gil == GIL_COUNTED:  # counted before the launches; those that failed enqueued nothing
            host_calls_add(times)
        if query is not None and not counted and owner == MAIN_THREAD:
            try:
                made, status = 1, poll_until_done(query, handle, done)
            except BaseException:  # a signal handler raised: noted as the compiled call notes it
                try:
                    INTERRUPTED.append((int(ffi.cast("uintptr_t", query)), int(ffi.cast("uintptr_t", handle))))
                except TypeError:  # a traced backend's query is a Python wrapper: not noted
                    pass
                _call_interrupt_hooks(obj)
                raise
        else:
            made, status = 0, fn(handle)
        while status == 0 and made < times:
            made += 1
            if made == times:
                break
            status = fn(handle)
        if gil == GIL_COUNTED:
            host_calls_add(made - times)
            outstanding[0] += made
        if status:
            return report_to("_hot_failed", status)
        if partner is not None and partner.outstanding[0]:
            host_calls_add(-partner.outstanding[0])
            partner.outstanding[0] = 0
        if watch:
            return report_to("_hot_failed", 0)
        return None

    def disarm():
        armed[0] = False
    bound.disarm = disarm
    bound.outstanding = outstanding
    bound.interruptible = query is not None
    bound.__qualname__ = bound.__name__ = symbol
    return bound


def is_compiled(bound):
    """True when ``bound`` is the compiled eagle._hotcall._compiled.BoundCall (or its ``call``)."""
    return CompiledBoundCall is not None and (isinstance(bound, CompiledBoundCall)
                                              or isinstance(getattr(bound, "__self__", None), CompiledBoundCall))


def hot(bound):
    """What an owner stores as its hot attribute for the bound call ``bound``: the compiled
    call's ``call`` method, which CPython invokes by vectorcall (no argument tuple, no ``tp_call``
    dispatch), or the cffi closure itself. ``bound`` keeps ``disarm``."""
    return bound.call if is_compiled(bound) else bound


def bind(owner, name, watch=None, counted=False, gil=GIL_RELEASE, partner=None, query=None):
    """A bound call of the seam function ``eagle_backend_<name>`` on ``owner``'s handle (an
    :class:`eagle._handle.Owner` whose handle is live, called on its thread). ``gil`` and
    ``partner`` (an earlier bound call made with ``GIL_COUNTED``, as :func:`bind` returned it): see
    the module docstring. ``GIL_WHEN_QUIET`` falls back to ``GIL_RELEASE`` when
    ``EAGLE_LAUNCH_RELEASES_GIL`` is set. ``query``: the short name of the wait's completion
    query (``"stream_query"``), used when the backend provides it (see the module docstring)."""
    if gil == GIL_WHEN_QUIET and LAUNCH_RELEASES_GIL:
        gil = GIL_RELEASE
    backend = owner._backend
    fn = getattr(backend._f, name)
    symbol = "eagle_backend_" + name
    query_fn = None
    if query is not None and not WAIT_BLOCKING and backend.provides("eagle_backend_" + query):
        query_fn = getattr(backend._f, query)
    # `failed` is the owner's keeper: it keeps the handle alive as long as the bound call, and
    # passes failures on to the owner while it lives (eagle/_handle.py)
    keeper = owner._keeper
    if CompiledBoundCall is not None and not backend._traced:
        return CompiledBoundCall(int(ffi.cast("uintptr_t", fn)), int(ffi.cast("uintptr_t", owner._h)),
                                 owner._thread, keeper, symbol, watch, counted, gil=gil, partner=partner,
                                 query=None if query_fn is None else int(ffi.cast("uintptr_t", query_fn)))
    return py_bound_call(fn, owner._h, owner._thread, keeper, symbol, watch, counted, gil, partner, query_fn)
