"""compact_device and reorder_device of a kind, timed per call (enqueue + synchronize, the best of
--reps after a warm-up), each result checked against numpy. For the opencl kind the strategy is
$EAGLE_OPENCL_COMPACT (tiles: work-groups and a scan, a GPU's default; chunks: contiguous chunks
walked serially, a CPU device's default), so running it twice compares them:

    EAGLE_OPENCL_COMPACT=tiles  python benchmarks/bench_opencl_compact.py --kind opencl
    EAGLE_OPENCL_COMPACT=chunks python benchmarks/bench_opencl_compact.py --kind opencl
    python benchmarks/bench_opencl_compact.py --kind cuda      # the same work on the cuda kind
"""
import argparse
import json
import os
import time

import numpy as np

import eagle


def best(reps, call, stream):
    times = []
    for _ in range(reps + 1):
        t0 = time.perf_counter()
        call()
        stream.synchronize()
        times.append(time.perf_counter() - t0)
    return min(times[1:]) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kind", default="opencl")
    ap.add_argument("--sizes", default="100000,1000000,10000000")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    b = eagle.backend(a.kind)
    s = b.stream(non_blocking=True)
    out = {"kind": a.kind, "strategy": os.environ.get("EAGLE_OPENCL_COMPACT", "default"), "sizes": {}}
    for n in (int(x) for x in a.sizes.split(",")):
        rng = np.random.default_rng(n)
        mask_h = (rng.random(n) < 0.5).astype(np.uint8)
        mask, idx, count = b.asarray(mask_h), b.zeros(n, "int32"), b.zeros(1, "uint32")
        scratch = b.zeros(max(b.compact_scratch_bytes(n, stream=s), 1), "uint8")
        compact_ms = best(a.reps, lambda: b.compact(mask, idx, count, scratch, n=n, stream=s), s)
        kept = np.flatnonzero(mask_h)
        compact_ok = int(count.numpy()[0]) == kept.size and np.array_equal(idx.numpy()[:kept.size], kept)
        x_h = rng.random(n)
        x = b.asarray(x_h)
        perm, inv = b.asarray(np.arange(n, dtype=np.int32)), b.asarray(np.arange(n, dtype=np.int32))
        span = b.asarray(np.array([n], np.uint32))
        rscratch = b.zeros(max(b.reorder_scratch_bytes(n, planes=[x], stream=s), 1), "uint8")
        ident = np.arange(n, dtype=np.int32)

        def reorder():
            s.copy(span, np.array([n], np.uint32))  # each call partitions all n again (mask unchanged)
            b.reorder([x], mask, perm, inv, span, rscratch, n=n, stream=s)
        reorder_ms = best(a.reps, reorder, s)
        # checked on one more call from fresh planes (the timed calls moved x and perm each time)
        s.copy(x, x_h)
        s.copy(perm, ident)
        reorder()
        s.synchronize()
        order = np.concatenate([kept, np.flatnonzero(mask_h == 0)])
        reorder_ok = np.array_equal(x.numpy(), x_h[order]) and np.array_equal(perm.numpy(), order)
        out["sizes"][n] = {"compact_ms": compact_ms, "compact_equals_numpy": bool(compact_ok),
                           "reorder_ms": reorder_ms, "reorder_equals_numpy": bool(reorder_ok)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
