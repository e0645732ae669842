"""eagle.ode.solve_sde (issue 30, SDE ensembles): orders of convergence measured on geometric
Brownian motion against its exact solution, an up-and-out barrier option against the
Broadie-Glasserman-Kou closed form, the Brownian increments against <eagle/random.h> called
directly, paths independent of lanes and call splits, events, t_eval, failures, hostile input.

References are independent of the solver: the exact GBM solution X0 exp((mu - sigma^2/2) t +
sigma W_t) driven by the path's own W_t (``return_noise=True``, itself checked against a kernel
that draws the same normals from <eagle/random.h>), E[X_T] = X0 exp(mu T) and Euler-Maruyama's
exact mean X0 (1 + mu dt)^n, and examples/barrier/barrier.py's closed form. Tolerances: fitted
slopes within 0.2 of the theory (as issue 30 asks), Monte-Carlo means within 3 or 4 standard
errors. Every test runs on cpu in a few seconds; one asks cpu == cuda bit for bit in exact mode."""
import os
import sys

import numpy as np
import pytest

import eagle
import eagle.ode
from _subproc import run_snippet

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MU, SIGMA, T = 2.0, 1.0, 1.0  # GBM of Higham's SIAM Review (2001) study


def gbm_drift(t, y):
    return (MU * y[0],)


def gbm_diffusion(t, y):
    return (SIGMA * y[0],)


def strong_errors(method, dts, n=2000, seed=11):
    """E|X_T^dt - X_T| over n paths, X_T the exact solution on each path's own Brownian motion."""
    errs = []
    for dt in dts:
        sol = eagle.ode.solve_sde(gbm_drift, gbm_diffusion, (0.0, T), np.ones((n, 1)), dt=dt, method=method,
                                  seed=seed, return_noise=True, backend="cpu")
        assert np.all(sol.status == 0) and np.all(sol.n_steps == round(T / dt))
        exact = np.exp((MU - SIGMA**2 / 2) * T + SIGMA * sol.noise[:, 0])
        errs.append(np.mean(np.abs(sol.y[:, 0] - exact)))
    return np.array(errs)


def slope(dts, errs):
    return np.polyfit(np.log(dts), np.log(errs), 1)[0]


DTS = [2.0**-k for k in range(3, 8)]


def test_euler_maruyama_strong_order_one_half():
    errs = strong_errors("EulerMaruyama", DTS)
    p = slope(DTS, errs)
    assert abs(p - 0.5) < 0.2, (p, errs)


def test_milstein_strong_order_one():
    errs = strong_errors("Milstein", DTS)
    p = slope(DTS, errs)
    assert abs(p - 1.0) < 0.2, (p, errs)
    assert errs[-1] < strong_errors("EulerMaruyama", DTS[-1:])[0] / 2  # and well below Euler-Maruyama's


def test_euler_maruyama_weak_order_one():
    """|E[X_T^dt] - X0 e^(mu T)| with small noise (sigma = 0.2, so the bias dominates the Monte-Carlo
    error); each mean also agrees with Euler-Maruyama's own exact mean X0 (1 + mu dt)^(T / dt)."""
    mu, sigma, n = 1.0, 0.2, 40000
    dts = [2.0**-k for k in range(2, 6)]
    errs = []
    for dt in dts:
        sol = eagle.ode.solve_sde(lambda t, y: (mu * y[0],), lambda t, y: (sigma * y[0],), (0.0, 1.0),
                                  np.ones((n, 1)), dt=dt, seed=5, backend="cpu")
        mv = eagle.mean_var(np.ascontiguousarray(sol.y[:, 0]))
        assert abs(mv.mean - (1 + mu * dt) ** round(1 / dt)) < 4 * mv.stderr, (dt, mv)
        errs.append(abs(mv.mean - np.exp(mu)))
    p = slope(dts, errs)
    assert abs(p - 1.0) < 0.2, (p, errs)


BM_KERNEL = r"""
#include <eagle/kernel.h>
#include <eagle/random.h>
/* W_T of path i, component k: sum over steps s of sqrt(dt) z, z the path's normal number m = s d + k:
 * float64, half m % 2 of block m / 2 of eagle_rng_normal2; float32, number m % 4 of block m / 4 of
 * eagle_rng_normal4f. Each normal recomputed from its block here (no cache). */
EAGLE_KERNEL(bm_sum, (double*, w), (int64_t, steps), (int64_t, d), (double, sq), (int64_t, seed))
{
    for (int64_t k = 0; k < d; ++k) {
        double acc = 0.0;
        for (int64_t s = 0; s < steps; ++s) {
            const int64_t m = s * d + k;
            const eagle_rng_double2 p = eagle_rng_normal2((uint64_t)seed, (uint64_t)i, (uint64_t)(m / 2));
            acc += sq * (m % 2 ? p.y : p.x);
        }
        w[k * n + i] = acc;
    }
}
EAGLE_KERNEL(bm_sum_f, (float*, w), (int64_t, steps), (int64_t, d), (float, sq), (int64_t, seed))
{
    for (int64_t k = 0; k < d; ++k) {
        float acc = 0.0f;
        for (int64_t s = 0; s < steps; ++s) {
            const int64_t m = s * d + k;
            const eagle_rng_float4 p = eagle_rng_normal4f((uint64_t)seed, (uint64_t)i, (uint64_t)(m / 4));
            const float z = m % 4 == 0 ? p.x : m % 4 == 1 ? p.y : m % 4 == 2 ? p.z : p.w;
            acc += sq * z;
        }
        w[k * n + i] = acc;
    }
}
"""


@pytest.mark.parametrize("dtype,d", [("float64", 1), ("float64", 3), ("float32", 1), ("float32", 5)])
def test_the_increments_are_random_h_normals_keyed_by_seed_path_and_step(cpu, dtype, d):
    """Pure Brownian motion (d = 1: a block serves 2 or 4 steps; d = 3, 5: steps straddle blocks):
    the solver's y - y0 and its noise are the sums that a kernel calling <eagle/random.h> itself
    computes, bit for bit, whether or not a call of the step body ends mid-block."""
    n, dt, steps, seed = 64, 0.125, 8, 2**40 + 17
    solver = eagle.ode.SdeSolver(lambda t, y: (0.0,) * d, lambda t, y: (1.0,) * d, t_span=(0.0, 1.0), dt=dt,
                                 seed=seed, return_noise=True, exact=True, dtype=dtype, steps_per_call=3)
    sol = solver.solve(np.zeros((n, d), dtype))
    mod = cpu.compile(BM_KERNEL.encode(), name="bm_sum.c", exact=True)
    w = cpu.empty(d * n, dtype)
    s = cpu.stream()
    kernel = mod.bm_sum if dtype == "float64" else mod.bm_sum_f
    sq = np.dtype(dtype).type(np.sqrt(dt))  # a numpy scalar of the parameter's type (a Python float is a double)
    s.run(kernel, [w, steps, d, sq, seed], n)
    s.synchronize()
    ref = w.numpy().reshape(d, n).T
    assert sol.noise.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(sol.noise, ref)
    np.testing.assert_array_equal(sol.y, ref)
    # and they are Brownian: W_1 ~ N(0, 1) in each component (loose: a few hundred draws)
    assert abs(ref.mean()) < 4 / np.sqrt(ref.size) and 0.7 < ref.var() < 1.3


def test_paths_do_not_depend_on_lanes_calls_or_solver_reuse():
    y0 = np.linspace(0.5, 1.5, 300).reshape(-1, 1)
    ref = eagle.ode.solve_sde(gbm_drift, gbm_diffusion, (0.0, 1.0), y0, dt=1 / 32, method="Milstein", seed=9,
                              backend="cpu")
    split = eagle.ode.SdeSolver(gbm_drift, gbm_diffusion, t_span=(0.0, 1.0), dt=1 / 32, method="Milstein", seed=1,
                                steps_per_call=5, workers=3)
    got = split.solve(y0, seed=9)
    np.testing.assert_array_equal(got.y, ref.y)
    np.testing.assert_array_equal(got.t, ref.t)
    again = split.solve(y0[:200], seed=9)   # fewer paths: the first 200 are the same paths
    np.testing.assert_array_equal(again.y, ref.y[:200])
    other = split.solve(y0, seed=10)
    assert np.all(other.y != ref.y)
    np.testing.assert_array_equal(got.y, ref.y)  # the earlier solution kept its own planes


def test_a_shared_y0_and_scalar_args_are_the_broadcast_arrays():
    """y0 of shape (d,) and number args are sent once and read by every path: the paths are those of
    the arrays broadcast to N."""
    n = 257

    def drift(t, y, m, s):
        return (m * y[0], -y[1])

    def diffusion(t, y, m, s):
        return (s * y[0], 0.3)
    sigma = np.linspace(0.1, 0.5, n)
    kw = dict(dt=1 / 16, method="Milstein", seed=3, backend="cpu")
    shared = eagle.ode.solve_sde(drift, diffusion, (0.0, 1.0), np.array([1.0, 2.0]), args=(0.7, sigma), **kw)
    full = eagle.ode.solve_sde(drift, diffusion, (0.0, 1.0), np.tile([1.0, 2.0], (n, 1)),
                               args=(np.full(n, 0.7), sigma), **kw)
    np.testing.assert_array_equal(shared.y, full.y)
    assert len(np.unique(shared.y[:, 0])) == n  # every path its own
    # nothing per path at all: n_paths says N
    alone = eagle.ode.solve_sde(drift, diffusion, (0.0, 1.0), np.array([1.0, 2.0]), args=(0.7, 0.2), n_paths=n, **kw)
    ref = eagle.ode.solve_sde(drift, diffusion, (0.0, 1.0), np.array([1.0, 2.0]), args=(0.7, np.full(n, 0.2)), **kw)
    assert alone.y.shape == (n, 2)
    np.testing.assert_array_equal(alone.y, ref.y)


def test_up_and_out_barrier_against_the_bgk_closed_form():
    """examples/barrier's contract: X = s0 + drift t + vol W watched at 250 unit steps, knocked out
    at the first step at or above the barrier (a terminal event, direction +1). Euler-Maruyama is
    exact for constant coefficients, so the price is the discrete-monitoring price, which the
    Broadie-Glasserman-Kou correction of the continuous closed form gives."""
    sys.path.insert(0, os.path.join(ROOT, "examples", "barrier"))
    try:
        import barrier as ex
    finally:
        sys.path.pop(0)
    p = ex.PARAMS
    B = p["barrier"]

    def knock(t, y, drift):
        return y[0] - B
    knock.terminal, knock.direction = True, 1
    n = 20000
    sol = eagle.ode.solve_sde(lambda t, y, drift: (drift,), lambda t, y, drift: (p["vol"],), (0.0, float(p["T"])),
                              np.full((n, 1), p["s0"]), dt=1.0, events=[knock], args=(p["drift"],), seed=123,
                              backend="cpu")
    out = sol.status == 1
    assert set(np.unique(sol.status)) <= {0, 1}
    assert 0.3 < out.mean() < 0.7  # about half knocked out
    te, ye = sol.t_events[0], sol.y_events[0][:, 0]
    # knocked-out paths stop at the step end where they are first at or above B, and say so
    assert np.all(ye[out] >= B) and np.all(te[out] == np.rint(te[out])) and np.all(sol.t[out] == te[out])
    np.testing.assert_array_equal(sol.n_steps[out], te[out].astype(int))
    np.testing.assert_array_equal(sol.y[out, 0], ye[out])
    assert np.all(np.isnan(te[~out])) and np.all(sol.t[~out] == p["T"]) and np.all(sol.y[~out, 0] < B)
    payoff = np.where(out, 0.0, np.maximum(sol.y[:, 0] - p["strike"], 0.0))
    mv = eagle.mean_var(payoff)
    ref = ex.discrete_price_bgk(**p)
    assert abs(mv.mean - ref) < 3 * mv.stderr, (mv, ref)
    assert abs(ex.continuous_price(**p) - ref) > 3 * mv.stderr  # the test can tell the monitoring apart


def test_t_eval_on_the_grid_and_a_non_terminal_event():
    """Two independent Brownian motions from 0: the stored states have variance t (and are
    uncorrelated); the last stored state is the end state; an event that is not terminal is
    counted and the path goes on."""
    n, dt = 4000, 0.125
    te = np.array([0.0, 0.25, 0.5, 1.0])

    def up(t, y):
        return y[0] - 0.5
    up.direction = 1
    sol = eagle.ode.solve_sde(lambda t, y: (0.0, 0.0), lambda t, y: (1.0, 1.0), (0.0, 1.0), np.zeros((n, 2)),
                              dt=dt, t_eval=te, events=up, seed=4, backend="cpu")
    assert sol.ys.shape == (n, 2, 4) and np.all(sol.status == 0)
    np.testing.assert_array_equal(sol.ys[:, :, 0], 0.0)
    np.testing.assert_array_equal(sol.ys[:, :, -1], sol.y)
    for j in range(1, 4):
        v = sol.ys[:, :, j].var(axis=0)
        assert np.all(np.abs(v / te[j] - 1) < 5 * np.sqrt(2 / n)), (j, v)
    assert abs(np.corrcoef(sol.ys[:, 0, -1], sol.ys[:, 1, -1])[0, 1]) < 4 / np.sqrt(n)
    hit = sol.n_events[:, 0] > 0
    t_hit = sol.t_events[0][hit]
    assert 0.2 < hit.mean() < 0.8
    assert np.all(t_hit / dt == np.rint(t_hit / dt)) and np.all(sol.y_events[0][hit, 0] >= 0.5)
    # the first crossing at a t_eval point is the state stored there
    at_half = hit & (sol.t_events[0] == 0.5)
    np.testing.assert_array_equal(sol.y_events[0][at_half], sol.ys[at_half, :, 2])


def test_t_eval_after_a_terminal_event_is_nan_and_failures_are_status_minus_one():
    def stop(t, y):
        return y[0] - 0.3
    stop.terminal = True
    sol = eagle.ode.solve_sde(lambda t, y: (0.0,), lambda t, y: (1.0,), (0.0, 1.0), np.zeros((500, 1)), dt=0.05,
                              t_eval=[0.5, 1.0], events=[stop], seed=2, backend="cpu")
    early = (sol.status == 1) & (sol.t < 0.5)
    assert early.any() and np.all(np.isnan(sol.ys[early]))
    # y' = y^2 dt from y0 = 1e200: the state overflows at the first step (status -1); a nan y0 is
    # refused before the solve, naming it (eagle/ode/_check.py's finite)
    y0 = np.array([[1e200], [1.0]])
    bad = eagle.ode.solve_sde(lambda t, y: (y[0] * y[0],), lambda t, y: (0.0,), (0.0, 1.0), y0, dt=0.1,
                              backend="cpu")
    np.testing.assert_array_equal(bad.status, [-1, 0])
    np.testing.assert_array_equal(bad.n_steps, [1, 10])
    with pytest.raises(eagle.EagleError, match=r"y0\[1, 0\]"):
        eagle.ode.solve_sde(lambda t, y: (y[0] * y[0],), lambda t, y: (0.0,), (0.0, 1.0),
                            np.array([[1.0], [np.nan]]), dt=0.1, backend="cpu")
    assert bad.failure[0] != 0 and "finite" in bad.message[int(bad.failure[0])]


def test_float32_and_a_shortened_last_step():
    """dt that does not divide the span: the last step lands on t1; float32 paths are Brownian."""
    sol = eagle.ode.solve_sde(lambda t, y: (1.0,), lambda t, y: (0.5,), (0.0, 1.0), np.zeros((4000, 1), np.float32),
                              dt=0.3, seed=8, backend="cpu")
    assert sol.y.dtype == np.float32 and np.all(sol.n_steps == 4) and np.all(sol.t == np.float32(1.0))
    mv = eagle.mean_var(np.ascontiguousarray(sol.y[:, 0]))
    assert abs(mv.mean - 1.0) < 4 * mv.stderr and abs(mv.var - 0.25) < 0.03


SETUP = """
import numpy as np
import eagle, eagle.ode
a = lambda t, y: (y[0], -y[1])
b = lambda t, y: (0.1, 0.2)
y0 = np.ones((4, 2))
"""

REFUSED = [
    ("dt missing", "eagle.ode.solve_sde(a, b, (0.0, 1.0), y0)", "ValueError", ["dt"]),
    ("dt negative", "eagle.ode.solve_sde(a, b, (0.0, 1.0), y0, dt=-0.1)", "ValueError", ["dt"]),
    ("dt nan", "eagle.ode.solve_sde(a, b, (0.0, 1.0), y0, dt=float('nan'))", "ValueError", ["dt"]),
    ("dt a string", "eagle.ode.solve_sde(a, b, (0.0, 1.0), y0, dt='0.1')", "TypeError", ["dt"]),
    ("an unknown method", "eagle.ode.solve_sde(a, b, (0.0, 1.0), y0, dt=0.1, method='SRI2')", "ValueError",
     ["method", "SRI2"]),
    ("an unknown noise", "eagle.ode.solve_sde(a, b, (0.0, 1.0), y0, dt=0.1, noise='general')", "ValueError",
     ["noise", "general"]),
    ("diffusion of the wrong length",
     "eagle.ode.solve_sde(a, lambda t, y: (0.1,), (0.0, 1.0), y0, dt=0.1)", "ValueError", ["diffusion", "2"]),
    ("drift of the wrong length",
     "eagle.ode.solve_sde(lambda t, y: (1, 2, 3), b, (0.0, 1.0), y0, dt=0.1)", "ValueError", ["drift"]),
    ("diffusion not callable", "eagle.ode.solve_sde(a, 0.3, (0.0, 1.0), y0, dt=0.1)", "TypeError", ["diffusion"]),
    ("t_eval off the step grid",
     "eagle.ode.solve_sde(a, b, (0.0, 1.0), y0, dt=0.1, t_eval=[0.15])", "ValueError", ["t_eval", "grid"]),
    ("n_paths disagreeing with y0",
     "eagle.ode.solve_sde(a, b, (0.0, 1.0), y0, dt=0.1, n_paths=5)", "ValueError", ["n_paths", "y0"]),
    ("a negative seed", "eagle.ode.solve_sde(a, b, (0.0, 1.0), y0, dt=0.1, seed=-1)", "ValueError", ["seed"]),
    # per-path ends are taken since the one run (issue 38); ends that disagree with y0 on N are not
    ("per-path t1 of the wrong length", "eagle.ode.solve_sde(a, b, (0.0, np.ones(3)), y0, dt=0.1)", "ValueError",
     ["t_span"]),
    ("a backwards span", "eagle.ode.solve_sde(a, b, (1.0, 0.0), y0, dt=0.1)", "ValueError", ["t_span"]),
    ("y0 of the wrong width for the solver",
     "s = eagle.ode.SdeSolver(a, b, t_span=(0.0, 1.0), dt=0.1, n_state=2, n_args=0)\ns.solve(np.ones((4, 3)))",
     "ValueError", ["y0"]),
]


@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_hostile_input_is_refused_naming_the_argument(case):
    _, snippet, builtin, words = case
    out = run_snippet(SETUP + snippet, timeout=120)
    assert out.status == "raised" and out.eagle_error, out.describe()
    if builtin:
        assert f"builtins.{builtin}" in out.exc_mro, out.describe()
    for w in words:
        assert w in out.exc_message, out.describe()


def test_a_device_kind_agrees_with_cpu_bit_for_bit_in_exact_mode(device):
    def knock(t, y):
        return y[0] - 1.6
    knock.terminal = True
    y0 = np.linspace(0.8, 1.2, 5000).reshape(-1, 1)
    for method in ("EulerMaruyama", "Milstein"):
        kw = dict(dt=1 / 64, method=method, seed=77, events=[knock], t_eval=[0.5, 1.0], exact=True,
                  return_noise=True)
        c = eagle.ode.solve_sde(gbm_drift, gbm_diffusion, (0.0, 1.0), y0, backend="cpu", **kw)
        g = eagle.ode.solve_sde(gbm_drift, gbm_diffusion, (0.0, 1.0), y0, backend=device.kind, **kw)
        assert 0.05 < np.mean(c.status == 1) < 0.95
        for f in ("y", "t", "status", "n_steps", "ys", "noise"):
            np.testing.assert_array_equal(getattr(g, f), getattr(c, f), err_msg=f"{method}: {f}")
        np.testing.assert_array_equal(g.t_events[0], c.t_events[0])
        np.testing.assert_array_equal(g.y_events[0], c.y_events[0])
