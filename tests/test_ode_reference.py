"""eagle.ode against references it does not share code with (issue 26): scipy.integrate.solve_ivp at
tight tolerance, and closed forms (harmonic oscillator, Kepler orbit, free fall, y' = y^2).

Every test runs on the cpu backend; the same tests run on cuda where a GPU is usable (the `kind`
fixture), and one test asks cpu == cuda bit for bit in exact mode. Tolerances are stated per test
as multiples of the accuracy asked for (rtol |y| + atol); each multiple was checked against what
scipy's own integrators reach on the same samples, so a right solver passes with a margin and a wrong
tableau, controller or interpolant does not.
"""
import functools
import math

import numpy as np
import pytest

scipy_integrate = pytest.importorskip("scipy.integrate", reason="scipy is not installed: the references are "
                                      "scipy.integrate.solve_ivp")
import eagle  # noqa: E402
import eagle.ode  # noqa: E402

ADAPTIVE = ["RK23", "RK45", "Tsit5", "DOP853"]
# the order of the solution each method propagates, and of its error estimator (steps ~ tol^(-1/(q+1)))
ORDER = {"Euler": 1, "RK4": 4, "RK23": 3, "RK45": 5, "Tsit5": 5, "DOP853": 8}
ERROR_ORDER = {"RK23": 2, "RK45": 4, "Tsit5": 4, "DOP853": 7}
RTOL, ATOL = 1e-6, 1e-8
K = 50  # a sample's error may be K (rtol |y| + atol); scipy reaches <= 24 on these samples (RK23, Lorenz)


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu),
                        pytest.param("opencl", marks=pytest.mark.opencl)])
def kind(request):
    """The backend a test runs on: cpu always; cuda where a GPU is usable, opencl where
    $EAGLE_BACKEND_OPENCL names a backend with a platform (each skipped naming why)."""
    if request.param != "cpu":
        request.getfixturevalue(request.param)
    return request.param


def solve(kind, fun, t_span, y0, **kw):
    return eagle.ode.solve_ivp(fun, t_span, y0, backend=kind, **kw)


def per_sample_error(y, ref):
    """max over components of |y - ref|, per sample."""
    return np.max(np.abs(np.asarray(y, np.float64) - ref), axis=1)


def allowed(ref, rtol, atol, k=K):
    return k * (rtol * np.max(np.abs(ref), axis=1) + atol)


# ---------------------------------------------------------------------------------- the problems

def lorenz(t, y, rho):
    return (10.0 * (y[1] - y[0]), y[0] * (rho - y[2]) - y[1], y[0] * y[1] - (8.0 / 3.0) * y[2])


def van_der_pol(t, y, mu):
    return (y[1], mu * (1.0 - y[0] * y[0]) * y[1] - y[0])


def kepler(t, y):
    r = eagle.ode.math.sqrt(y[0] * y[0] + y[1] * y[1])
    r3 = r * r * r
    return (y[2], y[3], -y[0] / r3, -y[1] / r3)


def oscillator(t, y, s):
    """x'' = -x with time scaled by s: z(tau) = y(s tau) solves z' = s f(z). s = 1 is the plain oscillator."""
    return (s * y[1], -s * y[0])


def _numpy(fun):
    """The same right-hand side for scipy (numpy floats), with eagle.ode.math's sqrt replaced."""
    if fun is kepler:
        def f(t, y):
            r3 = math.sqrt(y[0] * y[0] + y[1] * y[1]) ** 3
            return [y[2], y[3], -y[0] / r3, -y[1] / r3]
        return f
    return lambda t, y, *a: list(fun(t, y, *a))


def problem(name, n=32, seed=0):
    """(fun, t_span, y0 (n, d), args, reference final states (n, d)) of one of the three problems."""
    return _problem(name, n, seed)


@functools.lru_cache(maxsize=None)
def _problem(name, n, seed):
    rng = np.random.default_rng(seed)
    if name == "lorenz":  # chaotic: a short span, rho per sample
        fun, span = lorenz, (0.0, 1.0)
        y0 = rng.uniform(-2.0, 2.0, (n, 3)) + 1.0
        args = (rng.uniform(0.0, 28.0, n),)
    elif name == "van_der_pol":  # mu = 5 (a scalar argument): relaxation, stiff-ish
        fun, span = van_der_pol, (0.0, 5.0)
        y0 = rng.uniform(-2.0, 2.0, (n, 2))
        args = (5.0,)
    else:  # Kepler, a = 1, eccentricity per sample, from periapsis to apoapsis (half a period, pi)
        fun, span = kepler, (0.0, math.pi)
        e = rng.uniform(0.0, 0.7, n)
        y0 = np.stack([1.0 - e, 0.0 * e, 0.0 * e, np.sqrt((1.0 + e) / (1.0 - e))], axis=1)
        args = ()
    if name == "kepler":
        ref = np.stack([-(1.0 + e), 0.0 * e, 0.0 * e, -np.sqrt((1.0 - e) / (1.0 + e))], axis=1)
    else:
        f = _numpy(fun)
        ref = np.array([scipy_integrate.solve_ivp(
            f, span, y0[i], method="DOP853", rtol=1e-12, atol=1e-12,
            args=tuple(a[i] if np.ndim(a) else a for a in args)).y[:, -1] for i in range(n)])
    return fun, span, y0, args, ref


# ------------------------------------------------------------------------ adaptive against scipy

# van der Pol and Kepler run in CI's slow step (together ~6 s on 2 cores)
@pytest.mark.parametrize("name", ["lorenz", pytest.param("van_der_pol", marks=pytest.mark.slow),
                                  pytest.param("kepler", marks=pytest.mark.slow)])
@pytest.mark.parametrize("method", ADAPTIVE)
def test_adaptive_methods_match_the_reference_within_the_tolerance(kind, method, name):
    fun, span, y0, args, ref = problem(name)
    sol = solve(kind, fun, span, y0, method=method, args=args, rtol=RTOL, atol=ATOL)
    assert sol.y.shape == y0.shape and sol.y.dtype == np.float64
    assert np.all(sol.status == 0), (sol.status, sol.message)
    np.testing.assert_array_equal(sol.t, np.full(len(y0), span[1]))
    err, bound = per_sample_error(sol.y, ref), allowed(ref, RTOL, ATOL)
    assert np.all(err <= bound), f"{method} on {name}: worst error / allowed = {np.max(err / bound):.2f}"
    assert np.all(sol.n_accepted > 0) and np.all(sol.nfev > sol.n_accepted)


@pytest.mark.parametrize("method", ["RK23", "RK45", "DOP853"])
def test_adaptive_steps_are_about_as_many_as_scipys(method):
    """Same pair and tolerance: eagle's accepted steps within a factor 2 of scipy's (a controller
    that steps far too often, or too rarely to meet the tolerance, shows here)."""
    fun, span, y0, args, _ = problem("van_der_pol", n=8)
    sol = eagle.ode.solve_ivp(fun, span, y0, method=method, args=args, rtol=RTOL, atol=ATOL)
    f = _numpy(fun)
    for i in range(len(y0)):
        s = scipy_integrate.solve_ivp(f, span, y0[i], method=method, rtol=RTOL, atol=ATOL, args=args)
        steps = len(s.t) - 1
        assert steps / 2 <= sol.n_accepted[i] <= 2 * steps, (i, int(sol.n_accepted[i]), steps)


# ------------------------------------------------------------------------------ orders of accuracy

def _fixed_step_errors(kind, method, hs, T=4.0):
    """Errors at t = T of the oscillator (closed form cos, -sin) by fixed steps h in hs, in one solve:
    sample j integrates z' = s_j f(z) with tau step dt = hs[0] to tau = T / s_j, s_j = hs[j] / hs[0],
    which is the oscillator stepped by h_j = hs[j] to t = T (Runge-Kutta commutes with rescaling time;
    every h and T / h is a power of two, so no step is clipped)."""
    hs = np.asarray(hs)
    s = hs / hs[0]
    kw = dict(method=method, dt=float(hs[0]), args=(s,))
    if method not in ("Euler", "RK4"):
        kw["adaptive"] = False
    sol = solve(kind, oscillator, (0.0, T / s), np.array([1.0, 0.0]), **kw)
    assert np.all(sol.status == 0), sol.status
    np.testing.assert_allclose(sol.t, T / s, rtol=0, atol=0)
    return per_sample_error(sol.y, np.array([[math.cos(T), -math.sin(T)]])), sol


FIXED_STEPS = {  # h values in the asymptotic range of each method, above round-off (checked in numpy)
    "Euler": [1 / 16, 1 / 32, 1 / 64, 1 / 128],
    "RK4": [1 / 8, 1 / 16, 1 / 32, 1 / 64],
    "RK23": [1 / 8, 1 / 16, 1 / 32, 1 / 64],
    "RK45": [1 / 8, 1 / 16, 1 / 32, 1 / 64],
    "Tsit5": [1 / 8, 1 / 16, 1 / 32, 1 / 64],
    "DOP853": [1.0, 1 / 2, 1 / 4],  # errors 2e-7 .. 3e-12; smaller steps reach round-off
}


@pytest.mark.parametrize("method", list(FIXED_STEPS))
def test_fixed_step_convergence_order_is_the_methods(kind, method):
    errs, sol = _fixed_step_errors(kind, method, FIXED_STEPS[method])
    slope = np.polyfit(np.log(FIXED_STEPS[method]), np.log(errs), 1)[0]
    assert abs(slope - ORDER[method]) <= 0.3, f"{method}: errors {errs}, fitted order {slope:.2f}"
    T, hs = 4.0, np.asarray(FIXED_STEPS[method])
    np.testing.assert_array_equal(sol.n_accepted, np.round(T / hs).astype(int))
    assert np.all(sol.n_rejected == 0)


def test_the_rescaled_time_is_the_same_as_a_plain_fixed_step_solve():
    """The convergence tests rely on z' = s f(z) with step dt being f with step s dt: check it on RK4."""
    errs, _ = _fixed_step_errors("cpu", "RK4", [1 / 8, 1 / 16])
    plain = eagle.ode.solve_ivp(oscillator, (0.0, 4.0), np.array([[1.0, 0.0]]), method="RK4", dt=1 / 16,
                                args=(1.0,))
    err = per_sample_error(plain.y, np.array([[math.cos(4.0), -math.sin(4.0)]]))[0]
    assert err == pytest.approx(errs[1], rel=1e-6)


@pytest.mark.slow  # three compiles a method (the tolerances are in the generated source)
@pytest.mark.parametrize("method", ADAPTIVE)
def test_adaptive_error_and_steps_scale_with_the_tolerance(kind, method):
    """Oscillator over [0, 10], rtol = atol = tol in 1e-5, 1e-7, 1e-9. Asserted: the error is at
    most K tol at every tol; the error falls about as fast as tol (fitted slope of log error on
    log tol in [0.7, 1.3]; scipy's RK23, RK45, DOP853 give 1.00-1.02 here); the accepted steps grow
    like tol^(-1/(q+1)), q the error estimator's order (slope within 0.06)."""
    tols = [1e-5, 1e-7, 1e-9]
    phi = np.linspace(0.0, 3.0, 8)
    y0 = np.stack([np.cos(phi), -np.sin(phi)], axis=1)
    ref = np.stack([np.cos(10.0 + phi), -np.sin(10.0 + phi)], axis=1)
    errs, steps = [], []
    for tol in tols:
        sol = solve(kind, oscillator, (0.0, 10.0), y0, method=method, rtol=tol, atol=tol, args=(1.0,))
        assert np.all(sol.status == 0)
        e = per_sample_error(sol.y, ref)
        assert np.all(e <= K * 2 * tol), (tol, e.max())
        errs.append(e.max())
        steps.append(float(np.mean(sol.n_accepted)))
    slope = np.polyfit(np.log(tols), np.log(errs), 1)[0]
    assert 0.7 <= slope <= 1.3, f"{method}: errors {errs}, slope {slope:.2f}"
    step_slope = -np.polyfit(np.log(tols), np.log(steps), 1)[0]
    expected = 1.0 / (ERROR_ORDER[method] + 1)
    assert abs(step_slope - expected) <= 0.06, f"{method}: steps {steps}, slope {step_slope:.3f} vs {expected:.3f}"


# ---------------------------------------------------------------------------------- dense output

@pytest.mark.parametrize("method", ADAPTIVE)
def test_t_eval_states_match_the_closed_form(kind, method):
    phi = np.linspace(0.0, 3.0, 16)
    y0 = np.stack([np.cos(phi), -np.sin(phi)], axis=1)
    t_eval = np.linspace(0.0, 10.0, 41)
    tol = 1e-8
    sol = solve(kind, oscillator, (0.0, 10.0), y0, method=method, rtol=tol, atol=tol, args=(1.0,), t_eval=t_eval)
    assert sol.ys.shape == (16, 2, 41)
    np.testing.assert_array_equal(sol.t_eval, t_eval)
    exact = np.stack([np.cos(t_eval[None, :] + phi[:, None]), -np.sin(t_eval[None, :] + phi[:, None])], axis=1)
    worst = np.max(np.abs(sol.ys - exact)) / (2 * tol)  # rtol |y| + atol <= 2 tol here
    assert worst <= K, f"{method}: dense output error {worst:.1f} x (rtol |y| + atol); scipy's RK23 gives 15"
    np.testing.assert_allclose(sol.ys[:, :, 0], y0, rtol=0, atol=1e-14)  # t_eval[0] = t0: the initial state
    np.testing.assert_allclose(sol.ys[:, :, -1], sol.y, rtol=0, atol=1e-12)


# ------------------------------------------------------------------------------------------ events

def _falling(t, y, g):
    return (y[1], -g)


def test_a_terminal_event_stops_each_sample_at_its_closed_form_time(kind):
    """Balls dropped from h0 (per sample) hit y = 0 at sqrt(2 h0 / g); terminal, falling only.
    Samples dropped from too high to land before t1 = 2 run to t1 with status 0 and no event."""
    g = 9.81
    h0 = np.array([1.0, 2.0, 5.0, 10.0, 19.0, 30.0, 50.0, 100.0])
    t1 = 2.0
    hit = lambda t, y, g: y[0]  # noqa: E731
    hit.terminal, hit.direction = True, -1
    y0 = np.stack([h0, np.zeros_like(h0)], axis=1)
    rtol = 1e-6
    sol = solve(kind, _falling, (0.0, t1), y0, method="RK45", args=(g,), events=hit, rtol=rtol, atol=1e-9)
    t_hit = np.sqrt(2.0 * h0 / g)
    lands = t_hit < t1
    np.testing.assert_array_equal(sol.status, np.where(lands, 1, 0))
    te = np.asarray(sol.t_events[0])
    assert np.all(np.abs(te[lands] - t_hit[lands]) <= rtol * t_hit[lands]), te - t_hit
    assert np.all(np.isnan(te[~lands]))
    np.testing.assert_allclose(sol.t[lands], te[lands], rtol=0, atol=0)
    np.testing.assert_allclose(sol.t[~lands], t1)
    ye = np.asarray(sol.y_events[0])
    assert np.all(np.abs(ye[lands, 0]) <= 1e-6 * h0[lands]), ye[lands, 0]  # the height there is 0
    np.testing.assert_allclose(ye[lands, 1], -g * t_hit[lands], rtol=1e-6)
    np.testing.assert_allclose(sol.y[lands], ye[lands])
    np.testing.assert_array_equal(np.asarray(sol.n_events)[:, 0], lands.astype(int))


def test_event_direction_picks_the_crossings_and_counts_them(kind):
    """x = cos(t + phi) over [0, 4 pi]: zero crossings at t + phi = pi/2 + k pi, falling for even k.
    Three non-terminal events on the same function: any direction, rising only, falling only."""
    phi = np.linspace(0.1, 3.0, 12)
    y0 = np.stack([np.cos(phi), -np.sin(phi)], axis=1)
    T = 4 * math.pi
    ev = []
    for direction in (0, 1, -1):
        f = lambda t, y, s: y[0]  # noqa: E731
        f.terminal, f.direction = False, direction
        ev.append(f)
    sol = solve(kind, oscillator, (0.0, T), y0, method="DOP853", args=(1.0,), events=ev, rtol=1e-10, atol=1e-12)
    assert np.all(sol.status == 0)
    k = np.arange(0, 6)
    crossings = (math.pi / 2 + k[None, :] * math.pi) - phi[:, None]   # (N, 6), those in (0, T] count
    inside = (crossings > 0) & (crossings <= T)
    falling = (k % 2 == 0)[None, :]
    first = lambda mask: np.array([c[m][0] for c, m in zip(crossings, mask)])  # noqa: E731
    for i, mask in enumerate((inside, inside & ~falling, inside & falling)):
        np.testing.assert_allclose(sol.t_events[i], first(mask), rtol=1e-8, err_msg=f"event {i}")
        np.testing.assert_array_equal(np.asarray(sol.n_events)[:, i], mask.sum(axis=1), err_msg=f"event {i}")


# ---------------------------------------------------------------------------- per-sample outcomes

def _square(t, y):
    return (y[0] * y[0],)


def test_samples_that_blow_up_fail_and_the_others_finish(kind):
    """y' = y^2, y = y0 / (1 - y0 t): blows up at t = 1 / y0. Over [0, 2]: y0 = 1 and 2 blow up,
    the others (0.1, 0.25, -1, 0) finish with the closed form."""
    y0 = np.array([[1.0], [0.1], [2.0], [0.25], [-1.0], [0.0]])
    blows = np.array([True, False, True, False, False, False])
    sol = solve(kind, _square, (0.0, 2.0), y0, method="RK45", rtol=1e-8, atol=1e-10, max_steps=100_000)
    np.testing.assert_array_equal(sol.status, np.where(blows, -1, 0))
    ok = ~blows
    exact = y0[ok, 0] / (1.0 - 2.0 * y0[ok, 0])
    np.testing.assert_allclose(sol.y[ok, 0], exact, rtol=1e-6, atol=1e-10)
    assert np.all(sol.failure[blows] != 0) and np.all(sol.failure[ok] == 0)
    for code in np.unique(sol.failure[blows]):
        assert isinstance(sol.message[int(code)], str) and sol.message[int(code)]
    assert np.all(sol.t[blows] < 1.0 / y0[blows, 0] + 1e-9)  # it stopped before (or at) the singularity


def test_max_steps_fails_the_samples_that_need_more_and_no_others(kind):
    """Oscillator at rtol 1e-8: t1 = 0.01 takes a few steps, t1 = 50 several hundred; max_steps 50."""
    t1 = np.array([0.01, 50.0, 0.02, 50.0, 0.01])
    long = t1 > 1
    y0 = np.tile([1.0, 0.0], (len(t1), 1))
    sol = solve(kind, oscillator, (0.0, t1), y0, method="RK45", rtol=1e-8, atol=1e-8, args=(1.0,), max_steps=50)
    np.testing.assert_array_equal(sol.status, np.where(long, -1, 0))
    np.testing.assert_allclose(sol.y[~long], np.stack([np.cos(t1[~long]), -np.sin(t1[~long])], 1), atol=1e-7)
    codes = set(int(c) for c in sol.failure[long])
    assert len(codes) == 1
    msg = sol.message[codes.pop()]
    assert "max_steps" in msg or "steps" in msg.lower(), msg
    assert np.all(sol.t[long] < 50.0)


def test_a_one_dimensional_y0_is_shared_by_every_sample(kind):
    s = np.array([0.5, 1.0, 2.0])
    sol = solve(kind, oscillator, (0.0, 1.0), np.array([1.0, 0.0]), method="DOP853", args=(s,), rtol=1e-10,
                atol=1e-12)
    assert sol.y.shape == (3, 2)
    np.testing.assert_allclose(sol.y, np.stack([np.cos(s), -np.sin(s)], 1), atol=1e-8)


def test_a_per_sample_t1_ends_each_sample_at_its_own_time(kind):
    rng = np.random.default_rng(3)
    t1 = rng.uniform(0.5, 6.0, 20)
    y0 = np.tile([1.0, 0.0], (20, 1))
    sol = solve(kind, oscillator, (0.0, t1), y0, method="Tsit5", args=(1.0,), rtol=1e-9, atol=1e-10)
    assert np.all(sol.status == 0)
    np.testing.assert_array_equal(sol.t, t1)
    np.testing.assert_allclose(sol.y, np.stack([np.cos(t1), -np.sin(t1)], 1), atol=K * 2e-9)


# --------------------------------------------------------------------------------------- precision

@pytest.mark.parametrize("method", ["RK45", "Tsit5"])
def test_float32_solves_in_float32_within_float32_tolerances(kind, method):
    fun, span, y0, args, ref = problem("lorenz", n=32)
    rtol, atol = 1e-4, 1e-6
    sol = solve(kind, fun, span, y0.astype(np.float32), method=method, args=(args[0].astype(np.float32),),
                rtol=rtol, atol=atol)
    assert sol.y.dtype == np.float32
    assert np.all(sol.status == 0)
    err, bound = per_sample_error(sol.y, ref), allowed(ref, rtol, atol)
    assert np.all(err <= bound), np.max(err / bound)


def test_float32_fixed_step_rk4_matches_float64_to_float32_rounding(kind):
    fun, span, y0, args, _ = problem("lorenz", n=32)
    s32 = solve(kind, fun, span, y0.astype(np.float32), method="RK4", dt=1e-3, args=(args[0].astype(np.float32),))
    s64 = solve(kind, fun, span, y0, method="RK4", dt=1e-3, args=args)
    assert s32.y.dtype == np.float32
    rel = np.max(np.abs(s32.y - s64.y)) / np.max(np.abs(s64.y))
    # float32 arithmetic over 1000 steps: 1.2e-6 in numpy on these samples; rounding a float64
    # result to float32 alone would give 3e-8, so the lower bound shows the arithmetic is float32
    assert 2e-7 < rel < 1e-4, rel


def test_dtype_argument_overrides_y0s_dtype():
    fun, span, y0, args, ref = problem("lorenz", n=8)
    sol = eagle.ode.solve_ivp(fun, span, y0, method="RK45", args=args, dtype=np.float32, rtol=1e-4, atol=1e-6)
    assert sol.y.dtype == np.float32


# ---------------------------------------------------------------------------- Solver, repeatability

def test_solver_solve_twice_equals_two_solve_ivp_calls(kind):
    fun, span, y0, args, _ = problem("lorenz", n=24)
    y0b = y0[::-1].copy() * 0.5
    rhob = args[0][::-1].copy()
    solver = eagle.ode.Solver(fun, method="RK45", rtol=RTOL, atol=ATOL, t_span=span, n_args=1, backend=kind)
    a = solver.solve(y0, args=args)
    b = solver.solve(y0b, args=(rhob,))
    for got, (yy, rr) in ((a, (y0, args[0])), (b, (y0b, rhob))):
        want = solve(kind, fun, span, yy, method="RK45", args=(rr,), rtol=RTOL, atol=ATOL)
        np.testing.assert_array_equal(got.y, want.y)
        np.testing.assert_array_equal(got.status, want.status)
        np.testing.assert_array_equal(got.n_accepted, want.n_accepted)
        np.testing.assert_array_equal(got.nfev, want.nfev)
    assert not np.array_equal(a.y, b.y)
    assert isinstance(a.source, str) and a.source.strip()


def test_a_device_kind_agrees_with_cpu_bit_for_bit_in_exact_mode(device):
    fun, span, y0, args, _ = problem("lorenz", n=64)
    for method, kw in (("RK45", dict(rtol=RTOL, atol=ATOL)), ("RK4", dict(dt=1e-3)),
                       ("Tsit5", dict(rtol=RTOL, atol=ATOL, t_eval=np.linspace(0.0, 1.0, 5)))):
        c = eagle.ode.solve_ivp(fun, span, y0, method=method, args=args, backend="cpu", exact=True, **kw)
        g = eagle.ode.solve_ivp(fun, span, y0, method=method, args=args, backend=device.kind, exact=True, **kw)
        np.testing.assert_array_equal(c.y, g.y, err_msg=method)
        np.testing.assert_array_equal(c.n_accepted, g.n_accepted, err_msg=method)
        if "t_eval" in kw:
            np.testing.assert_array_equal(c.ys, g.ys, err_msg=method)
