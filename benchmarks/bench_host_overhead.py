"""The host-side cost of eagle's eager calls (issue 17), on the cpu backend: each public call
against the raw cffi seam call(s) that do the same work, interleaved in one run.

    python benchmarks/bench_host_overhead.py [--calls 2000] [--rounds 15] [--n 1024]

Cases, each a pair (eagle, raw) doing the same work on the same arrays:
- eager ``eagle.compact(mask, index_map, count, scratch)`` (no stream: eagle's own stream, then it
  waits) against a prepared desc passed to ``_f.compact_device`` plus ``_f.stream_synchronize``;
- the same with ``stream=s`` then ``s.synchronize()`` (the path that keeps the arrays alive);
- eager ``eagle.copy(dst, src)`` of ``8 n`` bytes against ``_f.memcpy`` plus ``_f.stream_synchronize``;
- eager ``eagle.run(kernel, [x], n)`` against a prepared launch desc to ``_f.run_device`` plus the sync;
- ``Launcher.launch()`` (and ``launch(n)``) against ``_f.launcher_launch(h)`` in a Python loop: blocks
  of 100 launches enqueued behind a gate (a host function that waits), so only the enqueue is timed.

The work is tiny (``n`` samples on a cpu stream: a worker-thread round trip per call), so the
difference eagle - raw is eagle's Python cost per call; the ratio depends on how cheap the work
is. Figures are medians of per-call times over interleaved rounds (rotating order)."""
import argparse
import ctypes
import functools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import eagle
from eagle.benchknobs import ffi, hot_path_compiled

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _machine import header, interleave_pairs  # noqa: E402

KERNEL_C = r"""
#include <stdint.h>
__attribute__((visibility("default"))) void add1(void* const* p, int64_t base, int64_t count, int64_t n) {
    (void)n; double* x = *(double**)p[0]; for (int64_t i = base; i < base + count; ++i) x[i] += 1.0; }
"""


def c_kernel():
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    d = tempfile.mkdtemp(prefix="eagle_bench_")
    src, lib = os.path.join(d, "k.c"), os.path.join(d, "libk.so")
    with open(src, "w") as fh:
        fh.write(KERNEL_C)
    subprocess.run([cc, "-O2", "-shared", "-fPIC", src, "-o", lib], check=True)
    so = ctypes.CDLL(lib)
    return so, ctypes.cast(so.add1, ctypes.c_void_p).value


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--n", type=int, default=1024)
    args = ap.parse_args()
    n, calls = args.n, args.calls

    b = eagle.backend("cpu")
    f = b._f
    s = b.stream()
    h = s._h
    raw_s = s.handle
    rng = np.random.default_rng(1)
    mask = (rng.random(n) < 0.5).astype(np.uint8)
    idx = np.zeros(n, np.int32)
    count = np.zeros(1, np.uint32)
    scratch = np.zeros(b.compact_scratch_bytes(n), np.uint8)
    eagle.compact(mask, idx, count, scratch)
    assert int(count[0]) == int(mask.sum()) and (idx[:count[0]] == np.flatnonzero(mask)).all()

    desc = ffi.new("struct eagle_backend_compact_desc*")
    desc.struct_size, desc.device, desc.n, desc.stream = ffi.sizeof(desc[0]), -1, n, raw_s
    desc.mask, desc.index_map, desc.count = mask.ctypes.data, idx.ctypes.data, count.ctypes.data
    desc.scratch, desc.scratch_bytes = scratch.ctypes.data, scratch.nbytes

    src = np.arange(n, dtype=np.float64)
    dst = np.zeros(n)
    h2h = eagle.memory.H2H

    _so, kern = c_kernel()
    x = np.zeros(n)
    xp = ffi.new("uint64_t*", x.ctypes.data)
    params = ffi.new("uint64_t[]", [int(ffi.cast("uintptr_t", xp))])
    sizes = ffi.new("uint64_t[]", [8])
    ldesc = ffi.new("struct eagle_backend_launch_desc*")
    ldesc.struct_size, ldesc.device, ldesc.function = ffi.sizeof(ldesc[0]), -1, kern
    ldesc.params, ldesc.param_sizes, ldesc.nparams = params, sizes, 1
    ldesc.base, ldesc.count, ldesc.n_samples, ldesc.stream = 0, n, n, raw_s
    launched = ffi.new("int32_t*")

    with b.capture(s) as cap:
        b.run(kern, [x], n, stream=s)
    launcher = b.graph_from_captured(cap.captured).launcher()
    launcher.set_stream(s)
    lh = launcher._h
    block = 100  # launches per synchronize

    def loop(body):
        t0 = time.perf_counter()
        for _ in range(calls):
            body()
        return (time.perf_counter() - t0) / calls * 1e9

    def blocks(body, per_call=True):
        """ns per launch of blocks of `block` launches enqueued behind a gate (a host function that
        waits: the stream runs nothing meanwhile, so only the enqueue is timed), then run."""
        total = 0.0
        for _ in range(calls // block):
            gate = threading.Event()
            b.host_func(gate.wait, stream=s)
            t0 = time.perf_counter()
            if per_call:
                for _ in range(block):
                    body()
            else:
                body()
            total += time.perf_counter() - t0
            gate.set()
            s.synchronize()
        return total / (calls // block * block) * 1e9

    sync = f.stream_synchronize
    compact_device, memcpy, run_device, launch_fn = f.compact_device, f.memcpy, f.run_device, f.launcher_launch
    ecompact, ecopy, erun = eagle.compact, eagle.copy, eagle.run
    ssync = s.synchronize
    lau = launcher.launch
    nbytes = src.nbytes

    def raw_compact():
        compact_device(desc)
        sync(h)

    def raw_copy():
        memcpy(dst.ctypes.data, src.ctypes.data, nbytes, h2h, raw_s)
        sync(h)

    def raw_run():
        run_device(ldesc, launched)
        sync(h)

    def stream_compact():
        ecompact(mask, idx, count, scratch, stream=s)
        ssync()

    def launch_n():
        lau(block)

    pairs = {
        "eager eagle.compact()": (lambda: loop(lambda: ecompact(mask, idx, count, scratch)), lambda: loop(raw_compact)),
        "eagle.compact(stream=s); s.synchronize()": (lambda: loop(stream_compact), lambda: loop(raw_compact)),
        "eager eagle.copy()": (lambda: loop(lambda: ecopy(dst, src)), lambda: loop(raw_copy)),
        "eager eagle.run()": (lambda: loop(lambda: erun(kern, [x], n)), lambda: loop(raw_run)),
        "Launcher.launch(), enqueue": (lambda: blocks(lau), lambda: blocks(functools.partial(launch_fn, lh))),
    }
    names = list(pairs)
    samples = interleave_pairs(pairs, args.rounds)
    # Launcher.launch(n): one call per block, against the same raw loop
    ln = [blocks(launch_n, per_call=False) for _ in range(args.rounds)]
    assert float(x[0]) > 0 and np.array_equal(dst, src)

    header()
    print(f"eagle._hotcall: {'built' if hot_path_compiled(launcher.launch) else 'NOT built (cffi fallback)'}; "
          f"n = {n}, {calls} calls per case, {args.rounds} interleaved rounds; median ns per call\n")
    print(f"{'case':<44}{'eagle ns':>10}{'raw ns':>10}{'eagle-raw':>11}{'ratio':>8}")
    for k in names:
        e, raw = (statistics.median(v) for v in samples[k])
        print(f"{k:<44}{e:>10.0f}{raw:>10.0f}{e - raw:>11.0f}{e / raw:>7.2f}x")
    raw = statistics.median(samples["Launcher.launch(), enqueue"][1])
    e = statistics.median(ln)
    print(f"{'Launcher.launch(100), enqueue per replay':<44}{e:>10.0f}{raw:>10.0f}{e - raw:>11.0f}{e / raw:>7.2f}x")
    launcher.close()
    s.close()


if __name__ == "__main__":
    main()
