"""Careless and hostile inputs to eagle's Python API on the cpu backend (issue 14): each case runs in
a fresh interpreter, so a crash or a hang is a failing test; every refusal must be an EagleError
(subclassing the matching builtin), and nothing is written to memory the caller did not offer."""
import pytest

from _subproc import run_snippet

SETUP = """
import gc, mmap, threading
import numpy as np
import eagle
cpu = eagle.backend("cpu")
s = cpu.stream()
x, y = np.zeros(4), np.ones(4)
"""

# (id, snippet, expected exception class name or None for "runs and is right")
REFUSED = [
    ("read-only destination", "x = np.zeros(4); x.setflags(write=False); s.copy(x, np.ones(4))",
     "EagleValueError"),
    ("immutable bytes destination", "x = np.frombuffer(bytes(32)); s.copy(x, np.ones(4))", "EagleValueError"),
    ("read-only mapping", "m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ); x = np.frombuffer(m, np.float64)\n"
                          "s.copy(x, np.ones(512))", "EagleValueError"),
    ("a string as a kernel", "s.run('add1', [np.zeros(4)], 4)", "EagleTypeError"),
    ("True as an address", "s.copy(True, np.ones(4), 32, direction='h2h')", "EagleTypeError"),
    ("a fractional nbytes", "s.copy(np.zeros(4), np.ones(4), 2.9)", "EagleTypeError"),
    ("a negative nbytes", "s.copy(np.zeros(4), np.ones(4), -8)", "EagleValueError"),
    ("a huge nbytes", "s.copy(np.zeros(4), np.ones(4), 1 << 70)", "EagleValueError"),
    ("a float guard word", "eagle.Graph.build([eagle.repeat_while([lambda st: None], np.array([3.0]), 4)],"
                           " backend=cpu)", "EagleTypeError"),
    ("an interface that claims 200 MB over 8 bytes",
     "buf = np.zeros(1)\n"
     "class Liar:\n"
     "    __array_interface__ = {'data': (buf.ctypes.data, False), 'shape': (25_000_000,),"
     " 'typestr': '<f8', 'version': 3}\n"
     "s.copy(np.zeros(25_000_000), Liar())", "EagleValueError"),
    ("a malformed interface", "class Bad:\n    __array_interface__ = {'shape': (4,)}\ns.copy(np.zeros(4), Bad())",
     "EagleTypeError"),
    ("a list as an ActiveSet plane", "eagle.ActiveSet(np.zeros(4, np.uint8), 0.5, planes=[[1, 2, 3, 4]])",
     "EagleTypeError"),
    ("a dtype that is none", "eagle.pinned(4, 'no such dtype', backend=cpu)", "EagleTypeError"),
    ("a negative shape", "eagle.pinned((-1,), backend=cpu)", "EagleValueError"),
    ("a shape too large", "eagle.pinned((1 << 40, 1 << 30), backend=cpu)", "EagleValueError"),
    ("a string stream", "eagle.copy(np.zeros(4), np.ones(4), stream='fast')", "EagleTypeError"),
    ("args not a list", "s.run(1, np.zeros(4), 4)", "EagleTypeError"),
    # the words of constructs, refused when the construct is made: the host-decided path used to
    # read the first 4 bytes of whatever it got (a float64 selector 1.0 ran case 0)
    ("a float selector, host-decided", "y = np.zeros(4)\n"
     "eagle.Graph.build([eagle.switch(np.ones(1), [lambda st: None])], planes=[y], on_device=False)",
     "EagleTypeError"),
    ("a one-byte selector", "eagle.switch(np.zeros(1, np.uint8), [lambda st: None])", "EagleValueError"),
    ("an empty guard word", "eagle.skippable(lambda st: None, np.zeros(0, np.uint32))", "EagleValueError"),
    ("an array as planes=", "y = np.zeros(4); eagle.Graph.build([lambda st: None], planes=y)", "EagleTypeError"),
    ("an int as the graph's stream", "eagle.Graph.build([lambda st: None], planes=[np.zeros(4)], stream=0)",
     "EagleTypeError"),
    ("a member index out of range", "g = eagle.Graph.build([lambda st: st.copy(x, y)], planes=[x]); g.member(5)",
     "EagleKeyError"),
    ("True as a member index", "g = eagle.Graph.build([lambda st: st.copy(x, y)], planes=[x]); g.member(True)",
     "EagleKeyError"),
    ("ran() of a loop not in the graph", "g = eagle.Graph.build([lambda st: st.copy(x, y)], planes=[x])\n"
     "g.ran(eagle.repeat_while([lambda st: None], np.zeros(1, np.uint32), 4))", "EagleKeyError"),
    ("a stream code past int64", "eagle.fence(2**63, 0)", "EagleValueError"),
    ("a kind name as a DLPack device type", "eagle.fence(1, 2, device_type='cpu')", "EagleTypeError"),
    ("a negative fence device", "eagle.fence(1, 2, device_type=1, device_id=-3)", "EagleValueError"),
    ("a str as a stream's device", "cpu.stream('0')", "EagleTypeError"),
    ("a stream's device past int32", "cpu.stream(1 << 40)", "EagleValueError"),
    ("launch(-1), host-decided", "g = eagle.Graph.build([lambda st: None], backend=cpu, on_device=False)\n"
     "g.launch(-1)", "EagleValueError"),
]


@pytest.mark.parametrize("code,expected", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_hostile_input_is_refused_with_an_eagle_error(code, expected):
    out = run_snippet(SETUP + code, timeout=60)
    out.expect_no_crash()
    out.expect_raises(expected)
    assert out.eagle_error, out.describe()


def test_the_readme_taste_is_right_under_memory_pressure():
    """s.copy from a temporary, allocations in between, then synchronize: x holds the copy, 1000
    times (the stream holds the temporary until its copy has run)."""
    out = run_snippet(SETUP + """
bad = 0
for i in range(1000):
    x = np.zeros(4096)
    s.copy(x, np.arange(4096.0) + i)
    junk = [np.full(4096, -1.0) for _ in range(4)]   # would reuse the temporary's memory
    del junk
    gc.collect() if i % 100 == 0 else None
    s.synchronize()
    bad += not np.array_equal(x, np.arange(4096.0) + i)
result = bad
""", timeout=120)
    assert out.expect_ok() == 0


def test_a_large_temporary_freed_before_synchronize_is_kept():
    out = run_snippet(SETUP + """
x = np.zeros(1 << 22)
for i in range(20):
    s.copy(x, np.full(1 << 22, float(i)))   # the temporary is gone at once on the Python side
    _ = [np.empty(1 << 22) for _ in range(3)]
s.synchronize()
result = float(x[0]) + float(x[-1])
""", timeout=120)
    assert out.expect_ok() == 38.0


def test_with_no_stream_a_copy_is_done_when_it_returns():
    out = run_snippet(SETUP + """
bad = 0
for i in range(300):
    x = np.zeros(1000)
    eagle.copy(x, np.full(1000, float(i)))
    bad += int(x.sum() != 1000.0 * i)
result = bad
""")
    assert out.expect_ok() == 0


def test_a_host_function_error_is_raised_in_the_enqueuing_thread_only():
    out = run_snippet(SETUP + """
errors = {}
def worker(name, fail):
    st = cpu.stream()
    def fn():
        if fail:
            raise RuntimeError(name)
    for _ in range(50):
        st.host_func(fn)
        try:
            st.synchronize()
        except RuntimeError as e:
            errors.setdefault(name, []).append(str(e))
ts = [threading.Thread(target=worker, args=("A", True)), threading.Thread(target=worker, args=("B", False))]
[t.start() for t in ts]; [t.join() for t in ts]
result = {k: sorted(set(v)) for k, v in errors.items()}
""", timeout=120)
    assert out.expect_ok() == {"A": ["A"]}


def test_a_backend_dropped_with_a_host_function_queued_does_not_crash():
    out = run_snippet(SETUP + """
import time
from eagle._backend import Backend
from eagle._loader import _resolve
kind, path, how = _resolve("cpu")
b = Backend(path, kind, how)
st = b.stream()
ran = []
st.host_func(lambda: (time.sleep(0.05), ran.append(1)))
del st, b
gc.collect()
time.sleep(0.3)
result = ran
""")
    assert out.expect_ok() == [1]


def test_exit_with_host_functions_queued_on_the_default_stream_is_clean():
    for _ in range(10):
        out = run_snippet(SETUP + """
import time
for _ in range(20):
    eagle.host_func(lambda: time.sleep(0.001), stream=0, backend=cpu)
""")
        out.expect_ok()


@pytest.mark.parametrize("leave", ["close", "drop"])
def test_a_capture_left_open_does_not_keep_its_stream_capturing(leave):
    """A capture closed (close) or dropped in an exception (drop) between begin() and end(), with
    no `with`: the stream is an ordinary stream again, and eager work on it runs (it used to be
    treated as captured: its temporaries kept for good, or "the stream is being captured")."""
    out = run_snippet(SETUP + """
def left_open():
    cap = cpu.capture(s)
    cap.begin()
    s.copy(x, y * 2)
    if LEAVE == "close":
        cap.close()
    else:
        raise RuntimeError("a step failed")
try:
    left_open()
except RuntimeError:
    pass
gc.collect()
assert len(cpu._capturing) == 0, dict(cpu._capturing)
s.copy(x, y * 3)
s.synchronize()
assert (x == 3).all(), x
result = "ok"
""", timeout=60, globals={"LEAVE": leave})
    out.expect_ok()


@pytest.mark.parametrize("code", ["eagle.empty(1 << 58, 'uint8', backend=cpu)",
                                  "eagle.pinned(1 << 58, 'uint8', backend=cpu)"])
def test_an_allocation_that_cannot_be_had_is_an_out_of_memory_error(code):
    """The allocators' UNAVAILABLE means the memory is not there: EagleMemoryError (a
    MemoryError), naming the bytes, not BackendUnavailable ("install another backend")."""
    out = run_snippet(SETUP + code, timeout=60)
    out.expect_raises("EagleMemoryError", match=str(1 << 58))
    assert "builtins.MemoryError" in out.exc_mro, out.describe()
