"""The device code of an ensemble solve, generated once from its pieces: the right-hand side (and
event functions) as C, a method's tableau (eagle/ode/_methods.py) and the solve's options. The
result is one C source for every kind (it includes <eagle/kernel.h>) with two kernels:

  ode_init(W, I, M, A, TE, YS, EVT, EVY, DONE, Y0, t0, t1, per_sample)  every sample: f(t0, y0), the first step, outputs at t0
  ode_step(W, I, M, A, TE, YS, EVT, EVY, DONE)  up to ODE_STEPS_PER_CALL steps of sample i; launched as
                                           ode_step_drain by ActiveSet.drain until M[i] != 0

The planes (component-major, n = the run's samples, sample i at column i):
  W  (ODE_NW, n) reals: the rows named W_* below (t, h, t0, t1, the PI controller's last error,
                        the state y, the FSAL derivative f, the event functions' last values)
  I  (ODE_NI, n) int32: the rows named I_* (status, nfev, accepted, rejected, next t_eval index,
                        flags, each event's count)
  M  (n,) uint8: the drop mask (nonzero: the sample is finished, whatever its status)
  A  (ODE_NA, n) reals: the per-sample arguments
  TE (ODE_NT,) reals: t_eval;  YS (n, D, ODE_NT) reals: the states there
  EVT (ODE_NE, n), EVY (ODE_NE, D, n) reals: each event's first crossing
  DONE (1,) uint32: samples ended so far (progress; zeroed by ode_init)

Step-size control, the initial step and the error norm are scipy.integrate's (RungeKutta):
the RMS norm of err / (atol + rtol max(|y|, |y_new|)), safety 0.9, factors in [0.2, 10], the
first step from Hairer's rule; the accepted-step factor is a PI controller (beta1 = 0.7/k,
beta2 = 0.4/k, k = the error estimate's order + 1) unless controller="I". The step-size exponents
use eagle's own log/exp written in + - * / (ode_log, ode_exp), so that in exact mode every kind takes the
same steps."""
from ..errors import EagleValueError

# status codes of the I_STATUS row (the host maps them to sol.status / sol.failure)
RUNNING, DONE, EVENT, FAIL_STEP, FAIL_MAX_STEPS, FAIL_NONFINITE = 0, 1, 2, 3, 4, 5
FAILURES = {
    FAIL_STEP: "the step size fell below the floor (10 eps |t|): if the solution is smooth there, the problem looks "
               "stiff: use method='Rodas5P' (or 'Kvaerno5', 'Rosenbrock23'); else it may be singular",
    FAIL_MAX_STEPS: "max_steps steps were taken before t1: if the solution is smooth, the problem looks stiff (an "
                    "explicit method's step is held down by stability, not accuracy): use method='Rodas5P' (or "
                    "'Kvaerno5', 'Rosenbrock23')",
    FAIL_NONFINITE: "the state or its derivative is not finite (inf or nan)",
    6: "the solve ran out of rounds before the sample finished",
    # the implicit methods' own (eagle/ode/_implicit.py)
    7: "the iteration matrix (I/(h gamma) - J) stayed singular (or J not finite) as the step shrank to the floor",
    8: "the Newton iteration of an implicit stage did not converge as the step shrank to the floor",
}


def lit(x, real):
    """A C literal of the Python float ``x`` in the solve's real type (float: rounded to float as
    numpy.float32(x) does)."""
    x = float(x)
    if x != x:
        return "ODE_NAN"
    if x in (float("inf"), float("-inf")):
        return ("" if x > 0 else "-") + "ODE_INF"
    r = repr(x)
    if "." not in r and "e" not in r and "inf" not in r:
        r += ".0"
    return f"((float){r})" if real == "float" else r


class Options:
    """What the generated code bakes in: method, dimensions, tolerances, limits."""

    def __init__(self, method, n_state, n_args, real, *, adaptive, rtol, atol, dt, first_step, max_step,
                 max_steps, steps_per_call, t_eval_count, events, controller, t0, t1, per_sample, exact):
        self.method = method
        self.d = n_state
        self.na = n_args
        self.real = real
        self.adaptive = adaptive
        self.rtol = rtol
        self.atol = atol  # a float or a tuple of d floats
        self.dt = dt
        self.first_step = first_step
        self.max_step = max_step
        self.max_steps = max_steps
        self.steps_per_call = steps_per_call
        self.nt = t_eval_count
        self.events = events  # list of (terminal: bool, direction: int)
        self.controller = controller
        self.t0, self.t1 = t0, t1      # t1: the shared end (the largest one when per_sample)
        self.per_sample = per_sample   # each sample's t1 in W's T1 row
        self.exact = exact             # exact mode: eagle's own log/exp for the step-size factors


def rows(d, ne, *, adaptive, pi, per_sample, nt):
    """The row layout of the W and I planes: (W rows, I rows, NW, NI), each a dict name -> first
    row. Only what a solve needs is stored (it is read and written once per call of the step
    body): W holds t, [h, the PI controller's log error], [t1 when per sample], y, [events' g];
    I holds status (| flags << 8), nfev, accepted, rejected, [next t_eval index], [events' counts]."""
    w, r = {}, 0
    for name, size in (("T", 1), ("H", adaptive), ("LERR", adaptive and pi), ("T1", per_sample), ("Y", d),
                       ("G", ne)):
        if size:
            w[name] = r
            r += int(size)
    i, q = {}, 0
    for name, size in (("STATUS", 1), ("NFEV", 1), ("NACC", 1), ("NREJ", 1), ("NEXT", 1 if nt else 0), ("NEV", ne)):
        if size:
            i[name] = q
            q += int(size)
    return w, i, r, q


def _rows_of(o):
    return rows(o.d, len(o.events), adaptive=o.adaptive, pi=o.controller == "PI", per_sample=o.per_sample, nt=o.nt)


def _sum(terms):
    """'c0 * x0 + c1 * x1 ...' over the (coefficient literal, expression) pairs whose coefficient
    is not zero; '0' when none is."""
    parts = [f"{c} * {x}" for c, x in terms]
    return " + ".join(parts) if parts else "0"


class _Gen:
    def __init__(self, o):
        self.o = o
        self.m = o.method
        self.L = lambda x: lit(x, o.real)

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
        if len(nz) < self.o.d:
            lines = [f"    const ode_real h_{tag}_{j} = {L(c)} * h;" for j, c in nz]
            expr = " + ".join(f"h_{tag}_{j} * K[{j}][k]" for j, _ in nz)
            return lines + [f"    for (int k = 0; k < D; ++k) {dst}[k] = y[k] + {expr};"]
        terms = [(L(c), f"K[{j}][k]") for j, c in nz]
        return [f"    for (int k = 0; k < D; ++k) {dst}[k] = y[k] + ({_sum(terms)}) * h;"]

    # ---- one attempted step: stages, the new state, the FSAL stage, the error norm
    def attempt(self):
        m, L = self.m, self.L
        S = m.stages
        out = ["/* One attempted step of size h from (t, y) to tn (= t + h, or t1 where that is clipped): the stages",
               " * K[0..S-1] (K[0] = f(t, y) is given), y_new, K[S] = f(tn, y_new) when the method is FSAL, and the",
               " * error norm (adaptive). */",
               "EAGLE_FN ode_acc ode_attempt(const ode_real t, const ode_real h, const ode_real tn, const ode_real* y,",
               "                            ode_real K[ODE_NK][D],",
               "                            const ode_real* a, ode_real* ynew)",
               "{",
               "    ode_real yt[D];"]
        for s in range(1, S):
            out += self.combine("yt", m.A[s][:s], f"s{s}")
            out.append(f"    ode_f(t + {L(m.C[s])} * h, yt, a, K[{s}]);")
        out += self.combine("ynew", m.B, "b")
        if not (self.o.adaptive or m.fsal):
            out += ["    return 0.0;", "}"]
            return "\n".join(out)
        if m.fsal:
            out.append(f"    ode_f(tn, ynew, a, K[{S}]);  /* at tn itself: the next step's first stage, bit for bit */")
        if not self.o.adaptive:
            out += ["    return 0.0;", "}"]
            return "\n".join(out)
        scale = "(ODE_ATOL(k) + ODE_RTOL * ODE_FMAX(ODE_FABS(y[k]), ODE_FABS(ynew[k])))"
        if m.dense == "dop853":
            t5 = [(L(c), f"K[{j}][k]") for j, c in enumerate(m.E) if c != 0.0]
            t3 = [(L(c), f"K[{j}][k]") for j, c in enumerate(m.E3) if c != 0.0]
            out += ["    ode_acc e5 = 0, e3 = 0;",
                    "    for (int k = 0; k < D; ++k) {",
                    f"        const ode_real sc = {scale};",
                    f"        const ode_acc r5 = (ode_acc)(({_sum(t5)}) / sc);",
                    f"        const ode_acc r3 = (ode_acc)(({_sum(t3)}) / sc);",
                    "        e5 += r5 * r5;",
                    "        e3 += r3 * r3;",
                    "    }",
                    "    if (e5 == 0 && e3 == 0) return 0;",
                    "    return ODE_AFABS((ode_acc)h) * e5 / ODE_ASQRT((e5 + (ode_acc)0.01 * e3) * (ode_acc)D);",
                    "}"]
        else:
            te = [(L(c), f"K[{j}][k]") for j, c in enumerate(m.E) if c != 0.0]
            out += ["    ode_acc acc = 0;",
                    "    for (int k = 0; k < D; ++k) {",
                    f"        const ode_real sc = {scale};",
                    f"        const ode_acc r = (ode_acc)((({_sum(te)}) * h) / sc);",
                    "        acc += r * r;",
                    "    }",
                    "    return ODE_ASQRT(acc / (ode_acc)D);",
                    "}"]
        return "\n".join(out)

    # ---- dense output over the last step [t, t + h]
    def dense(self):
        m, L = self.m, self.L
        out = ["/* Dense output of the step (t, y) -> (t + h, ynew): ode_dense_prepare fills F once per step",
               " * (right-hand-side evaluations it needs are counted in *nfev), ode_dense_eval gives y(t + th h). */"]
        if m.dense == "P":
            nf = len(m.P[0])
            out.append(f"#define ODE_NF {nf}")
            out += ["EAGLE_FN void ode_dense_prepare(const ode_real t, const ode_real h, const ode_real* y,",
                    "                                const ode_real* ynew, ode_real K[ODE_NK][D], const ode_real* a,",
                    "                                ode_real F[ODE_NF][D], int32_t* nfev)",
                    "{",
                    "    (void)t; (void)h; (void)y; (void)ynew; (void)a; (void)nfev;"]
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
                    "}",
                    "EAGLE_FN void ode_dense_eval(ode_real F[ODE_NF][D], const ode_real* y, const ode_real* ynew,",
                    "                             const ode_real h, const ode_real th, ode_real* out)",
                    "{",
                    "    const ode_real t2 = th * th, t3 = t2 * th;",
                    f"    const ode_real h00 = {L(2)} * t3 - {L(3)} * t2 + {L(1)}, h10 = t3 - {L(2)} * t2 + th;",
                    f"    const ode_real h01 = {L(3)} * t2 - {L(2)} * t3, h11 = t3 - t2;",
                    "    for (int k = 0; k < D; ++k)",
                    "        out[k] = h00 * y[k] + h10 * h * F[0][k] + h01 * ynew[k] + h11 * h * F[1][k];",
                    "}"]
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
                    "EAGLE_FN void ode_dense_prepare(const ode_real t, const ode_real h, const ode_real* y,",
                    "                                const ode_real* ynew, ode_real K[ODE_NK][D], const ode_real* a,",
                    "                                ode_real F[ODE_NF][D], int32_t* nfev)",
                    "{",
                    "    ode_real yt[D];"]
            for e, (c, row) in enumerate(zip(m.C_extra, m.A_extra)):
                s = S + e
                terms = [(L(x), f"K[{j}][k]") for j, x in enumerate(row[:s]) if x != 0.0]
                out.append(f"    for (int k = 0; k < D; ++k) yt[k] = y[k] + ({_sum(terms)}) * h;")
                out.append(f"    ode_f(t + {L(c)} * h, yt, a, K[{s}]);")
            out.append(f"    *nfev += {len(m.C_extra)};")
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

    # ---- the events: g_e on the dense output, crossings by the Illinois method
    def events(self):
        o, L = self.o, self.L
        if not o.events:
            return ""
        out = ["/* Every event function's value at (t, y). */",
               "EAGLE_FN void ode_g_all(const ode_real t, const ode_real* y, const ode_real* a, ode_real* g)",
               "{"]
        for e in range(len(o.events)):
            out.append(f"    ode_g{e}(t, y, a, g + {e});")
        out += ["}",
                "/* Does g go from g0 to g1 in the direction the event watches (scipy's rule)? */",
                "EAGLE_FN int ode_crosses(const ode_real g0, const ode_real g1, const int dir)",
                "{",
                "    const int up = g0 <= 0 && g1 >= 0, down = g0 >= 0 && g1 <= 0;",
                "    return dir > 0 ? up : dir < 0 ? down : (up || down);",
                "}",
                "/* The crossing of event e in [t, t + h] (g(t) = g0, g(t + h) = g1 of opposite signs or zero),",
                " * found on the dense output by the Illinois variant of regula falsi to 4 ulp of t. */",
                "EAGLE_FN ode_real ode_locate(const int e, const ode_real t, const ode_real h, const ode_real g0,",
                "                             const ode_real g1, ode_real F[ODE_NF][D], const ode_real* y,",
                "                             const ode_real* ynew, const ode_real* a)",
                "{",
                f"    ode_real lo = {L(0)}, hi = {L(1)}, glo = g0, ghi = g1, yt[D], g[ODE_NE];",
                "    if (g0 == 0) return t;",
                "    int side = 0;",
                "    for (int it = 0; it < 200; ++it) {",
                f"        const ode_real tol = {L(4)} * ODE_EPS * (ODE_FABS(t) + ODE_FABS(h)) / ODE_FABS(h);",
                "        if (hi - lo <= tol || ghi == 0) break;",
                "        ode_real m = (glo * hi - ghi * lo) / (glo - ghi);",
                f"        if (!(m > lo && m < hi)) m = {L(0.5)} * (lo + hi);",
                "        ode_dense_eval(F, y, ynew, h, m, yt);",
                "        ode_g_all(t + m * h, yt, a, g);",
                "        const ode_real gm = g[e];",
                "        if ((gm > 0) == (ghi > 0) && gm != 0) {",
                f"            hi = m; ghi = gm; if (side == 1) glo *= {L(0.5)}; side = 1;",
                "        } else {",
                f"            lo = m; glo = gm; if (side == -1) ghi *= {L(0.5)}; side = -1;",
                "            if (gm == 0) { hi = m; break; }",
                "        }",
                "    }",
                "    return t + hi * h;",
                "}"]
        return "\n".join(out)

    def step_body(self):
        o, m = self.o, self.m
        S = m.stages
        k = (m.error_order + 1) if m.error_order else 1
        ev = bool(o.events)
        lines = []
        add = lines.append
        if o.adaptive:
            add("    for (int ode_s = 0; ode_s < ODE_STEPS_PER_CALL && status == ODE_RUNNING; ++ode_s) {")
            add("        if (nacc + nrej >= ODE_MAX_STEPS) { status = ODE_FAIL_MAX_STEPS; break; }")
        else:
            # fixed steps: this call's count is known before it starts, so the loop checks nothing
            # per step but whether it is the last step (which lands on t1 exactly)
            add(f"    const int32_t nstep = (int32_t)ceil((double)(t1 - ODE_T0) / (double)ODE_DT - {1e-9!r});")
            add("    int32_t todo = nstep - nacc;")
            add("    if (todo > ODE_STEPS_PER_CALL) todo = ODE_STEPS_PER_CALL;")
            add("    if (nacc + todo > ODE_MAX_STEPS) todo = ODE_MAX_STEPS - nacc;")
            add("    const int32_t nacc0 = nacc;")
            add("    for (int32_t ode_s = 0; ode_s < todo; ++ode_s) {")
        if o.adaptive:
            # the step floor: 10 eps |t| (10 to 20 ulp of t; scipy's is 10 ulp), and 10 of the smallest
            # normal step near t = 0 -- one multiply-add where nextafter costs a dozen instructions
            add("        const ode_real hmin = 10 * ODE_EPS * ODE_FABS(t) + ODE_HTINY;")
            add("        if (h > ODE_MAX_STEP) h = ODE_MAX_STEP;")
            add("        if (!(h >= hmin)) {")
            add("            if (flags & ODE_REJECTED) { status = (flags & ODE_NONFINITE) ? ODE_FAIL_NONFINITE : ODE_FAIL_STEP; break; }")
            add("            h = hmin;")
            add("        }")
            add("        ode_real tn = t + h;")
            add("        if (tn > t1) tn = t1;")
            add("        const ode_real hh = tn - t;")
        else:
            add("        const int last = nacc + 1 == nstep;")
            add("        const ode_real hh = last ? t1 - t : ODE_DT;")
            add("        const ode_real tn = last ? t1 : t + ODE_DT;")
        if not m.fsal:
            add("        ode_f(t, y, a, K[0]);")
        add("        const ode_acc err = ode_attempt(t, hh, tn, y, K, a, ynew);")
        if o.adaptive:
            add(f"        nfev += {S};")
        add("        (void)err;")
        if o.adaptive:
            pi = o.controller == "PI"
            add("        const ode_acc lerr = err > 0 ? ODE_LOG(err) : (ode_acc)-87.0;  /* log of the error norm */")
            add("        if (!(err < 1)) {  /* rejected (a nan error is a rejection too) */")
            add("            const int finite = err <= ODE_ABIG;")
            add(f"            const ode_acc fac = finite ? ODE_SAFETY * ODE_EXP((ode_acc){-1.0 / k!r} * lerr) : 0;")
            add("            h = hh * (ode_real)(fac > ODE_MIN_FACTOR ? fac : ODE_MIN_FACTOR);")
            add("            flags = ODE_REJECTED | (finite ? 0 : ODE_NONFINITE);")
            add("            nrej += 1;")
            add("            continue;")
            add("        }")
            add("        ode_acc fac;")
            add("        if (err == 0) fac = ODE_MAX_FACTOR;")
            if pi:
                add(f"        else fac = ODE_SAFETY * ODE_EXP((ode_acc){-0.7 / k!r} * lerr + (ode_acc){0.4 / k!r} * lerrp);")
            else:
                add(f"        else fac = ODE_SAFETY * ODE_EXP((ode_acc){-1.0 / k!r} * lerr);")
            add("        if (fac > ODE_MAX_FACTOR) fac = ODE_MAX_FACTOR;")
            add("        if (flags & ODE_REJECTED) { if (fac > 1) fac = 1; }")
            add("        else if (fac < ODE_MIN_FACTOR) fac = ODE_MIN_FACTOR;")
            add("        flags = 0;")
            if pi:
                # log(max(err, 1e-4)), rounded as W stores it: a sample takes the same steps however
                # its steps are split between calls of the body
                add("        lerrp = (ode_acc)(ode_real)(lerr > (ode_acc)-9.210340371976182 ? lerr : (ode_acc)-9.210340371976182);")
        # the step is accepted: events, outputs, advance
        add("        int prepared = 0;")
        add("        ode_real tstop = tn;")
        if ev:
            add("        ode_real gnew[ODE_NE];")
            add("        ode_g_all(tn, ynew, a, gnew);")
            add("        int stop = 0;")
            add("        ode_real troot[ODE_NE];")
            add("        int hit[ODE_NE];")
            add("        for (int e = 0; e < ODE_NE; ++e) {")
            add("            hit[e] = ode_crosses(gold[e], gnew[e], ode_dir[e]);")
            add("            if (!hit[e]) continue;")
            add("            if (!prepared) { ode_dense_prepare(t, hh, y, ynew, K, a, Fd, &nfev); prepared = 1; }")
            add("            troot[e] = ode_locate(e, t, hh, gold[e], gnew[e], Fd, y, ynew, a);")
            add("            if (ode_terminal[e] && (!stop || troot[e] < tstop)) { stop = 1; tstop = troot[e]; }")
            add("        }")
            add("        for (int e = 0; e < ODE_NE; ++e) {")
            add("            if (!hit[e] || troot[e] > tstop) continue;")
            add("            if (nev[e] == 0) {")
            add("                ode_real ye[D];")
            add("                ode_dense_eval(Fd, y, ynew, hh, (troot[e] - t) / hh, ye);")
            add("                EVT[(int64_t)e * n + i] = troot[e];")
            add("                for (int k = 0; k < D; ++k) EVY[((int64_t)e * D + k) * n + i] = ye[k];")
            add("            }")
            add("            nev[e] += 1;")
            add("        }")
        if o.nt:
            add("        while (next < ODE_NT && TE[next] <= tstop) {")
            add("            if (!prepared) { ode_dense_prepare(t, hh, y, ynew, K, a, Fd, &nfev); prepared = 1; }")
            add("            ode_real yo[D];")
            add("            if (TE[next] == tn) { for (int k = 0; k < D; ++k) yo[k] = ynew[k]; }")
            add("            else ode_dense_eval(Fd, y, ynew, hh, (TE[next] - t) / hh, yo);")
            add("            for (int k = 0; k < D; ++k) YS[((int64_t)i * D + k) * ODE_NT + next] = yo[k];")
            add("            next += 1;")
            add("        }")
        add("        (void)prepared;")
        if ev:
            add("        if (stop) {")
            add("            ode_real ye[D];")
            add("            ode_dense_eval(Fd, y, ynew, hh, (tstop - t) / hh, ye);")
            add("            for (int k = 0; k < D; ++k) y[k] = ye[k];")
            add("            t = tstop;")
            add("            nacc += 1;")
            add("            status = ODE_EVENT;")
            add("            break;")
            add("        }")
            add("        for (int e = 0; e < ODE_NE; ++e) gold[e] = gnew[e];")
        add("        t = tn;")
        add("        for (int k = 0; k < D; ++k) y[k] = ynew[k];")
        if m.fsal:
            add(f"        for (int k = 0; k < D; ++k) K[0][k] = K[{S}][k];")
        add("        nacc += 1;")
        if o.adaptive:
            add("        h = hh * (ode_real)fac;")
        if o.adaptive:
            add("        if (t >= t1) status = ODE_DONE;")
        add("    }")
        if not o.adaptive:
            # fixed steps: counted, and checked for a non-finite state, once a call
            add(f"    nfev += {S} * (nacc - nacc0);")
            add("    if (status == ODE_RUNNING) {")
            add("        int ok = 1;")
            add("        for (int k = 0; k < D; ++k) ok = ok && ode_finite(y[k]);")
            add("        if (!ok) status = ODE_FAIL_NONFINITE;")
            add("        else if (nacc >= nstep) status = ODE_DONE;")
            add("        else if (nacc >= ODE_MAX_STEPS) status = ODE_FAIL_MAX_STEPS;")
            add("    }")
        return "\n".join(lines)

    def source(self, funcs, header):
        o, m, L = self.o, self.m, self.L
        w, irow, nw, ni = _rows_of(o)
        d, ne = o.d, len(o.events)
        real = o.real
        nk = m.stages + 1 + (len(m.C_extra) if m.C_extra else 0)
        atol = o.atol if isinstance(o.atol, tuple) else None
        f = "f" if real == "float" else ""
        parts = [header, "#include <eagle/kernel.h>", ""]
        parts.append(f"#define EAGLE_ODE_REAL {real}\ntypedef {real} ode_real;")
        parts.append("\n".join([
            f"#define D {d}                 /* state components */",
            f"#define ODE_NA {o.na}            /* per-sample arguments */",
            f"#define ODE_NE {ne}            /* events */",
            f"#define ODE_NT {o.nt}            /* t_eval points */",
            f"#define ODE_NK {nk}            /* stage slots */",
            f"#define ODE_NW {nw}",
            f"#define ODE_NI {ni}",
            *(f"#define W_{k} {v}" for k, v in w.items()),
            *(f"#define I_{k} {v}" for k, v in irow.items()),
            f"#define ODE_RUNNING {RUNNING}\n#define ODE_DONE {DONE}\n#define ODE_EVENT {EVENT}",
            f"#define ODE_FAIL_STEP {FAIL_STEP}\n#define ODE_FAIL_MAX_STEPS {FAIL_MAX_STEPS}\n#define ODE_FAIL_NONFINITE {FAIL_NONFINITE}",
            "#define ODE_REJECTED 1   /* flags (stored above the status: I_STATUS = status | flags << 8): */",
            "#define ODE_NONFINITE 2  /* the last attempt was rejected / ... and its error was not finite */",
            f"#define ODE_STEPS_PER_CALL {o.steps_per_call}",
            f"#define ODE_MAX_STEPS {o.max_steps}",
            f"#define ODE_RTOL {L(o.rtol)}",
            (f"#define ODE_ATOL(k) {L(o.atol)}" if atol is None else
             "static const ode_real ODE_ATOL_V[D] = {" + ", ".join(L(x) for x in atol) + "};\n#define ODE_ATOL(k) ODE_ATOL_V[k]"),
            f"#define ODE_DT {L(o.dt or 0.0)}",
            f"#define ODE_T0 {L(o.t0)}",
            f"#define ODE_T1 {L(o.t1)}",
            # the controller's arithmetic (error norm, log, exp) in the solve's precision; exact mode
            # takes eagle's own log/exp (in double), so that every kind takes the same steps
            f"typedef {real} ode_acc;",
            ("#define ODE_LOG(x) ((ode_acc)ode_log((double)(x)))\n#define ODE_EXP(x) ((ode_acc)ode_exp((double)(x)))"
             if o.exact else f"#define ODE_LOG(x) log{f}((ode_acc)(x))\n#define ODE_EXP(x) exp{f}((ode_acc)(x))"),
            f"#define ODE_ASQRT sqrt{f}\n#define ODE_AFABS fabs{f}",
            ("#define ODE_ABIG ((float)1e37)" if real == "float" else "#define ODE_ABIG 1e300"),
            f"#define ODE_FIRST_STEP {L(o.first_step or 0.0)}",
            f"#define ODE_MAX_STEP {L(o.max_step) if o.max_step != float('inf') else ('((float)3.4028234663852886e38)' if real == 'float' else '1.7976931348623157e308')}",
            ("#define ODE_SAFETY 0.9f\n#define ODE_MIN_FACTOR 0.2f\n#define ODE_MAX_FACTOR 10.0f" if real == "float" else
             "#define ODE_SAFETY 0.9\n#define ODE_MIN_FACTOR 0.2\n#define ODE_MAX_FACTOR 10.0"),
            f"#define ODE_FABS fabs{f}\n#define ODE_FMAX fmax{f}\n#define ODE_SQRT sqrt{f}\n#define ODE_NEXTAFTER nextafter{f}",
            "#define ODE_DFABS fabs",
            ("#define ODE_BIG ((float)3.4028234663852886e38)\n#define ODE_EPS ((float)1.1920928955078125e-07)\n"
             "#define ODE_HTINY ((float)1.1754943508222875e-37)"
             if real == "float" else "#define ODE_BIG 1.7976931348623157e308\n#define ODE_EPS 2.220446049250313e-16\n"
             "#define ODE_HTINY 2.2250738585072014e-307"),
            ("#define ODE_INF (ODE_BIG * 2)\n#define ODE_NAN (ODE_INF - ODE_INF)"),
        ]))
        parts.append(RUNTIME)
        parts.append(funcs)
        parts.append("/* The right-hand side. */\n"
                     "EAGLE_FN void ode_f(const ode_real t, const ode_real* y, const ode_real* a, ode_real* dy)\n"
                     "{\n    ode_user_f(t, y, a, dy);\n}")
        parts.append(self.attempt())
        parts.append(self.dense())
        if ne:
            parts.append(self.events())
        parts.append(self.kernels())
        return "\n\n".join(p for p in parts if p) + "\n"

    def kernels(self):
        o, m = self.o, self.m
        ne = len(o.events)
        # TE (the t_eval times), YS (sample-major: (n, D, nt)) and Y0 ((n, D)) are not planes of
        # samples along their last axis: EAGLE_BUFFER, so a typed launch does not count them so
        sig = ("(ode_real*, W), (int32_t*, I), (uint8_t*, M), (const ode_real*, A), (EAGLE_BUFFER const ode_real*, TE), "
               "(EAGLE_BUFFER ode_real*, YS), (ode_real*, EVT), (ode_real*, EVY), (uint32_t*, DONE)")
        ev_consts = ""
        if ne:
            ev_consts = ("    const int ode_terminal[ODE_NE] = {" + ", ".join(str(int(t)) for t, _ in o.events) + "};\n"
                         "    const int ode_dir[ODE_NE] = {" + ", ".join(str(int(dd)) for _, dd in o.events) + "};\n"
                         "    (void)ode_terminal; (void)ode_dir;\n")
        load = ("    ode_real a[ODE_NA > 0 ? ODE_NA : 1];\n"
                "    for (int k = 0; k < ODE_NA; ++k) a[k] = A[(int64_t)k * n + i];\n"
                "    (void)TE; (void)YS; (void)EVT; (void)EVY; (void)A;\n")
        w, irow, _, _ = _rows_of(o)
        W_ = lambda name, k="": f"W[(int64_t)({w[name]}{' + ' + k if k else ''}) * n + i]"
        I_ = lambda name, k="": f"I[(int64_t)({irow[name]}{' + ' + k if k else ''}) * n + i]"
        t1_load = f"{W_('T1')}" if o.per_sample else "ODE_T1"
        init = ["/* Every sample: y0 from Y0 (n, D), f(t0, y0), its first step, the outputs at t0, the events'",
                " * first values; with per-sample ends, t1 is in W's T1 row (the host wrote it). */",
                f"EAGLE_KERNEL(ode_init, {sig}, (EAGLE_BUFFER const ode_real*, Y0))",
                "{", load, ev_consts,
                "    const ode_real t0 = ODE_T0;",
                f"    const ode_real t1 = {t1_load};",
                "    ode_real y[D], f0[D];",
                "    for (int k = 0; k < D; ++k) y[k] = Y0[i * D + k];",
                f"    for (int k = 0; k < D; ++k) {W_('Y', 'k')} = y[k];",
                "    ode_f(t0, y, a, f0);",
                "    int32_t nfev = 1, status = ODE_RUNNING;",
                "    int ok = 1;",
                "    for (int k = 0; k < D; ++k) ok = ok && ode_finite(y[k]) && ode_finite(f0[k]);",
                "    if (!ok) status = ODE_FAIL_NONFINITE;"]
        if o.adaptive:
            init += ["    ode_real h = ODE_FIRST_STEP;",
                     "    if (h == 0 && ok) {  /* Hairer's rule, as scipy's select_initial_step */",
                     "        double d0 = 0.0, d1 = 0.0, d2 = 0.0;",
                     "        for (int k = 0; k < D; ++k) {",
                     "            const double sc = (double)(ODE_ATOL(k) + ODE_FABS(y[k]) * ODE_RTOL);",
                     "            d0 += ((double)y[k] / sc) * ((double)y[k] / sc);",
                     "            d1 += ((double)f0[k] / sc) * ((double)f0[k] / sc);",
                     "        }",
                     "        d0 = sqrt(d0 / D); d1 = sqrt(d1 / D);",
                     "        double h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;",
                     "        const double span = (double)(t1 - t0);",
                     "        if (h0 > span) h0 = span;",
                     "        ode_real y1[D], f1[D];",
                     "        for (int k = 0; k < D; ++k) y1[k] = y[k] + (ode_real)h0 * f0[k];",
                     "        ode_f(t0 + (ode_real)h0, y1, a, f1);",
                     "        nfev += 1;",
                     "        for (int k = 0; k < D; ++k) {",
                     "            const double sc = (double)(ODE_ATOL(k) + ODE_FABS(y[k]) * ODE_RTOL);",
                     "            const double q = (double)(f1[k] - f0[k]) / sc;",
                     "            d2 += q * q;",
                     "        }",
                     "        d2 = sqrt(d2 / D) / h0;",
                     "        const double dm = d1 > d2 ? d1 : d2;",
                     f"        double h1 = (d1 <= 1e-15 && d2 <= 1e-15) ? (h0 * 1e-3 > 1e-6 ? h0 * 1e-3 : 1e-6) : ODE_EXP({1.0 / ((m.error_order or m.order) + 1)!r} * ODE_LOG(0.01 / dm));",
                     "        if (h1 > 100 * h0) h1 = 100 * h0;",
                     "        if (h1 > span) h1 = span;",
                     "        h = (ode_real)h1;",
                     "    }",
                     "    if (h > ODE_MAX_STEP) h = ODE_MAX_STEP;",
                     f"    {W_('H')} = h;"]
            if o.controller == "PI":
                init.append(f"    {W_('LERR')} = (ode_real)-9.210340371976182;  /* log(1e-4) */")
        init.append(f"    {W_('T')} = t0;")
        if o.nt:
            init += ["    for (int64_t q = 0; q < (int64_t)D * ODE_NT; ++q) YS[(int64_t)i * D * ODE_NT + q] = ODE_NAN;",
                     "    int32_t next = 0;",
                     "    while (next < ODE_NT && TE[next] <= t0) {",
                     "        for (int k = 0; k < D; ++k) YS[((int64_t)i * D + k) * ODE_NT + next] = y[k];",
                     "        next += 1;",
                     "    }",
                     f"    {I_('NEXT')} = next;"]
        if ne:
            init += ["    ode_real g[ODE_NE];",
                     "    ode_g_all(t0, y, a, g);",
                     "    for (int e = 0; e < ODE_NE; ++e) {",
                     f"        {W_('G', 'e')} = g[e];",
                     f"        {I_('NEV', 'e')} = 0;",
                     "        EVT[(int64_t)e * n + i] = ODE_NAN;",
                     "        for (int k = 0; k < D; ++k) EVY[((int64_t)e * D + k) * n + i] = ODE_NAN;",
                     "    }"]
        init += ["    if (!(t1 > t0) && status == ODE_RUNNING) status = ODE_DONE;",
                 f"    {I_('STATUS')} = status;",
                 f"    {I_('NFEV')} = nfev;",
                 f"    {I_('NACC')} = 0;",
                 f"    {I_('NREJ')} = 0;",
                 "    M[i] = status != ODE_RUNNING;",
                 "    if (i == 0) *DONE = 0u;",
                 "}"]
        step = ["/* Up to ODE_STEPS_PER_CALL steps of sample i; M[i] = 1 once it has ended (see I_STATUS). */",
                f"EAGLE_KERNEL(ode_step, {sig})", "{", load, ev_consts,
                f"    ode_real t = {W_('T')};",
                f"    const ode_real t1 = {t1_load};",
                (f"    ode_real h = {W_('H')};" if o.adaptive else ""),
                (f"    ode_acc lerrp = (ode_acc){W_('LERR')};" if o.adaptive and o.controller == "PI" else ""),
                "    ode_real y[D], ynew[D], K[ODE_NK][D], Fd[ODE_NF][D];",
                "    (void)Fd;",
                f"    for (int k = 0; k < D; ++k) y[k] = {W_('Y', 'k')};",
                f"    const int32_t st = {I_('STATUS')};",
                "    int32_t status = st & 255, flags = st >> 8;",
                f"    int32_t nfev = {I_('NFEV')}, nacc = {I_('NACC')}, nrej = {I_('NREJ')};",
                (f"    int32_t next = {I_('NEXT')};" if o.nt else ""),
                "    (void)flags;"]
        if m.fsal:  # the first stage again rather than a stored copy: d fewer words read and written a call
            step += ["    ode_f(t, y, a, K[0]);", "    nfev += 1;"]
        if ne:
            step += ["    ode_real gold[ODE_NE];",
                     "    int32_t nev[ODE_NE];",
                     "    for (int e = 0; e < ODE_NE; ++e) {",
                     f"        gold[e] = {W_('G', 'e')};",
                     f"        nev[e] = {I_('NEV', 'e')};",
                     "    }"]
        step.append(self.step_body())
        step += [f"    {W_('T')} = t;",
                 (f"    {W_('H')} = h;" if o.adaptive else ""),
                 (f"    {W_('LERR')} = (ode_real)lerrp;" if o.adaptive and o.controller == "PI" else ""),
                 f"    for (int k = 0; k < D; ++k) {W_('Y', 'k')} = y[k];",
                 f"    {I_('STATUS')} = status | (flags << 8);",
                 f"    {I_('NFEV')} = nfev;",
                 f"    {I_('NACC')} = nacc;",
                 f"    {I_('NREJ')} = nrej;",
                 (f"    {I_('NEXT')} = next;" if o.nt else "")]
        if ne:
            step += ["    for (int e = 0; e < ODE_NE; ++e) {",
                     f"        {W_('G', 'e')} = gold[e];",
                     f"        {I_('NEV', 'e')} = nev[e];",
                     "    }"]
        step += ["    M[i] = status != ODE_RUNNING;",
                 "    if (status != ODE_RUNNING) ode_count_done(DONE);",
                 "}"]
        init = [x for x in init if x != ""]
        step = [x for x in step if x != ""]
        return "\n".join(init) + "\n\n" + "\n".join(step)


# eagle's own log and exp, in + - * / only (frexp and ldexp are exact on every kind), so the
# step-size exponents round the same everywhere; relative error below 1e-15 (tests/test_ode_*).
RUNTIME = r"""/* x - x is 0 exactly when x is finite (inf - inf and nan - nan are nan). */
EAGLE_FN int ode_finite(const ode_real x) { return x - x == 0; }
/* One more sample has ended (the progress word; relaxed: it is only ever displayed). c points
 * into a kernel's array: EAGLE_GLOBAL (an opencl device without the generic address space). */
EAGLE_FN void ode_count_done(EAGLE_GLOBAL uint32_t* c)
{
#if EAGLE_KIND_GPU
    atomicAdd(c, 1u);
#elif EAGLE_KIND_OPENCL
    atomic_add((volatile __global uint32_t*)c, 1u);
#else
    __atomic_fetch_add(c, 1u, __ATOMIC_RELAXED);
#endif
}
EAGLE_FN double ode_log(double x)
{
    int e;
    double m = frexp(x, &e);                 /* x = m 2^e, m in [0.5, 1) */
    if (m < 0.70710678118654752) { m *= 2.0; e -= 1; }
    const double s = (m - 1.0) / (m + 1.0), s2 = s * s;
    double p = 1.0 / 21.0;
    p = 1.0 / 19.0 + s2 * p; p = 1.0 / 17.0 + s2 * p; p = 1.0 / 15.0 + s2 * p; p = 1.0 / 13.0 + s2 * p;
    p = 1.0 / 11.0 + s2 * p; p = 1.0 / 9.0 + s2 * p; p = 1.0 / 7.0 + s2 * p; p = 1.0 / 5.0 + s2 * p;
    p = 1.0 / 3.0 + s2 * p; p = 1.0 + s2 * p;
    return 2.0 * s * p + (double)e * 6.93147180369123816490e-01 + (double)e * 1.90821492927058770002e-10;
}
EAGLE_FN double ode_exp(double x)
{
    if (x > 709.0) x = 709.0;
    if (x < -745.0) return 0.0;
    const double k = floor(x * 1.44269504088896338700 + 0.5);
    const double r = (x - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10;
    double p = 1.0 / 6227020800.0;            /* 1/13! */
    p = 1.0 / 479001600.0 + r * p; p = 1.0 / 39916800.0 + r * p; p = 1.0 / 3628800.0 + r * p;
    p = 1.0 / 362880.0 + r * p; p = 1.0 / 40320.0 + r * p; p = 1.0 / 5040.0 + r * p; p = 1.0 / 720.0 + r * p;
    p = 1.0 / 120.0 + r * p; p = 1.0 / 24.0 + r * p; p = 1.0 / 6.0 + r * p; p = 0.5 + r * p; p = 1.0 + r * p;
    p = 1.0 + r * p;
    return ldexp(p, (int)k);
}
"""
