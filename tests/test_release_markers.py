"""eagle's release markers (eagle/_inflight/markers.py) run without the GIL: a thread that holds the GIL
while it waits for a stream (another library's blocking call that keeps it) does not deadlock
with the marker eagle enqueued behind its own work on that stream (cpu, and cuda where a GPU
is). Each case runs in a subprocess (tests/_subproc.py): a deadlock there is a hang reported
here, not a hung run. The second case puts the Python-callback marker back (what eagle does
without its compiled half) and shows that the first case can fail."""
import pytest

from _subproc import run_snippet
from eagle import _hotcall

needs_c_marker = pytest.mark.skipif(_hotcall.RELEASE_MARKER is None,
                                    reason="eagle was built without its compiled half (EAGLE_HOTCALL=OFF): "
                                           "release markers are then Python callbacks, which need the GIL")

# Copies on an eagle stream (a release marker behind them), then, while they run, a wait for that
# stream through ctypes.PyDLL, which keeps the GIL during the call. cpu: one 128 MiB host-to-host
# copy; cuda: sixteen 1 GiB device-to-device copies (a few ms on an H200).
CHILD = """
    import ctypes, time
    import numpy as np
    import eagle
    from eagle._inflight import markers as _marker
    from eagle._handle import raw_int
    kind = KIND
    if MODE == "python-marker":
        _marker.FUNCTION, _marker.NEEDS_GIL = _marker._python_release_marker, True
    b = eagle.backend(kind)
    s = b.stream()
    if kind == "cpu":
        src, dst, times = np.ones(1 << 24), np.zeros(1 << 24), 1
    else:
        src, dst, times = b.asarray(np.ones(1 << 27)), b.zeros(1 << 27), 16
    sync = ctypes.PyDLL(b.path).eagle_backend_stream_synchronize
    sync.argtypes, sync.restype = [ctypes.c_void_p], ctypes.c_int32
    t0 = time.perf_counter()
    for _ in range(times):
        eagle.copy(dst, src, stream=s)
    # the backend's stream handle (s._h), not its raw value (s.handle: a cudaStream_t on cuda)
    status = sync(raw_int(s._h))  # holds the GIL until the stream has run everything
    assert status == 0, status
    s.synchronize()
    last = dst[-1] if kind == "cpu" else dst.numpy()[-1]
    assert last == 1.0, last
    result = f"waited {time.perf_counter() - t0:.3f} s with the GIL held"
"""


def _run(code, timeout, **globals_):
    return run_snippet(code, timeout=timeout, globals=globals_)


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu), pytest.param("opencl", marks=pytest.mark.opencl)])
def kind(request):
    if request.param != "cpu":
        request.getfixturevalue(request.param)  # skips, naming why, where that kind is not usable
    return request.param


@needs_c_marker
def test_a_wait_that_holds_the_gil_does_not_deadlock_with_a_release_marker(kind):
    out = _run(CHILD, 120, MODE="c-marker", KIND=kind)
    out.expect_ok()
    assert "with the GIL held" in out.result


@pytest.mark.slow  # about 15 s: waits for a deadlock's timeout
def test_the_same_wait_deadlocks_with_a_python_marker(kind):
    """The control: with a marker that needs the GIL, the same program hangs."""
    out = _run(CHILD, 15, MODE="python-marker", KIND=kind)
    assert out.status == "hang", out.describe()


# Temporaries handed to eager calls on a stream are let go once their work has run, with either
# marker; the words go back and are reused (a loop of calls does not grow the pool).
KEEPALIVE = """
    import gc, weakref
    import numpy as np
    import eagle
    from eagle._inflight import markers as _marker
    if MODE == "python-marker":
        _marker.FUNCTION, _marker.NEEDS_GIL = _marker._python_release_marker, True
    b = eagle.backend("cpu")
    s = b.stream()
    out = np.zeros(1 << 16)
    refs = []
    for k in range(3000):
        tmp = np.full(1 << 16, float(k))
        eagle.copy(out, tmp, stream=s)
        refs.append(weakref.ref(tmp))
        del tmp
    s.synchronize()
    eagle.copy(np.zeros(1), np.ones(1), stream=s)  # a later call on the stream sweeps
    s.synchronize()
    gc.collect()
    alive = sum(r() is not None for r in refs)
    assert out[0] == 2999.0, out[0]
    assert alive == 0, f"{alive} temporaries still held after their work ran"
    assert _marker.python_markers_pending() == 0
    words = len(_marker._free)
    assert words <= _marker.SLAB_WORDS, f"{words} marker words made for one stream"
"""


@pytest.mark.parametrize("mode", [pytest.param("c-marker", marks=needs_c_marker), "python-marker"])
def test_temporaries_are_let_go_and_marker_words_reused(mode):
    _run(KEEPALIVE, 300, MODE=mode).expect_ok()


# Four threads making eager calls with temporaries at once on one stream, passed as its raw
# handle (an eagle Stream object is thread-affine), so they share its marker bookkeeping, then
# end: every temporary is let go once its work has run and a thread calls eagle again (the
# markers a thread enqueued outlive it; another thread settles them), and nothing crashes.
THREADS = """
    import gc, threading, weakref
    import numpy as np
    import eagle
    from eagle._handle import raw_int
    b = eagle.backend("cpu")
    s = b.stream()
    raw = raw_int(s.handle)
    refs, errors = [], []
    start, enqueued, synced = threading.Barrier(5), threading.Barrier(5), threading.Barrier(5)

    def work(k):
        try:
            out = np.zeros(4096)
            start.wait(30)
            for j in range(500):
                tmp = np.full(4096, float(k * 1000 + j))
                eagle.copy(out, tmp, stream=raw)
                refs.append(weakref.ref(tmp))
                del tmp
            enqueued.wait(60)
            synced.wait(60)  # the stream's owner has synchronized it
            eagle.copy(np.zeros(1), np.ones(1), stream=raw)  # this thread's next call sweeps its list
            assert out[0] == k * 1000 + 499, out[0]
        except BaseException as e:  # noqa: BLE001
            errors.append(repr(e))
            for bar in (start, enqueued, synced):
                bar.abort()

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    start.wait(30)
    enqueued.wait(60)
    s.synchronize()
    synced.wait(60)
    for t in ts:
        t.join(120)
    s.synchronize()
    eagle.copy(np.zeros(1), np.ones(1), stream=s)  # a call here settles what the ended threads left
    gc.collect()
    assert not errors, errors
    alive = sum(r() is not None for r in refs)
    assert len(refs) == 2000 and alive == 0, (len(refs), alive)
"""


def test_threads_sharing_a_stream_let_go_of_their_temporaries():
    _run(THREADS, 300).expect_ok()


# A thread makes one eager call with a temporary on a stream and ends at once: the marker it
# enqueued is in its attention list, which it will never sweep. Another thread's next call
# settles it, so the temporary goes (it stayed alive for good before ended threads were swept).
ENDED = """
    import gc, threading, weakref
    import numpy as np
    import eagle
    from eagle._handle import raw_int
    b = eagle.backend("cpu")
    s = b.stream()
    raw = raw_int(s.handle)
    box = {}

    def one_call():
        tmp = np.ones(1 << 22)
        eagle.copy(np.zeros(1 << 22), tmp, stream=raw)
        box["ref"] = weakref.ref(tmp)

    t = threading.Thread(target=one_call)
    t.start()
    t.join(60)
    s.synchronize()
    gc.collect()
    held_before = box["ref"]() is not None  # its marker has run, but nobody has looked
    eagle.copy(np.zeros(1), np.ones(1), stream=s)
    gc.collect()
    assert held_before, "the temporary went before any thread settled the marker"
    assert box["ref"]() is None, "the ended thread's temporary is still held"
"""


def test_an_ended_threads_temporaries_are_let_go_by_another_thread():
    _run(ENDED, 120).expect_ok()
