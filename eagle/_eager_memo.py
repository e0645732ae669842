"""A per-thread memo of eager calls on arrays that never move: what the resolver and the argument
checks decided for the very same objects, kept with the seam desc made from them, so that a loop
of identical eager calls makes the desc once.

Sound for the types eagle._arrays registers ``stable``: an :class:`eagle.DeviceArray` (its memory
is freed only when it is collected, eagle/array.py) and CuPy's ndarray (its memory, dtype and
strides are read-only attributes; setting its shape keeps its bytes). Their address, size and
device never change while they live, so a decision about these objects holds as long as they
live. An entry is keyed by the arrays' ids and the call's other arguments, and a weak reference to
each array proves that the objects of a hit are the caller's own: an id is reused only after its
object died, and then the reference is dead. What can change while they live is the caller's to
check on every hit (the backend their kind opens, the thread's own stream).

Never for other arrays: numpy's and torch's memory can move under the same object
(``ndarray.resize``, ``tensor.set_``). Each thread has its own table (the descs name its own
stream), of :data:`LIMIT` entries at most, the oldest dropped first; entries hold the arrays
weakly, so a table keeps no memory alive."""
import threading
import weakref

#: Entries per thread at most.
LIMIT = 32

_local = threading.local()


class Entry:
    """One memoized call: weak references to its arrays, and what the caller keeps with them."""

    __slots__ = ("refs", "kind", "backend", "stream", "raw", "desc")

    def __init__(self, arrays, kind, backend, stream, raw, desc):
        self.refs = tuple(weakref.ref(a) for a in arrays)
        self.kind, self.backend, self.stream, self.raw, self.desc = kind, backend, stream, raw, desc

    def holds4(self, a, b, c, d):
        """True when the four arrays of this entry are ``a``, ``b``, ``c``, ``d`` themselves."""
        r = self.refs
        return r[0]() is a and r[1]() is b and r[2]() is c and r[3]() is d


def table():
    """This thread's table: key -> :class:`Entry`."""
    t = getattr(_local, "table", None)
    if t is None:
        t = _local.table = {}
    return t


def put(t, key, entry):
    """Keep ``entry`` under ``key`` in the table ``t``, dropping the oldest entry when it is full."""
    if key not in t and len(t) >= LIMIT:
        del t[next(iter(t))]
    t[key] = entry
