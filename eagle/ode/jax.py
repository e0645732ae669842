"""JAX bridge (optional: jax is imported when this module is, never by eagle itself).

    import eagle.ode.jax as ej
    loss = lambda rho: (ej.solve(fun, (0.0, 1.0), y0, args=(rho,)) ** 2).sum()
    g = jax.grad(loss)(rho)                  # by eagle's discrete adjoint; jax.jit(loss) works too

:func:`solve` is a ``jax.custom_vjp`` function of (y0, args): the forward pass is one recorded
ensemble solve (``solve_ivp(..., adjoint=True)``), the backward pass its ``sol.vjp``
(eagle/ode/_adjoint.py), so the gradients are those of the discrete solution and equal
``sol.vjp``'s. The solution of the forward pass is kept for the backward pass under a token (the
last few; an older one is solved again). Returns y(t_end) (N, d), and with ``t_eval`` the pair
(y, ys) with ys (N, d, T). The solve's dtype is y0's (float32 stays float32; float64 needs
``jax_enable_x64``; an integer y0 is solved as the default float).

Where the arrays cross, and what is copied:

- **Under a trace** (``jax.jit``, ``vmap``, any transformation that makes tracers): the forward
  and backward passes run inside ``jax.pure_callback``, which hands the callback host numpy
  arrays and takes host arrays back. Every input (y0, args, the cotangents) is therefore copied
  from its device to the host by JAX, solved on the host kind, and the results and gradients
  are copied back to the device by JAX. Nothing on this path is zero-copy; on a CPU the
  callback's arrays are JAX's to copy or not.
- **Eager, on a GPU** (concrete ``jax.Array`` s on device 0 of a kind eagle solves on, e.g.
  ``cuda:0``, float32 or float64, and no ``backend=`` naming another kind; ``jax.grad`` without
  ``jit`` is eager too): nothing goes through the host. y0 and args are handed to eagle through
  DLPack (the run copies them device to device into its input plane, as it does every input,
  after its stream waits, through ``__dlpack__(stream=...)``, for JAX to have written them); a
  y0 of shape (d,) or a 0-d argument is first broadcast to (N, d) / (N,) on the device. The
  results are read from eagle's planes through ``jax.dlpack.from_dlpack`` (no copy) and gathered
  into new arrays by JAX (y is a transpose of the plane, and the run reuses its planes at its
  next solve), which are waited for. The backward pass hands the cotangents over the same way;
  ``sol.vjp(..., to_host=False)`` returns eagle device arrays that JAX takes without a copy, then
  sums a shared input's gradient over the samples on the device. The solve reads each sample's
  accepted-step count to the host (to size the tape) and, on a long solve, the progress
  display's counters; never y0, args or results.
- **Eager, on the CPU**: y0 and args cross as numpy views of JAX's buffers (``np.asarray``, no
  copy where they have the solve's dtype; the run copies them into its input plane); the
  results and gradients are host arrays that ``jax.device_put`` copies into JAX buffers.
- **Eager, anything else** (a GPU array on another device index, another dtype, a ``backend=``
  of another kind): copied to the host (``np.asarray``) and solved from there (on the host
  kind, or ``backend=``'s), the results and gradients copied back to the arrays' devices.
"""
import itertools
import threading
from collections import OrderedDict

import jax
import jax.dlpack
import jax.numpy as jnp
import numpy as np

from ._bridge import Bridge, DeviceInput, n_samples, planes, reduce_to

_BRIDGES = {}
_KEEP = 8  # forward solutions kept for their backward pass
_kept = OrderedDict()
_lock = threading.Lock()
_tokens = itertools.count(1)
_EAGLE_DEVICE = 0  # eagle.ode's planes live on device 0 of the solve's kind


def _keep(sol):
    with _lock:
        token = next(_tokens)
        _kept[token] = sol
        while len(_kept) > _KEEP:
            _kept.popitem(last=False)
    return token


def _take(token):
    with _lock:
        return _kept.pop(int(token), None)


def _token_dtype():
    return jnp.int64 if jax.config.jax_enable_x64 else jnp.int32


def _eager(*trees):
    """No tracer among the leaves: concrete arrays, outside jit/vmap (the DLPack path's case)."""
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(trees))


def _device_of(x):
    return next(iter(x.devices()))


def _on_device(bridge, y0, args):
    """The solve's device kind when the eager arrays are taken where they are (see the module
    docstring); None for the host path."""
    import eagle
    from ._run import host_kind
    if np.dtype(y0.dtype) not in (np.float32, np.float64) or len(y0.devices()) != 1:
        return None
    kind = eagle.kind_of_array(y0)
    if kind == host_kind() or y0.__dlpack_device__()[1] != _EAGLE_DEVICE or bridge.solve_kind(kind) != kind:
        return None
    return kind


def _device_inputs(bridge, y0, args):
    """(y0, args, numpy dtype) as the run takes them on the device: DeviceInputs, per sample, on
    y0's device."""
    dt = np.dtype(y0.dtype)
    n = n_samples(y0, args, bridge.t_span)
    dev = _device_of(y0)
    y = y0 if y0.ndim == 2 else jnp.broadcast_to(y0, (n, y0.shape[-1]))
    ins = []
    for a in args:
        a = _array(a, dt)
        if a.devices() != {dev}:
            a = jax.device_put(a, dev)
        if a.ndim == 0:
            a = jnp.broadcast_to(a, (n,))
        ins.append(DeviceInput(a, dt))
    return DeviceInput(y, dt), ins, dt


def _eager_forward(bridge, y0, args):
    """(the AdjointSolution, [y, ys]) of concrete arrays, on y0's device."""
    kind = _on_device(bridge, y0, args)
    if kind is not None:
        dy0, dargs, dt = _device_inputs(bridge, y0, args)
        sol = bridge.solve(dy0, dargs, dt, kind)
        W, row, d, YS = planes(sol)
        outs = [jax.dlpack.from_dlpack(W)[row:row + d].T]  # the plane's rows, gathered by JAX
        if YS is not None:
            outs.append(jnp.copy(jax.dlpack.from_dlpack(YS)))
        return sol, jax.block_until_ready(outs)  # read before the run's next solve writes the planes
    sol, y, ys = bridge.forward(np.asarray(y0), [np.asarray(a) for a in args])
    dev = _device_of(y0)
    return sol, [jax.device_put(x.astype(y0.dtype), dev) for x in ([y] if ys is None else [y, ys])]


def _eager_backward(bridge, sol, y0, args, cy, cys):
    """(gradient for y0, (gradient for each arg)) of concrete arrays, in the inputs' shapes and
    dtypes, on their devices."""
    kind = _on_device(bridge, y0, args)
    if kind is not None:
        dy0, dargs, dt = _device_inputs(bridge, y0, args)
        sol = bridge.current(sol, dy0, dargs, dt, kind)
        cy_in = DeviceInput(_array(cy, dt), dt)
        cys_in = None if cys is None else DeviceInput(jnp.nan_to_num(_array(cys, dt)), dt)
        g = sol.vjp(cy_in, cys_in, to_host=False)  # eagle's own arrays, fresh: JAX takes them without a copy
        gy0, ga = jax.dlpack.from_dlpack(g.y0), jax.dlpack.from_dlpack(g.args)
        return (reduce_to(gy0, y0.shape).astype(y0.dtype),
                tuple(reduce_to(ga[:, k], a.shape).astype(a.dtype) for k, a in enumerate(args)))
    gy0, gargs = bridge.backward(sol, np.asarray(y0), [np.asarray(a) for a in args], np.asarray(cy),
                                 None if cys is None else np.asarray(cys))
    return (jax.device_put(np.asarray(gy0, y0.dtype), _device_of(y0)),
            tuple(jax.device_put(np.asarray(g, a.dtype), _device_of(a)) for g, a in zip(gargs, args)))


def _make(bridge):
    def shapes(y0, args):
        n, d = n_samples(y0, args, bridge.t_span), np.shape(y0)[-1]
        dt = y0.dtype
        out = [jax.ShapeDtypeStruct((n, d), dt)]
        if bridge.t_eval is not None:
            out.append(jax.ShapeDtypeStruct((n, d, len(bridge.t_eval)), dt))
        return out

    def pack(outs):
        return outs[0] if len(outs) == 1 else tuple(outs)

    def host_forward(y0, *args):
        sol, y, ys = bridge.forward(np.asarray(y0), [np.asarray(a) for a in args])
        outs = [y.astype(y0.dtype)] + ([] if ys is None else [ys.astype(y0.dtype)])
        return sol, outs

    def primal(y0, args):
        if _eager(y0, args):
            return pack(_eager_forward(bridge, y0, args)[1])
        res = jax.pure_callback(lambda y, *a: host_forward(y, *a)[1], shapes(y0, args), y0, *args)
        return pack(res)

    @jax.custom_vjp
    def run(y0, args):
        return primal(y0, args)

    def fwd(y0, args):
        if _eager(y0, args):
            sol, outs = _eager_forward(bridge, y0, args)
            return pack(outs), (np.asarray(_keep(sol), np.dtype(_token_dtype())), y0, args)

        def cb(y, *a):
            sol, outs = host_forward(y, *a)
            return [np.asarray(_keep(sol), np.int64)] + outs
        res = jax.pure_callback(cb, [jax.ShapeDtypeStruct((), _token_dtype())] + shapes(y0, args), y0, *args)
        token, outs = res[0], res[1:]
        return pack(outs), (token, y0, args)

    def bwd(residual, ct):
        token, y0, args = residual
        cy, cys = (ct, None) if bridge.t_eval is None else ct
        if _eager(token, y0, args, cy, cys):
            return _eager_backward(bridge, _take(token), y0, args, cy, cys)

        def cb(tok, y, cy_, *rest):
            sol = _take(tok)
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
    y0 = _array(y0)
    if not jnp.issubdtype(y0.dtype, jnp.floating):
        y0 = y0.astype(jnp.result_type(float))
    args = tuple(_array(a, y0.dtype) for a in args)
    return entry[1](y0, args)


def _array(x, dtype=None):
    """``x`` as a JAX array (of ``dtype``): a JAX array or tracer that already is one as it is
    (``jnp.asarray`` of a tracer under ``jax.grad`` copies it)."""
    if isinstance(x, jax.Array) and (dtype is None or x.dtype == dtype):
        return x
    return jnp.asarray(x, dtype)
