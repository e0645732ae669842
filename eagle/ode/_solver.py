"""eagle.ode's ODE front: :class:`Solver` (compile once, solve again and again; the one-call
:func:`solve_ivp` over it is in eagle/ode/_ivp.py): the explicit Runge-Kutta scheme
(eagle/ode/_rk.py) or an implicit one (eagle/ode/_implicit.py) and a controller handed to the
one ensemble run (eagle/ode/_run.py)."""
import math

from ..errors import EagleTypeError, EagleValueError
from . import _acts, _auto, _check, _control, _rhs
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

    Attributes: ``source`` (the generated C), ``method``, ``t_eval``, ``events``, ``callbacks``."""

    def __init__(self, fun, *, t_span, n_state=None, n_args=None, method="Tsit5", t_eval=None, events=None, rtol=1e-6,
                 atol=1e-8, dt=None, adaptive=None, max_steps=100_000, first_step=None, max_step=math.inf,
                 dtype="float64", backend=None, exact=False, fast_math=False, controller="PI",
                 steps_per_call=None, workers=None, progress=None, save=None, callbacks=None, max_events=None,
                 jac=None, _scheme=None):
        auto = _auto.is_auto(method)  # Tsit5 switching per sample to Rodas5P (eagle/ode/_auto.py)
        m = self.method = _auto.AUTO if auto else _method(method)
        implicit = getattr(m, "implicit", False)
        if jac is not None and not implicit:
            raise EagleValueError(f"eagle.ode: jac= is for the implicit methods (Rodas5P, Kvaerno5, Rosenbrock23, Radau); "
                                  f"method {m.name} is explicit and does not use a Jacobian")
        if auto and _scheme is not None:
            raise EagleValueError("eagle.ode: sensitivities and the adjoint take a named method, not method='auto'")
        # _scheme(method, adaptive=, d=, real=[, fun=, jac=]): a RungeKutta (or, implicit, a
        # StiffScheme) of eagle/ode/_sensitivity.py or eagle/ode/_adjoint.py in place of the plain
        # one; fun may then be a TracedFunction
        if not (callable(fun) or isinstance(fun, _rhs.C) or hasattr(fun, "c_function")):
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
        self.events = _acts.events_of(events)
        self.max_events = _acts.max_events_of(max_events)
        self.callbacks = _acts.callbacks_of(callbacks)
        if not self.adaptive and (self.callbacks or any(e.acts for e in self.events)):
            raise EagleValueError(f"eagle.ode: events with an affect and callbacks restart the integration at "
                                  f"their times, which a fixed-step solve ({m.name}, dt={dt}) cannot: use an adaptive "
                                  f"method")
        if implicit and (self.callbacks or save is not None or any(e.acts for e in self.events)):
            raise EagleValueError(f"eagle.ode: save=, callbacks= and events with an affect are built for the explicit "
                                  f"methods; method {m.name} is implicit (use events without an affect, or t_eval)")
        if auto:
            if not self.adaptive:
                raise EagleValueError("eagle.ode: method='auto' is adaptive (it switches on the step sizes it "
                                      "chooses); for fixed steps name a method")

            def scheme(d, real):
                return _auto.AutoScheme(d=d, real=real, fun=fun, jac=jac)
        elif implicit:
            from ._implicit import StiffScheme

            stiff = _scheme or StiffScheme

            def scheme(d, real):
                return stiff(m, adaptive=self.adaptive, d=d, real=real, fun=fun, jac=jac)
        else:
            explicit = _scheme or RungeKutta

            def scheme(d, real):
                return explicit(m, adaptive=self.adaptive, d=d, real=real)
        self._run = Run("eagle.ode", [("fun", fun, "ode_user_f")], scheme, ctl, method=m.name,
                        events=self.events, t_span=t_span, t_eval=t_eval, dtype=dtype, backend=backend, exact=exact,
                        fast_math=fast_math, steps_per_call=steps_per_call, workers=workers, progress=progress,
                        values=values, n_state=n_state, n_args=n_args, max_events=self.max_events,
                        callbacks=self.callbacks, save=save)
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
