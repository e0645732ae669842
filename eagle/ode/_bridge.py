"""What the framework bridges (eagle/ode/jax.py, eagle/ode/torch.py) share: one recorded solve
(:class:`eagle.ode.AdjointSolver`, compiled once per fun, span, shapes and dtype) for the forward
pass, its discrete adjoint for the backward pass, and the reduction of per-sample gradients to
the shapes the caller passed (a y0 of shape (d,) or a scalar argument shared by every sample gets
the sum over the samples). No framework is imported here.

Two ways in and out (each bridge's docstring says which copies which):

- host: numpy arrays in (a host tensor's own memory, no staging copy), numpy arrays out
  (:meth:`Bridge.forward`, :meth:`Bridge.backward`);
- device: :class:`DeviceInput` in (a framework's array on the solve's device, handed to the run,
  which copies it device to device into its input plane after ordering its stream behind the
  framework's pending work through ``__dlpack__(stream=...)``), eagle's device arrays out
  (:func:`planes` of the solution and ``sol.vjp(..., to_host=False)``), which the framework takes
  through DLPack (``from_dlpack``) without a copy."""
import threading

import numpy as np

from ..errors import EagleValueError


def reduce_to(g, shape):
    """The per-sample gradient ``g`` ((N, ...) ) summed to an input of ``shape``: a numpy, JAX or
    torch array stays one (each takes ``sum(axis=)`` and ``reshape``); anything else becomes numpy."""
    if not (hasattr(g, "shape") and hasattr(g, "sum") and hasattr(g, "reshape")):
        g = np.asarray(g)
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    if len(shape) < g.ndim:
        g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    return g.reshape(shape)


def shape_of(x):
    """The shape of an array of any framework (never converting it: a device tensor stays where it
    is), or of a number (())."""
    s = getattr(x, "shape", None)
    return tuple(int(k) for k in s) if s is not None else np.shape(x)


def n_samples(y0, args, t_span):
    """The solve's N from the per-sample inputs ((N, d) y0, (N,) args, an (N,) t1), refused
    naming each input where they disagree; 1 when every input is shared."""
    ns = {}
    if len(shape_of(y0)) == 2:
        ns["y0"] = shape_of(y0)[0]
    for k, a in enumerate(args):
        if len(shape_of(a)) == 1:
            ns[f"args[{k}]"] = shape_of(a)[0]
    for name, t in zip(("t0", "t1"), t_span):
        if np.ndim(t):
            ns[f"t_span's {name}"] = np.shape(t)[0]
    if len(set(ns.values())) > 1:
        raise EagleValueError("eagle.ode bridge: the samples disagree on N: " +
                              ", ".join(f"{k} has {v}" for k, v in ns.items()))
    return next(iter(ns.values())) if ns else 1


class DeviceInput:
    """A framework's array on the solve's device, as eagle.ode's run takes it (eagle/ode/_run.py,
    ``on_device``): its ``shape``, a numpy ``dtype`` (a torch tensor's dtype is none) and DLPack,
    through which eagle reads its address (``__dlpack__()``, no copy) and orders its own stream
    after the framework's pending work on it (``__dlpack__(stream=eagle's stream)``, the
    protocol's rule). ``array`` must be C-contiguous of ``dtype`` (the bridges make it so on the
    device). ``enter``: a context-manager factory entered around ``__dlpack__`` (torch exports
    a CUDA tensor only while its device is the current one). Host memory reads as numpy
    (``__array__``) for a solve on the host kind."""

    __slots__ = ("array", "shape", "dtype", "_enter")

    def __init__(self, array, dtype, enter=None):
        self.array = array
        self.shape = shape_of(array)
        self.dtype = np.dtype(dtype)
        self._enter = enter

    @property
    def ndim(self):
        return len(self.shape)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def __dlpack__(self, **kw):
        if self._enter is None:
            return self.array.__dlpack__(**kw)
        with self._enter():
            return self.array.__dlpack__(**kw)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(np.from_dlpack(self.array), dtype=dtype)

    def __repr__(self):
        return f"<eagle.ode bridge input {type(self.array).__name__} {self.shape} {self.dtype}>"


def planes(sol):
    """(W, row, d, YS) of a solution: eagle's device arrays that hold its results, W the (rows,
    N) state plane whose rows row .. row + d are y(t_end) component-major (so y = W[row:row +
    d].T), YS the (N, d, T) states at t_eval (None without). The run reuses them at its next
    solve: a consumer copies what it keeps before then."""
    inner = sol._sol
    view = inner._view
    return inner._W, view.rows[0]["Y"], view.n_state, inner._YS if view.t_eval is not None else None


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

    def solve_kind(self, kind):
        """The kind the solve runs on for inputs that live on ``kind``: ``backend=``'s when given."""
        b = self.kwargs.get("backend")
        if b is None:
            return kind
        from ._run import backend_of
        return backend_of(b, None, "eagle.ode bridge").kind

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

    def solve(self, y0, args, dtype, backend=None):
        """The AdjointSolution of one recorded solve. ``y0``, ``args``: numpy arrays or numbers (of
        ``dtype``, or converted by the run), or :class:`DeviceInput` s (per sample: (N, d) and (N,),
        of ``dtype``) on the kind ``backend``, which the run copies device to device."""
        return self.solver(shape_of(y0)[-1], len(args), dtype, backend).solve(y0, tuple(args))

    def current(self, sol, y0, args, dtype, backend=None):
        """``sol``, or the same inputs solved again when the solver has solved since (its tape was
        overwritten)."""
        from ._adjoint import AdjointSolution
        if sol is None or not isinstance(sol, AdjointSolution) or sol._generation != sol._owner._generation:
            sol = self.solve(y0, args, dtype, backend)
        return sol

    def forward(self, y0, args, backend=None):
        """(the AdjointSolution, y (N, d), ys (N, d, T) or None) of host arrays; ``backend``: the
        kind the caller's tensors live on (the solve runs there unless backend= was given). Host
        inputs of the solve's dtype are read where they are (no staging copy)."""
        y0 = np.asarray(y0)
        dtype = np.float32 if y0.dtype == np.float32 else np.float64
        args = [np.asarray(a, dtype) for a in args]
        sol = self.solve(y0.astype(dtype, copy=False), args, dtype, backend)
        ys = sol.ys if self.t_eval is not None else None
        return sol, sol.y, ys

    def backward(self, sol, y0, args, cy, cys, backend=None):
        """(gradient for y0, [gradient for each arg]) in the inputs' shapes, host arrays; the solve
        is redone when the same solver has solved again since (its tape was overwritten)."""
        y0 = np.asarray(y0)
        dtype = np.float32 if y0.dtype == np.float32 else np.float64
        sol = self.current(sol, y0.astype(dtype, copy=False), [np.asarray(a, dtype) for a in args], dtype, backend)
        cy = np.asarray(cy, sol._solver.dtype)
        g = sol.vjp(cy, None if cys is None else np.nan_to_num(np.asarray(cys, sol._solver.dtype)))
        return reduce_to(g.y0, y0.shape), [reduce_to(g.args[:, k], np.shape(a)) for k, a in enumerate(args)]
