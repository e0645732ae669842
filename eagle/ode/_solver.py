"""eagle.ode's ODE front: :class:`Solver` (compile once, solve again and again) and
:func:`solve_ivp` (scipy's vocabulary, one call): the explicit Runge-Kutta scheme
(eagle/ode/_rk.py) or an implicit one (eagle/ode/_implicit.py) and a controller handed to the
one ensemble run (eagle/ode/_run.py)."""
import math

from ..errors import EagleTypeError, EagleValueError
from . import _check, _control, _rhs
from ._methods import method as _method
from ._rk import RungeKutta
from ._run import Front, Run


class Solver(Front):
    """An ensemble solver compiled once and solved again and again (new y0, new args, same
    method, span, tolerances and outputs). See :func:`solve_ivp` for the parameters; ``n_state``
    and ``n_args`` say what ``fun`` takes. The module is compiled and the graph recorded at the
    first :meth:`solve` on a backend (or at :meth:`compile`), then reused; a module is shared by
    every Solver of the same right-hand side, method and outputs (the span, tolerances, steps and
    t_eval times are run-time values).

    Attributes: ``source`` (the generated C), ``method``, ``t_eval``, ``events``."""

    def __init__(self, fun, *, t_span, n_state=None, n_args=None, method="Tsit5", t_eval=None, events=None, rtol=1e-6,
                 atol=1e-8, dt=None, adaptive=None, max_steps=100_000, first_step=None, max_step=math.inf,
                 dtype="float64", backend=None, exact=False, fast_math=False, controller="PI",
                 steps_per_call=None, workers=None, progress=None, jac=None):
        m = self.method = _method(method)
        implicit = getattr(m, "implicit", False)
        if jac is not None and not implicit:
            raise EagleValueError(f"eagle.ode: jac= is for the implicit methods (Rodas5P, Kvaerno5, Rosenbrock23, Radau); "
                                  f"method {m.name} is explicit and does not use a Jacobian")
        if not (callable(fun) or isinstance(fun, _rhs.C)):
            raise EagleTypeError(f"eagle.ode: fun must be a callable f(t, y, *args) or eagle.ode.C(...), got a "
                                 f"{type(fun).__name__}")
        if adaptive is None:
            if dt is not None and m.adaptive:
                raise EagleValueError(f"eagle.ode: dt={dt} with the adaptive {m.name}: pass adaptive=False for fixed "
                                      f"steps of dt, or first_step= to start the adaptive solve with that step")
            adaptive = m.adaptive
        if adaptive and not m.adaptive:
            raise EagleValueError(f"eagle.ode: method {m.name} is fixed-step (no error estimate): pass dt= "
                                  f"(and adaptive=False)")
        if not adaptive:
            if dt is None:
                raise EagleValueError(f"eagle.ode: a fixed-step solve ({m.name}, adaptive=False) needs dt=")
            dt = _check.positive(dt, "dt")
        elif dt is not None:
            raise EagleValueError(f"eagle.ode: dt={dt} with the adaptive {m.name}: pass adaptive=False for fixed "
                                  f"steps of dt, or first_step= to start the adaptive solve with that step")
        self.adaptive = bool(adaptive)
        rtol = _check.positive(rtol, "rtol")
        if self.adaptive and _check.real_of(dtype) == "float64" and rtol < 100 * 2.220446049250313e-16:
            raise EagleValueError(f"eagle.ode: rtol={rtol} is below 100 eps of float64 (2.2e-14)")
        values = dict(rtol=rtol, atol=_check.atol_of(atol, n_state), dt=dt,
                      first_step=None if first_step is None else _check.positive(first_step, "first_step"),
                      max_step=_check.positive(max_step, "max_step", allow_inf=True),
                      max_steps=_check.count(max_steps, "max_steps", 1))
        ctl = _control.controller(controller) if self.adaptive else None
        if not self.adaptive:
            _control.controller(controller)  # still checked
        self.events = _check.events_of(events, lambda g: isinstance(g, _rhs.C))
        if implicit:
            from ._implicit import StiffScheme

            def scheme(d, real):
                return StiffScheme(m, adaptive=self.adaptive, d=d, real=real, fun=fun, jac=jac)
        else:
            def scheme(d, real):
                return RungeKutta(m, adaptive=self.adaptive, d=d, real=real)
        self._run = Run("eagle.ode", [("fun", fun, "ode_user_f")], scheme, ctl, method=m.name,
                        events=self.events, t_span=t_span, t_eval=t_eval, dtype=dtype, backend=backend, exact=exact,
                        fast_math=fast_math, steps_per_call=steps_per_call, workers=workers, progress=progress,
                        values=values, n_state=n_state, n_args=n_args)
        self.t0, self.t1, self.t_eval = self._run.t0, self._run.t1, self._run.t_eval
        self.dtype, self.rtol, self.atol, self.dt = self._run.dtype, rtol, values["atol"], dt
        self.controller = controller

    @property
    def jacobian_kind(self):
        """An implicit method's Jacobian: 'derived from the trace', 'given (jac=)' or 'finite
        differences' (known once traced); None for an explicit method."""
        return getattr(getattr(self._run, "scheme", None), "jacobian_kind", None)

    def flops_per_step(self):
        """An implicit method's floating-point operations per accepted step of one sample (a dict:
        f, jac, W, LU, solves, combine, error; an FMA counts 2), from the traced rhs's operation
        count and the Jacobian's nonzeros (eagle/ode/_implicit.py); None for an explicit method
        or a C rhs. For a benchmark's fraction of peak."""
        f = getattr(getattr(self._run, "scheme", None), "flops_per_step", None)
        return f() if f is not None else None

    def solve(self, y0, args=(), *, progress=None, distributed=None):
        """Integrate every sample from ``y0`` ((N, d) or (d,)) with ``args`` (numbers or (N,)
        arrays); returns an :class:`OdeSolution`. Waits for the device (interruptibly where the
        backend allows). One solve at a time (a lock); any thread may call it.

        ``distributed``: True (an ``eagle.distributed.Job`` is made, collectively, on the solve's
        backend: one device per rank) or a Job over all the samples. Every rank passes all the
        samples' inputs, solves its share, and gets the whole solution back (gathered in sample
        order, host arrays), the same bit for bit as one process's solve."""
        return self._run.solve(y0, args, progress=progress, distributed=distributed)


def solve_ivp(fun, t_span, y0, method="Tsit5", t_eval=None, events=None, rtol=1e-6, atol=1e-8, dt=None, args=(),
              backend=None, *, adaptive=None, max_steps=100_000, first_step=None, max_step=math.inf, dtype=None,
              exact=False, fast_math=False, controller="PI", progress=None, distributed=None, jac=None, **scipy):
    """Integrate N independent initial-value problems y' = fun(t, y, *args) at once, one per lane
    of the arrays' device, in scipy.integrate.solve_ivp's vocabulary.

    Parameters
    ----------
    fun : callable ``fun(t, y, *args)`` or :class:`eagle.ode.C`
        The right-hand side of ONE sample, written with arithmetic, comparisons and
        ``eagle.ode.math`` (exp, sin, where, min, max, ... and numpy's ufuncs); it is traced once
        into C. A Python ``if`` on the state is refused (use ``where``).
    t_span : (t0, t1)
        Shared times, or ``t0`` and/or ``t1`` (N,) arrays of per-sample times. t1 > t0.
    y0 : array (N, d) or (d,)
        Initial states. Where it lives picks the backend (numpy: the host's kind; a CUDA array:
        cuda), unless ``backend=`` names one. Its dtype picks the precision (float32 stays float32,
        everything else is float64) unless ``dtype=`` is given.
    method : "Tsit5" (default), "RK45", "RK23", "DOP853" (adaptive) or "RK4", "Euler" (fixed);
        for stiff problems the implicit "Rodas5P" (Rosenbrock 5(4)), "Kvaerno5" (ESDIRK 5(4)),
        "Rosenbrock23" (ode23s) or "Radau" (Radau IIA, order 5), at most 64 state components
        (eagle/ode/_implicit.py).
    t_eval : 1-d increasing array, optional
        Shared times at which to store every sample's state (dense output), as ``sol.ys``
        (N, d, T) on the device.
    events : callable or list of callables ``g(t, y, *args)``, optional
        Traced like fun, with scipy's ``terminal`` and ``direction`` attributes. A crossing is
        located on the dense output; ``sol.t_events``/``y_events`` hold the first one per sample.
    rtol, atol : tolerances of the adaptive methods (atol: a number or d numbers).
    dt : step of a fixed-step solve (Euler, RK4, or an adaptive tableau with adaptive=False).
    args : numbers or (N,) arrays, passed to fun after (t, y); an (N, k) array is a per-sample
        vector of k numbers (``fun`` reads ``args[j][c]``; shape (k,): one vector for every sample).
    backend : kind, "gpu" or eagle.Backend, optional.
    max_steps : steps (accepted and rejected) a sample may take before it fails (status -1).
    first_step, max_step : as scipy's.
    exact : compile bit-exact (every kind gives the same bits); fast_math: let the compiler
        reassociate. controller: "PI" (default) or "I" (scipy's).
    progress : None/True shows how far the samples are for solves longer than ~2 s.
    distributed : True, or an ``eagle.distributed.Job``: the samples are split over MPI ranks
        (every rank passes all the inputs and gets the gathered solution); see Solver.solve.
    jac : callable ``jac(t, y, *args)`` returning the (d, d) Jacobian df/dy (traced like fun), or
        :class:`eagle.ode.C` writing its d*d entries row-major; implicit methods only. Default:
        derived exactly from fun's trace (a C fun: finite differences). ``sol.jacobian`` says
        which was used.

    scipy's ``dense_output``, ``vectorized``, ``jac`` ... are refused naming what eagle does instead.

    Returns
    -------
    OdeSolution
        ``t``, ``y``, ``status`` (0 reached t1, 1 terminal event, -1 failed), ``failure``,
        ``message``, ``nfev``, ``n_accepted``, ``n_rejected``, ``ys``, ``t_events``, ``y_events``,
        ``source``.
    """
    _check.scipy_keywords(scipy, "eagle.ode.solve_ivp")
    y0 = _check.y0_of(y0)
    args = () if args is None else _check.args_of(args)
    if dtype is None:
        dtype = "float32" if y0.dtype == "float32" else "float64"
    solver = Solver(fun, t_span=t_span, n_state=y0.shape[-1], n_args=_check.widths_of(args), method=method, t_eval=t_eval,
                    events=events, rtol=rtol, atol=atol, dt=dt, adaptive=adaptive, max_steps=max_steps,
                    first_step=first_step, max_step=max_step, dtype=dtype, backend=backend, exact=exact,
                    fast_math=fast_math, controller=controller, progress=progress, jac=jac)
    return solver.solve(y0, args, distributed=distributed)
