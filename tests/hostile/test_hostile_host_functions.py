"""Host functions against the cpu backend's stream ordering and process exit, each case in a fresh
interpreter with a timeout: a deadlock is a hang, an exit-time crash is a signal. The rules these
pin are in backends/cpu/runtime.h (ordering rules of the cpu backend's streams); the waits a
host function cannot make from Python (handles are thread-affine there) are pinned by the C smoke
test (tests/c_backend/smoke.c, test_host_function_waits)."""
import pytest

from _subproc import run_snippet

# A host function on blocking stream A creates and synchronizes a new blocking stream while the
# default stream holds work ordered after A's host function and the main thread waits on another
# blocking stream ordered after the default stream (the deadlock).
NESTED_BLOCKING_STREAM = """
import threading
import numpy as np
import eagle
b = eagle.backend("cpu")
a, other = b.stream(), b.stream()
src, dst = np.arange(4.0), np.zeros(4)
z, o = np.zeros(4), np.ones(4)
go = threading.Event()
def host():
    go.wait(10)
    s2 = b.stream()
    s2.copy(dst, src)
    s2.synchronize()
a.host_func(host)
b.copy(z, o)              # default stream: ordered after A's host function
other.copy(o, z)          # blocking stream: ordered after the default stream's copy
go.set()
other.synchronize()
a.synchronize()
result = [dst.tolist(), z.tolist(), o.tolist()]
"""


def test_a_host_function_may_create_and_synchronize_a_blocking_stream():
    out = run_snippet(NESTED_BLOCKING_STREAM, timeout=60)
    assert out.expect_ok() == [[0.0, 1.0, 2.0, 3.0], [1.0] * 4, [1.0] * 4]


EXIT_WITH_QUEUED = """
import time
import numpy as np
import eagle
b = eagle.backend("cpu")
def slow():
    time.sleep(0.05)
    np.zeros(100).sum()
s = None if WHERE == "default" else b.stream(non_blocking=WHERE == "non_blocking")
for _ in range(5):
    b.host_func(slow, stream=s)   # still queued or running when the interpreter exits
"""


@pytest.mark.parametrize("where", ["default", "blocking", "non_blocking"])
@pytest.mark.parametrize("run", range(6))
def test_interpreter_exit_with_host_functions_queued_does_not_crash(run, where):
    out = run_snippet(EXIT_WITH_QUEUED, globals={"WHERE": where}, timeout=60)
    out.expect_ok()


@pytest.mark.parametrize("where", ["this thread", "a thread that ended"])
def test_exit_with_a_host_function_that_never_returns_ends_after_the_drain(where):
    """A host function blocked for good (an Event never set) on an eagle stream: the process
    exits once eagle's exit drain gives up (made 1 s here), instead of hanging in the stream's
    release, which waits for the stream's work."""
    out = run_snippet("""
        import threading
        import eagle
        from eagle._inflight import exit as inflight_exit
        inflight_exit._DRAIN_AT_EXIT_S = 1.0
        cpu = eagle.backend("cpu")
        never = threading.Event()
        streams = []
        def make():
            s = cpu.stream()
            s.host_func(never.wait)
            streams.append(s)
        if WHERE == "this thread":
            make()
        else:
            t = threading.Thread(target=make)
            t.start()
            t.join()
        result = "queued"
    """, timeout=40, globals={"WHERE": where})
    out.expect_ok()
    assert out.seconds < 30, out.describe()


def test_a_dropped_stream_lets_go_of_the_arrays_of_its_work():
    """Eager calls on a stream, the second while the first's release marker is in flight (its
    arrays wait with the stream), then the stream is dropped: its release waits for its work, and
    the arrays go with it (they used to stay held for good)."""
    out = run_snippet("""
        import gc, weakref
        import eagle
        from eagle._inflight import holds
        cpu = eagle.backend("cpu")
        mod = eagle.compile("#include <eagle/kernel.h>\\nEAGLE_KERNEL(add, (double*, x), (double, v)) "
                            "{ (void)n; x[i] += v; }", backend=cpu)
        refs = []
        for _ in range(50):
            s = cpu.stream()
            a = eagle.zeros(1 << 12, backend=cpu)
            refs.append(weakref.ref(a))
            s.run(mod.add, [a, 1.0], 1 << 12)
            s.run(mod.add, [a, 1.0], 1 << 12)
            del a, s
        gc.collect()
        cpu.stream().synchronize()  # an eagle call: this thread's attention list is swept
        gc.collect()
        alive = sum(r() is not None for r in refs)
        streams = holds.streams_of(cpu)
        assert alive == 0 and not streams, (alive, len(streams))
        result = "ok"
    """, timeout=60)
    out.expect_ok()
