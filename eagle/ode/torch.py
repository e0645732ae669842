"""PyTorch bridge (optional: torch is imported when this module is, never by eagle itself).

    import eagle.ode.torch as et
    y = et.solve(fun, (0.0, 1.0), y0, args=(rho,))      # y0, rho: torch tensors
    (y ** 2).sum().backward()                           # rho.grad, y0.grad by eagle's discrete adjoint

:func:`solve` is a ``torch.autograd.Function``: the forward pass is one recorded ensemble solve
(``solve_ivp(..., adjoint=True)``), the backward pass its ``sol.vjp`` (eagle/ode/_adjoint.py), so
the gradients are those of the discrete solution. Host tensors cross to eagle as numpy views of
their own memory (no copy) and results come back the same way (``torch.from_numpy``); a tensor on
a GPU makes the solve run on that GPU's kind (eagle.kind_of_array, through its DLPack device), its
values crossing through the host and the results copied back to its device (a zero-copy device
path, handing eagle the tensors themselves through DLPack, is not there yet). Returns y(t_end) (N, d), and with
``t_eval`` the pair (y, ys) with ys (N, d, T).
"""
import numpy as np
import torch

from ._bridge import Bridge

_BRIDGES = {}


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


class _Solve(torch.autograd.Function):
    @staticmethod
    def forward(ctx, bridge, y0, *args):
        host_y0, host_args = _host(y0), [_host(a) for a in args]
        kind = _kind(y0)
        sol, y, ys = bridge.forward(host_y0, host_args, kind)
        ctx.bridge, ctx.sol, ctx.inputs, ctx.kind = bridge, sol, (host_y0, host_args), kind
        ctx.devices = [y0.device] + [a.device if isinstance(a, torch.Tensor) else None for a in args]
        ctx.dtypes = [y0.dtype] + [a.dtype if isinstance(a, torch.Tensor) else None for a in args]
        out = torch.from_numpy(np.ascontiguousarray(y)).to(y0.device)
        if ys is None:
            return out
        return out, torch.from_numpy(np.ascontiguousarray(ys)).to(y0.device)

    @staticmethod
    def backward(ctx, gy, gys=None):
        host_y0, host_args = ctx.inputs
        gy0, gargs = ctx.bridge.backward(ctx.sol, host_y0, host_args, _host(gy),
                                         None if gys is None else _host(gys), ctx.kind)
        grads = [torch.from_numpy(np.ascontiguousarray(gy0)).to(ctx.devices[0], ctx.dtypes[0])]
        for g, dev, dt in zip(gargs, ctx.devices[1:], ctx.dtypes[1:]):
            grads.append(None if dev is None else torch.from_numpy(np.ascontiguousarray(g)).to(dev, dt))
        return (None, *grads)


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
