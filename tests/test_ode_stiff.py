"""eagle.ode's implicit methods (Rodas5P, Kvaerno5, Rosenbrock23) on stiff ensembles, against
independent references: scipy's Radau at rtol 1e-12 per sample (ROBER, HIRES, OREGO, Van der Pol),
closed forms (Prothero-Robinson's measured order, L-stability), and hostile input. Radau (IIA,
scipy's algorithm) is checked alongside the three the issue asks for."""
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp as scipy_ivp

import eagle.ode as eo
from eagle.errors import EagleValueError
from eagle.ode import math as em
from eagle.ode._trace import TraceError

from _stiff_problems import HIRES, OREGO, ROBER, hires, rober, vdp

METHODS = ["Rodas5P", "Kvaerno5", "Rosenbrock23", "Radau"]
ORDERS = {"Rodas5P": 5, "Kvaerno5": 5, "Rosenbrock23": 2, "Radau": 5}


def _reference(fun, y0, t1, args, t_eval=None, rtol=1e-12, atol=1e-14):
    r = scipy_ivp(fun, (0.0, t1), y0, method="Radau", rtol=rtol, atol=atol, args=args, t_eval=t_eval)
    assert r.success
    return r.y[:, -1] if t_eval is None else r.y


def _scaled_error(y, ref, rtol, atol):
    return np.max(np.abs(y - ref) / (atol + rtol * np.abs(ref)))


# ---------------------------------------------------------------- references, every method

ROBER_K1 = 0.04 * np.array([0.8, 1.0, 1.2])
ROBER_REF = {}


def _rober_ref(j):
    if j not in ROBER_REF:
        # rtol 1e-10: 1e4 below the tolerances tested; scipy's Radau takes ~1 s a sample
        ROBER_REF[j] = _reference(rober, ROBER["y0"], ROBER["t1"], (ROBER_K1[j], 3e7, 1e4), rtol=1e-10, atol=1e-16)
    return ROBER_REF[j]


@pytest.mark.parametrize("method", METHODS)
def test_robertson_ensemble_matches_radau(method):
    """The issue's card: k1 varied +-20 % per sample, t to 1e5, rtol 1e-6, atol 1e-10; every sample
    reaches t1 within a small multiple of the tolerance of scipy Radau's rtol 1e-12 solution."""
    rtol, atol = 1e-6, 1e-10
    sol = eo.solve_ivp(rober, (0.0, 1e5), np.tile(ROBER["y0"], (3, 1)), method=method, rtol=rtol, atol=atol,
                       args=(ROBER_K1, 3e7, 1e4))
    assert sol.success and np.all(sol.status == 0), sol.failure
    assert sol.jacobian == "derived from the trace"
    for j in range(3):
        err = _scaled_error(sol.y[j], _rober_ref(j), rtol, atol)
        assert err < (50 if method == "Rosenbrock23" else 20), (method, j, err)
    assert np.all(np.abs(sol.y.sum(axis=1) - 1) < 1e-8)  # mass is conserved by every linear method
    # stiff-sized steps: hundreds, not the explicit methods' 100 000 before t ~ 100
    assert np.all(sol.n_accepted < {"Rosenbrock23": 3000}.get(method, 600))


# The Test Set for IVP Solvers' reference solutions at t_end (Mazzia and Magherini, release 2.4);
# scipy's Radau at rtol 1e-12 agrees with each to 1e-12 (relative).
TEST_SET = {
    "hires": (HIRES, np.array([0.7371312573325668e-3, 0.1442485726316185e-3, 0.5888729740967575e-4,
                               0.1175651343283149e-2, 0.2386356198831331e-2, 0.6238968252742796e-2,
                               0.2849998395185769e-2, 0.2850001604814231e-2])),
    "orego": (OREGO, np.array([0.1000814870318523e1, 0.1228178521549917e4, 0.1320554942846706e3])),
    "vdpol": (dict(fun=vdp, y0=[2.0, 0.0], args=(1e6,), t1=2.0), np.array([0.1706167732170483e1,
                                                                          -0.8928097010247975e0])),
}
FAST = [("hires", "Kvaerno5"), ("orego", "Rodas5P"), ("vdpol", "Rodas5P")]
SLOW = [(p, m) for p in TEST_SET for m in METHODS if (p, m) not in FAST]


def _test_set(problem, method):
    p, ref = TEST_SET[problem]
    tol = {"Rosenbrock23": 1e-6}.get(method, 1e-8)
    rtol = atol = tol
    if problem == "vdpol":
        rtol = atol = tol * 10
    sol = eo.solve_ivp(p["fun"], (0.0, p["t1"]), np.tile(p["y0"], (2, 1)), method=method, rtol=rtol, atol=atol,
                       args=p["args"], max_steps=1_000_000)
    assert np.all(sol.status == 0), sol.failure
    np.testing.assert_array_equal(sol.y[0], sol.y[1])  # samples are independent
    err = _scaled_error(sol.y[0], ref, rtol, atol)
    # OREGO amplifies local errors by ~1e3 (Hairer-Wanner); Rosenbrock23 is 2nd order
    assert err < {"orego": 1e3}.get(problem, 50) * (20 if method == "Rosenbrock23" else 1), (problem, method, err)


@pytest.mark.parametrize("problem,method", FAST)
def test_test_set_reference_solutions(problem, method):
    _test_set(problem, method)


@pytest.mark.slow
@pytest.mark.parametrize("problem,method", SLOW)
def test_test_set_reference_solutions_every_method(problem, method):
    _test_set(problem, method)


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_van_der_pol_mu_1e3_samples(method):
    rtol, atol = 1e-6, 1e-8
    mus = np.array([1e3, 8e2])
    y0 = np.array([2.0, 0.0])
    sol = eo.solve_ivp(vdp, (0.0, 2.0), y0, method=method, rtol=rtol, atol=atol, args=(mus,))
    assert np.all(sol.status == 0), sol.failure
    for j, mu in enumerate(mus):
        ref = _reference(vdp, y0, 2.0, (mu,))
        assert _scaled_error(sol.y[j], ref, rtol, atol) < 200, (j, sol.y[j], ref)


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_robertson_tight_tolerance_many_samples(method):
    n = 32
    k1 = 0.04 * np.linspace(0.8, 1.2, n)
    rtol, atol = (1e-7, 1e-12) if method == "Rosenbrock23" else (1e-9, 1e-14)  # 2nd order: not at 1e-9
    sol = eo.solve_ivp(rober, (0.0, 1e5), np.tile(ROBER["y0"], (n, 1)), method=method, rtol=rtol, atol=atol,
                       args=(k1, 3e7, 1e4), max_steps=1_000_000)
    assert np.all(sol.status == 0)
    for j in (0, n // 2, n - 1):
        ref = _reference(rober, ROBER["y0"], 1e5, (k1[j], 3e7, 1e4))
        assert _scaled_error(sol.y[j], ref, rtol, atol) < 100


# ---------------------------------------------------------------- order and stability

def prothero_robinson(t, y, lam, s):
    """y' = lam (y - sin t) + cos t in the time tau = t / s: u(tau) = y(s tau), u' = s f(s tau, u).
    A Runge-Kutta or Rosenbrock step of size h on u is one of size s h on y (both are invariant
    under a linear change of time), so one solve with fixed dt and samples s = 1, 1/2, 1/4 (each
    over tau to t1 / s) takes steps h, h/2, h/4 -- one compile for the three."""
    t = s * t
    return [s * (lam * (y[0] - np.sin(t)) + np.cos(t))]


@pytest.mark.parametrize("method", METHODS)
def test_measured_order_on_prothero_robinson(method):
    """Fixed steps h, h/2, h/4 on Prothero-Robinson, y(0) = 1 (solution sin t + e^(lam t)), lam = -2
    (the classical regime), to t1 = 2: the errors' log2 ratios are the method's order within 0.3."""
    lam, t1 = -2.0, 2.0
    exact = math.sin(t1) + math.exp(lam * t1)
    n = {"Rosenbrock23": 40, "Rodas5P": 8, "Kvaerno5": 8, "Radau": 8}[method]
    scale = np.array([1.0, 0.5, 0.25])
    sol = eo.solve_ivp(prothero_robinson, (0.0, t1 / scale), [1.0], method=method, dt=t1 / n, adaptive=False,
                       args=(lam, scale))
    assert np.all(sol.status == 0)
    assert list(sol.n_accepted) == [n, 2 * n, 4 * n]
    errs = np.abs(sol.y[:, 0] - exact)
    orders = np.log2(errs[:-1] / errs[1:])
    assert np.all(np.abs(orders - ORDERS[method]) < 0.3), (method, errs, orders)


@pytest.mark.parametrize("method", METHODS)
def test_l_stable_at_huge_steps(method):
    """y' = -1e6 (y - cos t) - sin t from y(0) = 2 (far off the slow solution cos t) with fixed steps
    of 0.5 (h lambda = -5e5): an L-stable method damps the transient at once and stays on cos t."""
    def f(t, y):
        return [-1e6 * (y[0] - np.cos(t)) - np.sin(t)]
    sol = eo.solve_ivp(f, (0.0, 50.0), [2.0], method=method, dt=0.5, adaptive=False, t_eval=np.arange(1.0, 50.5, 1.0))
    assert sol.status[0] == 0
    ys = sol.ys[0, 0]
    assert np.all(np.isfinite(ys))
    # bounded and on the slow solution to the method's accuracy at h = 0.5 (h^2 ~ 0.25 for order 2)
    assert np.max(np.abs(ys - np.cos(np.arange(1.0, 50.5, 1.0)))) < (0.05 if method == "Rosenbrock23" else 1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_adaptive_steps_beyond_the_explicit_limit(method):
    def f(t, y):
        return [-1e6 * (y[0] - np.cos(t)) - np.sin(t)]
    ad = eo.solve_ivp(f, (0.0, 50.0), [2.0], method=method, rtol=1e-6, atol=1e-9)
    assert ad.status[0] == 0 and abs(ad.y[0, 0] - math.cos(50.0)) < 1e-5
    # an explicit method's stability limit (h < 2.8e-6) would need 2e7 steps; the 2nd-order
    # Rosenbrock23 is held by accuracy at rtol 1e-6 (order reduction of its estimate: ~5e4 steps)
    assert ad.n_accepted[0] < (100_000 if method == "Rosenbrock23" else 2000)


# ---------------------------------------------------------------- what an explicit method has, too

def test_t_eval_events_and_reuse():
    """Rodas5P with t_eval (dense output against Radau's), a terminal event (y0 falls to 0.5), and
    one Solver solved twice with new arguments."""
    def half(t, y, k1, k2, k3):
        return y[0] - 0.5
    half.terminal = True
    te = np.array([1e-3, 1.0, 40.0, 500.0])
    s = eo.Solver(rober, t_span=(0.0, 1e5), method="Rodas5P", rtol=1e-8, atol=1e-12, t_eval=te, events=[half])
    k1 = np.array([0.04, 0.03])
    sol = s.solve(np.tile(ROBER["y0"], (2, 1)), (k1, 3e7, 1e4))
    assert np.all(sol.status == 1)
    for j in range(2):
        ref = scipy_ivp(rober, (0.0, 1e5), ROBER["y0"], method="Radau", rtol=1e-10, atol=1e-16, t_eval=te,
                        args=(k1[j], 3e7, 1e4), events=[half])
        tev = ref.t_events[0][0]
        assert abs(sol.t_events[0][j] - tev) < 1e-6 * tev
        ok = te < tev
        assert np.all(np.isnan(sol.ys[j][:, ~ok]))
        np.testing.assert_allclose(sol.ys[j][:, ok], ref.y[:, :ok.sum()], rtol=1e-5, atol=1e-11)
    again = s.solve(np.tile(ROBER["y0"], (2, 1)), (k1 * 1.1, 3e7, 1e4))
    assert np.all(again.t_events[0] < sol.t_events[0])


def test_float32():
    sol = eo.solve_ivp(rober, (0.0, 1e5), np.tile(np.float32(ROBER["y0"]), (2, 1)), method="Rodas5P", rtol=1e-4,
                       atol=1e-7, args=(np.float32([0.04, 0.05]), 3e7, 1e4))
    assert sol.y.dtype == np.float32 and np.all(sol.status == 0)
    assert _scaled_error(sol.y[0].astype(float), _rober_ref(1), 1e-4, 1e-7) < 50


def test_exact_mode_and_split_invariance():
    """exact=True compiles bit-exact; how the steps are split between calls of the step body does
    not change a bit (by default the Jacobian is recomputed at every (t, y), never carried across
    calls; with EAGLE_ODE_KVAERNO_REUSE=1 see test_kvaerno5_reuse_exact_split_invariance_and_solver_reuse)."""
    for method in ("Kvaerno5", "Rosenbrock23"):  # both FSAL: nfev does not count a call's re-evaluation
        kw = dict(method=method, rtol=1e-6, atol=1e-10, exact=True)
        y0 = np.tile(ROBER["y0"], (3, 1))
        a = eo.Solver(rober, t_span=(0.0, 1e5), steps_per_call=7, **kw).solve(y0, (ROBER_K1, 3e7, 1e4))
        b = eo.Solver(rober, t_span=(0.0, 1e5), steps_per_call=256, **kw).solve(y0, (ROBER_K1, 3e7, 1e4))
        # (njev and nlu do count a J made again at a call's start after a rejection: not compared)
        for name in ("y", "n_accepted", "n_rejected", "nfev"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=f"{method}: {name}")


# ---------------------------------------------------------------- Kvaerno5 keeping J across steps

@pytest.fixture
def kv_reuse(monkeypatch):
    """Kvaerno5 keeps J and W's LU across steps (eagle/ode/_implicit.py: EAGLE_ODE_KVAERNO_REUSE=1)."""
    monkeypatch.setenv("EAGLE_ODE_KVAERNO_REUSE", "1")


def test_kvaerno5_keeps_its_jacobian_across_steps(kv_reuse, monkeypatch):
    """With the reuse on, ROBER and HIRES take far fewer Jacobians (and LUs) than steps and stay
    within the reference tests' multiples of the tolerance; off (the default), J is evaluated
    at every step."""
    rtol, atol = 1e-6, 1e-10
    y0 = np.tile(ROBER["y0"], (3, 1))
    sol = eo.solve_ivp(rober, (0.0, 1e5), y0, method="Kvaerno5", rtol=rtol, atol=atol, args=(ROBER_K1, 3e7, 1e4))
    assert np.all(sol.status == 0), sol.failure
    assert "ode_refactor" in sol.source
    for j in range(3):
        assert _scaled_error(sol.y[j], _rober_ref(j), rtol, atol) < 20, j
    assert np.all(np.abs(sol.y.sum(axis=1) - 1) < 1e-8)
    assert np.all(sol.njev < 0.5 * sol.n_accepted) and np.all(sol.nlu < sol.n_accepted), (sol.njev, sol.nlu)
    assert np.all(sol.njev >= 1) and np.all(sol.nlu >= sol.njev)
    p, ref = TEST_SET["hires"]
    h = eo.solve_ivp(p["fun"], (0.0, p["t1"]), np.tile(p["y0"], (2, 1)), method="Kvaerno5", rtol=1e-8, atol=1e-8)
    assert np.all(h.status == 0)
    assert _scaled_error(h.y[0], ref, 1e-8, 1e-8) < 50
    assert np.all(h.njev < 0.25 * h.n_accepted) and np.all(h.nlu < 0.5 * h.n_accepted), (h.njev, h.nlu, h.n_accepted)
    monkeypatch.delenv("EAGLE_ODE_KVAERNO_REUSE")
    fresh = eo.solve_ivp(rober, (0.0, 1e5), y0, method="Kvaerno5", rtol=rtol, atol=atol, args=(ROBER_K1, 3e7, 1e4))
    assert "ode_refactor" not in fresh.source
    assert np.all(fresh.njev >= fresh.n_accepted) and np.all(fresh.njev <= fresh.n_accepted + fresh.n_rejected)


def test_kvaerno5_reuse_exact_split_invariance_and_solver_reuse(kv_reuse):
    """J, W's h and Newton's state persist across calls of the step body (J in a plane of its own,
    the LU made again from it at a call's start): how the steps are split does not change a bit,
    and a Solver solved again starts each sample afresh (the same bits as its first solve)."""
    kw = dict(method="Kvaerno5", rtol=1e-6, atol=1e-10, exact=True, t_eval=np.array([1.0, 100.0, 1e4]))
    y0 = np.tile(ROBER["y0"], (3, 1))
    a = eo.Solver(rober, t_span=(0.0, 1e5), steps_per_call=7, **kw)
    ra = a.solve(y0, (ROBER_K1, 3e7, 1e4))
    rb = eo.Solver(rober, t_span=(0.0, 1e5), steps_per_call=256, **kw).solve(y0, (ROBER_K1, 3e7, 1e4))
    for name in ("y", "ys", "n_accepted", "n_rejected", "nfev", "njev", "nlu"):
        np.testing.assert_array_equal(getattr(ra, name), getattr(rb, name), err_msg=name)
    a.solve(y0, (ROBER_K1 * 1.1, 3e7, 1e4))
    again = a.solve(y0, (ROBER_K1, 3e7, 1e4))
    for name in ("y", "n_accepted", "njev", "nlu"):
        np.testing.assert_array_equal(getattr(again, name), getattr(rb, name), err_msg=name)


def test_kvaerno5_reuse_order_events_float32_and_failures(kv_reuse):
    """With the reuse on: Prothero-Robinson's measured order is 5 within 0.3 (fixed steps: one J
    for the linear problem), a terminal event and t_eval agree with Radau, float32 runs, and a
    sample whose J is NaN fails alone with code 9."""
    lam, t1, n = -2.0, 2.0, 8
    scale = np.array([1.0, 0.5, 0.25])
    sol = eo.solve_ivp(prothero_robinson, (0.0, t1 / scale), [1.0], method="Kvaerno5", dt=t1 / n, adaptive=False,
                       args=(lam, scale))
    assert np.all(sol.status == 0) and np.all(sol.njev == 1)
    errs = np.abs(sol.y[:, 0] - (math.sin(t1) + math.exp(lam * t1)))
    orders = np.log2(errs[:-1] / errs[1:])
    assert np.all(np.abs(orders - 5) < 0.3), (errs, orders)

    def half(t, y, k1, k2, k3):
        return y[0] - 0.5
    half.terminal = True
    te = np.array([1e-3, 1.0, 40.0, 500.0])
    k1 = np.array([0.04, 0.03])
    ev = eo.solve_ivp(rober, (0.0, 1e5), ROBER["y0"], method="Kvaerno5", rtol=1e-8, atol=1e-12, t_eval=te,
                      events=[half], args=(k1, 3e7, 1e4))
    assert np.all(ev.status == 1)
    for j in range(2):
        ref = scipy_ivp(rober, (0.0, 1e5), ROBER["y0"], method="Radau", rtol=1e-10, atol=1e-16, t_eval=te,
                        args=(k1[j], 3e7, 1e4), events=[half])
        assert abs(ev.t_events[0][j] - ref.t_events[0][0]) < 1e-6 * ref.t_events[0][0]
        ok = te < ref.t_events[0][0]
        np.testing.assert_allclose(ev.ys[j][:, ok], ref.y[:, :ok.sum()], rtol=1e-5, atol=1e-11)

    f32 = eo.solve_ivp(rober, (0.0, 1e5), np.tile(np.float32(ROBER["y0"]), (2, 1)), method="Kvaerno5", rtol=1e-4,
                       atol=1e-7, args=(np.float32([0.04, 0.05]), 3e7, 1e4))
    assert f32.y.dtype == np.float32 and np.all(f32.status == 0)
    assert _scaled_error(f32.y[0].astype(float), _rober_ref(1), 1e-4, 1e-7) < 50

    def f(t, y, a):
        return [-a * y[0]]

    def jac(t, y, a):
        return [[em.where(a > 1.5, np.nan, -a)]]
    bad = eo.solve_ivp(f, (0.0, 1.0), [1.0], method="Kvaerno5", args=(np.array([1.0, 2.0]),), jac=jac)
    assert list(bad.status) == [0, -1] and bad.failure[1] == 9
    assert abs(bad.y[0, 0] - math.exp(-1.0)) < 1e-5


def test_kvaerno5_reuse_switch_is_checked(monkeypatch):
    monkeypatch.setenv("EAGLE_ODE_KVAERNO_REUSE", "yes")
    with pytest.raises(EagleValueError, match="EAGLE_ODE_KVAERNO_REUSE"):
        eo.solve_ivp(rober, (0.0, 1.0), ROBER["y0"], method="Kvaerno5", args=(0.04, 3e7, 1e4))


def test_implicit_counters():
    """njev / nlu: Rodas5P evaluates J once per accepted step (a rejection reuses it) and factors W
    for every attempt's h; the explicit methods have none."""
    sol = eo.solve_ivp(rober, (0.0, 1e5), np.tile(ROBER["y0"], (2, 1)), method="Rodas5P", rtol=1e-6, atol=1e-10,
                       args=(np.array([0.04, 0.03]), 3e7, 1e4))
    assert np.all(sol.njev >= sol.n_accepted) and np.all(sol.njev <= sol.n_accepted + sol.n_rejected + 1)
    assert np.all(sol.nlu >= sol.njev) and np.all(sol.nlu <= sol.n_accepted + sol.n_rejected + 1)
    ex = eo.solve_ivp(lambda t, y: [-y[0]], (0.0, 1.0), [1.0])
    assert ex.njev is None and ex.nlu is None


@pytest.mark.gpu
@pytest.mark.parametrize("method", METHODS)
def test_cpu_equals_cuda_bit_for_bit_in_exact_mode(method, cuda):
    n = 256
    k1 = 0.04 * np.linspace(0.8, 1.2, n)
    y0 = np.tile(ROBER["y0"], (n, 1))
    kw = dict(method=method, rtol=1e-6, atol=1e-10, exact=True, t_eval=np.array([1.0, 100.0, 1e4]))
    c = eo.solve_ivp(rober, (0.0, 1e5), y0, args=(k1, 3e7, 1e4), backend="cpu", **kw)
    g = eo.solve_ivp(rober, (0.0, 1e5), y0, args=(k1, 3e7, 1e4), backend=cuda, **kw)
    for name in ("y", "t", "status", "nfev", "n_accepted", "n_rejected", "ys"):
        np.testing.assert_array_equal(getattr(g, name), getattr(c, name), err_msg=name)


# ---------------------------------------------------------------- the Jacobian's sources

def test_user_jac_and_c_rhs_finite_differences():
    def jac(t, y, k1, k2, k3):
        return [[-k1, k3 * y[2], k3 * y[1]],
                [k1, -2 * k2 * y[1] - k3 * y[2], -k3 * y[1]],
                [0.0, 2 * k2 * y[1], 0.0]]
    kw = dict(method="Rodas5P", rtol=1e-7, atol=1e-11)
    derived = eo.solve_ivp(rober, (0.0, 1e5), ROBER["y0"], args=(0.04, 3e7, 1e4), **kw)
    user = eo.solve_ivp(rober, (0.0, 1e5), ROBER["y0"], args=(0.04, 3e7, 1e4), jac=jac, **kw)
    assert user.jacobian == "given (jac=)"
    np.testing.assert_allclose(user.y, derived.y, rtol=1e-12, atol=1e-18)  # the same J: the same steps
    crhs = eo.C("""
EAGLE_FN void rober_c(const EAGLE_ODE_REAL t, const EAGLE_ODE_REAL* y, const EAGLE_ODE_REAL* a, EAGLE_ODE_REAL* dy) {
    (void)t;
    dy[0] = -a[0] * y[0] + a[2] * y[1] * y[2];
    dy[1] = a[0] * y[0] - a[1] * y[1] * y[1] - a[2] * y[1] * y[2];
    dy[2] = a[1] * y[1] * y[1];
}""")
    fd = eo.solve_ivp(crhs, (0.0, 1e5), ROBER["y0"], args=(0.04, 3e7, 1e4), **kw)
    assert fd.jacobian == "finite differences" and fd.status[0] == 0
    assert _scaled_error(fd.y[0], _rober_ref(1), 1e-7, 1e-11) < 50


def test_explicit_method_says_stiff():
    sol = eo.solve_ivp(rober, (0.0, 1e5), ROBER["y0"], method="Tsit5", rtol=1e-6, atol=1e-10,
                       args=(0.04, 3e7, 1e4), max_steps=3000)
    assert sol.status[0] == -1
    msg = sol.message[sol.failure[0]]
    assert "stiff" in msg and "Rodas5P" in msg


# ---------------------------------------------------------------- hostile input

def test_hostile_jac_and_sizes():
    y0, args = ROBER["y0"], (0.04, 3e7, 1e4)
    with pytest.raises(TraceError, match=r"jac.*\(3, 3\).*shape \(2, 3\)"):
        eo.solve_ivp(rober, (0.0, 1.0), y0, method="Rodas5P", args=args,
                     jac=lambda t, y, a, b, c: [[1.0, 0, 0], [0, 1.0, 0]])

    def raising(t, y, a, b, c):
        raise RuntimeError("no Jacobian here")
    with pytest.raises(TraceError, match="jac raised RuntimeError.*no Jacobian here"):
        eo.solve_ivp(rober, (0.0, 1.0), y0, method="Rodas5P", args=args, jac=raising)
    with pytest.raises(EagleValueError, match="jac must be a callable"):
        eo.solve_ivp(rober, (0.0, 1.0), y0, method="Rodas5P", args=args, jac="dense")
    with pytest.raises(EagleValueError, match="jac= is for the implicit methods"):
        eo.solve_ivp(rober, (0.0, 1.0), y0, method="Tsit5", args=args, jac=lambda t, y, *a: np.eye(3))
    with pytest.raises(EagleValueError, match=r"at most 64 state components \(n_state = 65\)"):
        eo.solve_ivp(lambda t, y: -y, (0.0, 1.0), np.ones(65), method="Kvaerno5")


def test_bad_samples_fail_alone():
    """A NaN initial state is refused naming y0 (before anything runs); a Jacobian that is NaN for
    one sample (its iteration matrix cannot be factored): that sample fails with its own code; the
    others finish."""
    y0 = np.tile(ROBER["y0"], (3, 1))
    y0[1, 0] = np.nan
    with pytest.raises(EagleValueError, match=r"y0\[1, 0\] = nan is not finite"):
        eo.solve_ivp(rober, (0.0, 10.0), y0, method="Rodas5P", args=(0.04, 3e7, 1e4))

    def f(t, y, a):
        return [-a * y[0]]

    def jac(t, y, a):
        return [[em.where(a > 1.5, np.nan, -a)]]
    for method in ["Rodas5P", "Kvaerno5", "Radau"]:
        sol = eo.solve_ivp(f, (0.0, 1.0), [1.0], method=method, args=(np.array([1.0, 2.0]),), jac=jac)
        assert list(sol.status) == [0, -1], method
        assert sol.failure[1] == 9 and "singular" in sol.message[9]
        assert abs(sol.y[0, 0] - math.exp(-1.0)) < 1e-5


@pytest.mark.parametrize("method", METHODS)
def test_stiff_source_compiles_for_cuda_with_nvrtc_and_no_gpu(method):
    """The generated stepper (LU, Jacobian, attempt called as __noinline__ device functions) is
    valid CUDA in exact mode's flags: what the H200 run compiles."""
    from _nvrtc import BIT_EXACT, nvrtc_compile
    s = eo.Solver(hires, t_span=(0.0, 1.0), n_state=8, n_args=0, method=method, t_eval=[0.5],
                  events=[lambda t, y: y[0] - 0.5])
    res, log, cubin = nvrtc_compile(s.source.encode(), "stiff.cu", BIT_EXACT)
    assert res == 0, log
    assert b"ode_step_drain" in cubin and b"ode_init" in cubin


@pytest.mark.slow
@pytest.mark.parametrize("method", ["Rodas5P", "Kvaerno5"])
def test_pollu_20_species_matches_radau(method):
    from _stiff_problems import POLLU
    rtol, atol = 1e-7, 1e-10
    y0 = np.array(POLLU["y0"])
    ys = np.stack([y0, y0 * 1.1])
    sol = eo.solve_ivp(POLLU["fun"], (0.0, 60.0), ys, method=method, rtol=rtol, atol=atol)
    assert np.all(sol.status == 0), sol.failure
    for j in range(2):
        ref = _reference(POLLU["fun"], ys[j], 60.0, ())
        assert _scaled_error(sol.y[j], ref, rtol, atol) < 50, (method, j)


@pytest.mark.slow
def test_64_components_heat_chain_against_the_matrix_exponential():
    """The largest system the implicit methods take: y' = A y, A the 64-point second difference
    (tridiagonal, stiffness ratio ~1.6e3 x 64^2), against expm(A t1) y0."""
    from scipy.linalg import expm
    d = 64
    A = (np.diag(np.full(d, -2.0)) + np.diag(np.ones(d - 1), 1) + np.diag(np.ones(d - 1), -1)) * (d + 1) ** 2

    def heat(t, y):
        return [(d + 1) ** 2 * ((y[k - 1] if k > 0 else 0.0) - 2.0 * y[k] + (y[k + 1] if k < d - 1 else 0.0))
                for k in range(d)]
    x = np.linspace(0, 1, d + 2)[1:-1]
    y0 = np.sin(np.pi * x) + 0.5 * np.sin(7 * np.pi * x)
    ref = expm(A * 0.05) @ y0
    sol = eo.solve_ivp(heat, (0.0, 0.05), y0, method="Rodas5P", rtol=1e-8, atol=1e-10)
    assert sol.status[0] == 0 and sol.jacobian == "derived from the trace"
    assert np.max(np.abs(sol.y[0] - ref)) < 1e-6


# ---------------------------------------------------------------- Rosenbrock23 against ode23s itself

def _ode23s_reference(fun, jac, y0, t1, rtol, atol):
    """Shampine and Reichelt's ode23s step (SIAM J. Sci. Comput. 18 (1997), section 3.1), written
    independently in numpy: W = I - h d J, d = 1/(2 + sqrt 2), e32 = 6 + sqrt 2, f autonomous;
    error h/6 (k1 - 2 k2 + k3) in scipy's RMS norm of err / (atol + rtol max(|y|, |ynew|)); scipy's
    I controller (safety 0.9, factors [0.2, 10], no growth right after a rejection); MATLAB's
    ode23s first step (1.25 |f0 / max(|y0|, atol/rtol)|_inf / rtol^(1/3))^-1. Returns the final
    state and the accepted and rejected step counts."""
    d, e32 = 1.0 / (2.0 + math.sqrt(2.0)), 6.0 + math.sqrt(2.0)
    t, y = 0.0, np.array(y0, dtype=float)
    f0 = np.asarray(fun(t, y), dtype=float)
    rh = 1.25 * np.max(np.abs(f0) / np.maximum(np.abs(y), atol / rtol)) / rtol ** (1 / 3)
    h = min(t1, 1.0 / rh)
    nacc = nrej = 0
    rejected = False
    while t < t1:
        h = min(h, t1 - t)
        W = np.eye(len(y)) - h * d * np.asarray(jac(t, y), dtype=float)
        k1 = np.linalg.solve(W, f0)
        f1 = np.asarray(fun(t + 0.5 * h, y + 0.5 * h * k1), dtype=float)
        k2 = np.linalg.solve(W, f1 - k1) + k1
        ynew = y + h * k2
        f2 = np.asarray(fun(t + h, ynew), dtype=float)
        k3 = np.linalg.solve(W, f2 - e32 * (k2 - f1) - 2.0 * (k1 - f0))
        sc = atol + rtol * np.maximum(np.abs(y), np.abs(ynew))
        err = np.sqrt(np.mean((h / 6.0 * (k1 - 2.0 * k2 + k3) / sc) ** 2))
        if not err < 1:
            nrej += 1
            h *= max(0.2, 0.9 * err ** (-1 / 3))
            rejected = True
            continue
        t, y, f0 = t + h, ynew, f2
        nacc += 1
        fac = 10.0 if err == 0 else min(10.0, 0.9 * err ** (-1 / 3))
        h *= min(fac, 1.0) if rejected else max(fac, 0.2)
        rejected = False
    return y, nacc, nrej


def _rober_jac(t, y, k1, k2, k3):
    return [[-k1, k3 * y[2], k3 * y[1]],
            [k1, -2 * k2 * y[1] - k3 * y[2], -k3 * y[1]],
            [0.0, 2 * k2 * y[1], 0.0]]


def _hires_jac(t, y):
    J = np.zeros((8, 8))
    J[0, :3] = -1.71, 0.43, 8.32
    J[1, :2] = 1.71, -8.75
    J[2, 2:5] = -10.03, 0.43, 0.035
    J[3, 1:4] = 8.32, 1.71, -1.12
    J[4, 4:7] = -1.745, 0.43, 0.43
    J[5, 3:8] = 0.69, 1.71, -280.0 * y[7] - 0.43, 0.69, -280.0 * y[5]
    J[6, 5:8] = 280.0 * y[7], -1.81, 280.0 * y[5]
    J[7, 5:8] = -280.0 * y[7], 1.81, -280.0 * y[5]
    return J


# problem: (fun, jac, args, atol, the reference's accepted steps at rtol 1e-6 when this was written)
_ODE23S_CASES = {"rober": (rober, _rober_jac, (0.04, 3e7, 1e4), 1e-10, 661),
                 "hires": (hires, _hires_jac, (), 1e-8, 724)}


@pytest.mark.parametrize("problem", sorted(_ODE23S_CASES))
def test_rosenbrock23_steps_as_ode23s(problem):
    """Regression (a suspected inefficiency of Rosenbrock23 on ROBER and HIRES): at rtol 1e-6 (atol
    1e-10 ROBER, 1e-8 HIRES) the independent ode23s above takes 661 (ROBER; max absolute error
    7.7e-7 against scipy's Radau) and 724 (HIRES) accepted steps; eagle's Rosenbrock23 with the I
    controller (the same rules) must take the same steps within 3 % and follow the same path. The PI
    controller (eagle's default) is more cautious (965 and 968 steps when this was written, with
    about half the error: the same cost at matched achieved error): bounded at 1.6x the
    reference's count, and as accurate."""
    fun, jac, a, atol, expected = _ODE23S_CASES[problem]
    rtol = 1e-6
    p = {"rober": ROBER, "hires": HIRES}[problem]
    yr, nr, _ = _ode23s_reference(lambda t, y: fun(t, y, *a), lambda t, y: jac(t, y, *a), p["y0"], p["t1"], rtol, atol)
    assert abs(nr - expected) <= 0.05 * expected, nr  # the reference itself (scipy's controller rules, float64)
    truth = _rober_ref(1) if problem == "rober" else _reference(fun, p["y0"], p["t1"], a)  # (ROBER: k1 = 0.04)
    assert _scaled_error(yr, truth, rtol, atol) < 50
    y0 = np.array([p["y0"]])
    sol = eo.solve_ivp(fun, (0.0, p["t1"]), y0, method="Rosenbrock23", rtol=rtol, atol=atol, args=a, controller="I")
    assert sol.success
    n = int(sol.n_accepted[0])
    assert abs(n - nr) <= 0.03 * nr, (n, nr)
    assert np.max(np.abs(sol.y[0] - yr) / (atol + rtol * np.abs(truth))) < 5  # the same path, not just as accurate
    assert _scaled_error(sol.y[0], truth, rtol, atol) < 50
    pi = eo.solve_ivp(fun, (0.0, p["t1"]), y0, method="Rosenbrock23", rtol=rtol, atol=atol, args=a)
    assert pi.success and int(pi.n_accepted[0]) <= 1.6 * nr, (int(pi.n_accepted[0]), nr)
    assert _scaled_error(pi.y[0], truth, rtol, atol) < 50
