"""Ensembles of stochastic differential equations, dy = a(t, y) dt + b(t, y) dW, one path per lane,
on the same machinery as eagle.ode's fixed-step solves: :class:`SdeSolver` (compile once, solve
again and again) and :func:`solve_sde` (one call).

Noise is diagonal: ``diffusion`` returns d values b_k(t, y) and component k is driven by its own
Brownian motion W_k, independent of the others (Kloeden & Platen's diagonal noise, b_k depending
on y through y_k alone where Milstein's order 1 is wanted). The increments are
dW_k = sqrt(h) z_k with z_k the standard normals of <eagle/random.h> (Philox4x32-10, Box-Muller),
keyed by (seed, sample, draw). A path's normals are one stream, step s taking its numbers
s d .. s d + d - 1, number m being number m % 2 of block (draw) m / 2 of eagle_rng_normal2 in
float64, number m % 4 of block m / 4 of eagle_rng_normal4f in float32 (every normal drawn is used:
a one-component path draws a block every second step). So a path's numbers depend on neither the
lane that runs it, nor the launch, nor the kind.

Methods (fixed steps h = dt; the last step is shortened to land on t1):
  EulerMaruyama  y + a h + b dW                                   strong order 1/2, weak order 1
  Milstein       the derivative-free (Runge-Kutta) Milstein scheme of Kloeden & Platen (1992),
                 eq. 11.1.5: y + a h + b dW + (b(t, ybar) - b(t, y)) (dW^2 - h) / (2 sqrt(h)),
                 ybar = y + a h + b sqrt(h): strong order 1, weak order 1, one more diffusion
                 evaluation a step and no derivative of b.

Events g(t, y) are watched at the step ends only (discrete monitoring, the convention of a barrier
watched once a step): g changing sign between two step ends (scipy's direction rule) is a crossing
at the later step end, reported at that time with the state there; no interpolation. A terminal
event stops the path there (status 1) and the drain gives its lane the next path.

t_eval points must lie on the step grid (t0 + k dt, to 1e-9 of dt, or t1 itself); the state after
step k is stored for them.

A method is a scheme of the one ensemble run (eagle/ode/_run.py; the interface in
eagle/ode/SCHEMES.md): the C of one step from the path's normals, framed (fixed steps on the grid
t0 + k dt, events and t_eval at step ends, per-path or shared t0, t1, y0 and arguments, the seed
in Q) by eagle/ode/_frame.py. Drift, diffusion and the events are traced by eagle/ode/_rhs.py as
``fun`` is.
"""
import math

import numpy as np

from ..errors import EagleTypeError, EagleValueError
from . import _check, _rhs
from ._run import Front, Run
from ._solution import OdeSolution

#: name -> (description, strong order, weak order, diffusion evaluations a step)
SDE_METHODS = {
    "EulerMaruyama": ("Euler-Maruyama", 0.5, 1.0, 1),
    "Milstein": ("derivative-free Milstein (Kloeden-Platen 11.1.5)", 1.0, 1.0, 2),
}
NOISES = ("diagonal",)


class SdeMethod:
    def __init__(self, name):
        self.name = name
        self.description, self.strong_order, self.weak_order, self.diffusion_evals = SDE_METHODS[name]


class SdeSolution(OdeSolution):
    """Per-path results of :func:`eagle.ode.solve_sde` (N paths, d components): the fields of
    :class:`OdeSolution` (``t``, ``y``, ``status``, ``failure``, ``ys``, ``t_events``,
    ``y_events``, ``n_events``, ``source``) and

    n_steps : (N,) int, the steps each path took (fewer than the grid's where it stopped)
    nfev : (N,) int, drift and diffusion evaluations (n_steps x (1 + the method's diffusion calls))
    noise : (N, d), W_t - W_t0 of each path's Brownian motion at its end (``return_noise=True``)
    """

    @property
    def n_steps(self):
        return self._irow("NACC").copy()

    n_accepted = n_steps

    @property
    def nfev(self):
        return self.n_steps * (1 + self._view.scheme.method.diffusion_evals)

    @property
    def n_rejected(self):
        return np.zeros_like(self.n_steps)

    @property
    def noise(self):
        w = self._rows()[0]
        if "WN" not in w:
            return None
        return np.ascontiguousarray(self._host("W", self._W)[w["WN"]:w["WN"] + self._view.n_state].T)

    def __repr__(self):
        s = self.status
        return (f"<eagle.ode.SdeSolution {self.method}: {s.size} paths, {int((s == 0).sum())} reached t1, "
                f"{int((s == 1).sum())} stopped by an event, {int((s < 0).sum())} failed>")


class SdeScheme:
    """Euler-Maruyama or derivative-free Milstein with diagonal noise, as a scheme of the run:
    fixed steps, no dense output (events and t_eval at step ends), normals from <eagle/random.h>."""
    prefix = "sde"
    dense = False
    random = True
    error_order = None
    solution = SdeSolution

    def __init__(self, method, *, d, real, return_noise):
        self.method, self.name, self.d, self.real = method, method.name, d, real
        self.return_noise = return_noise

    def w_rows(self, d):
        return (("WN", d if self.return_noise else 0),)

    def helpers(self, fr):
        L = fr.L
        if self.real == "double":
            block, per, gen, pick = "eagle_rng_double2", 2, "eagle_rng_normal2", "(m & 1) ? c->p.y : c->p.x"
        else:
            block, per, gen, pick = ("eagle_rng_float4", 4, "eagle_rng_normal4f",
                                     "(m & 3) == 0 ? c->p.x : (m & 3) == 1 ? c->p.y : (m & 3) == 2 ? c->p.z : c->p.w")
        out = [f"/* The path's normals are one stream: normal m is number m % {per} of Philox block m / {per} "
               f"(<eagle/random.h>'s {gen}),",
               " * and step `step` takes numbers step * D .. step * D + D - 1. The block last drawn is kept, so a",
               f" * path with D < {per} draws one block every {per} / D steps (a call starts with none kept). */",
               f"typedef struct {{ int64_t block; {block} p; }} sde_rng_cache;",
               "EAGLE_FN void sde_normals(const uint64_t seed, const uint64_t sample, const int64_t step,",
               "                          sde_rng_cache* c, ode_real* z)",
               "{",
               "    for (int k = 0; k < D; ++k) {",
               "        const int64_t m = step * D + k;",
               f"        const int64_t blk = m / {per};",
               f"        if (blk != c->block) {{ c->p = {gen}(seed, sample, (uint64_t)blk); c->block = blk; }}",
               f"        z[k] = {pick};",
               "    }",
               "}",
               "/* One step of the method from (t, y) over hh (sq = sqrt(hh)) with the normals z: ynew, and the",
               " * Brownian increments dw = sq z. */",
               "ODE_FN void sde_step_one(const ode_real t, const ode_real hh, const ode_real sq, const ode_real* y,",
               "                           const ode_real* z, const ode_real* a, ode_real* ynew, ode_real* dw)",
               "{",
               "    ode_real f[D], g[D];",
               "    sde_user_a(t, y, a, f);",
               "    sde_user_b(t, y, a, g);",
               "    for (int k = 0; k < D; ++k) dw[k] = sq * z[k];"]
        if self.method.name == "EulerMaruyama":
            out.append("    for (int k = 0; k < D; ++k) ynew[k] = y[k] + f[k] * hh + g[k] * dw[k];")
        else:  # derivative-free Milstein: the difference of b at the supporting value stands for b b' sqrt(h)
            out += ["    ode_real ybar[D], gb[D];",
                    "    for (int k = 0; k < D; ++k) ybar[k] = y[k] + f[k] * hh + g[k] * sq;",
                    "    sde_user_b(t, ybar, a, gb);",
                    f"    const ode_real half_over_sq = {L(0.5)} / sq;",
                    "    for (int k = 0; k < D; ++k)",
                    "        ynew[k] = y[k] + f[k] * hh + g[k] * dw[k] + (gb[k] - g[k]) * ((dw[k] * dw[k] - hh) * half_over_sq);"]
        out.append("}")
        return "\n".join(out)

    def init(self, fr):
        return []

    def init_rows(self, fr):
        return [f"    for (int k = 0; k < D; ++k) {fr.W('WN', 'k')} = 0;"] if self.return_noise else []

    def call_start(self, fr):
        out = ["    const uint64_t seed = ((uint64_t)Q[Q_SEED_HI] << 32) | (uint64_t)Q[Q_SEED_LO];",
               "    const ode_real sqdt = ODE_SQRT(dt);",
               "    ode_real z[D], dw[D];",
               "    sde_rng_cache rc;",
               "    rc.block = -1;",
               "    (void)dw;"]
        if self.return_noise:
            out += ["    ode_real wn[D];", f"    for (int k = 0; k < D; ++k) wn[k] = {fr.W('WN', 'k')};"]
        return out

    def attempt(self, fr):
        return ["        sde_normals(seed, (uint64_t)Q[Q_FIRST] + (uint64_t)i, nacc, &rc, z);",
                "        sde_step_one(t, hh, last ? ODE_SQRT(hh) : sqdt, y, z, a, ynew, dw);",
                f"        nfev += {1 + self.method.diffusion_evals};"]

    def accepted(self, fr):
        return ["        for (int k = 0; k < D; ++k) wn[k] += dw[k];"] if self.return_noise else []

    def call_end(self, fr):
        return [f"    for (int k = 0; k < D; ++k) {fr.W('WN', 'k')} = wn[k];"] if self.return_noise else []


class SdeSolver(Front):
    """An SDE ensemble solver compiled once and solved again and again (new y0, args or seed;
    same drift, diffusion, method, grid and outputs). See :func:`solve_sde` for the parameters;
    ``n_state`` and ``n_args`` say what drift and diffusion take (else they are learnt from the
    first solve's y0 and args).

    Attributes: ``source`` (the generated C), ``method``, ``t_eval``, ``events``, ``n_steps``
    (the grid's steps)."""

    def __init__(self, drift, diffusion, *, t_span, dt=None, n_state=None, n_args=None, method="EulerMaruyama",
                 noise="diagonal", seed=0, t_eval=None, events=None, dtype="float64", backend=None, exact=False,
                 progress=None, return_noise=False, steps_per_call=None, workers=None):
        for what, f in (("drift", drift), ("diffusion", diffusion)):
            if not (callable(f) or isinstance(f, _rhs.C)):
                raise EagleTypeError(f"eagle.ode.solve_sde: {what} must be a callable {what}(t, y, *args) or "
                                     f"eagle.ode.C(...), got a {type(f).__name__}")
        if not isinstance(method, str) or method not in SDE_METHODS:
            raise EagleValueError(f"eagle.ode.solve_sde: method must be one of {', '.join(SDE_METHODS)}, got "
                                  f"{method!r}")
        if not isinstance(noise, str) or noise not in NOISES:
            raise EagleValueError(f"eagle.ode.solve_sde: noise must be 'diagonal' (diffusion returns d values, "
                                  f"component k driven by its own W_k), got {noise!r}")
        if dt is None:
            raise EagleValueError("eagle.ode.solve_sde: dt= (the fixed step) is required: the SDE methods take "
                                  "fixed steps")
        m = self.method = SdeMethod(method)
        self.dt = _check.positive(dt, "dt")
        self.seed = _check.seed_of(seed)
        self.return_noise = bool(return_noise)
        self.events = _check.events_of(events, lambda g: isinstance(g, _rhs.C))
        self._run = Run("eagle.ode.solve_sde", [("drift", drift, "sde_user_a"), ("diffusion", diffusion, "sde_user_b")],
                        lambda d, real: SdeScheme(m, d=d, real=real, return_noise=self.return_noise), None,
                        method=method, events=self.events, t_span=t_span, t_eval=t_eval, dtype=dtype, backend=backend,
                        exact=exact, fast_math=False, steps_per_call=steps_per_call, workers=workers, progress=progress,
                        values=dict(dt=self.dt, max_steps=_check.MAX_STEPS), grid=True, seed=self.seed,
                        n_state=n_state, n_args=n_args)
        self.t0, self.t1, self.t_eval, self.dtype = self._run.t0, self._run.t1, self._run.t_eval, self._run.dtype

    @property
    def n_steps(self):
        """The grid's steps from t0 to t1 (the longest span's, with per-path ends)."""
        return math.ceil(float(np.max(np.asarray(self.t1) - np.asarray(self.t0))) / self.dt - 1e-9)

    def solve(self, y0, args=(), *, seed=None, n_paths=None, progress=None, distributed=None):
        """Integrate every path from ``y0`` ((N, d) or (d,)) with ``args`` (numbers or (N,) arrays)
        under ``seed`` (default: the solver's); ``n_paths`` = N where neither y0 nor args says it
        (a shared y0 and number args: N paths from one start); returns an :class:`SdeSolution`.
        ``distributed`` as :meth:`eagle.ode.Solver.solve`'s (a path's numbers depend only on the
        seed and its index, so the gathered paths are the one-process paths)."""
        return self._run.solve(y0, args, seed=seed, n_paths=n_paths, progress=progress, distributed=distributed)


def solve_sde(drift, diffusion, t_span, y0, dt=None, method="EulerMaruyama", noise="diagonal", seed=0, t_eval=None,
              events=None, args=(), backend=None, dtype=None, exact=False, progress=None, *, n_paths=None,
              return_noise=False, distributed=None):
    """Simulate N independent paths of the Ito SDE dy = drift(t, y) dt + diffusion(t, y) dW at once,
    one per lane of the arrays' device, with fixed steps.

    Parameters
    ----------
    drift, diffusion : callable ``f(t, y, *args)`` or :class:`eagle.ode.C`
        ONE path's drift a(t, y) and diffusion b(t, y), each returning d values, traced like
        ``solve_ivp``'s fun. Noise is diagonal: component k moves by b_k dW_k, the W_k independent.
        For Milstein's strong order 1, b_k must depend on y through y_k alone.
    t_span : (t0, t1), shared by every path, or t0 and/or t1 (N,) arrays of per-path times.
    y0 : array (N, d) or (d,)  (its dtype and where it lives pick precision and backend).
    dt : the step (required, > 0); the last step is shortened to land on t1.
    method : "EulerMaruyama" (strong order 1/2, weak 1) or "Milstein" (derivative-free, strong 1).
    noise : "diagonal" (the only form so far).
    seed : int in 0..2**64-1. Path i's normals are <eagle/random.h>'s for (seed, i, draw); the same
        seed gives the same paths on every lane count and (in exact mode) every kind.
    t_eval : times on the step grid t0 + k dt (or t1), optional: sol.ys (N, d, T) holds the state
        after the step that lands on each (nan after a path stopped).
    events : callables g(t, y, *args) with scipy's ``terminal`` and ``direction``, optional,
        watched at the step ends: a sign change of g between two step ends is reported at the
        later one (``sol.t_events``, ``sol.y_events``: the first crossing per path); a terminal
        event stops the path there (status 1). A barrier: ``g = lambda t, y: y[0] - B``.
    args : numbers or (N,) arrays passed after (t, y).
    backend, dtype, exact, progress, distributed : as :func:`eagle.ode.solve_ivp`'s.
    n_paths : N, where y0 is (d,) and every argument a number (else the arrays say it; they must
        agree). A shared y0 and number arguments are sent to the device once, not N times.
    return_noise : keep each path's Brownian motion W_t1 - W_t0 (``sol.noise``, (N, d)), e.g. to
        compare with an exact solution driven by the same path.

    Returns
    -------
    SdeSolution
        ``t``, ``y``, ``status`` (0 reached t1, 1 terminal event, -1 non-finite state), ``failure``,
        ``n_steps``, ``nfev``, ``ys``, ``t_events``, ``y_events``, ``n_events``, ``noise``, ``source``.
    """
    y0 = _check.y0_of(y0)
    args = _check.args_of(args)
    if dtype is None:
        dtype = "float32" if y0.dtype == "float32" else "float64"
    solver = SdeSolver(drift, diffusion, t_span=t_span, dt=dt, n_state=y0.shape[-1], n_args=_check.widths_of(args), method=method,
                       noise=noise, seed=seed, t_eval=t_eval, events=events, dtype=dtype, backend=backend,
                       exact=exact, progress=progress, return_noise=return_noise)
    return solver.solve(y0, args, n_paths=n_paths, distributed=distributed)
