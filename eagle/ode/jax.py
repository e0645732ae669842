"""JAX bridge (optional: jax is imported when this module is, never by eagle itself).

    import eagle.ode.jax as ej
    loss = lambda rho: (ej.solve(fun, (0.0, 1.0), y0, args=(rho,)) ** 2).sum()
    g = jax.grad(loss)(rho)                  # by eagle's discrete adjoint; jax.jit(loss) works too

:func:`solve` is a ``jax.custom_vjp`` function of (y0, args): the forward pass is one recorded
ensemble solve (``solve_ivp(..., adjoint=True)``) run through ``jax.pure_callback``, the backward
pass its ``sol.vjp`` (eagle/ode/_adjoint.py), so the gradients are those of the discrete solution
and equal ``sol.vjp``'s. The solution of the forward pass is kept for the backward pass under a
token (the last few; an older one is solved again). Arrays cross to eagle through numpy on the
host. Returns y(t_end) (N, d), and with ``t_eval`` the pair (y, ys) with ys (N, d, T). The
solve's dtype is y0's (float32 stays float32; float64 needs ``jax_enable_x64``).
"""
import itertools
import threading
from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np

from ._bridge import Bridge

_BRIDGES = {}
_KEEP = 8  # forward solutions kept for their backward pass
_kept = OrderedDict()
_lock = threading.Lock()
_tokens = itertools.count(1)


def _keep(sol):
    with _lock:
        token = next(_tokens)
        _kept[token] = sol
        while len(_kept) > _KEEP:
            _kept.popitem(last=False)
    return token


def _n_samples(y0, args, t_span):
    ns = [np.shape(y0)[0]] if np.ndim(y0) == 2 else []
    ns += [np.shape(a)[0] for a in args if np.ndim(a) == 1]
    if np.ndim(t_span[1]):
        ns.append(np.shape(t_span[1])[0])
    return ns[0] if ns else 1


def _make(bridge):
    def shapes(y0, args):
        n, d = _n_samples(y0, args, bridge.t_span), np.shape(y0)[-1]
        dt = y0.dtype
        out = [jax.ShapeDtypeStruct((n, d), dt)]
        if bridge.t_eval is not None:
            out.append(jax.ShapeDtypeStruct((n, d, len(bridge.t_eval)), dt))
        return out

    def host_forward(y0, *args):
        sol, y, ys = bridge.forward(np.asarray(y0), [np.asarray(a) for a in args])
        outs = [y.astype(y0.dtype)] + ([] if ys is None else [ys.astype(y0.dtype)])
        return sol, outs

    def primal(y0, args):
        res = jax.pure_callback(lambda y, *a: host_forward(y, *a)[1], shapes(y0, args), y0, *args)
        return res[0] if len(res) == 1 else tuple(res)

    @jax.custom_vjp
    def run(y0, args):
        return primal(y0, args)

    def fwd(y0, args):
        def cb(y, *a):
            sol, outs = host_forward(y, *a)
            return [np.asarray(_keep(sol), np.int64)] + outs
        res = jax.pure_callback(cb, [jax.ShapeDtypeStruct((), jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)]
                                + shapes(y0, args), y0, *args)
        token, outs = res[0], res[1:]
        return (outs[0] if len(outs) == 1 else tuple(outs)), (token, y0, args)

    def bwd(residual, ct):
        token, y0, args = residual
        cy, cys = (ct, None) if bridge.t_eval is None else ct

        def cb(tok, y, cy_, *rest):
            with _lock:
                sol = _kept.pop(int(tok), None)
            a, cys_ = (rest[:-1], rest[-1]) if bridge.t_eval is not None else (rest, None)
            gy0, gargs = bridge.backward(sol, np.asarray(y), [np.asarray(x) for x in a], np.asarray(cy_),
                                         None if cys_ is None else np.asarray(cys_))
            return [gy0.astype(y.dtype)] + [np.asarray(g, np.asarray(x).dtype) for g, x in zip(gargs, a)]

        out_shapes = [jax.ShapeDtypeStruct(y0.shape, y0.dtype)] + [jax.ShapeDtypeStruct(jnp.shape(a), jnp.result_type(a))
                                                                  for a in args]
        extra = () if cys is None else (cys,)
        grads = jax.pure_callback(cb, out_shapes, token, y0, cy, *args, *extra)
        return grads[0], tuple(grads[1:])

    run.defvjp(fwd, bwd)
    return run


def solve(fun, t_span, y0, args=(), *, t_eval=None, **kwargs):
    """``solve_ivp(fun, t_span, y0, args=args, t_eval=t_eval, **kwargs)`` as a differentiable JAX
    function of ``y0`` and ``args`` (arrays or numbers). See the module docstring."""
    if not isinstance(args, (tuple, list)):
        args = (args,)
    key = (fun, tuple(np.ravel(t_span)), None if t_eval is None else tuple(np.asarray(t_eval, float)),
           tuple(sorted((k, repr(v)) for k, v in kwargs.items())))
    entry = _BRIDGES.get(key)
    if entry is None:
        bridge = Bridge(fun, t_span, t_eval, kwargs)
        entry = _BRIDGES[key] = (bridge, _make(bridge))
    y0 = jnp.asarray(y0)
    args = tuple(jnp.asarray(a, y0.dtype) for a in args)
    return entry[1](y0, args)
