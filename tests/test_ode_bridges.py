"""eagle.ode.jax and eagle.ode.torch: their gradients equal sol.vjp's (the discrete adjoint). Each
framework is optional: its tests skip, naming why, where it is not installed."""
import importlib.util

import numpy as np
import pytest

import eagle.ode as ode

RHO = np.linspace(0.0, 21.0, 5)
TE = np.linspace(0.0, 1.0, 4)
KW = dict(rtol=1e-8, atol=1e-8)


needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="torch is not installed (an optional extra)")
needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax is not installed (an optional extra)")


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
    with _x64(jax), _cpu(jax):
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


def _cpu(jax):
    """JAX's arrays made on its CPU device (where jax has a GPU, the tests of the host paths and of
    the device path's code on the cpu backend still take host arrays)."""
    return jax.default_device(jax.devices("cpu")[0])


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


# -- where the tensors cross: no copy where the bridges' docstrings say so ------------------------

Y0 = np.stack([np.linspace(0.5, 1.5, RHO.size), np.linspace(0.0, 0.2, RHO.size), np.zeros(RHO.size)], axis=1)


def per_sample_reference(t_eval=None, **kw):
    """The solution and sol.vjp of L = sum |y|^2 (+ sum ys) for per-sample y0 and rho."""
    ad = ode.solve_ivp(lorenz, (0.0, 1.0), Y0, args=(RHO,), adjoint=True, t_eval=t_eval, **KW, **kw)
    return ad, ad.vjp(2 * ad.y, None if t_eval is None else np.ones(ad.ys.shape))


class _Seen:
    """Records what the bridge hands eagle's recorded solve (AdjointSolver.solve) and the
    gradients sol.vjp returns."""

    def __init__(self, monkeypatch):
        from eagle.ode import _adjoint
        self.solves, self.grads = [], []
        solve, vjp = _adjoint.AdjointSolver.solve, _adjoint.AdjointSolution.vjp

        def seen_solve(s, y0, args=()):
            self.solves.append((y0, tuple(args)))
            return solve(s, y0, args)

        def seen_vjp(s, *a, **kw):
            g = vjp(s, *a, **kw)
            self.grads.append(g)
            return g
        monkeypatch.setattr(_adjoint.AdjointSolver, "solve", seen_solve)
        monkeypatch.setattr(_adjoint.AdjointSolution, "vjp", seen_vjp)


def _address(x):
    from eagle.extend import address_of
    return address_of(x).ptr


def _torch_no_host_reads(monkeypatch, torch):
    """Any Tensor.cpu / .numpy / np.asarray(tensor) from here on fails the test."""
    def boom(*a, **k):
        raise AssertionError("a tensor was read to the host")
    for name in ("cpu", "numpy", "__array__", "tolist", "item"):
        monkeypatch.setattr(torch.Tensor, name, boom)


@needs_torch
def test_torch_host_tensors_reach_the_solve_as_views_of_their_memory(monkeypatch):
    import torch
    import eagle.ode.torch as et
    seen = _Seen(monkeypatch)
    y0 = torch.tensor(Y0, requires_grad=True)
    rho = torch.tensor(RHO, requires_grad=True)
    y = et.solve(lorenz, (0.0, 1.0), y0, args=(rho,), **KW)
    (y ** 2).sum().backward()
    (hy0, (hrho,)), = seen.solves
    assert isinstance(hy0, np.ndarray) and hy0.__array_interface__["data"][0] == y0.data_ptr()  # no copy
    assert hrho.__array_interface__["data"][0] == rho.data_ptr()
    ad, g = per_sample_reference()
    np.testing.assert_array_equal(y.detach().numpy(), ad.y)
    np.testing.assert_array_equal(y0.grad.numpy(), g.y0)
    np.testing.assert_array_equal(rho.grad.numpy(), g.args[:, 0])


def _force_device_path(monkeypatch, module):
    """Send host tensors down the device path's code (DeviceInput in, eagle arrays out through
    DLPack) on the cpu backend: all of it but the run's device-to-device copies, which a GPU runs."""
    monkeypatch.setattr(module, "_on_device", lambda bridge, y0, args: "cpu")


@needs_torch
def test_torch_device_path_hands_tensors_and_gradients_over_without_copies(monkeypatch):
    import torch
    import eagle.ode.torch as et
    _force_device_path(monkeypatch, et)
    seen = _Seen(monkeypatch)
    base = torch.tensor(Y0, requires_grad=True)
    rho = torch.tensor(RHO, requires_grad=True)
    y0 = base * 1.0  # not a leaf: its hook sees the very gradient tensor the bridge returns
    hooked = []
    y0.register_hook(hooked.append)
    _torch_no_host_reads(monkeypatch, torch)
    y, ys = et.solve(lorenz, (0.0, 1.0), y0, args=(rho,), t_eval=TE, **KW)
    ((y ** 2).sum() + ys.sum()).backward()
    monkeypatch.undo()
    (dy0, (drho,)), = seen.solves
    assert dy0.array.data_ptr() == y0.data_ptr() and _address(dy0) == y0.data_ptr()  # the tensor itself
    assert drho.array.data_ptr() == rho.data_ptr() and _address(drho) == rho.data_ptr()
    g_eagle, = seen.grads
    assert hooked[0].data_ptr() == g_eagle.y0.address  # eagle's gradient array, taken without a copy
    ad, g = per_sample_reference(t_eval=TE)
    np.testing.assert_array_equal(y.detach().numpy(), ad.y)
    np.testing.assert_array_equal(ys.detach().numpy(), ad.ys)
    np.testing.assert_array_equal(base.grad.numpy(), g.y0)
    np.testing.assert_array_equal(rho.grad.numpy(), g.args[:, 0])


@needs_torch
def test_torch_device_path_broadcasts_shared_inputs_and_sums_their_gradients(monkeypatch):
    import torch
    import eagle.ode.torch as et
    _force_device_path(monkeypatch, et)
    y0 = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64, requires_grad=True)
    rho = torch.tensor(RHO, requires_grad=True)
    sigma = torch.tensor(10.0, dtype=torch.float64, requires_grad=True)  # 0-d: one value for every sample

    def lorenz_s(t, y, rho, sigma):
        return [sigma * (y[1] - y[0]), y[0] * (rho - y[2]) - y[1], y[0] * y[1] - 8.0 / 3.0 * y[2]]
    y = et.solve(lorenz_s, (0.0, 1.0), y0, args=(rho, sigma), **KW)
    (y ** 2).sum().backward()
    ad = ode.solve_ivp(lorenz_s, (0.0, 1.0), [1.0, 0.0, 0.0], args=(RHO, 10.0), adjoint=True, **KW)
    g = ad.vjp(2 * ad.y)
    np.testing.assert_array_equal(y.detach().numpy(), ad.y)
    np.testing.assert_array_equal(rho.grad.numpy(), g.args[:, 0])
    assert y0.grad.shape == (3,) and sigma.grad.shape == ()
    np.testing.assert_allclose(y0.grad.numpy(), g.y0.sum(axis=0), rtol=1e-14)
    np.testing.assert_allclose(sigma.grad.numpy(), g.args[:, 1].sum(), rtol=1e-14)


def _no_callback(monkeypatch, jax):
    def boom(*a, **k):
        raise AssertionError("an eager call went through jax.pure_callback")
    monkeypatch.setattr(jax, "pure_callback", boom)


@needs_jax
def test_jax_eager_cpu_arrays_reach_the_solve_as_views_of_their_buffers(monkeypatch):
    import jax
    import jax.numpy as jnp
    import eagle.ode.jax as ej
    with _x64(jax), _cpu(jax):
        y0, rho = jnp.asarray(Y0), jnp.asarray(RHO)
        seen = _Seen(monkeypatch)
        _no_callback(monkeypatch, jax)
        gy0, grho = jax.grad(lambda y0, rho: (ej.solve(lorenz, (0.0, 1.0), y0, args=(rho,), **KW) ** 2).sum(),
                             argnums=(0, 1))(y0, rho)
        (hy0, (hrho,)), = seen.solves
        assert hy0.__array_interface__["data"][0] == y0.unsafe_buffer_pointer()  # no copy
        assert hrho.__array_interface__["data"][0] == rho.unsafe_buffer_pointer()
        _, g = per_sample_reference()
        np.testing.assert_array_equal(np.asarray(gy0), g.y0)
        np.testing.assert_array_equal(np.asarray(grho), g.args[:, 0])


@needs_jax
def test_jax_device_path_hands_arrays_over_through_dlpack(monkeypatch):
    import jax
    import jax.numpy as jnp
    import eagle.ode.jax as ej
    with _x64(jax), _cpu(jax):
        _force_device_path(monkeypatch, ej)
        seen = _Seen(monkeypatch)
        _no_callback(monkeypatch, jax)
        y0, rho = jnp.asarray(Y0), jnp.asarray(RHO)

        def loss(y0, rho):
            y, ys = ej.solve(lorenz, (0.0, 1.0), y0, args=(rho,), t_eval=TE, **KW)
            return (y ** 2).sum() + ys.sum()
        (val, (gy0, grho)) = jax.value_and_grad(loss, argnums=(0, 1))(y0, rho)
        (dy0, (drho,)), = seen.solves
        assert _address(dy0) == y0.unsafe_buffer_pointer()  # the array itself
        assert _address(drho) == rho.unsafe_buffer_pointer()
        ad, g = per_sample_reference(t_eval=TE)
        np.testing.assert_allclose(float(val), (ad.y ** 2).sum() + ad.ys.sum(), rtol=1e-14)
        np.testing.assert_array_equal(np.asarray(gy0), g.y0)
        np.testing.assert_array_equal(np.asarray(grho), g.args[:, 0])
        # a shared y0 (d,) is broadcast on the device and its gradient summed there
        gy0 = jax.grad(lambda y0: (ej.solve(lorenz, (0.0, 1.0), y0, args=(rho,), **KW) ** 2).sum())(
            jnp.asarray([1.0, 0.0, 0.0]))
        np.testing.assert_allclose(np.asarray(gy0), reference(False).y0.sum(axis=0), rtol=1e-14)


# -- on a GPU (the `cuda` fixture: skipped naming why where there is none) -------------------------

def _torch_cuda(torch):
    if not torch.cuda.is_available():
        pytest.skip("this torch has no CUDA device")


def _ordered(monkeypatch):
    """What eagle ordered its stream after (eagle/ode/_run.py's wait_for_producer: the run's
    device inputs, sol.vjp's device cotangents), recorded; the ordering itself still happens."""
    from eagle.ode import _run
    seen, real = [], _run.wait_for_producer

    def wait_for_producer(x, stream):
        seen.append(x)
        return real(x, stream)
    monkeypatch.setattr(_run, "wait_for_producer", wait_for_producer)
    return seen


@pytest.mark.gpu
@needs_torch
def test_torch_cuda_tensors_stay_on_the_device_and_give_cpus_bits(cuda, monkeypatch):
    """CUDA tensors in, CUDA tensors out, no host read of y0, args, cotangents or results, and in
    exact mode the same bits as the same solve of host tensors."""
    import torch
    import eagle.ode.torch as et
    from eagle.ode._bridge import DeviceInput
    _torch_cuda(torch)
    kw = dict(KW, exact=True)

    def run(device, hooked):
        base = torch.tensor(Y0, device=device, requires_grad=True)
        rho = torch.tensor(RHO, device=device, requires_grad=True)
        y0 = base * 1.0  # not a leaf: its hook sees the gradient tensor the bridge returns
        y0.register_hook(hooked.append)
        return base, y0, rho

    host = run("cpu", [])
    y_c, ys_c = et.solve(lorenz, (0.0, 1.0), host[1], args=(host[2],), t_eval=TE, **kw)
    ((y_c ** 2).sum() + ys_c.sum()).backward()

    hooked = []
    base, y0, rho = run("cuda", hooked)
    torch.cuda.synchronize()
    seen, ordered = _Seen(monkeypatch), _ordered(monkeypatch)
    _torch_no_host_reads(monkeypatch, torch)
    y, ys = et.solve(lorenz, (0.0, 1.0), y0, args=(rho,), t_eval=TE, **kw)
    ((y ** 2).sum() + ys.sum()).backward()
    monkeypatch.undo()
    for t in (y, ys, base.grad, rho.grad):
        assert t.device == y0.device
    (dy0, (drho,)), = seen.solves
    assert isinstance(dy0, DeviceInput) and dy0.array.data_ptr() == y0.data_ptr() == _address(dy0)
    assert isinstance(drho, DeviceInput) and drho.array.data_ptr() == rho.data_ptr() == _address(drho)
    assert any(x is dy0 for x in ordered) and any(x is drho for x in ordered)  # the run waited for torch
    cot = [x for x in ordered if x is not dy0 and x is not drho]
    assert sorted(tuple(x.shape) for x in cot) == [(RHO.size, 3), (RHO.size, 3, TE.size)]  # vjp's, on the device
    assert all(isinstance(x, DeviceInput) and x.array.is_cuda for x in cot)
    g_eagle, = seen.grads
    assert hooked[0].data_ptr() == g_eagle.y0.address  # eagle's gradient array, taken without a copy
    np.testing.assert_array_equal(y.cpu().numpy(), y_c.detach().numpy())
    np.testing.assert_array_equal(ys.cpu().numpy(), ys_c.detach().numpy())
    np.testing.assert_array_equal(base.grad.cpu().numpy(), host[0].grad.numpy())
    np.testing.assert_array_equal(rho.grad.cpu().numpy(), host[2].grad.numpy())
    ad, g = per_sample_reference(t_eval=TE, exact=True)  # and those are sol.vjp's
    np.testing.assert_array_equal(rho.grad.cpu().numpy(), g.args[:, 0])


@pytest.mark.gpu
@needs_torch
def test_torch_cuda_shared_inputs_are_broadcast_on_the_device(cuda, monkeypatch):
    import torch
    import eagle.ode.torch as et
    _torch_cuda(torch)
    y0 = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64, device="cuda", requires_grad=True)
    rho = torch.tensor(RHO, device="cuda", requires_grad=True)
    torch.cuda.synchronize()
    _torch_no_host_reads(monkeypatch, torch)
    y = et.solve(lorenz, (0.0, 1.0), y0, args=(rho,), **KW)
    (y ** 2).sum().backward()
    monkeypatch.undo()
    assert y0.grad.shape == (3,) and y0.grad.is_cuda and rho.grad.is_cuda
    g = reference(False)
    np.testing.assert_allclose(rho.grad.cpu().numpy(), g.args[:, 0], rtol=1e-9)
    np.testing.assert_allclose(y0.grad.cpu().numpy(), g.y0.sum(axis=0), rtol=1e-9)


@pytest.mark.gpu
@needs_torch
def test_torch_cuda_solve_waits_for_the_work_torchs_stream_queued(cuda):
    """y0, rho and the cotangent are written on a torch side stream behind a long sleep: the solve
    and sol.vjp must read the written values, not the nan they held before (their copies run on
    eagle's own stream, which waits for torch's through __dlpack__(stream=...))."""
    import torch
    import eagle.ode.torch as et
    _torch_cuda(torch)
    if not hasattr(torch.cuda, "_sleep"):
        pytest.skip("this torch has no torch.cuda._sleep to hold its stream busy")
    y0_src, rho_src = torch.tensor(Y0, device="cuda"), torch.tensor(RHO, device="cuda")
    warm = et.solve(lorenz, (0.0, 1.0), y0_src.clone().requires_grad_(), args=(rho_src.clone().requires_grad_(),),
                    **KW)
    warm.sum().backward()  # compiled, planes and streams made: the racy part below takes milliseconds
    y0 = torch.full_like(y0_src, float("nan")).requires_grad_()
    rho = torch.full_like(rho_src, float("nan")).requires_grad_()
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(1_000_000_000)  # about half a second of this stream's time
        with torch.no_grad():
            y0.copy_(y0_src)
            rho.copy_(rho_src)
        y = et.solve(lorenz, (0.0, 1.0), y0, args=(rho,), **KW)
        cy = torch.full_like(y, float("nan"))
        torch.cuda._sleep(1_000_000_000)
        cy.copy_(2 * y.detach())
        torch.autograd.backward(y, grad_tensors=cy)
    torch.cuda.synchronize()
    ad, g = per_sample_reference()
    np.testing.assert_allclose(y.detach().cpu().numpy(), ad.y, rtol=1e-9)
    np.testing.assert_allclose(rho.grad.cpu().numpy(), g.args[:, 0], rtol=1e-9)
    np.testing.assert_allclose(y0.grad.cpu().numpy(), g.y0, rtol=1e-9)


@pytest.mark.gpu
@needs_jax
def test_jax_eager_gpu_arrays_stay_on_the_device_and_jit_still_works(cuda, monkeypatch):
    """Eager GPU arrays: DLPack both ways (no pure_callback, no host path), results and gradients
    on the GPU, cpu's bits in exact mode; under jit the host callback gives the same gradients."""
    import jax
    import eagle.ode.jax as ej
    from eagle.ode import _bridge
    from eagle.ode._bridge import DeviceInput
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus or gpus[0].id != 0:
        pytest.skip("this jax has no GPU device 0")
    kw = dict(KW, exact=True)
    with _x64(jax):
        y0, rho = jax.device_put(Y0, gpus[0]), jax.device_put(RHO, gpus[0])

        def loss(y0, rho):
            y, ys = ej.solve(lorenz, (0.0, 1.0), y0, args=(rho,), t_eval=TE, **kw)
            return (y ** 2).sum() + ys.sum()
        seen = _Seen(monkeypatch)
        _no_callback(monkeypatch, jax)

        def host_path(*a, **k):
            raise AssertionError("GPU arrays took the host path")
        monkeypatch.setattr(_bridge.Bridge, "forward", host_path)
        monkeypatch.setattr(_bridge.Bridge, "backward", host_path)
        y, ys = ej.solve(lorenz, (0.0, 1.0), y0, args=(rho,), t_eval=TE, **kw)
        val, (gy0, grho) = jax.value_and_grad(loss, argnums=(0, 1))(y0, rho)
        monkeypatch.undo()
        for a in (y, ys, gy0, grho):
            assert a.devices() == {gpus[0]}
        dy0, (drho,) = seen.solves[-1]
        assert isinstance(dy0, DeviceInput) and _address(dy0) == y0.unsafe_buffer_pointer()  # the array itself
        assert isinstance(drho, DeviceInput) and _address(drho) == rho.unsafe_buffer_pointer()
        ad, g = per_sample_reference(t_eval=TE, exact=True)
        np.testing.assert_array_equal(np.asarray(y), ad.y)
        np.testing.assert_array_equal(np.asarray(ys), ad.ys)
        np.testing.assert_array_equal(np.asarray(gy0), g.y0)
        np.testing.assert_array_equal(np.asarray(grho), g.args[:, 0])
        np.testing.assert_allclose(float(val), (ad.y ** 2).sum() + ad.ys.sum(), rtol=1e-14)
        jy0, jrho = jax.jit(jax.grad(loss, argnums=(0, 1)))(y0, rho)  # through the host callback
        np.testing.assert_array_equal(np.asarray(jy0), g.y0)
        np.testing.assert_array_equal(np.asarray(jrho), g.args[:, 0])


def test_the_run_waits_for_a_device_inputs_producer_through_dlpack():
    """eagle/ode/_run.py's wait_for_producer hands the producer eagle's raw stream (DLPack's rule:
    the producer makes that stream wait for its own work); a producer that refuses the argument,
    or an eagle array, is no error."""
    import eagle
    from eagle.ode._run import wait_for_producer
    asked = []

    class Producer:
        def __dlpack__(self, *, stream=None):
            asked.append(stream)

    class Refuses:
        def __dlpack__(self):
            asked.append("called")

    class Stream:
        handle = 0x1234
    wait_for_producer(Producer(), Stream())
    wait_for_producer(Refuses(), Stream())
    wait_for_producer(eagle.empty(4, backend="cpu"), Stream())
    assert asked == [0x1234]
