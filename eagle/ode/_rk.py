"""Explicit Runge-Kutta methods as a scheme of the one ensemble run (eagle/ode/_run.py; the
interface: eagle/ode/SCHEMES.md): a method's tableau (eagle/ode/_methods.py) becomes the C of one
attempted step (stages, the new state, the FSAL stage, scipy's error norm), its dense output
(events located on it, t_eval interpolated) and the first step (Hairer's rule, as scipy's
select_initial_step). The frame (eagle/ode/_frame.py) puts the step loop, the controller
(eagle/ode/_control.py), events, t_eval and the planes around it.

The error norm is scipy.integrate's (RungeKutta): the RMS norm of err / (atol + rtol
max(|y|, |y_new|)); DOP853's is Hairer's two-estimate norm."""
from ..errors import EagleValueError
from ._frame import lit
from ._solution import OdeSolution


def _sum(terms):
    """'c0 * x0 + c1 * x1 ...' over the (coefficient literal, expression) pairs; '0' when none."""
    parts = [f"{c} * {x}" for c, x in terms]
    return " + ".join(parts) if parts else "0"


# The first stage of an FSAL method evaluated again at a call's start (no copy is kept between the
# run's calls) is counted in nfev only on a sample's first call: later it recomputes the last
# step's counted f(tn, ynew), and nfev stays a property of the solve, not of how the run split it
# into calls (steps_per_call differs between kinds).
FSAL_COUNT = "    if (nfev == 0) nfev += 1;"

class RungeKutta:
    """The scheme of an explicit Runge-Kutta ``method`` (adaptive: with its error estimate)."""
    prefix = "ode"
    dense = True
    random = False

    def __init__(self, method, *, adaptive, d, real, n_control=None):
        self.m, self.adaptive, self.d = method, adaptive, d
        # the first n_control components alone enter the error norm, the first step and the sums'
        # form (ODE_DC): an augmented variational state (y, S) of eagle/ode/_sensitivity.py then
        # steps, and rounds its y, exactly as y alone
        self.dc = n_control or d
        self.name = method.name
        self.error_order = method.error_order or method.order
        self.L = lambda x: lit(x, real)
        self.functions = (("fun", "ode_user_f", d),)

    def w_rows(self, d):
        return ()

    def helpers(self, fr):
        return "\n\n".join(["/* The right-hand side. */\n"
                             "ODE_FN void ode_f(const ode_real t, const ode_real* y, const ode_real* a, ode_real* dy)\n"
                             "{\n    ode_user_f(t, y, a, dy);\n}",
                             f"#define ODE_NK {self.m.stages + 1 + len(self.m.C_extra or ())}  /* stage slots */\n"
                             f"#define ODE_DC {self.dc}  /* components the error norm and the first step see */",
                             self.attempt(), self.dense_output(), self.initial_step() if fr.c is not None else ""])

    def init(self, fr):
        """f(t0, y0) and, adaptive, the first step where first_step is not given."""
        out = ["    ode_real f0[D];", "    ode_f(t0, y, a, f0);", "    nfev = 1;",
               "    for (int k = 0; k < D; ++k) ok = ok && ode_finite(f0[k]);"]
        if fr.c is None:
            return out
        return out + ["    if (h == 0 && ok) h = ode_initial_step(t0, t1, y, f0, a, tol, &nfev);"]

    def initial_step(self):
        """The first step from (t, y) with f(t, y) = f0 towards t1: Hairer's rule, as scipy's
        select_initial_step (also the fresh step after an affect restarts the integration)."""
        return "\n".join([
            "EAGLE_FN ode_real ode_initial_step(const ode_real t, const ode_real t1, const ode_real* y, const ode_real* f0,",
            "                                   const ode_real* a, const ode_real* tol, int32_t* nfev)",
            "{",
            "    double d0 = 0.0, d1 = 0.0, d2 = 0.0;",
            "    for (int k = 0; k < ODE_DC; ++k) {",
            "        const double sc = (double)(ODE_ATOL(k) + ODE_FABS(y[k]) * ODE_RTOL);",
            "        d0 += ((double)y[k] / sc) * ((double)y[k] / sc);",
            "        d1 += ((double)f0[k] / sc) * ((double)f0[k] / sc);",
            "    }",
            "    d0 = sqrt(d0 / ODE_DC); d1 = sqrt(d1 / ODE_DC);",
            "    double h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;",
            "    const double span = (double)(t1 - t);",
            "    if (h0 > span) h0 = span;",
            "    ode_real y1[D], f1[D];",
            "    for (int k = 0; k < D; ++k) y1[k] = y[k] + (ode_real)h0 * f0[k];",
            "    ode_f(t + (ode_real)h0, y1, a, f1);",
            "    *nfev += 1;",
            "    for (int k = 0; k < ODE_DC; ++k) {",
            "        const double sc = (double)(ODE_ATOL(k) + ODE_FABS(y[k]) * ODE_RTOL);",
            "        const double q = (double)(f1[k] - f0[k]) / sc;",
            "        d2 += q * q;",
            "    }",
            "    d2 = sqrt(d2 / ODE_DC) / h0;",
            "    const double dm = d1 > d2 ? d1 : d2;",
            f"    double h1 = (d1 <= 1e-15 && d2 <= 1e-15) ? (h0 * 1e-3 > 1e-6 ? h0 * 1e-3 : 1e-6) : "
            f"ODE_EXP({1.0 / (self.error_order + 1)!r} * ODE_LOG(0.01 / dm));",
            "    if (h1 > 100 * h0) h1 = 100 * h0;",
            "    if (h1 > span) h1 = span;",
            "    return (ode_real)h1;",
            "}"])

    def init_rows(self, fr):
        return []

    def call_start(self, fr):
        out = ["    ode_real K[ODE_NK][D], Fd[ODE_NF][D];", "    (void)Fd;"]
        if self.m.fsal:  # the first stage again rather than a stored copy: d fewer words read and written a call
            out += ["    ode_f(t, y, a, K[0]);", FSAL_COUNT]
        return out

    def attempt(self, fr=None):
        if fr is None:
            return self._attempt_function()
        return ([] if self.m.fsal else ["        ode_f(t, y, a, K[0]);"]) + [
            "        const ode_acc err = ode_attempt(t, hh, tn, y, K, a, ynew, tol);",
            f"        nfev += {self.m.stages};",
            "        (void)err;"]

    prepare = "ode_dense_prepare(t, hh, y, ynew, K, a, Fd, &nfev);"

    def accepted(self, fr):
        return [f"        for (int k = 0; k < D; ++k) K[0][k] = K[{self.m.stages}][k];"] if self.m.fsal else []

    def call_end(self, fr):
        return []

    def restart(self, fr):
        """C lines after an affect replaced (t, y): the first stage again (FSAL: K[0] is otherwise
        the last step's K[S]; without FSAL the next step evaluates it too) and, adaptive, a fresh
        first step from there (Hairer's rule: sized by the new state, as a solve's first step)."""
        if fr.c is None:
            return ["ode_f(t, y, a, K[0]); nfev += 1;"] if self.m.fsal else []
        return ["ode_f(t, y, a, K[0]); nfev += 1;", "h = ode_initial_step(t, t1, y, K[0], a, tol, &nfev);"]

    @property
    def fsal_stage(self):
        """The K slot holding f(tn, ynew) after an attempt (None: not evaluated by the step)."""
        return self.m.stages if self.m.fsal else None

    solution = OdeSolution


    def combine(self, dst, coefs, tag):
        """C lines for dst[k] = y[k] + h sum_j coefs[j] K[j][k], in the form with the fewest
        operations: coefficients that are small integer multiples of one (RK4's 1/6, 1/3, 1/3, 1/6)
        become y + (c h) (K0 + 2 K1 + ...); few terms (fewer than the state's components) take
        their products with h once, shared by every component; else (sum_j a_j K_j) h."""
        L = self.L
        nz = [(j, c) for j, c in enumerate(coefs) if c != 0.0]
        if not nz:
            return [f"    for (int k = 0; k < D; ++k) {dst}[k] = y[k];"]
        base = min(abs(c) for _, c in nz)
        mult = [c / base for _, c in nz]
        if all(abs(x - round(x)) < 1e-12 and abs(round(x)) <= 8 for x in mult):
            parts = []
            for (j, _), x in zip(nz, mult):
                r = int(round(x))
                term = f"K[{j}][k]" if abs(r) == 1 else f"{L(abs(r))} * K[{j}][k]"
                parts.append(("- " if r < 0 else "+ ") + term)
            expr = " ".join(parts).lstrip("+ ")
            expr = expr if not expr.startswith("- ") else "-" + expr[2:]
            return [f"    const ode_real h_{tag} = {L(base)} * h;",
                    f"    for (int k = 0; k < D; ++k) {dst}[k] = y[k] + h_{tag} * ({expr});"]
        if len(nz) < self.dc:
            lines = [f"    const ode_real h_{tag}_{j} = {L(c)} * h;" for j, c in nz]
            expr = " + ".join(f"h_{tag}_{j} * K[{j}][k]" for j, _ in nz)
            return lines + [f"    for (int k = 0; k < D; ++k) {dst}[k] = y[k] + {expr};"]
        terms = [(L(c), f"K[{j}][k]") for j, c in nz]
        return [f"    for (int k = 0; k < D; ++k) {dst}[k] = y[k] + ({_sum(terms)}) * h;"]

    # ---- one attempted step: stages, the new state, the FSAL stage, the error norm
    def _attempt_function(self):
        m, L = self.m, self.L
        S = m.stages
        out = ["/* One attempted step of size h from (t, y) to tn (= t + h, or t1 where that is clipped): the stages",
               " * K[0..S-1] (K[0] = f(t, y) is given), y_new, K[S] = f(tn, y_new) when the method is FSAL, and the",
               " * error norm (adaptive). */",
               "EAGLE_FN ode_acc ode_attempt(const ode_real t, const ode_real h, const ode_real tn, const ode_real* y,",
               "                            ode_real K[ODE_NK][D],",
               "                            const ode_real* a, ode_real* ynew, const ode_real* tol)",
               "{",
               "    ode_real yt[D];"]
        for s in range(1, S):
            out += self.combine("yt", m.A[s][:s], f"s{s}")
            out.append(f"    ode_f(t + {L(m.C[s])} * h, yt, a, K[{s}]);")
        out += self.combine("ynew", m.B, "b")
        out.append("    (void)tol;")
        if not (self.adaptive or m.fsal):
            out += ["    return 0.0;", "}"]
            return "\n".join(out)
        if m.fsal:
            out.append(f"    ode_f(tn, ynew, a, K[{S}]);  /* at tn itself: the next step's first stage, bit for bit */")
        if not self.adaptive:
            out += ["    return 0.0;", "}"]
            return "\n".join(out)
        scale = "(ODE_ATOL(k) + ODE_RTOL * ODE_FMAX(ODE_FABS(y[k]), ODE_FABS(ynew[k])))"
        if m.dense == "dop853":
            t5 = [(L(c), f"K[{j}][k]") for j, c in enumerate(m.E) if c != 0.0]
            t3 = [(L(c), f"K[{j}][k]") for j, c in enumerate(m.E3) if c != 0.0]
            out += ["    ode_acc e5 = 0, e3 = 0;",
                    "    for (int k = 0; k < ODE_DC; ++k) {",
                    f"        const ode_real sc = {scale};",
                    f"        const ode_acc r5 = (ode_acc)(({_sum(t5)}) / sc);",
                    f"        const ode_acc r3 = (ode_acc)(({_sum(t3)}) / sc);",
                    "        e5 += r5 * r5;",
                    "        e3 += r3 * r3;",
                    "    }",
                    "    if (e5 == 0 && e3 == 0) return 0;",
                    "    return ODE_AFABS((ode_acc)h) * e5 / ODE_ASQRT((e5 + (ode_acc)0.01 * e3) * (ode_acc)ODE_DC);",
                    "}"]
        else:
            te = [(L(c), f"K[{j}][k]") for j, c in enumerate(m.E) if c != 0.0]
            out += ["    ode_acc acc = 0;",
                    "    for (int k = 0; k < ODE_DC; ++k) {",
                    f"        const ode_real sc = {scale};",
                    f"        const ode_acc r = (ode_acc)((({_sum(te)}) * h) / sc);",
                    "        acc += r * r;",
                    "    }",
                    "    return ODE_ASQRT(acc / (ode_acc)ODE_DC);",
                    "}"]
        return "\n".join(out)

    def prepare_decl(self):
        """How the dense output's prepare is declared: with extra stages, a function called out of
        line on the cpu kind (gcc's time grows with each site it would inline the stages at: a Vern9
        solve with t_eval, events and summaries has five); inlined on the GPU kinds, where a call
        would put the stages K in local memory."""
        if not self.m.C_extra:
            return "EAGLE_FN"
        return ("\n#if !EAGLE_KIND_GPU && !EAGLE_KIND_OPENCL && defined(__GNUC__)\n"
                "static __attribute__((noinline))\n#else\nEAGLE_FN\n#endif\n")

    def extra_stages(self):
        """C lines of the interpolant's extra stages (a method's C_extra/A_extra: DOP853's, Verner's),
        evaluated lazily -- only for a step whose dense output is needed -- into the stage slots after
        the step's own (and its FSAL stage), where A_extra's columns number them; counted in *nfev."""
        m, L = self.m, self.L
        if not m.C_extra:
            return []
        first = m.stages + (1 if m.fsal else 0)
        out = ["    ode_real yt[D];"]
        for e, (c, row) in enumerate(zip(m.C_extra, m.A_extra)):
            s = first + e
            terms = [(L(x), f"K[{j}][k]") for j, x in enumerate(row[:s]) if x != 0.0]
            out.append(f"    for (int k = 0; k < D; ++k) yt[k] = y[k] + ({_sum(terms)}) * h;")
            out.append(f"    ode_f(t + {L(c)} * h, yt, a, K[{s}]);")
        out.append(f"    *nfev += {len(m.C_extra)};")
        return out

    # ---- dense output over the last step [t, t + h]
    def dense_output(self):
        m, L = self.m, self.L
        out = ["/* Dense output of the step (t, y) -> (t + h, ynew): ode_dense_prepare fills F once per step",
               " * (right-hand-side evaluations it needs are counted in *nfev), ode_dense_eval gives y(t + th h). */"]
        if m.dense == "P":
            nf = len(m.P[0])
            out.append(f"#define ODE_NF {nf}")
            out += [self.prepare_decl() + " void ode_dense_prepare(const ode_real t, const ode_real h, const ode_real* y,",
                    "                                const ode_real* ynew, ode_real K[ODE_NK][D], const ode_real* a,",
                    "                                ode_real F[ODE_NF][D], int32_t* nfev)",
                    "{",
                    "    (void)t; (void)h; (void)y; (void)ynew; (void)a; (void)nfev;"]
            out += self.extra_stages()
            for j in range(nf):
                terms = [(L(m.P[s][j]), f"K[{s}][k]") for s in range(len(m.P)) if m.P[s][j] != 0.0]
                out.append(f"    for (int k = 0; k < D; ++k) F[{j}][k] = {_sum(terms)};")
            out += ["}",
                    "EAGLE_FN void ode_dense_eval(ode_real F[ODE_NF][D], const ode_real* y, const ode_real* ynew,",
                    "                             const ode_real h, const ode_real th, ode_real* out)",
                    "{",
                    "    (void)ynew;",
                    "    for (int k = 0; k < D; ++k) {",
                    f"        ode_real p = F[{nf - 1}][k];",
                    f"        for (int j = {nf - 2}; j >= 0; --j) p = F[j][k] + th * p;",
                    "        out[k] = y[k] + h * (th * p);",
                    "    }",
                    "}"]
        elif m.dense == "hermite":
            out += ["#define ODE_NF 2",
                    "EAGLE_FN void ode_dense_prepare(const ode_real t, const ode_real h, const ode_real* y,",
                    "                                const ode_real* ynew, ode_real K[ODE_NK][D], const ode_real* a,",
                    "                                ode_real F[ODE_NF][D], int32_t* nfev)",
                    "{",
                    "    (void)y;",
                    "    for (int k = 0; k < D; ++k) F[0][k] = K[0][k];",
                    "    ode_f(t + h, ynew, a, F[1]);",
                    "    *nfev += 1;",
                    "}"] + hermite_eval(L)
        elif m.dense == "linear":
            out += ["#define ODE_NF 1",
                    "EAGLE_FN void ode_dense_prepare(const ode_real t, const ode_real h, const ode_real* y,",
                    "                                const ode_real* ynew, ode_real K[ODE_NK][D], const ode_real* a,",
                    "                                ode_real F[ODE_NF][D], int32_t* nfev)",
                    "{",
                    "    (void)t; (void)h; (void)y; (void)ynew; (void)K; (void)a; (void)F; (void)nfev;",
                    "}",
                    "EAGLE_FN void ode_dense_eval(ode_real F[ODE_NF][D], const ode_real* y, const ode_real* ynew,",
                    "                             const ode_real h, const ode_real th, ode_real* out)",
                    "{",
                    "    (void)F; (void)h;",
                    "    for (int k = 0; k < D; ++k) out[k] = y[k] + th * (ynew[k] - y[k]);",
                    "}"]
        elif m.dense == "dop853":
            S = m.stages + 1  # K[0..12]
            out += ["#define ODE_NF 7",
                    self.prepare_decl() + " void ode_dense_prepare(const ode_real t, const ode_real h, const ode_real* y,",
                    "                                const ode_real* ynew, ode_real K[ODE_NK][D], const ode_real* a,",
                    "                                ode_real F[ODE_NF][D], int32_t* nfev)",
                    "{"]
            out += self.extra_stages()
            out += ["    for (int k = 0; k < D; ++k) {",
                    "        const ode_real dy = ynew[k] - y[k];",
                    "        F[0][k] = dy;",
                    "        F[1][k] = h * K[0][k] - dy;",
                    f"        F[2][k] = {L(2)} * dy - h * (K[{S - 1}][k] + K[0][k]);",
                    "    }"]
            for r, row in enumerate(m.D):
                terms = [(L(x), f"K[{j}][k]") for j, x in enumerate(row) if x != 0.0]
                out.append(f"    for (int k = 0; k < D; ++k) F[{3 + r}][k] = h * ({_sum(terms)});")
            out += ["}",
                    "EAGLE_FN void ode_dense_eval(ode_real F[ODE_NF][D], const ode_real* y, const ode_real* ynew,",
                    "                             const ode_real h, const ode_real th, ode_real* out)",
                    "{",
                    "    (void)ynew; (void)h;",
                    "    for (int k = 0; k < D; ++k) {",
                    "        ode_real p = 0;",
                    "        for (int j = ODE_NF - 1, q = 0; j >= 0; --j, ++q) {",
                    "            p += F[j][k];",
                    f"            p *= (q % 2 == 0) ? th : ({L(1)} - th);",
                    "        }",
                    "        out[k] = p + y[k];",
                    "    }",
                    "}"]
        else:
            raise EagleValueError(f"eagle.ode: method {m.name} has no dense output scheme {m.dense!r}")
        return "\n".join(out)


def hermite_eval(L):
    """C lines of ode_dense_eval for a cubic Hermite interpolant of y, ynew and the derivatives
    F[0] (at t) and F[1] (at t + h); ``L`` writes a literal in the solve's precision."""
    return ["EAGLE_FN void ode_dense_eval(ode_real F[ODE_NF][D], const ode_real* y, const ode_real* ynew,",
            "                             const ode_real h, const ode_real th, ode_real* out)",
            "{",
            "    const ode_real t2 = th * th, t3 = t2 * th;",
            f"    const ode_real h00 = {L(2)} * t3 - {L(3)} * t2 + {L(1)}, h10 = t3 - {L(2)} * t2 + th;",
            f"    const ode_real h01 = {L(3)} * t2 - {L(2)} * t3, h11 = t3 - t2;",
            "    for (int k = 0; k < D; ++k)",
            "        out[k] = h00 * y[k] + h10 * h * F[0][k] + h01 * ynew[k] + h11 * h * F[1][k];",
            "}"]
