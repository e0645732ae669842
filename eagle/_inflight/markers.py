"""Release markers: a host function enqueued behind a stream's work that stores 1 into a word
when it runs. The stream's holds (eagle/_inflight/holds.py) keep the arrays of that work until the
word is seen set, on the thread that enqueued it (never on the host-function thread).

With eagle's compiled half (eagle._hotcall) the host function is C (``release_marker`` in
backends/python/hotcall.c) and its words are never freed: the backend's host-function thread runs
a marker without the GIL. So a thread that holds the GIL while it waits for the stream (a
blocking call of another library that keeps the GIL, say) cannot deadlock with eagle's own
markers. Without the compiled half the marker is a Python callback, which needs the GIL, and its
words are Python memory; :func:`python_markers_pending` lets the exit drain wait for those."""
import threading

from .._hotcall import RELEASE_MARKER, marker_slab
from .._seam_ffi import ffi

SLAB_WORDS = 1024

_free = []              # uint32_t* words, each 0 and not lent
_lock = threading.Lock()
_python_slabs = []      # the words' memory when they are Python's (no compiled half)
python_lent = set()     # markers lent with the Python callback (the exit drain waits for them)


@ffi.callback("void(void*)")
def _python_release_marker(word):
    ffi.cast("uint32_t*", word)[0] = 1


#: The host function of every marker (void fn(void* word)), and whether it needs the GIL.
FUNCTION = (ffi.cast("void(*)(void*)", RELEASE_MARKER) if RELEASE_MARKER is not None
            else _python_release_marker)
NEEDS_GIL = RELEASE_MARKER is None


def _take_word():
    with _lock:
        if not _free:
            if marker_slab is not None:
                base = ffi.cast("uint32_t*", marker_slab(SLAB_WORDS))  # never freed
            else:
                base = ffi.new("uint32_t[]", SLAB_WORDS)
                _python_slabs.append(base)
            _free.extend(base + i for i in range(SLAB_WORDS))
        return _free.pop()


def _give_word(word):
    word[0] = 0
    with _lock:
        _free.append(word)


class Marker:
    """One release marker: ``batch`` (the references its work needs) and its word. It goes in
    the enqueuing thread's attention list (eagle/_inflight/attention.py), whose sweeps call :meth:`settle`;
    other threads may ask :meth:`ran`."""

    __slots__ = ("word", "batch")

    def __init__(self, batch):
        self.word, self.batch = _take_word(), batch

    def enqueue(self, backend, raw):
        """Enqueue the marker's host function on the stream ``raw``; the backend's status (on a
        nonzero status nothing was enqueued: :meth:`abandon` it). Should this raise (an
        interrupt), the word may have been enqueued: it is never given back."""
        if NEEDS_GIL:
            python_lent.add(self)
        return backend._f.host_func(raw, FUNCTION, self.word)

    def ran(self):
        """True once the marker's host function has run (its work is done)."""
        word = self.word
        return word is None or word[0] != 0

    def settle(self):
        """The attention list's question: can this item go? (Once the marker has run: its
        references are dropped, here, and its word goes back.)"""
        if not self.ran():
            return False
        self.batch = None
        self.abandon()
        return True

    def abandon(self):
        """Give the word back (after the marker has run, or when it was never enqueued; the
        batch stays the caller's)."""
        word, self.word = self.word, None
        python_lent.discard(self)
        if word is not None:
            _give_word(word)


def python_markers_pending():
    """Markers lent with the Python callback whose host function has not run yet."""
    return sum(1 for m in list(python_lent) if not m.ran())
