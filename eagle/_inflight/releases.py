"""Releases of handles: every owner's release (:class:`Armed`), made exactly once even when an
asynchronous exception (Ctrl-C) lands in it; the handles whose release waits for the work enqueued
on them (streams, launchers), parked when dropped while that work still runs; the frees and
releases put off while work that an interrupted wait left still runs (they may wait for the whole
device); and the switch the exit drain throws when it gives up on work that will never finish.

A signal's exception can land between any two bytecodes of the main thread, a finalizer's
included, where Python swallows it: a release cut short there used to be lost (a dropped
Capture's capturer kept the backend's default stream captured for good). So a release is armed
when its handle is owned, becomes due with no Python run when its owner goes, and is settled by
the owner's finalizer or ``close()`` or, should an exception cut that short, at the next safe
point: every seam call eagle makes (eagle._loader's raising calls), and each handle's creation.

eagle._handle's owners register here (:func:`arm`, :data:`waiters`); the exit drain
(eagle/_inflight/exit.py) waits for what is registered."""
import collections
import sys
import time
import traceback
import weakref
from _thread import get_ident

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
#: their :class:`Armed` releases, made once their query says done (retried by
#: every new such owner and by the exit drain), never while it runs (work that never ends would
#: hang the garbage collector, and the process at exit).
parked = []
#: A dropped owner's finalizer waits this long for the work before it parks the handle.
RELEASE_WAIT_S = 1.0

#: Keepers (eagle._handle._Keeper) of live owners whose release waits for work, with a completion
#: query: each has ``backend``, ``owner()`` (the owner, or None), ``done()``.
waiters = weakref.WeakSet()


#: Frees put off while work that an interrupted wait left still runs: (free, args), made in order
#: once it has finished (see :func:`free_when_safe`). Releases put off so stay :data:`due`.
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


def wait_done(query, handle, timeout=None, claim=None):
    """Poll ``query`` until the handle's work is done (True) or ``timeout`` seconds have passed
    (False); also True at once when ``claim`` (an :class:`Armed` release's) has been emptied: the
    handle was released meanwhile, and is not queried again. Sleeps in time.sleep, so Python's
    signal handlers run (their exception propagates, the work stays enqueued)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = 1e-5
    while not query_done(query, handle):
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 2e-3)
        if claim is not None and not claim:
            return True
    return True


class Armed(weakref.ref):
    """The release of one owner's handle: ``fn(handle)``, then ``after()``. A weak reference to the
    owner's keeper (eagle/_handle.py) whose callback, ``due.add``, is a builtin: when the keeper
    goes, the release becomes due with no Python run, so no signal's exception can land in
    between. :func:`settle` makes it, once, from the keeper's finalizer and from ``close()``;
    should an exception cut those short, from the next safe point (:func:`settle_due`)."""

    __slots__ = ("fn", "handle", "claim", "backend", "after", "query", "busy", "ends_capture")


#: Releases not yet settled (what keeps each Armed alive).
armed = set()
#: Releases due: their owner was dropped or closed, and a settle may not have finished.
due = set()
_consume = collections.deque(maxlen=0).extend


def arm(keeper, release_fn, handle, backend, after=None, query=None, ends_capture=False):
    """``(rec, finalizer)``: the Armed release ``rec`` of ``handle`` (see :class:`Armed`), and the
    keeper's finalizer, which settles it as soon as the keeper goes (``finalizer()``: now).
    ``backend`` is held only so the library stays loaded until the handle is released; ``after``
    must be safe to call again (an exception can land in it, and it is then made again);
    ``query``: the handle's completion query, when its release waits for its work (see
    :data:`parked`). ``ends_capture``: the release ends a capture (a capturer's, a conditional's
    body), which it never waits for, and is never put off: a stream left captured would record
    the work later given to it, which eagle's record (the Capture gone) would not know."""
    box = []
    # made first: CPython calls a dying object's weakref callbacks newest first, so rec's due.add
    # comes before the finalizer, whose settle then takes it off again (either order is correct)
    finalizer = weakref.finalize(keeper, _settle_boxed, box)
    rec = Armed(keeper, due.add)
    rec.fn, rec.handle, rec.backend, rec.after, rec.query = release_fn, handle, backend, after, query
    rec.ends_capture = ends_capture
    rec.claim = [None, handle]  # popped to None by the one call that releases it (see settle)
    rec.busy = []               # threads settling it, the one that does first
    armed.add(rec)  # hashes it while the keeper lives (a weakref's hash is its referent's, kept)
    box.append(rec)
    return rec, finalizer


def _settle_boxed(box):
    if box:
        settle_dropped(box[0])


def disown(rec):
    """``rec``'s handle is no longer eagle's to release (a consuming call moved it to the backend)."""
    rec.claim.clear()
    rec.after = rec.backend = rec.fn = None
    armed.discard(rec)
    due.discard(rec)


def settle(rec, wait=None):
    """Make ``rec``'s release and its after-release, unless made already. A handle whose release
    waits for its work is parked once that work has not finished in ``wait`` seconds (see
    :data:`parked`); while work an interrupted wait left still runs, a release that could wait
    for the whole device is put off (see :func:`free_when_safe`).

    ``wait`` defaults to :data:`RELEASE_WAIT_S`. An exception landing anywhere in here (Ctrl-C)
    leaves the release either made or still due: the release itself is one builtin step
    (``claim.pop`` feeding ``fn`` through map and a deque: no bytecode in between, so none where
    a signal handler could run) that hands the handle over exactly once; ``after`` is made again
    until it has returned. A settle already under way on another thread is left to finish it
    (the handle is never queried while another thread releases it)."""
    if _releases_abandoned:
        return
    keeper = rec()
    owner = keeper.owner() if keeper is not None else None
    if owner is not None and not owner.closed:  # a close() cut short before it closed: not due
        due.discard(rec)
        return
    busy = rec.busy
    busy.append(get_ident())
    if busy[0] != get_ident():  # (an interrupted settle of the main thread leaves it the main thread's)
        return
    claim = rec.claim
    if claim:
        if rec.query is None:
            if INTERRUPTED and not rec.ends_capture and interrupted_work_runs():  # see free_when_safe
                due.add(rec)  # put off: made at a safe point once that work has finished
                rec.busy.clear()
                return
        elif not wait_done(rec.query, rec.handle, RELEASE_WAIT_S if wait is None else wait, claim):
            if claim:
                if rec not in parked:
                    parked.append(rec)
                _settled(rec)
                return
        _consume(map(rec.fn, iter(claim.pop, None)))  # the release: no bytecode between pop and fn
    after = rec.after
    if after is not None:
        after()
        rec.after = None
    rec.backend = rec.fn = None  # made: nothing of it keeps the library loaded
    armed.discard(rec)
    _settled(rec)


def _settled(rec):
    due.discard(rec)
    rec.busy.clear()


def settle_dropped(rec):
    """A keeper's finalizer (and ``close()``): settle ``rec`` now; when an exception lands in that,
    try once more without waiting (a second one leaves it due), then let the exception go on."""
    try:
        settle(rec)
    except BaseException:
        settle(rec, 0.0)
        raise


def settle_due():
    """At a safe point (every seam call eagle makes, a handle's creation, ``close()``): settle the
    releases due whose settle was cut short, without waiting (one whose work still runs is
    parked). Runs no release of another thread's settle under way."""
    if _releases_abandoned:
        return
    blocked = None  # whether work an interrupted wait left runs (asked once, when it matters)
    for rec in list(due):
        if rec.busy and rec.busy[0] != get_ident():
            continue
        if INTERRUPTED and rec.query is None and not rec.ends_capture and rec.claim:
            if blocked is None:
                blocked = interrupted_work_runs()
            if blocked:
                continue
        try:
            settle(rec, 0.0)
        except Exception:  # noqa: BLE001 - an after-release's own failure: said, as a finalizer's is
            _settled(rec)
            armed.discard(rec)
            print("eagle: exception ignored in a release made at a safe point:", file=sys.stderr)
            traceback.print_exc()


def release_parked():
    """Release the parked handles whose work has finished, and make the put-off frees and
    releases once no interrupted work runs; the number of handles still parked."""
    if _releases_abandoned:
        return len(parked)
    if parked_frees and not interrupted_work_runs():
        _free_parked()
    if due:
        settle_due()
    for rec in list(parked):
        settle(rec, 0.0)  # parked again (once) while its work runs
        if not rec.claim:
            try:
                parked.remove(rec)
            except ValueError:  # another thread took it off first
                pass
    return len(parked)
