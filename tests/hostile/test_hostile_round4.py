"""Round 4 of the careless and hostile user (issue 42), outside eagle.ode: crashes, silent wrong
answers and untyped errors. Each case runs in its own interpreter (tests/_subproc.py), so a crash
is a failing test with a reason; each must end with the right answer or an eagle error naming the
problem."""
import pytest

from _subproc import run_snippet

PRE = r'''
import gc, numpy as np, eagle
b = eagle.backend("cpu")
SRC = """
#include <eagle/kernel.h>
EAGLE_KERNEL(inc, (double*, y)) { (void)n; y[i] += 1.0; }
"""
'''


# -- crashes ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["np.float64(2.5)", pytest.param("np.array(2.5)", marks=pytest.mark.slow),
                                   pytest.param("np.float32(2.5)", marks=pytest.mark.slow)])
def test_mean_var_of_one_value_is_that_value(value):
    out = run_snippet(PRE + f"r = eagle.mean_var({value})\nresult = [r.mean, r.n]")
    assert out.expect_ok() == [2.5, 1], out.describe()


@pytest.mark.slow
def test_mean_var_reads_a_read_only_plane_and_checks_its_launch():
    out = run_snippet(PRE + r'''
x = np.arange(6.0).reshape(2, 3); x.setflags(write=False)
r = eagle.mean_var(x)
from eagle import reduce
k = reduce._kernel(b, 0, np.dtype("float64"))
result = [r.mean, r.n, list(k.params)]
''')
    assert out.expect_ok() == [2.5, 6, ["x", "size", "lanes", "block", "part"]], out.describe()


@pytest.mark.parametrize("how", ["dropped", pytest.param("closed", marks=pytest.mark.slow)])
def test_a_raw_kernel_handle_of_a_closed_or_dropped_module_is_refused(how):
    out = run_snippet(PRE + r'''
if HOW == "closed":
    m = eagle.compile(SRC, backend=b, name="closed.c", cache=False)
    h = m.inc.handle
    m.close()
else:
    h = eagle.compile(SRC, backend=b, name="dropped.c", cache=False).inc.handle
gc.collect()
eagle.run(h, [np.zeros(4)], 4, backend=b)
''', globals={"HOW": how})
    out.expect_raises("HandleError", match=["was closed or dropped"])


def test_a_raw_kernel_handle_eagle_issued_is_checked_like_its_kernel():
    out = run_snippet(PRE + r'''
m = eagle.compile(SRC, backend=b, name="raw.c")
eagle.run(m.inc.handle, [np.zeros(4)], 10**9, backend=b)   # 4 samples held, 1e9 indexed
''')
    out.expect_raises("EagleValueError", match=["fewer than the 1000000000"])


def test_a_kernel_declared_twice_under_if_is_checked_against_the_branch_compiled():
    out = run_snippet(PRE + r'''
TWICE = """
#include <eagle/kernel.h>
#if USE_FLOAT
EAGLE_KERNEL(k, (float*, y), (float, a)) { (void)n; y[i] += a; }
#else
EAGLE_KERNEL(k, (double*, y), (double, a), (int64_t, m)) { (void)n; y[i] += a * m; }
#endif
"""
m = eagle.compile(TWICE, backend=b, name="twice.c", options=["-DUSE_FLOAT=1"])
y = np.zeros(4, np.float32)
eagle.run(m.k, [y, 2.5], 4)
try:
    eagle.run(m.k, [np.zeros(4), 2.5, 2], 4)   # the other branch's arguments
    refused = None
except eagle.EagleError as e:
    refused = type(e).__name__
result = [list(m.k.types), y.tolist(), refused]
''')
    assert out.expect_ok() == [["float*", "float"], [2.5] * 4, "EagleValueError"], out.describe()


def test_eagle_run_with_n_beyond_a_declared_plane_is_refused():
    out = run_snippet(PRE + "m = eagle.compile(SRC, backend=b)\neagle.run(m.inc, [np.zeros(4)], 10**9)")
    out.expect_raises("EagleValueError", match=["fewer than the 1000000000"])


@pytest.mark.parametrize("address", ["0xdeadbeef", *(pytest.param(a, marks=pytest.mark.slow)
                                                     for a in ("0x10", "0xdeadbeef000", "2**60"))])
def test_a_copy_to_a_raw_address_that_is_no_memory_is_refused(address):
    out = run_snippet(PRE + f"b.copy({address}, np.zeros(4), 32, direction='h2h')")
    out.expect_raises("EagleValueError", match=["raw address"])


DLPACK = PRE + r'''
import ctypes
from eagle._dlpack import DLManagedTensor
keep = []

class Garbage:
    """A DLPack export whose shape (or strides) pointer is garbage."""
    def __init__(self, field):
        self.field = field
    def __dlpack_device__(self):
        return (1, 0)
    def __dlpack__(self, **kw):
        data = np.zeros(4)
        t = DLManagedTensor()
        t.dl_tensor.data = data.ctypes.data
        t.dl_tensor.device.device_type = 1
        t.dl_tensor.ndim = 1
        t.dl_tensor.dtype.code, t.dl_tensor.dtype.bits, t.dl_tensor.dtype.lanes = 2, 64, 1
        good = (ctypes.c_int64 * 1)(4)
        bad = ctypes.cast(ctypes.c_void_p(0xdead0000), ctypes.POINTER(ctypes.c_int64))
        t.dl_tensor.shape = bad if self.field == "shape" else ctypes.cast(good, ctypes.POINTER(ctypes.c_int64))
        if self.field == "strides":
            t.dl_tensor.strides = bad
        keep.extend([data, t, good])
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(t), b"dltensor", None)

eagle.copy(np.zeros(4), Garbage(FIELD), backend=b)
'''


@pytest.mark.parametrize("field", ["shape", pytest.param("strides", marks=pytest.mark.slow)])
def test_a_dlpack_export_with_a_garbage_shape_or_strides_pointer_is_refused(field):
    out = run_snippet(DLPACK, globals={"FIELD": field})
    out.expect_raises("EagleTypeError", match=[f"{field} pointer", "not mapped"])


# -- silent wrong answers ---------------------------------------------------------------------------
def test_a_backend_variable_naming_another_kinds_library_is_refused():
    out = run_snippet(r'''
import os, eagle
os.environ["EAGLE_BACKEND_OPENCL"] = eagle.backend("cpu").path
eagle.backend("opencl")
''')
    out.expect_raises("BackendLoadError", match=["is a cpu backend", "backend_kind"])


@pytest.mark.parametrize("how", ["option", pytest.param("define", marks=pytest.mark.slow)])
def test_a_typedef_chosen_under_if_is_read_as_the_compile_sees_it(how):
    out = run_snippet(PRE + r'''
TDEF = """
#include <eagle/kernel.h>
%s
#ifdef USE_FLOAT
typedef float real;
#else
typedef double real;
#endif
EAGLE_KERNEL(k, (real*, y), (real, a)) { (void)n; y[i] = a; }
""" % ("#define USE_FLOAT 1" if HOW == "define" else "")
m = eagle.compile(TDEF, backend=b, name="tdef.c", options=["-DUSE_FLOAT"] if HOW == "option" else [])
y = np.zeros(4, np.float32)
eagle.run(m.k, [y, 2.5], 4)
try:
    eagle.run(m.k, [np.zeros(4), 2.5], 4)    # a float64 plane for a float one
    refused = None
except eagle.EagleError as e:
    refused = type(e).__name__
result = [list(m.k.types), y.tolist(), refused]
''', globals={"HOW": how})
    assert out.expect_ok() == [["float*", "float"], [2.5] * 4, "EagleTypeError"], out.describe()


def test_a_type_macro_from_an_option_is_read_through():
    out = run_snippet(PRE + r'''
m = eagle.compile("#include <eagle/kernel.h>\nEAGLE_KERNEL(k, (REAL*, y), (REAL, a)) { (void)n; y[i] = a; }\n",
                  backend=b, name="macro.c", options=["-DREAL=float"])
y = np.zeros(3, np.float32)
eagle.run(m.k, [y, 2.5], 3)
result = [list(m.k.types), y.tolist()]
''')
    assert out.expect_ok() == [["float*", "float"], [2.5] * 3], out.describe()


def test_a_declaration_the_preprocessor_cannot_reach_is_refused_at_launch_not_guessed():
    # no C preprocessor on PATH (and no $CC): a kernel declared twice under #if is refused
    out = run_snippet(PRE + r'''
import os
from eagle import module as M
TWICE = b"""
#include <eagle/kernel.h>
#if USE_FLOAT
EAGLE_KERNEL(k, (float*, y)) { (void)n; y[i] = 1.0f; }
#else
EAGLE_KERNEL(k, (double*, y), (double, a)) { (void)n; y[i] = a; }
#endif
"""
M._preprocess = lambda *a, **k: None
declared, unseen = M.read_declarations(TWICE)
result = ["k" in declared, sorted(unseen)]
''')
    assert out.expect_ok() == [False, ["k"]], out.describe()


@pytest.mark.parametrize("decl", ["EAGLE_KERNEL(k)", pytest.param("EAGLE_KERNEL(k, )", marks=pytest.mark.slow)])
def test_a_kernel_with_no_parameters_is_refused_by_name(decl):
    out = run_snippet(PRE + f"eagle.compile('#include <eagle/kernel.h>\\n{decl} {{ }}\\n', backend=b)")
    out.expect_raises("EagleValueError", match=["declares no parameters"])


# -- untyped errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("attr", ["shape", *(pytest.param(a, marks=pytest.mark.slow) for a in ("dtype", "nbytes", "address"))])
def test_assigning_a_device_arrays_exported_attribute_is_an_eagle_error(attr):
    out = run_snippet(PRE + f"a = eagle.zeros(4, backend=b)\na.{attr} = 3")
    out.expect_raises("EagleAttributeError", match=["read-only"])
    assert out.raised("AttributeError"), out.describe()


@pytest.mark.parametrize("call", ["eagle.asarray(Bad(), backend=b)",
                                  pytest.param("eagle.copy(np.zeros(4), Bad(), backend=b)", marks=pytest.mark.slow),
                                  pytest.param("eagle.mean_var(Bad())", marks=pytest.mark.slow)])
def test_a_dlpack_export_that_raises_key_error_is_named(call):
    out = run_snippet(PRE + r'''
class Bad:
    shape, dtype = (4,), np.dtype("float64")
    def __dlpack__(self, *a, **k):
        raise KeyError("no such tensor")
    def __dlpack_device__(self):
        return (1, 0)
''' + call)
    out.expect_raises("EagleTypeError", match=["KeyError"])


def test_a_raw_drain_handle_given_too_few_arguments_is_refused():
    out = run_snippet(PRE + r'''
mod = eagle.compile("""
#include <eagle/kernel.h>
EAGLE_KERNEL(adv, (double*, x), (uint8_t*, m), (double, goal)) { (void)n; x[i] += 1.0; if (x[i] >= goal) m[i] = 1; }
""", backend=b, kernels=["adv", "adv_drain"])
x, m = np.zeros(4), np.zeros(4, np.uint8)
a = eagle.ActiveSet(m, backend=b)
a.drain(b.stream(), mod.adv_drain.handle, [x, m], 10, compacted=False)
''')
    out.expect_raises("EagleValueError", match=["takes 3 arguments of its own"])


def test_a_host_copy_that_does_not_fit_names_its_size():
    out = run_snippet(PRE + r'''
import resource
vm = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (vm + (5 << 29), resource.getrlimit(resource.RLIMIT_AS)[1]))
a = b.empty(2**28, "float64")           # 2 GiB of the cpu kind's memory fits; its host copy does not
a.numpy()
''')
    out.expect_raises("EagleMemoryError", match=["2147483648 bytes"])


@pytest.mark.parametrize("args,says", [(["new-bakend", "x", "y"], "did you mean 'new-backend'"),
                                       pytest.param(["--bogus"], "unknown option '--bogus'", marks=pytest.mark.slow),
                                       pytest.param(["--cmake-di"], "did you mean '--cmake-dir'", marks=pytest.mark.slow)])
def test_the_command_line_names_an_unknown_flag_or_verb(args, says):
    import subprocess
    import sys
    from _subproc import ROOT
    out = subprocess.run([sys.executable, "-m", "eagle", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and says in out.stderr, out.stderr


@pytest.mark.parametrize("where", ["closed-pipe", pytest.param("full-disk", marks=pytest.mark.slow)])
def test_the_command_line_into_a_closed_pipe_or_a_full_disk_prints_no_traceback(where):
    import os
    import subprocess
    import sys
    from _subproc import ROOT
    if where == "full-disk":
        if not os.path.exists("/dev/full"):
            pytest.skip("no /dev/full here")
        with open("/dev/full", "w") as full:
            p = subprocess.run([sys.executable, "-m", "eagle", "--cmake-dir"], cwd=ROOT, stdout=full,
                               stderr=subprocess.PIPE, text=True, timeout=60)
        assert p.returncode == 1 and "No space left" in p.stderr and "Traceback" not in p.stderr, p.stderr
    else:
        p = subprocess.Popen([sys.executable, "-m", "eagle", "--cmake-dir"], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        p.stdout.close()
        err = p.stderr.read()
        assert p.wait(60) == 1 and "Traceback" not in err, err


@pytest.mark.parametrize("where", ["closed-pipe", "full-disk"])
def test_eagle_check_json_into_a_closed_pipe_or_a_full_disk_prints_no_traceback(where):
    import os
    import subprocess
    import sys
    from _subproc import ROOT
    cmd = [sys.executable, "-m", "eagle.check", "cpu", "--json", "--group", "stream"]
    if where == "full-disk":
        if not os.path.exists("/dev/full"):
            pytest.skip("no /dev/full here")
        with open("/dev/full", "w") as full:
            p = subprocess.run(cmd, cwd=ROOT, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
        assert p.returncode == 1 and "No space left" in p.stderr and "Traceback" not in p.stderr, p.stderr
    else:
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        p.stdout.close()
        err = p.stderr.read()
        assert p.wait(120) == 1 and "Traceback" not in err, err
