"""method="auto" (eagle/ode/_auto.py): Tsit5 per sample, switching that sample to Rodas5P when
Hairer's stiffness estimate says so. Against scipy's Radau at rtol 1e-12 (an independent
reference), against Tsit5 alone (bit for bit where no sample switches; max_steps where the problem
is stiff) and on t_eval/events across the switch."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp as scipy_ivp

import eagle.ode as eo
from eagle.errors import EagleValueError

from _stiff_problems import vdp

MUS = np.array([1.0, 10.0, 1e5, 1e6])  # two non-stiff samples, two stiff ones, one ensemble
Y0 = np.array([2.0, 0.0])
T1 = 0.5  # the slow manifold, before the first jump: the stiff phase alone (and a cheap reference)


_REF = {}


def _radau(mu):
    """scipy's Radau at rtol 1e-12 (dense output), computed once per mu."""
    if mu not in _REF:
        r = scipy_ivp(vdp, (0.0, T1), Y0, method="Radau", rtol=1e-12, atol=1e-14, args=(mu,), dense_output=True,
                      events=_g)
        assert r.success
        _REF[mu] = r
    return _REF[mu]


def _g(t, y, mu):
    return y[0] - 1.9


def _scaled(y, ref, rtol, atol):
    return np.max(np.abs(y - ref) / (atol + rtol * np.abs(ref)))


def test_mixed_van_der_pol_ensemble_switches_only_the_stiff_samples():
    rtol, atol = 1e-10, 1e-12
    sol = eo.solve_ivp(vdp, (0.0, T1), Y0, method="auto", rtol=rtol, atol=atol, args=(MUS,), max_steps=20_000)
    assert np.all(sol.status == 0), sol.failure
    sw = sol.switched_at
    assert sw.shape == (4,)
    assert np.all(np.isnan(sw[:2])), sw            # non-stiff: Tsit5 to the end
    assert np.all((sw[2:] > 0) & (sw[2:] < T1)), sw  # stiff: switched early, alone
    for j, mu in enumerate(MUS):
        assert _scaled(sol.y[j], _radau(mu).y[:, -1], rtol, atol) < 5, (j, sol.y[j])
    ex = eo.solve_ivp(vdp, (0.0, T1), Y0, method="Tsit5", rtol=rtol, atol=atol, args=(MUS,), max_steps=20_000)
    assert list(ex.status) == [0, 0, -1, -1]       # Tsit5 alone: max_steps on the stiff samples
    assert np.all(sol.n_accepted[2:] + sol.n_rejected[2:] < 20_000 / 10), sol.n_accepted
    # the non-stiff samples took exactly Tsit5's steps
    assert np.array_equal(sol.n_accepted[:2], ex.n_accepted[:2])
    assert np.array_equal(sol.y[:2], ex.y[:2])


def lorenz(t, y, s, r, b):
    return [s * (y[1] - y[0]), y[0] * (r - y[2]) - y[1], y[0] * y[1] - b * y[2]]


def test_a_problem_that_never_switches_is_tsit5_bit_for_bit():
    rho = np.linspace(10.0, 28.0, 16)
    kw = dict(rtol=1e-8, atol=1e-10, args=(10.0, rho, 8.0 / 3.0), t_eval=np.linspace(0.0, 10.0, 7))
    a = eo.solve_ivp(lorenz, (0.0, 10.0), [1.0, 0.0, 0.0], method="auto", **kw)
    t = eo.solve_ivp(lorenz, (0.0, 10.0), [1.0, 0.0, 0.0], method="Tsit5", **kw)
    assert np.all(np.isnan(a.switched_at))
    assert np.array_equal(a.y, t.y) and np.array_equal(a.ys, t.ys)
    assert np.array_equal(a.nfev, t.nfev) and np.array_equal(a.n_accepted, t.n_accepted)


def test_t_eval_and_events_across_the_switch():
    rtol, atol = 1e-9, 1e-12
    te = np.linspace(0.0, T1, 9)
    mus = np.array([1.0, 1e5])

    sol = eo.solve_ivp(vdp, (0.0, T1), Y0, method="auto", rtol=rtol, atol=atol, args=(mus,), t_eval=te, events=[_g])
    assert np.isnan(sol.switched_at[0]) and sol.switched_at[1] < te[1]
    for j, mu in enumerate(mus):
        r = _radau(mu)
        ref = r.sol(te)
        assert _scaled(sol.ys[j], ref, rtol, atol) < 50, (j, sol.ys[j], ref)
        want = r.t_events[0][0]
        assert np.isclose(sol.t_events[0][j], want, rtol=1e-6), (j, sol.t_events[0][j], want)
    assert sol.t_events[0][1] > sol.switched_at[1]  # located on Rodas5P's interpolant


def test_auto_refuses_fixed_steps_and_affects():
    with pytest.raises(EagleValueError, match="auto"):
        eo.solve_ivp(vdp, (0.0, 1.0), Y0, method="auto", dt=0.1, adaptive=False, args=(1.0,))
    with pytest.raises(EagleValueError, match="callbacks"):
        eo.solve_ivp(vdp, (0.0, 1.0), Y0, method="auto", args=(1.0,), save={"m": lambda t, y, mu: y[0]})


def test_the_steps_do_not_depend_on_how_calls_split_them_and_float32_runs():
    # the mode, the stiffness counters and the switch time live in W across calls of the body
    kw = dict(t_span=(0.0, T1), n_state=2, n_args=1, method="auto", rtol=1e-8, atol=1e-10, exact=True)
    a = eo.Solver(vdp, **kw).solve(Y0, (MUS,))
    b = eo.Solver(vdp, steps_per_call=7, **kw).solve(Y0, (MUS,))
    assert np.array_equal(a.y, b.y) and np.array_equal(a.switched_at, b.switched_at, equal_nan=True)
    assert np.array_equal(a.n_accepted, b.n_accepted) and np.array_equal(a.nfev, b.nfev)
    f = eo.solve_ivp(vdp, (0.0, T1), np.float32(Y0), method="auto", rtol=1e-4, atol=1e-6, args=(MUS,),
                     dtype="float32", max_steps=20_000)
    assert np.all(f.status == 0) and f.y.dtype == np.float32
    assert np.isnan(f.switched_at[0]) and np.all(f.switched_at[2:] < T1)
    for j, mu in enumerate(MUS):
        assert _scaled(f.y[j], _radau(mu).y[:, -1], 1e-4, 1e-6) < 5, j
