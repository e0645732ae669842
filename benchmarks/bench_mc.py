"""Monte-Carlo paths with <eagle/random.h> against CuPy, JAX and cuRAND, FP64 (issue 30).

Four measurements, each in its own block, after a warm-up, the median of --reps runs (CUDA events
on the stream that ran the work; JAX: block_until_ready and the host clock):

1. GBM: --paths paths (2^24) x --steps steps (252) of geometric Brownian motion in log space,
   x <- x + a + b Z, S_T = s0 exp(x). eagle: one kernel, a path per lane, Philox4x32-10 +
   Box-Muller normals computed in registers (benchmarks/kernels/mc_paths.c), in eagle's default
   mode (fused multiply-adds) and bit-exact (exact=True, the same bits on every kind). CuPy: a Philox
   Generator's standard_normal into a buffer + an ElementwiseKernel step, per step. JAX:
   jax.random.normal (fold_in of the step) inside lax.fori_loop, jitted. Figure: G normals/s.
2. The generator alone, into memory: eagle's kernel writing --fill normals (2^28) against
   cuRAND's Philox4_32_10 curandGenerateNormalDouble of the same count, as a ratio.
3. An up-and-out call whose paths stop at the barrier (about half are knocked out before the
   last step). eagle: reset, compact, one drained launch (ActiveSet.drain: a lane whose path is
   done takes the next live one, so stopped paths free their lanes), recorded once as a graph;
   also the plain kernel with one lane per path to its end, for comparison. CuPy and JAX:
   masked loops over every step for every path.
4. Checks, outside the timings: the GBM's E[S_T] (reduced on the device, eagle.mean_var) and
   European call against their closed forms, the barrier prices of eagle and the peers against
   one another (independent random numbers: within 4 combined standard errors).

    python benchmarks/bench_mc.py --smoke --backend cpu          # here: small sizes, no peers
    python benchmarks/bench_mc.py --backend cuda --json out.json  # the H200 (device_run.sh mc)
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX beside CuPy and eagle on one GPU

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _machine import header  # noqa: E402

SOURCE = os.path.join(HERE, "kernels", "mc_paths.c")
KERNELS = ["mc_gbm", "mc_fill_normals", "ko_reset", "ko_steps", "ko_steps_drain"]

#: The model: S0, rate, volatility, years; the contracts' strike and (up-and-out) barrier.
MODEL = dict(s0=100.0, r=0.05, sigma=0.2, years=1.0, strike=100.0, barrier=115.0)
SEED = 20261201
K_STEPS = 16  # steps per body call in the drained barrier


def coefficients(steps):
    """(a, b, log barrier, discount) of the log-space step for `steps` steps over MODEL's years."""
    m = MODEL
    dt = m["years"] / steps
    return ((m["r"] - 0.5 * m["sigma"] ** 2) * dt, m["sigma"] * math.sqrt(dt), math.log(m["barrier"] / m["s0"]),
            math.exp(-m["r"] * m["years"]))


def black_scholes_call():
    m = MODEL
    sd = m["sigma"] * math.sqrt(m["years"])
    d1 = (math.log(m["s0"] / m["strike"]) + (m["r"] + 0.5 * m["sigma"] ** 2) * m["years"]) / sd
    cdf = lambda x: 0.5 * math.erfc(-x / math.sqrt(2.0))  # noqa: E731
    return m["s0"] * cdf(d1) - m["strike"] * math.exp(-m["r"] * m["years"]) * cdf(d1 - sd)


def mean_se(x):
    x = np.asarray(x, np.float64)
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size))


# ------------------------------------------------------------------------------ timing

class Clock:
    """Times a callable: CUDA events on `stream` (a raw cudaStream_t int, or None for CuPy's
    current stream) when CuPy and a GPU are here, else the host clock around it (the callable
    must then wait for its work itself)."""

    def __init__(self, gpu):
        self.cp = None
        if gpu:
            import cupy
            self.cp = cupy

    def median(self, run, reps, stream=None, wait=None):
        """(median ms, all ms) of `reps` runs after one warm-up. `wait()` ends the host-clock path."""
        run()
        if wait:
            wait()
        times = []
        for _ in range(reps):
            if self.cp is not None and stream is not False:
                st = self.cp.cuda.ExternalStream(stream) if stream else self.cp.cuda.get_current_stream()
                e0, e1 = self.cp.cuda.Event(), self.cp.cuda.Event()
                e0.record(st)
                run()
                e1.record(st)
                e1.synchronize()
                times.append(self.cp.cuda.get_elapsed_time(e0, e1))
            else:
                t0 = time.perf_counter()
                run()
                if wait:
                    wait()
                times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times), times


# ------------------------------------------------------------------------------ eagle

class Eagle:
    """The eagle side: the kernels of mc_paths.c compiled by the kind's own compiler (bit-exact,
    eagle's default), the planes through the seam, one stream."""

    def __init__(self, backend, n, steps):
        import eagle
        self.eagle = eagle
        self.b = eagle.backend(backend)
        # eagle's default mode (each compiler may fuse multiply-adds) and the bit-exact one, in which
        # every kind draws the same normals; the barrier runs bit-exact (its drained and plain runs
        # are compared bit for bit)
        self.mod_default = eagle.compile(SOURCE, backend=self.b, kernels=KERNELS)
        self.mod = eagle.compile(SOURCE, backend=self.b, kernels=KERNELS, exact=True)
        self.n, self.steps = n, steps
        self.stream = self.b.stream()
        self.a, self.bb, self.lb, self.disc = coefficients(steps)

    def raw_stream(self):
        return self.stream.handle

    def wait(self):
        self.stream.synchronize()

    # GBM
    def gbm_setup(self):
        self.s_T = self.b.empty(self.n)

    def gbm(self):
        self.stream.run(self.mod_default.mc_gbm, [self.s_T, self.steps, self.a, self.bb, MODEL["s0"], SEED], self.n)

    def gbm_exact(self):
        self.stream.run(self.mod.mc_gbm, [self.s_T, self.steps, self.a, self.bb, MODEL["s0"], SEED], self.n)

    # the generator into memory
    def fill_setup(self, count):
        self.fill_lanes = count // 2
        self.z = self.b.empty(2 * self.fill_lanes)

    def fill(self):
        self.stream.run(self.mod_default.mc_fill_normals, [self.z, SEED], self.fill_lanes)

    # the barrier
    def barrier_setup(self):
        b, n = self.b, self.n
        self.x, self.t = b.empty(n), b.empty(n, "int32")
        self.payoff, self.mask = b.empty(n), b.empty(n, "uint8")
        self.aset = self.eagle.ActiveSet(self.mask, backend=b, stream=self.stream)
        rounds = math.ceil(self.steps / K_STEPS) + 1
        args = self._ko_args(K_STEPS)

        def reset(s):
            s.run(self.mod.ko_reset, [self.x, self.t, self.payoff, self.mask], n)

        def drain(s):
            self.aset.drain(s, self.mod.ko_steps_drain, args, rounds)

        self.graph = self.eagle.Graph.build([reset, self.aset, drain, self.aset],
                                            planes=[self.x, self.t, self.payoff, self.mask],
                                            stream=self.stream, toggle=False)

    def _ko_args(self, K):
        m = MODEL
        return [self.x, self.t, self.payoff, self.mask, self.a, self.bb, self.lb, m["s0"], m["strike"], self.disc,
                self.steps, K, SEED]

    def barrier_drained(self):
        self.graph.launch()

    def barrier_plain(self):
        """One lane per path, each to its own end: the lanes of a stopped path idle in their warp."""
        self.stream.run(self.mod.ko_reset, [self.x, self.t, self.payoff, self.mask], self.n)
        self.stream.run(self.mod.ko_steps, self._ko_args(self.steps), self.n)


# ------------------------------------------------------------------------------ peers (GPU)

def cupy_generator(cp, seed):
    """CuPy's Philox4x32-10 Generator, else the legacy RandomState on cuRAND's Philox; (draw, name)."""
    try:
        gen = cp.random.Generator(cp.random.Philox4x3210(seed))
        buf = cp.empty(4, cp.float64)
        gen.standard_normal(size=4, dtype=cp.float64, out=buf)
        return (lambda out: gen.standard_normal(size=out.size, dtype=cp.float64, out=out)), \
            "cupy.random.Generator(Philox4x3210).standard_normal"
    except Exception:  # noqa: BLE001 - older CuPy: the cuRAND host generator
        rs = cp.random.RandomState(seed, method=cp.cuda.curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)

        def draw(out):
            out[...] = rs.standard_normal(out.size, dtype=cp.float64)
        return draw, "cupy.random.RandomState(PHILOX4_32_10).standard_normal"


class CuPyPeer:
    def __init__(self, n, steps):
        import cupy as cp
        self.cp, self.n, self.steps = cp, n, steps
        self.a, self.b, self.lb, self.disc = coefficients(steps)
        self.draw, self.rng_name = cupy_generator(cp, SEED)
        self.z = cp.empty(n, cp.float64)
        self.x = cp.zeros(n, cp.float64)
        self.alive = cp.ones(n, cp.uint8)
        self.step = cp.ElementwiseKernel("float64 z, float64 a, float64 b", "float64 x", "x += a + b * z",
                                         "mc_gbm_step")
        self.masked = cp.ElementwiseKernel(
            "float64 z, float64 a, float64 b, float64 lb", "float64 x, uint8 alive",
            "if (alive) { x += a + b * z; if (x >= lb) alive = 0; }", "mc_ko_step")

    def gbm(self):
        self.x.fill(0.0)
        for _ in range(self.steps):
            self.draw(self.z)
            self.step(self.z, self.a, self.b, self.x)
        self.s_T = MODEL["s0"] * self.cp.exp(self.x)

    def barrier(self):
        cp = self.cp
        self.x.fill(0.0)
        self.alive.fill(1)
        for _ in range(self.steps):
            self.draw(self.z)
            self.masked(self.z, self.a, self.b, self.lb, self.x, self.alive)
        s = MODEL["s0"] * cp.exp(self.x)
        self.payoff = cp.where(self.alive != 0, self.disc * cp.maximum(s - MODEL["strike"], 0.0), 0.0)


class JaxPeer:
    def __init__(self, n, steps):
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from jax import lax
        self.jax, self.n, self.steps = jax, n, steps
        a, b, lb, disc = coefficients(steps)
        s0, strike = MODEL["s0"], MODEL["strike"]
        key = jax.random.PRNGKey(SEED)

        @jax.jit
        def gbm(key):
            def body(t, x):
                return x + a + b * jax.random.normal(jax.random.fold_in(key, t), (n,), jnp.float64)
            return s0 * jnp.exp(lax.fori_loop(0, steps, body, jnp.zeros(n, jnp.float64)))

        @jax.jit
        def barrier(key):
            def body(t, c):
                x, alive = c
                xn = jnp.where(alive, x + a + b * jax.random.normal(jax.random.fold_in(key, t), (n,), jnp.float64), x)
                return xn, alive & (xn < lb)
            x, alive = lax.fori_loop(0, steps, body, (jnp.zeros(n, jnp.float64), jnp.ones(n, bool)))
            return jnp.where(alive, disc * jnp.maximum(s0 * jnp.exp(x) - strike, 0.0), 0.0)

        self._gbm, self._barrier, self.key = gbm, barrier, key
        impl = getattr(jax.config, "jax_default_prng_impl", "threefry2x32")
        self.rng_name = f"jax.random ({impl}) + lax.fori_loop, jit"

    def gbm(self):
        self.s_T = self._gbm(self.key)
        self.s_T.block_until_ready()

    def barrier(self):
        self.payoff = self._barrier(self.key)
        self.payoff.block_until_ready()


class CuRand:
    """cuRAND's host API, Philox4_32_10: curandGenerateNormalDouble into a device buffer."""

    def __init__(self, count):
        import cupy as cp
        from cupy.cuda import curand
        self.cp, self.curand, self.count = cp, curand, count
        self.gen = curand.createGenerator(curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
        curand.setPseudoRandomGeneratorSeed(self.gen, SEED)
        curand.setStream(self.gen, cp.cuda.get_current_stream().ptr)
        self.buf = cp.empty(count, cp.float64)

    def fill(self):
        self.curand.generateNormalDouble(self.gen, self.buf.data.ptr, self.count, 0.0, 1.0)


# ------------------------------------------------------------------------------ main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cuda", help="eagle kind: cuda (the peers need it) or cpu")
    ap.add_argument("--paths", type=int, default=None, help="paths (default 2^24; --smoke: 2^12)")
    ap.add_argument("--steps", type=int, default=252)
    ap.add_argument("--fill", type=int, default=None, help="normals written by the generator test (default 2^28)")
    ap.add_argument("--reps", type=int, default=None, help="timed runs per case, after a warm-up (default 7)")
    ap.add_argument("--smoke", action="store_true", help="small sizes, and fail unless every check passes")
    ap.add_argument("--no-peers", action="store_true", help="eagle only")
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args(argv)
    n = args.paths or (1 << 12 if args.smoke else 1 << 24)
    fill = args.fill or (1 << 16 if args.smoke else 1 << 28)
    reps = args.reps or (3 if args.smoke else 7)
    steps = args.steps
    if n < 2 or steps < 1 or fill < 2 or reps < 1:
        ap.error("--paths >= 2, --steps >= 1, --fill >= 2 and --reps >= 1")
    header()
    import eagle
    e = Eagle(args.backend, n, steps)
    gpu = e.b.kind != "cpu"
    clock = Clock(gpu)
    peers = gpu and not args.no_peers
    print(f"eagle {e.b.kind} backend ({e.b.path}): {n} paths x {steps} steps, FP64; median of {reps}")
    if gpu:
        p = e.b.device_props(0)
        print(f"device: {p.name}, {p.sm_count} SMs")
    res = {"paths": n, "steps": steps, "fill": fill, "reps": reps, "backend": args.backend, "rows": {}}
    checks = []

    def row(key, label, ms, normals=None, times=None):
        rate = normals / (ms * 1e-3) / 1e9 if normals else None
        res["rows"][key] = {"label": label, "ms": ms, "times_ms": times, "G_normals_per_s": rate}
        print(f"  {label:<64s} {ms:10.3f} ms" + (f"   {rate:8.3g} G normals/s" if rate else ""))

    def check(name, ok, detail):
        checks.append((name, bool(ok), detail))
        print(f"  check {'ok  ' if ok else 'FAIL'} {name}: {detail}")

    # 1. GBM -------------------------------------------------------------------------------
    print("\n1. GBM, x <- x + a + b Z per step, S_T = s0 exp(x)")
    e.gbm_setup()
    ms_x, t = clock.median(e.gbm_exact, reps, e.raw_stream(), e.wait)
    row("eagle_gbm_exact", "eagle, exact=True (the same bits on every kind)", ms_x, n * steps, t)
    ms, t = clock.median(e.gbm, reps, e.raw_stream(), e.wait)
    row("eagle_gbm", "eagle: one kernel, Philox + Box-Muller in registers (default mode)", ms, n * steps, t)
    mv = eagle.mean_var(e.s_T, stream=e.stream)
    want = MODEL["s0"] * math.exp(MODEL["r"] * MODEL["years"])
    check("E[S_T] (eagle.mean_var on the device)", abs(mv.mean - want) <= 4 * mv.stderr,
          f"{mv.mean:.4f} +- {mv.stderr:.4f}, exact {want:.4f}")
    s_host = e.s_T.numpy()
    call, se = mean_se(math.exp(-MODEL["r"] * MODEL["years"]) * np.maximum(s_host - MODEL["strike"], 0.0))
    bs = black_scholes_call()
    check("European call", abs(call - bs) <= 4 * se, f"{call:.4f} +- {se:.4f}, Black-Scholes {bs:.4f}")
    cupy_peer = jax_peer = None
    if peers:
        try:
            cupy_peer = CuPyPeer(n, steps)
            ms_c, t = clock.median(cupy_peer.gbm, reps)
            row("cupy_gbm", f"CuPy: {cupy_peer.rng_name} + ElementwiseKernel", ms_c, n * steps, t)
            print(f"      eagle is {ms_c / ms:.2f}x CuPy")
            res["rows"]["cupy_gbm"]["eagle_speedup"] = ms_c / ms
            s_c = cupy_peer.s_T.get()
            check("CuPy E[S_T]", abs(s_c.mean() - want) <= 4 * s_c.std() / math.sqrt(n), f"{s_c.mean():.4f}")
            del s_c
            cupy_peer.s_T = None
        except ImportError as exc:
            print(f"  CuPy: skipped ({exc})")
        try:
            jax_peer = JaxPeer(n, steps)
            ms_j, t = clock.median(jax_peer.gbm, reps, stream=False)
            row("jax_gbm", f"JAX: {jax_peer.rng_name}", ms_j, n * steps, t)
            print(f"      eagle is {ms_j / ms:.2f}x JAX")
            res["rows"]["jax_gbm"]["eagle_speedup"] = ms_j / ms
            s_j = np.asarray(jax_peer.s_T)
            check("JAX E[S_T]", abs(s_j.mean() - want) <= 4 * s_j.std() / math.sqrt(n), f"{s_j.mean():.4f}")
            del s_j
            jax_peer.s_T = None
        except ImportError as exc:
            print(f"  JAX: skipped ({exc})")
    e.s_T = None

    # 2. the generator into memory -----------------------------------------------------------
    print(f"\n2. the generator alone: {fill} FP64 normals written to memory")
    e.fill_setup(fill)
    ms_e, t = clock.median(e.fill, reps, e.raw_stream(), e.wait)
    row("eagle_fill", "eagle: mc_fill_normals (default mode)", ms_e, 2 * e.fill_lanes, t)
    zs = e.z.numpy()[: min(fill, 1 << 22)]
    check("filled normals", abs(zs.mean()) < 5 / math.sqrt(zs.size) and abs(zs.var() - 1) < 5 * math.sqrt(2 / zs.size),
          f"mean {zs.mean():.2e}, variance {zs.var():.5f} over {zs.size}")
    e.z = None
    if peers:
        try:
            cr = CuRand(fill)
            ms_r, t = clock.median(cr.fill, reps)
            row("curand_fill", "cuRAND: PHILOX4_32_10 curandGenerateNormalDouble", ms_r, fill, t)
            ratio = (2 * e.fill_lanes / ms_e) / (fill / ms_r)
            res["rows"]["curand_fill"]["eagle_over_curand"] = ratio
            print(f"      eagle's normals/s / cuRAND's: {ratio:.2f} (in registers, the GBM's: "
                  f"{(n * steps / ms) / (fill / ms_r):.2f})")
            cr.buf = None
        except ImportError as exc:
            print(f"  cuRAND: skipped ({exc})")

    # 3. the barrier -------------------------------------------------------------------------
    print(f"\n3. up-and-out call (barrier {MODEL['barrier']}), paths stop at the barrier")
    e.barrier_setup()
    ms_d, t = clock.median(e.barrier_drained, reps, e.raw_stream(), e.wait)
    e.wait()
    row("eagle_barrier_drain", "eagle: reset, compact, drained launch (ActiveSet.drain), exact=True", ms_d, None, t)
    price = eagle.mean_var(e.payoff, stream=e.stream)
    steps_done = e.t.numpy()
    out = float(np.mean(steps_done < steps))
    drawn = int(steps_done.astype(np.int64).sum())
    res["knocked_out"] = out
    res["rows"]["eagle_barrier_drain"]["G_normals_per_s"] = drawn / (ms_d * 1e-3) / 1e9
    print(f"      price {price.mean:.4f} +- {price.stderr:.4f}; knocked out before the last step {out:.1%}; "
          f"{drawn / n:.1f} steps a path ({drawn / (ms_d * 1e-3) / 1e9:.3g} G normals/s drawn)")
    check("about half the paths knocked out", 0.3 < out < 0.7, f"{out:.1%}")
    ms_p, t = clock.median(e.barrier_plain, reps, e.raw_stream(), e.wait)
    row("eagle_barrier_plain", "eagle: plain kernel, one lane per path to its end", ms_p, None, t)
    plain = eagle.mean_var(e.payoff, stream=e.stream)
    check("drained == plain", plain.mean == price.mean and plain.var == price.var,
          "the same paths, the same payoffs (bit for bit)")
    if peers and cupy_peer is not None:
        ms_c, t = clock.median(cupy_peer.barrier, reps)
        row("cupy_barrier", "CuPy: masked loop over every step", ms_c, None, t)
        res["rows"]["cupy_barrier"]["eagle_speedup"] = ms_c / ms_d
        print(f"      eagle (drained) is {ms_c / ms_d:.2f}x CuPy")
        pc, sc = mean_se(cupy_peer.payoff.get())
        check("CuPy's price", abs(pc - price.mean) <= 4 * math.hypot(sc, price.stderr), f"{pc:.4f} +- {sc:.4f}")
    if peers and jax_peer is not None:
        ms_j, t = clock.median(jax_peer.barrier, reps, stream=False)
        row("jax_barrier", "JAX: masked lax.fori_loop over every step", ms_j, None, t)
        res["rows"]["jax_barrier"]["eagle_speedup"] = ms_j / ms_d
        print(f"      eagle (drained) is {ms_j / ms_d:.2f}x JAX")
        pj, sj = mean_se(np.asarray(jax_peer.payoff))
        check("JAX's price", abs(pj - price.mean) <= 4 * math.hypot(sj, price.stderr), f"{pj:.4f} +- {sj:.4f}")
    if not gpu:
        pr, sr = numpy_barrier(n, steps)
        check("numpy's price (its own generator)", abs(pr - price.mean) <= 4 * math.hypot(sr, price.stderr),
              f"{pr:.4f} +- {sr:.4f}")
    res["checks"] = [{"name": c[0], "ok": c[1], "detail": c[2]} for c in checks]
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)
        print(f"\nwrote {args.json}")
    failed = [c[0] for c in checks if not c[1]]
    if failed:
        print(f"\nFAILED checks: {', '.join(failed)}")
    return 1 if failed and args.smoke else 0


def numpy_barrier(n, steps):
    """The barrier by a numpy masked loop with numpy's own generator: (price, standard error)."""
    a, b, lb, disc = coefficients(steps)
    rng = np.random.default_rng(SEED)
    x, alive = np.zeros(n), np.ones(n, bool)
    for _ in range(steps):
        x = np.where(alive, x + a + b * rng.standard_normal(n), x)
        alive &= x < lb
    return mean_se(np.where(alive, disc * np.maximum(MODEL["s0"] * np.exp(x) - MODEL["strike"], 0.0), 0.0))


if __name__ == "__main__":
    sys.exit(main())
