"""The peers of benchmarks/bench_ode.py are right before they are fast: the hand-written steppers
(benchmarks/kernels/lorenz_methods.h, run here by the OpenMP loop) take scipy's RK45 steps exactly
under scipy's controller, every method lands on scipy's DOP853 solution within its accuracy, and
the CUDA kernel file compiles with NVRTC (no GPU needed)."""
import importlib.util
import os
import sys

import numpy as np
import pytest

scipy_integrate = pytest.importorskip("scipy.integrate", reason="scipy is not installed: the references are "
                                      "scipy.integrate.solve_ivp")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def bench():
    path = os.path.join(ROOT, "benchmarks", "bench_ode.py")
    spec = importlib.util.spec_from_file_location("bench_ode", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_ode", mod)
    spec.loader.exec_module(mod)
    try:
        mod.omp_library()
    except mod.Skip as e:
        pytest.skip(str(e))
    return mod


def _scipy(rho, method, rtol, atol):
    return scipy_integrate.solve_ivp(lambda t, y: [10.0 * (y[1] - y[0]), y[0] * (rho - y[2]) - y[1],
                                                   y[0] * y[1] - 8.0 / 3.0 * y[2]],
                                     (0.0, 1.0), [1.0, 0.0, 0.0], method=method, rtol=rtol, atol=atol)


def test_the_hand_written_rk45_takes_scipys_steps_under_scipys_controller(bench):
    n = 6
    peer = bench.OpenMPImpl("rk45", np.float64, n, "cpu", "I")
    res = peer.result()
    assert np.all(res["status"] == 0)
    for i, rho in enumerate(bench.rhos(n, np.float64)):
        s = _scipy(rho, "RK45", bench.TOL, bench.TOL)
        rejected = (s.nfev - 2 - 6 * (len(s.t) - 1)) // 6   # f0, the first-step probe, 6 a step
        assert peer.acc[i] == len(s.t) - 1 and peer.rej[i] == rejected, (rho, peer.acc[i], peer.rej[i])
        np.testing.assert_allclose(res["y"][i], s.y[:, -1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("key", ["rk4", "tsit5-fixed", "tsit5", "rk45"])
@pytest.mark.parametrize("controller", ["PI", "I"])
def test_every_hand_written_method_lands_on_the_reference(bench, key, controller):
    if controller == "I" and not bench.METHODS[key][2]:
        pytest.skip("fixed step: no controller")
    n = 8
    res = bench.OpenMPImpl(key, np.float64, n, "cpu", controller).result()
    rho = bench.rhos(n, np.float64)
    ref = bench.reference(rho, np.arange(n))
    err = np.max(np.abs(res["y"] - ref) / (1.0 + np.abs(ref)))
    # RK4 at dt = 1e-3: 7e-10 here; Tsit5 fixed 3e-13; adaptive at 1e-8: about 1e-8
    assert err < {"rk4": 3e-9, "tsit5-fixed": 1e-11}.get(key, 1e-6), err
    if bench.METHODS[key][2]:
        steps = res["steps"]
        assert np.all(steps > 20) and np.all(steps < 400), steps


def test_the_cuda_kernels_compile_with_nvrtc(bench):
    from test_examples import nvrtc_compile
    res, log, cubin = nvrtc_compile(bench.cuda_source().encode(), "lorenz_ode.cu",
                                    ["--gpu-architecture=sm_90", "--fmad=true"])
    assert res == 0, log
    for name in (b"lorenz_fixed_f64", b"lorenz_fixed_f32", b"lorenz_adaptive_f64", b"lorenz_adaptive_f32"):
        assert name in cubin
