"""Releases that wait for work: the handles whose release waits for the work enqueued on them
(streams, launchers), parked when dropped while that work still runs, and the switch the exit
drain throws when it gives up on work that will never finish.

eagle._handle's owners register here (:data:`waiters`, :func:`release`); the exit drain
(eagle/_inflight/exit.py) waits for what is registered."""
import time
import weakref

from .._seam_ffi import ffi

# Set when the process exits with work that will never finish (the exit drain gave up): a release
# may wait for its handle's work (a stream's release does; so does freeing device memory on cuda,
# where cudaFree synchronizes the device, H200: benchmarks/logs/session11/cuda_interrupt_*), and
# freed memory may still be read or written by that work, so from then on no handle is released
# and no memory freed (releases_abandoned), and the process ends without them (the backends drop
# unstarted work at exit).
_releases_abandoned = False


def releases_abandoned():
    """True once the exit drain gave up on work that will never finish: finalizers of handles
    and of memory then release nothing."""
    return _releases_abandoned

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
    if query is not None and not wait_done(query, handle, RELEASE_WAIT_S):
        parked.append((release_fn, handle, backend, after, query))
        return
    release_fn(handle)
    if after is not None:
        after()


def release_parked():
    """Release the parked handles whose work has finished; the number still parked."""
    if _releases_abandoned:
        return len(parked)
    for entry in list(parked):
        release_fn, handle, backend, after, query = entry
        if query_done(query, handle):
            parked.remove(entry)
            release_fn(handle)
            if after is not None:
                after()
    return len(parked)
