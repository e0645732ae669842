"""Waits that can be interrupted (issue 28, seam minor 8: eagle_backend_stream_query and
eagle_backend_launcher_query).

A kernel that never ends is enqueued; a signal arrives while the main thread waits for it. Every
wait (Stream.synchronize, Graph/Launcher.synchronize, eagle's own-stream wait of an eager call,
Stream.close) must raise the signal handler's exception (KeyboardInterrupt for SIGINT, the
handler's own for SIGALRM) within 1 s, leaving the process usable: a new stream runs work and
gives the right answer. The interrupted stream stays busy with the kernel; at exit eagle waits
for it at most $EAGLE_EXIT_WAIT_S seconds and then ends without releasing it (no hang, no crash).

Each case runs in its own interpreter (tests/_subproc.py). The same cases run on cuda (marked
gpu) where a device is there."""
import pytest

from _subproc import run_snippet

PROMPT = 1.0  # seconds from the signal to the exception

SNIPPET = r'''
import os, signal, threading, time
import numpy as np
import eagle

SRC = """
#include <eagle/kernel.h>
/* never ends: x stays 0 */
EAGLE_KERNEL(forever, (double*, x)) { (void)n; volatile double* v = x; while (v[i] >= 0.0) {} }
EAGLE_KERNEL(axpb, (double*, y), (double, a), (double, b)) { (void)n; y[i] = y[i] * a + b; }
"""
b = eagle.backend(KIND)
mod = eagle.compile(SRC, backend=b, name="waits.c")
x = eagle.zeros(4, backend=b)


class Alarm(Exception):
    pass


def on_alarm(signum, frame):
    raise Alarm("the alarm went off")


signal.signal(signal.SIGALRM, on_alarm)
fired = []


def send_later(sig, after=0.4):
    def send():
        fired.append(time.monotonic())
        os.kill(os.getpid(), sig)
    t = threading.Timer(after, send)
    t.daemon = True
    t.start()


s = b.stream()
if HOW == "graph":
    g = eagle.Graph.build([lambda st: st.run(mod.forever, [x], 4)], planes=[x], stream=s)
    g.launch()
    wait = g.synchronize
elif HOW == "eager":   # eagle's own stream: the call waits for its work
    wait = lambda: eagle.run(mod.forever, [x], 4)
elif HOW == "close":
    s.run(mod.forever, [x], 4)
    wait = s.close
else:
    s.run(mod.forever, [x], 4)
    wait = s.synchronize
send_later(signal.SIGALRM if SIG == "alarm" else signal.SIGINT)
try:
    wait()
    raised = None
except KeyboardInterrupt:
    raised = "KeyboardInterrupt"
except Alarm:
    raised = "Alarm"
late = time.monotonic() - fired[0] if fired else None

# the process is usable: a new stream runs work and gives the right answer
s2 = b.stream()
y = eagle.asarray(np.arange(4.0), backend=b)
s2.run(mod.axpb, [y, 2.0, 1.0], 4)
s2.synchronize()
s2.close()
result = {"raised": raised, "late": late, "y": y.numpy().tolist(),
          "old_stream_open": not s.closed}
'''


def _check(out, sig):
    res = out.expect_ok()
    assert res["raised"] == ("Alarm" if sig == "alarm" else "KeyboardInterrupt"), out.describe()
    assert res["late"] is not None and res["late"] < PROMPT, f"the wait ended {res['late']} s after the signal"
    assert res["y"] == [1.0, 3.0, 5.0, 7.0], out.describe()
    return res


HOWS = ["stream", "graph", "eager", "close"]


@pytest.mark.parametrize("sig", ["sigint", "alarm"])
@pytest.mark.parametrize("how", HOWS)
def test_a_wait_for_a_kernel_that_never_ends_is_interrupted_and_the_process_goes_on(how, sig):
    out = run_snippet(SNIPPET, globals={"KIND": "cpu", "HOW": how, "SIG": sig},
                      env={"EAGLE_EXIT_WAIT_S": "0.5"}, timeout=60)
    res = _check(out, sig)
    if how == "close":  # an interrupted close leaves the stream open: it can be waited for again
        assert res["old_stream_open"], out.describe()
    # and the exit did not wait for the kernel that never ends beyond its bound
    assert "had not finished" in out.stderr, out.describe()


@pytest.mark.gpu
@pytest.mark.parametrize("how", HOWS)
def test_a_wait_for_a_cuda_kernel_that_never_ends_is_interrupted(cuda, how):
    out = run_snippet(SNIPPET, globals={"KIND": "cuda", "HOW": how, "SIG": "sigint"},
                      env={"EAGLE_EXIT_WAIT_S": "0.5"}, timeout=120)
    _check(out, "sigint")


def test_a_wait_on_another_thread_still_blocks_until_the_work_is_done():
    # Python runs signal handlers on the main thread only: other threads wait as before (blocking)
    out = run_snippet(r'''
        import threading, numpy as np, eagle
        b = eagle.backend("cpu")
        mod = eagle.compile("""
        #include <eagle/kernel.h>
        EAGLE_KERNEL(slow, (double*, y)) { (void)n; for (long k = 0; k < 20000000L; ++k) y[i] += 1e-7; }
        """, backend=b, name="slow.c")
        got = []
        def work():
            s = b.stream()
            y = eagle.zeros(2, backend=b)
            s.run(mod.slow, [y], 2)
            s.synchronize()
            got.append(np.from_dlpack(y).round(6).tolist())
        t = threading.Thread(target=work)
        t.start(); t.join()
        result = got
    ''', timeout=120)
    assert out.expect_ok() == [[2.0, 2.0]], out.describe()


@pytest.mark.parametrize("blocking", [None, "1"])
def test_waits_poll_the_query_where_the_backend_has_it(blocking):
    # EAGLE_WAIT_BLOCKING=1 asks for the blocking synchronize (no polling)
    out = run_snippet(r'''
        import eagle
        b = eagle.backend("cpu")
        s = b.stream()
        g_sync = s.synchronize.__self__ if hasattr(s.synchronize, "__self__") else s.synchronize
        result = [b.provides("eagle_backend_stream_query"), b.provides("eagle_backend_launcher_query"),
                  bool(getattr(g_sync, "interruptible", False))]
    ''', env={"EAGLE_WAIT_BLOCKING": blocking})
    assert out.expect_ok() == [True, True, blocking is None], out.describe()


def test_dropping_a_stream_whose_kernel_never_ends_does_not_hang_the_collector():
    # the release of a stream waits for its work: a dropped busy one is parked after 1 s instead
    # (released once its work is done, or left at exit), and the next stream is not held up
    out = run_snippet(r'''
        import gc, time, numpy as np, eagle
        b = eagle.backend("cpu")
        mod = eagle.compile("""
        #include <eagle/kernel.h>
        EAGLE_KERNEL(forever, (double*, x)) { (void)n; volatile double* v = x; while (v[i] >= 0.0) {} }
        EAGLE_KERNEL(inc, (double*, y)) { (void)n; y[i] += 1.0; }
        """, backend=b, name="drop.c")
        x = eagle.zeros(4, backend=b)
        s = b.stream()
        s.run(mod.forever, [x], 4)
        t0 = time.monotonic()
        del s
        gc.collect()
        dropped = time.monotonic() - t0
        s2 = b.stream()
        y = eagle.zeros(4, backend=b)
        s2.run(mod.inc, [y], 4)
        s2.synchronize()
        result = {"dropped": dropped, "y": y.numpy().tolist()}
    ''', env={"EAGLE_EXIT_WAIT_S": "0.5"}, timeout=60)
    res = out.expect_ok()
    assert res["dropped"] < 5.0, out.describe()
    assert res["y"] == [1.0] * 4, out.describe()
    assert "had not finished" in out.stderr, out.describe()


FREES_SNIPPET = r'''
import gc, os, signal, threading
import numpy as np
import eagle
from eagle import _hotcall
from eagle._inflight import releases

b = eagle.backend("cpu")
mod = eagle.compile("""
#include <eagle/kernel.h>
/* runs until the host writes a negative number into x */
EAGLE_KERNEL(until_told, (double*, x)) { (void)n; volatile double* v = x; while (v[i] >= 0.0) {} }
""", backend=b, name="until_told.c")
x = eagle.zeros(4, backend=b)
s = b.stream()
s.run(mod.until_told, [x], 4)
threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
try:
    s.synchronize()
    raised = False
except KeyboardInterrupt:
    raised = True
noted = len(_hotcall.INTERRUPTED)
y = eagle.zeros(8, backend=b)
del y
gc.collect()
put_off = len(releases.parked_frees)        # the free waits for the interrupted work
np.from_dlpack(x)[:] = -1.0                   # the kernel ends
s.synchronize()
z = eagle.zeros(8, backend=b)
del z                                         # this free makes the put-off one first
gc.collect()
result = {"raised": raised, "noted": noted, "put_off": put_off,
          "left": len(releases.parked_frees), "still_noted": len(_hotcall.INTERRUPTED)}
'''


def test_frees_wait_for_the_work_an_interrupted_wait_left():
    # on cuda a free synchronizes the device: after Ctrl-C of a kernel that never ends, freeing any
    # array would hang its finalizer, so frees are put off until that work has finished
    out = run_snippet(FREES_SNIPPET, timeout=60)
    res = out.expect_ok()
    assert res["raised"] and res["noted"] == 1, out.describe()
    assert res["put_off"] == 1, out.describe()
    assert res["left"] == 0 and res["still_noted"] == 0, out.describe()
