"""method="auto": each sample starts with Tsit5 and switches, alone, to Rodas5P when its problem
turns stiff (LSODA's idea, per sample, on the device) -- a scheme of the one ensemble run
(eagle/ode/_run.py; the interface: eagle/ode/SCHEMES.md).

The generated C holds both attempts: Tsit5's (eagle/ode/_rk.py, renamed ode_attempt_ex) and
Rodas5P's (eagle/ode/_implicit.py's StiffScheme: Jacobian, LU, ode_attempt renamed ode_attempt_im),
dispatched on the sample's mode (W row MODE: 0 explicit, 1 implicit). The Rodas5P locals (J, LU)
are declared for every lane but touched only by implicit ones.

The stiffness test (Hairer's, DOPRI5's): after an accepted explicit step of size h,
    rho h = h ||K7 - K6|| / ||ynew - Y6||
estimates |h lambda| of the dominant eigenvalue from the last two stages (both at t + h: Y6 the
6th stage's argument, ynew the solution; ynew - Y6 = h sum (b_j - a6_j) K_j). Where it exceeds
STIFF_BOUNDARY (Tsit5's real stability boundary is about 3.5) the step size is being held by
stability, not accuracy; STIFF_COUNT such steps with no NONSTIFF_RESET non-stiff ones between them
switch the sample (W rows NST, NNS count them). On the switch, t, y and the next h are kept, the
PI controller's memory is reset and Rodas5P computes J and f(t, y) at its first attempt. The
switch is one way (no switch back) and its time is kept in W row SW (nan: never):
``sol.switched_at``.

Dense output: both interpolants are written in one power form y + h th (F0 + th (F1 + th (F2 +
th F3))) (Tsit5's P form as it is; Rodas5P's (1 - th) y + th (ynew + (1 - th)(H0 + th H1 + th^2
H2)) expanded into it), so t_eval and events use the mode of the step they fall in.

A sample that never switches computes exactly Tsit5's steps (the same attempt function, the same
first step, controller and FSAL stage): its results equal method="Tsit5"'s bit for bit."""
import math

from ..errors import EagleValueError
from ._implicit import StiffScheme
from ._methods import TSIT5
from ._rk import RungeKutta
from ._solution import OdeSolution
from ._stiff_methods import RODAS5P

STIFF_BOUNDARY = 3.3   # |h lambda| above which a step counts as stiff (Hairer's DOPRI5 uses 3.25)
STIFF_COUNT = 15       # stiff steps that switch the sample (DOPRI5's)
NONSTIFF_RESET = 6     # non-stiff steps in a row that forget the stiff count (DOPRI5's)


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
                            f"#define ODE_NK {nk}  /* stage slots: Tsit5's 7, Rodas5P's 9 */\n"
                            f"#define ODE_DC {self.dc}  /* components the error norm and the first step see */",
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
        """C of Hairer's |h lambda| estimate after an accepted Tsit5 step."""
        S = TSIT5.stages
        a6 = list(TSIT5.A[S - 1]) + [0.0] * (S - len(TSIT5.A[S - 1]))
        diff = [(b - a) for b, a in zip(TSIT5.B, a6)]
        terms = " + ".join(f"{L(c)} * K[{j}][k]" for j, c in enumerate(diff) if c != 0.0)
        return "\n".join([
            "/* Hairer's stiffness estimate after an accepted Tsit5 step of size h: h ||K[S] - K[S-1]|| /",
            " * ||ynew - Y_{S-1}|| (both stages at t + h), an estimate of |h lambda|; 0 when undefined. */",
            "EAGLE_FN ode_acc ode_stiff_hl(const ode_real h, ode_real K[ODE_NK][D])",
            "{",
            "    ode_acc num = 0, den = 0;",
            "    for (int k = 0; k < D; ++k) {",
            f"        const ode_acc dk = (ode_acc)(K[{S}][k] - K[{S - 1}][k]);",
            f"        const ode_acc dy = (ode_acc)(h * ({terms}));",
            "        num += dk * dk;",
            "        den += dy * dy;",
            "    }",
            "    if (!(den > 0)) return 0;",
            "    return ODE_AFABS((ode_acc)h) * ODE_ASQRT(num / den);",
            "}"])

    def call_start(self, fr):
        return ([f"    int ode_mode = (int){fr.W('MODE')}, ode_nst = (int){fr.W('NST')}, ode_nns = (int){fr.W('NNS')};",
                 f"    ode_real ode_sw = {fr.W('SW')};"]
                + super().call_start(fr)
                + ["    if (ode_mode == 0) { ode_f(t, y, a, K[0]); nfev += 1; }  /* Tsit5's FSAL stage */"])

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
                f"            if (ode_stiff_hl(hh, K) > (ode_acc){STIFF_BOUNDARY!r}) {{ ode_nst += 1; ode_nns = 0; }}",
                f"            else if (++ode_nns >= {NONSTIFF_RESET}) ode_nst = 0;",
                f"            if (ode_nst >= {STIFF_COUNT} && tn < t1) {{  /* stiff: Rodas5P from here on (t, y, h kept) */",
                "                ode_mode = 1; ode_sw = tn;",
                *("                " + x for x in reset),
                "            }",
                "        }"]

    def call_end(self, fr):
        return [*super().call_end(fr), f"    {fr.W('MODE')} = (ode_real)ode_mode;",
                f"    {fr.W('NST')} = (ode_real)ode_nst;", f"    {fr.W('NNS')} = (ode_real)ode_nns;",
                f"    {fr.W('SW')} = ode_sw;"]

    fsal_stage = None

    def flops_per_step(self):
        return None
