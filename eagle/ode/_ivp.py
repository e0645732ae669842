"""eagle.ode's one-call front, in scipy's vocabulary: :func:`solve_ivp` over :class:`Solver`
(eagle/ode/_solver.py), or, asked for derivatives, over the forward-sensitivity solver
(eagle/ode/_sensitivity.py) or the recording solver of the discrete adjoint (eagle/ode/_adjoint.py),
which are built on Solver: hence this module above the three."""
import math

from ..errors import EagleValueError
from . import _adjoint, _check, _sensitivity
from ._solver import Solver


def solve_ivp(fun, t_span, y0, method="Tsit5", t_eval=None, events=None, rtol=1e-6, atol=1e-8, dt=None, args=(),
              backend=None, *, adaptive=None, max_steps=100_000, first_step=None, max_step=math.inf, dtype=None,
              exact=False, fast_math=False, controller="PI", progress=None, distributed=None, save=None,
              callbacks=None, max_events=None, jac=None, sensitivity=None, adjoint=None, **scipy):
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
    method : "Tsit5" (default), "RK45", "RK23", "DOP853", "Vern7", "Vern9" (adaptive) or "RK4", "Euler" (fixed);
        for stiff problems the implicit "Rodas5P" (Rosenbrock 5(4)), "Kvaerno5" (ESDIRK 5(4)),
        "Rosenbrock23" (ode23s) or "Radau" (Radau IIA, order 5), at most 64 state components
        (eagle/ode/_implicit.py).
    t_eval : 1-d increasing array, optional
        Shared times at which to store every sample's state (dense output), as ``sol.ys``
        (N, d, T) on the device.
    events : callable or list of callables ``g(t, y, *args)``, optional
        Traced like fun, with scipy's ``terminal`` (True, or a count: stop at that crossing) and
        ``direction`` attributes, and ``affect(t, y, *args) -> new y`` (traced like fun): the state
        is replaced at the located crossing and the integration restarts there (see
        ``eagle.ode.event`` for a lambda; the contract is in eagle/ode/_acts.py). A crossing is
        located on the dense output; ``sol.t_events``/``y_events`` hold the first one per sample
        (``max_events=k``: the first k times, (N, k)); ``sol.n_events`` counts them.
    callbacks : ``eagle.ode.at(times, affect)`` or a list of them, optional
        The state is changed at given times (shared (m,) or per sample (N, m)); the integrator
        steps onto each exactly.
    save : list of reductions or dict reduction -> components, optional
        Summaries computed during the solve, O(N) memory: "max", "min", "argmax", "argmin",
        "integral", "mean", "final", and "g": a callable g(t, y, *args) integrated over time.
        ``sol.saved[name]`` is (N, len(components)).
    max_events : int, optional
        Crossing times kept per event and sample; an event with an affect that fires more often
        fails its sample (its own failure code).
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
    sensitivity : True, 'y0', an arg's position or name, or a sequence of them, optional
        Forward sensitivities (eagle/ode/_sensitivity.py): the solution also holds ``dy_dargs``
        (N, d, P), ``dy_dy0`` (N, d, d) and, with t_eval, ``dys_dargs``/``dys_dy0``. They are the
        derivatives of the discrete solution (the stages differentiated, the accepted steps held
        as the solve chose them; the steps are those of the plain solve), so they agree with
        finite differences of the same fixed-step method to rounding, not only to the tolerance.
    adjoint : True or an int (the tape's capacity in accepted steps a sample), optional
        Record the accepted steps for reverse mode: ``sol.vjp(cotangent_y, cotangent_ys=None)``
        gives the gradients for y0 and the args by the discrete adjoint (eagle/ode/_adjoint.py).

    scipy's ``dense_output``, ``vectorized`` ... are refused naming what eagle does instead.

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
    common = dict(method=method, t_eval=t_eval, rtol=rtol, dt=dt, adaptive=adaptive, max_steps=max_steps,
                  first_step=first_step, max_step=max_step, backend=backend, exact=exact, fast_math=fast_math,
                  controller=controller, progress=progress)
    derivatives = (sensitivity is not None and sensitivity is not False) or (adjoint is not None and adjoint is not False)
    if derivatives and jac is not None:
        raise EagleValueError("eagle.ode: jac= is for the implicit methods, and sensitivity=/adjoint= for the explicit "
                              "ones: solve without jac=")
    if derivatives and (save is not None or callbacks is not None or max_events is not None
                        or any(getattr(g, "affect", None) is not None for g in _events_list(events))):
        raise EagleValueError("eagle.ode: sensitivity= and adjoint= do not take save=, callbacks=, max_events= or "
                              "events with an affect (a state jump is not differentiated): solve without them")
    if sensitivity is not None and sensitivity is not False:
        if adjoint is not None and adjoint is not False:
            raise EagleValueError("eagle.ode: pass sensitivity= (forward mode) or adjoint= (reverse mode), not both")
        return _sensitivity.solve(fun, t_span, y0, args, sensitivity, events, atol, dtype, common, distributed)
    if adjoint is not None and adjoint is not False:
        if distributed is not None and distributed is not False:
            raise EagleValueError("eagle.ode: adjoint= keeps each sample's tape on its own device: it does not take "
                                  "distributed= (split the samples yourself, one AdjointSolver a rank)")
        return _adjoint.AdjointSolver(fun, t_span=t_span, n_state=y0.shape[-1], n_args=len(args), events=events,
                                      atol=atol, dtype=dtype, capacity=adjoint, **common).solve(y0, args)
    solver = Solver(fun, t_span=t_span, n_state=y0.shape[-1], n_args=_check.widths_of(args), method=method, t_eval=t_eval,
                    events=events, rtol=rtol, atol=atol, dt=dt, adaptive=adaptive, max_steps=max_steps,
                    first_step=first_step, max_step=max_step, dtype=dtype, backend=backend, exact=exact,
                    fast_math=fast_math, controller=controller, progress=progress, save=save, callbacks=callbacks,
                    max_events=max_events, jac=jac)
    return solver.solve(y0, args, distributed=distributed)


def _events_list(events):
    """events as a list (one callable, a list, or None), for the refusal above only."""
    if events is None:
        return []
    return list(events) if isinstance(events, (list, tuple)) else [events]
