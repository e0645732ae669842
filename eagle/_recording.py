"""Which step ``Graph.build`` is recording on this thread, if any.

A step records the work it enqueues on the stream it is given; work it sends anywhere else runs
once, while the graph is built, and is never replayed. Eager calls (``eagle.run``, ``eagle.copy``
with no ``stream=``) ask :func:`refuse_eager` first, which names the step's stream to use."""
import contextlib
import threading
import weakref

from .errors import EagleValueError

_here = threading.local()


@contextlib.contextmanager
def step(name, stream):
    """While the body runs, the plain step ``name`` is being recorded on ``stream``."""
    outer = getattr(_here, "current", None)
    _here.current = (name, stream)
    try:
        yield
    finally:
        _here.current = outer


def refuse_eager(what):
    """Raise EagleValueError naming ``what`` when a step is being recorded on this thread: an
    eager call would run once, now, and be missing from every replay."""
    current = getattr(_here, "current", None)
    if current is not None:
        name, stream = current
        raise EagleValueError(f"{what}: called with no stream= while eagle.Graph.build records step {name!r}: it "
                              "would run once, now, and never be replayed; enqueue it on the stream the step "
                              f"is given (stream={stream!r})")


@contextlib.contextmanager
def collecting():
    """While the body runs (``Graph.build``'s recording), :func:`note_drain` collects here: the
    yielded list gets a weak reference to each ActiveSet whose drain is recorded on this thread
    (eagle/_inflight/cancel.py stops them when a wait for the graph is interrupted)."""
    outer = getattr(_here, "collected", None)
    _here.collected = found = []
    try:
        yield found
    finally:
        _here.collected = outer


def note_drain(aset):
    """``aset`` enqueued a drain: noted by the recording that collects on this thread, if any."""
    found = getattr(_here, "collected", None)
    if found is not None and not any(r() is aset for r in found):
        found.append(weakref.ref(aset))
