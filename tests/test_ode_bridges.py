"""eagle.ode.jax and eagle.ode.torch: their gradients equal sol.vjp's (the discrete adjoint). Each
framework is optional: its tests skip, naming why, where it is not installed."""
import importlib.util

import numpy as np
import pytest

import eagle.ode as ode

RHO = np.linspace(0.0, 21.0, 5)
TE = np.linspace(0.0, 1.0, 4)
KW = dict(rtol=1e-8, atol=1e-8)


def lorenz(t, y, rho):
    return [10.0 * (y[1] - y[0]), y[0] * (rho - y[2]) - y[1], y[0] * y[1] - 8.0 / 3.0 * y[2]]


def reference(cys_ones):
    ad = ode.solve_ivp(lorenz, (0.0, 1.0), [1.0, 0.0, 0.0], args=(RHO,), adjoint=True,
                       t_eval=TE if cys_ones else None, **KW)
    cy = 2 * ad.y if not cys_ones else np.ones_like(ad.y)
    return ad.vjp(cy, np.ones(ad.ys.shape) if cys_ones else None)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed (an optional extra)")
def test_torch_gradients_equal_vjp():
    import torch
    import eagle.ode.torch as et
    rho = torch.tensor(RHO, requires_grad=True)
    y0 = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64, requires_grad=True)
    y = et.solve(lorenz, (0.0, 1.0), y0, args=(rho,), **KW)
    (y ** 2).sum().backward()
    g = reference(False)
    np.testing.assert_array_equal(rho.grad.numpy(), g.args[:, 0])
    np.testing.assert_array_equal(y0.grad.numpy(), g.y0.sum(axis=0))
    rho.grad = None
    y, ys = et.solve(lorenz, (0.0, 1.0), y0, args=(rho,), t_eval=TE, **KW)
    (y.sum() + ys.sum()).backward()
    np.testing.assert_allclose(rho.grad.numpy(), reference(True).args[:, 0], rtol=1e-13)


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax is not installed (an optional extra)")
def test_jax_gradients_equal_vjp():
    import jax
    import jax.numpy as jnp
    import eagle.ode.jax as ej
    with _x64(jax):
        rho, y0 = jnp.asarray(RHO), jnp.asarray([1.0, 0.0, 0.0])

        def loss(y0, rho):
            return (ej.solve(lorenz, (0.0, 1.0), y0, args=(rho,), **KW) ** 2).sum()
        g = reference(False)
        for fn in (jax.grad(loss, argnums=(0, 1)), jax.jit(jax.grad(loss, argnums=(0, 1)))):
            gy0, grho = fn(y0, rho)
            np.testing.assert_array_equal(np.asarray(grho), g.args[:, 0])
            np.testing.assert_allclose(np.asarray(gy0), g.y0.sum(axis=0), rtol=1e-14)

        def loss2(rho):
            y, ys = ej.solve(lorenz, (0.0, 1.0), y0, args=(rho,), t_eval=TE, **KW)
            return y.sum() + ys.sum()
        np.testing.assert_allclose(np.asarray(jax.grad(loss2)(rho)), reference(True).args[:, 0], rtol=1e-13)


class _x64:
    def __init__(self, jax):
        self.jax = jax

    def __enter__(self):
        self.old = self.jax.config.jax_enable_x64
        self.jax.config.update("jax_enable_x64", True)

    def __exit__(self, *exc):
        self.jax.config.update("jax_enable_x64", self.old)


@pytest.mark.skipif(importlib.util.find_spec("diffrax") is None, reason="diffrax is not installed (a peer, optional)")
def test_vjp_equals_diffrax_gradient_at_the_same_fixed_steps():
    """The same discretisation (Tsit5 at dt = 0.01, 100 steps): eagle's discrete adjoint and
    jax.grad through diffrax agree to rounding."""
    import jax
    import jax.numpy as jnp
    import diffrax
    with _x64(jax):
        term = diffrax.ODETerm(lambda t, y, rho: jnp.stack(
            [10.0 * (y[1] - y[0]), y[0] * (rho - y[2]) - y[1], y[0] * y[1] - 8.0 / 3.0 * y[2]]))

        def one(rho):
            return diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, 0.01, jnp.asarray([1.0, 0.0, 0.0]), args=rho,
                                       stepsize_controller=diffrax.ConstantStepSize(), max_steps=200).ys[0]
        want = np.asarray(jax.grad(lambda r: jnp.sum(jax.vmap(one)(r) ** 2))(jnp.asarray(RHO)))
        ad = ode.solve_ivp(lorenz, (0.0, 1.0), [1.0, 0.0, 0.0], args=(RHO,), method="Tsit5", dt=0.01, adaptive=False,
                           adjoint=True)
        assert ad.n_accepted.tolist() == [100] * RHO.size
        got = ad.vjp(2 * ad.y).args[:, 0]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * np.abs(want).max())


@pytest.mark.gpu
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed (an optional extra)")
def test_torch_cuda_tensors_solve_on_the_gpu(cuda):
    import torch
    import eagle.ode.torch as et
    if not torch.cuda.is_available():
        pytest.skip("this torch has no CUDA device")
    rho = torch.tensor(RHO, device="cuda", requires_grad=True)
    y0 = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64, device="cuda")
    y = et.solve(lorenz, (0.0, 1.0), y0, args=(rho,), **KW)
    assert y.device.type == "cuda"
    (y ** 2).sum().backward()
    assert rho.grad.device.type == "cuda"
    np.testing.assert_allclose(rho.grad.cpu().numpy(), reference(False).args[:, 0], rtol=1e-9)
