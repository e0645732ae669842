"""PyTorch bridge (optional: torch is imported when this module is, never by eagle itself).

    import eagle.ode.torch as et
    y = et.solve(fun, (0.0, 1.0), y0, args=(rho,))      # y0, rho: torch tensors
    (y ** 2).sum().backward()                           # rho.grad, y0.grad by eagle's discrete adjoint

:func:`solve` is a ``torch.autograd.Function``: the forward pass is one recorded ensemble solve
(``solve_ivp(..., adjoint=True)``), the backward pass its ``sol.vjp`` (eagle/ode/_adjoint.py), so
the gradients are those of the discrete solution. Returns y(t_end) (N, d), and with ``t_eval``
the pair (y, ys) with ys (N, d, T). The solve's dtype is y0's (float32 stays float32, anything
else is solved in float64).

Where the tensors cross, and what is copied:

- **CUDA tensors** (y0 on ``cuda:0``, the device eagle's cuda kind solves on, and no ``backend=``
  naming another kind): nothing goes through the host. y0 and the tensor arguments are handed
  to eagle as they are, through DLPack (eagle.ode's run, eagle/ode/_run.py, copies them device
  to device into its input plane, as it does every input; its stream first waits, through
  ``__dlpack__(stream=...)``, for the work torch's current stream had queued). A y0 of shape
  (d,) or a 0-d argument shared by every sample is first broadcast to (N, d) / (N,) on the device,
  and a tensor of another dtype or layout is converted there (``.to(dtype).contiguous()``). The
  results are read from eagle's planes through ``torch.from_dlpack`` (no copy) and gathered into
  fresh tensors by torch on its current stream (y is a transpose of the plane, and the run
  reuses its planes at the next solve), which is then synchronized. In the backward pass the
  cotangents are handed over the same way and ``sol.vjp(..., to_host=False)`` returns the
  gradients as eagle device arrays, which torch takes through DLPack without a copy (then sums
  a shared input's gradient over the samples, on the device). Small host reads remain: the
  solve reads each sample's accepted-step count (to size the tape) and, on a solve that runs
  longer than the progress display's delay, its progress counters; never y0, args or results.
  An argument that is a host tensor (or a number) is copied to the device by eagle (h2d, as any
  host input), and its gradient is copied back to the host.
- **Host tensors**: y0 and the arguments cross as numpy views of their own memory (no staging
  copy where they have the solve's dtype; the run copies them into its input plane, as it does
  every input). The results are copies made by ``sol.y`` / ``sol.ys`` (read from the planes)
  and wrapped by ``torch.from_numpy`` without a further copy; the gradients likewise.
- **Anything else** (a GPU tensor on another device index, a CUDA tensor with ``backend=`` of
  another kind, a tensor of another device type): its values are copied to the host
  (``.cpu()``) and handed to the solve as host arrays (it runs on y0's kind unless ``backend=``
  says otherwise), the results and gradients copied back to the tensors' devices.
"""
import numpy as np
import torch

from ..errors import EagleValueError
from ._bridge import Bridge, DeviceInput, n_samples, planes, reduce_to

_BRIDGES = {}
_EAGLE_DEVICE = 0  # eagle.ode's planes live on device 0 of the solve's kind


def _host(x):
    if isinstance(x, torch.Tensor):
        x = x.detach()
        return x.cpu().numpy()  # a host tensor's own memory (no copy); a device tensor's copy
    return np.asarray(x)


def _kind(x):
    """eagle's kind for where tensor ``x`` lives (None: host memory, the solve's default), through
    the tensor's DLPack device."""
    import eagle
    from ._run import host_kind
    kind = eagle.kind_of_array(x.detach())
    return None if kind == host_kind() else kind


def _on_device(bridge, y0, args):
    """The solve's device kind when the tensors are taken where they are (see the module
    docstring); None for the host path. A tensor argument on a device other than y0's is refused."""
    if not (isinstance(y0, torch.Tensor) and y0.is_cuda and y0.device.index == _EAGLE_DEVICE):
        return None
    kind = _kind(y0)
    if kind is None or bridge.solve_kind(kind) != kind:
        return None
    for k, a in enumerate(args):
        if isinstance(a, torch.Tensor) and not a.is_cpu and a.device != y0.device:
            raise EagleValueError(f"eagle.ode.torch: args[{k}] lives on {a.device}, y0 on {y0.device}: put the "
                                  f"tensors on one device (or on the host)")
    return kind


def _enter(t):
    """Torch exports a CUDA tensor through DLPack only while its device is the current one."""
    device = t.device
    return (lambda: torch.cuda.device(device)) if t.is_cuda else None


def _device_inputs(bridge, y0, args):
    """(y0, args, numpy dtype) as the run takes them on the device: DeviceInputs, per sample."""
    tdt = torch.float32 if y0.dtype == torch.float32 else torch.float64
    dt = np.float32 if tdt == torch.float32 else np.float64
    n = n_samples(y0, args, bridge.t_span)
    enter = _enter(y0)
    y = y0.detach().to(tdt)
    if y.dim() == 1:
        y = y.expand(n, y.shape[0])  # one y0 for every sample: broadcast on the device
    ins = []
    for a in args:
        if isinstance(a, torch.Tensor) and a.device == y0.device:
            a = a.detach().to(tdt)
            if a.dim() == 0:
                a = a.expand(n)
            ins.append(DeviceInput(a.contiguous(), dt, enter))
        else:
            ins.append(np.asarray(_host(a), dt))  # a host tensor's own memory (no copy) or a number
    return DeviceInput(y.contiguous(), dt, enter), ins, dt


def _sync(t):
    if t.is_cuda:
        torch.cuda.current_stream(t.device).synchronize()


class _Solve(torch.autograd.Function):
    @staticmethod
    def forward(ctx, bridge, y0, *args):
        ctx.bridge = bridge
        ctx.meta = [(t.device, t.dtype, tuple(t.shape)) if isinstance(t, torch.Tensor) else None
                    for t in (y0, *args)]
        ctx.kind = kind = _on_device(bridge, y0, args)
        if kind is not None:
            dy0, dargs, dt = _device_inputs(bridge, y0, args)
            sol = bridge.solve(dy0, dargs, dt, kind)
            ctx.sol, ctx.inputs = sol, (dy0, dargs, dt)
            W, row, d, YS = planes(sol)
            out = torch.from_dlpack(W)[row:row + d].t().contiguous()  # the plane's rows, gathered by torch
            outs = [out] if YS is None else [out, torch.from_dlpack(YS).clone()]
            _sync(out)  # the gathers have read the planes before the run's next solve writes them
            return outs[0] if len(outs) == 1 else tuple(outs)
        host_y0, host_args = _host(y0), [_host(a) for a in args]
        kind = _kind(y0)
        sol, y, ys = bridge.forward(host_y0, host_args, kind)
        ctx.sol, ctx.inputs, ctx.host_kind = sol, (host_y0, host_args), kind
        out = torch.from_numpy(np.ascontiguousarray(y)).to(y0.device)
        if ys is None:
            return out
        return out, torch.from_numpy(np.ascontiguousarray(ys)).to(y0.device)

    @staticmethod
    def backward(ctx, gy, gys=None):
        if ctx.kind is not None:
            return (None, *_device_backward(ctx, gy, gys))
        host_y0, host_args = ctx.inputs
        gy0, gargs = ctx.bridge.backward(ctx.sol, host_y0, host_args, _host(gy),
                                         None if gys is None else _host(gys), ctx.host_kind)
        dev, dt, _ = ctx.meta[0]
        grads = [torch.from_numpy(np.ascontiguousarray(gy0)).to(dev, dt)]
        for g, meta in zip(gargs, ctx.meta[1:]):
            grads.append(None if meta is None else torch.from_numpy(np.ascontiguousarray(g)).to(meta[0], meta[1]))
        return (None, *grads)


def _device_backward(ctx, gy, gys):
    """The gradients of the device path (see the module docstring): cotangents and gradients stay
    on the device."""
    dy0, dargs, dt = ctx.inputs
    sol = ctx.sol = ctx.bridge.current(ctx.sol, dy0, dargs, dt, ctx.kind)
    tdt = torch.float32 if dt == np.float32 else torch.float64
    enter = _enter(gy)
    cy = DeviceInput(gy.detach().to(tdt).contiguous(), dt, enter)
    cys = None if gys is None else DeviceInput(torch.nan_to_num(gys.detach().to(tdt)).contiguous(), dt, enter)
    g = sol.vjp(cy, cys, to_host=False)  # eagle's own arrays, fresh: torch takes them without a copy
    gy0, ga = torch.from_dlpack(g.y0), torch.from_dlpack(g.args)
    dev, tdt0, shape = ctx.meta[0]
    grads = [reduce_to(gy0, shape).to(dev, tdt0)]
    for k, meta in enumerate(ctx.meta[1:]):
        grads.append(None if meta is None else reduce_to(ga[:, k], meta[2]).to(meta[0], meta[1]))
    return grads


def solve(fun, t_span, y0, args=(), *, t_eval=None, **kwargs):
    """``solve_ivp(fun, t_span, y0, args=args, t_eval=t_eval, **kwargs)``, differentiable in ``y0``
    and ``args`` (tensors; numbers are taken as constants). See the module docstring."""
    if not isinstance(args, (tuple, list)):
        args = (args,)
    key = (fun, tuple(np.ravel(t_span)), None if t_eval is None else tuple(np.asarray(t_eval, float)),
           tuple(sorted((k, repr(v)) for k, v in kwargs.items())))
    bridge = _BRIDGES.get(key)
    if bridge is None:
        bridge = _BRIDGES[key] = Bridge(fun, t_span, t_eval, kwargs)
    if not isinstance(y0, torch.Tensor):
        y0 = torch.as_tensor(np.asarray(y0, np.float64))
    return _Solve.apply(bridge, y0, *args)
