"""Step-size controllers as objects (diffrax's PIDController in spirit): the C a frame
(eagle/ode/_frame.py) puts around a scheme's attempted step to accept or reject it and choose the
next step. Any scheme with an error estimate (``err``: the RMS norm of err / (atol + rtol |y|),
accept below 1) takes either.

scipy's rules: safety 0.9, factors in [0.2, 10], no growth right after a rejection; the step-size
exponent is 1/k with k the error estimate's order + 1. The PI controller multiplies the I
controller's factor by (err_prev / err)^(0.4/k) (beta1 = 0.7/k, beta2 = 0.4/k: Hairer & Wanner's
PI); it keeps the log of the last accepted error norm in W's LERR row.

A controller gives ``rows`` (its W rows), ``init``/``load``/``store`` (C lines of the kernels'
prologue and epilogue) and ``decide(frame, error_order)``: C lines run after the attempt, which
``continue`` the step loop on a rejection (h shrunk, nrej counted) and define ``fac`` (the next
step's factor) on an acceptance."""
from ..errors import EagleValueError

LOG_1E4 = -9.210340371976182  # log(1e-4): the PI controller's first "previous error"


class I:
    """The integral controller: h_new = h 0.9 err^(-1/k) (scipy's)."""
    name = "I"
    rows = ()

    def init(self, fr):
        return []

    def load(self, fr):
        return []

    def store(self, fr):
        return []

    def accept_factor(self, k):
        return f"ODE_SAFETY * ODE_EXP((ode_acc){-1.0 / k!r} * lerr)"

    def remember(self):
        return []

    def decide(self, fr, error_order):
        k = error_order + 1
        return ["        const ode_acc lerr = err > 0 ? ODE_LOG(err) : (ode_acc)-87.0;  /* log of the error norm */",
                "        if (!(err < 1)) {  /* rejected (a nan error is a rejection too) */",
                "            const int finite = err <= ODE_ABIG;",
                f"            const ode_acc fac = finite ? ODE_SAFETY * ODE_EXP((ode_acc){-1.0 / k!r} * lerr) : 0;",
                "            h = hh * (ode_real)(fac > ODE_MIN_FACTOR ? fac : ODE_MIN_FACTOR);",
                "            flags = ODE_REJECTED | (finite ? 0 : ODE_NONFINITE);",
                "            nrej += 1;",
                "            continue;",
                "        }",
                "        ode_acc fac;",
                "        if (err == 0) fac = ODE_MAX_FACTOR;",
                f"        else fac = {self.accept_factor(k)};",
                "        if (fac > ODE_MAX_FACTOR) fac = ODE_MAX_FACTOR;",
                "        if (flags & ODE_REJECTED) { if (fac > 1) fac = 1; }",
                "        else if (fac < ODE_MIN_FACTOR) fac = ODE_MIN_FACTOR;",
                "        flags = 0;", *self.remember()]


class PI(I):
    """The PI controller: the I factor times (err_prev / err)^(0.4/k), err^(-0.7/k) in all."""
    name = "PI"
    rows = (("LERR", 1),)

    def init(self, fr):
        return [f"    {fr.W('LERR')} = (ode_real){LOG_1E4!r};  /* log(1e-4) */"]

    def load(self, fr):
        return [f"    ode_acc lerrp = (ode_acc){fr.W('LERR')};"]

    def store(self, fr):
        return [f"    {fr.W('LERR')} = (ode_real)lerrp;"]

    def accept_factor(self, k):
        return f"ODE_SAFETY * ODE_EXP((ode_acc){-0.7 / k!r} * lerr + (ode_acc){0.4 / k!r} * lerrp)"

    def remember(self):
        # log(max(err, 1e-4)), rounded as W stores it: a sample takes the same steps however its
        # steps are split between calls of the body
        return [f"        lerrp = (ode_acc)(ode_real)(lerr > (ode_acc){LOG_1E4!r} ? lerr : (ode_acc){LOG_1E4!r});"]


CONTROLLERS = {"PI": PI(), "I": I()}


def controller(name):
    if isinstance(name, I):
        return name
    if not isinstance(name, str) or name not in CONTROLLERS:
        raise EagleValueError(f"eagle.ode: controller must be 'PI' or 'I', got {name!r}")
    return CONTROLLERS[name]
