"""method="auto": each sample starts with Tsit5 and switches, alone, to Rodas5P when its problem
turns stiff (LSODA's idea, per sample, on the device) -- a scheme of the one ensemble run
(eagle/ode/_run.py; the interface: eagle/ode/SCHEMES.md).

The generated C holds both attempts: Tsit5's (eagle/ode/_rk.py, renamed ode_attempt_ex) and
Rodas5P's (eagle/ode/_implicit.py's StiffScheme: Jacobian, LU, ode_attempt renamed ode_attempt_im),
dispatched on the sample's mode (W row MODE: 0 explicit, 1 implicit). The Rodas5P locals (J, LU)
are declared for every lane but touched only by implicit ones.

The stiffness test: every STIFF_EVERY accepted Tsit5 steps, the spectral radius rho of J(t, y) is
estimated by power iteration (J from ode_jac: derived from the trace, the user's jac= or
differences; a few d x d products) and h rho compared with STIFF_BOUNDARY (Tsit5's stability
region reaches -3.51 on the real axis): above it, the step size is held by stability, not
accuracy. STIFF_COUNT such tests in a row switch the sample (W rows NST: the count, NNS: the
steps since the last test). Hairer's cheaper estimate from the last two stages (h ||K7 - K6|| /
||Y7 - Y6||, DOPRI5's) was tried first and missed Robertson's kinetics: on a numerically smooth
solution Y7 - Y6 is the non-stiff O(h^2) part, so it stayed below 0.5 while Tsit5 crawled at the
stability limit for 20 000 steps. On the switch, t, y and the next h are kept, the PI
controller's memory is reset and Rodas5P starts from the J just computed. The switch is one way
(no switch back); its time is kept in W row SW (nan: never): ``sol.switched_at``.

Dense output: both interpolants are written in one power form y + h th (F0 + th (F1 + th (F2 +
th F3))) (Tsit5's P form as it is; Rodas5P's (1 - th) y + th (ynew + (1 - th)(H0 + th H1 + th^2
H2)) expanded into it), so t_eval and events use the mode of the step they fall in.

A sample that never switches computes exactly Tsit5's steps (the same attempt function, the same
first step, controller and FSAL stage): its results equal method="Tsit5"'s bit for bit."""
from ..errors import EagleValueError
from ._implicit import StiffScheme
from ._methods import TSIT5
from ._rk import FSAL_COUNT, RungeKutta
from ._solution import OdeSolution
from ._stiff_methods import RODAS5P

STIFF_BOUNDARY = 3.0   # h rho(J) above which a step is held by stability (Tsit5's real boundary: 3.51)
STIFF_EVERY = 10       # accepted Tsit5 steps between two tests
STIFF_COUNT = 3        # consecutive positive tests that switch the sample
POWER_ITERATIONS = 6   # matrix-vector products of one test


class AutoSolution(OdeSolution):
    """An :class:`OdeSolution` with ``switched_at``: (N,) the time each sample switched from Tsit5
    to Rodas5P (nan: it stayed explicit)."""

    @property
    def switched_at(self):
        w, _, _, _ = self._rows()
        return self._host("W", self._W)[w["SW"]].copy()


class AutoMethod:
    """The method object of method="auto" (what ``Solver.method`` reports)."""
    name = "auto"
    description = "Tsit5, switching per sample to Rodas5P when stiffness is detected"
    order = 5
    error_order = 4
    implicit = True    # takes jac= (for its Rodas5P phase); save=, callbacks, affects are refused
    adaptive = True
    explicit, stiff = TSIT5, RODAS5P


AUTO = AutoMethod()


def is_auto(method):
    return method is AUTO or (isinstance(method, str) and method.lower() == "auto")


class AutoScheme(StiffScheme):
    """The scheme of method="auto": StiffScheme for Rodas5P (``self.m``), RungeKutta for Tsit5
    (``self.ex``), a mode row per sample."""

    def __init__(self, *, d, real, fun, jac):
        super().__init__(RODAS5P, adaptive=True, d=d, real=real, fun=fun, jac=jac)
        self.ex = RungeKutta(TSIT5, adaptive=True, d=d, real=real)
        self.name = "auto (Tsit5, switching per sample to Rodas5P)"
        if self.ex.error_order != self.error_order:  # one controller exponent serves both
            raise EagleValueError("eagle.ode: method='auto' needs the same error order for both methods")
        if len(self.m.H) + 1 > len(TSIT5.P[0]):
            raise EagleValueError("eagle.ode: method='auto': Rodas5P's interpolant does not fit Tsit5's form")

    solution = AutoSolution

    def w_rows(self, d):
        return (*super().w_rows(d), ("MODE", 1), ("NST", 1), ("NNS", 1), ("SW", 1))

    def init_rows(self, fr):
        return [*super().init_rows(fr), f"    {fr.W('MODE')} = 0;", f"    {fr.W('NST')} = 0;",
                f"    {fr.W('NNS')} = 0;", f"    {fr.W('SW')} = ODE_NAN;"]

    def helpers(self, fr):
        ex, L = self.ex, self.L
        nk = max(len(self.m.c) + 1, TSIT5.stages + 1)
        ex_attempt = ex._attempt_function().replace("ode_attempt(", "ode_attempt_ex(")
        im_attempt = self._attempt_function().replace("ode_attempt(", "ode_attempt_im(")
        ex_dense = ex.dense_output().replace("ode_dense_prepare(", "ode_dense_prepare_ex(")
        return "\n\n".join(["/* The right-hand side. */\n"
                            "ODE_FN void ode_f(const ode_real t, const ode_real* y, const ode_real* a, ode_real* dy)\n"
                            "{\n    ode_user_f(t, y, a, dy);\n}",
                            f"#define ODE_NK {nk}  /* stage slots: Tsit5's 7, Rodas5P's 9 */\n" + self.sizes(),
                            self._prelude(), "/* Tsit5's attempt. */\n" + ex_attempt,
                            "/* Rodas5P's attempt. */\n" + im_attempt,
                            ex_dense, self._im_dense(), self.initial_step(), self._stiffness(L)])

    def _im_dense(self):
        """Rodas5P's dense output in Tsit5's power form (ODE_NF slots, eval y + h th p(th)):
        (1 - th) y + th ynew + (th - th^2) sum_r th^r H_r = y + sum_j G_j th^j with G_1 = ynew - y +
        H0, G_j = H_{j-1} - H_{j-2}, G_{R+1} = -H_{R-1}; F_{j-1} = G_j / h."""
        L, H = self.L, self.m.H
        R = len(H)
        out = ["/* Rodas5P's dense output, written in Tsit5's form (F = the power coefficients / h). */",
               "EAGLE_FN void ode_dense_prepare_im(const ode_real t, const ode_real h, const ode_real* y,",
               "                                   const ode_real* ynew, ode_real K[ODE_NK][D], const ode_real* a,",
               "                                   ode_real F[ODE_NF][D], int32_t* nfev)",
               "{",
               "    (void)t; (void)a; (void)nfev;",
               "    const ode_real ih = 1 / h;",
               "    for (int k = 0; k < D; ++k) {",
               f"        ode_real Hr[{R}];"]
        for r, row in enumerate(H):
            terms = " + ".join(f"{L(x)} * K[{1 + j}][k]" for j, x in enumerate(row) if x != 0.0)
            out.append(f"        Hr[{r}] = {terms};")
        out.append("        F[0][k] = (ynew[k] - y[k] + Hr[0]) * ih;")
        for j in range(2, R + 1):
            out.append(f"        F[{j - 1}][k] = (Hr[{j - 1}] - Hr[{j - 2}]) * ih;")
        out.append(f"        F[{R}][k] = -Hr[{R - 1}] * ih;")
        for j in range(R + 1, len(TSIT5.P[0])):
            out.append(f"        F[{j}][k] = 0;")
        out += ["    }", "}"]
        return "\n".join(out)

    def _stiffness(self, L):
        """C of the spectral-radius estimate: rho(J) at (t, y) by power iteration (J from ode_jac:
        the trace's derivative, the user's jac= or differences), into JT."""
        return "\n".join([
            "/* |lambda|max of J(t, y) by power iteration from a fixed generic vector: the geometric mean of",
            f" * the last two of {POWER_ITERATIONS} growth ratios (converges for a dominant real eigenvalue, averages a",
            " * complex pair's modulus); J is left in JT (the implicit attempt reuses it at the same t). */",
            "EAGLE_FN ode_acc ode_spectral_radius(const ode_real t, const ode_real* y, const ode_real* a, ode_real* JT,",
            "                                     int32_t* nfev)",
            "{",
            "    ode_jac(t, y, a, JT, nfev);",
            "    ode_acc v[D], w[D], r1 = 0, r2 = 0;",
            f"    for (int k = 0; k < D; ++k) v[k] = (ode_acc)1 / ((ode_acc)1 + (ode_acc){0.6180339887498949!r} * (ode_acc)k);",
            f"    for (int it = 0; it < {POWER_ITERATIONS}; ++it) {{",
            "        ode_acc nv = 0, nw = 0;",
            "        for (int r = 0; r < D; ++r) {",
            "            ode_acc s = 0;",
            "            for (int c = 0; c < D; ++c) s += (ode_acc)JT[r * D + c] * v[c];",
            "            w[r] = s;",
            "            nv += v[r] * v[r];",
            "            nw += s * s;",
            "        }",
            "        if (!(nw > 0) || !(nw <= ODE_ABIG)) return nw > 0 ? ODE_ABIG : 0;",
            "        const ode_acc q = ODE_ASQRT(nw / nv), inv = 1 / ODE_ASQRT(nw);",
            "        r1 = r2; r2 = q;",
            "        for (int k = 0; k < D; ++k) v[k] = w[k] * inv;",
            "    }",
            "    return ODE_ASQRT(r1 * r2);",
            "}"])

    def call_start(self, fr):
        return ([f"    int ode_mode = (int){fr.W('MODE')}, ode_nst = (int){fr.W('NST')}, ode_nns = (int){fr.W('NNS')};",
                 f"    ode_real ode_sw = {fr.W('SW')};"]
                + super().call_start(fr)
                + ["    if (ode_mode == 0) { ode_f(t, y, a, K[0]); " + FSAL_COUNT.strip() + " }  /* Tsit5's FSAL stage */"])

    def attempt(self, fr=None):
        im = super().attempt(fr)
        im = [x.replace("const ode_acc err = ode_attempt(", "err = ode_attempt_im(") for x in im]
        return (["        ode_acc err;",
                 "        if (ode_mode == 0) {",
                 "            err = ode_attempt_ex(t, hh, tn, y, K, a, ynew, tol);",
                 f"            nfev += {TSIT5.stages};",
                 "        } else {"]
                + ["    " + x for x in im]
                + ["        }"])

    @property
    def prepare(self):
        args = "(t, hh, y, ynew, K, a, Fd, &nfev);"
        return f"if (ode_mode == 0) ode_dense_prepare_ex{args} else ode_dense_prepare_im{args}"

    def accepted(self, fr):
        S = TSIT5.stages
        reset = fr.c.reset() if fr.c is not None else []
        return ["        if (ode_mode == 0) {",
                f"            for (int k = 0; k < D; ++k) K[0][k] = K[{S}][k];  /* FSAL */",
                f"            if (++ode_nns >= {STIFF_EVERY} && t < t1) {{  /* the stiffness test, at the new (t, y) */",
                "                ode_nns = 0;",
                "                const ode_acc hr = (ode_acc)hh * ode_spectral_radius(t, y, a, ode_JT, &nfev);",
                "                ode_jt = t; ode_luh = 0;",
                f"                ode_nst = hr > (ode_acc){STIFF_BOUNDARY!r} ? ode_nst + 1 : 0;",
                f"                if (ode_nst >= {STIFF_COUNT}) {{  /* stiff: Rodas5P from here on (t, y, h kept) */",
                "                    ode_mode = 1; ode_sw = t;",
                *("                    " + x for x in reset),
                "                }",
                "            }",
                "        }"]

    def call_end(self, fr):
        return [*super().call_end(fr), f"    {fr.W('MODE')} = (ode_real)ode_mode;",
                f"    {fr.W('NST')} = (ode_real)ode_nst;", f"    {fr.W('NNS')} = (ode_real)ode_nns;",
                f"    {fr.W('SW')} = ode_sw;"]

    fsal_stage = None

    def flops_per_step(self):
        return None
