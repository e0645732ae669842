"""Summaries of each sample's trajectory computed during the solve (issue 41: ``save=``), so that a
solve keeps O(N) numbers instead of (N, d, T) states: the plan (which reductions of which
components, and a user reduction ``g`` integrated) and the C that updates them after every
accepted step. Nothing here knows about devices; the step (eagle/ode/_frame.py) calls the C.

The reductions, over each sample's trajectory from t0 to where it ended (t1, a terminal event, or
where it failed), on the method's dense output:
- ``max``/``min`` and ``argmax``/``argmin`` (the time): the states at t0 and at every step's end
  are candidates; where a component's derivative changes sign within a step (f at the step's
  start and end: the FSAL stage, one more evaluation of f for methods without one), the extremum
  inside is found on the dense output (the Illinois method on its central difference, to about
  1e-9 of the step in double). Around an event or callback that changes the state, the states
  before and after are both candidates.
- ``integral`` (of y_k dt): each step's dense output integrated exactly (the interpolant's own
  quadrature): for RK23, RK45 and Tsit5 by its weights on the step's stages (no extra work but a
  sum), else by Gauss-Legendre with enough nodes to be exact for the interpolating polynomial (and
  so for a step cut short by an event); ``mean`` is the integral over the time the sample ran.
- ``final``: the state where the sample ended (sol.y's columns).
- ``g``: a user reduction g(t, y, *args) -> m values (traced like ``fun``), integrated over time
  by the same Gauss-Legendre rule (at least 3 nodes: exact for g polynomial of degree 5 along the
  step; local error O(h^7) otherwise).
Methods whose dense output needs extra stages (DOP853, Vern7, Vern9) evaluate them at every step
when an integral or g is asked for (3, 6, 10 more evaluations of f a step); g always needs the
dense output.
"""
import math
import numbers

import numpy as np

from ..errors import EagleTypeError, EagleValueError
from . import _rhs

KINDS = ("max", "min", "argmax", "argmin", "integral", "mean", "final")


class Plan:
    """Which components each reduction covers (sorted tuples), and the user reduction."""

    def __init__(self, comps, g):
        self.comps = comps  # kind -> tuple of component indices
        self.g = g          # a callable or eagle.ode.C, or None
        self.g_rhs = None   # set by trace()
        self.mx = tuple(sorted(set(comps.get("max", ())) | set(comps.get("argmax", ()))))
        self.mn = tuple(sorted(set(comps.get("min", ())) | set(comps.get("argmin", ()))))
        self.it = tuple(sorted(set(comps.get("integral", ())) | set(comps.get("mean", ()))))

    @property
    def ng(self):
        return self.g_rhs.n_out if self.g_rhs is not None else 0

    @property
    def needs_dense(self):
        return bool(self.it) or self.g is not None

    def w_rows(self):
        return (("SMAX", 2 * len(self.mx)), ("SMIN", 2 * len(self.mn)), ("SINT", len(self.it)), ("SG", self.ng))

    def trace(self, d, na, real, arg_widths=None):
        """Trace ``g`` (its output count is what it returns)."""
        if self.g is None:
            return
        if isinstance(self.g, _rhs.C):
            raise EagleTypeError("eagle.ode: save's 'g' must be a Python callable g(t, y, *args) (its output count "
                                 "is what it returns); a C reduction is not supported")
        from ._trace import TraceError
        try:
            self.g_rhs = _rhs.build(self.g, "ode_sum_g", d, na, real, n_out=1, what="save['g']",
                                    arg_widths=arg_widths)
        except TraceError as e:
            import re
            m = re.search(r"returned (\d+) values", str(e))
            if not m:
                raise
            self.g_rhs = _rhs.build(self.g, "ode_sum_g", d, na, real, n_out=int(m.group(1)), what="save['g']",
                                    arg_widths=arg_widths)


def plan_of(save, d):
    """A :class:`Plan` from ``save``: a list of reduction names (every component) or a dict
    name -> component(s) (an int, a list of ints, or None for every component), with the key ``g``
    for a user reduction (a callable). None: no summaries."""
    if save is None:
        return None
    if isinstance(save, str):
        save = [save]
    if isinstance(save, (list, tuple)):
        save = {k: None for k in save}
    if not isinstance(save, dict) or not save:
        raise EagleTypeError(f"eagle.ode: save must be a list of reductions ({', '.join(KINDS)}) or a dict of them "
                             f"to component indices, got {save!r}")
    comps, g = {}, None
    for k, v in save.items():
        if k == "g":
            if not (callable(v) or isinstance(v, _rhs.C)):
                raise EagleTypeError(f"eagle.ode: save['g'] must be a callable g(t, y, *args), got a {type(v).__name__}")
            g = v
            continue
        if k not in KINDS:
            raise EagleValueError(f"eagle.ode: save has an unknown reduction {k!r}; the reductions are "
                                  f"{', '.join(KINDS)} and 'g' (a user function integrated over time)")
        if v is None:
            idx = tuple(range(d))
        else:
            vv = [v] if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v
            try:
                idx = tuple(int(x) for x in vv if not isinstance(x, bool) and isinstance(x, numbers.Integral))
                ok = len(idx) == len(vv) and len(idx) > 0
            except TypeError:
                ok = False
            if not ok:
                raise EagleValueError(f"eagle.ode: save[{k!r}] must be a component index, a list of them or None "
                                      f"(every component), got {v!r}")
            if any(not 0 <= x < d for x in idx):
                raise EagleValueError(f"eagle.ode: save[{k!r}] = {v!r} names a component outside 0..{d - 1} of "
                                      f"this {d}-component state")
        comps[k] = tuple(sorted(set(idx)))
    return Plan(comps, g)


def _gl(m):
    x, w = np.polynomial.legendre.leggauss(m)
    return [float(v) for v in (x + 1) / 2], [float(v) for v in w / 2]


def dense_degree(method):
    return {"linear": 1, "hermite": 3, "dop853": 7}.get(method.dense) or len(method.P[0])


class Gen:
    """The C of a plan in a solve: helpers (file scope), and the lines the step kernel runs. The
    lines use the step's names: t, hh, tn, tstop, y, ynew, K, Fd, prepared, a, nfev, and W_ rows."""

    def __init__(self, plan, method, real, lit, W):
        self.p, self.m, self.real, self.L, self.W = plan, method, real, lit, W
        m_int = math.ceil((dense_degree(method) + 1) / 2)
        self.nodes_int = _gl(m_int)
        self.nodes_g = _gl(max(m_int, 3))

    def helpers(self):
        p, L = self.p, self.L
        out = []
        if p.mx or p.mn:
            delta = 2.0 ** -8 if self.real == "float" else 2.0 ** -17
            out.append("\n".join([
                "/* The derivative (in theta) of component k of the step's dense output, by a central difference",
                " * (one-sided at the ends of [0, te]). */",
                "EAGLE_FN ode_real ode_sum_dy(ode_real F[ODE_NF][D], const ode_real* y, const ode_real* ynew,",
                "                             const ode_real hh, const ode_real th, const ode_real te, const int k)",
                "{",
                f"    const ode_real dl = {L(delta)};",
                "    const ode_real lo = th - dl < 0 ? 0 : th - dl, hi = th + dl > te ? te : th + dl;",
                "    ode_real ya[D], yb[D];",
                "    ode_dense_eval(F, y, ynew, hh, lo, ya);",
                "    ode_dense_eval(F, y, ynew, hh, hi, yb);",
                "    return (yb[k] - ya[k]) / (hi - lo);",
                "}",
                "/* The extremum of component k inside [0, te] of the step, where s * (its derivative) goes from",
                " * > 0 at 0 to < 0 at te (s = 1: a maximum, -1: a minimum): the root of the derivative by the",
                " * Illinois method; *v, *tv get its value and time if it beats *v (s * value larger). */",
                "EAGLE_FN void ode_sum_refine(ode_real F[ODE_NF][D], const ode_real* y, const ode_real* ynew,",
                "                             const ode_real t, const ode_real hh, const ode_real te, const int k,",
                "                             const ode_real s, const ode_real d0, const ode_real d1,",
                "                             ode_real* v, ode_real* tv)",
                "{",
                "    ode_real lo = 0, hi = te, flo = s * d0, fhi = s * d1, yt[D];",
                "    int side = 0;",
                "    for (int it = 0; it < 80; ++it) {",
                f"        if (hi - lo <= {L(8.0)} * ODE_EPS) break;",
                "        ode_real m = (flo * hi - fhi * lo) / (flo - fhi);",
                f"        if (!(m > lo && m < hi)) m = {L(0.5)} * (lo + hi);",
                "        const ode_real fm = s * ode_sum_dy(F, y, ynew, hh, m, te, k);",
                "        if (fm == 0) { lo = hi = m; break; }",
                "        if (fm < 0) {",
                f"            hi = m; fhi = fm; if (side == 1) flo *= {L(0.5)}; side = 1;",
                "        } else {",
                f"            lo = m; flo = fm; if (side == -1) fhi *= {L(0.5)}; side = -1;",
                "        }",
                "    }",
                f"    const ode_real th = {L(0.5)} * (lo + hi);",
                "    ode_dense_eval(F, y, ynew, hh, th, yt);",
                "    if (s * yt[k] > s * *v) { *v = yt[k]; *tv = t + th * hh; }",
                "}"]))
        return "\n\n".join(out)

    # the accumulators live in locals for a call of the step kernel
    def decl(self):
        p = self.p
        out = []
        for name, size in (("smax", len(p.mx)), ("tmax", len(p.mx)), ("smin", len(p.mn)), ("tmin", len(p.mn)),
                           ("sint", len(p.it)), ("sg", p.ng)):
            if size:
                out.append(f"    ode_real {name}[{size}];")
        return out

    def _rows(self):
        p = self.p
        return (("smax", "SMAX", 0, len(p.mx)), ("tmax", "SMAX", len(p.mx), len(p.mx)),
                ("smin", "SMIN", 0, len(p.mn)), ("tmin", "SMIN", len(p.mn), len(p.mn)),
                ("sint", "SINT", 0, len(p.it)), ("sg", "SG", 0, p.ng))

    def load(self):
        return self.decl() + [f"    for (int j = 0; j < {size}; ++j) {loc}[j] = {self.W(row, f'{off} + j')};"
                              for loc, row, off, size in self._rows() if size]

    def store(self):
        return [f"    for (int j = 0; j < {size}; ++j) {self.W(row, f'{off} + j')} = {loc}[j];"
                for loc, row, off, size in self._rows() if size]

    def init(self):
        """In the init kernel, after y (the initial state) and t0: the accumulators' first values."""
        p = self.p
        out = self.decl()
        for j, k in enumerate(p.mx):
            out.append(f"    smax[{j}] = y[{k}]; tmax[{j}] = t0;")
        for j, k in enumerate(p.mn):
            out.append(f"    smin[{j}] = y[{k}]; tmin[{j}] = t0;")
        if p.it:
            out.append(f"    for (int j = 0; j < {len(p.it)}; ++j) sint[j] = 0;")
        if p.ng:
            out.append(f"    for (int j = 0; j < {p.ng}; ++j) sg[j] = 0;")
        return out + self.store()

    def point(self, yv, tv, indent="        "):
        """``yv`` at time ``tv`` as a candidate for the extrema."""
        p = self.p
        out = []
        for j, k in enumerate(p.mx):
            out.append(f"{indent}if ({yv}[{k}] > smax[{j}]) {{ smax[{j}] = {yv}[{k}]; tmax[{j}] = {tv}; }}")
        for j, k in enumerate(p.mn):
            out.append(f"{indent}if ({yv}[{k}] < smin[{j}]) {{ smin[{j}] = {yv}[{k}]; tmin[{j}] = {tv}; }}")
        return out

    def step(self, fsal_stage, prep):
        """After an accepted step's events are located, before the state moves on: the
        accumulators over [t, tstop] (tstop = tn unless an event acts inside the step).
        ``fsal_stage``: the K slot holding f(tn, ynew) (None: evaluate it); ``prep``: the C
        statement that prepares the dense output once."""
        p, L = self.p, self.L
        out = ["        {  /* summaries over [t, tstop] */",
               "            const int whole = tstop == tn;",
               f"            const ode_real te = whole ? {L(1.0)} : (tstop - t) / hh;",
               "            ode_real yend[D];",
               "            if (whole) { for (int k = 0; k < D; ++k) yend[k] = ynew[k]; }",
               f"            else {{ {prep} ode_dense_eval(Fd, y, ynew, hh, te, yend); }}"]
        if p.mx or p.mn:
            out += ["            ode_real fend[D];"]
            if fsal_stage is not None:
                out.append(f"            if (whole) {{ for (int k = 0; k < D; ++k) fend[k] = K[{fsal_stage}][k]; }}")
            else:
                out.append("            if (whole) { ode_f(tn, ynew, a, fend); nfev += 1; }")
            out += ["            else { for (int k = 0; k < D; ++k) fend[k] = ode_sum_dy(Fd, y, ynew, hh, te, te, k) / hh; }"]
            for j, k in enumerate(p.mx):
                out += [f"            if (K[0][{k}] > 0 && fend[{k}] < 0) {{",
                        f"                {prep}",
                        f"                ode_sum_refine(Fd, y, ynew, t, hh, te, {k}, {L(1.0)}, hh * K[0][{k}], hh * fend[{k}], "
                        f"&smax[{j}], &tmax[{j}]);",
                        "            }"]
            for j, k in enumerate(p.mn):
                out += [f"            if (K[0][{k}] < 0 && fend[{k}] > 0) {{",
                        f"                {prep}",
                        f"                ode_sum_refine(Fd, y, ynew, t, hh, te, {k}, {L(-1.0)}, hh * K[0][{k}], hh * fend[{k}], "
                        f"&smin[{j}], &tmin[{j}]);",
                        "            }"]
            out += ["    " + x for x in self.point("yend", "tstop")]
        m = self.m
        # the interpolant's exact integral over a whole step from the stages alone, where the dense
        # output needs no stage beyond the step's ("P" without extra stages: RK23, RK45, Tsit5):
        # int_0^1 y(t + th h) dth = y + h sum_s K_s sum_j P[s][j] / (j + 2); no prepare, no nodes
        direct = p.it and m.dense == "P" and not m.C_extra
        if direct:
            wts = [sum(c / (j + 2) for j, c in enumerate(row)) for row in m.P]
            out.append("            if (whole) {")
            for j, k in enumerate(p.it):
                terms = " + ".join(f"{L(wv)} * K[{sidx}][{k}]" for sidx, wv in enumerate(wts) if wv != 0.0) or "0"
                out.append(f"                sint[{j}] += hh * (y[{k}] + hh * ({terms}));")
            out.append("            }")
        if p.it or p.ng:
            gl_int = "!whole" if direct else "1"
            out += ["            ode_real yq[D];", "            (void)yq;"]
            if p.ng:
                out.append(f"            ode_real gq[{p.ng}];")
            if p.it:
                out.append(f"            if ({gl_int}) {{")
                out.append(f"                {prep}")
                for x, w in zip(*self.nodes_int):
                    out.append(f"                ode_dense_eval(Fd, y, ynew, hh, te * {L(x)}, yq);")
                    for j, k in enumerate(p.it):
                        out.append(f"                sint[{j}] += {L(w)} * te * hh * yq[{k}];")
                out.append("            }")
            if p.ng:
                out.append(f"            {prep}")
                for x, w in zip(*self.nodes_g):
                    out.append(f"            ode_dense_eval(Fd, y, ynew, hh, te * {L(x)}, yq);")
                    out.append(f"            ode_sum_g(t + te * {L(x)} * hh, yq, a, gq);")
                    out.append(f"            for (int j = 0; j < {p.ng}; ++j) sg[j] += {L(w)} * te * hh * gq[j];")
        out.append("        }")
        return out


def results(plan, W, rows, t0, t_end, y):
    """The host's dict of summaries from the W plane's rows (host numpy (NW, N)), the start time(s)
    ``t0`` (a number or (N,)), each sample's end time ``t_end`` (N,) and final state ``y`` (N, d):
    kind -> (N, len(components)), and 'g' -> (N, m)."""
    out = {}
    c = plan.comps
    mx = W[rows["SMAX"]:rows["SMAX"] + 2 * len(plan.mx)] if plan.mx else None
    mn = W[rows["SMIN"]:rows["SMIN"] + 2 * len(plan.mn)] if plan.mn else None
    it = W[rows["SINT"]:rows["SINT"] + len(plan.it)] if plan.it else None

    def pick(block, allc, want, off=0):
        return np.ascontiguousarray(np.stack([block[off + allc.index(k)] for k in want], axis=1))
    if "max" in c:
        out["max"] = pick(mx, plan.mx, c["max"])
    if "argmax" in c:
        out["argmax"] = pick(mx, plan.mx, c["argmax"], len(plan.mx))
    if "min" in c:
        out["min"] = pick(mn, plan.mn, c["min"])
    if "argmin" in c:
        out["argmin"] = pick(mn, plan.mn, c["argmin"], len(plan.mn))
    if "integral" in c:
        out["integral"] = pick(it, plan.it, c["integral"])
    if "mean" in c:
        span = (np.asarray(t_end) - np.asarray(t0, np.float64))[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            out["mean"] = pick(it, plan.it, c["mean"]) / span
    if "final" in c:
        out["final"] = np.ascontiguousarray(y[:, list(c["final"])])
    if plan.ng:
        out["g"] = np.ascontiguousarray(W[rows["SG"]:rows["SG"] + plan.ng].T)
    return out
