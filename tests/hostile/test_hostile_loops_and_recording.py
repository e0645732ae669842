"""Loops that run out say so, and a step being recorded refuses eager calls.

Before: a ``repeat_while`` that hit ``max_iters``, or a drain that hit ``rounds``, left its
unfinished samples with mask 0 and said nothing; an eager ``eagle.run`` / ``eagle.copy`` (no
``stream=``) inside a ``Graph.build`` step ran once while the graph was built and was missing from
every replay, silently. Each case runs in a fresh interpreter."""
import pytest

from _subproc import run_snippet

PRELUDE = r'''
import warnings
import numpy as np, eagle
cpu = eagle.backend(PATH)
m = eagle.compile("""
#include <eagle/kernel.h>
EAGLE_KERNEL(halve, (double*, x), (uint8_t*, done)) { (void)n; x[i] *= 0.5; done[i] = x[i] < 1.0; }
EAGLE_KERNEL(bump, (double*, x)) { (void)n; x[i] += 1.0; }
""", backend=cpu)
n = 16
'''


def _run(body, path):
    return run_snippet(PRELUDE + body, globals={"PATH": path})


@pytest.mark.parametrize("on_device", [None, False])
def test_a_repeat_while_that_runs_out_warns_naming_the_loop_and_the_samples_left(cpu_backend_path, on_device):
    out = _run(f"""
x = np.full(n, 1000.0)
x[:4] = 1.5                      # these finish in one step; twelve need ten steps
mask = np.zeros(n, np.uint8)
aset = eagle.ActiveSet(mask)
step = lambda s: s.run(m.halve_active, [x, mask, aset.index_map, aset.count], n)
loop = eagle.repeat_while([step, aset], aset, max_iters=3, name="halving")
g = eagle.Graph.build([aset, loop], planes=[x, mask], on_device={on_device})
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    g()
result = [[type(w.message).__name__, str(w.message), issubclass(w.category, UserWarning)] for w in seen]
""", cpu_backend_path)
    (name, message, is_user_warning), = out.expect_ok()
    assert name == "RanOutWarning" and is_user_warning
    assert "'halving'" in message and "max_iters=3" in message and "12 samples still live" in message


def test_a_loop_that_ends_by_its_guard_says_nothing(cpu_backend_path):
    out = _run("""
x = np.full(n, 4.0)
mask = np.zeros(n, np.uint8)
aset = eagle.ActiveSet(mask)
step = lambda s: s.run(m.halve_active, [x, mask, aset.index_map, aset.count], n)
g = eagle.Graph.build([aset, eagle.repeat_while([step, aset], aset, max_iters=3)], planes=[x, mask])
with warnings.catch_warnings():
    warnings.simplefilter("error")
    g()
result = x.tolist()
""", cpu_backend_path)
    assert out.expect_ok() == [0.5] * 16  # 4 -> 2 -> 1 -> 0.5: done on the third, the last allowed


def test_a_drain_that_runs_out_of_rounds_warns_with_the_count_left(cpu_backend_path):
    out = _run("""
x = np.full(n, 1000.0)
x[:6] = 1.5
mask = np.zeros(n, np.uint8)
aset = eagle.ActiveSet(mask)
s = cpu.stream()
aset.compact(s)
aset.drain(s, m.halve_drain, [x, mask], 2)
aset.compact(s)
s.synchronize()
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    live = aset.live
result = [live, [str(w.message) for w in seen if w.category is eagle.RanOutWarning]]
""", cpu_backend_path)
    live, messages = out.expect_ok()
    assert live == 10 and len(messages) == 1
    assert "halve_drain" in messages[0] and "rounds=2" in messages[0] and "10 samples" in messages[0]


@pytest.mark.parametrize("call,what", [
    ("eagle.run(m.bump, [x], n)", "eagle.run"),
    ("m.bump.run([x], n)", "eagle.run"),
    ("cpu.run(m.bump, [x], n)", "eagle.run"),
    ("eagle.copy(x, y)", "eagle.copy"),
])
def test_an_eager_call_inside_a_recorded_step_is_refused_naming_the_stream(cpu_backend_path, call, what):
    out = _run(f"""
x, y = np.zeros(n), np.ones(n)
def careless(s):
    {call}
eagle.Graph.build([careless], planes=[x])
""", cpu_backend_path)
    out.expect_no_crash()
    out.expect_raises("EagleValueError", match=[what, "Graph.build records step 'careless'", "stream="])


def test_the_same_call_on_the_step_stream_is_recorded_and_replayed(cpu_backend_path):
    out = _run("""
x = np.zeros(n)
g = eagle.Graph.build([lambda s: eagle.run(m.bump, [x], n, stream=s)], planes=[x])
g()
g()
eagle.run(m.bump, [x], n)   # eager again once the build is over
result = x.tolist()
""", cpu_backend_path)
    assert out.expect_ok() == [3.0] * 16
