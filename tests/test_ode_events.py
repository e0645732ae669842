"""Events that act, discrete callbacks and on-device summaries (issue 41), against closed forms:
a ball bouncing with restitution (impact times and counts), a dosing schedule with linear
elimination (superposition), and the oscillator's max/argmax/integral (sin, cos); summaries also
against a dense t_eval + numpy. Hostile input: each a clear EagleError or a per-sample code."""
import math

import numpy as np
import pytest

import eagle
import eagle.ode
from eagle.errors import EagleError, EagleTypeError, EagleValueError
from eagle.ode._frame import FAIL_AFFECT, FAIL_MAX_EVENTS, FAIL_MAX_STEPS

G = 9.81


def fall(t, y, e):
    return (y[1], -G)


def ground(t, y, e):
    return y[0]


ground.direction = -1
ground.affect = lambda t, y, e: (y[0], -e * y[1])


def impacts(e, k, h0=1.0):
    """The first k impact times of a ball dropped from h0 at rest, restitution e: the first at
    sqrt(2 h0 / g), then flights of 2 e^j v1 / g (v1 = g t1, the impact speed)."""
    t1 = math.sqrt(2 * h0 / G)
    v = G * t1
    out = [t1]
    for _ in range(k - 1):
        v *= e
        out.append(out[-1] + 2 * v / G)
    return np.array(out)


# ---------------------------------------------------------------------------------- bouncing ball

def test_a_bouncing_ball_hits_at_the_closed_form_times_and_counts_them():
    es = np.array([0.6, 0.8, 0.9])
    T = 1.6  # e = 0.6 accumulates at 1.81 s (Zeno): by 1.6 s 4 impacts (2 for e = 0.8, 0.9)
    sol = eagle.ode.solve_ivp(fall, (0.0, T), np.array([1.0, 0.0]), args=(es,), events=ground, max_events=12,
                              rtol=1e-10, atol=1e-12)
    assert np.all(sol.status == 0), sol.failure
    for i, e in enumerate(es):
        ref = impacts(e, 40)
        ref = ref[ref <= T]
        assert sol.n_events[i, 0] == ref.size, (e, sol.n_events[i], ref)
        got = sol.t_events[0][i]
        np.testing.assert_allclose(got[:ref.size], ref, rtol=0, atol=1e-9)
        assert np.all(np.isnan(got[ref.size:]))
    # the state at T: the flight after the last impact, in closed form
    for i, e in enumerate(es):
        ref = impacts(e, 40)
        last = ref[ref <= T][-1]
        k = int(np.sum(ref <= T))
        v = G * math.sqrt(2 / G) * e ** k
        tau = T - last
        np.testing.assert_allclose(sol.y[i], [v * tau - G * tau * tau / 2, v - G * tau], rtol=0, atol=1e-8)


def test_a_terminal_count_stops_at_that_impact_after_its_affect():
    ground3 = eagle.ode.event(ground, terminal=3, direction=-1, affect=ground.affect)
    es = np.array([0.5, 0.7, 0.9])
    sol = eagle.ode.solve_ivp(fall, (0.0, 10.0), np.array([1.0, 0.0]), args=(es,), events=ground3, rtol=1e-10,
                              atol=1e-12)
    np.testing.assert_array_equal(sol.status, 1)
    np.testing.assert_array_equal(sol.n_events[:, 0], 3)
    for i, e in enumerate(es):
        np.testing.assert_allclose(sol.t[i], impacts(e, 3)[-1], rtol=0, atol=1e-9)
        # stopped after the third affect: the velocity is the rebound's, e^3 v1 upwards
        np.testing.assert_allclose(sol.y[i, 1], e ** 3 * G * math.sqrt(2 / G), rtol=1e-8)
    # t_events without max_events: the first impact
    np.testing.assert_allclose(sol.t_events[0], impacts(0.5, 1)[0], rtol=0, atol=1e-9)


def test_a_ball_bouncing_to_rest_is_stopped_by_max_events_with_its_own_code():
    """e = 0.5: the impacts accumulate at t1 (1 + 2e/(1-e)) = 1.35 s (Zeno): the 9th impact fails the
    sample (max_events=8) instead of stepping forever; e = 0.9 reaches t1 = 1.5 with 2 impacts."""
    es = np.array([0.5, 0.9])
    sol = eagle.ode.solve_ivp(fall, (0.0, 1.5), np.array([1.0, 0.0]), args=(es,), events=ground, max_events=8,
                              rtol=1e-10, atol=1e-12)
    assert sol.status[0] == -1 and sol.failure[0] == FAIL_MAX_EVENTS
    assert "max_events" in sol.message[FAIL_MAX_EVENTS]
    np.testing.assert_allclose(sol.t[0], impacts(0.5, 9)[-1], rtol=0, atol=1e-9)
    np.testing.assert_allclose(sol.t_events[0][0], impacts(0.5, 8), rtol=0, atol=1e-9)
    assert sol.status[1] == 0 and sol.n_events[1, 0] == 2
    # without max_events, the same sample ends at max_steps (each restart is a step; the 44 impacts
    # before its flights fall below the root finder's resolution, ~1e-14 s, take 50 steps)
    sol = eagle.ode.solve_ivp(fall, (0.0, 1.5), np.array([1.0, 0.0]), args=(0.5,), events=ground, rtol=1e-10,
                              atol=1e-12, max_steps=30)
    assert sol.failure[0] == FAIL_MAX_STEPS
    # e = 0.05: its flights shrink 20x an impact; once two impacts come within the root finder's
    # resolution of each other (~1e-12 s) it fails with the same code rather than fall through
    sol = eagle.ode.solve_ivp(fall, (0.0, 1.5), np.array([1.0, 0.0]), args=(0.05,), events=ground, rtol=1e-10,
                              atol=1e-12, max_events=64)
    k = int(sol.n_events[0, 0])
    assert sol.failure[0] == FAIL_MAX_EVENTS and 8 <= k <= 12, (sol.failure, k)
    np.testing.assert_allclose(sol.t_events[0][0, :k - 1], impacts(0.05, k - 1), rtol=0, atol=1e-9)
    assert sol.y[0, 0] > -1e-9  # at the floor, not below it


# ---------------------------------------------------------------------------------- dosing

def _doses_closed_form(k, doses, t, amount):
    """One-compartment linear elimination, a bolus of ``amount`` at each dose time: superposition
    of amount exp(-k (t - d)) for d <= t (the state just before a dose at t itself: d < t)."""
    t = np.asarray(t)
    return sum(np.where(t > d, amount * np.exp(-k * (t - d)), 0.0) for d in doses)


def test_a_dosing_schedule_matches_superposition_shared_and_per_sample_times():
    k = np.array([0.1, 0.2, 0.3])
    doses = np.arange(0.0, 72.0, 12.0)
    te = np.linspace(0.0, 80.0, 321)  # includes every dose time: there the state before the dose
    cb = eagle.ode.at(doses, lambda t, y, k: (y[0] + 100.0,))
    T = 80.0
    sol = eagle.ode.solve_ivp(lambda t, y, k: (-k * y[0],), (0.0, T), np.array([0.0]), args=(k,), callbacks=cb,
                              t_eval=te, rtol=1e-10, atol=1e-10, save=["max", "argmax", "integral", "final"])
    assert np.all(sol.status == 0)
    for i, kk in enumerate(k):
        ref = _doses_closed_form(kk, doses, te, 100.0)
        np.testing.assert_allclose(sol.ys[i, 0], ref, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(sol.y[i, 0], _doses_closed_form(kk, doses, T, 100.0), rtol=1e-8)
        # the peak is just after the last dose (t = 60): sum of 100 e^(-k (60 - d)), d <= 60
        peak = sum(100.0 * math.exp(-kk * (60.0 - d)) for d in doses)
        np.testing.assert_allclose(sol.saved["max"][i, 0], peak, rtol=1e-9)
        assert sol.saved["argmax"][i, 0] == 60.0  # stepped onto exactly
        integral = sum(100.0 / kk * (1 - math.exp(-kk * (T - d))) for d in doses)
        np.testing.assert_allclose(sol.saved["integral"][i, 0], integral, rtol=1e-9)
    np.testing.assert_array_equal(sol.saved["final"], sol.y)
    # per-sample schedules: each sample its own dose times (N, m), one compile
    per = np.stack([doses, doses + 1.5, doses * 0.5])
    cb2 = eagle.ode.at(per, lambda t, y, k: (y[0] + 50.0,))
    sol2 = eagle.ode.solve_ivp(lambda t, y, k: (-k * y[0],), (0.0, T), np.array([0.0]), args=(k,), callbacks=cb2,
                               rtol=1e-10, atol=1e-10)
    for i, kk in enumerate(k):
        np.testing.assert_allclose(sol2.y[i, 0], _doses_closed_form(kk, per[i], T, 50.0), rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------------------------- summaries

def osc(t, y):
    return (y[1], -y[0])


# DOP853 and Vern9 (their dense outputs' own forms) in CI's slow step: ~3 s each, mostly compiling
@pytest.mark.parametrize("method", ["Tsit5", pytest.param("DOP853", marks=pytest.mark.slow),
                                    pytest.param("Vern9", marks=pytest.mark.slow)])
def test_summaries_match_the_oscillators_closed_forms_and_a_dense_t_eval(method):
    """y = (sin(t + p), cos(t + p)) over [0, 10]: max 1 at pi/2 - p + 2 pi k, min -1, integral of
    sin(t + p) = cos(p) - cos(10 + p); g = (sin^2, t) integrates to 5 - (sin(2 (10 + p)) - sin(2p))/4 and 50."""
    p = np.array([0.0, 0.3, 1.0, 2.0])
    y0 = np.stack([np.sin(p), np.cos(p)], axis=1)
    T = 10.0
    te = np.linspace(0.0, T, 4001)
    sol = eagle.ode.solve_ivp(osc, (0.0, T), y0, method=method, rtol=1e-10, atol=1e-12, t_eval=te,
                              save={"max": [0], "argmax": [0], "min": [0, 1], "argmin": [0], "integral": [0],
                                    "mean": [1], "g": lambda t, y: (y[0] * y[0], t)})
    assert np.all(sol.status == 0)
    sv = sol.saved
    np.testing.assert_allclose(sv["max"][:, 0], 1.0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(sv["min"], -1.0, rtol=0, atol=1e-9)
    # a maximum of sin(t + p) (those 2 pi apart tie to round-off: either may be kept), to 1e-8 in time
    off = np.mod(sv["argmax"][:, 0] - (np.pi / 2 - p) + np.pi, 2 * np.pi) - np.pi
    np.testing.assert_allclose(off, 0.0, rtol=0, atol=1e-8)
    np.testing.assert_allclose(sv["integral"][:, 0], np.cos(p) - np.cos(T + p), rtol=0, atol=1e-9)
    np.testing.assert_allclose(sv["mean"][:, 0], (np.sin(T + p) - np.sin(p)) / T, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sv["g"][:, 0], 5 - (np.sin(2 * (T + p)) - np.sin(2 * p)) / 4, rtol=0, atol=1e-9)
    np.testing.assert_allclose(sv["g"][:, 1], T * T / 2, rtol=1e-12)
    # against the dense t_eval and numpy: the grid's max is below the true max by at most (dt^2/8) y''
    grid_max = sol.ys[:, 0].max(axis=1)
    assert np.all(sv["max"][:, 0] >= grid_max - 1e-9)
    assert np.all(sv["max"][:, 0] - grid_max <= (te[1] - te[0]) ** 2 / 8 + 1e-9)
    off = np.mod(sv["argmin"][:, 0] - te[np.argmin(sol.ys[:, 0], axis=1)] + np.pi, 2 * np.pi) - np.pi
    assert np.all(np.abs(off) <= te[1] - te[0])  # one of the minima (2 pi apart, tied to round-off)
    np.testing.assert_allclose(sv["integral"][:, 0], np.trapezoid(sol.ys[:, 0], te, axis=1), atol=1e-6)


def test_summaries_of_a_fixed_step_method_without_fsal():
    """RK4 (no FSAL: f at each step's end is evaluated once more for the extrema; hermite dense output)."""
    p = np.array([0.0, 1.0])
    y0 = np.stack([np.sin(p), np.cos(p)], axis=1)
    sol = eagle.ode.solve_ivp(osc, (0.0, 10.0), y0, method="RK4", dt=1e-2,
                              save={"max": [0], "argmax": [0], "integral": [0]})
    np.testing.assert_allclose(sol.saved["max"][:, 0], 1.0, atol=1e-8)
    np.testing.assert_allclose(np.sin(sol.saved["argmax"][:, 0] + p), 1.0, atol=1e-8)
    np.testing.assert_allclose(sol.saved["integral"][:, 0], np.cos(p) - np.cos(10 + p), atol=1e-8)
    # a step: 4 stages, f at its end (the extrema), and the cubic Hermite dense output's f(t + h) (the integral)
    assert np.all(sol.nfev == 1 + 1000 * 6)


def test_summaries_see_both_sides_of_an_affect():
    """The ball's height: max is the drop height at t0; min the (non-positive) impact height;
    the velocity's max is the first rebound's speed, right after the first impact."""
    sol = eagle.ode.solve_ivp(fall, (0.0, 1.0), np.array([1.0, 0.0]), args=(0.8,), events=ground,
                              rtol=1e-10, atol=1e-12, save={"max": [0, 1], "argmax": [1], "min": [1]})
    t1 = impacts(0.8, 1)[0]
    np.testing.assert_allclose(sol.saved["max"][0], [1.0, 0.8 * G * t1], rtol=1e-9)
    np.testing.assert_allclose(sol.saved["argmax"][0, 0], t1, atol=1e-9)
    np.testing.assert_allclose(sol.saved["min"][0, 0], -G * t1, rtol=1e-9)


# ---------------------------------------------------------------------------------- hostile input

def test_an_affect_returning_the_wrong_length_is_refused_naming_it():
    bad = eagle.ode.event(ground, direction=-1, affect=lambda t, y, e: (-e * y[1],))
    with pytest.raises(EagleError, match=r"events\[0\]\.affect.*returned 1 values; expected 2"):
        eagle.ode.solve_ivp(fall, (0.0, 1.0), np.array([1.0, 0.0]), args=(0.8,), events=bad)
    with pytest.raises(EagleError, match=r"callbacks\[0\]\.affect"):
        eagle.ode.solve_ivp(fall, (0.0, 1.0), np.array([1.0, 0.0]), args=(0.8,),
                            callbacks=eagle.ode.at([0.5], lambda t, y, e: y[0]))


def test_an_affect_making_nan_fails_only_its_samples_with_its_own_code():
    nan_if = eagle.ode.event(ground, direction=-1,
                             affect=lambda t, y, e: (y[0], eagle.ode.math.where(e > 0.85, y[1] * np.nan, -e * y[1])))
    sol = eagle.ode.solve_ivp(fall, (0.0, 1.0), np.array([1.0, 0.0]), args=(np.array([0.8, 0.9]),), events=nan_if)
    assert sol.status[0] == 0
    assert sol.status[1] == -1 and sol.failure[1] == FAIL_AFFECT
    np.testing.assert_allclose(sol.t[1], impacts(0.9, 1)[0], atol=1e-6)


def test_an_event_that_refires_at_once_is_stopped_by_max_events_or_max_steps():
    """y' = 1 from -1; at y = 0 the affect puts y back to -1e-9: it crosses again after 1e-9."""
    up = eagle.ode.event(lambda t, y: y[0], direction=1, affect=lambda t, y: (y[0] * 0 - 1e-9,))
    sol = eagle.ode.solve_ivp(lambda t, y: (1.0,), (0.0, 2.0), np.array([-1.0]), events=up, max_events=5)
    assert sol.failure[0] == FAIL_MAX_EVENTS and sol.n_events[0, 0] == 6
    sol = eagle.ode.solve_ivp(lambda t, y: (1.0,), (0.0, 2.0), np.array([-1.0]), events=up, max_steps=300)
    assert sol.failure[0] == FAIL_MAX_STEPS
    # e = 0.05: its flights shrink 20x an impact; once two impacts come within the root finder's
    # resolution of each other (~1e-12 s) it fails with the same code rather than fall through
    sol = eagle.ode.solve_ivp(fall, (0.0, 1.5), np.array([1.0, 0.0]), args=(0.05,), events=ground, rtol=1e-10,
                              atol=1e-12, max_events=64)
    k = int(sol.n_events[0, 0])
    assert sol.failure[0] == FAIL_MAX_EVENTS and 8 <= k <= 12, (sol.failure, k)
    np.testing.assert_allclose(sol.t_events[0][0, :k - 1], impacts(0.05, k - 1), rtol=0, atol=1e-9)
    assert sol.y[0, 0] > -1e-9  # at the floor, not below it


def test_bad_callbacks_events_and_saves_are_refused_naming_the_problem():
    f = lambda t, y: (-y[0],)  # noqa: E731
    y0 = np.array([[1.0], [2.0]])
    with pytest.raises(EagleValueError, match=r"callbacks\[0\]\.times\[0\] = 3.0 lies outside the span"):
        eagle.ode.solve_ivp(f, (0.0, 2.0), y0, callbacks=eagle.ode.at([3.0], lambda t, y: y))
    with pytest.raises(EagleValueError, match=r"outside the span"):
        eagle.ode.solve_ivp(f, (1.0, 2.0), y0, callbacks=eagle.ode.at([0.5, 1.5], lambda t, y: y))
    with pytest.raises(EagleValueError, match=r"y0 has 2, callbacks\[0\]\.times has 3"):
        eagle.ode.solve_ivp(f, (0.0, 2.0), y0, callbacks=eagle.ode.at(np.ones((3, 1)), lambda t, y: y))
    with pytest.raises(EagleValueError, match="non-decreasing"):
        eagle.ode.at([1.0, 0.5], lambda t, y: y)
    with pytest.raises(EagleTypeError, match="affect must be a callable"):
        eagle.ode.at([1.0], 3.0)
    with pytest.raises(EagleTypeError, match=r"callbacks\[0\] must be eagle.ode.at"):
        eagle.ode.solve_ivp(f, (0.0, 2.0), y0, callbacks=[1.0])
    with pytest.raises(EagleValueError, match="fixed-step"):
        eagle.ode.solve_ivp(f, (0.0, 2.0), y0, method="RK4", dt=0.1, callbacks=eagle.ode.at([1.0], lambda t, y: y))
    with pytest.raises(EagleValueError, match=r"terminal must be True/False or a count >= 1"):
        eagle.ode.solve_ivp(f, (0.0, 2.0), y0, events=eagle.ode.event(lambda t, y: y[0], terminal=-2))
    with pytest.raises(EagleValueError, match="max_events must be an int"):
        eagle.ode.solve_ivp(f, (0.0, 2.0), y0, events=lambda t, y: y[0], max_events=0)
    with pytest.raises(EagleValueError, match="unknown reduction 'median'"):
        eagle.ode.solve_ivp(f, (0.0, 2.0), y0, save=["median"])
    with pytest.raises(EagleValueError, match=r"save\['max'\] = 3 names a component outside 0..0"):
        eagle.ode.solve_ivp(f, (0.0, 2.0), y0, save={"max": 3})
    with pytest.raises(EagleTypeError, match=r"save\['g'\] must be a callable"):
        eagle.ode.solve_ivp(f, (0.0, 2.0), y0, save={"g": 2.0})


def test_a_device_kind_agrees_with_cpu_bit_for_bit_with_affects_callbacks_and_summaries(device):
    es = np.linspace(0.5, 0.95, 64)
    kw = dict(args=(es,), events=ground, max_events=6, rtol=1e-9, atol=1e-11, exact=True,
              callbacks=eagle.ode.at([0.3, 1.1], lambda t, y, e: (y[0], y[1] - 0.5)),
              save={"max": None, "argmax": [1], "integral": [0], "g": lambda t, y, e: y[1] * y[1]})
    c = eagle.ode.solve_ivp(fall, (0.0, 2.0), np.array([1.0, 0.0]), backend="cpu", **kw)
    g = eagle.ode.solve_ivp(fall, (0.0, 2.0), np.array([1.0, 0.0]), backend=device.kind, **kw)
    np.testing.assert_array_equal(c.y, g.y)
    np.testing.assert_array_equal(c.failure, g.failure)
    np.testing.assert_array_equal(c.t_events[0], g.t_events[0])
    for k in c.saved:
        np.testing.assert_array_equal(c.saved[k], g.saved[k], err_msg=k)


def test_new_dose_times_and_spans_compile_nothing_and_mean_is_over_each_samples_span():
    """Callback times are run-time values (a vector argument; their count is compiled in): a new
    schedule of as many times, a new span or per-sample t0 reuse the module. The mean is the
    integral over each sample's own [t0, t_end]."""
    from eagle.ode import _run
    elim = lambda t, y, k: (-k * y[0],)  # noqa: E731
    dose = lambda t, y, k: (y[0] + 10.0,)  # noqa: E731
    kw = dict(args=(0.5,), rtol=1e-10, atol=1e-12, save={"integral": 0, "mean": 0})
    a = eagle.ode.solve_ivp(elim, (0.0, 4.0), np.array([[0.0], [0.0]]), callbacks=eagle.ode.at([1.0, 2.0, 3.5], dose),
                            **kw)
    before = _run.compiles[0]
    t0 = np.array([0.0, 1.5])
    b = eagle.ode.solve_ivp(elim, (t0, 6.0), np.array([[0.0], [0.0]]), callbacks=eagle.ode.at([2.0, 3.0, 5.0], dose),
                            **kw)
    assert _run.compiles[0] == before, "new callback times or a new span compiled the module again"
    k = 0.5
    for i in range(2):
        ref = sum(10.0 / k * (1 - math.exp(-k * (6.0 - d))) for d in (2.0, 3.0, 5.0))
        np.testing.assert_allclose(b.saved["integral"][i, 0], ref, rtol=1e-9)
        np.testing.assert_allclose(b.saved["mean"][i, 0], ref / (6.0 - t0[i]), rtol=1e-9)
    np.testing.assert_allclose(a.saved["integral"][:, 0], sum(10.0 / k * (1 - math.exp(-k * (4.0 - d)))
                                                              for d in (1.0, 2.0, 3.5)), rtol=1e-9)
