"""The oscillator card (anchors_h200.md §3): N damped harmonic oscillators, FP64 RK4 (dt = 1e-3),
sample i stopping after its own s_i steps (log-uniform up to 999).

eagle records the card once: reset, one drained launch of the K-step kernel over every sample,
compact (--loop drain, the default); or reset, compact, then a WHILE decided on the device whose
body runs K RK4 steps over the live index map and compacts again (--loop while). Checks: the
graph's result equals the eager step-by-step result (same kernels, host loop) bit for bit, and the
single-kernel reference and (small N) a numpy reference to 1e-12 relative. --mode picks
eagle.compile's floating-point mode (exact, the default here; default; fast).

--blocks is the benchmark method of issue 27: in each floating-point mode the card, the sorted
limit (the single kernel over the samples sorted by step count) and a raw CUDA kernel of the same
RK4 over sorted samples, each timed in its own block by CUDA events around back-to-back
repetitions after a warm-up (median of >= 15; the rotation only orders the blocks), with the GPU's
clocks printed. --breakdown times the card's pieces alone. --smoke runs both small, on cpu too.

    python benchmarks/oscillators.py --backend cpu --n 10000
    python benchmarks/oscillators.py --backend cpu --smoke
    python benchmarks/oscillators.py --backend cuda --n 1000000 --peers
    python benchmarks/oscillators.py --backend cuda --n 1000000 --blocks --breakdown
"""
import argparse
import math
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
KDIR = os.path.join(HERE, "kernels")
DT = 1e-3
REL_TOL = 1e-12


# ------------------------------------------------------------------------------ the workload

def workload(n, base=0):
    """omega, zeta (float64) and the step counts s_i (int32) of anchors_h200.md §3, for the n
    samples base .. base + n - 1 (a rank's share; base 0: the whole card)."""
    i = np.arange(base, base + n, dtype=np.int64)
    omega = 1.0 + (i % 97) / 97.0
    zeta = 0.01 + 0.2 * ((7 * i) % 101) / 101.0
    u = ((i * 2654435761) % (1 << 32)) / float(1 << 32)
    steps = np.maximum(1, np.floor(np.exp(u * math.log(1000.0)))).astype(np.int32)
    return omega, zeta, steps


def rk4_numpy(x, v, c1, c2):
    h, h2, h6 = DT, 0.5 * DT, DT / 6.0
    k1x, k1v = v, -c1 * v - c2 * x
    x2, v2 = x + h2 * k1x, v + h2 * k1v
    k2x, k2v = v2, -c1 * v2 - c2 * x2
    x3, v3 = x + h2 * k2x, v + h2 * k2v
    k3x, k3v = v3, -c1 * v3 - c2 * x3
    x4, v4 = x + h * k3x, v + h * k3v
    k4x, k4v = v4, -c1 * v4 - c2 * x4
    return (x + h6 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x),
            v + h6 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v))


def numpy_reference(omega, zeta, steps, xp=np):
    """Masked loop to max s_i (also the template of the array-library peers)."""
    c1, c2 = 2.0 * zeta * omega, omega * omega
    x, v = xp.ones_like(omega), xp.zeros_like(omega)
    for k in range(int(steps.max())):
        live = k < steps
        xn, vn = rk4_numpy(x, v, c1, c2)
        x, v = xp.where(live, xn, x), xp.where(live, vn, v)
    return x, v


def max_rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300))) if a.size else 0.0


def median_time(fn, reps, warmup=1):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# ------------------------------------------------------------------------------------- eagle

ONE_SOURCE = os.path.join(os.path.dirname(HERE), "examples", "oscillator", "oscillator.c")


# eagle.compile's floating-point modes by name (--mode): exact (bit-exact: the kinds evaluate the
# same RK4 expression and agree bit for bit), default (multiply-adds fused, as every peer compiler
# does by default), fast (fast math).
FP_MODES = {"exact": {"exact": True}, "default": {}, "fast": {"fast_math": True}}


def load_kernels(backend, mode="exact"):
    """The card's kernels from its one C source (examples/oscillator/oscillator.c), compiled by the
    kind's own compiler through the seam (cpu: cc; cuda: NVRTC, no nvcc) in floating-point mode
    ``mode`` (a key of FP_MODES)."""
    import eagle
    return eagle.compile(ONE_SOURCE, backend=backend, **FP_MODES[mode],
                         kernels=["osc_reset", "osc_steps_active", "osc_steps_drain", "osc_single"])


# The card's programs (loop 'drain'), by name: the steps recorded, in order. "drain" is a drain
# over the compacted index map, "drain_all" one with no map over every sample (compacted=False).
PROGRAMS = {
    "card": ("reset", "drain_all", "compact"),        # the card: no compaction before the drain
    "card_v1": ("reset", "compact", "drain", "compact"),  # the card as published until issue 27
    "no_final_compact": ("reset", "drain_all"),
    "no_drain": ("reset", "compact", "compact"),
    "reset_compact": ("reset", "compact"),
    "reset": ("reset",),
}


class Card:
    """The eagle program of the card, on one backend; planes allocated through the seam.

    loop 'drain' (eagle's default for independent samples): reset, one drained launch of the step
    kernel over every sample (ActiveSet.drain(compacted=False): each lane keeps stepping its
    sample K steps at a time until the sample is done, then takes the next one), compact (which
    leaves aset.live == 0). ``program`` names another sequence of those pieces (PROGRAMS), for
    the breakdown. loop 'while': reset, compact, then a WHILE decided on the device whose body
    runs K steps over the live index map and compacts. ``order``: the samples' permutation (the
    workload of sample order[j] is put at position j), for the breakdown's sorted cards."""

    def __init__(self, kind, n, K, reorder=None, mode="drain", fp="exact", module=None, workers=None,
                 program="card", order=None):
        import eagle
        self.eagle, self.n, self.K, self.mode, self.workers, self.fp = eagle, n, K, mode, workers, fp
        self.backend = b = eagle.backend(kind)
        self.k = module or load_kernels(b, fp)
        omega, zeta, steps = workload(n)
        if order is not None:
            omega, zeta, steps = (np.ascontiguousarray(a[order]) for a in (omega, zeta, steps))
        self.host = (omega, zeta, steps)
        self.omega, self.zeta, self.target = b.asarray(omega), b.asarray(zeta), b.asarray(steps)
        self.x, self.v = b.zeros(n), b.zeros(n)
        self.done, self.mask = b.zeros(n, "int32"), b.zeros(n, "uint8")
        self.stream = b.stream()
        planes = [self.x, self.v, self.omega, self.zeta, self.done, self.target]
        self.aset = eagle.ActiveSet(self.mask, reorder=reorder, planes=planes if reorder else (),
                                    backend=b, stream=self.stream)
        self.max_iters = math.ceil(int(steps.max()) / K) + 1
        if mode == "drain":
            self.loop = None
            pieces = {"reset": self.reset, "compact": self.aset, "drain": self.drain, "drain_all": self.drain_all}
            program = [pieces[p] for p in PROGRAMS[program]]
        else:
            self.loop = eagle.repeat_while([self.steps, self.aset], self.aset, self.max_iters,
                                           name="K steps + compact")
            program = [self.reset, self.aset, self.loop]
        # toggle=False: no member is switched off here, so no guard IF wraps the WHILE
        self.graph = eagle.Graph.build(program, planes=[self.mask] + planes, stream=self.stream, toggle=False)

    def reset(self, s):
        s.run(self.k.osc_reset, [self.x, self.v, self.done, self.mask], self.n)

    def steps(self, s):
        a = self.aset
        s.run(self.k.osc_steps_active, [self.x, self.v, self.omega, self.zeta, self.done, self.target, self.mask,
                                        self.K, a.index_map, a.count], self.n)

    def drain(self, s, compacted=True):
        self.aset.drain(s, self.k.osc_steps_drain, [self.x, self.v, self.omega, self.zeta, self.done, self.target,
                                                    self.mask, self.K], self.max_iters, workers=self.workers,
                        compacted=compacted)

    def drain_all(self, s):
        self.drain(s, compacted=False)

    def iterations(self):
        """WHILE iterations the last replay ran (mode 'while'); 1 drained launch otherwise."""
        return self.graph.ran(self.loop) if self.loop is not None else 1

    def result(self):
        if self.aset.theta is not None:
            self.aset.restore()
        return self.x.numpy(), self.v.numpy()

    def run_graph(self):
        self.graph.launch()
        self.graph.synchronize()

    def enqueue_graph(self):
        """One replay, enqueued (no wait): what the event timer brackets."""
        self.graph.launch()

    def run_eager(self):
        """The same kernels step by step from the host: K steps, compact, read the count."""
        s = self.stream
        self.reset(s)
        self.aset.compact(s)
        s.synchronize()
        iters = 0
        while self.aset.live:
            self.steps(s)
            self.aset.compact(s)
            s.synchronize()
            iters += 1
        return iters

    def run_single(self):
        self.stream.run(self.k.osc_single, [self.x, self.v, self.omega, self.zeta, self.target], self.n)
        self.stream.synchronize()


class SortedLimit:
    """The limit of issue 17: the single kernel (one lane per sample, every step in one go) over
    the samples sorted by their step count, so each warp's lanes take the same number of steps.
    Same module (same flags) as the card; the step counts are known in advance here, which eagle
    does not know. Sorting is not timed; the result is put back in sample order for the check."""

    def __init__(self, card, descending=False):
        b = card.backend
        omega, zeta, steps = card.host
        self.order = np.argsort(-steps if descending else steps, kind="stable")
        self.card = card
        self.om, self.ze, self.t = (b.asarray(np.ascontiguousarray(a[self.order])) for a in (omega, zeta, steps))
        self.x, self.v = b.zeros(card.n), b.zeros(card.n)

    def enqueue(self):
        c = self.card
        c.stream.run(c.k.osc_single, [self.x, self.v, self.om, self.ze, self.t], c.n)

    def run(self):
        self.enqueue()
        self.card.stream.synchronize()

    def result(self):
        x, v = np.empty(self.card.n), np.empty(self.card.n)
        x[self.order], v[self.order] = self.x.numpy(), self.v.numpy()
        return x, v


# ------------------------------------------------------------------------------------- peers

RK4_C = open(os.path.join(KDIR, "oscillator_rk4.h")).read()


OPENMP_C = r"""
#include "oscillator.c"
#include <omp.h>
/* The card's single-kernel reference as a plain OpenMP loop over the same per-sample body (the
 * one source's osc_single), bit-exact flags like eagle's: the cpu host's limit for the card. */
__attribute__((visibility("default"))) void omp_single(double* x, double* v, const double* omega,
        const double* zeta, const int* target, long long n, int dynamic) {
    if (dynamic) {
        #pragma omp parallel for schedule(dynamic, 256)
        for (long long i = 0; i < n; ++i) eagle_body_osc_single(i, n, x, v, omega, zeta, target);
    } else {
        #pragma omp parallel for schedule(static)
        for (long long i = 0; i < n; ++i) eagle_body_osc_single(i, n, x, v, omega, zeta, target);
    }
}
__attribute__((visibility("default"))) int omp_threads(void) { return omp_get_max_threads(); }
"""


def peer_openmp(omega, zeta, steps, dynamic):
    """The single-kernel reference as an OpenMP C loop (cc -O3 -fopenmp -ffp-contract=off), over
    the one source's per-sample body; called through ctypes. The cpu backend's goal: the card
    >= 0.9x this."""
    import ctypes
    import shutil
    import subprocess
    import tempfile
    import eagle
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    d = tempfile.mkdtemp(prefix="eagle-omp-")
    src, lib = os.path.join(d, "omp.c"), os.path.join(d, "libomp_card.so")
    with open(src, "w") as f:
        f.write(OPENMP_C)
    subprocess.run([cc, "-O3", "-ffp-contract=off", "-fopenmp", "-shared", "-fPIC", "-I", eagle.include_dir(),
                    "-I", os.path.dirname(ONE_SOURCE), src, "-o", lib], check=True)
    so = ctypes.CDLL(lib)
    n = len(omega)
    x, v = np.zeros(n), np.zeros(n)
    om, ze, st = (np.ascontiguousarray(a) for a in (omega, zeta, steps.astype(np.int32)))
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    args = (ptr(x), ptr(v), ptr(om), ptr(ze), ptr(st), ctypes.c_longlong(n), ctypes.c_int(int(dynamic)))

    def run():
        so.omp_single(*args)
    return run, lambda: (x, v), int(so.omp_threads())


def peer_cupy(omega, zeta, steps):
    import cupy as cp
    kern = cp.ElementwiseKernel(
        "int32 t, float64 c1, float64 c2, int32 k", "float64 x, float64 v",
        "if (k < t) { double xi = x, vi = v; osc_rk4(&xi, &vi, c1, c2); x = xi; v = vi; }",
        "osc_masked_step", preamble="#define OSC_FN __device__ __forceinline__\n" + RK4_C)
    t, om, ze = cp.asarray(steps), cp.asarray(omega), cp.asarray(zeta)
    c1, c2 = 2.0 * ze * om, om * om
    x, v = cp.ones_like(om), cp.zeros_like(om)
    tmax = int(steps.max())

    def run():
        x.fill(1.0)
        v.fill(0.0)
        for k in range(tmax):
            kern(t, c1, c2, k, x, v)
        cp.cuda.Device().synchronize()
    return run, lambda: (cp.asnumpy(x), cp.asnumpy(v))


def peer_torch(omega, zeta, steps):
    import torch
    dev = "cuda"
    t = torch.as_tensor(steps, device=dev)
    om, ze = torch.as_tensor(omega, device=dev), torch.as_tensor(zeta, device=dev)
    c1, c2 = 2.0 * ze * om, om * om
    tmax = int(steps.max())
    out = {}

    def run():
        x, v = torch.ones_like(om), torch.zeros_like(om)
        for k in range(tmax):
            live = k < t
            xn, vn = rk4_numpy(x, v, c1, c2)
            x, v = torch.where(live, xn, x), torch.where(live, vn, v)
        torch.cuda.synchronize()
        out["xv"] = (x, v)
    return run, lambda: tuple(a.cpu().numpy() for a in out["xv"])


def peer_jax(omega, zeta, steps):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax import lax
    t = jnp.asarray(steps)
    om, ze = jnp.asarray(omega), jnp.asarray(zeta)
    c1, c2 = 2.0 * ze * om, om * om

    @jax.jit
    def integrate(c1, c2, t):
        def cond(c):
            return jnp.any(c[0] < t)

        def body(c):
            k, x, v = c
            live = k < t
            xn, vn = rk4_numpy(x, v, c1, c2)
            return k + 1, jnp.where(live, xn, x), jnp.where(live, vn, v)
        _, x, v = lax.while_loop(cond, body, (jnp.int32(0), jnp.ones_like(c1), jnp.zeros_like(c1)))
        return x, v
    out = {}

    def run():
        out["xv"] = integrate(c1, c2, t)
        out["xv"][0].block_until_ready()
    return run, lambda: tuple(np.asarray(a) for a in out["xv"])


# ------------------------------------------------------------------------- the block method

# The peer a CUDA programmer writes: the same RK4 (kernels/oscillator_rk4.h), one thread a sample,
# over the samples sorted by step count, compiled by CuPy's NVRTC with NVRTC's own defaults.
RAW_CUDA = r"""
extern "C" __global__ void raw_rk4_single(double* x, double* v, const double* omega, const double* zeta,
                                          const int* target, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const double w = omega[i], c1 = 2.0 * zeta[i] * w, c2 = w * w;
    double xi = 1.0, vi = 0.0;
    for (int s = 0; s < target[i]; ++s) osc_rk4(&xi, &vi, c1, c2);
    x[i] = xi;
    v[i] = vi;
}
"""
# NVRTC options of the raw kernel in each mode: exact spells --fmad=false; the default is NVRTC's.
RAW_OPTIONS = {"exact": ("--fmad=false",), "default": (), "fast": ("--use_fast_math",)}
FLOPS_PER_STEP = 38  # the RK4 step's + - * (oscillator.c's rk4), a fused multiply-add counted as 2
PEAK_FP64_FMA, PEAK_FP64_ADD_MUL = 32.9e12, 16.5e12  # the H200's FP64 rates (issue 27, measured)


def gpu_clocks():
    """The GPU's clocks now, as nvidia-smi reports them (SM, max SM, memory)."""
    import subprocess
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,clocks.mem", "--format=csv"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"not available ({type(e).__name__}: {e})"
    return " | ".join(out.stdout.strip().splitlines()) or out.stderr.strip()


class BlockTimer:
    """Times one implementation's block on ``stream``: ``warmup`` repetitions, then ``reps`` back to
    back, each bracketed by the kind's own timer. On a GPU: CUDA events (CuPy's) recorded on the
    stream around each repetition, nothing waited for between them (the warm-ups keep the device
    busy while the host enqueues), one wait at the end. On cpu: perf_counter around each
    repetition and its wait."""

    def __init__(self, backend, stream):
        self.stream, self.cp = stream, None
        if backend.kind != "cpu":
            import cupy as cp
            self.cp, self.ext = cp, cp.cuda.ExternalStream(stream.handle)

    def block(self, enqueue, reps, warmup=3):
        if self.cp is None:
            for _ in range(warmup):
                enqueue()
                self.stream.synchronize()
            times = []
            for _ in range(reps):
                t = time.perf_counter()
                enqueue()
                self.stream.synchronize()
                times.append(time.perf_counter() - t)
            return times
        cp = self.cp
        for _ in range(warmup):
            enqueue()
        marks = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(reps)]
        for a, b in marks:
            a.record(self.ext)
            enqueue()
            b.record(self.ext)
        marks[-1][1].synchronize()
        return [cp.cuda.get_elapsed_time(a, b) * 1e-3 for a, b in marks]


class RawSorted:
    """RAW_CUDA over the samples sorted by step count, launched by CuPy on the card's stream."""

    def __init__(self, card, mode):
        import cupy as cp
        self.cp, self.n = cp, card.n
        omega, zeta, steps = card.host
        self.order = np.argsort(steps, kind="stable")
        self.kern = cp.RawKernel("#define OSC_FN __device__ __forceinline__\n" + RK4_C + RAW_CUDA,
                                 "raw_rk4_single", options=RAW_OPTIONS[mode])
        self.om, self.ze = (cp.asarray(np.ascontiguousarray(a[self.order])) for a in (omega, zeta))
        self.t = cp.asarray(np.ascontiguousarray(steps[self.order]).astype(np.int32))
        self.x, self.v = cp.zeros(card.n), cp.zeros(card.n)
        self.ext = cp.cuda.ExternalStream(card.stream.handle)

    def enqueue(self):
        with self.ext:
            self.kern(((self.n + 255) // 256,), (256,), (self.x, self.v, self.om, self.ze, self.t, np.int64(self.n)))

    def result(self):
        x, v = np.empty(self.n), np.empty(self.n)
        x[self.order], v[self.order] = self.cp.asnumpy(self.x), self.cp.asnumpy(self.v)
        return x, v


def _sorted_card(kind, n, K, mode, module, descending):
    """The card over its samples sorted by step count; result() is put back in sample order."""
    steps = workload(n)[2]
    order = np.argsort(-steps if descending else steps, kind="stable")
    card = Card(kind, n, K, fp=mode, module=module, order=order)
    plain = card.result

    def result():
        px, pv = plain()
        x, v = np.empty(n), np.empty(n)
        x[order], v[order] = px, pv
        return x, v
    card.result = result
    return card


def run_block_method(args, K):
    """--blocks / --breakdown: every implementation in each of args.modes timed in its own block
    (BlockTimer), the blocks visited in a rotating order over args.rounds rounds, the median of
    every repetition reported; the results checked against the exact card."""
    import eagle
    b = eagle.backend(args.backend)
    gpu = b.kind != "cpu"
    reps = args.block_reps or 20
    if not args.smoke and reps < 15:
        raise SystemExit("--block-reps must be >= 15 (the median of at least 15 repetitions)")
    rounds = args.rounds or 3
    n = args.n
    omega, zeta, steps = workload(n)
    flop = FLOPS_PER_STEP * float(steps.sum())
    props = b.device_props()
    print(f"oscillator card, block method: backend={args.backend} ({props.name}) N={n} K={K} "
          f"sum s_i={int(steps.sum())} ({flop / 1e9:.3f} GFLOP) modes={','.join(args.modes)}")
    print(f"each block: 3 warm-ups, then {reps} back-to-back repetitions timed by "
          f"{'CUDA events on the stream' if gpu else 'perf_counter around each repetition and its wait'}; "
          f"{rounds} round(s) over the blocks in rotating order; median of all {reps * rounds}")
    if gpu:
        print(f"GPU clocks before: {gpu_clocks()}")
    impls = []  # (mode, name, enqueue, stream, result or None)
    for mode in args.modes:
        module = load_kernels(b, mode)
        card = Card(args.backend, n, K, fp=mode, module=module)
        lim = SortedLimit(card)
        if args.blocks:
            impls.append((mode, "card", card.enqueue_graph, card.stream, card.result))
            impls.append((mode, "sorted limit", lim.enqueue, card.stream, lim.result))
            if gpu:
                try:
                    raw = RawSorted(card, mode)
                    impls.append((mode, "raw CUDA, sorted", raw.enqueue, card.stream, raw.result))
                except Exception as e:  # noqa: BLE001 - a missing CuPy is reported, not fatal
                    print(f"raw CUDA kernel skipped ({mode}): {type(e).__name__}: {e}"[:200])
        if args.breakdown:
            if not args.blocks:
                impls.append((mode, "card", card.enqueue_graph, card.stream, card.result))
                impls.append((mode, "sorted limit", lim.enqueue, card.stream, lim.result))
            for prog in ("card_v1", "no_final_compact", "no_drain", "reset_compact", "reset"):
                c = Card(args.backend, n, K, fp=mode, module=module, program=prog)
                impls.append((mode, f"[{', '.join(PROGRAMS[prog])}]", c.enqueue_graph, c.stream,
                              c.result if "drain" in " ".join(PROGRAMS[prog]) else None))
            for descending in (False, True):
                c = _sorted_card(args.backend, n, K, mode, module, descending)
                impls.append((mode, f"card over samples sorted {'longest' if descending else 'shortest'} first",
                              c.enqueue_graph, c.stream, c.result))
            down = SortedLimit(card, descending=True)
            impls.append((mode, "sorted limit, longest first", down.enqueue, card.stream, down.result))
            # K: each body call runs K steps and goes through memory (x, v, done) and the claim; a lane
            # that finishes its call early waits for its warp's longest (divergence): K trades the two
            for k in sorted({max(1, K // 2), 2 * K, 4 * K} - {K}):
                c = Card(args.backend, n, k, fp=mode, module=module)
                impls.append((mode, f"card, K={k}", c.enqueue_graph, c.stream, c.result))
            # workers = n: one lane a sample in sample order, so no lane claims (what claiming buys)
            c = Card(args.backend, n, K, fp=mode, module=module, program="no_final_compact", workers=n)
            impls.append((mode, "[reset, drain_all], workers = n (no claiming)", c.enqueue_graph, c.stream, c.result))
    timers = {}
    times = {(m, name): [] for m, name, *_ in impls}
    for r in range(rounds):
        for mode, name, enqueue, stream, _ in impls[r % len(impls):] + impls[:r % len(impls)]:
            timer = timers.setdefault(id(stream), BlockTimer(b, stream))
            times[(mode, name)] += timer.block(enqueue, reps)
    if gpu:
        print(f"GPU clocks after:  {gpu_clocks()}")
    med = {key: statistics.median(t) for key, t in times.items()}

    ok = True
    ref = {}  # the exact card's result, else the first mode's
    for mode, name, enqueue, stream, result in impls:
        if result is None:
            continue
        if name == "card":
            ref.setdefault("card", result())
    base_x, base_v = ref["card"]
    print(f"\n| mode | implementation | median ms | min ms | vs sorted limit | vs exact mode | "
          f"GFLOP/s | of FP64 FMA peak | of add/mul peak | max rel vs {args.modes[0]} card |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for mode, name, enqueue, stream, result in impls:
        t = med[(mode, name)]
        lim_t = med[(mode, "sorted limit")]
        exact_t = med.get(("exact", name))
        note = ""
        if result is not None:
            x, v = result()
            rel = max(max_rel(x, base_x), max_rel(v, base_v))
            # exact against exact: the same bits; a contracting mode (default, fast) rounds each
            # multiply-add once, which over ~1000 RK4 steps moves the last digits (seen: 3.9e-12)
            tol = 0.0 if (mode == "exact" and args.modes[0] == "exact") else 1e-9
            good = rel <= tol
            ok &= good
            note = f"{rel:.1e}{'' if good else ' FAIL'}"
        rate = (f"{flop / t / 1e9:.0f} | {flop / t / PEAK_FP64_FMA:.1%} | {flop / t / PEAK_FP64_ADD_MUL:.1%}"
                if result is not None else "- | - | -")  # a piece without the drain does no RK4
        print(f"| {mode} | {name} | {t * 1e3:.4f} | {min(times[(mode, name)]) * 1e3:.4f} | {t / lim_t:.3f}x | "
              + (f"{t / exact_t:.3f}x" if exact_t else "-") + f" | {rate} | {note} |")
    print("\n(GFLOP/s: 38 flops a step x sum s_i over the median time; the peaks are the H200's FP64 rates, "
          "meaningful on that device only; exact mode runs no fused multiply-adds, so its bound is the add/mul peak)")
    for mode in args.modes:
        line = f"{mode}: card / sorted limit = {med[(mode, 'card')] / med[(mode, 'sorted limit')]:.3f}x (goal <= 1.1x)"
        if (mode, "raw CUDA, sorted") in med:
            line += f"; card / raw CUDA sorted = {med[(mode, 'card')] / med[(mode, 'raw CUDA, sorted')]:.3f}x"
        if mode != "exact" and ("exact", "card") in med:
            line += f"; speed-up over exact: card {med[('exact', 'card')] / med[(mode, 'card')]:.3f}x, " \
                    f"limit {med[('exact', 'sorted limit')] / med[(mode, 'sorted limit')]:.3f}x"
        print(line)
        if args.breakdown:
            g = {name: med[(mode, name)] for m, name, *_ in impls if m == mode}
            full = g["card"]
            pieces = [
                ("the first compaction (published card [reset, compact, drain, compact] - card)",
                 g["[reset, compact, drain, compact]"] - full),
                ("the last compaction (card - [reset, drain_all])", full - g["[reset, drain_all]"]),
                ("the reset kernel alone", g["[reset]"]),
                ("one compaction of an all-live set ([reset, compact] - [reset])", g["[reset, compact]"] - g["[reset]"]),
                ("two compactions ([reset, compact, compact] - [reset])", g["[reset, compact, compact]"] - g["[reset]"]),
                ("the drain alone ([reset, drain_all] - [reset])", g["[reset, drain_all]"] - g["[reset]"]),
            ]
            print(f"  {mode} breakdown (ms; the card {full * 1e3:.4f}, the sorted limit {g['sorted limit'] * 1e3:.4f}, "
                  f"gap {(full - g['sorted limit']) * 1e3:.4f}):")
            for label, sec in pieces:
                print(f"    {label}: {sec * 1e3:.4f} ({sec / full:.1%} of the card)")
            drain = g["[reset, drain_all]"] - g["[reset]"]
            print(f"    the drain / the sorted limit: {drain / g['sorted limit']:.3f}x (claiming, and lanes idle at "
                  f"the tail); the card over samples sorted shortest first "
                  f"{g['card over samples sorted shortest first'] / full:.3f}x the card, longest first "
                  f"{g['card over samples sorted longest first'] / full:.3f}x; the limit sorted longest first "
                  f"{g['sorted limit, longest first'] / g['sorted limit']:.3f}x the limit")
            static = g["[reset, drain_all], workers = n (no claiming)"] - g["[reset]"]
            print(f"    the drain with one lane a sample (no claiming) / the drain: {static / drain:.3f}x")
            ks = sorted((int(name.split("=")[1]), t) for name, t in g.items() if name.startswith("card, K="))
            print("    the card for other K (steps a body call): " + ", ".join(
                f"K={k} {t / full:.3f}x" for k, t in ks) + f" the card's (K={K})")
    print(f"\noscillator card, block method: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


# -------------------------------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cpu", help="eagle kind: cpu or cuda")
    ap.add_argument("--n", type=int, default=None, help="samples (default 10000; 3000 with --smoke)")
    ap.add_argument("--loop", choices=("drain", "while"), default=None,
                    help="drain (default): one drained launch; while (default with --reorder): a WHILE of "
                         "K steps + compaction")
    ap.add_argument("--k", type=int, default=None,
                    help="RK4 steps per body call (default 32)")
    ap.add_argument("--mode", choices=tuple(FP_MODES), default="exact",
                    help="eagle.compile's floating-point mode for the checks and the interleaved table: exact "
                         "(bit-exact, the default here), default (multiply-adds fused), fast (fast math)")
    ap.add_argument("--fast-math", action="store_true", help="the same as --mode fast")
    ap.add_argument("--reorder", type=float, default=None, help="ActiveSet reorder theta (0.25-0.75), loop while")
    ap.add_argument("--reps", type=int, default=None, help="timed repetitions (median)")
    ap.add_argument("--peers", action="store_true", help="also time the Python peers and the single kernel")
    ap.add_argument("--limit", action="store_true", help="also time the sorted-limit single kernel (same flags)")
    ap.add_argument("--blocks", action="store_true",
                    help="the block method (issue 27): in each of --modes, the card, the sorted limit and (cuda) a "
                         "raw CUDA kernel each timed in its own block of back-to-back repetitions by the kind's "
                         "timer (CUDA events), after a warm-up; GPU clocks printed")
    ap.add_argument("--breakdown", action="store_true",
                    help="time the card's pieces alone (reset, compactions, the drain, sorted cards) by the "
                         "block method, in each of --modes")
    ap.add_argument("--modes", default="exact,default,fast",
                    help="floating-point modes of --blocks / --breakdown (comma-separated)")
    ap.add_argument("--block-reps", type=int, default=None, help="repetitions per block (default 20; >= 15)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds over the blocks, rotating their order (default 3)")
    ap.add_argument("--smoke", action="store_true",
                    help="a small, quick run of --blocks and --breakdown (default N 3000) that checks their results")
    ap.add_argument("--numpy-check", action="store_true", help="compare with numpy even at large N")
    ap.add_argument("--save", help="save the graph's x, v (.npy) for a cross-backend check")
    ap.add_argument("--compare", help="compare with a result saved by --save on another backend")
    ap.add_argument("--sweep-k", action="store_true", help="also time the graph for other K, both loops")
    args = ap.parse_args(argv)
    if args.fast_math:
        args.mode = "fast"
    args.n = args.n or (3000 if args.smoke else 10000)
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in args.modes:
        if m not in FP_MODES:
            ap.error(f"--modes: {m!r} is not one of {', '.join(FP_MODES)}")
    if args.smoke:
        args.blocks = args.breakdown = True
        args.block_reps = args.block_reps or 3
        args.rounds = args.rounds or 1
    reps = args.reps or (10 if args.backend != "cpu" else 3)
    args.mode_loop = args.loop or ("while" if args.reorder is not None else "drain")
    if args.mode_loop == "drain" and args.reorder is not None:
        ap.error("--reorder needs --loop while (a drained ActiveSet does not reorder its planes)")
    K = args.k or 32
    if args.blocks or args.breakdown:
        return run_block_method(args, K)

    t0 = time.perf_counter()
    card = Card(args.backend, args.n, K, args.reorder, mode=args.mode_loop, fp=args.mode)
    omega, zeta, steps = card.host
    print(f"oscillator card: backend={args.backend} N={args.n} loop={args.mode_loop} K={K} reorder={args.reorder} "
          f"mode={args.mode} sum s_i={int(steps.sum())} max s_i={int(steps.max())} "
          f"(setup {time.perf_counter() - t0:.2f} s)")
    if args.backend == "cpu":
        print(f"eagle cpu threads: {card.backend.device_props().sm_count} (the affinity mask's CPUs, or "
              f"$EAGLE_CPU_THREADS={os.environ.get('EAGLE_CPU_THREADS', 'unset')}); host CPUs: {os.cpu_count()}")
    print(f"graph: decisions {'on the device' if card.graph.decides_on_device else 'on the host'}, "
          f"{card.graph.kernel_node_count} kernel nodes, rounds at most {card.max_iters}")

    card.run_graph()
    g_iters = card.iterations()
    gx, gv = card.result()
    e_iters = card.run_eager()
    ex, ev = card.result()
    exact = np.array_equal(gx, ex) and np.array_equal(gv, ev)
    print(f"check graph == eager step-by-step (bit for bit): {'PASS' if exact else 'FAIL'} "
          f"({g_iters} {'WHILE iterations' if card.loop is not None else 'drained launch'} on the device, "
          f"{e_iters} eager iterations)")
    ok = exact and (card.loop is None or g_iters == e_iters)
    card.run_single()
    sx, sv = card.x.numpy(), card.v.numpy()
    rel = max(max_rel(gx, sx), max_rel(gv, sv))
    tol = REL_TOL if args.mode != "fast" else 1e-9
    ok &= rel <= tol
    print(f"check graph vs single-kernel reference: max rel {rel:.2e} "
          f"({'PASS' if rel <= tol else 'FAIL'}, tolerance {tol:g})")
    if args.n <= 20000 or args.numpy_check:
        nx, nv = numpy_reference(omega, zeta, steps)
        rel = max(max_rel(gx, nx), max_rel(gv, nv))
        ok &= rel <= tol
        print(f"check graph vs numpy reference: max rel {rel:.2e} ({'PASS' if rel <= tol else 'FAIL'})")
    if args.save:
        np.save(args.save, np.stack([gx, gv]))
        print(f"saved x, v to {args.save}")
    if args.compare:
        other = np.load(args.compare)
        rel = max(max_rel(gx, other[0]), max_rel(gv, other[1]))
        ok &= rel <= tol
        print(f"check vs {args.compare} (another backend's result): max rel {rel:.2e} "
              f"({'PASS' if rel <= tol else 'FAIL'})")

    cases = []  # (name, fn, result, reps, note): timed interleaved, rotating order each round

    def graph_run(c=card):
        c.run_graph()
        if c.aset.theta is not None:
            c.aset.restore()
    what = (f"reset, one drained launch, compact; K={K}" if card.mode == "drain"
            else f"WHILE + compaction every {K}")
    cases.append((f"eagle graph ({what})", graph_run, None, f"{g_iters} iteration(s)"))
    if args.limit:
        lim = SortedLimit(card)
        cases.append(("single kernel over samples sorted by step count (the limit, same flags)", lim.run,
                      lim.result, ""))
        down = SortedLimit(card, descending=True)
        cases.append(("the same, sorted longest first", down.run, down.result, ""))
    if args.peers:
        cases.append(("single kernel (one thread per sample)", card.run_single,
                      lambda: (card.x.numpy(), card.v.numpy()), ""))
    if args.sweep_k:
        for loop, ks in (("drain", (8, 16, 32, 64)), ("while", (32, 64, 128))):
            for k in ks:
                if k == K and loop == card.mode:
                    continue
                c = Card(args.backend, args.n, k, None, mode=loop, fp=args.mode, module=card.k)
                c.run_graph()
                it = c.iterations()
                same = np.array_equal(c.result()[0], gx)
                ok &= same
                cases.append((f"eagle graph, {loop}, K={k}", lambda c=c: c.run_graph(), None,
                              f"{it} iteration(s), {'bit-identical' if same else 'DIFFERENT'}"))
        if card.mode == "drain":
            sms = card.backend.device_props().sm_count
            for per in (384, 512, 768, 1024):
                c = Card(args.backend, args.n, K, None, mode="drain", fp=args.mode, module=card.k, workers=sms * per)
                c.run_graph()
                same = np.array_equal(c.result()[0], gx)
                ok &= same
                cases.append((f"eagle graph, drain, K={K}, workers={sms}x{per}", lambda c=c: c.run_graph(), None,
                              "bit-identical" if same else "DIFFERENT"))
    rows = {name: [] for name, *_ in cases}
    for fn in (c[1] for c in cases):
        fn()  # warm-up
    for r in range(reps):
        order = cases[r % len(cases):] + cases[:r % len(cases)]
        for name, fn, _, _ in order:
            t = time.perf_counter()
            fn()
            rows[name].append(time.perf_counter() - t)
    table = []
    for name, fn, result, note in cases:
        sec = statistics.median(rows[name])
        if result is not None:
            fn()
            px, pv = result()
            note = f"max rel vs eagle {max(max_rel(px, gx), max_rel(pv, gv)):.1e}"
        table.append((name, sec, min(rows[name]), note))
    # the slow ones, timed alone after the interleaved set
    slow = [("eagle eager (same kernels, host loop)", card.run_eager, None, max(1, reps // 3))] if args.peers else []
    if args.peers:
        if args.backend == "cpu":
            for dynamic in (False, True):
                run, res, threads = peer_openmp(omega, zeta, steps, dynamic)
                slow.append((f"OpenMP single-kernel loop, {threads} threads, "
                             f"schedule({'dynamic, 256' if dynamic else 'static'})", run, res, reps))
            if args.n <= 200000:
                slow.append(("numpy masked loop", lambda: numpy_reference(omega, zeta, steps), None, 1))
        else:
            for name, make, r in (("CuPy masked host loop (ElementwiseKernel)", peer_cupy, reps),
                                  ("JAX jit lax.while_loop", peer_jax, reps),
                                  ("torch eager masked loop", peer_torch, 3)):
                try:
                    run, res = make(omega, zeta, steps)
                    slow.append((name, run, res, r))
                except Exception as e:  # noqa: BLE001 - a missing peer is reported, not fatal
                    table.append((name, float("nan"), float("nan"), f"skipped: {type(e).__name__}: {e}"[:100]))
    for name, fn, result, r in slow:
        times = []
        fn()
        for _ in range(r):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        note = ""
        if result is not None:
            px, pv = result()
            note = f"max rel vs eagle {max(max_rel(px, gx), max_rel(pv, gv)):.1e}"
        table.append((name, statistics.median(times), min(times), note))
    base = table[0][1]
    print(f"\n{reps} interleaved rounds (rotating order); the slow peers timed alone after them")
    print("\n| implementation | median ms | min ms | vs eagle graph | note |\n|---|---|---|---|---|")
    for name, sec, lo, note in table:
        print(f"| {name} | {sec * 1e3:.3f} | {lo * 1e3:.3f} | {sec / base:.2f}x | {note} |")
    print(f"\noscillator card: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
