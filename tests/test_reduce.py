"""eagle.mean_var (eagle/reduce.py): mean, variance and standard error of a plane on its device,
against numpy; both lane layouts (strided, as on a GPU, and chunked, as on cpu); a plane whose
naive sum of squares cancels; empty, NaN, single-value and wrong-typed planes; stream order."""
import math

import numpy as np
import pytest

import eagle
from eagle import reduce as reduce_
from _subproc import run_snippet


def _numpy(x):
    x = np.asarray(x, np.float64).ravel()
    return x.mean(), x.var(ddof=1), math.sqrt(x.var(ddof=1) / x.size), x.size


def _close(got, want, rtol):
    assert got.n == want[3]
    for g, w, name in zip(got[:3], want[:3], ("mean", "var", "stderr")):
        assert abs(g - w) <= rtol * abs(w), (name, g, w, abs(g - w) / abs(w))


@pytest.mark.parametrize("size", [2, 3, 63, 64, 65, 129, 1000, 10**6 + 3])
def test_mean_var_equals_numpy_for_float64(cpu, size):
    x = np.random.default_rng(size).normal(3.0, 2.0, size)
    _close(eagle.mean_var(x), _numpy(x), 1e-13)


def test_float32_planes_are_reduced_in_double(cpu):
    x = np.random.default_rng(1).normal(-1.0, 0.5, 100_001).astype(np.float32)
    _close(eagle.mean_var(x), _numpy(x), 1e-12)   # numpy on the same float32 values, in double


def test_a_device_array_and_a_two_dimensional_plane(cpu):
    x = np.random.default_rng(2).random((3, 5000))
    _close(eagle.mean_var(cpu.asarray(x)), _numpy(x), 1e-13)
    _close(reduce_.mean_var(x, backend=cpu), _numpy(x), 1e-13)


def test_catastrophic_cancellation_is_avoided(cpu):
    """1e9 + noise of 1e-3: sum(x^2)/n - mean^2 loses every digit. The reference is numpy's
    two-pass variance of x - x[0] (exact differences, so the same variance, free of the offset)."""
    rng = np.random.default_rng(3)
    x = 1e9 + rng.normal(0.0, 1e-3, 2_000_003)
    y = x - x[0]
    want_mean, want_var = x[0] + y.mean(), y.var(ddof=1)
    naive = (x * x).mean() - x.mean() ** 2
    assert abs(naive - want_var) > 100 * want_var   # the hazard is real
    got = eagle.mean_var(x)
    assert abs(got.mean - want_mean) <= 1e-15 * want_mean
    assert abs(got.var - want_var) <= 1e-12 * want_var, (got.var, want_var)


def test_a_constant_plane_has_zero_variance(cpu):
    got = eagle.mean_var(np.full(12345, 0.1))
    assert got.mean == pytest.approx(0.1, rel=1e-15) and got.var == 0.0 and got.stderr == 0.0


@pytest.mark.parametrize("lanes, block", [(1, 1), (37, 1), (1000, 1), (5, 7), (3, 10**6)])
def test_both_lane_layouts_give_numpys_answer(cpu, lanes, block):
    """The kernel with the strided layout a GPU gets (block 1) and chunked ones, on cpu."""
    x = np.random.default_rng(4).normal(10.0, 3.0, 54_321)
    kernel = reduce_._kernel(cpu, 0, np.dtype(np.float64))
    part = np.full(4 * lanes, np.nan)
    s = cpu.stream()
    s.run(kernel, [x, x.size, lanes, block, part], lanes)
    s.synchronize()
    part = part.reshape(4, lanes)
    assert part[0].sum() == x.size                 # every value counted exactly once
    n, mean, m2 = reduce_._combine(*part)
    want = _numpy(x)
    assert n == x.size and abs(mean - want[0]) <= 1e-14 * abs(want[0])
    assert abs(m2 / (n - 1) - want[1]) <= 1e-13 * want[1]


def test_a_nan_makes_the_result_nan(cpu):
    x = np.random.default_rng(5).random(10_000)
    x[7777] = np.nan
    got = eagle.mean_var(x)
    assert math.isnan(got.mean) and math.isnan(got.var) and math.isnan(got.stderr) and got.n == 10_000


def test_an_infinity_makes_the_result_nan(cpu):
    x = np.random.default_rng(5).random(1000)
    for at in (0, 500):
        y = x.copy()
        y[at] = np.inf
        got = eagle.mean_var(y)
        assert math.isnan(got.mean) and math.isnan(got.var) and got.n == 1000


def test_one_value_has_no_variance(cpu):
    got = eagle.mean_var(np.array([4.25]))
    assert got.mean == 4.25 and math.isnan(got.var) and math.isnan(got.stderr) and got.n == 1


def test_an_empty_plane_is_refused(cpu):
    with pytest.raises(eagle.EagleValueError, match=r"eagle.mean_var: the plane is empty \(shape \(0,\)\)"):
        eagle.mean_var(np.zeros(0))


@pytest.mark.parametrize("plane, match", [
    (np.arange(10, dtype=np.int64), "holds int64; only float64 and float32"),
    (np.zeros(4, np.float16), "holds float16"),
    ([1.0, 2.0], "must be an array of float64 or float32 values, got a list"),
])
def test_wrong_planes_are_refused_naming_the_type(cpu, plane, match):
    with pytest.raises(eagle.EagleTypeError, match=match):
        eagle.mean_var(plane)


def test_a_foreign_stream_is_refused(cpu):
    with pytest.raises(eagle.EagleTypeError, match="stream must be an eagle Stream.*not a int"):
        eagle.mean_var(np.ones(4), stream=0)


def test_a_non_contiguous_plane_is_refused_in_a_child_process():
    out = run_snippet("""
        import numpy as np, eagle
        eagle.mean_var(np.ones(100)[::3])
    """)
    assert out.status == "raised" and out.eagle_error, out.describe()
    assert "contiguous" in out.exc_message, out.describe()


def test_it_runs_after_the_work_already_on_its_stream(cpu):
    src = r"""
    #include <eagle/kernel.h>
    EAGLE_KERNEL(fill, (double*, x), (double, v)) { (void)n; x[i] = v + (double)(i % 2); }
    """
    mod = eagle.compile(src, backend=cpu)
    x = cpu.zeros(100_000)
    s = cpu.stream()
    s.run(mod.fill, [x, 41.5], 100_000)   # not waited for: mean_var is ordered after it
    got = eagle.mean_var(x, stream=s)
    assert got.mean == 42.0 and got.var == pytest.approx(0.25 * 100_000 / 99_999, rel=1e-14)


def test_a_device_plane_is_reduced_on_the_device(device):
    x = np.random.default_rng(6).normal(5.0, 1.5, 3_000_001)
    _close(eagle.mean_var(device.asarray(x)), _numpy(x), 1e-13)
    _close(eagle.mean_var(device.asarray(x.astype(np.float32))), _numpy(x.astype(np.float32)), 1e-12)
    big = 1e9 + np.random.default_rng(7).normal(0.0, 1e-3, 1_000_000)
    got, want = eagle.mean_var(device.asarray(big)), _numpy(big)
    assert abs(got.var - want[1]) <= 1e-9 * want[1]
