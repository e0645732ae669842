"""The implicit (stiff) methods of eagle/ode/_stiff_methods.py as a scheme of the one ensemble run
(eagle/ode/_run.py; the interface: eagle/ode/SCHEMES.md): the frame (eagle/ode/_frame.py) puts
the step loop, the controller, t_eval, events and status around it; this module writes the
attempted step (Jacobian, LU, stages, error norm), the dense output and the bookkeeping.

Per sample, in the lane's own memory: the Jacobian J and f_t (``JT``: D*D + D reals, computed at
most once per (t, y): a rejected step reuses them), the LU factors of the iteration matrix
(``LUm``: D*D reals and D pivots, refactored when h changes) -- see eagle/ode/_linalg.py.

The Jacobian (:class:`Jacobian`) is, in order of preference: the user's ``jac=`` (traced like
fun, or eagle.ode.C), else derived from fun's trace (eagle/ode/_derive.py: exact, structural zeros
skipped), else -- fun given in C -- forward differences with scipy's step (sqrt(eps) max(1, |y_j|),
sign of y_j), D + 2 evaluations of f. f_t comes from the trace when fun is traced, else by a
forward difference in t.

A singular iteration matrix (or a non-finite J) and a Newton iteration that diverges or does not
converge in NEWTON_MAX iterations reject the step (h shrinks by the controller's smallest factor,
0.2); a sample whose step then falls below the floor fails alone with failure code
FAIL_SINGULAR or FAIL_NEWTON.

Kvaerno5 (the ESDIRK scheme) evaluates J at every step's (t, y) and factors W for every new h, as
the Rosenbrock methods must -- unless the environment variable EAGLE_ODE_KVAERNO_REUSE is 1 when
the Solver is made: it then keeps J and W's LU across steps while Newton converges (the strategy of
Hairer and Wanner, Solving ODEs II, IV.8, with OrdinaryDiffEq's rule for W's step size):

- J is evaluated only when there is none, when the last attempt's Newton iterations contracted
  slower than THETA_SLOW (a J that no longer fits the solution; not again at the same (t, y)
  after a rejection by the error), or when Newton failed (diverged, stalled, or not converged in
  NEWTON_MAX) or W was singular with a J from an earlier step: the attempt is then retried at
  once, same h, with J fresh at (t, y), before it is rejected (and h shrunk);
- W = I - h gamma J is refactored only when the step moved away from the h it was factored for by
  more than LU_WINDOW (|h / h_LU - 1| > 0.2, OrdinaryDiffEq's new_W_dt_cutoff 1/5), when J is new,
  or when Newton failed with a fresh J but W of another h (retried with W of this h);
- with W of h_LU != h, each Newton correction is scaled by 2 / (1 + h / h_LU): the exact Newton
  step for a component where h gamma J dominates is the stale one times h_LU / h, for a non-stiff
  one the stale one itself; the scaling is the mean that keeps both contraction rates below
  |1 - r| / (1 + r), r = h / h_LU, about 0.1 in the window.

Why it is not the default (measured on cpu, counts per sample; tests/test_ode_stiff.py checks the
reuse itself): eagle's J is exact, derived and sparse, and its LU skips structural zeros, so an
evaluation of J and a factorization of W cost about what one or two Newton iterations do, while a
kept J or W slows Newton's contraction (theta ~ 0.1 where a fresh one gives ~ 1e-3) and the strict
kappa (1e-3) then takes 2-4 more iterations a stage. ROBER (rtol 1e-6): 52 J and 100 LUs instead
of 142 and 146, but 2 814 f evaluations instead of 2 228; HIRES (rtol 1e-8): 27 J, 62 LUs instead
of 142, 144, f 3 592 instead of 2 070; POLLU (d = 20), a 64-point heat chain and a dense nonlinear
d = 24 system: the same, 1.5 to 2.4 times the time. It would pay where J is costly (finite
differences of a C rhs, D + 1 f evaluations) or the LU dense and large.

With the reuse on, Kvaerno5's J lives in a plane of its own (``JS``: D*D reals a sample, 8 D^2
bytes in float64 -- 72 B for ROBER, 512 B for HIRES, 32 KiB at D = 64, i.e. 32 GiB for 2^20
samples of D = 64), never read back to the host; W rows JT0 (the time J was evaluated at; nan: none, or a new one is
due) and JLUH (the h of W's LU; 0: none) say what it is. The LU is not stored: a call of the step
body refactors it from J and JLUH at its start (the same inputs, the same bits, so the steps do not
depend on how they are split between calls); ``sol.nlu`` does not count those refactorizations.
Every implicit method counts its Jacobian evaluations and LU factorizations per sample in W rows
NJEV and NLU (``sol.njev``, ``sol.nlu``); method="auto"'s stiffness tests are not counted."""
import os

from ..errors import EagleValueError
from . import _linalg, _rhs
from ._rk import FSAL_COUNT, RungeKutta, hermite_eval

FAIL_SINGULAR, FAIL_NEWTON = 9, 10  # 7, 8: the events' affect and max_events codes (_frame.py)
NEWTON_MAX = 8      # simplified Newton iterations per stage before the step is rejected
RADAU_NEWTON_MAX = 6  # Radau's (scipy's NEWTON_MAXITER)
MAX_AUGMENTED = 64 * 64 * 4  # entries of the Jacobian block a sensitivity solve keeps per sample
NEWTON_KAPPA = 1e-3  # converged when eta * |dz| <= kappa (|.|: the error norm's scaled RMS)
# Kvaerno5's reuse of J and W across steps (see above): on when the environment variable is "1"
REUSE_ENV = "EAGLE_ODE_KVAERNO_REUSE"
THETA_SLOW = 0.2     # a step whose Newton contracted slower than this asks for a new J at the next
LU_WINDOW = 0.2      # W is refactored when |h / h_LU - 1| exceeds this

JAC_DERIVED, JAC_USER, JAC_FD = "derived from the trace", "given (jac=)", "finite differences"


def reuse_jacobian():
    """Whether Kvaerno5 keeps J and W across steps (EAGLE_ODE_KVAERNO_REUSE: "1" on; unset, "" or
    "0" off; read when a solver builds its scheme)."""
    v = os.environ.get(REUSE_ENV, "").strip()
    if v not in ("", "0", "1"):
        raise EagleValueError(f"eagle.ode: {REUSE_ENV}={v!r}: set it to 1 (Kvaerno5 keeps its Jacobian across "
                              f"steps) or 0 / unset (a new Jacobian every step)")
    return v == "1"


class Jacobian:
    """C text defining ``ode_jac(t, y, a, JT, nfev)`` (J row-major into JT[0 .. D*D), f_t into
    JT[D*D .. D*D + D); with a pattern only its entries are written: JT is zeroed once by the
    caller), the pattern (None: dense) and ``kind`` (one of the JAC_* strings)."""

    def __init__(self, text, pattern, kind, n_ops=None):
        self.text, self.pattern, self.kind, self.n_ops = text, pattern, kind, n_ops


def _fd_dt(d):
    return ["    {",
            "        ode_real f0[D], f1[D];",
            "        ode_f(t, y, a, f0);",
            "        ode_real ht = ODE_SQRT(ODE_EPS) * (ODE_FABS(t) > 1 ? ODE_FABS(t) : (ode_real)1);",
            "        const ode_real tp = t + ht;",
            "        ht = tp - t;",
            "        ode_f(tp, y, a, f1);",
            "        for (int k = 0; k < D; ++k) JT[D * D + k] = (f1[k] - f0[k]) / ht;",
            "        *nfev += 2;",
            "    }"]


def jacobian(fun, jac, rhs, n_state, n_args, real, arg_widths=None, ld=None):
    """The :class:`Jacobian` of a solve: ``rhs`` is fun's _rhs.Rhs (``rhs.traced``: its
    TracedFunction, None when fun is C). ``ld`` < n_state: a system with its forward
    sensitivities, of which the first ld columns of J alone are written (rows of ld: the block
    column eagle/ode/_linalg.py's solve_w reads), then f_t; derived from the trace only."""
    d = n_state
    if ld is not None and ld != d:
        traced = getattr(rhs, "traced", None)
        if jac is not None or traced is None:
            raise EagleValueError("eagle.ode: sensitivities of an implicit method derive the Jacobian of y and its "
                                  "sensitivities from fun's trace: jac= is not taken with sensitivity=")
        from ._derive import derive
        dv = derive(traced)
        text = dv.c_function("ode_user_jac", ("jac", "dt"), columns=ld)
        head = ("ODE_LA_FN void ode_jac(const ode_real t, const ode_real* y, const ode_real* a, ode_real* JT, "
                "int32_t* nfev)")
        glue = f"{head}\n{{\n    (void)nfev;\n    ode_user_jac(t, y, a, JT);\n}}"
        return Jacobian(text + "\n" + glue, [(i, j) for i, j in dv.pattern if j < ld], JAC_DERIVED)
    head = "ODE_LA_FN void ode_jac(const ode_real t, const ode_real* y, const ode_real* a, ode_real* JT, int32_t* nfev)"
    traced = getattr(rhs, "traced", None)
    if jac is not None:
        if isinstance(jac, _rhs.C):
            user = _rhs.build(jac, "ode_user_jac_y", d, n_args, real, n_out=d * d, what="jac", arg_widths=arg_widths)
        else:
            if not callable(jac):
                raise EagleValueError(f"eagle.ode: jac must be a callable jac(t, y, *args) returning a ({d}, {d}) "
                                      f"array, or eagle.ode.C(...); got a {type(jac).__name__}")
            user = _rhs.build(_flat_jac(jac, d), "ode_user_jac_y", d, n_args, real, n_out=d * d, what="jac",
                              arg_widths=arg_widths)
        body = ["    ode_user_jac_y(t, y, a, JT);"]
        text = [user.text]
        if traced is not None:
            from ._derive import derive
            dv = derive(traced)
            text.append(dv.c_function("ode_user_dfdt", ("dt",)))
            body.append("    ode_user_dfdt(t, y, a, JT + D * D);")
        else:
            body += _fd_dt(d)
        return Jacobian("\n\n".join(text) + f"\n{head}\n{{\n" + "\n".join(body) + "\n}", None, JAC_USER)
    if traced is not None:
        from ._derive import derive
        dv = derive(traced)
        text = dv.c_function("ode_user_jac", ("jac", "dt"))
        glue = f"{head}\n{{\n    (void)nfev;\n    ode_user_jac(t, y, a, JT);\n}}"
        return Jacobian(text + "\n" + glue, dv.pattern, JAC_DERIVED)
    body = ["    ode_real f0[D], f1[D], yp[D];",
            "    ode_f(t, y, a, f0);",
            "    for (int k = 0; k < D; ++k) yp[k] = y[k];",
            "    for (int j = 0; j < D; ++j) {  /* scipy's step: sqrt(eps) max(1, |y_j|), the sign of y_j */",
            "        const ode_real ay = ODE_FABS(y[j]);",
            "        ode_real hj = ODE_SQRT(ODE_EPS) * (ay > 1 ? ay : (ode_real)1);",
            "        if (y[j] < 0) hj = -hj;",
            "        yp[j] = y[j] + hj;",
            "        hj = yp[j] - y[j];",
            "        ode_f(t, yp, a, f1);",
            "        for (int i = 0; i < D; ++i) JT[i * D + j] = (f1[i] - f0[i]) / hj;",
            "        yp[j] = y[j];",
            "    }",
            "    *nfev += D + 1;"]
    body += _fd_dt(d)
    return Jacobian(f"{head}\n{{\n" + "\n".join(body) + "\n}", None, JAC_FD)


def _flat_jac(jac, d):
    """``jac`` as a traced function of d*d outputs, its result's shape checked."""
    import numpy as np

    def flat(t, y, *args):
        r = jac(t, y, *args)
        shape = np.shape(np.asarray(r, dtype=object))
        if shape != (d, d):
            raise EagleValueError(f"jac must return a ({d}, {d}) array (d = n_state), got shape {shape}")
        return np.asarray(r, dtype=object).reshape(-1)
    flat.__name__ = getattr(jac, "__name__", "jac")
    flat.__wrapped__ = jac
    return flat


class StiffScheme(RungeKutta):
    """The scheme of an implicit method (a StiffMethod): RungeKutta's first step and FSAL copy, its
    own attempt, dense output and per-lane state. ``fun``/``jac``: the user's right-hand side and
    Jacobian (None: derived); the run hands the traced right-hand side to :meth:`bind`.
    ``n_control`` < d: y's d components of a system of y and its forward sensitivities (a
    Rosenbrock method alone): the error norm and the first step see y only, and the linear
    algebra is d x d (eagle/ode/_linalg.py's solve_w)."""

    def __init__(self, method, *, adaptive, d, real, fun, jac, n_control=None):
        self.ld = n_control or d
        _linalg.check_size(self.ld, method.name)
        if self.ld != d and method.scheme not in ("ros23", "rodas"):
            raise EagleValueError(f"eagle.ode: sensitivities of the implicit methods are built for the Rosenbrock "
                                  f"methods (Rodas5P, Rosenbrock23); {method.name} solves its stages by Newton "
                                  f"iterations, whose derivative is not the method's")
        if d * self.ld > MAX_AUGMENTED:
            raise EagleValueError(f"eagle.ode: y ({self.ld} components) with its sensitivities is {d} components; a "
                                  f"sample keeps a {d} x {self.ld} block of the Jacobian, at most {MAX_AUGMENTED} "
                                  f"entries: differentiate fewer parameters per solve")
        super().__init__(method, adaptive=adaptive, d=d, real=real, n_control=n_control)
        self.real, self.fun, self.jac_arg = real, fun, jac
        self.messages = dict(method.messages)
        self.jac = self.jacobian_kind = self.traced = None
        # Kvaerno5 keeps J across steps (and calls): in its own plane, D*D reals a sample
        self.reuse = method.scheme == "esdirk" and reuse_jacobian()
        if self.reuse:
            self.planes = (("JS", d * d),)

    def bind(self, fns, na, arg_widths):
        """The run's built functions (fns[0]: fun's _rhs.Rhs, with ``traced`` when fun was traced)."""
        self.jac = jacobian(self.fun, self.jac_arg, fns[0], self.d, na, self.real, arg_widths,
                            ld=self.ld if self.ld != self.d else None)
        self.jacobian_kind = self.jac.kind
        self.traced = getattr(fns[0], "traced", None)

    def w_rows(self, d):
        # why the last attempt failed (1 singular, 2 Newton): the failure's code; the counts of
        # Jacobian evaluations and LU factorizations; Kvaerno5: J's time and W's h (see above)
        return (("WHY", 1), ("NJEV", 1), ("NLU", 1)) + ((("JT0", 1), ("JLUH", 1)) if self.reuse else ())

    def helpers(self, fr):
        nk = {"ros23": 6, "rodas": len(self.m.c) + 1, "esdirk": len(self.m.c), "radau": 4}[self.m.scheme]
        return "\n\n".join(["/* The right-hand side. */\n"
                            "ODE_FN void ode_f(const ode_real t, const ode_real* y, const ode_real* a, ode_real* dy)\n"
                            "{\n    ode_user_f(t, y, a, dy);\n}",
                            f"#define ODE_NK {nk}  /* stage slots */\n" + self.sizes(),
                            self._prelude(), self._attempt_function(), self.dense_output(),
                            self.initial_step() if fr.c is not None else ""])

    def sizes(self):
        """The size macros every implicit scheme's C reads."""
        return (f"#define ODE_DC {self.dc}  /* components the error norm and the first step see */\n"
                f"#define ODE_LD {self.ld}  /* the linear systems' size (y's, of y and its sensitivities) */\n"
                "#define ODE_NJT (D * ODE_LD + D)  /* J's first block column (all of J when ODE_LD = D), f_t */")

    def init_rows(self, fr):
        return ([f"    {fr.W('WHY')} = 0;", f"    {fr.W('NJEV')} = 0;", f"    {fr.W('NLU')} = 0;"]
                + ([f"    {fr.W('JT0')} = ODE_NAN;", f"    {fr.W('JLUH')} = 0;"]
                   if self.reuse else []))

    def call_start(self, fr):
        out = ["    ode_real K[ODE_NK][D], Fd[ODE_NF][D];", "    (void)Fd;",
               "    /* the per-lane state: J and f_t at (ode_jt, y), W's LU for the step ode_luh */",
               "    ode_real ode_JT[ODE_NJT], ode_LU[ODE_LD * ODE_LD], ode_jt = ODE_NAN, ode_luh = 0;",
               "    int ode_piv[ODE_LD];",
               "    for (int q = 0; q < ODE_NJT; ++q) ode_JT[q] = 0;",
               f"    int ode_whylast = (int){fr.W('WHY')};",
               f"    int32_t ode_cnt[2] = {{(int32_t){fr.W('NJEV')}, (int32_t){fr.W('NLU')}}};  /* J evaluations, LUs */"]
        if self.reuse:  # J and W's h kept from the last call; the LU made again from them (same bits)
            out += [f"    ode_jt = {fr.W('JT0')};",
                    f"    ode_luh = {fr.W('JLUH')};",
                    "    if (ode_jt == ode_jt) {",
                    "        for (int q = 0; q < D * D; ++q) ode_JT[q] = JS[(int64_t)q * n + i];",
                    "        if (ode_luh != 0 && !ode_refactor(ode_JT, ode_luh, ode_LU, ode_piv)) ode_luh = 0;",
                    "    } else {",
                    "        ode_luh = 0;",
                    "    }"]
        if self.m.scheme == "radau":  # the complex system's LU
            out += ["    ode_real ode_LUr2[D * D], ode_LUi[D * D];", "    int ode_piv2[D];"]
        if self.m.fsal:
            out += ["    ode_f(t, y, a, K[0]);", FSAL_COUNT]
        return out

    def attempt(self, fr=None):
        out = [] if self.m.fsal else ["        ode_f(t, y, a, K[0]);", "        nfev += 1;"]
        out += ["        int ode_why = 0;",
                "        const ode_acc err = ode_attempt(t, hh, tn, y, K, a, ynew, tol, ode_JT, ode_LU, ode_piv, &ode_jt,",
                "                                        &ode_luh, &ode_why, &nfev, ode_cnt"
                + (", ode_LUr2, ode_LUi, ode_piv2);" if self.m.scheme == "radau" else ");"),
                "        (void)err;",
                "        ode_whylast = ode_why;"]
        if fr is not None and fr.c is None:  # fixed steps: a singular matrix or a failed Newton ends the sample
            out.append("        if (ode_why) { status = ode_why == 1 ? ODE_FAIL_SINGULAR : ODE_FAIL_NEWTON; break; }")
        return out

    def call_end(self, fr):
        # a sample whose step fell to the floor after rejections the attempt explained fails with that reason
        out = ["    if (status == ODE_FAIL_NONFINITE && ode_whylast)",
               "        status = ode_whylast == 1 ? ODE_FAIL_SINGULAR : ODE_FAIL_NEWTON;",
               f"    {fr.W('WHY')} = (ode_real)ode_whylast;",
               f"    {fr.W('NJEV')} = (ode_real)ode_cnt[0];",
               f"    {fr.W('NLU')} = (ode_real)ode_cnt[1];"]
        if self.reuse:
            out += [f"    {fr.W('JT0')} = ode_jt;",
                    f"    {fr.W('JLUH')} = ode_luh;",
                    "    if (ode_jt == ode_jt) for (int q = 0; q < D * D; ++q) JS[(int64_t)q * n + i] = ode_JT[q];"]
        return out

    def flops_per_step(self):
        if self.traced is None:
            return None
        from ._derive import derive
        return flops_per_step(self.m, self.d, derive(self.traced).nnz, self.traced.n_ops)

    # ---- the pieces before the step: failure codes, linear algebra, the Jacobian
    def _prelude(self):
        inline = os.environ.get("EAGLE_ODE_GPU_INLINE_MAX_D", "")  # a tuning knob for GPU runs (see _linalg)
        return "\n\n".join([
            f"#define ODE_FAIL_SINGULAR {FAIL_SINGULAR}\n#define ODE_FAIL_NEWTON {FAIL_NEWTON}"
            + (f"\n#define ODE_GPU_INLINE_MAX_D {int(inline)}" if inline.strip().isdigit() else ""),
            _linalg.LU + ("\n" + _linalg.LU_COMPLEX if self.m.scheme == "radau" else ""),
            "/* The Jacobian: " + self.jac.kind + ". */\n" + self.jac.text,
            _linalg.form_w(self.jac.pattern, self.ld),
            _linalg.solve_w(self.jac.pattern, self.ld, self.d // self.ld) if self.m.scheme in ("ros23", "rodas")
            else "", self._refactor() if self.reuse else ""])

    def _refactor(self):
        """Kvaerno5's W = I - (h_LU gamma) J and its LU: the one place their bits are made (an
        attempt, and a call's start from the kept J and h_LU). Returns 0 when singular."""
        return "\n".join(["ODE_LA_FN int ode_refactor(const ode_real* JT, const ode_real hl, ode_real* LUm, int* piv)",
                          "{",
                          f"    ode_form_w(JT, {self.L(1.0)}, -(hl * {self.L(self.m.gamma)}), LUm);",
                          "    return ode_lu(LUm, piv);",
                          "}"])

    def _head(self):
        return ["ODE_LA_FN ode_acc ode_attempt(const ode_real t, const ode_real h, const ode_real tn, const ode_real* y,",
                "                              ode_real K[ODE_NK][D], const ode_real* a, ode_real* ynew,",
                "                              const ode_real* tol, ode_real* JT, ode_real* LUm, int* piv,",
                "                              ode_real* jt, ode_real* luh, int* why, int32_t* nfev, int32_t* cnt"
                + (",\n                              ode_real* LUr2, ode_real* LUi, int* piv2)" if self.m.scheme == "radau" else ")"),
                "{",
                "    (void)tn; (void)tol;",
                "    if (!(*jt == t)) { ode_jac(t, y, a, JT, nfev); *jt = t; *luh = 0; cnt[0] += 1; }  /* J at (t, y), once */"]

    def _lu(self, cd, cj):
        self._cj = cj  # the solves' (eagle/ode/_linalg.py's solve_w)
        return ["    if (!(*luh == h)) {  /* the iteration matrix of this h, factored once */",
                f"        ode_form_w(JT, {cd}, {cj}, LUm);",
                "        cnt[1] += 1;",
                "        if (!ode_lu(LUm, piv)) { *luh = 0; *why = 1; return ODE_INF; }",
                "        *luh = h;",
                "    }"]

    def _norm(self, terms_of_k, scale_by_h=False):
        """The error norm's lines: RMS of (sum of terms) / (atol + rtol max(|y|, |ynew|))."""
        L = self.L
        s = " + ".join(f"{L(c)} * {x}" for c, x in terms_of_k if c != 0.0) or "0"
        e = f"(({s}) * h)" if scale_by_h else f"({s})"
        return ["    ode_acc acc = 0;",
                "    for (int k = 0; k < ODE_DC; ++k) {",
                "        const ode_real sc = (ODE_ATOL(k) + ODE_RTOL * ODE_FMAX(ODE_FABS(y[k]), ODE_FABS(ynew[k])));",
                f"        const ode_acc r = (ode_acc)({e} / sc);",
                "        acc += r * r;",
                "    }",
                "    return ODE_ASQRT(acc / (ode_acc)ODE_DC);",
                "}"]

    def _attempt_function(self):
        body = {"ros23": self._ros23, "rodas": self._rodas, "esdirk": self._esdirk, "radau": self._radau}[self.m.scheme]()
        return "\n".join(body)

    def _radau(self):
        """scipy's Radau step: the collocation system by simplified Newton in the eigenbasis of A
        (W = TI Z: one real system, mu_r / h - J, and one complex, mu_c / h - J), from Z = 0; the
        error by one more real solve (f + Z E / h), and, when that exceeds the tolerance, the
        stiff-aware second estimate from f(y + err) (Hairer and Wanner)."""
        L, m = self.L, self.m
        T, TI, (mcr, mci) = m.A, m.C, m.D
        out = ["/* Radau IIA (3 stages): K[0] = f(t, y), K[1 .. 3] the stages' increments Z. */"]
        out += self._head()
        out += ["    const ode_real ih = 1 / h;",
                "    if (!(*luh == h)) {  /* the real and the complex iteration matrices of this h */",
                f"        ode_form_w(JT, {L(m.gamma)} * ih, {L(-1.0)}, LUm);",
                f"        ode_form_w(JT, {L(mcr)} * ih, {L(-1.0)}, LUr2);",
                "        for (int q = 0; q < D * D; ++q) LUi[q] = 0;",
                f"        for (int k = 0; k < D; ++k) LUi[k * D + k] = {L(mci)} * ih;",
                "        cnt[1] += 1;",
                "        if (!ode_lu(LUm, piv) || !ode_lu_c(LUr2, LUi, piv2)) { *luh = 0; *why = 1; return ODE_INF; }",
                "        *luh = h;",
                "    }",
                "    ode_real W0[D], W1[D], W2[D], F0[D], F1[D], F2[D], d0[D], d1[D], d2[D], u[D], sc[D];",
                "    for (int k = 0; k < D; ++k) {",
                "        W0[k] = W1[k] = W2[k] = 0;",
                "        K[1][k] = K[2][k] = K[3][k] = 0;",
                "        sc[k] = ODE_ATOL(k) + ODE_RTOL * ODE_FABS(y[k]);",
                "    }",
                "    /* Newton's tolerance: max(10 eps / rtol, min(0.03, sqrt(rtol))) */",
                "    ode_acc ntol = ODE_ASQRT((ode_acc)ODE_RTOL);",
                "    if (ntol > (ode_acc)0.03) ntol = (ode_acc)0.03;",
                "    if (ntol < 10 * (ode_acc)ODE_EPS / (ode_acc)ODE_RTOL) ntol = 10 * (ode_acc)ODE_EPS / (ode_acc)ODE_RTOL;",
                "    ode_acc nold = 0, rate = -1;",
                "    int conv = 0;",
                f"    const ode_real mr = {L(m.gamma)} * ih, cr = {L(mcr)} * ih, ci = {L(mci)} * ih;",
                f"    for (int it = 0; it < {RADAU_NEWTON_MAX}; ++it) {{"]
        for i, c in enumerate(m.c):
            tt = "tn" if c == 1.0 else f"t + {L(c)} * h"
            out += [f"        for (int k = 0; k < D; ++k) u[k] = y[k] + K[{1 + i}][k];",
                    f"        ode_f({tt}, u, a, F{i});"]
        out += ["        *nfev += 3;",
                "        int fin = 1;",
                "        for (int k = 0; k < D; ++k) fin = fin && ode_finite(F0[k]) && ode_finite(F1[k]) && ode_finite(F2[k]);",
                "        if (!fin) break;",
                "        for (int k = 0; k < D; ++k) {",
                f"            d0[k] = {L(TI[0][0])} * F0[k] + {L(TI[0][1])} * F1[k] + {L(TI[0][2])} * F2[k] - mr * W0[k];",
                f"            const ode_real gr = {L(TI[1][0])} * F0[k] + {L(TI[1][1])} * F1[k] + {L(TI[1][2])} * F2[k];",
                f"            const ode_real gi = {L(TI[2][0])} * F0[k] + {L(TI[2][1])} * F1[k] + {L(TI[2][2])} * F2[k];",
                "            d1[k] = gr - (cr * W1[k] - ci * W2[k]);",
                "            d2[k] = gi - (cr * W2[k] + ci * W1[k]);",
                "        }",
                "        ode_lu_solve(LUm, piv, d0);",
                "        ode_lu_solve_c(LUr2, LUi, piv2, d1, d2);",
                "        ode_acc n2 = 0;",
                "        for (int k = 0; k < D; ++k) {",
                "            const ode_acc r0 = (ode_acc)(d0[k] / sc[k]), r1 = (ode_acc)(d1[k] / sc[k]), r2 = (ode_acc)(d2[k] / sc[k]);",
                "            n2 += r0 * r0 + r1 * r1 + r2 * r2;",
                "        }",
                "        const ode_acc nrm = ODE_ASQRT(n2 / (ode_acc)(3 * D));",
                "        if (!(nrm <= ODE_ABIG)) break;",
                "        if (it > 0) rate = nrm / nold;",
                "        if (rate >= 0) {",
                "            if (!(rate < 1)) break;",
                "            ode_acc pw = 1;",
                f"            for (int q = it; q < {RADAU_NEWTON_MAX}; ++q) pw *= rate;",
                "            if (pw / (1 - rate) * nrm > ntol) break;  /* it would not converge in the iterations left */",
                "        }",
                "        for (int k = 0; k < D; ++k) {",
                "            W0[k] += d0[k]; W1[k] += d1[k]; W2[k] += d2[k];",
                f"            K[1][k] = {L(T[0][0])} * W0[k] + {L(T[0][1])} * W1[k] + {L(T[0][2])} * W2[k];",
                f"            K[2][k] = {L(T[1][0])} * W0[k] + {L(T[1][1])} * W1[k] + {L(T[1][2])} * W2[k];",
                "            K[3][k] = W0[k] + W1[k];",
                "        }",
                "        if (nrm == 0 || (rate >= 0 && rate / (1 - rate) * nrm < ntol)) { conv = 1; break; }",
                "        nold = nrm;",
                "    }",
                "    if (!conv) { *why = 2; return ODE_INF; }",
                "    for (int k = 0; k < D; ++k) ynew[k] = y[k] + K[3][k];",
                "    /* the error: (mu_r / h - J)^-1 (f(t, y) + Z E / h) */",
                "    for (int k = 0; k < D; ++k) {",
                f"        u[k] = (({L(m.E[0])} * K[1][k] + {L(m.E[1])} * K[2][k] + {L(m.E[2])} * K[3][k]) * ih);",
                "        d0[k] = K[0][k] + u[k];",
                "    }",
                "    ode_lu_solve(LUm, piv, d0);",
                "    ode_acc acc = 0;",
                "    for (int k = 0; k < D; ++k) {",
                "        const ode_real s2 = ODE_ATOL(k) + ODE_RTOL * ODE_FMAX(ODE_FABS(y[k]), ODE_FABS(ynew[k]));",
                "        const ode_acc r = (ode_acc)(d0[k] / s2);",
                "        acc += r * r;",
                "    }",
                "    ode_acc en = ODE_ASQRT(acc / (ode_acc)D);",
                "    if (en > 1) {  /* the second estimate: f at y + err damps the stiff components' overestimate */",
                "        for (int k = 0; k < D; ++k) d1[k] = y[k] + d0[k];",
                "        ode_f(t, d1, a, d2);",
                "        *nfev += 1;",
                "        for (int k = 0; k < D; ++k) d0[k] = d2[k] + u[k];",
                "        ode_lu_solve(LUm, piv, d0);",
                "        acc = 0;",
                "        for (int k = 0; k < D; ++k) {",
                "            const ode_real s2 = ODE_ATOL(k) + ODE_RTOL * ODE_FMAX(ODE_FABS(y[k]), ODE_FABS(ynew[k]));",
                "            const ode_acc r = (ode_acc)(d0[k] / s2);",
                "            acc += r * r;",
                "        }",
                "        en = ODE_ASQRT(acc / (ode_acc)D);",
                "    }",
                "    return en;",
                "}"]
        return out

    def _ros23(self):
        L, m = self.L, self.m
        out = ["/* ode23s: K[0] = f(t, y) (FSAL), K[1] = k1, K[2] = F1, K[3] = k2, K[4] = f(tn, ynew), K[5] = k3. */"]
        out += self._head()
        out += ["    const ode_real hd = h * " + L(m.gamma) + ";"]
        out += self._lu(L(1.0), "-hd")
        out += ["    const ode_real* dT = JT + D * ODE_LD;",
                "    ode_real u[D];",
                "    for (int k = 0; k < D; ++k) K[1][k] = K[0][k] + hd * dT[k];",
                f"    ode_solve_w(LUm, piv, JT, {self._cj}, K[1]);",
                f"    const ode_real h2 = {L(0.5)} * h;",
                "    for (int k = 0; k < D; ++k) u[k] = y[k] + h2 * K[1][k];",
                "    ode_f(t + h2, u, a, K[2]);",
                "    for (int k = 0; k < D; ++k) K[3][k] = K[2][k] - K[1][k];",
                f"    ode_solve_w(LUm, piv, JT, {self._cj}, K[3]);",
                "    for (int k = 0; k < D; ++k) K[3][k] += K[1][k];",
                "    for (int k = 0; k < D; ++k) ynew[k] = y[k] + h * K[3][k];",
                "    ode_f(tn, ynew, a, K[4]);",
                f"    for (int k = 0; k < D; ++k) K[5][k] = K[4][k] - {L(m.D[0])} * (K[3][k] - K[2][k]) "
                f"- {L(2.0)} * (K[1][k] - K[0][k]) + hd * dT[k];",
                f"    ode_solve_w(LUm, piv, JT, {self._cj}, K[5]);",
                "    *nfev += 2;"]
        out += self._norm([(1 / 6, "K[1][k]"), (-2 / 6, "K[3][k]"), (1 / 6, "K[5][k]")], scale_by_h=True)
        return out

    def _rodas(self):
        L, m = self.L, self.m
        S = len(m.c)
        out = [f"/* Rosenbrock, transformed form: K[0] = f(t, y), K[1 .. {S}] = k_1 .. k_{S}. */"]
        out += self._head()
        out += self._lu(f"1 / (h * {L(m.gamma)})", L(-1.0))
        out += ["    const ode_real* dT = JT + D * ODE_LD;",
                "    const ode_real ih = 1 / h;",
                "    ode_real u[D];",
                "    (void)ih; (void)u;"]
        for s in range(S):
            dst = f"K[{1 + s}]"
            cterms = [f" + ({L(m.C[s][j])} * ih) * K[{1 + j}][k]" for j in range(s) if m.C[s][j] != 0.0]
            dterm = f" + (h * {L(m.D[s])}) * dT[k]" if m.D[s] != 0.0 else ""
            if s == 0:
                out.append(f"    for (int k = 0; k < D; ++k) {dst}[k] = K[0][k]{dterm};")
            else:
                aterms = "".join(f" + {L(m.A[s][j])} * K[{1 + j}][k]" for j in range(s) if m.A[s][j] != 0.0)
                out.append(f"    for (int k = 0; k < D; ++k) u[k] = y[k]{aterms};")
                tt = "tn" if m.c[s] == 1.0 else f"t + {L(m.c[s])} * h"
                out.append(f"    ode_f({tt}, u, a, {dst});")
                if dterm or cterms:
                    out.append(f"    for (int k = 0; k < D; ++k) {dst}[k] = {dst}[k]{dterm}{''.join(cterms)};")
            out.append(f"    ode_solve_w(LUm, piv, JT, {self._cj}, {dst});")
        out.append(f"    *nfev += {S - 1};")
        bterms = "".join(f" + {L(b)} * K[{1 + j}][k]" for j, b in enumerate(m.B) if b != 0.0)
        out.append(f"    for (int k = 0; k < D; ++k) ynew[k] = y[k]{bterms};")
        out += self._norm([(e, f"K[{1 + j}][k]") for j, e in enumerate(m.E)])
        return out

    def _esdirk(self):
        return self._esdirk_reuse() if self.reuse else self._esdirk_fresh()

    def _esdirk_fresh(self):
        """Kvaerno5's attempt with J evaluated at every step's (t, y) (a rejected attempt reuses it) and
        W factored for every new h: the default (see the module's docstring)."""
        L, m = self.L, self.m
        S = len(m.c)  # stages; stage 0 explicit (K[0] = f(t, y), FSAL), stages 1 .. S-2 in K[s], the last in kl
        out = [f"/* ESDIRK: K[0] = f(t, y) (FSAL), K[1 .. {S - 2}] the implicit stages' derivatives, kl the last",
               f" * stage's, K[{S - 1}] = f(tn, ynew) (the next step's first stage). Simplified Newton on each",
               " * stage z = base + h gamma f(t + c h, z) with the matrix I - h gamma J, factored once a step. */"]
        out += self._head()
        out += [f"    const ode_real hg = h * {L(m.gamma)};"]
        out += self._lu(L(1.0), "-hg")
        out += ["    ode_real z[D], base[D], dz[D], kl[D];",
                "    ode_acc eta = 1;"]
        for s in range(1, S):
            slot = f"K[{s}]" if s < S - 1 else "kl"
            aterms = " + ".join(f"{L(m.A[s][j])} * K[{j}][k]" for j in range(s) if m.A[s][j] != 0.0)
            pterms = " + ".join(f"{L(m.P[s][j])} * K[{j}][k]" for j in range(s) if m.P[s][j] != 0.0)
            tt = "tn" if m.c[s] == 1.0 else f"t + {L(m.c[s])} * h"
            out += [f"    /* stage {s + 1} */",
                    f"    for (int k = 0; k < D; ++k) base[k] = y[k] + h * ({aterms or '0'});",
                    f"    for (int k = 0; k < D; ++k) z[k] = base[k] + hg * ({pterms or 'K[0][k]'});",
                    "    {",
                    "        ode_acc nold = 0;",
                    "        int conv = 0;",
                    "        if (eta < (ode_acc)ODE_EPS) eta = (ode_acc)ODE_EPS;",
                    f"        for (int it = 0; it < {NEWTON_MAX}; ++it) {{",
                    f"            ode_f({tt}, z, a, dz);",
                    "            *nfev += 1;",
                    "            for (int k = 0; k < D; ++k) dz[k] = base[k] + hg * dz[k] - z[k];",
                    "            ode_lu_solve(LUm, piv, dz);",
                    "            ode_acc n2 = 0;",
                    "            for (int k = 0; k < D; ++k) {",
                    "                const ode_real sc = ODE_ATOL(k) + ODE_RTOL * ODE_FABS(y[k]);",
                    "                const ode_acc r = (ode_acc)(dz[k] / sc);",
                    "                n2 += r * r;",
                    "                z[k] += dz[k];",
                    "            }",
                    "            const ode_acc nrm = ODE_ASQRT(n2 / (ode_acc)D);",
                    "            if (!(nrm <= ODE_ABIG)) break;  /* not finite: diverged */",
                    "            if (it > 0) {",
                    "                const ode_acc theta = nrm / nold;",
                    "                if (!(theta < (ode_acc)0.99)) break;  /* diverging or stalled */",
                    "                eta = theta / (1 - theta);",
                    "            }",
                    f"            if (eta * nrm <= (ode_acc){NEWTON_KAPPA!r} || nrm == 0) {{ conv = 1; break; }}",
                    "            nold = nrm;",
                    "        }",
                    "        if (!conv) { *why = 2; return ODE_INF; }",
                    "    }",
                    f"    for (int k = 0; k < D; ++k) {slot}[k] = (z[k] - base[k]) / hg;"]
        out += ["    for (int k = 0; k < D; ++k) ynew[k] = z[k];",
                f"    ode_f(tn, ynew, a, K[{S - 1}]);",
                "    *nfev += 1;"]
        terms = [(e, f"K[{j}][k]" if j < S - 1 else "kl[k]") for j, e in enumerate(m.E)]
        out += self._norm(terms, scale_by_h=True)
        return out

    def _esdirk_reuse(self):
        """Kvaerno5's attempt with J and W kept across steps (the module's docstring states the
        rules): up to two passes, the second with J (and W) fresh after the first failed with a
        stale one."""
        L, m = self.L, self.m
        S = len(m.c)  # stages; stage 0 explicit (K[0] = f(t, y), FSAL), stages 1 .. S-2 in K[s], the last in kl
        out = [f"/* ESDIRK: K[0] = f(t, y) (FSAL), K[1 .. {S - 2}] the implicit stages' derivatives, kl the last",
               f" * stage's, K[{S - 1}] = f(tn, ynew) (the next step's first stage). Simplified Newton on each",
               " * stage z = base + h gamma f(t + c h, z) with W = I - h_LU gamma J, J and W kept across steps:",
               " * *jt is J's time (nan: a new J is due), *luh the h W was factored for (0: none). */"]
        out += self._head()[:-1]  # the signature; J is evaluated below, on demand
        out += [f"    const ode_real hg = h * {L(m.gamma)};",
                "    ode_real z[D], base[D], dz[D], kl[D];",
                "    for (int pass = 0; pass < 2; ++pass) {",
                "        if (!(*jt == *jt)) { ode_jac(t, y, a, JT, nfev); *jt = t; *luh = 0; cnt[0] += 1; }",
                f"        if (!(*luh != 0 && ODE_FABS(h / *luh - 1) <= {L(LU_WINDOW)})) {{  /* W of this h */",
                "            *luh = h;",
                "            cnt[1] += 1;",
                "            if (!ode_refactor(JT, h, LUm, piv)) {",
                "                *luh = 0;",
                "                if (!(*jt == t)) { *jt = ODE_NAN; continue; }  /* an old J: again with a fresh one */",
                "                *why = 1;",
                "                return ODE_INF;",
                "            }",
                "        }",
                "        /* W of another h (within the window): Newton's corrections scaled by 2 / (1 + h / h_LU) */",
                "        const int stale = !(*luh == h);",
                f"        const ode_real relax = stale ? {L(2.0)} / (1 + h / *luh) : {L(1.0)};",
                "        ode_acc eta = 1, theta_max = 0;",
                "        int failed = 0;",
                "        do {"]
        for s in range(1, S):
            slot = f"K[{s}]" if s < S - 1 else "kl"
            aterms = " + ".join(f"{L(m.A[s][j])} * K[{j}][k]" for j in range(s) if m.A[s][j] != 0.0)
            pterms = " + ".join(f"{L(m.P[s][j])} * K[{j}][k]" for j in range(s) if m.P[s][j] != 0.0)
            tt = "tn" if m.c[s] == 1.0 else f"t + {L(m.c[s])} * h"
            out += [f"            /* stage {s + 1} */",
                    f"            for (int k = 0; k < D; ++k) base[k] = y[k] + h * ({aterms or '0'});",
                    f"            for (int k = 0; k < D; ++k) z[k] = base[k] + hg * ({pterms or 'K[0][k]'});",
                    "            {",
                    "                ode_acc nold = 0;",
                    "                int conv = 0;",
                    "                if (eta < (ode_acc)ODE_EPS) eta = (ode_acc)ODE_EPS;",
                    f"                for (int it = 0; it < {NEWTON_MAX}; ++it) {{",
                    f"                    ode_f({tt}, z, a, dz);",
                    "                    *nfev += 1;",
                    "                    for (int k = 0; k < D; ++k) dz[k] = base[k] + hg * dz[k] - z[k];",
                    "                    ode_lu_solve(LUm, piv, dz);",
                    "                    ode_acc n2 = 0;",
                    "                    for (int k = 0; k < D; ++k) {",
                    "                        const ode_real sc = ODE_ATOL(k) + ODE_RTOL * ODE_FABS(y[k]);",
                    "                        const ode_real dk = dz[k] * relax;  /* relax = 1 exactly with W of this h */",
                    "                        const ode_acc r = (ode_acc)(dk / sc);",
                    "                        n2 += r * r;",
                    "                        z[k] += dk;",
                    "                    }",
                    "                    const ode_acc nrm = ODE_ASQRT(n2 / (ode_acc)D);",
                    "                    if (!(nrm <= ODE_ABIG)) break;  /* not finite: diverged */",
                    "                    if (it > 0) {",
                    "                        const ode_acc theta = nrm / nold;",
                    "                        if (!(theta < (ode_acc)0.99)) break;  /* diverging or stalled */",
                    "                        if (theta > theta_max) theta_max = theta;",
                    "                        eta = theta / (1 - theta);",
                    "                    }",
                    f"                    if (eta * nrm <= (ode_acc){NEWTON_KAPPA!r} || nrm == 0) {{ conv = 1; break; }}",
                    "                    nold = nrm;",
                    "                }",
                    "                if (!conv) { failed = 1; break; }",
                    "            }",
                    f"            for (int k = 0; k < D; ++k) {slot}[k] = (z[k] - base[k]) / hg;"]
        out += ["        } while (0);",
                "        if (failed) {  /* with an old J: again with a fresh one; with W of another h: W of this h */",
                "            if (!(*jt == t)) { *jt = ODE_NAN; continue; }",
                "            if (stale) { *luh = 0; continue; }",
                "            *why = 2;",
                "            return ODE_INF;",
                "        }",
                "        for (int k = 0; k < D; ++k) ynew[k] = z[k];",
                f"        ode_f(tn, ynew, a, K[{S - 1}]);",
                "        *nfev += 1;"]
        terms = [(e, f"K[{j}][k]" if j < S - 1 else "kl[k]") for j, e in enumerate(m.E)]
        norm = self._norm(terms, scale_by_h=True)[:-1]
        assert norm[-1] == "    return ODE_ASQRT(acc / (ode_acc)ODE_DC);"
        out += ["    " + x for x in norm[:-1]]
        out += ["        const ode_acc en = ODE_ASQRT(acc / (ode_acc)ODE_DC);",
                "        /* slow: a new J for the next attempt (not at this (t, y) again when the error rejects it) */",
                f"        if (theta_max > (ode_acc){THETA_SLOW!r} && !(en > 1 && *jt == t)) *jt = ODE_NAN;",
                "        return en;",
                "    }", "    *why = 2;  /* not reached: the second pass has J and W fresh */", "    return ODE_INF;", "}"]
        return out

    # ---- dense output
    def dense_output(self):
        m, L = self.m, self.L
        head = ["EAGLE_FN void ode_dense_prepare(const ode_real t, const ode_real h, const ode_real* y,",
                "                                const ode_real* ynew, ode_real K[ODE_NK][D], const ode_real* a,",
                "                                ode_real F[ODE_NF][D], int32_t* nfev)",
                "{",
                "    (void)t; (void)h; (void)y; (void)ynew; (void)a; (void)nfev;"]
        evalh = ["EAGLE_FN void ode_dense_eval(ode_real F[ODE_NF][D], const ode_real* y, const ode_real* ynew,",
                 "                             const ode_real h, const ode_real th, ode_real* out)",
                 "{",
                 "    (void)ynew; (void)h;"]
        if m.dense == "ros23":
            q = 1.0 / (1.0 - 2.0 * m.gamma)
            out = ["/* ode23s's continuous extension: y + h (th (1 - th) k1 + th (th - 2d) k2) / (1 - 2d). */",
                   "#define ODE_NF 2"] + head
            out += [f"    for (int k = 0; k < D; ++k) F[0][k] = (h * {L(q)}) * K[1][k];",
                    f"    for (int k = 0; k < D; ++k) F[1][k] = (h * {L(q)}) * K[3][k];",
                    "}"] + evalh
            out += [f"    const ode_real w0 = th * ({L(1.0)} - th), w1 = th * (th - {L(2.0 * m.gamma)});",
                    "    for (int k = 0; k < D; ++k) out[k] = y[k] + w0 * F[0][k] + w1 * F[1][k];",
                    "}"]
        elif m.dense == "rodas":
            out = ["/* Rodas' dense output: (1 - th) y + th (ynew + (1 - th)(h1 + th (h2 + th h3))). */",
                   f"#define ODE_NF {len(m.H)}"] + head
            for r, row in enumerate(m.H):
                terms = " + ".join(f"{L(x)} * K[{1 + j}][k]" for j, x in enumerate(row) if x != 0.0)
                out.append(f"    for (int k = 0; k < D; ++k) F[{r}][k] = {terms};")
            out += ["}"] + evalh
            inner = f"F[{len(m.H) - 1}][k]"
            for r in range(len(m.H) - 2, -1, -1):
                inner = f"F[{r}][k] + th * ({inner})"
            out += [f"    const ode_real th1 = {L(1.0)} - th;",
                    f"    for (int k = 0; k < D; ++k) out[k] = th1 * y[k] + th * (ynew[k] + th1 * ({inner}));",
                    "}"]
        elif m.dense == "radau":
            out = ["/* Radau's collocation polynomial: y + Q (th, th^2, th^3), Q = Z^T P (scipy's). */",
                   "#define ODE_NF 3"] + head
            for j in range(3):
                terms = " + ".join(f"{L(m.H[i][j])} * K[{1 + i}][k]" for i in range(3))
                out.append(f"    for (int k = 0; k < D; ++k) F[{j}][k] = {terms};")
            out += ["}"] + evalh
            out += ["    for (int k = 0; k < D; ++k) out[k] = y[k] + th * (F[0][k] + th * (F[1][k] + th * F[2][k]));",
                    "}"]
        elif m.dense == "hermite":
            S = m.stages
            out = ["/* Cubic Hermite of y, f(t, y) = K[0] and ynew, f(tn, ynew) = K[S] (no evaluation). */",
                   "#define ODE_NF 2"] + head
            out += ["    for (int k = 0; k < D; ++k) F[0][k] = K[0][k];",
                    f"    for (int k = 0; k < D; ++k) F[1][k] = K[{S}][k];",
                    "}"] + hermite_eval(L)
        else:
            raise EagleValueError(f"eagle.ode: stiff method {m.name} has no dense output {m.dense!r}")
        return "\n".join(out)


def flops_per_step(method, d, nnz, f_ops):
    """Floating-point operations of one accepted step without rejections (an FMA = 2; a libm call
    1): f evaluations, one Jacobian (``nnz`` entries, about one op each beyond f's), W, one LU and
    the solves, the stage combinations. ``f_ops``: the traced rhs's n_ops. Newton iterations of an
    ESDIRK: one per stage assumed (the fewest)."""
    w, lu, solve = _linalg.flops(d, nnz)
    if method.scheme == "rodas":
        S = len(method.c)
        nf, ns = S - 1 + 1, S
        comb = sum(2 * d * (sum(1 for x in method.A[s] if x) + sum(1 for x in method.C[s] if x) + 1) for s in range(S))
    elif method.scheme == "ros23":
        nf, ns, comb = 2, 3, 20 * d
    elif method.scheme == "radau":  # two Newton iterations assumed; the complex LU costs 4x the real one
        nf, ns, comb = 6 + 1, 2 * 5 + 1, 2 * 40 * d
        lu *= 5
        w *= 2
    else:
        S = len(method.c)
        nf, ns = (S - 1) + 1, S - 1
        comb = sum(2 * d * (len(method.A[s]) + len(method.P[s]) + 4) for s in range(1, S))
    return {"f": nf * f_ops, "jac": 2 * nnz + f_ops, "W": w, "LU": lu, "solves": ns * solve, "combine": comb,
            "error": 6 * d}
