"""Attention lists: per backend and per enqueuing thread, what that thread must see to about the
work it enqueued -- exceptions its host functions raised (re-raised by its next synchronize), the
references of its finished host calls (:class:`Finished`) and its release markers in flight
(eagle/_inflight/markers.py) -- and the sweep that settles the lists of threads that have ended.

Host-function threads append; Python threads remove, from the front, one item at a time: the
owner while it lives, any thread once it has ended. Items other than exceptions answer
``settle()``: True once they can go (and have let go of their references). A list, once made,
is never replaced: a bound call (eagle._hotcall) watches it and reports a non-empty one.

The state is the backend's :class:`eagle._inflight.per_backend.Flight` (``threads``, ``ended``,
``local``): kept per backend, it goes with the backend."""
import threading
import weakref

from .per_backend import by_id as _by_id, flight_of


class Finished:
    """References of work that has run, put in the enqueuing thread's attention list by the
    backend's host-function thread: they are dropped by that thread's next synchronize (or eagle
    call), never in the host-function thread, where the last reference to a framework's array
    would free device memory inside a stream callback (CUDA forbids API calls there)."""

    __slots__ = ("refs",)

    def __init__(self, refs):
        self.refs = refs

    def settle(self):
        """The attention list's question (see eagle._inflight.markers.Marker.settle): it can go now."""
        return True


class _ThreadEnd:
    """Held in a backend's per-thread local: when the thread ends, its local goes and this puts
    the thread on the backend's list of ended threads, whose attention lists other threads then
    settle (release markers and their arrays would otherwise wait for a thread that will never
    call eagle again)."""

    __slots__ = ("flight", "thread")

    def __init__(self, flight, thread):
        self.flight, self.thread = weakref.ref(flight), thread

    def __del__(self):
        f = self.flight()
        if f is None:
            return
        try:
            if f.threads.get(self.thread):
                f.ended.append(self.thread)
        except Exception:  # noqa: BLE001 - during interpreter shutdown
            pass


def attention_list(backend, thread):
    """``thread``'s attention list on ``backend`` (made on first use; see the module docstring).
    Asked by the thread itself, it also arranges for the list to be swept once the thread ends."""
    f = flight_of(backend)
    pending = f.threads.get(thread)
    if pending is None:
        pending = f.threads.setdefault(thread, [])
    if getattr(f.local, "watch", None) is None and thread == threading.get_ident():
        f.local.watch = _ThreadEnd(f, thread)
        if thread in f.ended:  # an ended thread's id, taken again: its new owner sweeps it
            _leaves_ended(f, thread)
    return pending


def _settle(pending, errors):
    """One pass over an attention list, from the front, one item at a time (host-function
    threads may append meanwhile; another thread may sweep it too): items whose ``settle()`` is
    True go, the others go behind the rest. An exception is raised (``errors="raise"``), ends the
    pass where it stands (``"stop"``), or goes (``"drop"``)."""
    for _ in range(len(pending)):
        if errors == "stop" and pending and isinstance(pending[0], BaseException):
            return
        try:
            item = pending.pop(0)
        except IndexError:
            return
        if isinstance(item, BaseException):
            if errors == "raise":
                raise item
            continue
        if not item.settle():
            pending.append(item)  # in flight: behind the rest


def raise_host_error(backend, thread):
    """Drop ``thread``'s settled items and raise the first host-function error, if any (release
    markers still in flight stay). What a synchronize that succeeded does with a non-empty list."""
    f = _by_id.get(id(backend))
    if f is not None:
        settle_of(f, thread, errors="raise")


def drop_finished(backend, thread):
    """Drop ``thread``'s settled items up to its first error, keeping the errors; and the settled
    items of threads that have ended. Every eagle call that holds or waits makes this pass."""
    f = _by_id.get(id(backend))
    if f is not None:
        settle_of(f, thread)


def settle_of(f, thread, errors="stop"):
    """One pass over ``thread``'s list in the Flight ``f`` (``errors`` as :func:`_settle` takes
    it), then over the lists of threads that have ended."""
    pending = f.threads.get(thread)
    if pending:
        _settle(pending, errors)
    if f.ended:
        _sweep_ended(f)


def _sweep_ended(f):
    """Settle the lists of threads that have ended (nobody is left to raise their errors, so
    those go too); a thread leaves ``f.ended`` once its list is empty. The lists stay: a host
    function still pending may append to one."""
    for thread in list(f.ended):
        pending = f.threads.get(thread, [])
        _settle(pending, errors="drop")
        if not pending:
            _leaves_ended(f, thread)


def _leaves_ended(f, thread):
    """``thread`` leaves ``f.ended`` (another thread may have taken it out already)."""
    try:
        f.ended.remove(thread)
    except ValueError:
        pass
