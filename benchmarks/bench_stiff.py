"""Stiff ensembles (issue 39): eagle.ode's Rodas5P, Rosenbrock23 and Kvaerno5 against diffrax,
gradsolve and scipy, compared at matched ACHIEVED error.

Problems (FP64):
  rober  Robertson's kinetics, k1 = 0.04 (1 + 0.2 u), u uniform in [-1, 1] per sample, k2 = 3e7,
         k3 = 1e4, y0 = (1, 0, 0), t in [0, 1e5]
  hires  HIRES (Test Set for IVP solvers), y0 scaled by (1 + 0.1 u) per sample, t in [0, 321.8122]

Sizes N = 2^14, 2^17, 2^20 (--sizes). Implementations (--impls; a peer that cannot be imported is
listed as skipped with the reason):
  eagle-rodas5p, eagle-rosenbrock23, eagle-kvaerno5, eagle-radau
         eagle.ode.Solver(...).solve(y0, args); the Jacobian derived from the trace. The first solve
         (trace, Jacobian, compile, graph record) is reported apart as "first"; timed calls reuse
         the Solver (wall clock around solve(), which returns once the device work is done).
  diffrax-kvaerno5   jax.jit(jax.vmap(diffeqsolve)) with Kvaerno5, PIDController(rtol, atol),
         SaveAt(t1=True); timed on the second call (block_until_ready).
  gradsolve-rosenbrock23, gradsolve-rodas5p
         gradsolve 0.2.1's gradsolve.solve(problem, y0, params, engine="cuda_rosenbrock23" /
         "rodas5p_replay", device=...) on its built-in robertson / hires fields (its own analytic
         Jacobians). The second call is timed.
  scipy-radau   scipy.integrate.solve_ivp(method="Radau", jac=analytic) one sample at a time on
         this host: timed on --scipy-samples samples and EXTRAPOLATED to N over the host's cores
         (perfect scaling assumed: N * t_sample / cores). The table marks it "extrapolated".

Matched achieved error: every implementation's error is measured against a reference (scipy's
Radau at rtol 1e-12, atol 1e-16 for ROBER / 1e-14 for HIRES) on the same --check samples:
    error = max over samples and components of |y - ref| / (|ref| + floor)
(floor 1e-10 for ROBER, 1e-8 for HIRES: a relative error where the component is not tiny). For
each implementation a tolerance ladder (rtol in 1e-3 ... 1e-10, atol = rtol * atol_ratio) is run on
the check samples and the loosest rtol whose error is <= --target (default 1e-6) is taken; the
timed run uses that rtol, and the table shows the error it achieved. eagle's ladder runs on the
cpu backend (the steps do not depend on the device); the peers' on their own device.

Flops: eagle's per-step count (eagle/ode/_implicit.py flops_per_step: f evaluations, the
Jacobian, W, one LU, the solves and the stage combinations) times each sample's attempted steps,
over the time: FLOP/s and its fraction of the FP64 FMA peak (--peak-tflops, default the H200's
32.9 on cuda; none on cpu).

On cpu it also times the first solve of HIRES (trace + Jacobian + compile + record; goal <= 3 s)
and eagle's samples per second against scipy's Radau loop on the host's cores (goal >= 5x).

    python benchmarks/bench_stiff.py --backend cpu --sizes 2^8                  # here, small
    python benchmarks/bench_stiff.py --backend cuda --json /tmp/bench_stiff.json  # the H200
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import _machine  # noqa: E402

LADDER = [1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10]
EAGLE_METHODS = {"eagle-rodas5p": "Rodas5P", "eagle-rosenbrock23": "Rosenbrock23", "eagle-kvaerno5": "Kvaerno5",
                 "eagle-radau": "Radau"}
IMPLS = list(EAGLE_METHODS) + ["diffrax-kvaerno5", "gradsolve-rosenbrock23", "gradsolve-rodas5p", "scipy-radau"]


# ---------------------------------------------------------------- the problems

def rober(t, y, k1, k2, k3):
    return [-k1 * y[0] + k3 * y[1] * y[2],
            k1 * y[0] - k2 * y[1] ** 2 - k3 * y[1] * y[2],
            k2 * y[1] ** 2]


def rober_jac(t, y, k1, k2, k3):
    return np.array([[-k1, k3 * y[2], k3 * y[1]],
                     [k1, -2 * k2 * y[1] - k3 * y[2], -k3 * y[1]],
                     [0.0, 2 * k2 * y[1], 0.0]])


HIRES_SOURCE = """def hires(t, y):
    y1, y2, y3, y4, y5, y6, y7, y8 = y
    r = 280.0 * y6 * y8
    return [-1.71 * y1 + 0.43 * y2 + 8.32 * y3 + 0.0007,
            1.71 * y1 - 8.75 * y2,
            -10.03 * y3 + 0.43 * y4 + 0.035 * y5,
            8.32 * y2 + 1.71 * y3 - 1.12 * y4,
            -1.745 * y5 + 0.43 * y6 + 0.43 * y7,
            -r + 0.69 * y4 + 1.71 * y5 - 0.43 * y6 + 0.69 * y7,
            r - 1.81 * y7,
            -r + 1.81 * y7]
"""
_NS = {}
exec(HIRES_SOURCE, _NS)  # noqa: S102 -- hires(t, y); its source text serves the first-solve timing (a new module)
hires = _NS["hires"]


def hires_jac(t, y):
    J = np.zeros((8, 8))
    J[0, :3] = -1.71, 0.43, 8.32
    J[1, :2] = 1.71, -8.75
    J[2, 2:5] = -10.03, 0.43, 0.035
    J[3, 1:4] = 8.32, 1.71, -1.12
    J[4, 4:7] = -1.745, 0.43, 0.43
    J[5, 3:8] = 0.69, 1.71, -280.0 * y[7] - 0.43, 0.69, -280.0 * y[5]
    J[6, 5:8] = 280.0 * y[7], -1.81, 280.0 * y[5]
    J[7, 5:8] = -280.0 * y[7], 1.81, -280.0 * y[5]
    return J


class Problem:
    def __init__(self, name, n):
        rng = np.random.default_rng(2026)
        u = rng.uniform(-1.0, 1.0, n)
        self.name, self.n = name, n
        if name == "rober":
            self.fun, self.jac, self.d, self.t1, self.floor, self.atol_ratio = rober, rober_jac, 3, 1e5, 1e-10, 1e-4
            self.y0 = np.tile([1.0, 0.0, 0.0], (n, 1))
            self.params = np.stack([0.04 * (1 + 0.2 * u), np.full(n, 3e7), np.full(n, 1e4)], axis=1)
        elif name == "hires":
            self.fun, self.jac, self.d, self.t1, self.floor, self.atol_ratio = hires, hires_jac, 8, 321.8122, 1e-8, 1e-2
            base = np.array([1.0, 0, 0, 0, 0, 0, 0, 0.0057])
            self.y0 = base[None, :] * (1 + 0.1 * u[:, None])
            self.params = np.zeros((n, 0))
        else:
            raise SystemExit(f"unknown problem {name!r}: rober or hires")

    def args(self, idx=None):
        p = self.params if idx is None else self.params[idx]
        return tuple(p[:, k] for k in range(p.shape[1]))

    def subset(self, idx):
        other = Problem.__new__(Problem)
        other.__dict__.update(self.__dict__)
        other.n, other.y0, other.params = len(idx), self.y0[idx], self.params[idx]
        return other


def reference(p):
    from scipy.integrate import solve_ivp
    out = np.empty((p.n, p.d))
    for j in range(p.n):
        a = tuple(p.params[j])
        r = solve_ivp(p.fun, (0.0, p.t1), p.y0[j], method="Radau", rtol=1e-12, atol=1e-16 if p.name == "rober" else 1e-14,
                      jac=p.jac, args=a)
        out[j] = r.y[:, -1]
    return out


def error(y, ref, floor):
    y = np.asarray(y, dtype=np.float64)
    if not np.all(np.isfinite(y)):
        return math.inf
    return float(np.max(np.abs(y - ref) / (np.abs(ref) + floor)))


# ---------------------------------------------------------------- implementations

class Eagle:
    def __init__(self, name, p, backend):
        self.method, self.p, self.backend = EAGLE_METHODS[name], p, backend

    def prepare(self, rtol):
        import eagle.ode as eo
        p = self.p
        t = time.perf_counter()
        self.solver = eo.Solver(p.fun, t_span=(0.0, p.t1), n_state=p.d, n_args=p.params.shape[1], method=self.method,
                                rtol=rtol, atol=rtol * p.atol_ratio, max_steps=1_000_000, backend=self.backend,
                                progress=False)
        self.y0, self.a = self._inputs()
        self.sol = self.solver.solve(self.y0, self.a)
        self.first = time.perf_counter() - t
        return self

    def _inputs(self):
        p = self.p
        if self.backend == "cuda":
            try:
                import cupy as cp
                return cp.asarray(p.y0), tuple(cp.asarray(np.ascontiguousarray(x)) for x in p.args())
            except ImportError:
                pass
        return p.y0, p.args()

    def once(self):
        self.sol = self.solver.solve(self.y0, self.a)

    def result(self):
        s = self.sol
        return np.asarray(s.y), s.n_accepted + s.n_rejected, bool(np.all(s.status == 0))

    def flops_per_step(self):
        return sum(self.solver.flops_per_step().values())


class Diffrax:
    """jit(vmap(diffeqsolve)) with the tolerances as traced arguments: one compile per problem
    and size (cached here), not per rung of the ladder."""
    compiled = {}

    def __init__(self, name, p, backend):
        import diffrax  # noqa: F401
        import jax
        jax.config.update("jax_enable_x64", True)
        self.p, self.backend = p, backend

    def _fn(self):
        import diffrax
        import jax
        import jax.numpy as jnp
        p = self.p
        key = (p.name, self.backend)
        if key in Diffrax.compiled:
            return Diffrax.compiled[key]
        f = p.fun

        def vf(t, y, args):
            return jnp.stack(f(t, y, *args))
        term = diffrax.ODETerm(vf)

        def one(y0, args, rtol):
            ctrl = diffrax.PIDController(rtol=rtol, atol=rtol * p.atol_ratio)
            s = diffrax.diffeqsolve(term, diffrax.Kvaerno5(), 0.0, p.t1, None, y0, args=args, stepsize_controller=ctrl,
                                    saveat=diffrax.SaveAt(t1=True), max_steps=200_000, throw=False)
            return s.ys[0], s.stats["num_accepted_steps"] + s.stats["num_rejected_steps"], s.result == diffrax.RESULTS.successful
        fn = Diffrax.compiled[key] = jax.jit(jax.vmap(one, in_axes=(0, 0, None)))
        return fn

    def prepare(self, rtol):
        import jax
        import jax.numpy as jnp
        p = self.p
        dev = jax.devices("gpu" if self.backend == "cuda" else "cpu")[0]
        self.fn = self._fn()
        self.y0 = jax.device_put(jnp.asarray(p.y0), dev)
        self.a = tuple(jax.device_put(jnp.asarray(x), dev) for x in p.args())
        self.rtol = jax.device_put(jnp.asarray(rtol, dtype=jnp.float64), dev)
        t = time.perf_counter()
        self.out = jax.block_until_ready(self.fn(self.y0, self.a, self.rtol))
        self.first = time.perf_counter() - t
        return self

    def once(self):
        import jax
        self.out = jax.block_until_ready(self.fn(self.y0, self.a, self.rtol))

    def result(self):
        y, steps, ok = self.out
        return np.asarray(y), np.asarray(steps), bool(np.all(np.asarray(ok)))

    def flops_per_step(self):
        return None


class Gradsolve:
    ENGINES = {"gradsolve-rosenbrock23": "cuda_rosenbrock23", "gradsolve-rodas5p": "rodas5p_replay"}

    def __init__(self, name, p, backend):
        import gradsolve
        if getattr(gradsolve, "__version__", "") != "0.2.1":
            print(f"  note: gradsolve {gradsolve.__version__} (the issue names 0.2.1)")
        self.engine, self.p, self.backend = self.ENGINES[name], p, backend
        self.gs = gradsolve

    def _problem(self):
        import jax.numpy as jnp
        p = self.p
        f = p.fun

        class GP:
            name = {"rober": "robertson", "hires": "hires"}[p.name]
            dim, t0, t1, is_stiff = p.d, 0.0, p.t1, True

            @staticmethod
            def f_jax(t, y, params):
                args = [params[k] for k in range(p.params.shape[1])]
                return jnp.stack(f(t, y, *args))
        return GP()

    def prepare(self, rtol):
        self.rtol, self.prob = rtol, self._problem()
        params = self.p.params if self.p.params.shape[1] else np.zeros((self.p.n, 1))
        self.params = params
        t = time.perf_counter()
        self.once()
        self.first = time.perf_counter() - t
        return self

    def once(self):
        self.out = self.gs.solve(self.prob, self.p.y0, self.params, engine=self.engine, rtol=self.rtol,
                                 atol=self.rtol * self.p.atol_ratio, device="cuda" if self.backend == "cuda" else "cpu")

    def result(self):
        r = self.out
        steps = np.asarray(r.accepted_steps) + (np.asarray(r.rejected_steps) if len(r.rejected_steps) else 0)
        return np.asarray(r.y_final), steps, bool(np.all(np.isfinite(np.asarray(r.y_final))))

    def flops_per_step(self):
        return None


class Scipy:
    def __init__(self, name, p, backend):
        import scipy  # noqa: F401
        self.p = p

    def prepare(self, rtol):
        self.rtol = rtol
        t = time.perf_counter()
        self.once()
        self.first = time.perf_counter() - t
        return self

    def once(self):
        from scipy.integrate import solve_ivp
        p = self.p
        ys, steps = np.empty((p.n, p.d)), np.empty(p.n)
        for j in range(p.n):
            r = solve_ivp(p.fun, (0.0, p.t1), p.y0[j], method="Radau", rtol=self.rtol, atol=self.rtol * p.atol_ratio,
                          jac=p.jac, args=tuple(p.params[j]))
            ys[j], steps[j] = r.y[:, -1], r.t.size - 1
        self.out = ys, steps

    def result(self):
        return self.out[0], self.out[1], bool(np.all(np.isfinite(self.out[0])))

    def flops_per_step(self):
        return None


def make(name, p, backend):
    if name in EAGLE_METHODS:
        return Eagle(name, p, backend)
    if name == "diffrax-kvaerno5":
        return Diffrax(name, p, backend)
    if name.startswith("gradsolve-"):
        return Gradsolve(name, p, backend)
    if name == "scipy-radau":
        return Scipy(name, p, backend)
    raise SystemExit(f"unknown implementation {name!r}; of {', '.join(IMPLS)}")


# ---------------------------------------------------------------- the run

def calibrate(name, check, ref, target, backend, log):
    """The loosest rtol of the ladder whose error on the check samples is <= target: (rtol, error)."""
    ladder_backend = "cpu" if name in EAGLE_METHODS else backend
    best = None
    for rtol in LADDER:
        impl = make(name, check, ladder_backend).prepare(rtol)
        y, steps, ok = impl.result()
        err = error(y, ref, check.floor)
        log.append({"impl": name, "problem": check.name, "rtol": rtol, "error": err, "ok": ok,
                    "mean_steps": float(np.mean(steps))})
        print(f"    ladder {name:24s} rtol {rtol:7.0e}: error {err:9.2e}, {np.mean(steps):8.1f} steps"
              f"{'' if ok else '  (some samples failed)'}", flush=True)
        if ok and err <= target:
            return rtol, err
        best = (rtol, err)
    return best


def measure(impl, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        impl.once()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--backend", choices=("cpu", "cuda"), default="cuda")
    ap.add_argument("--sizes", default="2^14,2^17,2^20", help="comma-separated N (2^k accepted)")
    ap.add_argument("--problems", default="rober,hires")
    ap.add_argument("--impls", default=",".join(IMPLS))
    ap.add_argument("--target", type=float, default=1e-6, help="the achieved error to match (see above)")
    ap.add_argument("--ladder", default=",".join(f"{x:g}" for x in LADDER),
                    help="the rtols tried, loosest first (comma-separated)")
    ap.add_argument("--check", type=int, default=16, help="samples the errors are measured on")
    ap.add_argument("--scipy-samples", type=int, default=16, help="samples scipy's Radau is timed on")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--budget", type=float, default=60.0,
                    help="seconds one timed call may take: a size whose time, extrapolated linearly from the "
                         "previous size, exceeds it is skipped (and said so)")
    ap.add_argument("--peak-tflops", type=float, default=None, help="FP64 FMA peak (default 32.9, the H200's, on cuda)")
    ap.add_argument("--json", help="write the rows, the ladders and the machine to this file")
    args = ap.parse_args(argv)

    def size(s):
        s = s.strip()
        return 2 ** int(s[2:]) if s.startswith("2^") else int(s)
    sizes = [size(s) for s in args.sizes.split(",")]
    LADDER[:] = sorted((float(x) for x in args.ladder.split(",")), reverse=True)
    peak = args.peak_tflops if args.peak_tflops is not None else (32.9 if args.backend == "cuda" else None)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    _machine.header()
    print(f"backend: {args.backend}; host cores for scipy: {cores}; target error {args.target:g}")
    rows, ladders, skipped = [], [], {}
    impls = [s.strip() for s in args.impls.split(",") if s.strip()]
    for pname in [s.strip() for s in args.problems.split(",")]:
        full = Problem(pname, max(sizes))
        check_idx = np.linspace(0, max(sizes) - 1, min(args.check, max(sizes))).astype(int)
        check = full.subset(check_idx)
        t = time.perf_counter()
        ref = reference(check)
        print(f"\n{pname}: reference (scipy Radau rtol 1e-12) on {check.n} samples in {time.perf_counter() - t:.1f} s")
        tols = {}
        for name in impls:
            try:
                tols[name] = calibrate(name, check, ref, args.target, args.backend, ladders)
            except Exception as e:  # noqa: BLE001 -- a peer that is not installed or fails: reported, skipped
                skipped[name] = f"{type(e).__name__}: {e}".splitlines()[0][:200]
                print(f"    {name}: skipped ({skipped[name]})")
                if os.environ.get("BENCH_TRACEBACK"):
                    traceback.print_exc()
        last = {}
        for n in sizes:
            p = full.subset(np.arange(n))
            for name, (rtol, err) in tols.items():
                row = {"problem": pname, "n": n, "impl": name, "rtol": rtol, "error": err}
                if name in last and name != "scipy-radau" and last[name][1] * n / last[name][0] > args.budget:
                    est = last[name][1] * n / last[name][0]
                    row.update(failed=f"skipped: about {est:.0f} s a call (over --budget {args.budget:g} s)")
                    rows.append(row)
                    print(f"  {pname} N={n:8d} {name:24s} {row['failed']}", flush=True)
                    continue
                try:
                    if name == "scipy-radau":
                        m = min(args.scipy_samples, n)
                        impl = make(name, p.subset(np.arange(m)), args.backend).prepare(rtol)
                        sec = measure(impl, 1)
                        row.update(seconds=sec * n / m / cores, extrapolated=f"from {m} samples over {cores} cores",
                                   first=0.0)
                    else:
                        impl = make(name, p, args.backend).prepare(rtol)
                        sec = measure(impl, args.reps)
                        row.update(seconds=sec, first=impl.first)
                    y, steps, ok = impl.result()
                    last[name] = (n, row["seconds"])
                    row.update(ok=ok, mean_steps=float(np.mean(steps)))
                    fps = impl.flops_per_step()
                    if fps is not None and name != "scipy-radau":
                        row["flops_per_step"] = fps
                        row["gflops"] = fps * float(np.sum(steps)) / row["seconds"] / 1e9
                        if peak:
                            row["fraction_of_peak"] = row["gflops"] / (peak * 1e3)
                except Exception as e:  # noqa: BLE001
                    row.update(failed=f"{type(e).__name__}: {e}".splitlines()[0][:200])
                rows.append(row)
                save(args, rows, ladders, skipped)
                print(f"  {pname} N={n:8d} {name:24s} rtol {rtol:6.0e} error {err:8.2e}: "
                      + (f"{row['seconds'] * 1e3:10.1f} ms" if "seconds" in row else row.get("failed", "?"))
                      + (f" ({row['extrapolated']})" if "extrapolated" in row else "")
                      + (f", first {row['first']:.2f} s" if row.get("first") else "")
                      + (f", {row['mean_steps']:.0f} steps" if "mean_steps" in row else "")
                      + (f", {row['gflops']:.2f} GFLOP/s" if "gflops" in row else "")
                      + (f" = {100 * row['fraction_of_peak']:.2f} % of FP64 peak" if "fraction_of_peak" in row else ""),
                      flush=True)
    # ratios at the largest N: eagle's best against the fastest peer
    print()
    for pname in [s.strip() for s in args.problems.split(",")]:
        for n in sizes:
            got = [r for r in rows if r["problem"] == pname and r["n"] == n and "seconds" in r]
            mine = [r for r in got if r["impl"] in EAGLE_METHODS]
            peers = [r for r in got if r["impl"] not in EAGLE_METHODS]
            if mine and peers:
                a = min(mine, key=lambda r: r["seconds"])
                for b in sorted(peers, key=lambda r: r["seconds"]):
                    print(f"  {pname} N={n}: {a['impl']} {a['seconds'] * 1e3:.1f} ms vs {b['impl']} "
                          f"{b['seconds'] * 1e3:.1f} ms: {b['seconds'] / a['seconds']:.1f}x")
    first = first_solve() if args.backend == "cpu" else None
    for k, v in skipped.items():
        print(f"skipped {k}: {v}")
    save(args, rows, ladders, skipped, first)
    return 0


def save(args, rows, ladders, skipped, first=None):
    """The JSON (after every row: a run cut short keeps what it measured)."""
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": _machine.machine(), "command": sys.argv, "rows": rows, "ladders": ladders,
                       "skipped": skipped, "target": args.target, "first_solve_s": first}, fh, indent=1)


FIRST = """
import sys, time
t = time.perf_counter()
import numpy as np
import eagle.ode as eo
sys.path.insert(0, {folder!r})
from {module} import hires
t_import = time.perf_counter() - t
t = time.perf_counter()
s = eo.Solver(hires, t_span=(0.0, 321.8122), method="Rodas5P", rtol=1e-6, atol=1e-10)
sol = s.solve(np.array([1.0, 0, 0, 0, 0, 0, 0, 0.0057]))
print(time.perf_counter() - t, t_import, int(sol.status[0]))
"""


def first_solve():
    """The first solve of HIRES on cpu in a fresh process: trace, Jacobian, compile, graph record,
    solve (imports apart). HIRES' rhs is written to a module of a new name, so its source (which
    names the function's file) is one no compile cache has seen."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        module = f"hires_{os.getpid()}_{time.time_ns()}"
        with open(os.path.join(folder, module + ".py"), "w") as fh:
            fh.write(HIRES_SOURCE)
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        out = subprocess.run([sys.executable, "-c", FIRST.format(folder=folder, module=module)], capture_output=True,
                             text=True, env=env, timeout=600)
    if out.returncode != 0:
        print(f"first solve of HIRES: the subprocess failed: {out.stderr[-2000:]}")
        return None
    sec, imp, status = out.stdout.split()[-3:]
    print(f"first solve of HIRES on cpu in a fresh process (trace + Jacobian + compile + record + solve), Rodas5P: "
          f"{float(sec):.2f} s{'' if status == '0' else ' (FAILED)'} (goal <= 3 s; imports apart: {float(imp):.2f} s)")
    return float(sec)


if __name__ == "__main__":
    sys.exit(main())
