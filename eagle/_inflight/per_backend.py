"""A backend's work in flight (:class:`Flight`), kept outside the Backend object while the backend
lives and dropped with it (a Backend opened by path may go).

Keyed by ``id(backend)`` (:data:`by_id`), so a lookup is one dict read (the hot paths make one per
call). The entry goes in the backend's weakref callback, which runs before its memory (and so its
id) can be reused."""
import threading
import weakref
from functools import partial

#: id(backend) -> its Flight (the hot paths bind this dict once: it is never replaced)
by_id = {}


class Flight:
    """One backend's work in flight: ``streams`` (raw stream -> its holds, eagle/_inflight/holds.py);
    ``threads`` (enqueuing thread -> its attention list), ``ended`` (threads that ended with items
    in theirs) and ``local`` (per thread: what reports its end), eagle/_inflight/attention.py.
    ``backend`` is a weak reference to the backend."""

    __slots__ = ("backend", "streams", "threads", "ended", "local", "__weakref__")

    def __init__(self, backend):
        self.backend = weakref.ref(backend, partial(_drop, id(backend)))
        self.streams, self.threads, self.ended, self.local = {}, {}, [], threading.local()


def _drop(key, _ref):
    by_id.pop(key, None)


def flight_of(backend):
    """``backend``'s Flight, made now if it has none."""
    f = by_id.get(id(backend))
    if f is None:
        f = by_id.setdefault(id(backend), Flight(backend))
    return f


def flights():
    """(backend, Flight) for every live backend that has one."""
    out = []
    for f in list(by_id.values()):
        backend = f.backend()
        if backend is not None:
            out.append((backend, f))
    return out
