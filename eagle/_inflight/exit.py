"""The ends of a process's work in flight: the exit drain (at interpreter exit, wait with a bound
for what eagle enqueued) and the fork handler (a child made by fork() forgets its parent's work).
Both are registered when eagle._inflight is imported."""
import atexit
import os
import sys
import time
import weakref

from .._hotcall import host_calls_add
from . import host_calls as _host_calls
from . import markers as _markers
from . import releases as _releases
from .markers import Marker
from .per_backend import by_id, flights

#: How long the exit drain waits for work still running ($EAGLE_EXIT_WAIT_S, seconds).
_DRAIN_AT_EXIT_S = 30.0
#: After this long the exit drain says what it is waiting for.
_DRAIN_TELL_AFTER_S = 2.0


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
    for lib, f in flights():
        streams = f.streams
        if not streams or not lib.provides("eagle_backend_host_func"):
            continue
        live = {getattr(k.owner(), "_raw", None) for k in list(_releases.waiters) if k.backend is lib}
        for raw, holds in list(streams.items()):
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
    pending = _host_calls.PENDING
    if pending or _markers.python_markers_pending():
        left.append(f"{len(pending) + _markers.python_markers_pending()} Python host function(s)")
    busy = {(id(lib), raw) for lib, raw, m in markers if not m.ran()}
    for k in list(_releases.waiters):
        if not k.done():
            raw = getattr(k.owner(), "_raw", None)
            busy.add((id(k.backend), raw) if raw is not None else id(k))
    if busy:
        left.append(f"work on {len(busy)} stream(s) or launcher(s)")
    if _releases.release_parked():
        left.append(f"{len(_releases.parked)} dropped stream(s) or launcher(s) still running")
    return " and ".join(left)


def _keep_forever():
    """The exit drain gave up: what the unfinished work may still read or write (the arrays of
    every stream's enqueued work, queued host functions, parked handles) is never freed, so that
    finalizing the interpreter frees nothing under it; the process ends with it running."""
    import ctypes
    kept = [_host_calls.PENDING, _releases.parked, [f.streams for f in list(by_id.values())]]
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(kept))


def drain_at_exit():
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
        _releases.abandon_releases()
        _keep_forever()
        print(f"eagle: at exit, {left} had not finished; the process ends without waiting for it "
              "(its arrays are kept until then)", file=sys.stderr)


def forget_the_parents_work():
    """In a child made by fork(): the work the parent had enqueued never runs here (no backend
    thread of the parent is in this process, and eagle's objects refuse there), so nothing waits
    for it: its arrays, queued host functions and parked handles are let go (no work of this
    process uses them) and the exit drain does not wait for markers that will never run."""
    _host_calls.reset_lock()
    for f in list(by_id.values()):
        f.streams.clear()
    pending = _host_calls.PENDING
    if pending:
        host_calls_add(-len(pending))
        pending.clear()
    _releases.parked.clear()
    _releases.due.clear()  # releases the parent had yet to make: its to make (they may wait for its threads)
    _releases.waiters.clear()
    _markers.python_lent.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=forget_the_parents_work)


# The drain must run before weakref.finalize's own exit hook, which calls the finalizers still
# alive (stream releases among them, which wait for their streams' work). atexit runs hooks last
# in, first out, and finalize registers its hook when the first finalizer is made: make one (a
# no-op on a function that lives as long as the process) before registering the drain.
weakref.finalize(drain_at_exit, int)
atexit.register(drain_at_exit)
