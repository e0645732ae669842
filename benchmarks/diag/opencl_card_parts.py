"""Where the oscillator card's time goes on the opencl kind, against cuda in the same run (issue 31).

Times each piece of the card alone (wall clock around launch + synchronize, median of --reps after
a warm-up): the reset launch, the single-kernel reference (osc_single: one sample per lane, no
drain), the drained launch after a reset at several lane counts (workers) and work-group sizes
(block; 0 lets the OpenCL runtime choose, which is what eagle passes), the compaction alone, and
the whole card graph with and without its compaction step; then a memory-bound kernel (axpy over
10^7 doubles: the fraction of the H200's 4.8 TB/s each kind reaches) and osc_single with the
RK4 helper forced inline. $EAGLE_OPENCL_DUMP_DIR keeps the programs the opencl compiler built.

    EAGLE_BACKEND_OPENCL=.oclbuild/libeagle_opencl.so EAGLE_OPENCL_PLATFORM=NVIDIA \
        python benchmarks/diag/opencl_card_parts.py --kinds cuda,opencl --n 1000000
"""
import argparse
import math
import os
import statistics
import sys
import time

import numpy as np

import eagle

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "oscillator"))
import oscillator as card  # noqa: E402


def timed(fn, sync, reps):
    fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def parts(kind, n, reps, K=32):
    b = eagle.backend(kind)
    mod = b.compile(os.path.join(card.HERE, "oscillator.c"), exact=True)
    omega, zeta, steps = card.workload(n)
    x, v = b.empty(n), b.empty(n)
    done, mask = b.empty(n, "int32"), b.empty(n, "uint8")
    om, ze, target = b.asarray(omega), b.asarray(zeta), b.asarray(steps)
    queue = b.zeros(2, "uint32")
    s = b.stream()
    rounds = math.ceil(int(steps.max()) / K) + 1
    props = b.device_props(0)
    default_workers = max(1, int(props.sm_count)) * 512 if props.warp_size > 1 else n
    print(f"== {kind}: {b}  sm_count {props.sm_count} warp {props.warp_size}  default workers {default_workers}")

    def reset(block=0):
        s.run(mod.osc_reset, [x, v, done, mask], n, block=block)

    def drain(workers, block=0):
        reset()
        s.run(mod.osc_steps_drain, [x, v, om, ze, done, target, mask, K, 0, 0, mask, queue, rounds, workers],
              workers, n_samples=n, block=block)

    t_reset = timed(reset, s.synchronize, reps)
    print(f"  reset                         {t_reset:8.3f} ms")
    for block in (0, 128, 256):
        t = timed(lambda: s.run(mod.osc_single, [x, v, om, ze, target], n, block=block), s.synchronize, reps)
        print(f"  osc_single block {block:4d}          {t:8.3f} ms")
    ref = None
    for workers in (default_workers // 4, default_workers, 4 * default_workers, n):
        workers = min(workers, n)
        for block in (0, 64, 128, 256, 1024):
            t = timed(lambda: drain(workers, block), s.synchronize, reps)
            xs = x.numpy()
            same = "" if ref is None else ("same bits" if np.array_equal(xs, ref) else "OTHER BITS")
            ref = xs if ref is None else ref
            print(f"  drain workers {workers:8d} block {block:4d} {t - t_reset:8.3f} ms (+ reset)  {same}")
    cnt, idx = b.zeros(1, "uint32"), b.empty(n, "int32")
    scratch = b.zeros(max(eagle.filtering.compact_scratch_bytes(b, n), 8), "uint8")
    t = timed(lambda: eagle.compact(mask, idx, cnt, scratch, stream=s), s.synchronize, reps)
    print(f"  compact of {n} mask bytes     {t:8.3f} ms")
    t = timed(lambda: eagle.compact(mask, idx, cnt, scratch, stream=s, drop=True), s.synchronize, reps)
    print(f"  compact, drop=True            {t:8.3f} ms")
    a1 = eagle.ActiveSet(mask, backend=b, stream=s)
    t = timed(lambda: a1.compact(s), s.synchronize, reps)
    print(f"  ActiveSet.compact(stream)     {t:8.3f} ms")
    for name, prog in (("reset, aset", lambda a: [steps_[0], a]), ("aset", lambda a: [a])):
        a2 = eagle.ActiveSet(mask, backend=b, stream=s)
        steps_ = [lambda st: st.run(mod.osc_reset, [x, v, done, mask], n)]
        g = eagle.Graph.build(prog(a2), planes=[mask, x, v, om, ze, done, target], stream=s, toggle=False)
        t = timed(g.launch, g.synchronize, reps)
        print(f"  graph [{name}]{' ' * (18 - len(name))}{t:8.3f} ms")
    for with_aset in (True, False):
        aset = eagle.ActiveSet(mask, backend=b, stream=s)
        steps_ = [lambda st: st.run(mod.osc_reset, [x, v, done, mask], n),
                  lambda st: aset.drain(st, mod.osc_steps_drain, [x, v, om, ze, done, target, mask, K], rounds,
                                        compacted=False)]
        g = eagle.Graph.build(steps_ + ([aset] if with_aset else []), planes=[mask, x, v, om, ze, done, target],
                              stream=s, toggle=False)
        t = timed(g.launch, g.synchronize, reps)
        print(f"  card graph {'with' if with_aset else 'without'} compaction  {t:8.3f} ms  "
              f"(decides on device: {g.decides_on_device})")
    big = 10_000_000
    ax = b.asarray(np.ones(big))
    ay = b.asarray(np.ones(big))
    axpy = b.compile(AXPY, name="axpy.c")
    t = timed(lambda: s.run(axpy.axpy, [ay, ax, 0.5], big), s.synchronize, reps)
    print(f"  axpy over 1e7 doubles         {t:8.3f} ms  ({3 * 8 * big / (t * 1e-3) / 1e12:.2f} TB/s, "
          f"{3 * 8 * big / (t * 1e-3) / 4.8e12:.0%} of 4.8 TB/s)")
    with open(os.path.join(card.HERE, "oscillator.c")) as f:
        text = f.read()
    inl = b.compile(text.replace("EAGLE_FN void rk4", "static inline __attribute__((always_inline)) void rk4"),
                    name="oscillator_inline.c", include_dirs=[card.HERE], exact=True)
    t = timed(lambda: s.run(inl.osc_single, [x, v, om, ze, target], n), s.synchronize, reps)
    print(f"  osc_single, rk4 always_inline {t:8.3f} ms")
    for opts in OPTIONS.get(kind, ()):
        try:
            m2 = b.compile(os.path.join(card.HERE, "oscillator.c"), exact=True, options=list(opts))
        except eagle.EagleError as e:
            print(f"  options {' '.join(opts)}: {str(e)[:200]}")
            continue
        if "-cl-nv-verbose" in opts:
            print("  build log with -cl-nv-verbose:\n    " + "\n    ".join(
                l for l in (getattr(m2, "log", "") or "").splitlines() if "osc_single" in l or "egister" in l
                or "spill" in l or "Function properties" in l)[:4000])
        t = timed(lambda: s.run(m2.osc_single, [x, v, om, ze, target], n), s.synchronize, reps)
        t2 = timed(lambda: (reset(), s.run(m2.osc_steps_drain, [x, v, om, ze, done, target, mask, K, 0, 0, mask, queue,
                                                                rounds, default_workers], default_workers, n_samples=n)),
                   s.synchronize, reps)
        print(f"  options {' '.join(opts):30s} osc_single {t:8.3f} ms, drain {t2 - t_reset:8.3f} ms (+ reset)")
    return ref


# NVIDIA's OpenCL compiler options: -cl-nv-verbose puts ptxas's register and spill counts in the
# build log; -cl-nv-maxrregcount raises the register limit a kernel of unknown work-group size gets.
OPTIONS = {"opencl": [("-cl-nv-verbose",), ("-cl-nv-maxrregcount", "128"), ("-cl-nv-maxrregcount", "255")]}

AXPY = """
#include <eagle/kernel.h>
EAGLE_KERNEL(axpy, (double*, y), (const double*, x), (double, a)) { (void)n; y[i] = a * x[i] + y[i]; }
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kinds", default="cuda,opencl")
    ap.add_argument("--n", type=int, default=1000000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    refs = {}
    for kind in args.kinds.split(","):
        try:
            refs[kind] = parts(kind, args.n, args.reps)
        except eagle.EagleError as e:
            print(f"== {kind}: {e}")
    if len(refs) > 1:
        a, *rest = refs.values()
        print("drain bits equal across kinds:", all(np.array_equal(a, r) for r in rest))


if __name__ == "__main__":
    main()
