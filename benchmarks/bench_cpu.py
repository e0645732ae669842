"""The cpu backend against plain C and numpy, interleaved in one run:

1. run_device over 10^7 lanes of a trivial kernel vs an OpenMP C loop of the same kernel
   (both compiled here with cc -O2; the OpenMP one with -fopenmp, called through ctypes). Goal >= 0.9x.
2. compaction of 10^7 samples (compact_device, enqueue + synchronize) vs numpy.flatnonzero. Goal >= 1.0x.
3. replay of a graph with one trivial node (launch + synchronize, and pipelined launches) vs one
   seam no-op call (stream_synchronize on an idle stream).

    python benchmarks/bench_cpu.py [--n 10000000] [--rounds 15]
"""
import argparse
import ctypes
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import timeit

import numpy as np

import eagle
from _machine import header

KERNEL_C = r"""
#include <stdint.h>
#define X __attribute__((visibility("default")))
X void k(void* const* p, int64_t base, int64_t count, int64_t n) {
    (void)n; double* x = *(double**)p[0];
    for (int64_t i = base; i < base + count; ++i) x[i] = x[i] * 1.0000001 + 1.0; }
X void tiny(void* const* p, int64_t base, int64_t count, int64_t n) {
    (void)p; (void)base; (void)count; (void)n; }
"""
OMP_C = r"""
#include <omp.h>
#include <stdint.h>
#define X __attribute__((visibility("default")))
X void omp_k(double* x, int64_t n) {
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) x[i] = x[i] * 1.0000001 + 1.0; }
X int omp_threads(void) { int t = 1;
    #pragma omp parallel
    {
    #pragma omp single
    t = omp_get_num_threads(); }
    return t; }
"""


def build(src, name, extra):
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    d = tempfile.mkdtemp(prefix="eagle_bench_")
    c, so = os.path.join(d, name + ".c"), os.path.join(d, f"lib{name}.so")
    with open(c, "w") as fh:
        fh.write(src)
    subprocess.run([cc, "-O2", "-shared", "-fPIC", *extra, c, "-o", so], check=True)
    return ctypes.CDLL(so), " ".join([os.path.basename(cc), "-O2", "-shared", "-fPIC", *extra])


def interleave(cases, rounds):
    """Run each case once per round, rotating the order; returns name -> list of seconds."""
    out = {k: [] for k in cases}
    names = list(cases)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in order:
            t0 = time.perf_counter()
            cases[k]()
            out[k].append(time.perf_counter() - t0)
    return out


def table(title, res, ref, unit="ms", scale=1e3):
    print(f"\n{title}")
    print(f"{'case':<52}{'median ' + unit:>12}{'min ' + unit:>10}{'speed':>9}   (speed: median of '{ref}' / median)")
    base = statistics.median(res[ref])
    for k, v in res.items():
        m = statistics.median(v)
        print(f"{k:<52}{m * scale:>12.2f}{min(v) * scale:>10.2f}{base / m:>8.2f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10 ** 7)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    n = args.n
    b = eagle.backend("cpu")
    s = b.stream()
    klib, kflags = build(KERNEL_C, "k", [])
    olib, oflags = build(OMP_C, "omp", ["-fopenmp"])
    olib.omp_k.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    olib.omp_k.restype = None
    k_addr = ctypes.cast(klib.k, ctypes.c_void_p).value
    tiny_addr = ctypes.cast(klib.tiny, ctypes.c_void_p).value

    header("EAGLE_BACKEND_CPU", OMP_NUM_THREADS="unset")
    print(f"kernels: {kflags} (run_device kernel); {oflags} (OpenMP loop, {olib.omp_threads()} threads); "
          f"eagle thread pool: {b.device_props().sm_count} cores")

    # 1. run_device vs OpenMP ------------------------------------------------------------------------
    x_e = np.ones(n)
    x_o = np.ones(n)
    xo_ptr = x_o.ctypes.data

    def eagle_run():
        b.run(k_addr, [x_e], n, stream=s)
        s.synchronize()

    def omp_run():
        olib.omp_k(xo_ptr, n)

    for _ in range(3):
        eagle_run()
        omp_run()
    res = interleave({"eagle run_device (enqueue + synchronize)": eagle_run,
                      "OpenMP C loop (ctypes call)": omp_run}, args.rounds)
    table(f"1. {n:,} lanes of x = x*1.0000001 + 1 ({args.rounds} rounds, interleaved)", res,
          "OpenMP C loop (ctypes call)")
    r1 = statistics.median(res["OpenMP C loop (ctypes call)"]) / statistics.median(
        res["eagle run_device (enqueue + synchronize)"])
    assert np.array_equal(x_e, x_o), "the two loops must compute the same thing"
    gbs = 16 * n / statistics.median(res["OpenMP C loop (ctypes call)"]) / 1e9
    print(f"   ratio eagle/OpenMP speed = {r1:.2f}x (goal >= 0.9x): {'met' if r1 >= 0.9 else 'MISSED'}; "
          f"OpenMP moves {gbs:.1f} GB/s")

    # 2. compaction vs numpy.flatnonzero -------------------------------------------------------------
    rng = np.random.default_rng(0)
    res2 = {}
    ratios = {}
    for density in (0.5, 0.05):
        mask = (rng.random(n) < density).astype(np.uint8)
        idx = np.zeros(n, np.int32)
        count = np.zeros(1, np.uint32)
        scratch = np.zeros(b.compact_scratch_bytes(n), np.uint8)

        def eagle_compact():
            b.compact(mask, idx, count, scratch, stream=s)
            s.synchronize()

        def np_flat():
            np.flatnonzero(mask)

        eagle_compact()
        assert np.array_equal(idx[:count[0]], np.flatnonzero(mask))
        r = interleave({f"eagle compact_device, density {density}": eagle_compact,
                        f"numpy.flatnonzero, density {density}": np_flat}, args.rounds)
        res2.update(r)
        ratios[density] = statistics.median(r[f"numpy.flatnonzero, density {density}"]) / statistics.median(
            r[f"eagle compact_device, density {density}"])
    table(f"2. compaction of {n:,} uint8 mask bytes -> int32 indices ({args.rounds} rounds, interleaved)",
          res2, "numpy.flatnonzero, density 0.5")
    for d, r in ratios.items():
        print(f"   density {d}: eagle/numpy speed = {r:.2f}x (goal >= 1.0x): {'met' if r >= 1.0 else 'MISSED'}")

    # 3. replay of a one-node graph vs one seam no-op call --------------------------------------------
    one = np.zeros(1)
    with b.capture(s) as cap:
        b.run(tiny_addr, [one], 1, stream=s)
    launcher = b.graph_from_captured(cap.captured).launcher()
    launcher.set_stream(s)
    raw_launch, raw_lsync, raw_sync = b._f.launcher_launch, b._f.launcher_synchronize, b._f.stream_synchronize
    lh, sh = launcher._h, s._h
    env = dict(launcher=launcher, raw_launch=raw_launch, raw_lsync=raw_lsync, raw_sync=raw_sync, lh=lh, sh=sh)
    stmts = {
        "seam no-op: raw cffi stream_synchronize (idle)": "raw_sync(sh)",
        "replay: raw cffi launch + synchronize": "raw_launch(lh); raw_lsync(lh)",
        "replay: eagle Launcher.launch() + synchronize()": "launcher.launch(); launcher.synchronize()",
        "replay pipelined: 100 raw launches, then one sync (/100)": "for _ in range(100): raw_launch(lh)\nraw_lsync(lh)",
    }
    per = {"replay pipelined: 100 raw launches, then one sync (/100)": 100}
    calls = 2000
    res3 = {k: [] for k in stmts}
    for r in range(args.rounds):
        for k in list(stmts)[r % 4:] + list(stmts)[:r % 4]:
            number = max(1, calls // per.get(k, 1)) if k in per else calls
            t = timeit.Timer(stmts[k], globals=env).timeit(number)
            res3[k].append(t / (number * per.get(k, 1)))
    print(f"\n3. replay of a one-node graph (a 1-lane C kernel) vs one seam no-op call "
          f"({args.rounds} rounds x {calls} calls, interleaved)")
    noop = statistics.median(res3["seam no-op: raw cffi stream_synchronize (idle)"])
    print(f"{'case':<60}{'median us':>12}{'min us':>10}{'x no-op':>10}")
    for k, v in res3.items():
        m = statistics.median(v)
        print(f"{k:<60}{m * 1e6:>12.2f}{min(v) * 1e6:>10.2f}{m / noop:>9.1f}x")
    launcher.close()
    s.close()


if __name__ == "__main__":
    main()
