"""Reverse mode for ensemble solves: the discrete adjoint of an explicit Runge-Kutta solve.

The forward solve (``solve_ivp(..., adjoint=True)``) records the time and state at t0 and at the
end of every accepted step, with the step's size (the scheme :class:`RecordingRK`'s TAPE plane:
record k at rows k (d + 2) + (0: t_k, 1: the size hh of the step that ended there, 2 + c: y_k[c]),
sample i at column i). :meth:`AdjointSolution.vjp` then
runs one generated kernel per sample that replays the recorded steps backwards: it recomputes the
step's stages from (t, hh, y) exactly as the forward did, and transposes the stage recursion

    Y_s = y + hh sum_j A[s][j] K_j,  K_s = f(t + C[s] hh, Y_s, a),  y_new = y + hh sum_s B[s] K_s

with vector-Jacobian products v^T df/dy, v^T df/da generated from the derived graph
(eagle/ode/_derive.py). The accepted step sizes are held as the solve chose them, so the result
is the gradient of the discrete solution: it equals the forward sensitivities (eagle/ode/
_sensitivity.py) contracted with the cotangent, to rounding. Cotangents of the t_eval outputs are
taken through the method's dense output (its "P" polynomial, cubic Hermite or linear
interpolant).

Memory: the tape holds (capacity + 1) x (d + 2) numbers per sample (capacity = the most accepted steps
a sample may record); ``AdjointSolution.tape_bytes`` says how much. A sample whose steps overflow
the capacity makes the solver grow it to the largest count and solve again (once); a tape that
does not fit the device is refused with an EagleMemoryError naming its size. The reverse kernel
needs no memory beyond its inputs and outputs: each lane keeps its stages in its own registers.
"""
import numbers
import os
import threading
from collections import namedtuple

import numpy as np

from ..errors import EagleMemoryError, EagleValueError
from ._frame import DONE, EVENT, P_ATOL, Q_NT, Q_SHARED
from ._rk import RungeKutta
from ._sensitivity import _scalar_args, _sum, _times, explicit_only, traced
from ._trace import TracedFunction

Gradients = namedtuple("Gradients", ["y0", "args"])
Gradients.__doc__ = """The gradients of a vjp: ``y0`` (N, d) and ``args`` (N, n_args), per sample (a
shared argument's gradient is the sum of its column)."""

DEFAULT_CAPACITY = 128


def vjp_function(fun, d, n_args, dtype):
    """A TracedFunction over 2 d states (y, v) whose outputs are v^T df/dy (d) then v^T df/da
    (n_args): the transposed Jacobian products of ``fun`` at (t, y, a)."""
    tf, der = traced(fun, d, n_args, dtype)
    g = tf.graph
    v = [g.node("y", payload=d + i, value=d + i) for i in range(d)]
    cols, acols = {}, {}
    for (i, j), e in der.jac.items():
        cols.setdefault(j, []).append((i, e))
    for (i, k), e in der.dargs.items():
        acols.setdefault(k, []).append((i, e))
    outputs = [_sum([_times(e, v[i]) for i, e in sorted(cols.get(j, ()))], g) for j in range(d)]
    outputs += [_sum([_times(e, v[i]) for i, e in sorted(acols.get(k, ()))], g) for k in range(n_args)]
    return tf, TracedFunction(g, outputs, 2 * d, n_args, "v^T df/d(y, args)")


class RecordingRK(RungeKutta):
    """The explicit Runge-Kutta scheme (eagle/ode/_rk.py) that also writes the tape: record 0 at t0
    (in ``<p>_init``), record k + 1 when the k-th step is accepted. A sample that takes more than
    ``capacity`` accepted steps records the first ``capacity`` only (the solver then grows the tape
    and solves again)."""

    def __init__(self, method, *, capacity, **kw):
        super().__init__(method, **kw)
        self.capacity = capacity
        self.planes = (("TAPE", (capacity + 1) * (self.d + 2)),)
        self.name = f"{method.name} (recording its accepted steps, {capacity} a sample)"

    def helpers(self, fr):
        return f"#define ODE_REC {self.capacity}  /* the tape's capacity in accepted steps */\n" + super().helpers(fr)

    def init_rows(self, fr):
        return super().init_rows(fr) + [
            "    TAPE[i] = t0;",
            "    TAPE[(int64_t)n + i] = 0;",
            "    for (int k = 0; k < D; ++k) TAPE[(int64_t)(2 + k) * n + i] = y[k];"]

    def accepted(self, fr):
        return super().accepted(fr) + [
            "        if (nacc < ODE_REC) {  /* the tape: this step's end (t = tn, y = ynew) and size */",
            "            const int64_t rec = (int64_t)(nacc + 1) * (D + 2);",
            "            TAPE[rec * n + i] = t;",
            "            TAPE[(rec + 1) * n + i] = hh;",
            "            for (int k = 0; k < D; ++k) TAPE[(rec + 2 + k) * n + i] = y[k];",
            "        }"]


class _AdjointGen:
    """The C of the reverse kernel ``ode_adjoint`` for one solver (method, d, args, t_eval)."""

    def __init__(self, solver, f_text, vjp_text):
        self.s = solver
        self.m = solver.method
        self.f_text, self.vjp_text = f_text, vjp_text
        self.g = solver._run.scheme  # its combine(): the stage sums exactly as the forward's
        self.L = self.g.L

    def dense_bar(self):
        """C of ode_dense_bar: the cotangent c of the dense output at theta onto y, the stages, y_new
        and (Hermite) the derivative at the step's end."""
        m, L = self.m, self.L
        head = ["/* The dense output y(t + th h) = P(y, K, y_new) transposed: c onto yb, Kb, ynb and F1b. */",
                "EAGLE_FN void ode_dense_bar(const ode_real th, const ode_real h, const ode_real* c, ode_real* yb,",
                "                            ode_real Kb[ODE_NK][D], ode_real* ynb, ode_real* F1b)",
                "{",
                "    (void)th; (void)h; (void)c; (void)yb; (void)Kb; (void)ynb; (void)F1b;"]
        if m.dense == "P":
            body = ["    for (int k = 0; k < D; ++k) yb[k] += c[k];"]
            for s, row in enumerate(m.P):
                if not any(x != 0.0 for x in row):
                    continue
                poly = L(row[-1])
                for x in reversed(row[:-1]):
                    poly = f"{L(x)} + th * ({poly})"
                body.append(f"    {{ const ode_real w = h * th * ({poly});")
                body.append(f"      for (int k = 0; k < D; ++k) Kb[{s}][k] += w * c[k]; }}")
        elif m.dense == "hermite":
            body = ["    const ode_real t2 = th * th, t3 = t2 * th;",
                    f"    const ode_real h00 = {L(2)} * t3 - {L(3)} * t2 + {L(1)}, h10 = t3 - {L(2)} * t2 + th;",
                    f"    const ode_real h01 = {L(3)} * t2 - {L(2)} * t3, h11 = t3 - t2;",
                    "    for (int k = 0; k < D; ++k) {",
                    "        yb[k] += h00 * c[k];",
                    "        Kb[0][k] += h10 * h * c[k];",
                    "        ynb[k] += h01 * c[k];",
                    "        F1b[k] += h11 * h * c[k];",
                    "    }"]
        elif m.dense == "linear":
            body = ["    for (int k = 0; k < D; ++k) {",
                    f"        yb[k] += ({L(1)} - th) * c[k];",
                    "        ynb[k] += th * c[k];",
                    "    }"]
        else:
            raise EagleValueError(f"eagle.ode: the adjoint does not take t_eval cotangents through {m.name}'s dense "
                                  f"output ({m.dense}); use Tsit5, RK45, RK23, RK4 or Euler, or sensitivity=")
        return "\n".join(head + body + ["}"])

    def stages(self):
        m, L = self.m, self.L
        S = m.stages
        out = ["/* The step's stages from (t, h, y) exactly as the forward's ode_attempt: Ys[s] the stage states",
               " * (Ys[0] = y), K[s] the derivatives, ynew; K[S] = f(tn, ynew) when the dense output needs it. */",
               "EAGLE_FN void ode_stages(const ode_real t, const ode_real h, const ode_real tn, const ode_real* y,",
               "                         ode_real K[ODE_NK][D], ode_real Ys[ODE_NK][D], const ode_real* a,",
               "                         ode_real* ynew, const int need_last)",
               "{",
               "    (void)tn; (void)need_last;",
               "    for (int k = 0; k < D; ++k) Ys[0][k] = y[k];",
               "    ode_f(t, y, a, K[0]);"]
        for s in range(1, S):
            out += self.g.combine(f"Ys[{s}]", m.A[s][:s], f"s{s}")
            out.append(f"    ode_f(t + {L(m.C[s])} * h, Ys[{s}], a, K[{s}]);")
        out += self.g.combine("ynew", m.B, "b")
        if m.fsal:
            out.append(f"    if (need_last) ode_f(tn, ynew, a, K[{S}]);")
        out.append("}")
        return "\n".join(out)

    def source(self):
        s, m, L = self.s, self.m, self.L
        S = m.stages
        run = s._run
        w, irow, _, _ = run.frame.rows
        nt = s.t_eval is not None
        # does the dense output read the FSAL stage K[S]?
        last_used = nt and m.dense == "P" and m.fsal and any(x != 0.0 for x in m.P[S])
        hermite = nt and m.dense == "hermite"
        real = run.real
        nan = "(((float)3.4028234663852886e38) * 2 - ((float)3.4028234663852886e38) * 2)" if real == "float" else \
            "(1.7976931348623157e308 * 2 - 1.7976931348623157e308 * 2)"
        lines = [f"/* eagle.ode: the discrete adjoint of {m.name}, d = {s.n_state}, {s.n_args} argument(s)"
                 f"{', t_eval' if nt else ''}. Generated by eagle/ode/_adjoint.py. */",
                 "#include <eagle/kernel.h>",
                 f"#define EAGLE_ODE_REAL {real}\ntypedef {real} ode_real;",
                 f"#define D {s.n_state}\n#define ODE_NA {s.n_args}\n#define ODE_NK {S + 1}",
                 f"#define ODE_REC {run.scheme.capacity}",
                 f"#define I_STATUS {irow['STATUS']}\n#define I_NACC {irow['NACC']}",
                 (f"#define I_NEXT {irow['NEXT']}" if nt else ""),
                 f"#define ODE_DONE {DONE}\n#define ODE_EVENT {EVENT}\n#define Q_NT {Q_NT}",
                 f"#define ODE_NAN {nan}",
                 "/* where the run keeps the shared and per-sample arguments (eagle/ode/_frame.py) */",
                 f"#define P_A ({P_ATOL} + D + 2)\n#define Q_SH_A {Q_SHARED + 3}",
                 self.f_text, self.vjp_text,
                 "EAGLE_FN void ode_f(const ode_real t, const ode_real* y, const ode_real* a, ode_real* dy)\n"
                 "{\n    ode_user_f(t, y, a, dy);\n}",
                 "/* yb += v^T df/dy, ab += v^T df/da at (t, y). */",
                 "EAGLE_FN void ode_vjp_acc(const ode_real t, const ode_real* y, const ode_real* v, const ode_real* a,",
                 "                          ode_real* yb, ode_real* ab)",
                 "{",
                 "    ode_real yv[2 * D], out[D + ODE_NA];",
                 "    for (int k = 0; k < D; ++k) { yv[k] = y[k]; yv[D + k] = v[k]; }",
                 "    ode_user_vjp(t, yv, a, out);",
                 "    for (int k = 0; k < D; ++k) yb[k] += out[k];",
                 "    for (int k = 0; k < ODE_NA; ++k) ab[k] += out[D + k];",
                 "    (void)ab;",
                 "}",
                 self.stages(),
                 self.dense_bar() if nt else ""]
        ck = lambda j: L(m.C[j])  # noqa: E731
        body = [
            "/* Sample i: GY = d L / d y0 ((n, D)) and GA = d L / d a ((n, NA)) for the cotangents CY (of y at the end,",
            " * (n, D), sample-major as sol.y) and"
            " * CYS (of the t_eval states, (n, D, nt)), by the recorded steps replayed backwards. A sample that",
            " * failed (or recorded more steps than the tape holds) gets nan. */",
            "EAGLE_KERNEL(ode_adjoint, (const int32_t*, I), (const ode_real*, IN), (EAGLE_BUFFER const ode_real*, P),",
            "             (EAGLE_BUFFER const uint32_t*, Q), (EAGLE_BUFFER const ode_real*, TE), (const ode_real*, TAPE),",
            "             (EAGLE_BUFFER const ode_real*, CY), (EAGLE_BUFFER const ode_real*, CYS), (EAGLE_BUFFER ode_real*, GY),",
            "             (EAGLE_BUFFER ode_real*, GA))",
            "{",
            "    (void)TE; (void)CYS; (void)P; (void)IN;",
            "    const int32_t nt = (int32_t)Q[Q_NT];",
            "    (void)nt;",
            "    ode_real a[ODE_NA > 0 ? ODE_NA : 1], ab[ODE_NA > 0 ? ODE_NA : 1], lam[D];",
            "    for (int k = 0; k < ODE_NA; ++k) {",
            "        a[k] = Q[Q_SH_A + k] ? P[P_A + k] : IN[(int64_t)(2 + k) * n + i];",
            "        ab[k] = 0;",
            "    }",
            "    for (int k = 0; k < D; ++k) lam[k] = CY[(int64_t)i * D + k];",
            "    const int32_t status = I[(int64_t)I_STATUS * n + i] & 255;",
            "    const int32_t nacc = I[(int64_t)I_NACC * n + i];",
            "    if ((status != ODE_DONE && status != ODE_EVENT) || nacc > ODE_REC) {",
            "        for (int k = 0; k < D; ++k) GY[(int64_t)i * D + k] = ODE_NAN;",
            "        for (int k = 0; k < ODE_NA; ++k) GA[(int64_t)i * ODE_NA + k] = ODE_NAN;",
            "        return;",
            "    }",
            ("    int32_t j = I[(int64_t)I_NEXT * n + i] - 1;" if nt else ""),
            "    ode_real K[ODE_NK][D], Ys[ODE_NK][D], Kb[ODE_NK][D], y[D], ynew[D], yb[D], ynb[D], F1b[D], Yb[D];",
            "    (void)F1b;",
            "    for (int32_t s = nacc - 1; s >= 0; --s) {",
            "        const int64_t rec = (int64_t)s * (D + 2), nrec = rec + (D + 2);",
            "        const ode_real t = TAPE[rec * n + i], tn = TAPE[nrec * n + i], h = TAPE[(nrec + 1) * n + i];",
            "        for (int k = 0; k < D; ++k) y[k] = TAPE[(rec + 2 + k) * n + i];",
            f"        ode_stages(t, h, tn, y, K, Ys, a, ynew, {1 if last_used else 0});",
            "        for (int q = 0; q < ODE_NK; ++q) for (int k = 0; k < D; ++k) Kb[q][k] = 0;",
            "        for (int k = 0; k < D; ++k) { yb[k] = 0; ynb[k] = lam[k]; F1b[k] = 0; }"]
        if nt:
            body += [
                "        while (j >= 0 && TE[j] > t) {  /* the t_eval points this step wrote */",
                "            ode_real c[D];",
                "            for (int k = 0; k < D; ++k) c[k] = CYS[((int64_t)i * D + k) * nt + j];",
                "            if (TE[j] == tn) { for (int k = 0; k < D; ++k) ynb[k] += c[k]; }",
                "            else ode_dense_bar((TE[j] - t) / h, h, c, yb, Kb, ynb, F1b);",
                "            --j;",
                "        }"]
        if last_used:
            body.append(f"        ode_vjp_acc(tn, ynew, Kb[{S}], a, ynb, ab);  /* K[S] = f(tn, ynew) */")
        if hermite:
            body.append("        ode_vjp_acc(t + h, ynew, F1b, a, ynb, ab);  /* the Hermite end slope f(t + h, ynew) */")
        body.append("        for (int k = 0; k < D; ++k) yb[k] += ynb[k];")
        for s_, b in enumerate(m.B):
            if b != 0.0:
                body.append(f"        for (int k = 0; k < D; ++k) Kb[{s_}][k] += {L(b)} * h * ynb[k];")
        for st in range(S - 1, -1, -1):
            body.append("        for (int k = 0; k < D; ++k) Yb[k] = 0;")
            tt = "t" if st == 0 else f"t + {ck(st)} * h"
            body.append(f"        ode_vjp_acc({tt}, Ys[{st}], Kb[{st}], a, Yb, ab);")
            body.append("        for (int k = 0; k < D; ++k) yb[k] += Yb[k];")
            for jj in range(st):
                c = m.A[st][jj]
                if c != 0.0:
                    body.append(f"        for (int k = 0; k < D; ++k) Kb[{jj}][k] += {L(c)} * h * Yb[k];")
        body += ["        for (int k = 0; k < D; ++k) lam[k] = yb[k];",
                 "        (void)ynew; (void)K;",
                 "    }"]
        if nt:
            body += ["    for (; j >= 0; --j)  /* t_eval points at t0: y0 itself */",
                     "        for (int k = 0; k < D; ++k) lam[k] += CYS[((int64_t)i * D + k) * nt + j];"]
        body += ["    for (int k = 0; k < D; ++k) GY[(int64_t)i * D + k] = lam[k];",
                 "    for (int k = 0; k < ODE_NA; ++k) GA[(int64_t)i * ODE_NA + k] = ab[k];",
                 "}"]
        return "\n\n".join(x for x in lines if x) + "\n\n" + "\n".join(x for x in body if x) + "\n"


def _capacity(c):
    if c is True:
        return None
    if isinstance(c, bool) or not isinstance(c, numbers.Integral) or not 1 <= c < 2**31 - 1:
        raise EagleValueError(f"eagle.ode: adjoint= must be True or a tape capacity (an int >= 1: accepted steps a "
                              f"sample may record), got {c!r}")
    return int(c)


def _host_bytes_available():
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


class AdjointSolver:
    """An ensemble solver that records its accepted steps for reverse mode (see the module
    docstring). Takes :class:`Solver`'s keywords plus ``capacity`` (True: start at
    DEFAULT_CAPACITY steps a sample, grown to what the samples need; an int: that many, grown
    likewise when a sample takes more)."""

    def __init__(self, fun, *, capacity=True, events=None, **kwargs):
        from . import _check, _rhs
        for g, terminal, _ in _check.events_of(events, lambda g: isinstance(g, _rhs.C)):
            if terminal:
                raise EagleValueError("eagle.ode: adjoint= with a terminal event is not supported (its time moves "
                                      "with the parameters); use sensitivity= (forward mode), which gives "
                                      "the event's state and time derivatives")
        m = explicit_only(kwargs.get("method", "Tsit5"))
        if kwargs.get("t_eval") is not None and m.dense not in ("P", "hermite", "linear"):
            raise EagleValueError(f"eagle.ode: the adjoint does not take t_eval through {m.name}'s dense output "
                                  f"({m.dense}); use Tsit5, RK45, RK23, RK4 or Euler with t_eval, or sensitivity=")
        self._fun, self._events, self._kwargs = fun, events, kwargs
        self._capacity = _capacity(capacity)
        self._grown = self._capacity or DEFAULT_CAPACITY
        self._solver = None
        self._adjoint_mods = {}
        self._lock = threading.Lock()
        self._generation = 0

    def _make(self, cap):
        from ._solver import Solver
        n_state, n_args = self._kwargs["n_state"], self._kwargs["n_args"]
        dtype = self._kwargs.get("dtype") or "float64"
        tf, vjp_tf = vjp_function(self._fun, n_state, n_args, dtype)
        s = Solver(tf, events=self._events, _scheme=lambda m, **kw: RecordingRK(m, capacity=cap, **kw), **self._kwargs)
        s._adjoint_texts = (tf.c_function("ode_user_f"), vjp_tf.c_function("ode_user_vjp"))
        s._capacity = cap
        self._adjoint_mods = {}
        return s

    def _check_memory(self, b, n, cap):
        d = self._kwargs["n_state"]
        itemsize = np.dtype(self._kwargs.get("dtype") or "float64").itemsize
        need = (cap + 1) * (d + 2) * n * itemsize
        from ._run import host_kind
        if b.kind == host_kind():  # host memory: checked against what the host has free
            avail = _host_bytes_available()
            if avail is not None and need > 0.8 * avail:
                raise EagleMemoryError(f"eagle.ode: the adjoint's tape of N = {n} samples x {cap + 1} records x "
                                       f"{d + 2} numbers needs {need / 2**30:.2f} GiB; the host has "
                                       f"{avail / 2**30:.2f} GiB available: solve fewer samples at a time")
        return need

    def solve(self, y0, args=()):
        from ._run import backend_of
        if not isinstance(args, (tuple, list)):
            args = (args,)
        _scalar_args(args)
        with self._lock:
            cap = self._grown
            if self._solver is None or self._solver._capacity != cap:
                self._solver = self._make(cap)
            solver = self._solver
            n = _count(y0, args, solver)
            b = backend_of(solver._run.backend_arg, y0, "eagle.ode")
            self._check_memory(b, n, cap)
            sol = solver.solve(y0, args)
            most = int(sol.n_accepted.max()) if n else 0
            if most > cap:  # a sample outgrew the tape: grow it to the largest count, solve again
                self._grown = cap = most
                self._check_memory(b, n, cap)
                self._solver = solver = self._make(cap)
                sol = solver.solve(y0, args)
            self._generation += 1
            run = solver._run._runs[(b.path, n)]
            return AdjointSolution(self, solver, sol, run, self._generation, b, n)

    def _module(self, solver, b):
        mod = self._adjoint_mods.get(b.path)
        if mod is None:
            f_text, vjp_text = solver._adjoint_texts
            src = _AdjointGen(solver, f_text, vjp_text).source()
            solver.adjoint_source = src
            mod = self._adjoint_mods[b.path] = b.compile(src.encode(), name="eagle_ode_adjoint.c",
                                                         kernels=["ode_adjoint"], exact=solver._run.exact,
                                                         fast_math=solver._run.fast_math)
        return mod


def _count(y0, args, solver):
    """The solve's N from the per-sample inputs' shapes (host or device arrays alike)."""
    def shape(x):
        return tuple(getattr(x, "shape", None) or np.shape(x))
    ns = [shape(y0)[0]] if len(shape(y0)) == 2 else []
    ns += [shape(a)[0] for a in args if len(shape(a)) == 1]
    for t in (solver.t0, solver.t1):
        if np.ndim(t):
            ns.append(np.shape(t)[0])
    return ns[0] if ns else 1


class AdjointSolution:
    """An :class:`OdeSolution` (every field of it) whose accepted steps were recorded:
    :meth:`vjp` gives gradients for y0 and the args. ``tape_bytes``: the tape's size."""

    def __init__(self, owner, solver, sol, run, generation, backend, n):
        self._owner, self._solver, self._sol, self._run, self._generation = owner, solver, sol, run, generation
        self._backend, self._n = backend, n
        self.tape_capacity = solver._capacity
        self.tape_bytes = (solver._capacity + 1) * (solver.n_state + 2) * n * solver.dtype.itemsize

    def __getattr__(self, name):
        return getattr(self._sol, name)

    def __repr__(self):
        return repr(self._sol).replace("OdeSolution", "OdeSolution with a tape", 1)

    def vjp(self, cotangent_y, cotangent_ys=None, *, to_host=True):
        """The gradients of L with respect to every sample's y0 and args, for the cotangents
        ``cotangent_y`` = dL/dy(t_end) ((N, d); (d,): the same for every sample) and
        ``cotangent_ys`` = dL/dys ((N, d, T), with t_eval), by the discrete adjoint. Returns
        ``Gradients(y0=(N, d), args=(N, n_args))``, nan for a sample that failed. A cotangent that
        lives on the solve's device ((N, d) / (N, d, T) of its dtype, C order: a CuPy or eagle
        array) is read where it is; ``to_host=False`` returns the gradients as arrays of the
        solve's backend (``__dlpack__``: no copy to the host; args then (N, max(n_args, 1))). Call it before the same solver
        solves again."""
        from ._run import on_device, wait_for_producer
        if self._generation != self._owner._generation:
            raise EagleValueError("eagle.ode: this solution's tape was overwritten by a later solve of the same "
                                  "solver; call vjp before solving again")
        s, run = self._solver, self._run
        n, d, na = self._n, s.n_state, s.n_args
        dt = s.dtype
        nt = 0 if s.t_eval is None else s.t_eval.size
        b = self._backend
        mod = self._owner._module(s, b)
        buf = run.get("adjoint")
        if buf is None:  # the run's own cotangent and gradient buffers, reused by every vjp of it
            buf = run["adjoint"] = {"CY": b.empty((n, d), dt), "CYS": b.zeros((n, d, nt) if nt else (1,), dt),
                                    "GY": b.empty((n, d), dt), "GA": b.empty((n, max(na, 1)), dt)}
        st = s._run.lane(run, b, n)[0]  # the calling thread's stream over the run's planes
        keep = []
        for name, x, shape in (("CY", cotangent_y, (n, d)), ("CYS", cotangent_ys, (n, d, nt))):
            if x is None:
                if name == "CYS" and nt:
                    st.copy(buf["CYS"], np.zeros((n, d, nt), dt))
                continue
            if name == "CYS" and not nt:
                raise EagleValueError("eagle.ode: cotangent_ys was given but the solve had no t_eval")
            what = "cotangent_y" if name == "CY" else "cotangent_ys"
            if on_device(x):
                if tuple(x.shape) != shape or np.dtype(x.dtype) != dt:
                    raise EagleValueError(f"eagle.ode: {what} on the device must be {shape} of {dt}, got "
                                          f"{tuple(x.shape)} of {np.dtype(x.dtype)}")
                wait_for_producer(x, st)  # the array library's pending writes of x first
                st.copy(buf[name].address, x, int(np.prod(shape)) * dt.itemsize, direction="d2d")
                continue
            h = np.asarray(x, dtype=dt)
            if name == "CY" and h.shape == (d,):
                h = np.broadcast_to(h, shape)
            if h.shape != shape:
                raise EagleValueError(f"eagle.ode: {what} must have shape {shape}"
                                      f"{f' (or ({d},), the same for every sample)' if name == 'CY' else ''}, got "
                                      f"{np.shape(x)}")
            h = np.ascontiguousarray(h)
            keep.append(h)
            st.copy(buf[name], h)
        GY, GA = (buf["GY"], buf["GA"]) if to_host else (b.empty((n, d), dt), b.empty((n, max(na, 1)), dt))
        st.run(mod.ode_adjoint, [self._sol._I, run["IN"], run["P"], run["Q"], run["TE"], run["TAPE"], buf["CY"],
                                 buf["CYS"], GY, GA], n)
        st.synchronize()
        del keep
        if not to_host:
            return Gradients(GY, GA)
        return Gradients(GY.numpy(), np.ascontiguousarray(GA.numpy()[:, :na]))
