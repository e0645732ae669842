"""Gradients through eagle.ode: forward sensitivities (solve_ivp(sensitivity=...)) and the discrete
adjoint (solve_ivp(adjoint=...), sol.vjp), against closed forms, central finite differences of
eagle's own fixed-step solves, and each other."""
import numpy as np
import pytest

import eagle
import eagle.ode as ode
from _stiff_problems import rober, van_der_pol


def decay(t, y, k):
    return [-k * y[0]]


def oscillator(t, y, w):
    return [y[1], -w * w * y[0]]


def lorenz(t, y, sigma, rho, beta):
    return [sigma * (y[1] - y[0]), y[0] * (rho - y[2]) - y[1], y[0] * y[1] - beta * y[2]]


LORENZ_ARGS = (10.0, np.linspace(0.0, 21.0, 6), 8.0 / 3.0)


def test_decay_closed_form_forward_and_reverse():
    k = np.array([0.5, 1.0, 2.0, 4.0])
    y0 = np.array([[1.0], [2.0], [0.5], [3.0]])
    fs = ode.solve_ivp(decay, (0.0, 1.5), y0, args=(k,), rtol=1e-11, atol=1e-13, sensitivity=True)
    assert fs.dy_dargs.shape == (4, 1, 1) and fs.dy_dy0.shape == (4, 1, 1)
    np.testing.assert_allclose(fs.dy_dargs[:, 0, 0], -1.5 * y0[:, 0] * np.exp(-1.5 * k), rtol=1e-9)
    np.testing.assert_allclose(fs.dy_dy0[:, 0, 0], np.exp(-1.5 * k), rtol=1e-9)
    ad = ode.solve_ivp(decay, (0.0, 1.5), y0, args=(k,), rtol=1e-11, atol=1e-13, adjoint=True)
    g = ad.vjp(np.ones((4, 1)))
    np.testing.assert_allclose(g.args[:, 0], -1.5 * y0[:, 0] * np.exp(-1.5 * k), rtol=1e-9)
    np.testing.assert_allclose(g.y0[:, 0], np.exp(-1.5 * k), rtol=1e-9)
    on_backend = ad.vjp(np.ones(1), to_host=False)  # arrays of the solve's backend, through DLPack
    assert np.array_equal(np.from_dlpack(on_backend.y0), g.y0)
    assert np.array_equal(np.from_dlpack(on_backend.args), g.args)


def test_oscillator_closed_form_with_t_eval():
    w = np.array([0.5, 1.0, 3.0])
    x0, v0 = 1.0, 0.5
    te = np.linspace(0.0, 2.0, 7)
    fs = ode.solve_ivp(oscillator, (0.0, 2.0), [x0, v0], args=(w,), t_eval=te, rtol=1e-11, atol=1e-12,
                       sensitivity=(0, "y0"))
    T, W = te[None, :], w[:, None]
    c, s = np.cos(W * T), np.sin(W * T)
    dx_dw = -x0 * T * s + v0 * (T * c / W - s / W ** 2)
    dv_dw = -x0 * (s + W * T * c) - v0 * T * s
    np.testing.assert_allclose(fs.dys_dargs[:, 0, 0, :], dx_dw, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(fs.dys_dargs[:, 1, 0, :], dv_dw, rtol=1e-8, atol=1e-10)
    # d y(t) / d y0 is the flow's matrix [[cos, sin / w], [-w sin, cos]]
    np.testing.assert_allclose(fs.dys_dy0[:, 0, 0, :], c, atol=1e-9)
    np.testing.assert_allclose(fs.dys_dy0[:, 0, 1, :], s / W, atol=1e-9)
    np.testing.assert_allclose(fs.dys_dy0[:, 1, 0, :], -W * s, atol=1e-9)
    np.testing.assert_allclose(fs.dy_dy0[:, 1, 1], np.cos(2.0 * w), atol=1e-9)
    np.testing.assert_allclose(fs.dy_dargs[:, :, 0], np.stack([dx_dw[:, -1], dv_dw[:, -1]], axis=1), rtol=1e-8)


def test_fixed_step_matches_central_differences_of_eagle_solves():
    """RK4 at fixed steps: the discrete derivative equals central differences of eagle's own solves."""
    rho = np.array([5.0, 14.0, 21.0])
    y0 = np.array([1.0, 1.0, 1.0])
    kw = dict(method="RK4", dt=0.01, adaptive=False)
    fs = ode.solve_ivp(lorenz, (0.0, 1.0), y0, args=(10.0, rho, 8.0 / 3.0), sensitivity=("rho", "y0"), **kw)
    e = 1e-5
    eps = np.array([-e, e]) * rho[:, None]
    shifted = np.concatenate([rho + eps[:, 0], rho + eps[:, 1]])
    plain = ode.solve_ivp(lorenz, (0.0, 1.0), y0, args=(10.0, shifted, 8.0 / 3.0), **kw).y
    fd = (plain[3:] - plain[:3]) / (2 * e * rho[:, None])
    np.testing.assert_allclose(fs.dy_dargs[:, :, 0], fd, rtol=1e-8, atol=1e-8 * np.abs(fd).max())
    # y0 columns, one at a time, in one batch of 2 x 3 x 3 solves
    ys = []
    for j in range(3):
        for sgn in (-1, 1):
            y = np.tile(y0, (3, 1))
            y[:, j] += sgn * e
            ys.append(y)
    plain = ode.solve_ivp(lorenz, (0.0, 1.0), np.concatenate(ys), args=(10.0, np.tile(rho, 6), 8.0 / 3.0), **kw).y
    plain = plain.reshape(3, 2, 3, 3)
    fd0 = np.stack([(plain[j, 1] - plain[j, 0]) / (2 * e) for j in range(3)], axis=-1)
    np.testing.assert_allclose(fs.dy_dy0, fd0, rtol=1e-7, atol=1e-7 * np.abs(fd0).max())
    ad = ode.solve_ivp(lorenz, (0.0, 1.0), y0, args=(10.0, rho, 8.0 / 3.0), adjoint=True, **kw)
    cy = np.arange(9.0).reshape(3, 3) - 4.0
    g = ad.vjp(cy)
    np.testing.assert_allclose(g.args[:, 1], np.einsum("nd,nd->n", cy, fs.dy_dargs[:, :, 0]), rtol=1e-12)
    np.testing.assert_allclose(g.y0, np.einsum("nd,ndj->nj", cy, fs.dy_dy0), rtol=1e-11, atol=1e-9)


def test_steps_are_the_plain_solves_and_samples_are_independent():
    """The sensitivity solve takes the plain solve's steps and y bit for bit; a batch whose samples
    take very different step counts gives each sample what it gets solved alone, bit for bit."""
    k = np.array([0.1, 3.0, 40.0, 900.0])
    y0 = np.array([1.0])
    plain = ode.solve_ivp(decay, (0.0, 2.0), y0, args=(k,), rtol=1e-9, atol=1e-12)
    fs = ode.solve_ivp(decay, (0.0, 2.0), y0, args=(k,), rtol=1e-9, atol=1e-12, sensitivity=True)
    assert plain.n_accepted.tolist() == fs.n_accepted.tolist()
    assert plain.n_rejected.tolist() == fs.n_rejected.tolist()
    assert fs.n_accepted.max() > 5 * fs.n_accepted.min()
    assert np.array_equal(plain.y, fs.y)
    rho = LORENZ_ARGS[1]
    batch = ode.solve_ivp(lorenz, (0.0, 1.0), [1.0, 0.0, 0.0], args=(10.0, rho, 8.0 / 3.0), rtol=1e-8,
                          sensitivity="rho")
    ad = ode.solve_ivp(lorenz, (0.0, 1.0), [1.0, 0.0, 0.0], args=(10.0, rho, 8.0 / 3.0), rtol=1e-8, adjoint=True)
    g = ad.vjp(2 * ad.y)
    assert ad.n_accepted.tolist() == batch.n_accepted.tolist()
    for i in (0, 5):
        alone = ode.solve_ivp(lorenz, (0.0, 1.0), [1.0, 0.0, 0.0], args=(10.0, rho[i:i + 1], 8.0 / 3.0), rtol=1e-8,
                              sensitivity="rho")
        assert np.array_equal(alone.dy_dargs[0], batch.dy_dargs[i])
        assert alone.n_accepted[0] == batch.n_accepted[i]
        solo = ode.solve_ivp(lorenz, (0.0, 1.0), [1.0, 0.0, 0.0], args=(10.0, rho[i:i + 1], 8.0 / 3.0), rtol=1e-8,
                             adjoint=int(ad.tape_capacity))
        assert np.array_equal(solo.vjp(2 * solo.y).args[0], g.args[i])
    np.testing.assert_allclose(g.args[:, 1], np.einsum("nd,nd->n", 2 * ad.y, batch.dy_dargs[:, :, 0]), rtol=1e-12)


@pytest.mark.parametrize("method", ["RK45", "RK4", pytest.param("RK23", marks=pytest.mark.slow),
                                    pytest.param("Euler", marks=pytest.mark.slow)])
def test_adjoint_equals_forward_sensitivities_with_t_eval(method):
    """Through every dense output kind (P with the FSAL stage, Hermite, linear)."""
    kw = dict(method=method, t_eval=np.array([0.0, 0.13, 0.5, 0.77, 1.0]), rtol=1e-8, atol=1e-10)
    if method in ("RK4", "Euler"):
        kw.update(dt=0.01 if method == "RK4" else 0.002, adaptive=False)
    rho = np.array([3.0, 17.0, 28.0])
    args = (10.0, rho, 8.0 / 3.0)
    fs = ode.solve_ivp(lorenz, (0.0, 1.0), [1.0, 0.5, 0.2], args=args, sensitivity=True, **kw)
    ad = ode.solve_ivp(lorenz, (0.0, 1.0), [1.0, 0.5, 0.2], args=args, adjoint=True, **kw)
    rng = np.random.default_rng(1)
    cy, cys = rng.normal(size=(3, 3)), rng.normal(size=(3, 3, 5))
    g = ad.vjp(cy, cys)
    ref_a = np.einsum("nd,ndp->np", cy, fs.dy_dargs) + np.einsum("ndt,ndpt->np", cys, fs.dys_dargs)
    ref_y = np.einsum("nd,ndp->np", cy, fs.dy_dy0) + np.einsum("ndt,ndpt->np", cys, fs.dys_dy0)
    np.testing.assert_allclose(g.args, ref_a, rtol=1e-10, atol=1e-12 * np.abs(ref_a).max())
    np.testing.assert_allclose(g.y0, ref_y, rtol=1e-10, atol=1e-12 * np.abs(ref_y).max())


def test_tape_grows_and_states_its_size():
    rho = LORENZ_ARGS[1]
    ad = ode.solve_ivp(lorenz, (0.0, 1.0), [1.0, 0.0, 0.0], args=(10.0, rho, 8.0 / 3.0), rtol=1e-8, adjoint=4)
    assert ad.tape_capacity == ad.n_accepted.max() > 4
    assert ad.tape_bytes == (ad.tape_capacity + 1) * (3 + 2) * rho.size * 8
    fs = ode.solve_ivp(lorenz, (0.0, 1.0), [1.0, 0.0, 0.0], args=(10.0, rho, 8.0 / 3.0), rtol=1e-8, sensitivity="rho")
    g = ad.vjp(np.ones((rho.size, 3)))
    np.testing.assert_allclose(g.args[:, 1], fs.dy_dargs[:, :, 0].sum(axis=1), rtol=1e-11)


def test_refusals():
    with pytest.raises(eagle.EagleMemoryError, match="GiB"):
        ode.solve_ivp(decay, (0.0, 1.0), np.ones((1000, 1)), args=(1.0,), adjoint=2**30)
    with pytest.raises(eagle.EagleValueError, match="not an argument"):
        ode.solve_ivp(decay, (0.0, 1.0), [1.0], args=(1.0,), sensitivity="kappa")
    with pytest.raises(eagle.EagleValueError, match="args\\[3\\]"):
        ode.solve_ivp(decay, (0.0, 1.0), [1.0], args=(1.0,), sensitivity=3)
    with pytest.raises(eagle.EagleTypeError, match="eagle.ode.C"):
        ode.solve_ivp(ode.C("EAGLE_FN void g(const EAGLE_ODE_REAL t, const EAGLE_ODE_REAL* y, "
                            "const EAGLE_ODE_REAL* a, EAGLE_ODE_REAL* o) { (void)t; o[0] = -a[0] * y[0]; }"),
                      (0.0, 1.0), [1.0], args=(1.0,), sensitivity=True)
    with pytest.raises(eagle.EagleValueError, match="not both"):
        ode.solve_ivp(decay, (0.0, 1.0), [1.0], args=(1.0,), sensitivity=True, adjoint=True)

    def hit(t, y, k):
        return y[0] - 0.5
    hit.terminal = True
    with pytest.raises(eagle.EagleValueError, match="terminal event"):
        ode.solve_ivp(decay, (0.0, 1.0), [1.0], args=(1.0,), events=hit, adjoint=True)
    with pytest.raises(eagle.EagleValueError, match="DOP853"):
        ode.solve_ivp(decay, (0.0, 1.0), [1.0], args=(1.0,), method="DOP853", t_eval=[0.5], adjoint=True)
    ad = ode.solve_ivp(decay, (0.0, 1.0), np.ones((2, 1)), args=(1.0,), adjoint=True)
    with pytest.raises(eagle.EagleValueError, match="cotangent_y must have shape"):
        ad.vjp(np.ones((3, 1)))
    with pytest.raises(eagle.EagleValueError, match="no t_eval"):
        ad.vjp(np.ones((2, 1)), np.ones((2, 1, 1)))


def test_terminal_event_time_gradient_closed_form():
    """y' = -k y stops at y = 1/2: t* = log(2 y0) / k, dt*/dk = -log(2 y0) / k^2, dt*/dy0 = 1 / (k y0),
    and the state there is 1/2 whatever the parameters (its total derivative 0)."""
    def half(t, y, k):
        return y[0] - 0.5
    half.terminal = True
    k, y0 = np.array([0.5, 1.0, 2.0]), np.array([[1.0], [2.0], [3.0]])
    s = ode.solve_ivp(decay, (0.0, 10.0), y0, args=(k,), events=half, rtol=1e-10, atol=1e-12, sensitivity=True)
    assert s.status.tolist() == [1, 1, 1]
    np.testing.assert_allclose(s.dt_event_dargs(0)[:, 0], -np.log(2 * y0[:, 0]) / k ** 2, rtol=1e-8)
    np.testing.assert_allclose(s.dt_event_dy0(0)[:, 0], 1 / (k * y0[:, 0]), rtol=1e-8)
    np.testing.assert_allclose(s.dy_dargs[:, 0, 0], 0.0, atol=1e-9)
    np.testing.assert_allclose(s.dy_dy0[:, 0, 0], 0.0, atol=1e-9)


def test_a_device_kind_agrees_with_cpu_bit_for_bit_in_exact_mode(device):
    """Sensitivities and the adjoint's gradients: the same bits on cpu and on the device kind."""
    rho = np.linspace(0.0, 21.0, 64)
    te = np.linspace(0.0, 1.0, 5)
    out = {}
    for kind in ("cpu", device.kind):
        kw = dict(args=(10.0, rho, 8.0 / 3.0), rtol=1e-8, atol=1e-8, t_eval=te, backend=kind, exact=True)
        fs = ode.solve_ivp(lorenz, (0.0, 1.0), [1.0, 0.0, 0.0], sensitivity=("rho", "y0"), **kw)
        ad = ode.solve_ivp(lorenz, (0.0, 1.0), [1.0, 0.0, 0.0], adjoint=True, **kw)
        g = ad.vjp(2 * ad.y, np.ones(ad.ys.shape))
        out[kind] = (fs.y, fs.dy_dargs, fs.dys_dy0, fs.n_accepted, g.y0, g.args)
    for c, d in zip(out["cpu"], out[device.kind]):
        np.testing.assert_array_equal(c, d)


@pytest.mark.slow  # two more compiles
def test_float32_adjoint_equals_float32_sensitivities():
    rho = np.linspace(1.0, 21.0, 8)
    kw = dict(args=(10.0, rho, 8.0 / 3.0), rtol=1e-5, atol=1e-6, dtype="float32")
    fs = ode.solve_ivp(lorenz, (0.0, 1.0), [1.0, 0.0, 0.0], sensitivity="rho", **kw)
    ad = ode.solve_ivp(lorenz, (0.0, 1.0), [1.0, 0.0, 0.0], adjoint=True, **kw)
    assert fs.dy_dargs.dtype == np.float32 and ad.y.dtype == np.float32
    g = ad.vjp(np.ones((8, 3), np.float32))
    np.testing.assert_allclose(g.args[:, 1], fs.dy_dargs[:, :, 0].sum(axis=1), rtol=2e-4, atol=1e-3)


@pytest.mark.parametrize("method", ["EulerMaruyama", pytest.param("Milstein", marks=pytest.mark.slow)])
def test_sde_pathwise_sensitivities(method):
    """The noise held fixed: the paths are the plain ones bit for bit, d S_T / d S_0 = S_T / S_0 for
    geometric Brownian motion, and d S_T / d vol equals central differences of eagle's own paths."""
    def drift(t, y, mu, vol):
        return [mu * y[0]]

    def diffusion(t, y, mu, vol):
        return [vol * y[0]]
    n, kw = 6, dict(dt=1 / 50, method=method, seed=3)
    s = ode.SdeSensitivitySolver(drift, diffusion, t_span=(0.0, 1.0), n_state=1, n_args=2, sensitivity=("vol", "y0"),
                                 **kw)
    sol = s.solve(np.full((n, 1), 100.0), (0.05, 0.2))
    plain = ode.solve_sde(drift, diffusion, (0.0, 1.0), np.full((n, 1), 100.0), args=(0.05, 0.2), **kw)
    assert np.array_equal(sol.y, plain.y)
    np.testing.assert_allclose(sol.dy_dy0[:, 0, 0], plain.y[:, 0] / 100.0, rtol=1e-14)
    e = 1e-6
    up, down = (ode.solve_sde(drift, diffusion, (0.0, 1.0), np.full((n, 1), 100.0), args=(0.05, 0.2 * (1 + sg * e)),
                              **kw).y[:, 0] for sg in (1, -1))
    np.testing.assert_allclose(sol.dy_dargs[:, 0, 0], (up - down) / (2 * e * 0.2), rtol=1e-7, atol=1e-6)


def test_oscillator_event_time_gradient_closed_form():
    """x = cos(w t) first crosses 0 at t* = pi / (2 w): dt*/dw = -pi / (2 w^2), dt*/dx0 = 0, dt*/dv0 = 1 / w^2."""
    def down(t, y, w):
        return y[0]
    down.terminal, down.direction = True, -1
    w = np.array([0.5, 1.0, 2.0, 3.0])
    s = ode.solve_ivp(oscillator, (0.0, 10.0), [1.0, 0.0], args=(w,), events=down, rtol=1e-11, atol=1e-12,
                      sensitivity=True)
    np.testing.assert_allclose(s.t, np.pi / (2 * w), rtol=1e-9)
    np.testing.assert_allclose(s.dt_event_dargs(0)[:, 0], -np.pi / (2 * w ** 2), rtol=1e-7)
    np.testing.assert_allclose(s.dt_event_dy0(0), np.stack([np.zeros(4), 1 / w ** 2], axis=1), rtol=1e-7, atol=1e-9)
    # the end state x(t*) = 0 whatever w: its total derivative vanishes; v(t*) = -w: dv/dw = -1
    np.testing.assert_allclose(s.dy_dargs[:, :, 0], np.stack([np.zeros(4), -np.ones(4)], axis=1), atol=1e-7)


def test_linear_system_flow_matrix_against_expm():
    """y' = M y (8 components, a right-hand side large enough to be compiled out of line once
    augmented to 72 states): dy(1)/dy0 = expm(M), by both modes."""
    scipy_linalg = pytest.importorskip("scipy.linalg", reason="the reference is scipy.linalg.expm")
    M = np.random.default_rng(5).normal(size=(8, 8)) * 0.5

    def linear(t, y):
        return [sum(M[i, j] * y[j] for j in range(8)) for i in range(8)]
    y0 = np.linspace(1.0, 2.0, 8)
    fs = ode.solve_ivp(linear, (0.0, 1.0), y0, rtol=1e-11, atol=1e-12, sensitivity="y0")
    np.testing.assert_allclose(fs.dy_dy0[0], scipy_linalg.expm(M), rtol=1e-8, atol=1e-9)
    ad = ode.solve_ivp(linear, (0.0, 1.0), y0, rtol=1e-11, atol=1e-12, adjoint=True)
    e3 = np.zeros(8)
    e3[3] = 1.0
    np.testing.assert_allclose(ad.vjp(e3).y0[0], scipy_linalg.expm(M)[3], rtol=1e-8, atol=1e-9)


# ---------------------------------------------------------------- Rosenbrock methods (Rodas5P, Rosenbrock23)



@pytest.mark.parametrize("method", ["Rodas5P", "Rosenbrock23"])
def test_rosenbrock_sensitivities_are_the_discrete_derivative_at_fixed_steps(method):
    """Van der Pol (mu = 5, mildly stiff) at fixed steps: dy/dmu and dy/dy0 equal central
    differences of eagle's own solves of the same method to the differences' own error."""
    mu = np.array([3.0, 5.0, 8.0])
    y0 = np.tile([2.0, 0.0], (3, 1))
    kw = dict(method=method, adaptive=False, dt=2e-3, exact=True)
    s = ode.solve_ivp(van_der_pol, (0.0, 2.0), y0, args=(mu,), sensitivity=("mu", "y0"), **kw)
    assert np.all(s.status == 0)
    eps = 1e-6
    up = ode.solve_ivp(van_der_pol, (0.0, 2.0), y0, args=(mu * (1 + eps),), **kw).y
    dn = ode.solve_ivp(van_der_pol, (0.0, 2.0), y0, args=(mu * (1 - eps),), **kw).y
    fd = (up - dn) / (2 * eps * mu)[:, None]
    np.testing.assert_allclose(s.dy_dargs[:, :, 0], fd, rtol=2e-7, atol=1e-9)
    for j in range(2):
        yp, ym = y0.copy(), y0.copy()
        yp[:, j] += eps
        ym[:, j] -= eps
        fd = (ode.solve_ivp(van_der_pol, (0.0, 2.0), yp, args=(mu,), **kw).y
              - ode.solve_ivp(van_der_pol, (0.0, 2.0), ym, args=(mu,), **kw).y) / (2 * eps)
        np.testing.assert_allclose(s.dy_dy0[:, :, j], fd, rtol=2e-7, atol=1e-9)


@pytest.mark.parametrize("method", ["Rodas5P", "Rosenbrock23"])
def test_rosenbrock_sensitivities_on_robertson_against_scipy_and_the_plain_steps(method):
    """ROBER to t = 1e3: y and the step counts are the plain solve's bit for bit (the error norm
    sees y alone; y's LU serves the augmented system), and dy/dk1, dy/dk3 match the variational
    system solved by scipy's Radau at rtol 1e-12 to the method's tolerance."""
    from scipy.integrate import solve_ivp as scipy_solve
    k1 = 0.04 * np.array([0.8, 1.0, 1.2])
    y0 = np.tile([1.0, 0.0, 0.0], (3, 1))
    kw = dict(method=method, rtol=1e-7, atol=1e-12, exact=True)
    plain = ode.solve_ivp(rober, (0.0, 1e3), y0, args=(k1, 3e7, 1e4), **kw)
    s = ode.solve_ivp(rober, (0.0, 1e3), y0, args=(k1, 3e7, 1e4), sensitivity=("k1", "k3"), **kw)
    np.testing.assert_array_equal(s.y, plain.y)
    np.testing.assert_array_equal(s.n_accepted, plain.n_accepted)
    np.testing.assert_array_equal(s.n_rejected, plain.n_rejected)

    def variational(t, z, a, b, c):
        y, S = z[:3], z[3:].reshape(2, 3)
        J = np.array([[-a, c * y[2], c * y[1]],
                      [a, -2 * b * y[1] - c * y[2], -c * y[1]],
                      [0.0, 2 * b * y[1], 0.0]])
        fa = np.array([-y[0], y[0], 0.0])
        fc = np.array([y[1] * y[2], -y[1] * y[2], 0.0])
        return np.concatenate([rober(t, y, a, b, c), J @ S[0] + fa, J @ S[1] + fc])
    for i, a in enumerate(k1):
        r = scipy_solve(variational, (0.0, 1e3), np.r_[1.0, 0.0, 0.0, np.zeros(6)], method="Radau", rtol=1e-12,
                        atol=1e-16, args=(a, 3e7, 1e4))
        ref = r.y[3:, -1].reshape(2, 3).T  # (d, P)
        scale = np.abs(ref).max(axis=0)
        err = np.abs(s.dy_dargs[i] - ref) / scale
        assert err.max() < (1e-4 if method == "Rosenbrock23" else 1e-5), (i, err)


def test_rodas5p_sensitivity_of_decay_against_the_closed_form():
    k = np.array([0.5, 1.0, 2.0])
    s = ode.solve_ivp(decay, (0.0, 3.0), [1.0], args=(k,), method="Rodas5P", rtol=1e-9, atol=1e-12,
                      sensitivity=True, t_eval=[1.0, 2.0])
    np.testing.assert_allclose(s.dy_dargs[:, 0, 0], -3.0 * np.exp(-3.0 * k), rtol=1e-7)
    np.testing.assert_allclose(s.dy_dy0[:, 0, 0], np.exp(-3.0 * k), rtol=1e-7)
    np.testing.assert_allclose(s.dys_dargs[:, 0, 0, :], -np.array([1.0, 2.0]) * np.exp(-np.outer(k, [1.0, 2.0])),
                               rtol=1e-7)


def test_sensitivities_of_newton_methods_and_auto_are_refused_naming_why():
    for method in ("Kvaerno5", "Radau"):
        with pytest.raises(eagle.EagleValueError, match="Newton"):
            ode.solve_ivp(decay, (0.0, 1.0), [1.0], args=(1.0,), method=method, sensitivity=True)
    with pytest.raises(eagle.EagleValueError, match="auto"):
        ode.solve_ivp(decay, (0.0, 1.0), [1.0], args=(1.0,), method="auto", sensitivity=True)
    with pytest.raises(eagle.EagleValueError, match="jac="):
        ode.solve_ivp(decay, (0.0, 1.0), [1.0], args=(1.0,), method="Rodas5P", sensitivity=True,
                      jac=lambda t, y, k: [[-k]])
    with pytest.raises(eagle.EagleValueError, match="implicit"):
        ode.solve_ivp(decay, (0.0, 1.0), [1.0], args=(1.0,), method="Rodas5P", adjoint=True)
