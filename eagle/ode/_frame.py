"""The C frame of every drained ensemble kernel, generated in one place: a scheme (the stepper:
eagle/ode/_rk.py, eagle/ode/_sde.py; see SCHEMES.md) and a step-size controller
(eagle/ode/_control.py, None for fixed steps) are its varying parts. One C source for every kind
(it includes <eagle/kernel.h>) with two kernels, ``<p>_init`` and ``<p>_step`` (``p`` the
scheme's prefix; launched as ``<p>_step_drain`` by ActiveSet.drain until M[i] != 0):

  <p>_init(W, I, M, IN, P, Q, TE, YS, EVT, EVY, DONE, Y0)  every sample: y0, the outputs at t0
  <p>_step(W, I, M, IN, P, Q, TE, YS, EVT, EVY, DONE)      up to Q[Q_SPC] steps of sample i

Planes (component-major, n = the run's samples, sample i at column i):
  W  (ODE_NW, n) reals: the rows W_* (t, [h], [controller rows], y, [events' last g], [scheme rows])
  I  (ODE_NI, n) int32: status | flags << 8, nfev, accepted, rejected, [next t_eval], [event counts]
  M  (n,) uint8: the drop mask;  IN (2 + ODE_NA, n) reals: per-sample t0, t1 and arguments
Buffers, written by the host before each solve (the run-time values: nothing of them is compiled):
  P  reals: rtol, dt, first_step, max_step, atol (D), then the shared t0, t1, arguments (NA), y0 (D)
  Q  uint32: max_steps, steps per call, t_eval points, the seed's two words, the index of sample 0
     (a rank's first, in a distributed solve), then 1 where y0, t0,
     t1 and each argument are shared by every sample (read from P) rather than per sample (IN, Y0)
  TE (T) reals: t_eval;  YS (n, D, T): the states there;  EVT (NE, n), EVY (NE, D, n): the events'
  first crossings;  DONE (1) uint32: samples ended (progress);  Y0 (n, D): per-sample initial states

Dense schemes locate events on their interpolant (the Illinois method) and interpolate t_eval;
the others see events and t_eval at step ends only (t_eval on their grid)."""
RUNNING, DONE, EVENT, FAIL_STEP, FAIL_MAX_STEPS, FAIL_NONFINITE = 0, 1, 2, 3, 4, 5
FAIL_AFFECT, FAIL_MAX_EVENTS = 7, 8
FAILURES = {
    FAIL_STEP: "the step size fell below the floor (10 eps |t|): if the solution is smooth there, the problem looks "
               "stiff: use method='Rodas5P' (or 'Kvaerno5', 'Rosenbrock23'; 'auto' switches each sample when it turns "
               "stiff); else it may be singular",
    FAIL_MAX_STEPS: "max_steps steps were taken before t1: if the solution is smooth, the problem looks stiff (an "
                    "explicit method's step is held down by stability, not accuracy): use method='Rodas5P' (or "
                    "'Kvaerno5', 'Rosenbrock23'; 'auto' switches each sample when it turns stiff)",
    FAIL_NONFINITE: "the state or its derivative is not finite (inf or nan)",
    6: "the solve ran out of rounds before the sample finished",
    FAIL_AFFECT: "an event's or callback's affect returned a state that is not finite (inf or nan)",
    FAIL_MAX_EVENTS: "an event with an affect fired more than max_events times, or again within the root "
                     "finder's resolution of the last (it re-triggers itself, or its crossings accumulate, as "
                     "a ball bouncing to rest)",
    # the implicit schemes' own (eagle/ode/_implicit.py)
    9: "the iteration matrix (I/(h gamma) - J) stayed singular (or J not finite) as the step shrank to the floor",
    10: "the Newton iteration of an implicit stage did not converge as the step shrank to the floor",
}
# P's fixed words, then atol; Q's fixed words, then the shared flags
P_RTOL, P_DT, P_FIRST, P_MAX_STEP, P_ATOL = range(5)
Q_MAX_STEPS, Q_SPC, Q_NT, Q_SEED_LO, Q_SEED_HI, Q_FIRST, Q_SHARED = range(7)


def lit(x, real):
    """A C literal of ``x`` in the solve's real type (float: rounded as numpy.float32(x))."""
    x = float(x)
    if x != x:
        return "ODE_NAN"
    if x in (float("inf"), float("-inf")):
        return ("" if x > 0 else "-") + "ODE_INF"
    r = repr(x)
    if "." not in r and "e" not in r:
        r += ".0"
    return f"((float){r})" if real == "float" else r


def layout(scheme, controller, d, ne, nt, summary=None, ncb=0, acting=False):
    """(W rows, I rows, NW, NI): dicts name -> first row, of the frame, the controller and the scheme."""
    w, r = {}, 0
    for name, size in (("T", 1), ("H", controller is not None), *(controller.rows if controller else ()),
                       ("Y", d), ("G", ne), ("TRS", acting), *scheme.w_rows(d), *(summary.w_rows() if summary else ())):
        if size:
            w[name], r = r, r + int(size)
    i, q = {}, 0
    for name, size in (("STATUS", 1), ("NFEV", 1), ("NACC", 1), ("NREJ", 1), ("NEXT", bool(nt)), ("NEV", ne),
                       ("NCB", ncb)):
        if size:
            i[name], q = q, q + int(size)
    return w, i, r, q


class Frame:
    """The source of one solve's kernels: ``scheme`` x ``controller`` x the problem's shape (d, the
    arguments' count, the events' (terminal, direction), whether t_eval is used, precision)."""

    def __init__(self, scheme, controller, *, d, na, events, t_eval, real, exact, outline=(False, False),
                 atol_each=False, max_step=False, max_events=None, callbacks=(), cb_base=0, summary=None):
        # what changes the code besides the shape: an atol per component (else one, fewer registers)
        # and a finite max_step (else no clamp): their values are still run-time values
        self.s, self.c, self.outline, self.atol_each, self.max_step = scheme, controller, outline, atol_each, max_step
        # events: (terminal count (0: none), direction, has an affect) -- eagle/ode/_acts.py's contract
        events = [(int(e[0]), e[1], bool(e[2]) if len(e) > 2 else False) for e in events]
        self.d, self.na, self.events, self.nt, self.real, self.exact = d, na, events, bool(t_eval), real, exact
        self.max_events = max_events    # crossing times kept per event (None: the first)
        self.callbacks = list(callbacks)  # each callback's count of times, read from a[cb_base + ...]
        self.cb_base = cb_base
        self.summary = summary          # an eagle/ode/_summary.Plan or None
        self.acting = any(x for _, _, x in events)  # an event with an affect: W's TRS row, its last restart
        self.rows = layout(scheme, controller, d, len(events), self.nt, summary, len(self.callbacks), self.acting)
        self.L = lambda x: lit(x, real)
        self.sm = None
        if summary is not None:
            from . import _summary
            self.sm = _summary.Gen(summary, scheme.m, real, self.L, self.W)

    def W(self, name, k=""):
        return f"W[(int64_t)({self.rows[0][name]}{' + ' + k if k else ''}) * n + i]"

    def I(self, name, k=""):
        return f"I[(int64_t)({self.rows[1][name]}{' + ' + k if k else ''}) * n + i]"

    # ---------------------------------------------------------------------------------- constants
    def constants(self):
        real, f = self.real, "f" if self.real == "float" else ""
        w, irow, nw, ni = self.rows
        out = [f"#define EAGLE_ODE_REAL {real}\ntypedef {real} ode_real;\ntypedef {real} ode_acc;",
               f"#define D {self.d}\n#define ODE_NA {self.na}\n#define ODE_NE {len(self.events)}",
               f"#define ODE_NW {nw}\n#define ODE_NI {ni}",
               *(f"#define W_{k} {v}" for k, v in w.items()), *(f"#define I_{k} {v}" for k, v in irow.items()),
               f"#define ODE_RUNNING {RUNNING}\n#define ODE_DONE {DONE}\n#define ODE_EVENT {EVENT}",
               f"#define ODE_FAIL_STEP {FAIL_STEP}\n#define ODE_FAIL_MAX_STEPS {FAIL_MAX_STEPS}",
               f"#define ODE_FAIL_NONFINITE {FAIL_NONFINITE}",
               f"#define ODE_FAIL_AFFECT {FAIL_AFFECT}\n#define ODE_FAIL_MAX_EVENTS {FAIL_MAX_EVENTS}",
               f"#define ODE_KEV {self.max_events or 1}  /* crossing times kept per event */",
               ("#define ODE_NSPLIT 6  /* after a restart, the events' search splits [0, 1] at 2^-44 ... 2^-6 */\n"
                "#define ODE_SPLITS {(ode_real)5.684341886080802e-14, (ode_real)1.4551915228366852e-11, (ode_real)3.725290298461914e-09, (ode_real)9.5367431640625e-07, (ode_real)0.000244140625, (ode_real)0.015625}" if real == "double" else
                "#define ODE_NSPLIT 3  /* after a restart, the events' search splits [0, 1] at 2^-18, 2^-12, 2^-6 */\n"
                "#define ODE_SPLITS {(ode_real)3.814697265625e-06, (ode_real)0.000244140625, (ode_real)0.015625}"),
               "#define ODE_REJECTED 1   /* flags above the status: the last attempt was rejected, */",
               "#define ODE_NONFINITE 2  /* ... and its error was not finite */",
               f"#define P_RTOL {P_RTOL}\n#define P_DT {P_DT}\n#define P_FIRST {P_FIRST}\n#define P_MAX_STEP {P_MAX_STEP}",
               f"#define P_ATOL {P_ATOL}\n#define P_T0 (P_ATOL + D)\n#define P_T1 (P_T0 + 1)\n#define P_A (P_T1 + 1)",
               "#define P_Y0 (P_A + ODE_NA)",
               f"#define Q_MAX_STEPS {Q_MAX_STEPS}\n#define Q_SPC {Q_SPC}\n#define Q_NT {Q_NT}",
               f"#define Q_SEED_LO {Q_SEED_LO}\n#define Q_SEED_HI {Q_SEED_HI}\n#define Q_FIRST {Q_FIRST}",
               f"#define Q_SH_Y0 {Q_SHARED}\n#define Q_SH_T0 {Q_SHARED + 1}\n#define Q_SH_T1 {Q_SHARED + 2}",
               f"#define Q_SH_A {Q_SHARED + 3}",
               ("#define ODE_LOG(x) ((ode_acc)ode_log((double)(x)))\n#define ODE_EXP(x) ((ode_acc)ode_exp((double)(x)))"
                if self.exact else f"#define ODE_LOG(x) log{f}((ode_acc)(x))\n#define ODE_EXP(x) exp{f}((ode_acc)(x))"),
               f"#define ODE_ASQRT sqrt{f}\n#define ODE_AFABS fabs{f}",
               f"#define ODE_FABS fabs{f}\n#define ODE_FMAX fmax{f}\n#define ODE_SQRT sqrt{f}",
               ("#define ODE_ABIG ((float)1e37)" if real == "float" else "#define ODE_ABIG 1e300"),
               ("#define ODE_SAFETY 0.9f\n#define ODE_MIN_FACTOR 0.2f\n#define ODE_MAX_FACTOR 10.0f" if real == "float"
                else "#define ODE_SAFETY 0.9\n#define ODE_MIN_FACTOR 0.2\n#define ODE_MAX_FACTOR 10.0"),
               ("#define ODE_BIG ((float)3.4028234663852886e38)\n#define ODE_EPS ((float)1.1920928955078125e-07)\n"
                "#define ODE_HTINY ((float)1.1754943508222875e-37)" if real == "float" else
                "#define ODE_BIG 1.7976931348623157e308\n#define ODE_EPS 2.220446049250313e-16\n"
                "#define ODE_HTINY 2.2250738585072014e-307"),
               "#define ODE_INF (ODE_BIG * 2)\n#define ODE_NAN (ODE_INF - ODE_INF)",
               "/* a large right-hand side is compiled once, out of line, and called (the compiler's time grows",
               " * faster than the code it inlines: a 256-state one took 28 s inlined at its ten call sites) */",
               "#if EAGLE_KIND_GPU\n#define ODE_OUTLINE static __device__ __noinline__\n#elif EAGLE_KIND_OPENCL\n"
               "#define ODE_OUTLINE static\n#elif defined(__GNUC__) && !defined(__clang__)\n"
               "/* gcc's SLP vectorizer over a long straight-line body costs more than the rest together */\n"
               "#define ODE_OUTLINE static __attribute__((noinline, optimize(\"no-tree-slp-vectorize\")))\n#else\n"
               "#define ODE_OUTLINE static __attribute__((noinline))\n#endif",
               "/* the schemes' calls of the functions: out of line past 100 traced ops (1000 on a GPU, where the",
               " * arrays a call takes by pointer leave the registers) */",
               f"#if EAGLE_KIND_GPU\n#define ODE_FN {'ODE_OUTLINE' if self.outline[1] else 'EAGLE_FN'}\n#else\n"
               f"#define ODE_FN {'ODE_OUTLINE' if self.outline[0] else 'EAGLE_FN'}\n#endif",
               "/* the rtol and atol of the error norm (tol[0], tol[1 + k]) */",
               f"#define ODE_NATOL {'D' if self.atol_each else 1}",
               f"#define ODE_RTOL tol[0]\n#define ODE_ATOL(k) tol[{'1 + (k)' if self.atol_each else '1'}]"]
        return "\n".join(out)

    def source(self, funcs, header):
        parts = [header, "#include <eagle/kernel.h>" + ("\n#include <eagle/random.h>" if self.s.random else ""),
                 self.constants(), RUNTIME, funcs, self.s.helpers(self), self.event_helpers(),
                 self.sm.helpers() if self.sm is not None else "", self.kernels()]
        return "\n\n".join(p for p in parts if p) + "\n"

    # ---------------------------------------------------------------------------------- events
    def event_helpers(self):
        if not self.events:
            return ""
        ne, L = len(self.events), self.L
        out = ["/* Every event function's value at (t, y). */",
               "EAGLE_FN void ode_g_all(const ode_real t, const ode_real* y, const ode_real* a, ode_real* g)", "{",
               *(f"    ode_g{e}(t, y, a, g + {e});" for e in range(ne)), "}",
               "/* Does g go from g0 to g1 in the direction the event watches (scipy's rule)? */",
               "EAGLE_FN int ode_crosses(const ode_real g0, const ode_real g1, const int dir)", "{",
               "    const int up = g0 <= 0 && g1 >= 0, down = g0 >= 0 && g1 <= 0;",
               "    return dir > 0 ? up : dir < 0 ? down : (up || down);", "}"]
        if self.s.dense:
            out += ["/* The crossing of event e in [t, t + h] (g0, g1 of opposite signs or zero), found on the",
                    " * scheme's dense output by the Illinois variant of regula falsi to 4 ulp of t. */",
                    "EAGLE_FN ode_real ode_locate(const int e, const ode_real t, const ode_real h, const ode_real lo0,",
                    "                             const ode_real hi0, const ode_real g0,",
                    "                             const ode_real g1, ode_real F[ODE_NF][D], const ode_real* y,",
                    "                             const ode_real* ynew, const ode_real* a)", "{",
                    "    ode_real lo = lo0, hi = hi0, glo = g0, ghi = g1, yt[D], g[ODE_NE];",
                    "    if (g0 == 0) return t + lo0 * h;",
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
                    "    return t + hi * h;", "}"]
        return "\n".join(out)

    # ---------------------------------------------------------------------------------- kernels
    def kernels(self):
        s, c, W, I = self.s, self.c, self.W, self.I
        ne, nt = len(self.events), self.nt
        sig = ("(ode_real*, W), (int32_t*, I), (uint8_t*, M), (const ode_real*, IN), (EAGLE_BUFFER const ode_real*, P), "
               "(EAGLE_BUFFER const uint32_t*, Q), (EAGLE_BUFFER const ode_real*, TE), (EAGLE_BUFFER ode_real*, YS), "
               "(EAGLE_BUFFER ode_real*, EVT), (EAGLE_BUFFER ode_real*, EVY), (EAGLE_BUFFER uint32_t*, DONE)"
               # a scheme's own planes ((name, rows) of reals, after the frame's: the adjoint's tape)
               + "".join(f", (ode_real*, {name})" for name, _ in getattr(s, "planes", ())))
        load = ["    ode_real a[ODE_NA > 0 ? ODE_NA : 1];",
                "    for (int k = 0; k < ODE_NA; ++k) a[k] = Q[Q_SH_A + k] ? P[P_A + k] : IN[(int64_t)(2 + k) * n + i];",
                "    const ode_real t0 = Q[Q_SH_T0] ? P[P_T0] : IN[i];",
                "    const ode_real t1 = Q[Q_SH_T1] ? P[P_T1] : IN[n + i];",
                "    ode_real tol[1 + ODE_NATOL];",
                "    tol[0] = P[P_RTOL];",
                "    for (int k = 0; k < ODE_NATOL; ++k) tol[1 + k] = P[P_ATOL + k];",
                "    const ode_real dt = P[P_DT];",
                "    const int32_t nt = (int32_t)Q[Q_NT], max_steps = (int32_t)Q[Q_MAX_STEPS];",
                "    (void)a; (void)t0; (void)t1; (void)tol; (void)dt; (void)nt; (void)max_steps;",
                "    (void)TE; (void)YS; (void)EVT; (void)EVY;"]
        if ne:
            load += ["    const int ode_terminal[ODE_NE] = {" + ", ".join(str(int(t)) for t, _, _ in self.events) + "};",
                     "    const int ode_dir[ODE_NE] = {" + ", ".join(str(int(x)) for _, x, _ in self.events) + "};",
                     "    const int ode_acts[ODE_NE] = {" + ", ".join(str(int(x)) for _, _, x in self.events) + "};",
                     "    const ode_real ode_split[ODE_NSPLIT] = ODE_SPLITS;",
                     "    (void)ode_terminal; (void)ode_dir; (void)ode_acts; (void)ode_split;"]
        init = ["/* Every sample: y0, the scheme's start, the outputs at t0, the events' first values. */",
                f"EAGLE_KERNEL({s.prefix}_init, {sig}, (EAGLE_BUFFER const ode_real*, Y0))", "{", *load,
                "    ode_real y[D];",
                "    int ok = 1;",
                "    const int shy = Q[Q_SH_Y0] != 0;",
                "    for (int k = 0; k < D; ++k) { y[k] = shy ? P[P_Y0 + k] : Y0[(int64_t)i * D + k]; ok = ok && ode_finite(y[k]); }",
                f"    for (int k = 0; k < D; ++k) {W('Y', 'k')} = y[k];",
                "    int32_t nfev = 0;",
                "    ode_real h = P[P_FIRST];",
                "    (void)h;",
                *s.init(self),
                "    int32_t status = ok ? ODE_RUNNING : ODE_FAIL_NONFINITE;"]
        if c is not None:
            init += [*(["    if (h > P[P_MAX_STEP]) h = P[P_MAX_STEP];"] if self.max_step else []), f"    {W('H')} = h;",
                     *c.init(self)]
        init += [*s.init_rows(self), f"    {W('T')} = t0;"]
        if nt:
            init += ["    for (int64_t q = 0; q < (int64_t)D * nt; ++q) YS[(int64_t)i * D * nt + q] = ODE_NAN;",
                     "    int32_t next = 0;",
                     "    while (next < nt && TE[next] <= t0) {",
                     "        for (int k = 0; k < D; ++k) YS[((int64_t)i * D + k) * nt + next] = y[k];",
                     "        next += 1;",
                     "    }",
                     f"    {I('NEXT')} = next;"]
        if ne:
            init += ["    ode_real g[ODE_NE];",
                     "    ode_g_all(t0, y, a, g);",
                     "    for (int e = 0; e < ODE_NE; ++e) {",
                     f"        {W('G', 'e')} = g[e];",
                     f"        {I('NEV', 'e')} = 0;",
                     "        for (int q = 0; q < ODE_KEV; ++q) EVT[((int64_t)e * ODE_KEV + q) * n + i] = ODE_NAN;",
                     "        for (int k = 0; k < D; ++k) EVY[((int64_t)e * D + k) * n + i] = ODE_NAN;",
                     "    }"]
        if self.sm is not None:
            init += self.sm.init()
        if self.acting:
            init.append(f"    {W('TRS')} = -ODE_INF;")
        if self.callbacks:
            init.append(f"    for (int c = 0; c < {len(self.callbacks)}; ++c) {I('NCB', 'c')} = 0;")
        init += ["    if (!(t1 > t0) && status == ODE_RUNNING) status = ODE_DONE;",
                 f"    {I('STATUS')} = status;", f"    {I('NFEV')} = nfev;", f"    {I('NACC')} = 0;", f"    {I('NREJ')} = 0;",
                 "    M[i] = status != ODE_RUNNING;",
                 "    if (i == 0) *DONE = 0u;", "}"]
        step = ["/* Up to Q[Q_SPC] steps of sample i; M[i] = 1 once it has ended (see I_STATUS). */",
                f"EAGLE_KERNEL({s.prefix}_step, {sig})", "{", *load,
                f"    ode_real t = {W('T')};",
                "    ode_real y[D], ynew[D];",
                f"    for (int k = 0; k < D; ++k) y[k] = {W('Y', 'k')};",
                f"    const int32_t st = {I('STATUS')};",
                "    int32_t status = st & 255, flags = (st >> 8) & 3, restarted = (st >> 10) & 1;",
                f"    int32_t nfev = {I('NFEV')}, nacc = {I('NACC')}, nrej = {I('NREJ')};",
                "    (void)flags; (void)nrej; (void)restarted;"]
        if self.sm is not None:
            step += self.sm.load()
        if self.acting:
            step += [f"    ode_real trs = {W('TRS')};  /* the last restart's time */"]
        if self.callbacks:
            nc = len(self.callbacks)
            step += [f"    int32_t ncb[{nc}];", "    ode_real tcb = ODE_INF;", "    (void)tcb;",
                     f"    for (int c = 0; c < {nc}; ++c) ncb[c] = {I('NCB', 'c')};"]
        if nt:
            step.append(f"    int32_t next = {I('NEXT')};")
        if c is not None:
            step += [f"    ode_real h = {W('H')};", *(["    const ode_real max_step = P[P_MAX_STEP];"] if self.max_step else []),
                     *c.load(self)]
        if ne:
            step += ["    ode_real gold[ODE_NE];", "    int32_t nev[ODE_NE];",
                     f"    for (int e = 0; e < ODE_NE; ++e) {{ gold[e] = {W('G', 'e')}; nev[e] = {I('NEV', 'e')}; }}"]
        step += [*s.call_start(self), "    const int32_t spc = (int32_t)Q[Q_SPC];"]
        if c is None:  # fixed steps on the grid t0 + k dt (no running sum); the last lands on t1 exactly
            step += ["    double nsd = ceil((double)(t1 - t0) / (double)dt - 1e-9);",
                     "    const int32_t nstep = nsd < 1 ? 1 : nsd > 2147483646.0 ? 2147483646 : (int32_t)nsd;",
                     "    for (int32_t ode_s = 0; ode_s < spc && status == ODE_RUNNING; ++ode_s) {",
                     "        if (nacc >= max_steps) { status = ODE_FAIL_MAX_STEPS; break; }",
                     "        const int last = nacc + 1 >= nstep;",
                     "        const ode_real tn = last ? t1 : t0 + (ode_real)(nacc + 1) * dt;",
                     "        const ode_real hh = last ? t1 - t : dt;",
                     *s.attempt(self),
                     "        int ok = 1;",
                     "        for (int k = 0; k < D; ++k) ok = ok && ode_finite(ynew[k]);",
                     "        if (!ok) {",
                     "            for (int k = 0; k < D; ++k) y[k] = ynew[k];",
                     "            t = tn; nacc += 1; status = ODE_FAIL_NONFINITE; break;",
                     "        }"]
        else:
            # the step floor: 10 eps |t| (10 to 20 ulp of t; scipy's is 10 ulp), and 10 of the smallest
            # normal step near t = 0 -- one multiply-add where nextafter costs a dozen instructions
            step += ["    for (int32_t ode_s = 0; ode_s < spc && status == ODE_RUNNING; ++ode_s) {",
                     "        if (nacc + nrej >= max_steps) { status = ODE_FAIL_MAX_STEPS; break; }"]
            if self.callbacks:
                step += [*self.next_callback(), "        if (tcb <= t) {", *self.apply_callbacks("            "),
                         "            if (status != ODE_RUNNING) break;", *self.next_callback(), "        }"]
            step += ["        const ode_real hmin = 10 * ODE_EPS * ODE_FABS(t) + ODE_HTINY;",
                     *(["        if (h > max_step) h = max_step;"] if self.max_step else []),
                     "        if (!(h >= hmin)) {",
                     "            if (flags & ODE_REJECTED) { status = (flags & ODE_NONFINITE) ? ODE_FAIL_NONFINITE : ODE_FAIL_STEP; break; }",
                     "            h = hmin;",
                     "        }",
                     "        ode_real tn = t + h;",
                     "        if (tn > t1) tn = t1;",
                     *(["        if (tn > tcb) tn = tcb;  /* a callback's time: stepped onto exactly */"]
                       if self.callbacks else []),
                     "        const ode_real hh = tn - t;",
                     *s.attempt(self), *c.decide(self, s.error_order)]
        step += self.accepted()
        step += ["        t = tn;", "        for (int k = 0; k < D; ++k) y[k] = ynew[k];", *s.accepted(self),
                 "        nacc += 1;", "        restarted = 0;"]
        if c is not None:
            step += ["        h = hh * (ode_real)fac;"]
            if self.callbacks:
                step += ["        if (t >= tcb) {", *self.apply_callbacks("            "),
                         "            if (status != ODE_RUNNING) break;", "        }"]
            step += ["        if (t >= t1) status = ODE_DONE;"]
        else:
            step += ["        if (nacc >= nstep) status = ODE_DONE;"]
        step += ["    }", f"    {W('T')} = t;", f"    for (int k = 0; k < D; ++k) {W('Y', 'k')} = y[k];"]
        if c is not None:
            step += [f"    {W('H')} = h;", *c.store(self)]
        if self.sm is not None:
            step += self.sm.store()
        if self.acting:
            step.append(f"    {W('TRS')} = trs;")
        if self.callbacks:
            step.append(f"    for (int c = 0; c < {len(self.callbacks)}; ++c) {I('NCB', 'c')} = ncb[c];")
        step += [*s.call_end(self), f"    {I('STATUS')} = status | (flags << 8) | (restarted << 10);",
                 f"    {I('NFEV')} = nfev;",
                 f"    {I('NACC')} = nacc;", f"    {I('NREJ')} = nrej;"]
        if nt:
            step.append(f"    {I('NEXT')} = next;")
        if ne:
            step.append(f"    for (int e = 0; e < ODE_NE; ++e) {{ {W('G', 'e')} = gold[e]; {I('NEV', 'e')} = nev[e]; }}")
        step += ["    M[i] = status != ODE_RUNNING;", "    if (status != ODE_RUNNING) ode_count_done(DONE);", "}"]
        return "\n".join(init) + "\n\n" + "\n".join(step)

    # ---- events that act, callbacks, summaries (eagle/ode/_acts.py states the contract)
    def restart(self, ind):
        """The integration restarts at (t, y) after an affect: the scheme's first stage again (FSAL)
        and a fresh first step, the controller's memory reset, every event's last value at the new
        state, and the restart flag (the events' search splits
        the next step near the restart point, and a root at the point itself is not counted again)."""
        out = [f"{ind}{x}" for x in getattr(self.s, "restart", lambda fr: [])(self)]
        if self.c is not None:
            out += [f"{ind}{x}" for x in getattr(self.c, "reset", lambda: [])()]
        if self.events:
            out.append(f"{ind}ode_g_all(t, y, a, gold);")
        out.append(f"{ind}restarted = 1;")
        if self.acting:
            out.append(f"{ind}trs = t;")
        return out

    def after_affect(self, ind):
        """After an affect replaced y: a state that is not finite fails the sample; the new state
        is a candidate for the extrema."""
        out = [f"{ind}{{ int ok = 1; for (int k = 0; k < D; ++k) ok = ok && ode_finite(y[k]);",
               f"{ind}  if (!ok) status = ODE_FAIL_AFFECT; }}"]
        if self.sm is not None:
            out += self.sm.point("y", "t", ind)
        return out

    def next_callback(self):
        """tcb: the earliest callback time not yet applied (ODE_INF: none)."""
        out, base = ["        tcb = ODE_INF;"], self.cb_base
        for c, mc in enumerate(self.callbacks):
            out.append(f"        if (ncb[{c}] < {mc} && a[{base} + ncb[{c}]] < tcb) tcb = a[{base} + ncb[{c}]];")
            base += mc
        return out

    def apply_callbacks(self, ind):
        """Every callback whose next time is <= t acts (in the order given), then the restart."""
        out, base = [f"{ind}int any = 0;"], self.cb_base
        for c, mc in enumerate(self.callbacks):
            out += [f"{ind}while (ncb[{c}] < {mc} && a[{base} + ncb[{c}]] <= t) {{",
                    f"{ind}    ode_real yaff[D];",
                    f"{ind}    ode_cb{c}(t, y, a, yaff);",
                    f"{ind}    for (int k = 0; k < D; ++k) y[k] = yaff[k];",
                    f"{ind}    ncb[{c}] += 1; any = 1;",
                    f"{ind}}}"]
            base += mc
        return out + [f"{ind}if (any) {{", *self.after_affect(ind + "    "),
                      f"{ind}    if (status == ODE_RUNNING) {{", *self.restart(ind + "        "), f"{ind}    }}",
                      f"{ind}}}"]

    def accepted(self):
        """The accepted step (t, y) -> (tn, ynew) of size hh: events and t_eval, located on the dense
        output of a dense scheme, at the step's end otherwise; summaries over the step; an event
        crossing that acts (an affect, or a terminal count reached) ends the step at its time,
        applies the affects and restarts there, or ends the sample."""
        dense, ne, nt = self.s.dense, len(self.events), self.nt
        acting = any(x for _, _, x in self.events)
        out = ["        int prepared = 0;", "        ode_real tstop = tn;", "        (void)prepared;"]
        prep = f"if (!prepared) {{ {self.s.prepare} prepared = 1; }}" if dense else ""
        if ne:
            out += ["        int act = -1;  /* the event whose crossing acts at tstop (-1: none) */",
                    "        ode_real gnew[ODE_NE], troot[ODE_NE];",
                    "        ode_g_all(tn, ynew, a, gnew);",
                    "        int hit[ODE_NE];",
                    "        for (int e = 0; e < ODE_NE; ++e) hit[e] = 0;"]
            if dense:
                out += ["        /* after a restart the events' values at the restart point sit on the root just handled:",
                        "         * [0, 1] is searched in parts split at theta = ode_split[q] (geometrically closer to",
                        "         * the restart point: the dense output there tells the side the state left to, even",
                        "         * when it comes back within the step), and a root within the root finder's tolerance",
                        "         * of the restart point is the crossing just handled, not a new one */",
                        f"        const ode_real near = {self.L(8)} * ODE_EPS * (ODE_FABS(t) + ODE_FABS(hh));",
                        "        (void)near;",
                        "        if (restarted) {",
                        f"            {prep}",
                        "            ode_real gl[ODE_NE], gh[ODE_NE], ys[D], lo = 0;",
                        "            for (int e = 0; e < ODE_NE; ++e) gl[e] = gold[e];",
                        "            for (int q = 0; q <= ODE_NSPLIT; ++q) {",
                        f"                const ode_real hi = q < ODE_NSPLIT ? ode_split[q] : {self.L(1)};",
                        "                if (q < ODE_NSPLIT) {",
                        "                    ode_dense_eval(Fd, y, ynew, hh, hi, ys);",
                        "                    ode_g_all(t + hi * hh, ys, a, gh);",
                        "                } else {",
                        "                    for (int e = 0; e < ODE_NE; ++e) gh[e] = gnew[e];",
                        "                }",
                        "                for (int e = 0; e < ODE_NE; ++e) {",
                        "                    if (hit[e] || !ode_crosses(gl[e], gh[e], ode_dir[e])) continue;",
                        "                    const ode_real r = ode_locate(e, t, hh, lo, hi, gl[e], gh[e], Fd, y, ynew, a);",
                        "                    if (r > t + near) { hit[e] = 1; troot[e] = r; }",
                        "                }",
                        "                for (int e = 0; e < ODE_NE; ++e) gl[e] = gh[e];",
                        "                lo = hi;",
                        "            }",
                        "        }"]
            out += ["        for (int e = 0; e < ODE_NE; ++e) {",
                    ("            if (!restarted && ode_crosses(gold[e], gnew[e], ode_dir[e])) {" if dense else
                     "            if (ode_crosses(gold[e], gnew[e], ode_dir[e])) {"),
                    *([f"                {prep}",
                       "                troot[e] = ode_locate(e, t, hh, 0, 1, gold[e], gnew[e], Fd, y, ynew, a);"] if dense else
                      ["                troot[e] = tn;  /* at this step's end: no interpolation */"]),
                    "                hit[e] = 1;",
                    "            }",
                    "            if (!hit[e]) continue;",
                    "            const int acts = ode_acts[e] || (ode_terminal[e] && nev[e] + 1 >= ode_terminal[e]);",
                    "            if (acts && (act < 0 || troot[e] < tstop)) { act = e; tstop = troot[e]; }",
                    "        }",
                    "        for (int e = 0; e < ODE_NE; ++e) {",
                    "            if (!hit[e] || troot[e] > tstop) continue;",
                    "            if (nev[e] < ODE_KEV) EVT[((int64_t)e * ODE_KEV + nev[e]) * n + i] = troot[e];",
                    "            if (nev[e] == 0) {",
                    "                ode_real ye[D];",
                    ("                ode_dense_eval(Fd, y, ynew, hh, (troot[e] - t) / hh, ye);" if dense else
                     "                for (int k = 0; k < D; ++k) ye[k] = ynew[k];"),
                    "                for (int k = 0; k < D; ++k) EVY[((int64_t)e * D + k) * n + i] = ye[k];",
                    "            }",
                    "            nev[e] += 1;",
                    "        }"]
        if nt:
            # a grid scheme's t_eval points lie on its step ends: within a thousandth of the step
            # (a point at t1 itself waits for the step that lands there, however short)
            reach = "tstop" if dense else "tstop + (ode_real)0.001 * hh && (TE[next] < t1 || tn == t1)"
            out += [f"        while (next < nt && TE[next] <= {reach}) {{",
                    "            ode_real yo[D];",
                    (f"            {prep}\n            if (TE[next] == tn) {{ for (int k = 0; k < D; ++k) yo[k] = ynew[k]; }}\n"
                     "            else ode_dense_eval(Fd, y, ynew, hh, (TE[next] - t) / hh, yo);" if dense else
                     "            for (int k = 0; k < D; ++k) yo[k] = ynew[k];"),
                    "            for (int k = 0; k < D; ++k) YS[((int64_t)i * D + k) * nt + next] = yo[k];",
                    "            next += 1;",
                    "        }"]
        if self.sm is not None:
            out += self.sm.step(self.s.fsal_stage, prep)
        if ne:
            out += ["        if (act >= 0) {  /* the sample goes to the crossing; affects act there; it restarts */",
                    # crossings of an event with an affect within 1024 x the root finder's tolerance of the
                    # last restart have accumulated (a ball bouncing to rest, at the resolution of t):
                    # the sample fails there rather than pass through the crossings it can no longer resolve
                    *(["            const int accum = ode_acts[act] && tstop - trs <= (ode_real)1024 * near;"]
                      if dense and self.acting else ["            const int accum = 0;"]),
                    *(["            ode_real ye[D];",
                       "            ode_dense_eval(Fd, y, ynew, hh, (tstop - t) / hh, ye);",
                       "            for (int k = 0; k < D; ++k) y[k] = ye[k];"] if dense else
                      ["            for (int k = 0; k < D; ++k) y[k] = ynew[k];"]),
                    "            t = tstop;",
                    "            nacc += 1;",
                    *(["            h = hh * (ode_real)fac;"] if self.c is not None else []),
                    "            int stop = 0;"]
            for e, (term, _, has) in enumerate(self.events):
                cond = f"hit[{e}] && troot[{e}] == tstop"
                if has:
                    out += [f"            if ({cond}) {{",
                            "                ode_real yaff[D];",
                            f"                ode_aff{e}(t, y, a, yaff);",
                            "                for (int k = 0; k < D; ++k) y[k] = yaff[k];",
                            *([f"                if (nev[{e}] > ODE_KEV) status = ODE_FAIL_MAX_EVENTS;"] if self.max_events else []),
                            "            }"]
                if term:
                    out.append(f"            if ({cond} && nev[{e}] >= {term}) stop = 1;")
            if acting:
                out += self.after_affect("            ")
            out += ["            if (status == ODE_RUNNING && accum) status = ODE_FAIL_MAX_EVENTS;",
                    "            if (status == ODE_RUNNING && stop) status = ODE_EVENT;",
                    "            if (status != ODE_RUNNING) break;",
                    *self.restart("            "),
                    "            continue;",
                    "        }",
                    "        for (int e = 0; e < ODE_NE; ++e) gold[e] = gnew[e];"]
        return out


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
