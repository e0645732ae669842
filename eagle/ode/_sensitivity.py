"""Forward sensitivities of an ensemble solve: d y(t) / d args[k] and d y(t) / d y0 for every sample.

The derivative is of the DISCRETE solution: the method's stages differentiated with the accepted
step sizes held as the solve chose them. For an explicit Runge-Kutta method that is exactly the
same method applied to the variational system

    y' = f(t, y, a),    S' = (df/dy) S + df/dp,    S(t0) = dy0/dp

with the step-size controller's error norm (and the first step's rule) over the y components
only: the augmented state (y, S) then takes bit for bit the steps y takes alone, and S is the
derivative of y's discrete solution. The augmented right-hand side is built here at trace time
from the derived graph (eagle/ode/_derive.py), so it is exact (no finite differences) and the
same C on every kind; the solve is the ordinary solver over d (1 + P) components whose scheme
sees only the first d in its error norm (eagle/ode/_rk.py's ``n_control``, ODE_DC).

The same holds for a Rosenbrock method (Rodas5P, Rosenbrock23) given the augmented system's
exact Jacobian: its stages are linear in the increments, and differentiating
(I - h gamma J) k_i = f(Y_i) + h J sum_j gamma_ij k_j + h gamma_i f_t with h held gives the
method's stage equations for S with the augmented Jacobian [[J, 0], [dJ/dy S + df_p/dy, J]]
and augmented f_t. That Jacobian is derived from the augmented trace (second derivatives of
f, exact), and its block lower triangular structure is solved with y's own d x d LU
(eagle/ode/_linalg.py's solve_w): y takes the plain solve's steps and S is the derivative of
the discrete solution, as for the explicit methods. The Newton-iterated methods (Kvaerno5,
Radau) are refused: their discrete solution depends on where the iteration stopped.

Layout of the augmented state: y (d), then one block of d per parameter p (S[:, p]): first the
selected args in the order named, then, with y0, the d columns of dy/dy0.
"""
import inspect
import math
import numbers

import numpy as np

from ..errors import EagleTypeError, EagleValueError
from . import _rhs
from ._derive import derive
from ._trace import TracedFunction, arith, trace


def parse(spec, fun, n_args):
    """(positions of the args differentiated, whether y0 is) from ``sensitivity=``: True (every
    arg and y0), "y0", an arg's position (int) or name (str, a parameter of ``fun`` after t and
    y), or a sequence of those."""
    if spec is True:
        return tuple(range(n_args)), True
    if isinstance(spec, (str, numbers.Integral)) and not isinstance(spec, bool):
        spec = (spec,)
    if not isinstance(spec, (tuple, list)) or not spec:
        raise EagleTypeError("eagle.ode: sensitivity= must be True, 'y0', an arg's position or name, or a "
                             f"non-empty sequence of them; got {spec!r}")
    names = _arg_names(fun, n_args)
    positions, with_y0 = [], False
    for item in spec:
        if isinstance(item, str) and item == "y0":
            with_y0 = True
            continue
        if isinstance(item, str):
            if item not in names:
                raise EagleValueError(f"eagle.ode: sensitivity names {item!r}, which is not an argument of fun after "
                                      f"(t, y) (those are {', '.join(names) or 'none'}; or 'y0')")
            k = names.index(item)
        elif isinstance(item, numbers.Integral) and not isinstance(item, bool):
            k = int(item)
            if not 0 <= k < n_args:
                raise EagleValueError(f"eagle.ode: sensitivity names args[{k}], but fun takes {n_args} argument(s) "
                                      f"after (t, y)")
        else:
            raise EagleTypeError(f"eagle.ode: sensitivity items are arg positions (int), arg names (str) or 'y0'; "
                                 f"got a {type(item).__name__}")
        if k in positions:
            raise EagleValueError(f"eagle.ode: sensitivity names args[{k}] twice")
        positions.append(k)
    return tuple(positions), with_y0


def _arg_names(fun, n_args):
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][2:]
    return names[:n_args]


def _sum(terms, g):
    """The sum of the nodes ``terms`` (a constant 0 when there are none)."""
    out = None
    for x in terms:
        out = x if out is None else arith("add", out, x)
    return g.const(0.0) if out is None else out


def _scalar_args(args):
    """Refuse a per-sample vector argument ((N, k)): derivatives are taken for numbers and (N,)
    arrays of numbers only."""
    for k, a in enumerate(args):
        if len(tuple(getattr(a, "shape", None) or np.shape(a))) > 1:
            raise EagleValueError(f"eagle.ode: args[{k}] is a vector a sample (shape {tuple(np.shape(a))}); "
                                  f"sensitivities and the adjoint take numbers and (N,) arrays as arguments: pass "
                                  f"its components as arguments of their own")


def explicit_only(method):
    """The Method named ``method``, refused unless it is an explicit Runge-Kutta tableau (the
    adjoint transposes explicit stages)."""
    from ._methods import method as _method
    m = _method(method)
    if getattr(m, "implicit", False) or not hasattr(m, "A"):
        raise EagleValueError(f"eagle.ode: the adjoint takes the explicit methods (Tsit5, RK45, RK23, DOP853, RK4, "
                              f"Euler, Vern7, Vern9) so far; {m.name} is implicit (forward sensitivities, "
                              f"sensitivity=, take Rodas5P and Rosenbrock23 too)")
    return m


def forward_differentiable(method):
    """The Method named ``method``, refused unless forward sensitivities are the derivative of
    its discrete solution: an explicit Runge-Kutta method or a Rosenbrock method."""
    from ._methods import method as _method
    if isinstance(method, str) and method.lower() == "auto":
        raise EagleValueError("eagle.ode: sensitivity= takes a named method, not method='auto' (its switch is a "
                              "discrete decision): name Tsit5 or Rodas5P")
    m = _method(method)
    if getattr(m, "implicit", False) and getattr(m, "scheme", None) not in ("ros23", "rodas"):
        raise EagleValueError(f"eagle.ode: sensitivity= takes the explicit methods and the Rosenbrock methods "
                              f"(Rodas5P, Rosenbrock23); {m.name} solves its stages by Newton iterations, whose "
                              f"derivative is not the method's")
    if not getattr(m, "implicit", False) and not hasattr(m, "A"):
        raise EagleValueError(f"eagle.ode: sensitivity= cannot differentiate method {m.name}")
    return m


def _times(e, x):
    """e * x, with e = 1 and e = -1 taken as they are (the Jacobian of a linear term)."""
    if e.op == "const" and e.value == 1.0:
        return x
    if e.op == "const" and e.value == -1.0:
        return -x
    return arith("mul", e, x)


def traced(fun, d, n_args, dtype):
    """``fun`` traced over d states (TracedFunction) and its derivatives; C functions are refused."""
    if isinstance(fun, _rhs.C):
        raise EagleTypeError("eagle.ode: sensitivities and adjoints need fun as a Python function (traced, then "
                             "differentiated); a C right-hand side (eagle.ode.C) has no derivative here")
    tf = trace(fun, d, n_args, dtype=dtype, what="fun")
    return tf, derive(tf)


def augmented(fun, d, n_args, dtype, positions, with_y0):
    """The variational right-hand side over d (1 + P) states, as a TracedFunction (see the module
    docstring for the layout)."""
    tf, der = traced(fun, d, n_args, dtype)
    g = tf.graph
    P = len(positions) + (d if with_y0 else 0)
    S = [[g.node("y", payload=d + p * d + j, value=d + p * d + j) for j in range(d)] for p in range(P)]
    outputs = list(tf.outputs)
    rows = {}
    for (i, j), e in der.jac.items():
        rows.setdefault(i, []).append((j, e))
    for p in range(P):
        for i in range(d):
            terms = [_times(e, S[p][j]) for j, e in rows.get(i, ())]
            if p < len(positions) and (i, positions[p]) in der.dargs:
                terms.append(der.dargs[(i, positions[p])])
            outputs.append(_sum(terms, g))
    return TracedFunction(g, outputs, d * (1 + P), n_args, "fun with its sensitivities")


# ------------------------------------------------------------------ the graph over many samples at once

def _vector_op(op):
    """numpy's elementwise form of a graph node's operation (over arrays of samples)."""
    from ._derive import _NP
    special = {"cast": lambda x: np.asarray(x, np.float64), "select": np.where,
               "clipmax": lambda a, b: np.where((a >= b) | (a != a), a, b),
               "clipmin": lambda a, b: np.where((a <= b) | (a != a), a, b),
               "erf": np.vectorize(math.erf, otypes=[np.float64]), "erfc": np.vectorize(math.erfc, otypes=[np.float64])}
    return special.get(op) or _NP.get(op) or getattr(np, op)


def evaluate_many(outputs, t, y, args):
    """The values of graph nodes ``outputs`` for N samples at once (float64 numpy): ``t`` (N,),
    ``y`` (N, d), ``args`` numbers or (N,) arrays. A host-side evaluation of the trace (no
    differentiation), for the event-time rule."""
    n = y.shape[0]
    vals = {}
    with np.errstate(all="ignore"):
        for e in _trace_reached(outputs):
            if e.op == "const":
                v = np.full(n, e.value, dtype=bool if e.kind == "bool" else np.float64)
            elif e.op == "t":
                v = np.asarray(t, np.float64)
            elif e.op == "y":
                v = y[:, e.value]
            elif e.op == "a":
                v = np.broadcast_to(np.asarray(args[e.value], np.float64), (n,))
            else:
                v = _vector_op(e.op)(*[vals[x.id] for x in e.args])
            vals[e.id] = np.asarray(v, dtype=bool if e.kind == "bool" else np.float64)
    return [vals[o.id] for o in outputs]


def _trace_reached(outputs):
    from ._trace import _reached
    return _reached(outputs)


class _Event:
    """An event function of the augmented state: ``g`` of its first d components."""

    def __init__(self, g, d):
        self.g, self.d = g, d
        self.terminal = getattr(g, "terminal", False)
        self.direction = getattr(g, "direction", 0)
        self.__name__ = getattr(g, "__name__", "event")

    def __call__(self, t, y, *args):
        return self.g(t, y[:self.d], *args)


def _events(events, d):
    if events is None:
        return None
    if callable(events) and not isinstance(events, (list, tuple)) or isinstance(events, _rhs.C):
        events = [events]
    # a C event reads y[0..d-1] only (its contract), so it takes the augmented state as it is
    return [e if isinstance(e, _rhs.C) or not callable(e) else _Event(e, d) for e in events]


class SensitivitySolution:
    """An :class:`OdeSolution` of y with its derivatives (N samples, d components, P of the args).

    Besides every field of the plain solution (``y``, ``t``, ``status``, ``ys`` ... of y alone):
      dy_dargs  (N, d, P): d y(t_end) / d args[k] for the k in ``sensitivity_args`` (in that order)
      dy_dy0    (N, d, d): d y(t_end)[i] / d y0[j]  (when y0 was named)
      dys_dargs (N, d, P, T), dys_dy0 (N, d, d, T): the same at every t_eval time (nan where the
                sample had ended)
    t_end is t1, or the time of the terminal event that stopped the sample: there ``dy_dargs`` and
    ``dy_dy0`` are total derivatives (the event time moves with the parameters: f(t*, y*) dt*/dp
    is added), and :meth:`dt_event_dargs` / :meth:`dt_event_dy0` give each event's time derivative
    (the implicit-function rule on the located root, computed on the host). ``dys_*`` at t_eval
    times are at those fixed times."""

    def __init__(self, inner, d, positions, with_y0, events=None, fun=None, args=()):
        self._inner, self._d = inner, d
        self.sensitivity_args, self.sensitivity_y0 = positions, with_y0
        self._events, self._fun, self._args = events or [], fun, args
        self._event_cache = {}

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def _blocks(self, a):
        """(N, d, P) of an augmented (N, D) array (or (N, d, P, T) of (N, D, T))."""
        d, n = self._d, a.shape[0]
        s = a[:, d:]
        P = s.shape[1] // d
        s = s.reshape((n, P, d) + a.shape[2:])
        return np.ascontiguousarray(np.moveaxis(s, 1, 2))

    @property
    def y(self):
        return np.ascontiguousarray(self._inner.y[:, :self._d])

    @property
    def ys(self):
        ys = self._inner.ys
        return None if ys is None else np.ascontiguousarray(ys[:, :self._d])

    @property
    def y_events(self):
        return [np.ascontiguousarray(e[:, :self._d]) for e in self._inner.y_events]

    def _final(self):
        """d y(t_end) / d p, (N, d, P): the end held fixed, plus f(t_end, y) d t_end / d p for a
        sample that a terminal event stopped (its end moves with p)."""
        S = self._blocks(self._inner.y)
        stopped = np.flatnonzero(self._inner.status == 1)
        if stopped.size:
            t_end = self._inner.t
            for e, g in enumerate(self._events):
                if not getattr(g, "terminal", False):
                    continue
                te = self._inner.t_events[e]
                mine = stopped[te[stopped] == t_end[stopped]]
                if mine.size:
                    dt, f = self._event_terms(e)
                    S[mine] += f[mine][:, :, None] * dt[mine][:, None, :]
        return S

    @property
    def dy_dargs(self):
        return self._final()[:, :, :len(self.sensitivity_args)]

    @property
    def dy_dy0(self):
        if not self.sensitivity_y0:
            raise EagleValueError("eagle.ode: this solve did not differentiate y0 (name 'y0' in sensitivity=)")
        return self._final()[:, :, len(self.sensitivity_args):]

    # -- event times: the implicit-function rule on the located root g(t*, y(t*; p), p) = 0
    def _event_terms(self, e):
        """(d t*_e / d p (N, P), f(t*, y*) (N, d)) of event e (nan where it did not occur):
        d t*/dp = -(dg/dy S + dg/dp) / (dg/dt + dg/dy f), S = dy/dp at t* held fixed."""
        got = self._event_cache.get(e)
        if got is not None:
            return got
        g = self._events[e]
        if isinstance(g, _rhs.C) or self._fun is None:
            raise EagleTypeError(f"eagle.ode: the time derivative of events[{e}] needs it (and fun) as a Python "
                                 f"function; a C event has no derivative here")
        d, na = self._d, len(self._args)
        dg = derive(trace(g, d, na, n_out=1, what=f"events[{e}]"))
        ftf = trace(self._fun, d, na, what="fun")
        te = self._inner.t_events[e]
        ya = self._inner.y_events[e]
        n = te.shape[0]
        P = (ya.shape[1] - d) // d
        dt, f = np.full((n, P), np.nan), np.full((n, d), np.nan)
        hit = np.flatnonzero(~np.isnan(te))
        if hit.size:
            args = [np.asarray(a, np.float64)[hit] if np.ndim(a) else float(a) for a in self._args]
            y, S = ya[hit, :d], self._blocks(ya[hit])                       # (h, d), (h, d, P)
            zero = dg.traced.graph.const(0.0)
            gy = np.stack(evaluate_many([dg.jac.get((0, j), zero) for j in range(d)], te[hit], y, args), axis=1)
            gt = evaluate_many([dg.dt.get(0, zero)], te[hit], y, args)[0]
            ga = [evaluate_many([dg.dargs.get((0, k), zero)], te[hit], y, args)[0] for k in self.sensitivity_args]
            fi = np.stack(evaluate_many(list(ftf.outputs), te[hit], y, args), axis=1)
            gp = np.zeros((hit.size, P))
            for c, col in enumerate(ga):
                gp[:, c] = col
            dt[hit] = -(np.einsum("hd,hdp->hp", gy, S) + gp) / (gt + np.einsum("hd,hd->h", gy, fi))[:, None]
            f[hit] = fi
        self._event_cache[e] = (dt, f)
        return dt, f

    def dt_event_dargs(self, e=0):
        """(N, P): d t*_e / d args[k] of event e's first crossing (nan where it did not occur), by
        the implicit-function rule on the located root (the root found on the dense output)."""
        return self._event_terms(e)[0][:, :len(self.sensitivity_args)]

    def dt_event_dy0(self, e=0):
        """(N, d): d t*_e / d y0 of event e's first crossing (nan where it did not occur)."""
        if not self.sensitivity_y0:
            raise EagleValueError("eagle.ode: this solve did not differentiate y0 (name 'y0' in sensitivity=)")
        return self._event_terms(e)[0][:, len(self.sensitivity_args):]

    @property
    def dys_dargs(self):
        ys = self._inner.ys
        if ys is None:
            raise EagleValueError("eagle.ode: dys_dargs needs t_eval")
        return self._blocks(ys)[:, :, :len(self.sensitivity_args)]

    @property
    def dys_dy0(self):
        ys = self._inner.ys
        if ys is None or not self.sensitivity_y0:
            raise EagleValueError("eagle.ode: dys_dy0 needs t_eval and 'y0' named in sensitivity=")
        return self._blocks(ys)[:, :, len(self.sensitivity_args):]

    def __repr__(self):
        return repr(self._inner).replace("OdeSolution", "OdeSolution with sensitivities", 1)


def initial_augmented(y0, d, positions, with_y0):
    """y0 (N, d) or (d,) with S(t0) appended: zero columns for the args, the identity for y0."""
    y0 = np.asarray(y0, dtype=np.float64)
    P = len(positions) + (d if with_y0 else 0)
    out = np.zeros(y0.shape[:-1] + (d * (1 + P),))
    out[..., :d] = y0
    if with_y0:
        base = d * (1 + len(positions))
        for j in range(d):
            out[..., base + j * d + j] = 1.0
    return out


class SensitivitySolver:
    """An ensemble solver of y and its sensitivities, compiled once and solved again and again.
    ``sensitivity`` as :func:`parse` takes it; ``n_state`` and ``n_args`` are needed; every other
    keyword is :class:`Solver`'s. :meth:`solve` returns a :class:`SensitivitySolution`."""

    def __init__(self, fun, *, t_span, n_state, n_args, sensitivity=True, events=None, atol=1e-8,
                 dtype="float64", **solver_kwargs):
        from ._solver import Solver
        m = forward_differentiable(solver_kwargs.get("method", "Tsit5"))
        if solver_kwargs.get("jac") is not None:
            raise EagleValueError("eagle.ode: sensitivity= derives the Jacobian of y and its sensitivities from fun's "
                                  "trace: jac= is not taken with it")
        d, na = int(n_state), int(n_args)
        self.n_state, self.n_args = d, na
        from . import _check
        self._fun = fun
        self._events = [g for g, _, _ in _check.events_of(events, lambda g: isinstance(g, _rhs.C))]
        self.positions, self.with_y0 = parse(sensitivity, fun, na)
        if not self.positions and not self.with_y0:
            raise EagleValueError("eagle.ode: sensitivity= names nothing to differentiate")
        aug = augmented(fun, d, na, dtype, self.positions, self.with_y0)
        D = aug.n_state
        if np.ndim(atol):
            atol = np.concatenate([np.asarray(atol, np.float64), np.ones(D - d)])
        if getattr(m, "implicit", False):
            from ._implicit import StiffScheme as scheme
        else:
            from ._rk import RungeKutta as scheme
        self.solver = Solver(aug, t_span=t_span, n_state=D, n_args=na, events=_events(events, d), atol=atol,
                             dtype=dtype, _scheme=lambda m, **kw: scheme(m, n_control=d, **kw), **solver_kwargs)
        self.source = self.solver.source

    def solve(self, y0, args=(), *, distributed=None, progress=None):
        from ._run import on_device as _on_device
        if not isinstance(args, (tuple, list)):
            args = (args,)
        _scalar_args(args)
        if _on_device(y0) or any(_on_device(a) for a in args):
            raise EagleTypeError("eagle.ode: a sensitivity solve takes y0 and args as host arrays (numpy); copy "
                                 "device arrays to the host first")
        if np.shape(y0)[-1:] != (self.n_state,):
            raise EagleValueError(f"eagle.ode: y0 must have shape (N, {self.n_state}) or ({self.n_state},), got "
                                  f"{np.shape(y0)}")
        y0a = initial_augmented(y0, self.n_state, self.positions, self.with_y0).astype(self.solver.dtype)
        inner = self.solver.solve(y0a, args, distributed=distributed, progress=progress)
        return SensitivitySolution(inner, self.n_state, self.positions, self.with_y0, self._events, self._fun,
                                   tuple(args))


class SdeSensitivitySolver:
    """Pathwise sensitivities of an SDE ensemble (eagle.ode.solve_sde's paths, the noise held
    fixed): d y(t1) / d args[k] and d y(t1) / d y0 of every path, for Monte-Carlo Greeks.

    The derivative of the discrete path (Euler-Maruyama or the derivative-free Milstein) with
    its normals held fixed is the same method applied to the augmented system (y, S) whose S
    columns take y's Brownian increments: dS = (da/dy S + da/dp) dt + (db/dy S + db/dp) dW, with
    b diagonal (component j of every column driven by W_j). The drift and the diffusion are
    augmented at trace time as for :class:`SensitivitySolver`, and the scheme draws the normals of
    a d-component path (eagle/ode/_sde.py's ``n_noise``), so y is the plain path's bit for bit.
    Events and t_eval work as for the plain paths (at step ends, times held fixed).

    ``sensitivity``, ``n_state``, ``n_args`` as :class:`SensitivitySolver`'s; every other keyword
    is :class:`SdeSolver`'s. :meth:`solve` returns a :class:`SensitivitySolution` over the paths."""

    def __init__(self, drift, diffusion, *, t_span, n_state, n_args, sensitivity=True, events=None,
                 dtype="float64", **sde_kwargs):
        from ._sde import SdeSolver
        d, na = int(n_state), int(n_args)
        self.n_state, self.n_args = d, na
        self.positions, self.with_y0 = parse(sensitivity, drift, na)
        if not self.positions and not self.with_y0:
            raise EagleValueError("eagle.ode: sensitivity= names nothing to differentiate")
        a = augmented(drift, d, na, dtype, self.positions, self.with_y0)
        b = augmented(diffusion, d, na, dtype, self.positions, self.with_y0)
        self.solver = SdeSolver(a, b, t_span=t_span, n_state=a.n_state, n_args=na, events=_events(events, d),
                                dtype=dtype, _n_noise=d, **sde_kwargs)
        self.source = self.solver.source

    def solve(self, y0, args=(), *, seed=None, n_paths=None, progress=None):
        if not isinstance(args, (tuple, list)):
            args = (args,)
        if np.shape(y0)[-1:] != (self.n_state,):
            raise EagleValueError(f"eagle.ode: y0 must have shape (N, {self.n_state}) or ({self.n_state},), got "
                                  f"{np.shape(y0)}")
        y0a = initial_augmented(y0, self.n_state, self.positions, self.with_y0).astype(self.solver.dtype)
        inner = self.solver.solve(y0a, args, seed=seed, n_paths=n_paths, progress=progress)
        return SensitivitySolution(inner, self.n_state, self.positions, self.with_y0)


def solve(fun, t_span, y0, args, sensitivity, events, atol, dtype, solver_kwargs, distributed=None):
    """solve_ivp with ``sensitivity=``: the variational system solved as one ensemble."""
    s = SensitivitySolver(fun, t_span=t_span, n_state=np.shape(y0)[-1], n_args=len(args), sensitivity=sensitivity,
                          events=events, atol=atol, dtype=dtype, **solver_kwargs)
    return s.solve(y0, args, distributed=distributed)
