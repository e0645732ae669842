"""The Jacobian derived from the traced graph (eagle/ode/_derive.py) against central finite
differences of the traced function, on random states, for every stiff test problem."""
import numpy as np
import pytest

from eagle.errors import EagleValueError
from eagle.ode._derive import derive, jacobian
from eagle.ode._trace import trace

from _stiff_problems import hires, hostile_mix, orego, pollu, rober, vdp


def _fd(D, t, y, args, h=1e-6):
    f = lambda yy, tt=t: D.evaluate(tt, yy, args, parts=("f",))
    d = len(y)
    J = np.empty((d, d))
    for j in range(d):
        e = np.zeros(d)
        e[j] = h * max(1.0, abs(y[j]))
        J[:, j] = (f(y + e) - f(y - e)) / (2 * e[j])
    dt = (f(y, t + h) - f(y, t - h)) / (2 * h)
    return J, dt


CASES = [(rober, 3, (0.04, 3e7, 1e4)), (hires, 8, ()), (orego, 3, ()), (vdp, 2, (1e3,)), (pollu, 20, ()),
         (hostile_mix, 3, (1.3,))]


@pytest.mark.parametrize("fun,d,args", CASES, ids=[c[0].__name__ for c in CASES])
def test_jacobian_equals_finite_differences(fun, d, args):
    D = jacobian(fun, d, len(args))
    rng = np.random.default_rng(7)
    for _ in range(5):
        y = rng.uniform(0.1, 0.9, d)
        t = float(rng.uniform(0.1, 1.0))
        out = D.evaluate(t, y, args, parts=("jac", "dt"))
        J, dt = out[:d * d].reshape(d, d), out[d * d:]
        Jfd, dtfd = _fd(D, t, y, args)
        scale = 1 + np.max(np.abs(Jfd), axis=1, keepdims=True)  # a row's rounding noise scales with its largest entry
        assert np.max(np.abs(J - Jfd) / scale) < 1e-6, (J, Jfd)
        assert np.max(np.abs(dt - dtfd) / (1 + np.abs(dtfd))) < 1e-6


def test_dargs_equals_finite_differences():
    args = np.array([0.04, 3e7, 1e4])
    D = jacobian(rober, 3, 3)
    y = np.array([0.9, 2e-5, 0.1])
    got = D.evaluate(0.0, y, args, parts=("dargs",)).reshape(3, 3)
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1e-6 * args[k]
        fd = (D.evaluate(0.0, y, args + e, parts=("f",)) - D.evaluate(0.0, y, args - e, parts=("f",))) / (2 * e[k])
        assert np.allclose(got[:, k], fd, rtol=1e-6, atol=1e-12)


def test_sparsity_kept_and_zeros_folded():
    D = jacobian(hires, 8, 0)
    # HIRES: 8x8 with 25 structural nonzeros; no derivative node multiplies by a constant 0 or 1
    assert D.nnz == 25
    assert (0, 4) not in D.jac and (1, 0) in D.jac
    assert D.dt == {}
    src = D.c_function("ode_user_jac")
    assert src.count("out[") == 25
    assert "* 0.0" not in src and "* 1.0" not in src and "0.0 *" not in src
    # a constant Jacobian entry is a literal, not a computation
    assert "out[0] = (-1.71);" in src


def test_c_function_layout_and_float32():
    D = derive(trace(rober, 3, 3, dtype="float32"))
    offsets, size = D.layout(("f", "jac", "dt"))
    assert offsets == {"f": 0, "jac": 3, "dt": 12} and size == 15
    src = D.c_function("jr", parts=("f", "jac", "dt"))
    assert "float* out" in src and "out[14] = 0.0f;" in src
    with pytest.raises(EagleValueError, match="unknown part"):
        D.layout(("hessian",))


def test_piecewise_takes_the_branch():
    D = jacobian(lambda t, y: [np.maximum(y[0], y[1]), np.abs(y[0]) * y[2], np.floor(y[1]) * y[0]], 3, 0)
    J = D.evaluate(0.0, [-2.0, -1.5, 3.0], (), parts=("jac",)).reshape(3, 3)
    assert np.array_equal(J, [[0.0, 1.0, 0.0], [-3.0, 0.0, 2.0], [-2.0, 0.0, 0.0]])


def test_c_function_computes_what_evaluate_does():
    """The emitted C (compiled for cpu, -Wall -Werror) gives the graph's numbers: f, J, df/dt."""
    import eagle
    fun, d, args = hostile_mix, 3, (1.3,)
    D = jacobian(fun, d, len(args))
    parts = ("f", "jac", "dt", "dargs")
    _, size = D.layout(parts)
    src = f"""#include <eagle/kernel.h>
{D.c_function("fj", parts)}
EAGLE_KERNEL(eval_fj, (const double*, Y), (const double*, A), (const double*, TT), (double*, OUT))
{{
    double y[{d}], a[1], o[{size}];
    for (int k = 0; k < {size}; ++k) o[k] = 0.0;
    for (int64_t k = 0; k < {d}; ++k) y[k] = Y[k * n + i];
    a[0] = A[i];
    fj(TT[i], y, a, o);
    for (int64_t k = 0; k < {size}; ++k) OUT[k * n + i] = o[k];
}}
"""
    mod = eagle.compile(src, backend=eagle.backend("cpu"), options=["-Wall", "-Werror"])
    rng = np.random.default_rng(3)
    n = 16
    Y = rng.uniform(0.1, 0.9, (d, n))
    A = np.full((1, n), args[0])
    T = rng.uniform(0, 1, n)
    out = np.zeros((size, n))
    eagle.run(mod.eval_fj, [Y, A, T, out], n)
    for j in range(n):
        ref = D.evaluate(T[j], Y[:, j], args, parts=parts)
        assert np.allclose(out[:, j], ref, rtol=1e-13, atol=1e-15)
