"""An interrupted wait stops the drained work it was for (issue 42).

A drain that would run for a minute is enqueued (ActiveSet.drain on a stream, the same drain
recorded in a graph, a graph's WHILE of compact + drain, an eagle.ode solve); a signal lands while
the main thread waits for it. The wait must raise the handler's exception within 1 s, the next
run of the same object must start at once (it is timed: well under a second), and the process
must exit within 2 s of its last line: the interrupted work stopped (eagle/kernel.h's cancel
word, eagle/_inflight/cancel.py), it is not waited for at exit. Work whose wait was not
interrupted is never stopped: a drain on another stream, waited for afterwards, finishes.

Each case runs in its own interpreter (tests/_subproc.py); the exit is timed from this process
(CLOCK_MONOTONIC is the same in both)."""
import time

import pytest

from _subproc import run_snippet

PROMPT = 1.0   # seconds from the signal to the exception
NEXT = 1.0     # seconds the next run of the same object may take (its own work: milliseconds)
EXIT = 2.0     # seconds from the snippet's last line to the process's end

PRELUDE = r'''
import os, signal, threading, time
import numpy as np
import eagle

b = eagle.backend(KIND)
mod = eagle.compile("""
#include <eagle/kernel.h>
/* one round: x[i] += 1; the sample is done at `goal` */
EAGLE_KERNEL(adv, (double*, x), (uint8_t*, m), (double, goal)) { (void)n; x[i] += 1.0; if (x[i] >= goal) m[i] = 1; }
""", backend=b, kernels=["adv", "adv_drain"], name="stops.c")


class Alarm(Exception):
    pass


def on_alarm(signum, frame):
    raise Alarm("the alarm went off")


signal.signal(signal.SIGALRM, on_alarm)
fired = []


def send_later(sig, after=0.5):
    def send():
        fired.append(time.monotonic())
        os.kill(os.getpid(), sig)
    t = threading.Timer(after, send)
    t.daemon = True
    t.start()


def interrupted(wait):
    send_later(signal.SIGALRM if SIG == "alarm" else signal.SIGINT)
    try:
        wait()
        return None, None
    except (KeyboardInterrupt, Alarm) as e:
        return type(e).__name__, time.monotonic() - fired[0]


N = 64
FOREVER = 1e15   # rounds: far more than a minute of work
'''

DRAIN = PRELUDE + r'''
x = eagle.zeros(N, backend=b)
m = eagle.zeros(N, "uint8", backend=b)
a = eagle.ActiveSet(m, backend=b)
s = b.stream()
if HOW == "stream":
    a.drain(s, mod.adv_drain, [x, m, FOREVER], int(FOREVER), compacted=False)
    wait = s.synchronize
elif HOW == "graph":
    g = eagle.Graph.build([lambda st: a.drain(st, mod.adv_drain, [x, m, FOREVER], int(FOREVER), compacted=False)],
                          planes=[x, m], stream=s)
    g.launch()
    wait = g.synchronize
else:  # compact, then a WHILE of (a drain of a few rounds, compact) that would run 2**31 iterations
    body = [lambda st: a.drain(st, mod.adv_drain, [x, m, FOREVER], 100000), a]
    g = eagle.Graph.build([a, eagle.repeat_while(body, a.guard, max_iters=2**31)], planes=[x, m], stream=s)
    g.launch()
    wait = g.synchronize
raised, late = interrupted(wait)
# the next run of the same ActiveSet (and stream): a short drain, from fresh samples
t0 = time.monotonic()
b.copy(m, np.zeros(N, np.uint8))
y = eagle.zeros(N, backend=b)
a.drain(s, mod.adv_drain, [y, m, 1000.0], 5000, compacted=False)
s.synchronize()
next_s = time.monotonic() - t0
result = {"raised": raised, "late": late, "next": next_s, "y": sorted(set(y.numpy().tolist())),
          "end": time.monotonic()}
'''


def _run(snippet, env=None, **globals_):
    globals_.setdefault("KIND", "cpu")
    out = run_snippet(snippet, globals=globals_, env={"EAGLE_EXIT_WAIT_S": "30", **(env or {})}, timeout=120)
    ended = time.monotonic()
    res = out.expect_ok()
    return out, res, ended - res["end"]


@pytest.mark.parametrize("how,sig", [("stream", "sigint"), ("while", "sigint"),
                                     pytest.param("graph", "sigint", marks=pytest.mark.slow),
                                     pytest.param("stream", "alarm", marks=pytest.mark.slow),
                                     pytest.param("graph", "alarm", marks=pytest.mark.slow),
                                     pytest.param("while", "alarm", marks=pytest.mark.slow)])
def test_an_interrupted_drain_stops_and_the_next_starts_at_once(how, sig):
    out, res, exit_s = _run(DRAIN, HOW=how, SIG=sig)
    assert res["raised"] == ("Alarm" if sig == "alarm" else "KeyboardInterrupt"), out.describe()
    assert res["late"] < PROMPT, f"the wait ended {res['late']:.2f} s after the signal; {out.describe()}"
    assert res["next"] < NEXT, f"the next drain took {res['next']:.2f} s: the interrupted one still ran"
    assert res["y"] == [1000.0], out.describe()  # the next drain ran whole: not cancelled
    assert exit_s < EXIT, f"the process took {exit_s:.2f} s to exit; {out.describe()}"
    assert "had not finished" not in out.stderr, out.describe()


@pytest.mark.slow
def test_an_interrupted_drain_stops_on_a_traced_backend_too():
    # EAGLE_TRACE_CALLS=1: the waits are the cffi path's (eagle/_hotcall: py_bound_call)
    out, res, exit_s = _run(DRAIN, env={"EAGLE_TRACE_CALLS": "1"}, HOW="stream", SIG="sigint")
    assert res["raised"] == "KeyboardInterrupt" and res["late"] < PROMPT, out.describe()
    assert res["next"] < NEXT and res["y"] == [1000.0], out.describe()
    assert exit_s < EXIT, f"the process took {exit_s:.2f} s to exit; {out.describe()}"


@pytest.mark.gpu
@pytest.mark.parametrize("how", ["stream", "graph", "while"])
def test_an_interrupted_drain_stops_on_cuda(cuda, how):
    # cuda's drain reads the cancel word once a round per warp; the word is set by a copy on a
    # stream of its own, which runs beside the drain. (opencl's drain reads it too, but PoCL's cpu
    # device runs that copy only once a worker thread is free: with every worker in the drain it
    # lands when the drain ends, and the exit waits as for any running work: not tested here.)
    out, res, exit_s = _run(DRAIN, HOW=how, SIG="sigint", KIND="cuda")
    assert res["raised"] == "KeyboardInterrupt" and res["late"] < PROMPT, out.describe()
    assert res["next"] < NEXT, f"the next drain took {res['next']:.2f} s: the interrupted one still ran"
    assert res["y"] == [1000.0], out.describe()
    assert exit_s < EXIT, f"the process took {exit_s:.2f} s to exit; {out.describe()}"


OTHER = PRELUDE + r'''
# two ActiveSets on two streams: only the one whose wait is interrupted stops
x1, m1 = eagle.zeros(N, backend=b), eagle.zeros(N, "uint8", backend=b)
x2, m2 = eagle.zeros(N, backend=b), eagle.zeros(N, "uint8", backend=b)
a1, a2 = eagle.ActiveSet(m1, backend=b), eagle.ActiveSet(m2, backend=b)
s1, s2 = b.stream(), b.stream()
goal = 1e7   # a second or two of rounds here: still running when the signal lands
a2.drain(s2, mod.adv_drain, [x2, m2, goal], int(goal) + 10, compacted=False)
a1.drain(s1, mod.adv_drain, [x1, m1, FOREVER], int(FOREVER), compacted=False)
raised, late = interrupted(s1.synchronize)
running = int(np.from_dlpack(m2).sum()) < N if KIND == "cpu" else True   # host memory: read as it runs
s2.synchronize()
result = {"raised": raised, "late": late, "running": running, "x2": sorted(set(x2.numpy().tolist())),
          "m2": int(m2.numpy().sum()), "end": time.monotonic()}
'''


def test_work_whose_wait_was_not_interrupted_runs_to_its_end():
    out, res, exit_s = _run(OTHER, SIG="sigint")
    assert res["raised"] == "KeyboardInterrupt" and res["late"] < PROMPT, out.describe()
    assert res["running"], f"the other drain had ended before the signal: this checks nothing ({res})"
    assert res["x2"] == [1e7] and res["m2"] == 64, f"the drain nobody interrupted was stopped: {res}"
    assert exit_s < EXIT, f"the process took {exit_s:.2f} s to exit; {out.describe()}"


ODE = PRELUDE + r'''
import eagle.ode

def vdp(t, y, mu):
    return [y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]]

S = eagle.ode.Solver(vdp, t_span=(0.0, 30.0), n_state=2, n_args=1, rtol=1e-8, atol=1e-10, max_steps=2**31 - 2,
                     backend=b, progress=False)
y0 = np.tile([2.0, 0.0], (N, 1))
S.solve(y0, (np.full(N, 1.0),))          # compiled; a short solve
raised, late = interrupted(lambda: S.solve(y0, (np.full(N, 1e6),)))   # stiff: minutes of steps
t0 = time.monotonic()
sol = S.solve(y0, (np.full(N, 1.0),))
next_s = time.monotonic() - t0
result = {"raised": raised, "late": late, "next": next_s, "status": sorted(set(np.asarray(sol.status).tolist())),
          "end": time.monotonic()}
'''


def test_an_interrupted_ode_solve_stops_and_the_same_solver_solves_again_at_once():
    out, res, exit_s = _run(ODE, SIG="sigint")
    assert res["raised"] == "KeyboardInterrupt", out.describe()
    assert res["late"] < PROMPT, f"the solve raised {res['late']:.2f} s after the signal"
    assert res["next"] < NEXT, f"the next solve took {res['next']:.2f} s: the interrupted one still ran"
    assert res["status"] == [0], out.describe()
    assert exit_s < EXIT, f"the process took {exit_s:.2f} s to exit; {out.describe()}"
