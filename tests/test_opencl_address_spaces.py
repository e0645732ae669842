"""The opencl kind on a device without OpenCL C's generic address space (NVIDIA's OpenCL; PoCL 3.1
too, which lists OpenCL C 3.0 without __opencl_c_generic_address_space): the backend builds with
-cl-std=CL3.0 and tells eagle/kernel.h which declared parameters are pointers, which become
__global; a helper that takes a pointer into a declared array says EAGLE_GLOBAL. With
$EAGLE_OPENCL_STD=CL2.0 (the generic address space, where a platform offers it) or
$EAGLE_OPENCL_QUALIFY=0 (pointers taken as flat, as NVIDIA's and PoCL's compilers run them)
nothing is added.

Runs on the `opencl` fixture (tests/conftest.py: $EAGLE_BACKEND_OPENCL with a usable platform),
skipped naming why otherwise."""
import numpy as np
import pytest

import eagle
from _subproc import run_snippet

pytestmark = pytest.mark.opencl

# 1 where the backend qualified the declared pointers (no generic address space), else 0.
MODE = b"""#include <eagle/kernel.h>
EAGLE_KERNEL(spaces, (int32_t*, out))
{
    (void)n;
#ifdef EAGLE_OCL_SPACES
    out[i] = 1;
#else
    out[i] = 0;
#endif
}
"""

HELPER = b"""#include <eagle/kernel.h>
EAGLE_FN void twice(EAGLE_GLOBAL double* p) { *p *= 2.0; }
EAGLE_FN void add_to(double* acc, double v) { *acc += v; }   /* a pointer to the body's own local */
EAGLE_KERNEL(k, (double*, x))
{
    (void)n;
    double acc = 1.0;
    add_to(&acc, 0.5);
    twice(&x[i]);
    x[i] += acc;
}
"""

PLAIN_HELPER = b"""#include <eagle/kernel.h>
EAGLE_FN void twice(double* p) { *p *= 2.0; }
EAGLE_KERNEL(k, (double*, x)) { (void)n; twice(&x[i]); }
"""

# The same parameter name a pointer in one kernel and a scalar in another; kernels declared by a
# macro that names them (as eagle's restore kernels are); a parameter named as a PoCL built-in.
MIXED = b"""#include <eagle/kernel.h>
EAGLE_KERNEL(scale, (double*, a), (double, s)) { (void)n; a[i] *= s; }
EAGLE_KERNEL(put, (double, a), (double*, out)) { (void)n; out[i] = a; }
#define FILL(name, T) EAGLE_KERNEL(name, (T*, dst), (T, v)) { (void)n; dst[i] = v + (T)i; }
FILL(fill_d, double)
FILL(fill_i, int32_t)
EAGLE_KERNEL(stepper, (double*, step), (const double*, length)) { (void)n; step[i] = 2.0 * length[i]; }
#define SPREAD(name) \\
    EAGLE_KERNEL(name, (double*, \\
                 wide), (double, v)) { (void)n; wide[i] = v; }
SPREAD(spread_d)
"""


def _run(b, kernel, args, n):
    s = b.stream()
    s.run(kernel, args, n)
    s.synchronize()


def _qualified(b):
    out = b.zeros(4, "int32")
    _run(b, eagle.compile(MODE, backend=b, name="mode.c", cache=False).spaces, [out], 4)
    return bool(out.numpy().all())


def test_a_helper_into_the_arrays_says_EAGLE_GLOBAL_and_one_on_locals_nothing(opencl):
    x = opencl.asarray(np.arange(100.0))
    _run(opencl, eagle.compile(HELPER, backend=opencl, name="helper.c", exact=True).k, [x], 100)
    assert np.array_equal(x.numpy(), 2.0 * np.arange(100.0) + 1.5)


def test_without_the_generic_space_a_plain_helper_pointer_is_refused_naming_the_address_space(opencl):
    if not _qualified(opencl):
        pytest.skip("this platform builds with the generic address space: a plain helper pointer is generic")
    with pytest.raises(eagle.CompileError, match="address space"):
        eagle.compile(PLAIN_HELPER, backend=opencl, name="plain.c", cache=False)


def test_a_name_both_pointer_and_scalar_macro_declared_kernels_and_built_in_names(opencl):
    m = eagle.compile(MIXED, backend=opencl, name="mixed.c", exact=True)
    n = 64
    a, out = opencl.asarray(np.arange(n, dtype=np.float64)), opencl.zeros(n)
    _run(opencl, m.scale, [a, 3.0], n)
    _run(opencl, m.put, [2.5, out], n)
    assert np.array_equal(a.numpy(), 3.0 * np.arange(n)) and np.array_equal(out.numpy(), np.full(n, 2.5))
    d, k = opencl.zeros(n), opencl.zeros(n, "int32")
    _run(opencl, m.fill_d, [d, 0.5], n)
    _run(opencl, m.fill_i, [k, 7], n)
    assert np.array_equal(d.numpy(), np.arange(n) + 0.5) and np.array_equal(k.numpy(), np.arange(n) + 7)
    st = opencl.zeros(n)
    _run(opencl, m.stepper, [st, a], n)
    assert np.array_equal(st.numpy(), 6.0 * np.arange(n))
    _run(opencl, m.spread_d, [st, 4.0], n)  # a declaration across continued lines of a macro
    assert np.array_equal(st.numpy(), np.full(n, 4.0))


@pytest.mark.parametrize("std, qualify", [("CL3.0", ""), ("CL2.0", ""), ("CL1.2", ""), ("CL3.0", "0"), ("CL3.0", "1")])
def test_each_language_version_runs_the_same_kernels(opencl, std, qualify):
    """$EAGLE_OPENCL_STD picks the -cl-std (CL3.0 without the generic space is NVIDIA's case; a
    version the platform does not build is skipped, naming its error). In each, the backend qualifies the declared pointers exactly where an unqualified helper pointer
    is not generic (the plain helper is then refused), and the kernels give the same results."""
    out = run_snippet("""
        import numpy as np
        import eagle
        b = eagle.backend("opencl")
        s = b.stream()
        flag = b.zeros(2, "int32")
        try:
            mode = eagle.compile(MODE, backend=b, name="mode.c")
        except eagle.CompileError as e:  # a platform without this OpenCL C version
            raise RuntimeError("refused: " + str(e)[:400]) from None
        s.run(mode.spaces, [flag], 2)
        m = eagle.compile(MIXED, backend=b, name="mixed.c", exact=True)
        a = b.asarray(np.arange(16.0))
        s.run(m.scale, [a, 3.0], 16)
        x = b.asarray(np.arange(16.0))
        s.run(eagle.compile(HELPER, backend=b, name="helper.c").k, [x], 16)
        s.synchronize()
        try:
            eagle.compile(PLAIN_HELPER, backend=b, name="plain.c")
            plain_refused = False
        except eagle.CompileError:
            plain_refused = True
        result = [flag.numpy().tolist(), a.numpy().tolist(), x.numpy().tolist(), plain_refused]
    """, env={"EAGLE_OPENCL_STD": std, "EAGLE_OPENCL_QUALIFY": qualify, "EAGLE_BACKEND_OPENCL": opencl.path},
        globals={"MODE": MODE.decode(), "MIXED": MIXED.decode(), "HELPER": HELPER.decode(),
                 "PLAIN_HELPER": PLAIN_HELPER.decode()}, timeout=120)
    if out.raised("RuntimeError") and out.exc_message.startswith("refused: "):
        pytest.skip(f"this platform does not build -cl-std={std}: {out.exc_message}")
    out.expect_ok()
    flag, a, x, plain_refused = out.result
    assert flag == ([1, 1] if plain_refused else [0, 0])
    if qualify:
        assert flag == [int(qualify)] * 2
    assert a == (3.0 * np.arange(16.0)).tolist() and x == (2.0 * np.arange(16.0) + 1.5).tolist()


@pytest.mark.parametrize("var, value", [("EAGLE_OPENCL_STD", "CL9.9"), ("EAGLE_OPENCL_QUALIFY", "yes")])
def test_a_wrong_setting_is_unavailable_naming_the_variable(opencl, var, value):
    out = run_snippet("""
        import eagle
        eagle.backend("opencl").stream()
    """, env={var: value, "EAGLE_BACKEND_OPENCL": opencl.path}, timeout=60)
    out.expect_raises("BackendUnavailable", match=f"{var}='{value}'")
