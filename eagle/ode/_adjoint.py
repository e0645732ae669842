"""Reverse mode for ensemble solves: the discrete adjoint of an explicit Runge-Kutta solve.

The forward solve (``solve_ivp(..., adjoint=True)``) records, for every accepted step s of sample
i, the step's start t, its size hh, its end tn and the state y there (the TAPE plane of
eagle/ode/_codegen.py: row s (d + 3) + c, sample i at column i). :meth:`AdjointSolution.vjp` then
runs one generated kernel per sample that replays the recorded steps backwards: it recomputes the
step's stages from (t, hh, y) exactly as the forward did, and transposes the stage recursion

    Y_s = y + hh sum_j A[s][j] K_j,  K_s = f(t + C[s] hh, Y_s, a),  y_new = y + hh sum_s B[s] K_s

with vector-Jacobian products v^T df/dy, v^T df/da generated from the derived graph
(eagle/ode/_derive.py). The accepted step sizes are held as the solve chose them, so the result
is the gradient of the discrete solution: it equals the forward sensitivities (eagle/ode/
_sensitivity.py) contracted with the cotangent, to rounding. Cotangents of the t_eval outputs are
taken through the method's dense output (its "P" polynomial, cubic Hermite or linear
interpolant).

Memory: the tape holds capacity x (d + 3) numbers per sample (capacity = the most accepted steps
a sample may record); ``AdjointSolution.tape_bytes`` says how much. A sample whose steps overflow
the capacity makes the solver grow it to the largest count and solve again (once); a tape that
does not fit the device is refused with an EagleMemoryError naming its size. The reverse kernel
needs no memory beyond its inputs and outputs: each lane keeps its stages in its own registers.
"""
import math
import numbers
import os
import threading
from collections import namedtuple

import numpy as np

import eagle
from ..errors import EagleMemoryError, EagleTypeError, EagleValueError
from . import _codegen
from ._codegen import DONE, EVENT
from ._sensitivity import _sum, _times, traced
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


class _AdjointGen:
    """The C of the reverse kernel ``ode_adjoint`` for one solver (method, d, args, t_eval)."""

    def __init__(self, solver, f_text, vjp_text):
        self.s = solver
        self.m = solver.method
        self.f_text, self.vjp_text = f_text, vjp_text
        o = _codegen.Options(solver.method, solver.n_state, solver.n_args, solver.real, adaptive=solver.adaptive,
                             rtol=solver.rtol, atol=1.0, dt=solver.dt, first_step=None, max_step=math.inf,
                             max_steps=1, steps_per_call=1, t_eval_count=0, events=[], controller="PI",
                             t0=0.0, t1=1.0, per_sample=False, exact=solver.exact)
        self.g = _codegen._Gen(o)  # its combine(): the stage sums exactly as the forward's
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
        w, irow, _, _ = s._rows
        nt = 0 if s.t_eval is None else s.t_eval.size
        # does the dense output read the FSAL stage K[S]?
        last_used = bool(nt) and m.dense == "P" and m.fsal and any(x != 0.0 for x in m.P[S])
        hermite = bool(nt) and m.dense == "hermite"
        real = s.real
        lines = [f"/* eagle.ode: the discrete adjoint of {m.name}, d = {s.n_state}, {s.n_args} argument(s), {nt} "
                 f"t_eval point(s). Generated by eagle/ode/_adjoint.py. */",
                 "#include <eagle/kernel.h>",
                 f"#define EAGLE_ODE_REAL {real}\ntypedef {real} ode_real;",
                 f"#define D {s.n_state}\n#define ODE_NA {s.n_args}\n#define ODE_NT {nt}\n#define ODE_NK {S + 1}",
                 f"#define ODE_REC {s._record}",
                 f"#define W_T {w['T']}\n#define I_STATUS {irow['STATUS']}\n#define I_NACC {irow['NACC']}",
                 (f"#define I_NEXT {irow['NEXT']}" if nt else ""),
                 f"#define ODE_DONE {DONE}\n#define ODE_EVENT {EVENT}",
                 ("#define ODE_NAN (((float)3.4028234663852886e38) * 2 - ((float)3.4028234663852886e38) * 2)"
                  if real == "float" else "#define ODE_NAN (1.7976931348623157e308 * 2 - 1.7976931348623157e308 * 2)"),
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
            "/* Sample i: GY = d L / d y0 and GA = d L / d a for the cotangents CY (of y at the end, (D, n)) and",
            " * CYS (of the t_eval states, (n, D, ODE_NT)), by the recorded steps replayed backwards. A sample",
            " * that failed (or recorded more steps than the tape holds) gets nan. */",
            "EAGLE_KERNEL(ode_adjoint, (const ode_real*, W), (const int32_t*, I), (const ode_real*, A),",
            "             (EAGLE_BUFFER const ode_real*, TE), (const ode_real*, TAPE), (const ode_real*, CY),",
            "             (EAGLE_BUFFER const ode_real*, CYS), (ode_real*, GY), (ode_real*, GA))",
            "{",
            "    (void)TE; (void)CYS; (void)W;",
            "    ode_real a[ODE_NA > 0 ? ODE_NA : 1], ab[ODE_NA > 0 ? ODE_NA : 1], lam[D];",
            "    for (int k = 0; k < ODE_NA; ++k) { a[k] = A[(int64_t)k * n + i]; ab[k] = 0; }",
            "    for (int k = 0; k < D; ++k) lam[k] = CY[(int64_t)k * n + i];",
            "    const int32_t status = I[(int64_t)I_STATUS * n + i] & 255;",
            "    const int32_t nacc = I[(int64_t)I_NACC * n + i];",
            "    if ((status != ODE_DONE && status != ODE_EVENT) || nacc > ODE_REC) {",
            "        for (int k = 0; k < D; ++k) GY[(int64_t)k * n + i] = ODE_NAN;",
            "        for (int k = 0; k < ODE_NA; ++k) GA[(int64_t)k * n + i] = ODE_NAN;",
            "        return;",
            "    }",
            (f"    int32_t j = I[(int64_t)I_NEXT * n + i] - 1;" if nt else ""),
            "    ode_real K[ODE_NK][D], Ys[ODE_NK][D], Kb[ODE_NK][D], y[D], ynew[D], yb[D], ynb[D], F1b[D], Yb[D];",
            "    (void)F1b;",
            "    for (int32_t s = nacc - 1; s >= 0; --s) {",
            "        const int64_t rec = (int64_t)s * (D + 3);",
            "        const ode_real t = TAPE[rec * n + i], h = TAPE[(rec + 1) * n + i], tn = TAPE[(rec + 2) * n + i];",
            "        for (int k = 0; k < D; ++k) y[k] = TAPE[(rec + 3 + k) * n + i];",
            f"        ode_stages(t, h, tn, y, K, Ys, a, ynew, {1 if last_used else 0});",
            "        for (int q = 0; q < ODE_NK; ++q) for (int k = 0; k < D; ++k) Kb[q][k] = 0;",
            "        for (int k = 0; k < D; ++k) { yb[k] = 0; ynb[k] = lam[k]; F1b[k] = 0; }"]
        if nt:
            body += [
                "        while (j >= 0 && TE[j] > t) {  /* the t_eval points this step wrote */",
                "            ode_real c[D];",
                "            for (int k = 0; k < D; ++k) c[k] = CYS[((int64_t)i * D + k) * ODE_NT + j];",
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
                     "        for (int k = 0; k < D; ++k) lam[k] += CYS[((int64_t)i * D + k) * ODE_NT + j];"]
        body += ["    for (int k = 0; k < D; ++k) GY[(int64_t)k * n + i] = lam[k];",
                 "    for (int k = 0; k < ODE_NA; ++k) GA[(int64_t)k * n + i] = ab[k];",
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
        from ._solver import _events
        for g, terminal, _ in _events(events):
            if terminal:
                raise EagleValueError("eagle.ode: adjoint= with a terminal event is not supported (its time moves "
                                      "with the parameters); use sensitivity= (forward mode), which gives "
                                      "the event's state and time derivatives")
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
        kw = dict(self._kwargs)
        s = Solver(tf, events=self._events, _record=cap, **kw)
        s._adjoint_texts = (tf.c_function("ode_user_f"), vjp_tf.c_function("ode_user_vjp"))
        self._adjoint_mods = {}
        return s

    def _check_memory(self, b, n, cap):
        d = self._kwargs["n_state"]
        itemsize = np.dtype(self._kwargs.get("dtype") or "float64").itemsize
        need = cap * (d + 3) * n * itemsize
        if b.kind == "cpu":
            avail = _host_bytes_available()
            if avail is not None and need > 0.8 * avail:
                raise EagleMemoryError(f"eagle.ode: the adjoint's tape of N = {n} samples x {cap} accepted steps x "
                                       f"{d + 3} numbers needs {need / 2**30:.2f} GiB; the host has "
                                       f"{avail / 2**30:.2f} GiB available: solve fewer samples at a time")
        return need

    def solve(self, y0, args=()):
        if not isinstance(args, (tuple, list)):
            args = (args,)
        with self._lock:
            cap = self._grown
            if self._solver is None or self._solver._record != cap:
                self._solver = self._make(cap)
            solver = self._solver
            n = _count(y0, args, solver)
            b = solver._backend(y0)
            self._check_memory(b, n, cap)
            sol = solver.solve(y0, args)
            most = int(sol.n_accepted.max()) if n else 0
            if most > cap:  # a sample outgrew the tape: grow it to the largest count, solve again
                self._grown = cap = most
                self._check_memory(b, n, cap)
                self._solver = solver = self._make(cap)
                sol = solver.solve(y0, args)
            self._generation += 1
            run = solver._runs[(solver._last_backend.path, solver._last_n)]
            return AdjointSolution(self, solver, sol, run, self._generation)

    def _module(self, solver, b):
        mod = self._adjoint_mods.get(b.path)
        if mod is None:
            f_text, vjp_text = solver._adjoint_texts
            src = _AdjointGen(solver, f_text, vjp_text).source()
            solver.adjoint_source = src
            mod = self._adjoint_mods[b.path] = b.compile(src.encode(), name="eagle_ode_adjoint.c",
                                                         kernels=["ode_adjoint"], exact=solver.exact,
                                                         fast_math=solver.fast_math)
        return mod


def _count(y0, args, solver):
    ns = []
    if np.ndim(y0) == 2:
        ns.append(np.shape(y0)[0])
    ns += [np.shape(a)[0] for a in args if np.ndim(a) == 1]
    if np.ndim(solver.t1):
        ns.append(np.shape(solver.t1)[0])
    return ns[0] if ns else 1


class AdjointSolution:
    """An :class:`OdeSolution` (every field of it) whose accepted steps were recorded:
    :meth:`vjp` gives gradients for y0 and the args. ``tape_bytes``: the tape's size."""

    def __init__(self, owner, solver, sol, run, generation):
        self._owner, self._solver, self._sol, self._run, self._generation = owner, solver, sol, run, generation
        self.tape_bytes = int(run["TAPE"].nbytes) if hasattr(run["TAPE"], "nbytes") else \
            solver._record * (solver.n_state + 3) * solver.n * solver.dtype.itemsize
        self.tape_capacity = solver._record

    def __getattr__(self, name):
        return getattr(self._sol, name)

    def __repr__(self):
        return repr(self._sol).replace("OdeSolution", "OdeSolution with a tape", 1)

    def vjp(self, cotangent_y, cotangent_ys=None):
        """The gradients of L with respect to every sample's y0 and args, for the cotangents
        ``cotangent_y`` = dL/dy(t_end) ((N, d)) and ``cotangent_ys`` = dL/dys ((N, d, T), with
        t_eval), by the discrete adjoint. Returns ``Gradients(y0=(N, d), args=(N, n_args))``;
        nan for a sample that failed. Call it before the same solver solves again."""
        if self._generation != self._owner._generation:
            raise EagleValueError("eagle.ode: this solution's tape was overwritten by a later solve of the same "
                                  "solver; call vjp before solving again")
        s, run = self._solver, self._run
        n, d, na = s.n, s.n_state, s.n_args
        dt = s.dtype
        cy = np.asarray(cotangent_y, dtype=dt)
        if cy.shape == (d,):
            cy = np.broadcast_to(cy, (n, d))
        if cy.shape != (n, d):
            raise EagleValueError(f"eagle.ode: cotangent_y must have shape ({n}, {d}) (or ({d},), the same for every "
                                  f"sample), got {np.shape(cotangent_y)}")
        nt = 0 if s.t_eval is None else s.t_eval.size
        if cotangent_ys is not None:
            if not nt:
                raise EagleValueError("eagle.ode: cotangent_ys was given but the solve had no t_eval")
            cys = np.asarray(cotangent_ys, dtype=dt)
            if cys.shape != (n, d, nt):
                raise EagleValueError(f"eagle.ode: cotangent_ys must have shape ({n}, {d}, {nt}), got {cys.shape}")
        else:
            cys = np.zeros((n, d, nt) if nt else (1,), dt)
        b = s._last_backend
        mod = self._owner._module(s, b)
        CY = b.asarray(np.ascontiguousarray(cy.T))
        CYS = b.asarray(np.ascontiguousarray(cys))
        GY = b.empty((d, n), dt)
        GA = b.empty((max(na, 1), n), dt)
        st = run["stream"]
        st.run(mod.ode_adjoint, [self._sol._W, self._sol._I, run["A"], run["TE"], run["TAPE"], CY, CYS, GY, GA], n)
        st.synchronize()
        return Gradients(np.ascontiguousarray(GY.numpy().T), np.ascontiguousarray(GA.numpy()[:na].T))
