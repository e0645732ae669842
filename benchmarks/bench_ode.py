"""Lorenz ensembles, DiffEqGPU's problem (issue 26): eagle.ode against diffrax and a hand-written kernel.

    x' = 10 (y - x),  y' = x (rho - z) - y,  z' = x y - 8/3 z,  u0 = (1, 0, 0),  t in [0, 1],
    rho = linspace(0, 21, N)  (one trajectory per rho).

Methods: fixed step, 1000 steps of dt = 1e-3, classic RK4 and Tsit5; adaptive, Tsit5 and RK45
(Dormand-Prince 5(4)) at rtol = atol = 1e-8. Sizes N = 2^10 ... 2^23 (--sizes, --full), float64
and float32. Implementations, each timed in its own block (a warm-up call, then --reps
back-to-back calls, the median reported):

  eagle      eagle.ode.Solver(...).solve(y0, args=(rho,)); the Solver's construction plus its first
             solve are reported apart as "first" (compile + build); the timed calls reuse them.
             Timed by a wall clock around solve(), which returns host (numpy) arrays, so it
             includes eagle's synchronize and the copy of the results to the host (y0 and rho
             are CuPy arrays on the device when CuPy is there, else numpy arrays with backend='cuda',
             and then the host-to-device copy is in the figure too: the table says which).
  diffrax    jax.jit(jax.vmap(one trajectory)) of diffrax.diffeqsolve, SaveAt(t1=True),
             Tsit5 / Dopri5 / a classic RK4 ButcherTableau solver (diffrax has none: RK4 below),
             ConstantStepSize for fixed, PIDController(rtol, atol, error_order=5) for adaptive
             (error_order=5 gives scipy's exponent -1/5, the one eagle and the kernel use; diffrax's
             own default would be 1/6). The second call is timed, wall clock around the call and
             block_until_ready; the final states stay on the device.
  hand       (cuda) benchmarks/cuda/lorenz_ode.cu: one CUDA thread per trajectory, the whole
             integration in registers, compiled by CuPy's RawKernel (NVRTC, --fmad=true).
             Timed by CUDA events around the launch (the states stay on the device); "to host"
             adds the copy of the (3, N) result to numpy (wall clock), for a like-for-like with eagle.
  openmp     (cpu) the same methods (benchmarks/kernels/lorenz_methods.h) in an OpenMP loop over
             trajectories, compiled here by `cc -O3 -fopenmp -march=native` and called through ctypes.

The hand-written adaptive steppers are scipy's RK45 step (I controller, safety 0.9, factor in
[0.2, 10], no growth after a rejection, RMS error norm over atol + rtol max(|y|, |y_new|), scipy's
first step, floor 10 ulp(t)); on float64 they take exactly scipy's steps.

Roofline: each implementation's floating-point operations (FLOPS below: per step, derived from the
stages; times its own count of attempted steps for the adaptive methods) over its time, as a fraction
of the H200's FMA peak (32.9 TFLOP/s FP64, 67 TFLOP/s FP32). Every result is checked: against
scipy's DOP853 at rtol = atol = 1e-13 on 16 of the samples, and each implementation against the
hand-written peer on all samples; a failed check makes the exit status 1.

    python benchmarks/bench_ode.py --backend cpu --sizes 1024 --smoke
    python benchmarks/bench_ode.py --backend cuda --json /tmp/bench_ode.json            # 2^16, 2^20, 2^23
    python benchmarks/bench_ode.py --backend cuda --full --impls eagle,hand --json x.json
"""
import argparse
import ctypes
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import _machine  # noqa: E402

KERNELS = os.path.join(HERE, "kernels")
CUDA_SOURCE = os.path.join(HERE, "cuda", "lorenz_ode.cu")
METHODS_HEADER = os.path.join(KERNELS, "lorenz_methods.h")
OMP_SOURCE = os.path.join(KERNELS, "lorenz_omp.c")

SIGMA, BETA = 10.0, 8.0 / 3.0
U0 = (1.0, 0.0, 0.0)
T0, T1 = 0.0, 1.0
DT, NSTEPS = 1e-3, 1000
TOL = 1e-8
MAX_STEPS = 100_000
PEAK_FLOPS = {"float64": 32.9e12, "float32": 67.0e12}  # H200 FMA peaks (anchors_h200.md section 5)

# key: label, eagle's method name, adaptive?, the hand-written code's method number
METHODS = {
    "rk4": ("RK4 fixed", "RK4", False, 2),
    "tsit5-fixed": ("Tsit5 fixed", "Tsit5", False, 1),
    "tsit5": ("Tsit5 adaptive", "Tsit5", True, 1),
    "rk45": ("RK45 adaptive", "RK45", True, 0),
}
IMPLS = {"cpu": ("eagle", "diffrax", "openmp"), "cuda": ("eagle", "diffrax", "hand")}
DEFAULT_SIZES = (1 << 16, 1 << 20, 1 << 23)


# ------------------------------------------------------------------------- floating-point counts

RHS_FLOPS = 8  # 10*(y-x): sub, mul;  x*(rho-z)-y: sub, mul, sub;  x*y - (8/3)*z: mul, mul, sub
D = 3
# nonzero coefficients per stage row (a), in the solution weights (b) and the error weights (e)
PAIRS = {1: {"a": (1, 2, 3, 4, 5), "b": 6, "e": 7},   # Tsit5: b7 = 0; e has all 7
         0: {"a": (1, 2, 3, 4, 5), "b": 5, "e": 6}}   # Dormand-Prince: b2 = b7 = 0, e2 = 0


def combo(m):
    """Operations of one component of y + h (a1 k1 + ... + am km): m mul, m - 1 add, 1 mul, 1 add."""
    return 2 * m + 1


def flops_per_step(key):
    """Adds, multiplies (an FMA counts 2) and divides of one step of `key` on Lorenz, as
    lorenz_methods.h writes it. Left out: comparisons, fabs, fmax, the controller's pow and
    the first-step selection (once per trajectory)."""
    _, _, adaptive, code = METHODS[key]
    if code == 2:  # RK4: three stages y + c h k (2 each), y + h/6 (k1 + 2 k2 + 2 k3 + k4) (7)
        return D * (2 + 2 + 2 + 7) + 4 * RHS_FLOPS
    p = PAIRS[code]
    stages = D * sum(combo(m) for m in p["a"]) + D * combo(p["b"]) + 6 * RHS_FLOPS  # FSAL: 6 f's a step
    if not adaptive:
        return stages
    err = D * 2 * p["e"]       # h (e1 k1 + ...): e mul, e - 1 add, 1 mul
    norm = D * 5 + 2           # atol + rtol m (2), err / scale, square, sum; / 3, sqrt
    control = 4                # t + h, t_new - t, safety * pow, h * factor
    return stages + err + norm + control


FLOPS = {k: flops_per_step(k) for k in METHODS}


# --------------------------------------------------------------------------------- the problem

def rhos(n, dtype):
    return np.linspace(0.0, 21.0, n).astype(dtype)


def lorenz_numpy(t, y, rho):
    return [SIGMA * (y[1] - y[0]), y[0] * (rho - y[2]) - y[1], y[0] * y[1] - BETA * y[2]]


def reference(rho, idx):
    """(len(idx), 3) final states by scipy's DOP853 at rtol = atol = 1e-13, or None without scipy."""
    try:
        from scipy.integrate import solve_ivp
    except ImportError:
        return None
    out = []
    for i in idx:
        s = solve_ivp(lorenz_numpy, (T0, T1), U0, method="DOP853", rtol=1e-13, atol=1e-13, args=(float(rho[i]),))
        out.append(s.y[:, -1])
    return np.array(out)


class Skip(Exception):
    """An implementation that cannot run here; the message says why."""


# ------------------------------------------------------------------------------ implementations
# Each maker returns an object with: first_s (construction + first call), note (how it is timed),
# once() -> seconds of one timed call, to_host() -> seconds of one call plus the copy to numpy
# (or None), result() -> dict(y=(N, 3) float64 numpy, steps=(N,) attempted steps or None,
# status=(N,) or None).

def eagle_rhs(t, y, rho):
    return (SIGMA * (y[1] - y[0]), y[0] * (rho - y[2]) - y[1], y[0] * y[1] - BETA * y[2])


class EagleImpl:
    def __init__(self, key, dtype, n, backend):
        try:
            import eagle.ode
        except Exception as e:  # noqa: BLE001 - the peers still run without it
            raise Skip(f"import eagle.ode failed: {type(e).__name__}: {e}") from e
        _, method, adaptive, code = METHODS[key]
        kw = dict(method=method, t_span=(T0, T1), n_args=1, dtype=np.dtype(dtype), backend=backend)
        # $EAGLE_ODE_BENCH_KW: more Solver keywords as JSON (a sweep of steps_per_call or workers)
        kw.update(json.loads(os.environ.get("EAGLE_ODE_BENCH_KW") or "{}"))
        if adaptive:
            kw.update(rtol=TOL, atol=TOL)
        else:
            kw.update(dt=DT)
            if code != 2:
                kw.update(adaptive=False)
        rho, y0 = rhos(n, dtype), np.tile(np.asarray(U0, dtype), (n, 1))
        where = "host arrays"
        if backend == "cuda":
            try:
                import cupy as cp
                rho, y0 = cp.asarray(rho), cp.asarray(y0)
                where = "CuPy device arrays"
            except ImportError:
                where = "numpy arrays (no CuPy: the host-to-device copy is timed too)"
        self.rho, self.y0 = rho, y0
        t = time.perf_counter()
        self.solver = eagle.ode.Solver(eagle_rhs, **kw)
        self.build_s = time.perf_counter() - t
        self.sol = self.solver.solve(self.y0, args=(self.rho,))
        self.first_s = time.perf_counter() - t
        self.note = f"wall clock around Solver.solve (y0, rho: {where}; results returned to the host)"

    def once(self):
        self.sol = None  # the last result is dropped (a kept one would get copies of its planes first)
        t = time.perf_counter()
        self.sol = self.solver.solve(self.y0, args=(self.rho,))
        return time.perf_counter() - t

    to_host = None

    def result(self):
        s = self.sol
        steps = None
        if getattr(s, "n_accepted", None) is not None:
            steps = np.asarray(s.n_accepted) + np.asarray(s.n_rejected)
        return dict(y=np.asarray(s.y, np.float64), steps=steps, status=np.asarray(s.status))


def diffrax_rk4():
    """Classic RK4 as a diffrax explicit Runge-Kutta solver (diffrax ships none)."""
    import diffrax

    class RK4(diffrax.AbstractERK):
        tableau = diffrax.ButcherTableau(
            c=np.array([0.5, 0.5, 1.0]),
            b_sol=np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6]),
            b_error=np.zeros(4),
            a_lower=(np.array([0.5]), np.array([0.0, 0.5]), np.array([0.0, 0.0, 1.0])))
        interpolation_cls = diffrax.ThirdOrderHermitePolynomialInterpolation.from_k

        def order(self, terms):
            return 4
    return RK4()


class DiffraxImpl:
    def __init__(self, key, dtype, n, backend):
        if "jax" not in sys.modules and backend == "cpu":
            os.environ.setdefault("JAX_PLATFORMS", "cpu")
        try:
            import jax
            jax.config.update("jax_enable_x64", True)  # float32 cases use float32 arrays throughout
            import jax.numpy as jnp
            import diffrax
        except Exception as e:  # noqa: BLE001
            raise Skip(f"no diffrax: {type(e).__name__}: {e}") from e
        _, _, adaptive, code = METHODS[key]
        dt = jnp.dtype(dtype)
        solver = {0: diffrax.Dopri5, 1: diffrax.Tsit5}.get(code, None)
        solver = solver() if solver else diffrax_rk4()
        if adaptive:
            controller = diffrax.PIDController(rtol=TOL, atol=TOL, error_order=5)
            dt0, max_steps = None, 4096
        else:
            controller = diffrax.ConstantStepSize()
            dt0, max_steps = jnp.asarray(DT, dt), NSTEPS + 8
        term = diffrax.ODETerm(lambda t, y, rho: jnp.stack(
            [SIGMA * (y[1] - y[0]), y[0] * (rho - y[2]) - y[1], y[0] * y[1] - BETA * y[2]]))
        u0 = jnp.asarray(U0, dt)
        t0, t1 = jnp.asarray(T0, dt), jnp.asarray(T1, dt)

        def one(rho):
            s = diffrax.diffeqsolve(term, solver, t0, t1, dt0, u0, args=rho, stepsize_controller=controller,
                                    saveat=diffrax.SaveAt(t1=True), max_steps=max_steps, throw=False)
            steps = s.stats["num_accepted_steps"] + s.stats["num_rejected_steps"]
            return s.ys[0], steps, s.result._value
        self.fn = jax.jit(jax.vmap(one))
        self.rho = jnp.asarray(rhos(n, dtype))
        self.device = str(self.rho.devices().pop()) if hasattr(self.rho, "devices") else "?"
        t = time.perf_counter()
        self.out = self.fn(self.rho)
        self.out[0].block_until_ready()
        self.first_s = time.perf_counter() - t
        self.note = (f"wall clock around the jitted call + block_until_ready, second call on (jax {jax.__version__}, "
                     f"diffrax {diffrax.__version__}, {self.device})")

    def once(self):
        t = time.perf_counter()
        self.out = self.fn(self.rho)
        self.out[0].block_until_ready()
        return time.perf_counter() - t

    def to_host(self):
        t = time.perf_counter()
        self.out = self.fn(self.rho)
        np.asarray(self.out[0])
        return time.perf_counter() - t

    def result(self):
        y, steps, res = (np.asarray(a) for a in self.out)
        return dict(y=y.astype(np.float64), steps=steps.astype(np.int64), status=np.where(res == 0, 0, -1))


def cuda_source():
    """lorenz_ode.cu with lorenz_methods.h's text in place of its #include lines (NVRTC gets one string)."""
    header = open(METHODS_HEADER).read()
    return re.sub(r'^#include "lorenz_methods.h"$', lambda m: header, open(CUDA_SOURCE).read(), flags=re.M)


class HandCudaImpl:
    def __init__(self, key, dtype, n, backend, block=128):
        try:
            import cupy as cp
            cp.cuda.runtime.getDeviceCount()
        except Exception as e:  # noqa: BLE001
            raise Skip(f"no CuPy with a GPU: {type(e).__name__}: {e}") from e
        self.cp = cp
        _, _, adaptive, code = METHODS[key]
        sfx = "f64" if np.dtype(dtype) == np.float64 else "f32"
        name = f"lorenz_{'adaptive' if adaptive else 'fixed'}_{sfx}"
        t = time.perf_counter()
        kern = cp.RawKernel(cuda_source(), name, options=("--fmad=true",))
        T = np.dtype(dtype).type
        self.rho = cp.asarray(rhos(n, dtype))
        self.out = cp.empty((3, n), dtype)
        grid, blk = ((n + block - 1) // block,), (block,)
        if adaptive:
            self.status, self.acc, self.rej = (cp.zeros(n, cp.int32) for _ in range(3))
            args = (np.int32(code), self.rho, self.out, self.status, self.acc, self.rej, np.int64(n), T(T0), T(T1),
                    T(TOL), T(TOL), np.int32(MAX_STEPS))
        else:
            self.status = self.acc = self.rej = None
            args = (np.int32(code), self.rho, self.out, np.int64(n), np.int32(NSTEPS), T(DT))
        self.launch = lambda: kern(grid, blk, args)
        self.launch()
        cp.cuda.Stream.null.synchronize()
        self.first_s = time.perf_counter() - t
        self.start, self.end = cp.cuda.Event(), cp.cuda.Event()
        self.note = f"CUDA events around the launch (block {block}); to host: + cupy.asnumpy, wall clock"

    def once(self):
        self.start.record()
        self.launch()
        self.end.record()
        self.end.synchronize()
        return self.cp.cuda.get_elapsed_time(self.start, self.end) * 1e-3

    def to_host(self):
        t = time.perf_counter()
        self.launch()
        self.cp.asnumpy(self.out)
        return time.perf_counter() - t

    def result(self):
        cp = self.cp
        y = cp.asnumpy(self.out).T.astype(np.float64)
        if self.acc is None:
            return dict(y=y, steps=np.full(y.shape[0], NSTEPS), status=np.zeros(y.shape[0], np.int32))
        return dict(y=y, steps=cp.asnumpy(self.acc + self.rej).astype(np.int64), status=cp.asnumpy(self.status))


_OMP = {}


def omp_library():
    """The OpenMP peer, compiled once per process: (ctypes library, its thread count, the command)."""
    if "lib" not in _OMP:
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            raise Skip("no C compiler (cc, gcc) on PATH for the OpenMP peer")
        d = tempfile.mkdtemp(prefix="eagle-ode-omp-")
        lib = os.path.join(d, "liblorenz_omp.so")
        cmd = [cc, "-O3", "-fopenmp", "-march=native", "-shared", "-fPIC", "-I", KERNELS, OMP_SOURCE, "-o", lib]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            raise Skip(f"the OpenMP peer did not compile ({' '.join(cmd)}): {p.stderr[-500:]}")
        so = ctypes.CDLL(lib)
        _OMP.update(lib=so, threads=int(so.omp_lorenz_threads()), cmd=" ".join(os.path.basename(c) if c == cc else c
                                                                                 for c in cmd[:5]))
    return _OMP["lib"], _OMP["threads"], _OMP["cmd"]


class OpenMPImpl:
    def __init__(self, key, dtype, n, backend):
        so, threads, cmd = omp_library()
        _, _, adaptive, code = METHODS[key]
        f64 = np.dtype(dtype) == np.float64
        C = ctypes.c_double if f64 else ctypes.c_float
        self.rho, self.out = rhos(n, dtype), np.zeros((3, n), dtype)
        ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
        if adaptive:
            self.status, self.acc, self.rej = (np.zeros(n, np.int32) for _ in range(3))
            fn = so.omp_lorenz_adaptive_f64 if f64 else so.omp_lorenz_adaptive_f32
            args = (ctypes.c_int(code), ptr(self.rho), ptr(self.out), ptr(self.status), ptr(self.acc), ptr(self.rej),
                    ctypes.c_longlong(n), C(T0), C(T1), C(TOL), C(TOL), ctypes.c_int(MAX_STEPS))
        else:
            self.status = self.acc = None
            fn = so.omp_lorenz_fixed_f64 if f64 else so.omp_lorenz_fixed_f32
            args = (ctypes.c_int(code), ptr(self.rho), ptr(self.out), ctypes.c_longlong(n), ctypes.c_int(NSTEPS),
                    C(DT))
        self.call = lambda: fn(*args)
        t = time.perf_counter()
        self.call()
        self.first_s = time.perf_counter() - t
        self.note = f"wall clock around the ctypes call ({cmd}, {threads} OpenMP threads)"

    def once(self):
        t = time.perf_counter()
        self.call()
        return time.perf_counter() - t

    to_host = None

    def result(self):
        y = self.out.T.astype(np.float64)
        if self.acc is None:
            return dict(y=y, steps=np.full(y.shape[0], NSTEPS), status=np.zeros(y.shape[0], np.int32))
        return dict(y=y, steps=(self.acc + self.rej).astype(np.int64), status=self.status.copy())


MAKERS = {"eagle": EagleImpl, "diffrax": DiffraxImpl, "hand": HandCudaImpl, "openmp": OpenMPImpl}
PEER = {"cuda": "hand", "cpu": "openmp"}  # what eagle's ratio is taken against and results are compared with


# -------------------------------------------------------------------------------------- running

def tolerances(key, dtype):
    """(agreement with the hand-written peer, error against scipy's DOP853), each times 1 + |y|.
    Fixed step: same method, same dt, so only rounding separates eagle and the peer. Adaptive:
    each takes its own steps; the bound says the result is a solution at about the tolerance."""
    adaptive = METHODS[key][2]
    if np.dtype(dtype) == np.float64:
        return (1e-4, 1e-4) if adaptive else (1e-9, 1e-6)
    return (1e-2, 1e-2) if adaptive else (1e-3, 1e-3)


def measure(impl, reps, warmup):
    for _ in range(warmup):
        impl.once()
    times = [impl.once() for _ in range(reps)]
    host = None
    if impl.to_host is not None:
        host = statistics.median([impl.to_host() for _ in range(max(1, min(reps, 3)))])
    return times, host


def run_case(key, dtype, n, impls, backend, reps, warmup, block):
    """One (method, dtype, N): every implementation in its own block; a row dict per implementation."""
    label = METHODS[key][0]
    rho = rhos(n, dtype)
    idx = np.unique(np.linspace(0, n - 1, min(n, 16)).astype(np.int64))
    ref = reference(rho.astype(np.float64), idx)
    rows, results = [], {}
    for name in impls:
        row = dict(method=label, key=key, dtype=np.dtype(dtype).name, N=n, impl=name)
        try:
            maker = MAKERS[name]
            impl = maker(key, dtype, n, backend, block) if name == "hand" else maker(key, dtype, n, backend)
            times, host = measure(impl, reps, warmup)
            res = impl.result()
        except Skip as e:
            row.update(skipped=str(e))
            rows.append(row)
            continue
        except Exception as e:  # noqa: BLE001 - one failing implementation must not hide the others
            row.update(error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc()[-2000:])
            rows.append(row)
            continue
        results[name] = res
        ms = statistics.median(times) * 1e3
        row.update(ms=ms, ms_min=min(times) * 1e3, reps=len(times), first_s=impl.first_s, timing=impl.note,
                   ms_to_host=None if host is None else host * 1e3)
        if getattr(impl, "build_s", None) is not None:
            row.update(build_s=impl.build_s)
        y, steps, status = res["y"], res["steps"], res["status"]
        row.update(failed=int(np.count_nonzero(status != 0)) if status is not None else None)
        if steps is not None:
            row.update(steps_mean=float(np.mean(steps)), steps_max=int(np.max(steps)))
            flops = float(np.sum(steps, dtype=np.float64)) * FLOPS[key]
            row.update(gflops=flops / (ms * 1e-3) / 1e9)
            if backend == "cuda":
                row.update(roofline=flops / (ms * 1e-3) / PEAK_FLOPS[row["dtype"]])
        if ref is not None:
            row.update(err_ref=float(np.max(np.abs(y[idx] - ref) / (1.0 + np.abs(ref)))))
        rows.append(row)
    # cross-checks: every implementation against the hand-written peer, and against scipy
    agree_tol, ref_tol = tolerances(key, dtype)
    peer = results.get(PEER[backend])
    for row in rows:
        if row["impl"] not in results:
            continue
        y = results[row["impl"]]["y"]
        ok = bool(np.all(np.isfinite(y))) and row.get("failed") in (0, None)
        if peer is not None and row["impl"] != PEER[backend]:
            d = float(np.max(np.abs(y - peer["y"]) / (1.0 + np.abs(peer["y"]))))
            row.update(diff_peer=d)
            ok &= d <= agree_tol
        if "err_ref" in row:
            ok &= row["err_ref"] <= ref_tol
        row.update(check="PASS" if ok else "FAIL")
    return rows


def gpu_info():
    """GPU name, driver and clocks from nvidia-smi (or why not)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return {"nvidia-smi": "not found"}
    q = "name,driver_version,clocks.sm,clocks.max.sm"
    p = subprocess.run([smi, f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True, text=True)
    return {"query": q, "answer": p.stdout.strip() or p.stderr.strip()}


def fmt(v, spec):
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def table(rows, backend):
    """Markdown: one line per (method, dtype, N) with every implementation's ms and the ratios."""
    peer = PEER[backend]
    out = [f"| method | dtype | N | eagle ms | first s | diffrax ms | {peer} ms | {peer}+host ms | diffrax / eagle |"
           f" eagle / {peer} | eagle / ({peer}+host) | steps eagle/{peer} | roofline eagle | roofline {peer} | check |",
           "|" + "---|" * 15]
    groups = {}
    for r in rows:
        groups.setdefault((r["method"], r["dtype"], r["N"]), {})[r["impl"]] = r
    for (method, dtype, n), g in groups.items():
        e, dx, p = g.get("eagle", {}), g.get("diffrax", {}), g.get(peer, {})

        def ms(r):
            return r.get("ms")

        def ratio(a, b):
            return a / b if a is not None and b else None
        steps = (f"{e['steps_mean']:.0f}/{p['steps_mean']:.0f}" if "steps_mean" in e and "steps_mean" in p else "-")
        checks = ",".join(f"{k}:{r['check']}" for k, r in g.items() if "check" in r) or "-"
        out.append(f"| {method} | {dtype} | 2^{int(math.log2(n))} ({n}) | {fmt(ms(e), '.3f')} | {fmt(e.get('first_s'), '.2f')} "
                   f"| {fmt(ms(dx), '.2f')} | {fmt(ms(p), '.3f')} | {fmt(p.get('ms_to_host'), '.3f')} "
                   f"| {fmt(ratio(ms(dx), ms(e)), '.1f')} | {fmt(ratio(ms(e), ms(p)), '.2f')} "
                   f"| {fmt(ratio(ms(e), p.get('ms_to_host')), '.2f')} | {steps} "
                   f"| {fmt(e.get('roofline'), '.1%')} | {fmt(p.get('roofline'), '.1%')} | {checks} |")
    notes = []
    for r in rows:
        if "skipped" in r:
            notes.append(f"- {r['impl']} ({r['method']}, {r['dtype']}, N={r['N']}): skipped: {r['skipped']}")
        elif "error" in r:
            notes.append(f"- {r['impl']} ({r['method']}, {r['dtype']}, N={r['N']}): ERROR {r['error']}")
    return "\n".join(out), sorted(set(notes), key=notes.index)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--backend", choices=("cpu", "cuda"), default="cuda")
    ap.add_argument("--sizes", help="comma-separated N (2^k accepted as e.g. 2^20); default 2^16,2^20,2^23 "
                                    "(cuda) or 2^10,2^14 (cpu)")
    ap.add_argument("--full", action="store_true", help="every N = 2^10 ... 2^23")
    ap.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, of {', '.join(METHODS)}")
    ap.add_argument("--dtypes", default="float64,float32")
    ap.add_argument("--impls", help="comma-separated implementations (default: all of the backend's)")
    ap.add_argument("--reps", type=int, default=None, help="timed calls per implementation (median; default 7)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--block", type=int, default=128, help="threads per block of the hand-written kernel")
    ap.add_argument("--smoke", action="store_true", help="a quick run (2 timed calls) that checks every result")
    ap.add_argument("--json", help="write the rows, the machine and the command to this file (after every case)")
    args = ap.parse_args(argv)

    def size(s):
        s = s.strip()
        return 1 << int(s[2:]) if s.startswith("2^") else int(s)
    if args.full:
        sizes = [1 << k for k in range(10, 24)]
    elif args.sizes:
        sizes = [size(s) for s in args.sizes.split(",") if s.strip()]
    else:
        sizes = list(DEFAULT_SIZES) if args.backend == "cuda" else [1 << 10, 1 << 14]
    if not sizes or min(sizes) < 1:
        ap.error("argument --sizes: every N must be >= 1")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for m in methods:
        if m not in METHODS:
            ap.error(f"argument --methods: unknown method {m!r} (known: {', '.join(METHODS)})")
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    for d in dtypes:
        if d not in ("float64", "float32"):
            ap.error(f"argument --dtypes: {d!r} is neither float64 nor float32")
    impls = [i.strip() for i in args.impls.split(",")] if args.impls else list(IMPLS[args.backend])
    for i in impls:
        if i not in IMPLS[args.backend]:
            ap.error(f"argument --impls: {i!r} is not one of {', '.join(IMPLS[args.backend])} (backend {args.backend})")
    reps = args.reps or (2 if args.smoke else 7)
    if reps < 1:
        ap.error("argument --reps: must be >= 1")

    _machine.header("EAGLE_CPU_THREADS", "OMP_NUM_THREADS", "XLA_FLAGS")
    gpu = gpu_info() if args.backend == "cuda" else None
    if gpu:
        print(f"gpu:     {gpu.get('answer', gpu)}  ({gpu.get('query', '')})")
    print(f"problem: Lorenz sigma=10 beta=8/3 u0=(1,0,0) rho=linspace(0,21,N) t=[0,1]; fixed {NSTEPS} steps of "
          f"dt={DT}; adaptive rtol=atol={TOL}")
    print("flops a step (adds + muls, FMA = 2, divides; from the stages): "
          + ", ".join(f"{METHODS[k][0]} {FLOPS[k]}" for k in methods))
    if reps < 5 and not args.smoke:
        print(f"note: --reps {reps} is below the 5 a reported median needs")
    meta = dict(command=" ".join([os.path.basename(sys.executable)] + sys.argv if argv is None else ["bench_ode.py"] + argv),
                date=time.strftime("%Y-%m-%dT%H:%M:%S%z"), machine=_machine.machine(), gpu=gpu, backend=args.backend,
                reps=reps, warmup=args.warmup, flops_per_step=FLOPS, peak_flops=PEAK_FLOPS, rows=[])
    rows = []
    for key in methods:
        for dtype in dtypes:
            for n in sizes:
                t = time.perf_counter()
                case = run_case(key, dtype, n, impls, args.backend, reps, args.warmup, args.block)
                rows += case
                done = ", ".join(f"{r['impl']} {fmt(r.get('ms'), '.3f')} ms" if "ms" in r else f"{r['impl']} "
                                 f"{'skipped' if 'skipped' in r else 'ERROR'}" for r in case)
                print(f"  {METHODS[key][0]:15s} {dtype} N={n:>8d}: {done}  ({time.perf_counter() - t:.1f} s)",
                      flush=True)
                if args.json:
                    meta["rows"] = rows
                    with open(args.json, "w") as fh:
                        json.dump(meta, fh, indent=1, default=float)
    text, notes = table(rows, args.backend)
    print()
    print("how each implementation is timed:")
    seen = set()
    for r in rows:
        if "timing" in r and r["impl"] not in seen:
            seen.add(r["impl"])
            print(f"  {r['impl']}: {r['timing']}")
    print()
    print(text)
    print("\ndiffrax / eagle: eagle's speed-up over diffrax (goal at 2^23 FP64: >= 200 fixed, >= 40 adaptive); "
          f"eagle / {PEER[args.backend]}: eagle's time over the hand-written peer's (goal <= 1.1 on cuda, "
          "<= 1/0.9 on cpu); steps: mean attempted steps a trajectory; roofline: flops / time / FMA peak.")
    for line in notes:
        print(line)
    for r in rows:
        if "error" in r:
            print(f"\n{r['impl']} {r['method']} {r['dtype']} N={r['N']}:\n{r['traceback']}")
    failed = [r for r in rows if r.get("check") == "FAIL" or "error" in r]
    for r in failed:
        print(f"CHECK FAIL: {r['impl']} {r['method']} {r['dtype']} N={r['N']}: failed samples {r.get('failed')}, "
              f"vs peer {fmt(r.get('diff_peer'), '.2e')}, vs scipy {fmt(r.get('err_ref'), '.2e')} "
              f"{r.get('error', '')}")
    print(f"\nbench_ode: {'FAIL' if failed else 'PASS'} ({len(rows)} rows, "
          f"{sum('skipped' in r for r in rows)} skipped)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
