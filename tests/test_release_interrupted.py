"""A release that an asynchronous exception cuts short is made anyway (eagle/_inflight/releases.py).

Ctrl-C's KeyboardInterrupt (or an alarm handler's exception) lands between any two bytecodes of
the main thread, a dropped handle's finalizer included, where Python swallows it ("Exception
ignored in"). It used to skip the release there: a dropped Capture whose finalizer it landed in
kept its capturer, and the backend's default stream stayed captured for good while eagle's own
record of the capture was gone (the Hypothesis fuzz of interrupted sequences found it).

These tests land the exception at every bytecode of the release path in turn: a trace function
raises KeyboardInterrupt at the k-th opcode executed in eagle's release code (and in
weakref.finalize, which calls it), for k = 1, 2, ... until the path runs out, the same exception
at the same places where a signal handler's can land (and more: a signal lands only at some of
them). After each, once eagle is called again (a safe point), the handle must have been released
exactly once: the default stream is no longer captured by the backend's own answer, by eagle's
record, and the next capture and run work."""
import gc
import os
import sys
import time
import weakref

import numpy as np
import pytest

from eagle import _handle, capture as _capture
from eagle._backend import Backend
from eagle._inflight import holds, releases
from eagle._inflight.per_backend import by_id
from eagle._seam_ffi import ffi
from _subproc import run_snippet
from test_api_kernels import kaddr

# the code a release runs: eagle's release path, the finalizer that calls it, a stream's after-release
RELEASE_PATH = {os.path.abspath(m.__file__) for m in (releases, holds, _handle, _capture, weakref)}
MAX_POINTS = 3000  # a bound on the injection points of one path (each path has far fewer)


class Injector:
    """sys.settrace function raising KeyboardInterrupt once, at the k-th opcode (or function entry)
    executed in a RELEASE_PATH frame; ``fired`` says whether the path reached k."""

    def __init__(self, k):
        self.k, self.seen, self.fired = k, 0, False

    def _tick(self):
        self.seen += 1
        if self.seen == self.k:
            self.fired = True
            sys.settrace(None)
            raise KeyboardInterrupt(f"injected at release-path point {self.k}")

    def __call__(self, frame, event, arg):  # the global trace function: 'call' events
        if os.path.abspath(frame.f_code.co_filename) not in RELEASE_PATH:
            return None
        frame.f_trace_lines, frame.f_trace_opcodes = False, True
        self._tick()  # the function's entry (RESUME checks for signals)
        return self._local

    def _local(self, frame, event, arg):
        if event == "opcode":
            self._tick()
        return self._local

    def __enter__(self):
        sys.settrace(self)
        return self

    def __exit__(self, *exc):
        sys.settrace(None)
        return False


def _counting(b, name):
    """Wrap ``b._f.<name>`` so its calls are counted per handle (a dict handle int -> calls)."""
    real, counts = getattr(b._f, name), {}

    def counted(handle, *rest):
        key = int(ffi.cast("uintptr_t", handle))
        counts[key] = counts.get(key, 0) + 1
        return real(handle, *rest)
    setattr(b._f, name, counted)
    return counts


def _backend_says_capturing(b, raw=0):
    """The backend's own answer (no eagle bookkeeping): True while stream ``raw`` is captured."""
    nodes, count = ffi.new("uint64_t**"), ffi.new("int64_t*")
    if b._f.capture_snapshot_nodes(raw, nodes, count) != 0:
        return False
    b._f.free(nodes[0])
    return True


@pytest.fixture
def b(cpu):
    b = Backend(cpu.path, "cpu", "release-interrupted")
    yield b
    assert not _backend_says_capturing(b), "a test left the default stream captured"


@pytest.fixture
def swallowed(monkeypatch):
    """What Python reports as 'Exception ignored in' (a finalizer's exception), kept, not printed."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))
    return seen


def _safe_point(b):
    """The next eagle call: an eager run (eagle's own stream), which must work."""
    x = np.zeros(4)
    b.run(kaddr("add1"), [x], 4)
    assert (x == 1).all()


def _capture_and_replay_work(b):
    """A capture of the default stream records, becomes a graph, and replays."""
    x = np.zeros(8)
    with b.capture(None) as cap:
        b.run(kaddr("add1"), [x], 8, stream=0)
    assert (x == 0).all(), "work on the captured default stream ran instead of being recorded"
    g = b.graph_from_captured(cap.captured)
    launcher = g.launcher()
    launcher.launch()
    launcher.synchronize()
    assert (x == 1).all()
    launcher.close()
    g.close()


def _points(run_once):
    """run_once(injector) for k = 1, 2, ... until an injection no longer fires; the count. The
    cyclic collector is off meanwhile: no other object's finalizer runs under the injector (the
    objects dropped here go by their reference counts, which the tests check)."""
    gc.collect()
    gc.disable()
    try:
        for k in range(1, MAX_POINTS):
            if not run_once(Injector(k)):
                return k - 1
    finally:
        gc.enable()
    raise AssertionError(f"the release path has more than {MAX_POINTS} points")


def test_an_interrupt_anywhere_in_a_dropped_captures_release(b, swallowed):
    released = _counting(b, "capturer_release")

    def once(injector):
        cap = b.capture(None)
        cap.begin()
        h = int(ffi.cast("uintptr_t", cap._h))
        assert _backend_says_capturing(b) and 0 in b._capturing
        keeper = weakref.ref(cap._keeper)
        with injector:
            del cap  # its finalizer runs here, and the injected exception lands in it
        assert keeper() is None, "the dropped capture was not collected at once"
        _safe_point(b)
        where = f"interrupt at point {injector.k}"
        assert not _backend_says_capturing(b), f"{where}: the backend's default stream is still captured"
        assert 0 not in b._capturing, where
        assert released.get(h) == 1, f"{where}: the capturer was released {released.get(h, 0)} times"
        released.clear()
        return injector.fired

    n = _points(once)
    assert n >= 5, f"only {n} injection points: the injector does not see the release path"
    assert swallowed and all(isinstance(e, KeyboardInterrupt) for e in swallowed)
    _capture_and_replay_work(b)


def test_an_interrupt_anywhere_in_a_captures_close(b, swallowed):
    """close() raises the exception; the capture is then either still open (closing it again
    works) or closed and released, never closed by eagle's record and captured by the backend's."""
    released = _counting(b, "capturer_release")

    def once(injector):
        cap = b.capture(None)
        cap.begin()
        h = int(ffi.cast("uintptr_t", cap._h))
        raised = False
        with injector:
            try:
                cap.close()
            except KeyboardInterrupt:
                raised = True
        assert raised == injector.fired, "the exception did not reach close()'s caller"
        where = f"interrupt at point {injector.k}"
        b.stream().close()  # the next eagle call (not on the default stream)
        if cap.closed:
            assert not _backend_says_capturing(b), f"{where}: closed, but the default stream is still captured"
            assert 0 not in b._capturing, where
            assert released.get(h) == 1, f"{where}: released {released.get(h, 0)} times"
        else:  # the exception left it open (recording)
            assert _backend_says_capturing(b) and 0 in b._capturing, where
            assert not released, where
            cap.close()
        keeper = weakref.ref(cap._keeper)
        del cap
        assert keeper() is None
        _safe_point(b)
        assert not _backend_says_capturing(b) and 0 not in b._capturing, where
        assert released.get(h) == 1, f"{where}: released {released.get(h, 0)} times"
        released.clear()
        return injector.fired

    assert _points(once) >= 5
    _capture_and_replay_work(b)


def test_an_interrupt_anywhere_in_a_dropped_streams_release(b, swallowed):
    """A stream's release waits for its work, then its after-release drops what its work held."""
    released = _counting(b, "stream_release")
    flight = None

    def once(injector):
        nonlocal flight
        s = b.stream()
        x = np.zeros(16)
        b.run(kaddr("add1"), [x], 16, stream=s)  # held by the stream until it is seen to have run
        raw, h = s._raw, int(ffi.cast("uintptr_t", s._h))
        flight = by_id[id(b)]
        assert raw in flight.streams
        while not releases.query_done(s._keeper.query, s._h):
            pass
        ref, keeper = weakref.ref(x), weakref.ref(s._keeper)
        del x
        with injector:
            del s
        assert keeper() is None, "the dropped stream was not collected at once"
        _safe_point(b)
        where = f"interrupt at point {injector.k}"
        assert released.get(h) == 1, f"{where}: the stream was released {released.get(h, 0)} times"
        assert raw not in flight.streams, f"{where}: the released stream still holds its work's arrays"
        assert ref() is None, where
        released.clear()
        return injector.fired

    assert _points(once) >= 5
    assert not releases.parked


def test_an_interrupt_anywhere_in_a_busy_streams_release_then_parked(b, swallowed, monkeypatch):
    """A stream dropped while its work runs (a host function waiting for an event): its finalizer
    waits (here 2 ms), then parks it; once the work ends, the next stream's creation releases it."""
    monkeypatch.setattr(releases, "RELEASE_WAIT_S", 0.002)
    released = _counting(b, "stream_release")

    def once(injector):
        import threading
        s = b.stream()
        go = threading.Event()
        s.host_func(go.wait)
        raw, h = s._raw, int(ffi.cast("uintptr_t", s._h))
        keeper = weakref.ref(s._keeper)
        with injector:
            del s
        assert keeper() is None, "the dropped stream was not collected at once"
        where = f"interrupt at point {injector.k}"
        b.stream().close()  # a safe point while the work runs: nothing is released
        assert released.get(h, 0) == 0, f"{where}: a busy stream was released"
        go.set()
        for _ in range(2000):
            b.stream().close()  # a safe point, and the next stream made: parked releases retried
            if released.get(h):
                break
            time.sleep(0.001)
        assert released.get(h) == 1, f"{where}: the stream was released {released.get(h, 0)} times"
        assert not releases.parked and not releases.due, where
        assert raw not in by_id[id(b)].streams, where
        released.clear()
        return injector.fired

    assert _points(once) >= 5


def test_a_capture_dropped_while_interrupted_work_runs_is_released_at_once(b):
    """While work that an interrupted wait left still runs, releases that may wait for the device
    are put off (a graph's here); a capture's is not: its stream would stay captured, recording
    the work given to it, while eagle's record of the capture is gone."""
    import threading
    from eagle._hotcall import INTERRUPTED
    s = b.stream()
    go = threading.Event()
    s.host_func(go.wait)  # work that runs until told
    query = int(ffi.cast("uintptr_t", ffi.addressof(b._lib, "eagle_backend_stream_query")))
    INTERRUPTED.append((query, int(ffi.cast("uintptr_t", s._h))))  # as an interrupted wait for it notes it
    try:
        assert releases.interrupted_work_runs()
        g_stream = b.stream()
        with b.capture(g_stream) as cap:
            b.run(kaddr("add1"), [np.zeros(4)], 4, stream=g_stream)
        released = _counting(b, "graph_release")
        g = b.graph_from_captured(cap.captured)
        g_handle = int(ffi.cast("uintptr_t", g._h))
        del g
        b.stream().close()  # a safe point
        assert not released and len(releases.due) == 1, "a graph's release was not put off"
        cap = b.capture(None)
        cap.begin()
        del cap
        assert not _backend_says_capturing(b), "a dropped capture's release was put off: the stream stays captured"
        assert 0 not in b._capturing
        x = np.zeros(4)
        b.run(kaddr("add1"), [x], 4, stream=0)  # runs, not recorded
        b.stream().close()
        g_stream.close()
    finally:
        go.set()
        s.synchronize()
    for _ in range(5000):  # the default stream's work (ordered after s's on cpu)
        if (x == 1).all():
            break
        time.sleep(0.001)
    assert (x == 1).all()
    assert not releases.interrupted_work_runs()
    b.stream().close()  # the next safe point makes the put-off release
    assert released == {g_handle: 1} and not releases.due
    s.close()


PENDING_SIGINT = r"""
import ctypes, sys, weakref
import eagle
from eagle._seam_ffi import ffi
b = eagle.backend("cpu")
trip = ctypes.pythonapi.PyErr_SetInterrupt  # what Python's C-level SIGINT handler does
trip.argtypes, trip.restype = [ctypes.py_object], None  # called with the weakref, which it ignores
swallowed = []
sys.unraisablehook = lambda u: swallowed.append(type(u.exc_value).__name__)


def capturing():
    nodes, count = ffi.new("uint64_t**"), ffi.new("int64_t*")
    if b._f.capture_snapshot_nodes(0, nodes, count) != 0:
        return False
    b._f.free(nodes[0])
    return True


late = 0
for i in range(ROUNDS):
    cap = b.capture(None)
    cap.begin()
    # made after the finalizer's weakref, so called before it (CPython calls a dying object's
    # weakref callbacks newest first): SIGINT is pending when the finalizer starts
    tripwire = weakref.ref(cap._keeper, trip)
    try:
        del cap
    except KeyboardInterrupt:  # not taken by a finalizer: landed in this loop's code
        late += 1
    s = b.stream()  # the next eagle call
    s.close()
    assert not capturing(), f"round {i}: the backend's default stream is still captured ({swallowed})"
    assert 0 not in b._capturing
result = {"swallowed": swallowed, "late": late}
"""


def test_a_pending_sigint_at_a_dropped_captures_finalizer():
    """A real SIGINT pending (Python's own handler runs: PyErr_SetInterrupt, what the C-level handler
    does) when the finalizer of a dropped Capture starts: its KeyboardInterrupt lands at the
    finalizer's first instruction, which Python swallows. In a subprocess: the interpreter's own
    SIGINT handler, and no test runner's."""
    rounds = 20
    out = run_snippet(PENDING_SIGINT, globals={"ROUNDS": rounds}, timeout=120)
    assert out.status == "ok", out.describe()
    assert out.result["swallowed"] == ["KeyboardInterrupt"] * rounds and out.result["late"] == 0, out.describe()
