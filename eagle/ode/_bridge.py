"""What the framework bridges (eagle/ode/jax.py, eagle/ode/torch.py) share: one recorded solve
(:class:`eagle.ode.AdjointSolver`, compiled once per fun, span, shapes and dtype) for the forward
pass, its discrete adjoint for the backward pass, and the reduction of per-sample gradients to
the shapes the caller passed (a y0 of shape (d,) or a scalar argument shared by every sample gets
the sum over the samples). No framework is imported here."""
import threading

import numpy as np

from ..errors import EagleValueError


def reduce_to(g, shape):
    """The per-sample gradient ``g`` ((N, ...) ) summed to an input of ``shape``."""
    g = np.asarray(g)
    shape = tuple(shape)
    if g.shape == shape:
        return g
    if len(shape) < g.ndim:
        g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    return g.reshape(shape)


class Bridge:
    """Forward and backward passes of ``solve_ivp(fun, t_span, y0, args=args, t_eval=..., **kw)``
    differentiable in y0 and args."""

    def __init__(self, fun, t_span, t_eval, kwargs):
        for bad in ("sensitivity", "adjoint", "events", "distributed", "args", "y0"):
            if bad in kwargs:
                raise EagleValueError(f"eagle.ode bridge: {bad}= is not taken here")
        self.fun, self.t_span, self.t_eval, self.kwargs = fun, t_span, t_eval, dict(kwargs)
        self._solvers = {}
        self._lock = threading.Lock()

    def solver(self, d, na, dtype, backend=None):
        from ._adjoint import AdjointSolver
        key = (d, na, np.dtype(dtype).name, backend)
        with self._lock:
            s = self._solvers.get(key)
            if s is None:
                kw = dict(self.kwargs)
                if backend is not None and kw.get("backend") is None:
                    kw["backend"] = backend
                s = self._solvers[key] = AdjointSolver(self.fun, t_span=self.t_span, n_state=d, n_args=na,
                                                       t_eval=self.t_eval, dtype=np.dtype(dtype).name, **kw)
        return s

    def forward(self, y0, args, backend=None):
        """(the AdjointSolution, y (N, d), ys (N, d, T) or None) of host arrays; ``backend``: the
        kind the caller's tensors live on (the solve runs there unless backend= was given)."""
        y0 = np.asarray(y0)
        dtype = np.float32 if y0.dtype == np.float32 else np.float64
        args = [np.asarray(a, dtype) for a in args]
        sol = self.solver(y0.shape[-1], len(args), dtype, backend).solve(y0.astype(dtype), tuple(args))
        ys = sol.ys if self.t_eval is not None else None
        return sol, sol.y, ys

    def backward(self, sol, y0, args, cy, cys, backend=None):
        """(gradient for y0, [gradient for each arg]) in the inputs' shapes; the solve is redone when
        the same solver has solved again since (its tape was overwritten)."""
        from ._adjoint import AdjointSolution
        y0 = np.asarray(y0)
        if sol is None or not isinstance(sol, AdjointSolution) or sol._generation != sol._owner._generation:
            sol, _, _ = self.forward(y0, args, backend)
        cy = np.asarray(cy, sol._solver.dtype)
        g = sol.vjp(cy, None if cys is None else np.nan_to_num(np.asarray(cys, sol._solver.dtype)))
        return reduce_to(g.y0, y0.shape), [reduce_to(g.args[:, k], np.shape(a)) for k, a in enumerate(args)]
