"""Vern7 and Vern9 (issue 41) against references they share no code with: Kepler's equation (closed
form), the Arenstorf orbit (periodic), scipy's DOP853 at rtol 1e-13 (Lorenz), and their orders
measured from the one-step errors of the step and of the interpolant.

Why one-step errors: Verner's pairs are tuned for small error constants, so their global errors at
fixed steps on Kepler, the pendulum, Lotka-Volterra and van der Pol wander between slopes 6 and 11
until round-off (checked in numpy with the same tableaux): the local error e(h) = C h^(p+1) +
O(h^(p+2)) is the measurable form of the order. From Kepler e = 0.3 at t = 2, the successive local
slopes (minus one) of the step over h = 1, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.15 were 9.1 9.5 7.9 7.0
7.3 7.3 7.2 (Vern7) and 9.1 9.4 9.6 9.3 9.1 9.1 9.6 (Vern9, round-off from h = 0.2)."""
import math

import numpy as np
import pytest

scipy_integrate = pytest.importorskip("scipy.integrate", reason="scipy is not installed: the Lorenz reference "
                                      "is scipy.integrate.solve_ivp's DOP853")
import eagle  # noqa: E402
import eagle.ode  # noqa: E402

ORDER = {"Vern7": 7, "Vern9": 9}


def kepler(t, y, s):
    """Kepler's problem (a = 1, mu = 1) with time scaled by s: z(tau) = y(s tau) solves z' = s f(z)."""
    r = eagle.ode.math.sqrt(y[0] * y[0] + y[1] * y[1])
    r3 = r * r * r
    return (s * y[2], s * y[3], -s * y[0] / r3, -s * y[1] / r3)


def kepler_state(t, e):
    """The closed form: the state at time t of the orbit of eccentricity e that is at periapsis at
    t = 0 (Kepler's equation M = E - e sin E solved by Newton's method to round-off)."""
    M, e = np.broadcast_arrays(np.asarray(t, np.float64), np.asarray(e, np.float64))
    E = M.copy()
    for _ in range(50):
        E = E - (E - e * np.sin(E) - M) / (1.0 - e * np.cos(E))
    q = np.sqrt(1.0 - e * e)
    Ed = 1.0 / (1.0 - e * np.cos(E))
    return np.stack([np.cos(E) - e, q * np.sin(E), -np.sin(E) * Ed, q * np.cos(E) * Ed], axis=-1)


def lorenz(t, y, rho):
    return (10.0 * (y[1] - y[0]), y[0] * (rho - y[2]) - y[1], y[0] * y[1] - (8.0 / 3.0) * y[2])


MU = 0.012277471
ARENSTORF_T = 17.0652165601579625588917206249
ARENSTORF_Y0 = np.array([0.994, 0.0, 0.0, -2.00158510637908252240537862224])


def arenstorf(t, y):
    """The restricted three-body problem's periodic Arenstorf orbit (Hairer, Norsett & Wanner I, II.0)."""
    m1 = 1.0 - MU
    a = y[0] + MU
    b = y[0] - m1
    d1 = a * a + y[1] * y[1]
    d2 = b * b + y[1] * y[1]
    d1 = d1 * eagle.ode.math.sqrt(d1)
    d2 = d2 * eagle.ode.math.sqrt(d2)
    return (y[2], y[3], y[0] + 2.0 * y[3] - m1 * a / d1 - MU * b / d2, y[1] - 2.0 * y[2] - m1 * y[1] / d1 - MU * y[1] / d2)


# ---------------------------------------------------------------------------------- accuracy

@pytest.mark.slow  # 3-6 s a method (compiling with t_eval); the order and Lorenz tests run by default
@pytest.mark.parametrize("method", ["Vern7", "Vern9"])
def test_kepler_at_rtol_1e13_matches_the_closed_form_at_t1_and_at_t_eval(method):
    """Eight orbits, e in [0, 0.6], one period and a half; t_eval (33 points) through the dense output.
    scipy's DOP853 at the same tolerances errs up to 1.1e-11 here (the state near 1): allowed 4e-11."""
    e = np.linspace(0.0, 0.6, 8)
    T = 3.0 * math.pi
    t_eval = np.linspace(0.0, T, 33)
    sol = eagle.ode.solve_ivp(kepler, (0.0, T), kepler_state(0.0, e), method=method, rtol=1e-13, atol=1e-13,
                              args=(1.0,), t_eval=t_eval)
    assert np.all(sol.status == 0)
    ref = kepler_state(T, e)
    assert np.max(np.abs(sol.y - ref)) <= 4e-11
    dense = np.stack([kepler_state(t_eval, ek).T for ek in e])  # (n, d, nt)
    assert np.max(np.abs(sol.ys - dense)) <= 4e-11
    scipy_err = max(np.max(np.abs(scipy_integrate.solve_ivp(
        lambda t, y: list(_np_kepler(y)), (0.0, T), kepler_state(0.0, ek), method="DOP853", rtol=1e-13,
        atol=1e-13).y[:, -1] - kepler_state(T, ek))) for ek in e[::3])
    # no worse than scipy's 8th-order pair by more than 4x at the same tolerance
    assert np.max(np.abs(sol.y - ref)) <= 4 * max(scipy_err, 1e-13)


def _np_kepler(y):
    r3 = math.hypot(y[0], y[1]) ** 3
    return y[2], y[3], -y[0] / r3, -y[1] / r3


@pytest.mark.parametrize("method", ["Vern7", "Vern9"])
def test_lorenz_agrees_with_scipy_dop853_at_rtol_1e13(method):
    """Lorenz over [0, 1] (rho per sample): eagle and scipy at rtol = atol = 1e-13; each within a
    reasonable multiple of the tolerance of the other (chaos amplifies ~e^(0.9 t) at most here)."""
    rng = np.random.default_rng(3)
    n = 16
    y0 = rng.uniform(-2.0, 2.0, (n, 3)) + 1.0
    rho = rng.uniform(0.0, 28.0, n)
    sol = eagle.ode.solve_ivp(lorenz, (0.0, 1.0), y0, method=method, rtol=1e-13, atol=1e-13, args=(rho,))
    assert np.all(sol.status == 0)
    ref = np.array([scipy_integrate.solve_ivp(lambda t, y, r=rho[i]: list(map(float, lorenz(t, y, r))), (0.0, 1.0),
                                              y0[i], method="DOP853", rtol=1e-13, atol=1e-13).y[:, -1]
                    for i in range(n)])
    scale = 1e-13 * (np.abs(ref) + 1.0)
    assert np.max(np.abs(sol.y - ref) / scale) <= 200, np.max(np.abs(sol.y - ref) / scale)


@pytest.mark.slow  # 2 compiles, a long orbit
@pytest.mark.parametrize("method", ["Vern7", "Vern9"])
def test_arenstorf_orbit_closes_after_one_period(method):
    """The Arenstorf orbit is periodic with period T: y(T) = y(0). scipy's DOP853 at rtol = atol = 1e-13
    closes it to 2e-9 (its velocities near 2): allowed 2e-8, and at most 10x scipy's."""
    sol = eagle.ode.solve_ivp(arenstorf, (0.0, ARENSTORF_T), ARENSTORF_Y0, method=method, rtol=1e-13, atol=1e-13)
    assert np.all(sol.status == 0)
    err = np.max(np.abs(sol.y[0] - ARENSTORF_Y0))

    def f(t, y):
        m1 = 1.0 - MU
        d1 = ((y[0] + MU) ** 2 + y[1] ** 2) ** 1.5
        d2 = ((y[0] - m1) ** 2 + y[1] ** 2) ** 1.5
        return [y[2], y[3], y[0] + 2 * y[3] - m1 * (y[0] + MU) / d1 - MU * (y[0] - m1) / d2,
                y[1] - 2 * y[2] - m1 * y[1] / d1 - MU * y[1] / d2]
    ref = scipy_integrate.solve_ivp(f, (0.0, ARENSTORF_T), ARENSTORF_Y0, method="DOP853", rtol=1e-13, atol=1e-13)
    scipy_err = np.max(np.abs(ref.y[:, -1] - ARENSTORF_Y0))
    assert err <= 2e-8 and err <= 10 * scipy_err, (err, scipy_err)


# ---------------------------------------------------------------------------------- orders

# one solve's samples: h from 1.0 down to 0.15; which of them each fit uses (the asymptotic range
# above round-off, from the table in the module's docstring)
LOCAL_H = np.array([1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.15])
STEP_FIT = {"Vern7": slice(3, 8), "Vern9": slice(2, 7)}
DENSE_FIT = {"Vern7": slice(2, 6), "Vern9": slice(0, 5)}


@pytest.mark.parametrize("method", ["Vern7", "Vern9"])
def test_the_one_step_errors_of_the_step_and_of_the_interpolant_give_the_order(method):
    """One step of size h from Kepler e = 0.3 at t = 2, each h a sample (tau in [0, 1], dt = 1, time
    scaled by h). The step's error falls like h^(p+1): the fitted slope minus one is within 0.3 of p
    (measured 7.24 and 9.19). The dense output's error at theta = 0.3, 0.5, 0.7 falls at least as fast
    (slope minus one >= p - 0.3): over these steps it is still pre-asymptotic (measured 6.9-9.2 for
    Vern7, 9.1-9.5 for Vern9), so its slope is bounded below, which an interpolant of a lower order fails."""
    hs = LOCAL_H
    e, t0 = 0.3, 2.0
    th = np.array([0.3, 0.5, 0.7])
    sol = eagle.ode.solve_ivp(kepler, (0.0, 1.0), kepler_state(t0, e), method=method, dt=1.0, adaptive=False,
                              args=(hs,), t_eval=th)
    assert np.all(sol.status == 0) and np.all(sol.n_accepted == 1)
    step_err = np.max(np.abs(sol.y - kepler_state(t0 + hs, e)), axis=1)
    f = STEP_FIT[method]
    slope = np.polyfit(np.log(hs[f]), np.log(step_err[f]), 1)[0] - 1
    assert abs(slope - ORDER[method]) <= 0.3, f"{method}: step errors {step_err}, order {slope:.2f}"
    f = DENSE_FIT[method]
    for q, theta in enumerate(th):
        dense_err = np.max(np.abs(sol.ys[:, :, q] - kepler_state(t0 + theta * hs, e)), axis=1)
        slopes = np.diff(np.log(dense_err[f])) / np.diff(np.log(hs[f])) - 1
        assert np.all(slopes >= ORDER[method] - 0.3), f"{method} theta {theta}: errors {dense_err}, orders {slopes}"
    # the lazy stages are counted: one step is S evaluations, its dense output len(C_extra) more
    m = eagle.ode.METHODS[method]
    np.testing.assert_array_equal(sol.nfev, 1 + m.stages + len(m.C_extra))


@pytest.mark.slow  # three compiles a method
@pytest.mark.parametrize("method", ["Vern7", "Vern9"])
def test_adaptive_steps_scale_with_the_error_estimators_order(method):
    """Oscillator-free check of the controller: the accepted steps grow like tol^(-1/(q+1)) with q the
    embedded order (6, 8), slope within 0.06, and the error stays within 50 tol."""
    e = np.linspace(0.1, 0.5, 4)
    T = 2 * math.pi
    tols = [1e-7, 1e-9, 1e-11]
    steps, errs = [], []
    for tol in tols:
        sol = eagle.ode.solve_ivp(kepler, (0.0, T), kepler_state(0.0, e), method=method, rtol=tol, atol=tol,
                                  args=(1.0,))
        err = np.max(np.abs(sol.y - kepler_state(T, e)))
        assert err <= 50 * tol * 2
        steps.append(float(np.mean(sol.n_accepted)))
        errs.append(err)
    slope = -np.polyfit(np.log(tols), np.log(steps), 1)[0]
    assert abs(slope - 1.0 / ORDER[method]) <= 0.06, (steps, slope)


def test_a_device_kind_agrees_with_cpu_bit_for_bit_in_exact_mode_vern9(device):
    e = np.linspace(0.0, 0.6, 64)
    kw = dict(method="Vern9", rtol=1e-12, atol=1e-12, args=(1.0,), t_eval=np.linspace(0.0, 3.0, 7), exact=True)
    c = eagle.ode.solve_ivp(kepler, (0.0, 3.0), kepler_state(0.0, e), backend="cpu", **kw)
    g = eagle.ode.solve_ivp(kepler, (0.0, 3.0), kepler_state(0.0, e), backend=device.kind, **kw)
    np.testing.assert_array_equal(c.y, g.y)
    np.testing.assert_array_equal(c.ys, g.ys)
    np.testing.assert_array_equal(c.n_accepted, g.n_accepted)
