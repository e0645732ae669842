"""A compiled module's lifetime against the launches of its kernels (cpu backend).

The contract (eagle/module.py, ``Module.close``): a kernel of a closed module refuses to launch
with HandleError; work already queued, and recordings already made, keep the module's code
loaded, so neither a close nor dropping the module unloads code they will still run; the code is
unloaded once nothing holds it (never at interpreter exit). And ``eagle.compile`` refuses a
single str where it takes a sequence of str. The crash cases run in a child interpreter
(tests/_subproc.py); unloads are counted there by tracing the seam (EAGLE_TRACE_CALLS)."""
import pytest

import eagle
from _subproc import run_snippet

SETUP = """
import gc, threading
import numpy as np
import eagle
from eagle._loader import TRACE_COUNTS
cpu = eagle.backend("cpu")
SRC = "#include <eagle/kernel.h>\\nEAGLE_KERNEL(k, (double*, v)) { (void)n; v[i] = 2; }\\n"

def compile_local():
    return eagle.compile(SRC, backend=cpu, name="lifetime.c", cache=False)

def unloads():
    return TRACE_COUNTS["eagle_backend_module_release"]

def blocked_stream():
    # a stream held behind a host function until ev.set(): what is enqueued next stays queued
    s = cpu.stream()
    ev = threading.Event()
    s.host_func(ev.wait)
    return s, ev
"""


def run_lifetime(code, **globals):
    return run_snippet(SETUP + code, env={"EAGLE_TRACE_CALLS": "1"}, globals=globals)


CLOSED_LAUNCHES = {
    "eagle.run": "eagle.run(k, [x], 4)",
    "eagle.run on a stream": "eagle.run(k, [x], 4, stream=cpu.stream())",
    "Stream.run": "cpu.stream().run(k, [x], 4)",
    "Kernel.run": "k.run([x], 4)",
    "Backend.run": "cpu.run(k, [x], 4)",
}


@pytest.mark.parametrize("launch", sorted(CLOSED_LAUNCHES))
def test_a_kernel_of_a_closed_module_refuses_to_launch_with_handle_error(cpu, launch):
    out = run_lifetime(f"""
m = compile_local()
k = m.k
m.close()
x = np.zeros(4)
{CLOSED_LAUNCHES[launch]}
""")
    out.expect_raises("HandleError", match=["kernel k", "lifetime.c", "closed"])


def test_a_closed_kernel_refuses_its_handle_and_a_closed_module_its_lookups(cpu):
    out = run_lifetime("""
m = compile_local()
k = m.k
m.close()
m.close()  # idempotent
result = []
for get in (lambda: k.handle, lambda: int(k), lambda: m.k, lambda: m["k"]):
    try:
        get()
        result.append("no error")
    except Exception as e:
        result.append(type(e).__name__)
result.append("closed" in repr(k))
""")
    assert out.expect_ok() == ["HandleError", "HandleError", "AttributeError", "EagleValueError", True]


def test_a_queued_launch_keeps_a_dropped_temporary_module_loaded(cpu):
    out = run_lifetime("""
s, ev = blocked_stream()
x = np.zeros(4)
s.run(compile_local().k, [x], 4)  # the module is a temporary: nothing of the caller's holds it
gc.collect()
held_while_queued = unloads() == 0
ev.set()
s.synchronize()
gc.collect()
result = [held_while_queued, x.tolist(), unloads()]
""")
    assert out.expect_ok() == [True, [2.0] * 4, 1]


def test_a_close_unloads_at_once_when_idle_else_after_the_queued_launch_has_run(cpu):
    out = run_lifetime("""
idle = compile_local()
eagle.run(idle.k, [np.zeros(4)], 4)  # no stream: done, and nothing held, when it returns
idle.close()
unloaded_at_once = unloads() == 1
m = compile_local()
k = m.k
s, ev = blocked_stream()
x = np.zeros(4)
s.run(k, [x], 4)
m.close()
try:
    s.run(k, [np.zeros(4)], 4)
    refused = False
except eagle.HandleError:
    refused = True
del m, k
gc.collect()
held_while_queued = unloads() == 1
ev.set()
s.synchronize()
gc.collect()
result = [unloaded_at_once, refused, held_while_queued, x.tolist(), unloads()]
""")
    assert out.expect_ok() == [True, True, True, [2.0] * 4, 2]


@pytest.mark.parametrize("on_device", [None, False], ids=["decided-on-device", "decided-on-host"])
@pytest.mark.parametrize("how", ["dropped", "closed"])
def test_a_graph_keeps_the_module_it_recorded_loaded(cpu, how, on_device):
    out = run_lifetime("""
x = np.zeros(4)
box = {}
def step(s):
    m = box["m"] = compile_local()
    s.run(m.k, [x], 4)
g = eagle.Graph.build([step], planes=[x], on_device=ON_DEVICE)
if HOW == "closed":
    box["m"].close()
del box["m"]
gc.collect()
g()
ran = x.tolist()
x[:] = 0
g()
ran_again = x.tolist()
held_by_graph = unloads() == 0
del g
gc.collect()
result = [ran, ran_again, held_by_graph, unloads()]
""", HOW=how, ON_DEVICE=on_device)
    assert out.expect_ok() == [[2.0] * 4, [2.0] * 4, True, 1]


@pytest.mark.parametrize("close", [False, True], ids=["open", "closed"])
def test_code_still_running_at_exit_is_not_unloaded_under_it(cpu, close):
    """A launch on the kind's default stream (Kernel.run with no stream) is still running when the
    interpreter exits: the module's code stays mapped until the process ends."""
    out = run_lifetime("""
SPIN = ("#include <eagle/kernel.h>\\nEAGLE_KERNEL(spin, (double*, v)) { (void)n; volatile double acc = 0; "
        "for (long j = 0; j < 100000000; ++j) acc += 1; v[i] = acc; }\\n")
m = eagle.compile(SPIN, backend=cpu, name="spin.c", cache=False)
m.spin.run([np.zeros(1)], 1)  # a few tenths of a second: the interpreter exits meanwhile
if CLOSE:
    m.close()
""", CLOSE=close)
    out.expect_ok()


SRC = "#include <eagle/kernel.h>\nEAGLE_KERNEL(k, (double*, v)) { (void)n; v[i] = 2; }\n"


@pytest.mark.parametrize("param, value", [("options", "-O2"), ("kernels", "k"), ("include_dirs", "/usr/include")])
def test_compile_refuses_a_single_str_where_it_takes_a_sequence(cpu, param, value):
    with pytest.raises(eagle.EagleTypeError, match=rf"eagle.compile: {param} must be a sequence of str.*\[{value!r}\]"):
        eagle.compile(SRC, backend=cpu, cache=False, **{param: value})


def test_compile_refuses_a_lone_path_a_non_sequence_and_non_str_items_but_takes_sequences(cpu, tmp_path):
    with pytest.raises(eagle.EagleTypeError, match="include_dirs must be a sequence of str, got a single PosixPath"):
        eagle.compile(SRC, backend=cpu, cache=False, include_dirs=tmp_path)
    with pytest.raises(eagle.EagleTypeError, match="options must be a sequence of str, got a int"):
        eagle.compile(SRC, backend=cpu, cache=False, options=2)
    with pytest.raises(eagle.EagleTypeError, match="kernels must be a sequence of str, got an item of type bytes"):
        eagle.compile(SRC, backend=cpu, cache=False, kernels=[b"k"])
    m = eagle.compile(SRC, backend=cpu, cache=False, kernels=("k",), include_dirs=[tmp_path], options=["-O2"])
    assert m.k.params == ("v",)


def test_load_image_refuses_a_single_str_of_kernel_names(cpu):
    from test_api_kernels import c_kernels
    with pytest.raises(eagle.EagleTypeError, match=r"eagle.load_image: kernels must be a sequence of str.*\['add1'\]"):
        eagle.load_image(c_kernels()._name, backend=cpu, kernels="add1")
