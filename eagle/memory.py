"""Copies, page-locked host memory and host functions, in stream order (seam minor 6).

Seam objects: every function takes the :class:`eagle.Backend` to work on as its first argument;
``eagle.copy`` and friends (eagle/api.py) decide it from the arrays."""
import weakref

import atexit
import os
import sys
import threading
import time
from _thread import get_ident

from . import _handle
from . import _marker
from . import _seam_meta as meta
from . import _validate
from ._arrays import address_of
from ._device_kind import HOST_DEVICE_TYPES
from ._handle import abandon_releases, raw_int
from ._hotcall import host_calls_add
from ._marker import Marker, python_markers_pending
from ._seam_ffi import ffi
from ._status import remember_callback_exception
from ._stream_arg import raw_stream
from .errors import EagleTypeError, EagleValueError

_C = meta.CONSTANTS
H2D, D2H, D2D, H2H = (_C[f"EAGLE_BACKEND_MEMCPY_{d}"] for d in ("H2D", "D2H", "D2D", "H2H"))
_BY_NAME = {"h2d": H2D, "d2h": D2H, "d2d": D2D, "h2h": H2H}
_BY_PLACE = {(True, True): H2H, (False, True): H2D, (True, False): D2H, (False, False): D2D}  # (dst, src) on host


def enqueue_copy(backend, dst, src, nbytes=None, *, stream=None, direction=None):
    """Enqueue a copy of ``nbytes`` (default: the whole of ``src``) from ``src`` to ``dst`` on
    ``stream``: ``(None, raw stream, refs)``, where ``refs`` must stay alive until the stream has
    run the copy (eagle._inflight.submit decides who keeps them).

    ``dst``/``src`` are arrays (their DLPack device gives the direction) or int addresses (then
    pass ``direction``: ``'h2d'``, ``'d2h'``, ``'d2d'``, ``'h2h'``). A size mismatch is refused:
    nothing is ever truncated silently."""
    b = backend
    b.require("eagle_backend_memcpy")
    d, s = address_of(dst), address_of(src)
    nbytes = _validate.size(nbytes, s, "eagle.copy", "nbytes", "src")
    _validate.writable(d, "eagle.copy: dst")
    _validate.holds(d, nbytes, "eagle.copy: dst")
    _validate.holds(s, nbytes, "eagle.copy: src")
    if direction is None:
        if d.device_type is None or s.device_type is None:
            raise EagleValueError("eagle.copy: give direction= when dst or src is a raw address")
        code = _BY_PLACE[d.device_type in HOST_DEVICE_TYPES, s.device_type in HOST_DEVICE_TYPES]
    else:
        code = _BY_NAME.get(str(direction).lower())
        if code is None:
            raise EagleValueError(f"eagle.copy: direction must be h2d, d2h, d2d or h2h, got {direction!r}")
    raw = raw_stream(b, stream)
    b.call.memcpy(d.ptr, s.ptr, nbytes, code, raw)
    return None, raw, (d.keepalive, s.keepalive)


class PinnedMemory:
    """Page-locked host memory from the backend; freed when the last view of it goes away."""

    __slots__ = ("ptr", "nbytes", "_finalizer", "__weakref__")

    def __init__(self, backend, nbytes):
        backend.require("eagle_backend_host_alloc")
        backend.require("eagle_backend_host_free")
        out = ffi.new("void**")
        backend.call.host_alloc(int(nbytes), 0, out)
        self.ptr = out[0]
        self.nbytes = int(nbytes)
        self._finalizer = weakref.finalize(self, _host_free, backend._f.host_free, out[0], backend)

    @property
    def __array_interface__(self):
        return {"shape": (self.nbytes,), "typestr": "|u1", "version": 3,
                "data": (raw_int(self.ptr), False)}


def _host_free(free_fn, ptr, backend):
    free_fn(ptr)


def pinned(backend, shape, dtype="float64"):
    """A numpy array over page-locked host memory that frees itself with its last view."""
    import numpy as np
    b = backend
    try:
        dtype = np.dtype(dtype)
    except TypeError as e:
        raise EagleTypeError(f"eagle.pinned: {dtype!r} is no dtype ({e})") from None
    shape = _validate.shape(shape, "eagle.pinned")
    count = 1
    for s in shape:
        count *= s
    nbytes = _validate.integer(count * dtype.itemsize, f"eagle.pinned: the size of {shape} x {dtype}",
                               maximum=(1 << 62))
    mem = PinnedMemory(b, max(nbytes, 1))
    raw = np.asarray(mem)  # holds `mem` as its base
    return raw[:nbytes].view(dtype).reshape(shape)


class _HostCall:
    """One Python callable enqueued as a host function. ``errors`` is the enqueuing thread's list
    (its next synchronize raises what ``fn`` raised); ``once`` for eager enqueues, which stay in
    :data:`_PENDING` (and so alive, with their backend) until they have run."""

    __slots__ = ("fn", "backend", "once", "cdata", "errors")
    #: read by eagle.launcher.holds_python_host_calls: a graph holding one runs Python on replay
    runs_python_on_host = True

    def __init__(self, fn, backend, once):
        self.fn, self.backend, self.once = fn, backend, once
        self.errors = backend.host_errors_of(get_ident())
        self.cdata = ffi.new_handle(self)


#: Eager host functions not yet run. Module-level, so a queued call keeps its backend (and the
#: cffi handle the backend will pass back) alive whatever happens to the Backend object.
_PENDING = set()
_PENDING_LOCK = threading.Lock()
#: Backends that have held arrays for a stream's work (their ``_holds``): the exit drain's list.
_HOLDING = weakref.WeakSet()
#: How long the exit drain waits for work still running ($EAGLE_EXIT_WAIT_S, seconds).
_DRAIN_AT_EXIT_S = 30.0
#: After this long the exit drain says what it is waiting for.
_DRAIN_TELL_AFTER_S = 2.0


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
            with _PENDING_LOCK:
                _PENDING.discard(call)
            call.errors.append(Finished(call))
            host_calls_add(-1)


def _exit_wait_s():
    try:
        value = float(os.environ.get("EAGLE_EXIT_WAIT_S", _DRAIN_AT_EXIT_S))
    except ValueError:
        return _DRAIN_AT_EXIT_S
    return value if value >= 0 else _DRAIN_AT_EXIT_S


def _exit_markers():
    """Release markers to wait for at exit, as (backend, raw stream, marker): each stream's marker
    in flight, and a new one behind the work of every stream holding arrays that has none
    (enqueued on the streams eagle knows are alive: the kind's default stream and eagle's own
    live streams)."""
    markers = []
    for lib in list(_HOLDING):
        if not lib._holds or not lib.provides("eagle_backend_host_func"):
            continue
        live = {getattr(k.owner(), "_raw", None) for k in list(_handle.waiters) if k.backend is lib}
        for raw, holds in list(lib._holds.items()):
            flying = holds.in_flight
            if flying is not None and not flying.ran():
                markers.append((lib, raw, flying))
            if holds.waiting and (raw == 0 or raw in live):
                m = Marker(None)
                try:
                    status = m.enqueue(lib, raw)
                except Exception:  # noqa: BLE001 - at exit: that stream's arrays are kept instead
                    continue
                if status:
                    m.abandon()
                else:
                    markers.append((lib, raw, m))
    return markers


def _running_at_exit(markers):
    """What eagle's work still running at exit amounts to, in words ('' when nothing runs)."""
    left = []
    if _PENDING or python_markers_pending():
        left.append(f"{len(_PENDING) + python_markers_pending()} Python host function(s)")
    busy = {(id(lib), raw) for lib, raw, m in markers if not m.ran()}
    for k in list(_handle.waiters):
        if not k.done():
            raw = getattr(k.owner(), "_raw", None)
            busy.add((id(k.backend), raw) if raw is not None else id(k))
    if busy:
        left.append(f"work on {len(busy)} stream(s) or launcher(s)")
    if _handle.release_parked():
        left.append(f"{len(_handle._parked)} dropped stream(s) or launcher(s) still running")
    return " and ".join(left)


def _keep_forever():
    """The exit drain gave up: what the unfinished work may still read or write (the arrays of
    every stream's enqueued work, queued host functions, parked handles) is never freed, so that
    finalizing the interpreter frees nothing under it; the process ends with it running."""
    import ctypes
    kept = [_PENDING, _handle._parked] + [lib._holds for lib in list(_HOLDING)]
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(kept))


def _drain_at_exit():
    """At interpreter exit, before anything is finalized: wait until eagle's work has finished --
    queued Python host functions (one running after finalization would call into a dead
    interpreter), the work of every stream holding arrays (finalization would free them under
    it), every live eagle stream and launcher, and dropped ones whose work still runs. The wait
    is bounded ($EAGLE_EXIT_WAIT_S, default 30 s) and Ctrl-C ends it; when it gives up, no handle
    is released (a release would wait for the work) and what the work uses is kept (_keep_forever)."""
    start = time.monotonic()
    deadline = start + _exit_wait_s()
    told, left = False, ""
    try:
        markers = _exit_markers()
        while True:
            left = _running_at_exit(markers)
            now = time.monotonic()
            if not left or now >= deadline:
                break
            if not told and now - start >= _DRAIN_TELL_AFTER_S:
                told = True
                print(f"eagle: at exit, waiting for {left} (at most {deadline - start:g} s, "
                      "$EAGLE_EXIT_WAIT_S; Ctrl-C leaves it)", file=sys.stderr)
            time.sleep(0.001)
    except KeyboardInterrupt:
        left = left or "work interrupted at exit"
    if left:
        # releasing a busy stream would wait for it for ever; finalization would free its arrays
        abandon_releases()
        _keep_forever()
        print(f"eagle: at exit, {left} had not finished; the process ends without waiting for it "
              "(its arrays are kept until then)", file=sys.stderr)


def _forget_the_parents_work():
    """In a child made by fork(): the work the parent had enqueued never runs here (no backend
    thread of the parent is in this process, and eagle's objects refuse there), so nothing waits
    for it: its arrays, queued host functions and parked handles are let go (no work of this
    process uses them) and the exit drain does not wait for markers that will never run."""
    global _HOLDING, _PENDING_LOCK
    _PENDING_LOCK = threading.Lock()  # another thread may have held it at the fork
    for lib in list(_HOLDING):
        lib._holds.clear()
    _HOLDING = weakref.WeakSet()
    if _PENDING:
        host_calls_add(-len(_PENDING))
        _PENDING.clear()
    _handle._parked.clear()
    _handle.waiters.clear()
    _marker._python_lent.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_the_parents_work)


# The drain must run before weakref.finalize's own exit hook, which calls the finalizers still
# alive (stream releases among them, which wait for their streams' work). atexit runs hooks last
# in, first out, and finalize registers its hook when the first finalizer is made: make one (a
# no-op on a function that lives as long as the process) before registering the drain.
weakref.finalize(_drain_at_exit, int)
atexit.register(_drain_at_exit)


def _enqueue(b, raw, fn):
    cap = b._capturing.get(raw)
    call = _HostCall(fn, b, once=cap is None)
    if cap is None:
        with _PENDING_LOCK:
            _PENDING.add(call)
        host_calls_add(1)  # pending until it has run: launches release the GIL meanwhile (eagle._hotcall)
    else:
        cap.keep(call)
    status = b._f.host_func(raw, _trampoline, call.cdata)
    if status:
        if cap is None:
            with _PENDING_LOCK:
                _PENDING.discard(call)
            host_calls_add(-1)
        b._check("eagle_backend_host_func", status)



class _StreamHolds:
    """The arrays of one stream's enqueued work: ``waiting`` (enqueued since the last release
    marker) and the marker in flight, if any (eagle._marker.Marker). At most one marker is in
    flight per stream, so a tight loop of eager calls costs one host function per round trip of
    the stream, not one per call."""

    __slots__ = ("waiting", "in_flight")

    def __init__(self):
        self.waiting, self.in_flight = [], None


class Finished:
    """References of work that has run, put in the enqueuing thread's attention list by the
    backend's host-function thread: they are dropped by that thread's next synchronize (or eagle
    call), never in the host-function thread, where the last reference to a framework's array
    would free device memory inside a stream callback (CUDA forbids API calls there)."""

    __slots__ = ("refs",)

    def __init__(self, refs):
        self.refs = refs

    def settle(self):
        """The attention list's question (see eagle._marker.Marker.settle): it can go now."""
        return True


def hold_until_done(backend, raw, refs):
    """Keep ``refs`` (the arrays enqueued work reads and writes) alive until the stream ``raw``
    has run that work: in the recording while the stream is captured; else until a release
    marker (eagle._marker) enqueued behind the work has run and this thread has seen it (its
    next eagle call or synchronize). While a marker is in flight, later refs wait for the next
    call on the stream to enqueue theirs (or for :func:`released_by_sync`). A backend without
    host functions keeps them until :func:`released_by_sync` or until it goes."""
    thread = get_ident()
    backend.drop_finished(thread)
    cap = backend._capturing.get(raw)
    if cap is not None:
        cap.keep(refs)
        return
    holds = backend._holds.get(raw)
    if holds is None:
        holds = backend._holds[raw] = _StreamHolds()
        _HOLDING.add(backend)
    holds.waiting.append(refs)
    if not backend.provides("eagle_backend_host_func"):
        return
    flying = holds.in_flight
    if flying is not None and not flying.ran():
        return
    batch, holds.waiting = holds.waiting, []
    marker = Marker(batch)
    try:
        status = marker.enqueue(backend, raw)
    except BaseException:  # the host function may be enqueued: its word stays lent for good
        holds.waiting[:0] = batch
        raise
    if status:
        marker.abandon()
        holds.waiting[:0] = batch
        backend._check("eagle_backend_host_func", status)
    holds.in_flight = marker
    backend.host_errors_of(thread).append(marker)  # its batch goes when this thread sees it ran


def keep_until_sync(backend, raw, refs):
    """Keep ``refs`` with the stream ``raw`` until :func:`released_by_sync`, with no marker: for
    work whose stream eagle itself waits for."""
    holds = backend._holds.get(raw)
    if holds is None:
        holds = backend._holds[raw] = _StreamHolds()
        _HOLDING.add(backend)
    holds.waiting.append(refs)


def stream_released(backend, raw):
    """The stream ``raw`` was released, which waits for its work: every ref it was holding goes
    (a stream dropped after eager calls used to keep their arrays for good)."""
    backend._holds.pop(raw, None)


def released_by_sync(backend, raw):
    """The stream ``raw`` has been synchronized: its work so far is done, so the refs it was
    holding (not those a marker in flight carries, which goes by itself) can go."""
    holds = backend._holds.get(raw)
    if holds is not None:
        holds.waiting = []
    backend.drop_finished(get_ident())


def host_func(backend, fn, *, stream=None):
    """Run the Python callable ``fn()`` in stream order (a host node when the stream is captured).

    An exception ``fn`` raises is re-raised by the next ``synchronize()`` of a stream or launcher
    of the thread that enqueued it."""
    b = backend
    b.require("eagle_backend_host_func")
    if not callable(fn):
        raise EagleTypeError(f"eagle.host_func: {fn!r} is not callable")
    _enqueue(b, raw_stream(b, stream), fn)
