"""eagle.ode._trace: a Python right-hand side traced once into C.

Each traced function is compiled for cpu in a tiny kernel, run on random samples and compared
with the SAME Python function evaluated on numpy floats, sample by sample (the independent
reference): bit for bit where only + - * / and comparisons are involved (both sides round each
operation once, in the same order), within a few ulp where a libm function meets numpy's. The
refusals are checked for their type, the user's line number and text, and the hint."""
import inspect
import math
import os

import numpy as np
import pytest

import eagle
import eagle.module
from eagle.ode import _trace
from eagle.ode import math as em
from eagle.ode._trace import TracedFunction, TraceError, trace

N = 48  # samples per kernel run


# ------------------------------------------------------------------ the harness

def kernel_source(tf, in_place=False):
    """A kernel evaluating ``tf`` per sample; planes are component-major, shape (k, N). in_place:
    the function writes its outputs over its own ``y``."""
    T, ns, na, no = tf.ctype, tf.n_state, tf.n_args, tf.n_out
    return f"""#include <eagle/kernel.h>
{tf.c_function("f")}
EAGLE_KERNEL(eval_f, (const {T}*, Y), (const {T}*, A), (const {T}*, TT), ({T}*, OUT))
{{
    {T} y[{ns}], a[{max(na, 1)}], o[{no}];
    for (int64_t k = 0; k < {ns}; ++k) y[k] = Y[k * n + i];
    for (int64_t k = 0; k < {na}; ++k) a[k] = A[k * n + i];
    {"f(TT[i], y, a, y); for (int64_t k = 0; k < " + str(no) + "; ++k) o[k] = y[k];" if in_place
     else "f(TT[i], y, a, o);"}
    for (int64_t k = 0; k < {no}; ++k) OUT[k * n + i] = o[k];
}}
"""


def run_on_cpu(tf, Y, A, T, in_place=False):
    kw = {"exact": True} if "exact" in inspect.signature(eagle.module.compile).parameters else {}
    mod = eagle.compile(kernel_source(tf, in_place), backend=eagle.backend("cpu"), options=["-Wall", "-Werror"],
                        **kw)
    out = np.zeros((tf.n_out, Y.shape[1]), Y.dtype)
    eagle.run(mod.eval_f, [Y, A if A.size else np.zeros((1, Y.shape[1]), Y.dtype), T, out], Y.shape[1])
    return out


def reference(fun, Y, A, T, n_out):
    """``fun`` called per sample on numpy scalars of the planes' dtype."""
    out = np.empty((n_out, Y.shape[1]), Y.dtype)
    with np.errstate(all="ignore"):
        for j in range(Y.shape[1]):
            r = fun(T[j], Y[:, j].copy(), *A[:, j])
            out[:, j] = np.asarray(r, dtype=Y.dtype).reshape(-1)
    return out


def inputs(n_state, n_args, dtype, lo=-2.0, hi=2.0, seed=0):
    rng = np.random.default_rng(seed)
    Y = rng.uniform(lo, hi, (n_state, N)).astype(dtype)
    A = rng.uniform(0.5, 2.0, (n_args, N)).astype(dtype)
    T = rng.uniform(0.0, 3.0, N).astype(dtype)
    return Y, A, T


def check(fun, n_state, n_args, dtype, *, exact, n_out=None, lo=-2.0, hi=2.0, Y=None):
    tf = trace(fun, n_state, n_args, dtype=dtype, n_out=n_out)
    assert isinstance(tf, TracedFunction) and tf.dtype == dtype
    Y0, A, T = inputs(n_state, n_args, dtype, lo, hi)
    Y = Y0 if Y is None else Y.astype(dtype)
    got = run_on_cpu(tf, Y, A, T)
    ref = reference(fun, Y, A, T, tf.n_out)
    if exact:
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_array_max_ulp(got, ref, maxulp=4 if dtype == "float64" else 8)
    return tf, got, ref


# ------------------------------------------------------------------ right-hand sides

def lorenz(t, y, sigma, rho, beta):
    x, v, z = y
    return [sigma * (v - x), x * (rho - z) - v, x * v - beta * z]


def van_der_pol(t, y, mu):
    return [y[1], mu * (1.0 - y[0] ** 2) * y[1] - y[0]]


def two_body(t, y):
    r2 = y[0] ** 2 + y[1] ** 2
    r3 = r2 ** 1.5
    return [y[2], y[3], -y[0] / r3, -y[1] * r2 ** -1.5]


def where_and_booleans(t, y, a):
    x, v = y
    inside = (x > -0.5) & (x < 0.5) | ~(v >= 0.0) ^ (v == a)
    return [em.where(inside, x * 2.0, v - 1.0), (x > 0) * 2.0 + (v <= x) - (a != v) * t,
            em.where(x < v, em.where(v > 1.0, 1.0, v), -1), abs(x) + (x // 0.3) + (v % 0.7) - (-x) % 1.5]


def integer_powers(t, y):
    x, v = y
    return [x ** 0 + x ** 1, x ** 2, x ** 3, v ** -2, x ** 7 * v ** -3, (x * x) ** 4, 2.0 ** v, x ** 2.0, x ** -1]


def numpy_style(t, y, a):
    """numpy on the state vector; every term its own output (no cancellation between them), y > 0."""
    M = np.array([[1.0, 0.5, 2.0], [0.25, 1.0, 3.0], [0.0, 2.0, 1.0]])
    terms = [np.asarray(y) @ M, np.sin(y) * np.exp(-np.abs(y)), np.maximum(y, 1.0), np.minimum(y, 1.0),
             np.sqrt(np.abs(y)), np.where(y > 1.0, np.power(np.abs(y), 1.5), np.arctan2(y, a)),
             np.clip(y, 0.5, 1.5), np.sign(y - 1.0), np.hypot(y, 1.0), np.log1p(np.abs(y)), np.fmod(y, 0.3),
             np.deg2rad(y * 90.0), y ** 2, 2.0 * y + 1.0, -y / a,
             [np.sum(y), np.max(y), np.min(y), np.dot(y, y), np.square(y[0]), np.reciprocal(2.0 + y[1])]]
    return np.concatenate(terms)


def sequence_style(t, y, a):
    """y as a sequence: unpacking, len, iteration, slices, negative indices, an object array filled
    in place, numpy's functions on scalars and on plain object arrays, a numpy float64 constant."""
    head, *tail = y
    total = sum(y) + len(y) * 0.5
    out = np.zeros_like(y)
    for k, v in enumerate(y):
        out[k] = v * (k + 1) + y[-1 - k]
    rest = y[1:] * 2.0 - np.float64(0.25) * y[:-1]
    plain = np.array([y[0], y[1]])
    funcs = np.sin(plain) + np.exp(plain) + np.sqrt(plain)  # numpy's object loops: Expr's methods
    picked = np.where(y[0] > 1.0, y[1], t) + np.clip(y[2], 0.5, 1.5) + em.where([y[0] > 1.0, True], 1.0, a)[0]
    both = np.concatenate([rest, np.stack([head, tail[1]])])
    return [out[0] + head, out[1] + total, out[2] + rest[0], funcs[0] + picked, funcs[1] + both[3], both[1]]


# Every function of eagle.ode.math, each in its own output so that one libm ulp stays one ulp;
# u, v in (0.1, 0.9), w in (-2, 2) (inputs of test_every_math_function).
MATH_CASES = [
    lambda u, v, w: em.exp(w), lambda u, v, w: em.expm1(w * 0.01), lambda u, v, w: em.log(u * 10.0),
    lambda u, v, w: em.log1p(w * 0.4), lambda u, v, w: em.log2(v * 7.0), lambda u, v, w: em.log10(u * 100.0),
    lambda u, v, w: em.sin(w * 3.0), lambda u, v, w: em.cos(w * 3.0), lambda u, v, w: em.tan(w * 0.7),
    lambda u, v, w: em.asin(u * 2.0 - 1.0), lambda u, v, w: em.acos(v * 2.0 - 1.0),
    lambda u, v, w: em.atan(w * 5.0), lambda u, v, w: em.atan2(w, v - 0.5), lambda u, v, w: em.sinh(w),
    lambda u, v, w: em.cosh(w), lambda u, v, w: em.tanh(w), lambda u, v, w: em.asinh(w * 10.0),
    lambda u, v, w: em.acosh(1.0 + u * 5.0), lambda u, v, w: em.atanh(u * 1.8 - 0.9),
    lambda u, v, w: em.sqrt(u * 9.0), lambda u, v, w: em.cbrt(w * 10.0), lambda u, v, w: em.abs(w),
    lambda u, v, w: em.fabs(w), lambda u, v, w: em.pow(u * 3.0, v * 2.0), lambda u, v, w: em.pow(w, 3),
    lambda u, v, w: em.pow(u, 0.5), lambda u, v, w: em.hypot(w, v), lambda u, v, w: em.floor(w * 3.0),
    lambda u, v, w: em.ceil(w * 3.0), lambda u, v, w: em.trunc(w * 3.0), lambda u, v, w: em.copysign(u, w),
    lambda u, v, w: em.fmin(u, v), lambda u, v, w: em.min(u, v, w), lambda u, v, w: em.fmax(u, v),
    lambda u, v, w: em.max(u, v, w), lambda u, v, w: em.max([u, w]), lambda u, v, w: em.where(w > 0, u, v),
    lambda u, v, w: em.erf(w), lambda u, v, w: em.erfc(w), lambda u, v, w: em.fma(u, v, w),
    lambda u, v, w: em.pi * u + em.e * v, lambda u, v, w: em.sign(w), lambda u, v, w: em.sign(em.floor(w)),
    lambda u, v, w: em.clip(w, -1.0, 1.0), lambda u, v, w: em.min(em.inf, u) + em.where(w > 5.0, em.nan, 0.0),
    lambda u, v, w: em.max(-em.inf, v) + em.where(w > 5.0, -em.inf, 0.0),
]


def every_math_function(t, y):
    u, v, w = y
    return [case(u, v, w) for case in MATH_CASES]


def _math_inputs(dtype):
    rng = np.random.default_rng(7)
    return np.stack([rng.uniform(0.1, 0.9, N), rng.uniform(0.1, 0.9, N), rng.uniform(-2, 2, N)]).astype(dtype)


# ------------------------------------------------------------------ against numpy

DTYPES = ["float64", "float32"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_lorenz_equals_numpy_bit_for_bit(dtype):
    tf, got, _ = check(lorenz, 3, 3, dtype, exact=True)
    assert tf.n_ops == 8 and tf.used_args == (0, 1, 2) and not tf.uses_t and tf.n_out == 3
    assert tf.ctype == ("double" if dtype == "float64" else "float")


def test_outputs_may_overwrite_the_state_in_place():
    tf = trace(lorenz, 3, 3)
    body = tf.c_function("f").splitlines()
    last_load = max(k for k, ln in enumerate(body) if "= y[" in ln or "= a[" in ln)
    assert last_load < min(k for k, ln in enumerate(body) if "out[" in ln)
    Y, A, T = inputs(3, 3, "float64")
    np.testing.assert_array_equal(run_on_cpu(tf, Y, A, T, in_place=True), reference(lorenz, Y, A, T, 3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_van_der_pol_equals_numpy_bit_for_bit(dtype):
    tf, _, _ = check(van_der_pol, 2, 1, dtype, exact=True)
    assert "pow" not in tf.c_function("f")  # ** 2 is a multiplication


@pytest.mark.parametrize("dtype", DTYPES)
def test_two_body_with_fractional_powers_matches_numpy(dtype):
    tf, _, _ = check(two_body, 4, 0, dtype, exact=False, lo=0.5, hi=1.5)
    src = tf.c_function("f")
    assert src.count("pow" + ("f" if dtype == "float32" else "") + "(") == 2  # r2 ** 1.5 and r2 ** -1.5


@pytest.mark.parametrize("dtype", DTYPES)
def test_where_comparisons_floor_divide_remainder_and_booleans_equal_numpy(dtype):
    tf, _, _ = check(where_and_booleans, 2, 1, dtype, exact=True, n_out=4)
    assert tf.uses_t and tf.used_args == (0,)
    assert f"({tf.ctype})" in tf.c_function("f")  # booleans used as numbers convert to T


@pytest.mark.parametrize("dtype", DTYPES)
def test_floor_divide_and_remainder_have_pythons_signs_at_the_edges(dtype):
    def f(t, y):
        return [y[0] // y[1], y[0] % y[1], divmod(y[0], y[1])[1]]
    a = np.array([7.0, -7.0, 7.0, -7.0, 6.0, -6.0, 0.0, -0.0, 1e-300, 5.5, 3.0, 1.0, -1.0, 0.5])
    b = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 3.0, -3.0, 1.0, 0.1, 0.0, np.inf, np.inf, -0.0])
    pad = N - len(a)
    Y = np.stack([np.concatenate([a, np.ones(pad)]), np.concatenate([b, np.ones(pad)])]).astype(dtype)
    tf = trace(f, 2, 0, dtype=dtype, n_out=3)
    got = run_on_cpu(tf, Y, np.zeros((0, N), dtype), np.zeros(N, dtype))
    with np.errstate(all="ignore"):
        ref = np.stack([np.floor_divide(Y[0], Y[1]), np.remainder(Y[0], Y[1]), np.remainder(Y[0], Y[1])])
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))  # the zeros' signs too


@pytest.mark.parametrize("dtype", DTYPES)
def test_integer_powers_are_multiplications(dtype):
    tf, _, _ = check(integer_powers, 2, 0, dtype, exact=False, lo=0.5, hi=1.5, n_out=9)
    src = tf.c_function("f")
    assert src.count(" pow(" if dtype == "float64" else " powf(") == 1  # only 2.0 ** v


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_ufuncs_on_the_state_vector_match_numpy(dtype):
    check(numpy_style, 3, 1, dtype, exact=False, n_out=51, lo=0.1, hi=2.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_state_as_a_sequence_and_numpy_functions_on_scalars_match_numpy(dtype):
    tf, _, _ = check(sequence_style, 3, 1, dtype, exact=False, n_out=6, lo=0.1, hi=2.0)
    assert tf.uses_t and tf.used_args == (0,)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_math_function_matches_numpy(dtype):
    tf, got, ref = check(every_math_function, 3, 0, dtype, exact=False, n_out=len(MATH_CASES),
                         Y=_math_inputs(dtype))
    src = tf.c_function("f")
    assert "INFINITY" in src and "NAN" in src
    if dtype == "float32":  # float functions, so the cpu does not compute in double
        for fn in ("sinf(", "expf(", "sqrtf(", "fabsf(", "fminf(", "erff(", "fmaf(", "powf(", "atan2f("):
            assert fn in src, fn
        assert " sin(" not in src and " exp(" not in src and " sqrt(" not in src
    else:
        assert "sin(" in src and "sinf(" not in src


def nan_aware(t, y):
    x, v = y
    return [np.maximum(x, v), np.minimum(x, v), em.max(x, v), em.min(x, v), np.sign(x), em.clip(x, 0, 1),
            np.isnan(x) * 1.0, np.isinf(v) + np.isfinite(x) * 2.0, np.where(np.signbit(x), 1.0, 0.0),
            np.logical_and(x, v) + np.logical_not(v) * 2.0 + np.logical_xor(x > 0, v > 0) * 4.0, np.clip(v, x, 1.0)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_nans_propagate_as_numpy_does(dtype):
    nan, inf = np.nan, np.inf
    a = np.array([nan, 1.0, nan, -0.0, 2.0, inf, -1.0, 0.0])
    b = np.array([1.0, nan, nan, 0.0, -3.0, -inf, 0.0, 2.0])
    Y = np.stack([np.resize(a, N), np.resize(b, N)]).astype(dtype)
    tf = trace(nan_aware, 2, 0, dtype=dtype, n_out=11)
    got = run_on_cpu(tf, Y, np.zeros((0, N), dtype), np.zeros(N, dtype))
    ref = reference(nan_aware, Y, np.zeros((0, N), dtype), np.zeros(N, dtype), 11)
    np.testing.assert_array_equal(got, ref)
    rows = [0, 1, 4, 5, 10]  # numpy's maximum, minimum, sign, clip: the sign of a zero result too
    np.testing.assert_array_equal(np.signbit(got[rows]), np.signbit(ref[rows]))


def test_float32_literals_equal_numpy_float32_of_the_python_value():
    consts = [0.1, 1.0 / 3.0, 2.0 ** -140, 3.4e38, 1e39, -2.5e-7, 16777217.0, math.pi, 123456789.123]

    def f(t, y):
        return [y[0] * c for c in consts]
    tf = trace(f, 1, 0, dtype="float32", n_out=len(consts))
    Y = np.ones((1, N), np.float32)
    got = run_on_cpu(tf, Y, np.zeros((0, N), np.float32), np.zeros(N, np.float32))
    with np.errstate(over="ignore"):
        want = np.array([np.float32(c) for c in consts], np.float32)
    np.testing.assert_array_equal(got[:, 0], want)
    src = tf.c_function("f")
    assert "INFINITY" in src  # 1e39 overflows float32, as np.float32(1e39) does


def test_float64_literals_round_trip():
    consts = [0.1, 1.0 / 3.0, 5e-324, 1.7976931348623157e308, -0.0, 1e22, 2.0 ** 60]

    def f(t, y):
        return [y[0] * c for c in consts]
    tf = trace(f, 1, 0, n_out=len(consts))
    got = run_on_cpu(tf, np.ones((1, N)), np.zeros((0, N)), np.zeros(N))
    np.testing.assert_array_equal(got[:, 0], np.array(consts))
    assert np.signbit(got[4, 0])


# ------------------------------------------------------------------ the C text

def test_same_function_gives_byte_identical_c():
    a, b = trace(numpy_style, 3, 1, n_out=51), trace(numpy_style, 3, 1, n_out=51)
    assert a.c_function("rhs") == b.c_function("rhs")
    assert a.c_function("rhs") != trace(lorenz, 3, 3).c_function("rhs")
    assert trace(lorenz, 3, 3).c_function("rhs") == trace(lorenz, 3, 3).c_function("rhs")


def test_common_subexpressions_are_emitted_once():
    tf = trace(lambda t, y: [y[0] * y[1] + y[0] * y[1], y[1] * y[0] - em.sin(y[0]) + em.sin(y[0])], 2, 0)
    body = tf.c_function("f")
    assert body.count(" * ") == 1 and body.count("sin(") == 1
    assert tf.n_ops == 5  # mul, add, sin, sub, add


def test_only_nodes_that_reach_an_output_are_emitted():
    def f(t, y):
        _ = em.exp(y[0]) * 3.0  # dead
        return [y[1], 2.0]
    tf = trace(f, 2, 0)
    src = tf.c_function("f")
    assert "exp" not in src and "y[0]" not in src and tf.n_ops == 0 and "out[1] = 2.0;" in src
    assert "(void)t;" in src and "(void)a;" in src


def test_constant_results_are_allowed():
    tf = trace(lambda t, y: [0.0, 1], 2, 0)
    assert tf.c_function("f").count("out[") == 2 and "out[1] = 1.0;" in tf.c_function("f")


def test_c_text_names_the_function_its_file_and_line():
    src = trace(lorenz, 3, 3).c_function("lorenz_rhs")
    line = lorenz.__code__.co_firstlineno
    first = src.splitlines()[0]
    assert first.startswith("/*") and first.endswith("*/")
    assert "fun = lorenz" in first and f"test_ode_trace.py:{line}" in first
    assert "EAGLE_FN void lorenz_rhs(const double t, const double* y, const double* a, double* out)" in src
    with pytest.raises(eagle.EagleValueError, match="C identifier"):
        trace(lorenz, 3, 3).c_function("not a name")


def test_event_function_takes_a_scalar_or_one_element():
    ev = trace(lambda t, y: y[0] - 1.0, 2, 0, n_out=1, what="events[0]")
    ev2 = trace(lambda t, y: [y[0] - 1.0], 2, 0, n_out=1, what="events[0]")
    assert ev.n_out == 1 and ev.c_function("g").splitlines()[1:] == ev2.c_function("g").splitlines()[1:]
    with pytest.raises(TraceError, match=r"events\[0\]: returned 2 values; expected one number"):
        trace(lambda t, y: [y[0], y[1]], 2, 0, n_out=1, what="events[0]")


def test_lorenz_compiles_for_cuda_with_nvrtc():
    from test_examples import BIT_EXACT, nvrtc_compile
    for dtype in DTYPES:
        src = kernel_source(trace(lorenz, 3, 3, dtype=dtype)).encode()
        res, log, cubin = nvrtc_compile(src, "lorenz.cu", BIT_EXACT)
        assert res == 0, log
        assert b"eval_f" in cubin


@pytest.mark.slow  # about 5 s: NVRTC
def test_math_functions_compile_for_cuda_with_nvrtc():
    from test_examples import BIT_EXACT, nvrtc_compile
    kernel_h = open(os.path.join(eagle.include_dir(), "eagle", "kernel.h")).read()
    cases = MATH_CASES if "INFINITY" in kernel_h else MATH_CASES[:-2]  # INFINITY/NAN come with kernel.h
    for dtype in DTYPES:
        tf = trace(lambda t, y: [c(*y) for c in cases] + nan_aware(t, y[:2]), 3, 0, dtype=dtype,
                   n_out=len(cases) + 11)
        src = kernel_source(tf)
        res, log, _ = nvrtc_compile(src.encode(), "math.cu", BIT_EXACT)
        assert res == 0, log + src


# ------------------------------------------------------------------ refusals

def _line_of(fun, marker):
    lines, first = inspect.getsourcelines(fun)
    k = next(i for i, ln in enumerate(lines) if marker in ln)
    return first + k, lines[k].strip()


def _refused(fun, marker, *hints, n_state=2, n_args=0, exc=TraceError, **kw):
    with pytest.raises(exc) as ei:
        trace(fun, n_state, n_args, **kw)
    msg = str(ei.value)
    lineno, text = _line_of(fun, marker)
    assert f":{lineno} " in msg and text in msg, msg
    assert ei.value.lineno == lineno and ei.value.source_line == text
    for h in hints:
        assert h in msg, (h, msg)
    return ei.value


def test_if_on_a_traced_value_is_refused():
    def f(t, y):
        if y[0] > 0:  # here
            return [y[0], y[1]]
        return [y[1], y[0]]
    e = _refused(f, "# here", "branches on a traced value", "eagle.ode.math.where(cond, a, b)")
    assert "fun:" in str(e) and "(in test_if_on_a_traced_value_is_refused.<locals>.f)" in str(e)


@pytest.mark.parametrize("body", ["while", "and", "not", "bool", "min", "max", "ndmax"])
def test_branches_and_builtin_min_max_are_refused(body):
    def f(t, y):
        x, v = y
        if body == "while":
            while x < 1.0:  # here:while
                x = x * 2.0
        elif body == "and":
            x = x if x > 0 and v > 0 else v  # here:and
        elif body == "not":
            x = 1.0 if not x else v  # here:not
        elif body == "bool":
            x = float(bool(x))  # here:bool
        elif body == "min":
            x = min(x, v)  # here:min
        elif body == "max":
            x = max(x, v)  # here:max
        else:
            x = np.maximum(np.array([x, v], dtype=object), 0)[0]  # here:ndmax
        return [x, v]
    _refused(f, f"# here:{body}", "branches on a traced value",
             "eagle.ode.math.where", "use eagle.ode.math.min/max")


@pytest.mark.parametrize("body", ["range", "int", "float", "math", "index", "store"])
def test_a_python_number_needed_is_refused(body):
    def f(t, y):
        x, v = y
        if body == "range":
            for _ in range(x):  # here:range
                v = v * 2.0
        elif body == "int":
            v = v * int(x)  # here:int
        elif body == "float":
            v = v * float(x)  # here:float
        elif body == "math":
            v = math.sin(x)  # here:math
        elif body == "index":
            v = y[x]  # here:index
        else:
            out = np.zeros(2)
            out[0] = x  # here:store
            return out
        return [x, v]
    _refused(f, f"# here:{body}", "a Python number was needed",
             "a loop whose length depends on the state cannot be traced",
             "use eagle.ode.math.sin", "np.zeros_like(y)")


def test_index_out_of_range_names_the_index_and_n_state():
    def f(t, y):
        return [y[0], y[1], y[3]]  # here
    e = _refused(f, "# here", "index 3 is out of range for y (n_state = 3)", n_state=3)
    assert isinstance(e, IndexError)

    def g(t, y):
        return [y[-4], y[1], y[2]]  # here
    _refused(g, "# here", "index -4 is out of range", n_state=3)


def test_unknown_ufunc_is_refused_by_name():
    def f(t, y):
        return [np.logaddexp(y[0], y[1]), y[1]]  # here
    _refused(f, "# here", "numpy.logaddexp is not supported", "The supported ufuncs are")


def test_bitwise_operators_on_numbers_are_refused():
    def f(t, y):
        return [y[0] & y[1], y[1]]  # here
    _refused(f, "# here", "`&` was given a number", "(a > 0) & (b < 1)")


def test_a_value_from_another_trace_is_refused():
    kept = []
    trace(lambda t, y: kept.append(y[0]) or [y[0]], 1, 0)

    def f(t, y):
        return [y[0] + kept[0]]  # here
    _refused(f, "# here", "a traced value of another trace", n_state=1)


@pytest.mark.parametrize("result, problem", [
    (lambda y: [y[0]], "returned 1 values; expected 3 values (n_state = 3)"),
    (lambda y: [y[0]] * 4, "returned 4 values; expected 3 values (n_state = 3)"),
    (lambda y: None, "returned a NoneType; expected 3 values"),
    (lambda y: "abc", "returned a str; expected 3 values"),
    (lambda y: {"a": y[0]}, "returned a dict; expected 3 values"),
    (lambda y: [y[0], None, y[1]], "returned a NoneType at index 1"),
    (lambda y: [y[0], "x", y[1]], "returned a str at index 1"),
    (lambda y: y[0], "returned a scalar; expected 3 values"),
    (lambda y: np.stack([y, y]), "returned shape (2, 3); expected 3 values"),
    (lambda y: [y[0], [y[1], y[2]], y[2]], "returned a list at index 1"),
    (lambda y: [y[0], y[1], 1j], "returned a complex at index 2"),
])
def test_wrong_results_are_refused(result, problem):
    def f(t, y):
        return result(y)
    with pytest.raises(TraceError) as ei:
        trace(f, 3, 0)
    assert problem in str(ei.value) and f"test_ode_trace.py:{f.__code__.co_firstlineno}" in str(ei.value)


def test_an_exception_of_the_users_function_is_wrapped_and_chained():
    def f(t, y):
        k = 0
        return [y[0] + 1 / k]  # here
    e = _refused(f, "# here", "fun raised ZeroDivisionError at", "division by zero", n_state=1)
    assert isinstance(e.__cause__, ZeroDivisionError)


def test_unpacking_the_wrong_number_of_states_is_reported_at_its_line():
    def f(t, y):
        x, v = y  # here
        return [x, v, x]
    _refused(f, "# here", "fun raised ValueError", "too many values to unpack", n_state=3)


def test_a_graph_past_the_node_limit_is_refused(monkeypatch):
    assert _trace.MAX_NODES == 200_000
    monkeypatch.setattr(_trace, "MAX_NODES", 500)

    def f(t, y):
        x = y[0]
        for k in range(1000):
            x = x * 1.0001 + y[1]  # here
        return [x, y[1]]
    _refused(f, "# here", "passed 500 nodes", "eagle.ode.C")


@pytest.mark.parametrize("args, exc, name", [
    (("not callable", 2, 0), eagle.EagleTypeError, "fun must be callable"),
    ((lorenz, 0, 3), eagle.EagleValueError, "n_state must be at least 1"),
    ((lorenz, 2.0, 3), eagle.EagleTypeError, "n_state must be an int"),
    ((lorenz, True, 3), eagle.EagleTypeError, "n_state must be an int"),
    ((lorenz, 3, -1), eagle.EagleValueError, "n_args must be at least 0"),
])
def test_bad_arguments_name_the_argument(args, exc, name):
    with pytest.raises(exc, match=name):
        trace(*args)


def test_bad_dtype_and_n_out_are_refused():
    with pytest.raises(eagle.EagleValueError, match="dtype must be float64 or float32, got float16"):
        trace(lorenz, 3, 3, dtype="float16")
    with pytest.raises(eagle.EagleValueError, match="n_out must be at least 1"):
        trace(lorenz, 3, 3, n_out=0)


def test_trace_error_is_an_eagle_value_error():
    assert issubclass(TraceError, eagle.EagleValueError)


# ------------------------------------------------------------------ the math namespace on numbers

def test_math_namespace_computes_numbers_numpy_style():
    x = np.linspace(0.1, 0.9, 5)
    np.testing.assert_array_equal(em.sin(x), np.sin(x))
    assert em.asin(0.5) == np.arcsin(0.5) and em.max(1.0, 3.0, 2.0) == 3.0 and em.min([4.0, 2.0]) == 2.0
    assert em.where(x > 0.5, 1.0, 0.0).tolist() == [0.0, 0.0, 0.0, 1.0, 1.0]
    assert em.erf(0.5) == math.erf(0.5) and em.erf(np.float32(0.5)).dtype == np.float32
    assert em.fma(0.1, 10.0, -1.0) == 5.551115123125783e-17  # rounded once: not 0.1 * 10.0 - 1.0 (0.0)
    assert em.clip(2.0, 0.0, 1.0) == 1.0 and em.sign(-3.0) == -1.0
    with pytest.raises(eagle.EagleTypeError, match="two or more"):
        em.max(1.0)
