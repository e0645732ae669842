"""Which step ``Graph.build`` is recording on this thread, if any.

A step records the work it enqueues on the stream it is given; work it sends anywhere else runs
once, while the graph is built, and is never replayed. So does work given no stream while the
kind's default stream is being captured (``Backend.capture(None)``): eagle's own stream runs it
at once, outside the capture. Every call given no ``stream=`` reaches eagle's own stream through
one door, ``eagle._inflight.own_stream``, which asks :func:`refuse_eager` first; the refusal names
the stream to use instead."""
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


def refuse_eager(what, backend=None):
    """Raise EagleValueError naming ``what`` when a step is being recorded on this thread, or when
    ``backend``'s default stream (raw 0) is being captured: an eager call would run once, now, and
    be missing from every replay."""
    capturing = getattr(backend, "_capturing", None)
    if capturing and 0 in capturing:
        raise EagleValueError(f"{what}: called with no stream= while the {backend.kind} backend's default stream "
                              "is being captured: eagle's own stream would run it once, now, outside the "
                              "capture, and it would never be replayed; enqueue it on the captured stream "
                              "(stream=0)")
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
