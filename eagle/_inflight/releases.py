"""Releases that wait for work: the handles whose release waits for the work enqueued on them
(streams, launchers), parked when dropped while that work still runs; the frees and releases put
off while work that an interrupted wait left still runs (they may wait for the whole device);
and the switch the exit drain throws when it gives up on work that will never finish.

eagle._handle's owners register here (:data:`waiters`, :func:`release`); the exit drain
(eagle/_inflight/exit.py) waits for what is registered."""
import time
import weakref

from .._hotcall import INTERRUPTED
from .._seam_ffi import ffi

# Set when the process exits with work that will never finish (the exit drain gave up): a release
# may wait for its handle's work (a stream's release does; so does freeing device memory on cuda,
# where cudaFree synchronizes the device, H200: benchmarks/logs/session11/cuda_interrupt_*), and
# freed memory may still be read or written by that work, so from then on no handle is released
# and no memory freed (free_when_safe), and the process ends without them (the backends drop
# unstarted work at exit).
_releases_abandoned = False

#: Handles whose release waits for their work that were dropped while that work still ran:
#: (release_fn, handle, backend, after, query), released once their query says done (retried by
#: every new such owner and by the exit drain), never while it runs (work that never ends would
#: hang the garbage collector, and the process at exit).
parked = []
#: A dropped owner's finalizer waits this long for the work before it parks the handle.
RELEASE_WAIT_S = 1.0

#: Keepers (eagle._handle._Keeper) of live owners whose release waits for work, with a completion
#: query: each has ``backend``, ``owner()`` (the owner, or None), ``done()``.
waiters = weakref.WeakSet()


#: Frees put off while work that an interrupted wait left still runs: (free, args), made in order
#: once it has finished (see :func:`free_when_safe`).
parked_frees = []
_QUERY = "int32_t(*)(void*, int32_t*)"


def interrupted_work_runs():
    """True while work that a wait left when a signal interrupted it (eagle._hotcall.INTERRUPTED:
    a kernel that never ends, say) is still running; entries whose work has finished go."""
    for entry in list(INTERRUPTED):
        query, handle = entry
        if query_done(ffi.cast(_QUERY, query), ffi.cast("void*", handle)):
            try:
                INTERRUPTED.remove(entry)
            except ValueError:  # another thread's finalizer took it off first
                pass
    return bool(INTERRUPTED)


def free_when_safe(free, *args):
    """``free(*args)`` (the free of memory, or a release that has no completion query) now, or,
    while work that an interrupted wait left still runs, once it has finished: on cuda such a
    free or release waits for the whole device (cudaFree synchronizes it), so after Ctrl-C of a
    kernel that never ends it would hang the finalizer that made it. Nothing is freed once the
    exit drain gave up (:data:`_releases_abandoned`)."""
    if _releases_abandoned:
        return
    if INTERRUPTED and interrupted_work_runs():
        parked_frees.append((free, args))
        return
    if parked_frees:
        _free_parked()
    free(*args)


def _free_parked():
    while parked_frees and not _releases_abandoned:
        free, args = parked_frees.pop(0)
        free(*args)


def abandon_releases():
    """From now on the finalizers of handles release nothing (see _releases_abandoned)."""
    global _releases_abandoned
    _releases_abandoned = True


def query_done(query, handle):
    """True when the completion query (seam minor 8) says the handle's work is done, or answers
    anything but OK (a release then does what it always did); False while the work runs."""
    done = ffi.new("int32_t*")
    return query(handle, done) != 0 or bool(done[0])


def wait_done(query, handle, timeout=None):
    """Poll ``query`` until the handle's work is done (True) or ``timeout`` seconds have passed
    (False). Sleeps in time.sleep, so Python's signal handlers run (their exception propagates,
    the work stays enqueued)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = 1e-5
    while not query_done(query, handle):
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 2e-3)
    return True


def release(release_fn, handle, backend, after=None, query=None):
    """An owner's finalizer: ``release_fn(handle)``. ``backend`` is held only so the library stays
    loaded until the handle is released. ``after``, when given, runs once the release has returned
    (the handle's work is then done). With a ``query``, work that is still running after
    :data:`RELEASE_WAIT_S` parks the handle (see :data:`parked`)."""
    if _releases_abandoned:
        return
    if query is None:
        if INTERRUPTED and interrupted_work_runs():  # see free_when_safe
            parked_frees.append((_release_now, (release_fn, handle, after)))
            return
    elif not wait_done(query, handle, RELEASE_WAIT_S):
        parked.append((release_fn, handle, backend, after, query))
        return
    release_fn(handle)
    if after is not None:
        after()


def _release_now(release_fn, handle, after):
    release_fn(handle)
    if after is not None:
        after()


def release_parked():
    """Release the parked handles whose work has finished, and make the put-off frees once no
    interrupted work runs; the number of handles still parked."""
    if _releases_abandoned:
        return len(parked)
    if parked_frees and not interrupted_work_runs():
        _free_parked()
    for entry in list(parked):
        release_fn, handle, backend, after, query = entry
        if query_done(query, handle):
            parked.remove(entry)
            release_fn(handle)
            if after is not None:
                after()
    return len(parked)
