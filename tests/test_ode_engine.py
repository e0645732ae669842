"""The one ensemble run under eagle.ode (issue 38): compiled once per right-hand side (the span,
tolerances, steps and t_eval are run-time values), per-sample t0 and t1 for ODEs and SDEs,
per-component atol, and the run's own state (issue 42: a solution never reads the solver's later
state; a solver serves any thread). References are closed forms and scipy, not eagle itself."""
import threading

import numpy as np
import pytest

import eagle
import eagle.ode
from eagle.ode import _run


def decay(t, y, k):
    return (-k * y[0], -2.0 * k * y[1])


def exact(t0, t1, y0, k):
    return np.stack([y0[..., 0] * np.exp(-k * (t1 - t0)), y0[..., 1] * np.exp(-2 * k * (t1 - t0))], axis=-1)


def test_a_second_solve_ivp_with_other_span_tolerances_and_t_eval_does_not_compile_again(cpu):
    y0, k = np.ones((6, 2)), np.linspace(0.5, 2.0, 6)
    first = eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, args=(k,), t_eval=[0.0, 0.5, 1.0], backend="cpu")
    before = _run.compiles[0]
    runs = [dict(t_span=(0.0, 2.0), rtol=1e-9, atol=1e-11, t_eval=[0.25, 2.0]),
            dict(t_span=(0.5, np.linspace(1.0, 3.0, 6)), rtol=1e-7, atol=1e-12, t_eval=[0.75, 1.0, 1.5],
                 max_steps=5000, first_step=1e-4),
            dict(t_span=(0.0, 0.3), rtol=1e-5, atol=1e-7, t_eval=np.linspace(0.0, 0.3, 7))]
    for kw in runs:
        span = kw.pop("t_span")
        sol = eagle.ode.solve_ivp(decay, span, y0, args=(k,), backend="cpu", **kw)
        assert np.all(sol.status == 0), sol.status
        np.testing.assert_allclose(sol.y, exact(span[0], np.asarray(span[1])[..., None] * np.ones((6, 1)), y0,
                                                k[:, None])[:, 0], rtol=200 * kw["rtol"], atol=1e-9)
        te = np.asarray(kw["t_eval"])
        for j, tj in enumerate(te):
            ref = exact(span[0], tj, y0, k[:, None])[:, 0]
            got = sol.ys[:, :, j]
            live = tj <= np.broadcast_to(span[1], (6,))
            np.testing.assert_allclose(got[live], ref[live], rtol=500 * kw["rtol"], atol=1e-8)
    assert _run.compiles[0] == before, "a new span, tolerance or t_eval compiled the module again"
    assert first.status.tolist() == [0] * 6
    # an atol per component and a finite max_step are code (fewer registers without): once, then their values vary
    for atol, max_step in (([1e-9, 1e-12], 0.01), ([1e-7, 1e-8], 0.05)):
        sol = eagle.ode.solve_ivp(decay, (0.0, 0.3), y0, args=(k,), atol=atol, max_step=max_step, rtol=1e-8,
                                  t_eval=[0.3], backend="cpu")
        assert sol.n_accepted.min() >= 0.3 / max_step
        np.testing.assert_allclose(sol.y, exact(0.0, 0.3, y0, k[:, None])[:, 0], rtol=1e-6)
    assert _run.compiles[0] == before + 1
    # what does change the code compiles: a different right-hand side
    eagle.ode.solve_ivp(lambda t, y, k: (-k * y[0], -k * y[1]), (0.0, 1.0), y0, args=(k,), backend="cpu")
    assert _run.compiles[0] == before + 2


def test_fixed_steps_take_dt_at_run_time(cpu):
    """RK4 with dt = 1/8 then 1/16 on the same module: the error falls 16-fold (4th order)."""
    y0 = np.array([[1.0, 1.0]])
    errs = []
    before = None
    for dt in (1 / 8, 1 / 16, 1 / 32):
        sol = eagle.ode.solve_ivp(decay, (0.0, 2.0), y0, method="RK4", dt=dt, args=(1.0,), backend="cpu")
        before = _run.compiles[0] if before is None else before
        assert sol.n_accepted[0] == round(2.0 / dt)
        errs.append(np.max(np.abs(sol.y - exact(0.0, 2.0, y0, 1.0))))
    assert _run.compiles[0] == before
    ratios = [errs[i] / errs[i + 1] for i in range(2)]
    assert all(12 < r < 20 for r in ratios), ratios


def test_per_sample_t0_beside_per_sample_t1(cpu):
    n = 5
    t0, t1 = np.linspace(0.0, 1.0, n), np.linspace(1.0, 3.0, n)
    y0 = np.tile([1.0, 2.0], (n, 1))
    sol = eagle.ode.solve_ivp(decay, (t0, t1), y0, args=(0.7,), rtol=1e-10, atol=1e-12, backend="cpu")
    np.testing.assert_array_equal(sol.t, t1)
    np.testing.assert_allclose(sol.y, exact(t0[:, None], t1[:, None], y0, 0.7)[:, 0], rtol=1e-8)
    fixed = eagle.ode.solve_ivp(decay, (t0, 2.0), y0, args=(0.7,), method="RK4", dt=1e-3, backend="cpu")
    np.testing.assert_array_equal(fixed.n_accepted, np.ceil((2.0 - t0) / 1e-3 - 1e-9).astype(int))
    np.testing.assert_allclose(fixed.y, exact(t0[:, None], 2.0, y0, 0.7)[:, 0], rtol=1e-10)


def test_per_component_atol_is_scipys():
    """atol of d numbers: each component's error is held to its own atol (a component near 0 with
    a loose atol takes fewer steps than with a tight one); the result matches scipy's at the same
    tolerances."""
    scipy_integrate = pytest.importorskip("scipy.integrate", reason="scipy is the reference")
    y0 = np.array([[1.0, 1e-6]])
    loose = eagle.ode.solve_ivp(decay, (0.0, 5.0), y0, args=(1.0,), rtol=1e-6, atol=[1e-8, 1e-3], method="RK45",
                                controller="I", backend="cpu")
    tight = eagle.ode.solve_ivp(decay, (0.0, 5.0), y0, args=(1.0,), rtol=1e-6, atol=[1e-8, 1e-14], method="RK45",
                                controller="I", backend="cpu")
    assert loose.n_accepted[0] < tight.n_accepted[0]
    ref = scipy_integrate.solve_ivp(lambda t, y: decay(t, y, 1.0), (0.0, 5.0), y0[0], method="RK45", rtol=1e-6,
                                    atol=[1e-8, 1e-14])
    assert abs(int(tight.n_accepted[0]) - (ref.t.size - 1)) <= 2, (int(tight.n_accepted[0]), ref.t.size - 1)
    np.testing.assert_allclose(tight.y[0], exact(0.0, 5.0, y0, 1.0)[0], rtol=1e-4)


def test_solve_sde_takes_per_path_ends(cpu):
    """dy = dt + 0 dW: y(t1) = y0 + t1 - t0 exactly on the grid, each path to its own t1."""
    n = 6
    t1 = np.linspace(0.5, 1.0, n)
    sol = eagle.ode.solve_sde(lambda t, y: (1.0,), lambda t, y: (0.0,), (0.0, t1), np.zeros(1), dt=0.1, n_paths=n,
                              backend="cpu")
    np.testing.assert_array_equal(sol.t, t1)
    np.testing.assert_allclose(sol.y[:, 0], t1, rtol=1e-12)
    np.testing.assert_array_equal(sol.n_steps, np.ceil(t1 / 0.1 - 1e-9).astype(int))
    # t_eval at step ends; a point at t1 itself waits for the (here very short) last step
    end = 1.0000001
    s = eagle.ode.solve_sde(lambda t, y: (1.0,), lambda t, y: (0.0,), (0.0, end), np.zeros((2, 1)), dt=0.1,
                            t_eval=[0.5, 1.0, end], backend="cpu")
    np.testing.assert_allclose(s.ys[:, 0], [[0.5, 1.0, end]] * 2, rtol=1e-12)


def test_a_solution_keeps_its_own_shape_after_a_later_solve(cpu):
    """issue 42: s1 = S.solve(N=3); S.solve(N=7) must not change s1 (n_events was (7, 0))."""
    S = eagle.ode.Solver(lambda t, y: (-y[0],), t_span=(0.0, 1.0), backend="cpu")
    s1 = S.solve(np.ones((3, 1)))
    s2 = S.solve(np.ones((7, 1)))
    assert s1.n_events.shape == (3, 0) and s2.n_events.shape == (7, 0)
    assert s1.y.shape == (3, 1) and s2.y.shape == (7, 1)


def test_a_solver_whose_first_trace_failed_says_so_again_on_retry(cpu):
    def bad(t, y):
        if y[0] > 0:
            return (-y[0],)
        return (y[0],)
    S = eagle.ode.Solver(bad, t_span=(0.0, 1.0), backend="cpu")
    for _ in range(2):
        with pytest.raises(eagle.EagleError, match="where"):
            S.solve(np.ones((2, 1)))


def test_a_solver_serves_another_thread(cpu):
    """issue 42: a Solver used from a second thread was refused ("this stream belongs to the thread
    that created it"); now every thread gets its own stream over the same planes, one at a time."""
    S = eagle.ode.Solver(lambda t, y: (-y[0],), t_span=(0.0, 1.0), backend="cpu")
    here = S.solve(np.ones((4, 1))).y
    out = {}

    def work():
        try:
            out["y"] = S.solve(np.ones((4, 1))).y
        except Exception as e:  # noqa: BLE001 - reported below
            out["e"] = e
    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert "e" not in out, out.get("e")
    np.testing.assert_array_equal(out["y"], here)
    np.testing.assert_allclose(here[:, 0], np.exp(-1.0), rtol=1e-6)


def test_a_repeat_solve_reuses_planes_and_graph(cpu):
    """The floor: a repeat solve of the same shapes allocates no planes and records no graph."""
    S = eagle.ode.Solver(decay, t_span=(0.0, 0.1), n_state=2, n_args=1, backend="cpu")
    y0, k = np.ones((32, 2)), np.ones(32)
    S.solve(y0, (k,))
    (r,) = S._run._runs.values()
    lane = dict(r["threads"])
    planes = [r[name] for name in ("W", "I", "M", "IN", "P", "Q", "Y0")]
    for _ in range(3):
        sol = S.solve(y0, (k * 2,))
    assert [r[name] for name in ("W", "I", "M", "IN", "P", "Q", "Y0")] == planes and r["threads"] == lane
    np.testing.assert_allclose(sol.y, exact(0.0, 0.1, y0, 2.0), rtol=1e-6)


def test_a_per_sample_vector_argument(cpu):
    """args of shape (N, k): fun reads args[j][c] (issue 38: "'Expr' object is not subscriptable");
    (1, k) is one vector for every sample. Closed form: y_c(1) = exp(-s k_c)."""
    n = 5
    K = np.linspace(1.0, 2.0, n)[:, None] * np.array([1.0, 2.0, 3.0])

    def f(t, y, k, s):
        return [-k[0] * y[0] * s, -k[1] * y[1] * s, -k[2] * y[2] * s]
    sol = eagle.ode.solve_ivp(f, (0.0, 1.0), np.ones(3), args=(K, 0.5), rtol=1e-10, atol=1e-12, backend="cpu")
    np.testing.assert_allclose(sol.y, np.exp(-0.5 * K), rtol=1e-8)
    s = np.linspace(0.1, 1.0, n)
    shared = eagle.ode.solve_ivp(f, (0.0, 1.0), np.ones((n, 3)), args=(np.array([[1.0, 2.0, 3.0]]), s), rtol=1e-10,
                                 atol=1e-12, backend="cpu")
    np.testing.assert_allclose(shared.y, np.exp(-s[:, None] * np.array([1.0, 2.0, 3.0])), rtol=1e-8)
    with pytest.raises(eagle.EagleValueError, match=r"args\[0\].*\(N, 3\)"):
        eagle.ode.Solver(f, t_span=(0.0, 1.0), n_state=3, n_args=(3, 0)).solve(np.ones(3), (np.ones((n, 2)), 0.5))


@pytest.mark.slow  # a compile of a 256-state right-hand side: about 2 s (was 28 s), plus the solve
def test_a_256_state_method_of_lines_compiles_in_seconds(cpu):
    """The heat equation on 256 interior points: the sine mode of the semi-discrete system decays
    at exactly lambda = 4 (d+1)^2 sin^2(pi / (2 (d+1))) (closed form). Its right-hand side is
    compiled out of line (ODE_OUTLINE): the compile took 24-28 s inlined at every call site."""
    import time
    d = 256

    def heat(t, u):
        h2 = float((d + 1) ** 2)
        return [h2 * ((u[k - 1] if k else 0.0) - 2.0 * u[k] + (u[k + 1] if k < d - 1 else 0.0)) for k in range(d)]
    x = np.arange(1, d + 1) / (d + 1)
    t = time.perf_counter()
    S = eagle.ode.Solver(heat, t_span=(0.0, 0.01), n_state=d, n_args=0, backend="cpu", rtol=1e-8, atol=1e-10)
    S.compile("cpu")
    took = time.perf_counter() - t
    sol = S.solve(np.sin(np.pi * x)[None].repeat(2, 0))
    lam = 4 * (d + 1) ** 2 * np.sin(np.pi / (2 * (d + 1))) ** 2
    np.testing.assert_allclose(sol.y, np.exp(-lam * 0.01) * np.sin(np.pi * x)[None].repeat(2, 0), rtol=1e-6,
                               atol=1e-9)
    assert took < 10.0, f"trace + compile of a 256-state rhs took {took:.1f} s"


def test_a_closed_over_table_at_a_traced_point(cpu):
    """numpy arrays the right-hand side closes over, read at traced points: np.interp (and
    eagle.ode.math.interp) integrate to scipy's quadrature of the same interpolant; a step table
    indexed by the state (eagle.ode.math.take) gives y' = -k(s) y with k = 1, 2, 3 on s in [0, 1),
    [1, 2), [2, 3): y(2.5) = exp(-(1 + 2 + 1.5)) in closed form."""
    quad = pytest.importorskip("scipy.integrate", reason="scipy's quad is the reference").quad
    xp = np.linspace(0.0, 2.0, 9)
    fp = np.cos(xp) ** 2 + xp
    tab = np.array([1.0, 2.0, 3.0])

    def f(t, y):
        return [np.interp(t, xp, fp), eagle.ode.math.interp(t, xp, fp), 0.0 * y[2]]
    s = eagle.ode.solve_ivp(f, (0.0, 2.0), np.zeros((2, 3)), rtol=1e-10, atol=1e-12, backend="cpu")
    ref = quad(lambda t: np.interp(t, xp, fp), 0.0, 2.0, points=xp, epsabs=1e-13)[0]
    np.testing.assert_allclose(s.y[:, :2], ref, rtol=1e-8)

    def g(t, y):
        return [-eagle.ode.math.take(tab, y[1]) * y[0], 1.0]
    s = eagle.ode.solve_ivp(g, (0.0, 2.5), np.array([[1.0, 0.0]]), rtol=1e-10, atol=1e-12, backend="cpu")
    np.testing.assert_allclose(s.y[0, 0], np.exp(-4.5), rtol=1e-7)


def test_a_stencil_right_hand_side_is_emitted_as_loops_and_solves_bit_for_bit_as_straight_line(cpu, monkeypatch):
    """Outputs of one shape at the same offsets from their index become one C loop (the compiler's
    time grows faster than a straight-line body); the loop computes the same operations in the same
    order, so in exact mode the solve equals the straight-line one bit for bit, and both the closed
    form of the semi-discrete heat equation's sine mode."""
    from eagle.ode import _trace
    d = 96

    def heat(t, u, c):
        h2 = float((d + 1) ** 2)
        return [c * h2 * ((u[k - 1] if k else 0.0) - 2.0 * u[k] + (u[k + 1] if k < d - 1 else 0.0)) for k in range(d)]
    src = _trace.trace(heat, d, 1).c_function("f")
    assert "for (int k = 1; k < 95; ++k) out[k] =" in src and src.count("out[") == 3, src
    x = np.arange(1, d + 1) / (d + 1)
    y0 = np.sin(np.pi * x)[None].repeat(3, 0)
    kw = dict(args=(np.array([0.5, 1.0, 2.0]),), rtol=1e-9, atol=1e-12, exact=True, backend="cpu")
    looped = eagle.ode.solve_ivp(heat, (0.0, 0.01), y0, **kw)
    monkeypatch.setattr(_trace, "REROLL_MIN_OUTPUTS", 10**9)
    straight = eagle.ode.solve_ivp(heat, (0.0, 0.01), y0, **kw)
    assert "for (int k" not in straight.source.split("ode_user_f")[1].split("}")[0]
    np.testing.assert_array_equal(looped.y, straight.y)
    lam = 4 * (d + 1) ** 2 * np.sin(np.pi / (2 * (d + 1))) ** 2
    np.testing.assert_allclose(looped.y, np.exp(-lam * 0.01 * kw["args"][0])[:, None] * y0, rtol=1e-6, atol=1e-10)


@pytest.mark.slow  # about 3 s of compile (was 291 s: issue 42's hang)
def test_a_10000_component_right_hand_side_compiles_in_seconds(cpu):
    import time
    t = time.perf_counter()
    sol = eagle.ode.solve_ivp(lambda t, y: -y, (0.0, 1.0), np.ones((2, 10_000)), method="DOP853", backend="cpu")
    took = time.perf_counter() - t
    np.testing.assert_allclose(sol.y, np.exp(-1.0), rtol=1e-5)
    assert took < 60, f"a 10 000-component -y took {took:.0f} s to trace, compile and solve"
