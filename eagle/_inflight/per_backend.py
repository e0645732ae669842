"""State kept per backend outside the Backend object: a table that holds each backend's entry
while the backend lives and drops it with the backend (a Backend opened by path may go).

Keyed by ``id(backend)``, so a lookup is one dict read (the hot paths make one per call). The
entry goes in the backend's weakref callback, which runs before its memory (and so its id) can
be reused."""
import weakref
from functools import partial


class PerBackend:
    """backend -> state made by ``make()`` on first use."""

    __slots__ = ("_make", "by_id", "_refs")

    def __init__(self, make):
        self._make, self.by_id, self._refs = make, {}, {}

    def get(self, backend, default=None):
        """``backend``'s state, or ``default`` when it has none (the hot paths read ``by_id``)."""
        return self.by_id.get(id(backend), default)

    def of(self, backend):
        """``backend``'s state, made now if it has none."""
        key = id(backend)
        state = self.by_id.get(key)
        if state is None:
            self._refs.setdefault(key, weakref.ref(backend, partial(self._drop, key)))
            state = self.by_id.setdefault(key, self._make())
        return state

    def _drop(self, key, _ref):
        self.by_id.pop(key, None)
        self._refs.pop(key, None)

    def items(self):
        """(backend, state) for every live backend that has state."""
        out = []
        for key, state in list(self.by_id.items()):
            ref = self._refs.get(key)
            backend = ref() if ref is not None else None
            if backend is not None:
                out.append((backend, state))
        return out

    def clear(self):
        self.by_id.clear()
        self._refs.clear()
