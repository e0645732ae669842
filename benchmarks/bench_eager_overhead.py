"""Issues 17 and 33: eager ``eagle.compact()``, ``eagle.copy()`` and ``eagle.run()`` (and their
``Backend`` twins) against their raw seam calls, on any backend; issue 28: eager ``eagle.run()`` of a
declared kernel (``--what run``), whose arguments are checked against the kernel's declared C types.

    python benchmarks/bench_eager_overhead.py [--backend cpu|cuda] [--n 1048576] [--calls 200] [--rounds 21]
        [--no-foreign] [--only-compact]
    python benchmarks/bench_eager_overhead.py --what run [--n 1024]

Each case is a pair doing the same work on the same arrays, on the same stream (eagle's own stream
of this thread, the one an eager call with no ``stream=`` runs on), timed on the host (wall):

- eager: ``eagle.compact(mask, index_map, count, scratch)`` (or ``eagle.copy(dst, src)``,
  ``eagle.run(kernel, [x], n)``, ``Backend.compact/copy/run``): the resolver, the argument
  checks, the desc, the seam call, the wait;
- raw: a desc prepared once with the same arrays' addresses, passed to the backend's
  ``compact_device`` (``memcpy``, ``run_device``) through cffi, then ``stream_synchronize`` of
  that stream through cffi: the work, its launch and the host wake-up, and nothing of eagle's
  Python.

The copy and run cases use eagle's own arrays (copy: n bytes device to device; run: a kernel that
adds 1 to n doubles).

Array sets: eagle's own ``DeviceArray`` (``eagle.empty``); numpy arrays on cpu; CuPy arrays on
cuda (when cupy imports) and torch tensors on cuda (when torch imports and sees a GPU). The mask
keeps half the samples. Rounds interleave the cases (the order rotates, raw and eager alternate
which goes first); the figures are medians over rounds of the per-call mean of ``calls`` calls,
and the best round of each (less disturbed by other load on a shared machine).
``eager - raw`` is eagle's Python cost per call; the ratio is issue 17's figure (goal <= 1.3x at
2^20 on the H200).

``--what run``: ``eagle.run(axpy, [y, x, 0.5, 3], n)`` of ``EAGLE_KERNEL(axpy, (double*, y),
(const double*, x), (double, a), (int64_t, k))`` against a launch desc prepared once, passed to
``run_device``, then ``stream_synchronize``, on the same stream and arrays (eagle's own arrays,
and numpy's on a host kind)."""
import argparse
import os
import statistics
import sys
import time

import numpy as np

import eagle
from eagle.benchknobs import CONSTANTS, ffi, own_stream

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _machine import header, interleave_pairs  # noqa: E402


def _check(status, what, b):
    if status:
        raise RuntimeError(f"{what} failed with status {status}: {b.last_error()}")


def eagle_set(b, mask_host, scratch_bytes):
    """mask, index_map, count, scratch as eagle DeviceArrays (scratch zero-filled)."""
    n = mask_host.size
    return (b.asarray(mask_host), b.empty(n, "int32"), b.zeros(1, "uint32"),
            b.zeros(max(scratch_bytes, 1), "uint8"))


def numpy_set(mask_host, scratch_bytes):
    return (mask_host.copy(), np.zeros(mask_host.size, np.int32), np.zeros(1, np.uint32),
            np.zeros(max(scratch_bytes, 1), np.uint8))


def cupy_set(cp, mask_host, scratch_bytes):
    out = (cp.asarray(mask_host), cp.zeros(mask_host.size, cp.int32), cp.zeros(1, cp.uint32),
           cp.zeros(max(scratch_bytes, 1), cp.uint8))
    cp.cuda.Device().synchronize()  # made on CuPy's stream; eagle's stream does not wait for it
    return out


def torch_set(torch, mask_host, scratch_bytes):
    out = (torch.as_tensor(mask_host, device="cuda"), torch.zeros(mask_host.size, dtype=torch.int32, device="cuda"),
           torch.zeros(1, dtype=torch.int32, device="cuda"),
           torch.zeros(max(scratch_bytes, 1), dtype=torch.uint8, device="cuda"))
    torch.cuda.synchronize()
    return out


def address(a):
    """The data address of any of the array kinds above (public attributes only)."""
    if isinstance(a, np.ndarray):
        return a.ctypes.data
    if isinstance(a, eagle.DeviceArray):
        return a.address
    if hasattr(a, "data_ptr"):  # torch
        return a.data_ptr()
    return a.data.ptr  # CuPy


def nbytes(a):
    return a.element_size() * a.numel() if hasattr(a, "element_size") else a.nbytes


KERNEL = "#include <eagle/kernel.h>\nEAGLE_KERNEL(bump, (double*, x)) { (void)n; x[i] += 1.0; }\n"


def timed(fn, calls):
    """A callable that runs ``fn()`` ``calls`` times and returns the mean wall time per call (us)."""
    def loop():
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - t0) / calls * 1e6
    return loop


def copy_and_run_pairs(b, n, calls, raw_s, h):
    """(eager, raw) pairs of eagle.copy, Backend.copy, eagle.run and Backend.run on eagle's own
    arrays, each checked once against numpy."""
    f = b._f
    sync = f.stream_synchronize
    pairs = {}
    src = b.asarray(np.arange(n, dtype=np.uint8))
    d2d = CONSTANTS["EAGLE_BACKEND_MEMCPY_D2D"]
    for name, copy in (("eagle.copy", eagle.copy), ("Backend.copy", b.copy)):
        dst = b.zeros(n, "uint8")
        copy(dst, src)
        if not np.array_equal(dst.numpy(), np.arange(n, dtype=np.uint8)):
            raise RuntimeError(f"{name} copied something else")
        pairs[name] = (timed(lambda copy=copy, dst=dst: copy(dst, src), calls),
                       timed(lambda dst=dst: (f.memcpy(dst.address, src.address, n, d2d, raw_s), sync(h)), calls))
    x = b.zeros(n, "float64")
    kernel = eagle.compile(KERNEL, backend=b).bump
    storage = ffi.new("uint64_t[2]", [x.address, 0])
    params = ffi.new("uint64_t[1]", [int(ffi.cast("uintptr_t", storage))])
    sizes = ffi.new("uint64_t[1]", [8])
    desc = ffi.new("struct eagle_backend_launch_desc*", {
        "struct_size": ffi.sizeof("struct eagle_backend_launch_desc"), "device": -1, "function": int(kernel),
        "params": params, "param_sizes": sizes, "nparams": 1, "base": 0, "count": n, "n_samples": n,
        "stream": raw_s})
    launched = ffi.new("int32_t*")
    for name, run in (("eagle.run", eagle.run), ("Backend.run", b.run)):
        eager = lambda run=run: run(kernel, [x], n)  # noqa: E731
        before = x.numpy()
        eager()
        _check(f.run_device(desc, launched), "run_device", b)
        _check(sync(h), "stream_synchronize", b)
        if not np.array_equal(x.numpy(), before + 2.0):
            raise RuntimeError(f"{name} and the raw launch did not each add 1")
        keep = (storage, params, sizes, x, kernel)  # the desc points into these: alive while it is used
        pairs[name] = (timed(eager, calls), timed(lambda keep=keep: (f.run_device(desc, launched), sync(h)), calls))
    return pairs


def host_copy(a):
    """A numpy copy of any of the array kinds above."""
    if isinstance(a, np.ndarray):
        return a.copy()
    if isinstance(a, eagle.DeviceArray):
        return a.numpy()
    if hasattr(a, "get"):  # CuPy
        return a.get()
    return a.cpu().numpy()  # torch


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="cpu", help="kind (cpu, cuda, ...) or library path")
    ap.add_argument("--n", type=int, default=1 << 20, help="samples (default 2^20)")
    ap.add_argument("--calls", type=int, default=200, help="calls per case per round")
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--no-foreign", action="store_true", help="only eagle's own arrays")
    ap.add_argument("--only-compact", action="store_true", help="only the eagle.compact cases (issue 17's table)")
    ap.add_argument("--what", choices=("compact", "run"), default="compact", help="the eager call to time")
    args = ap.parse_args()
    if args.what == "run":
        return main_run(args)
    n, calls = args.n, args.calls

    b = eagle.backend(args.backend)
    s = own_stream(b)  # the stream eager calls of this thread run on
    h, raw_s = s._h, s.handle
    f = b._f
    sync, compact_device = f.stream_synchronize, f.compact_device
    scratch_bytes = b.compact_scratch_bytes(n, stream=s)
    rng = np.random.default_rng(1)
    mask_host = (rng.random(n) < 0.5).astype(np.uint8)
    expect = np.flatnonzero(mask_host)

    sets = {"eagle arrays": eagle_set(b, mask_host, scratch_bytes)}
    skipped = []
    if not args.no_foreign:
        host = 1 in b.device_types  # kDLCPU: numpy arrays are this backend's memory
        if host:
            sets["numpy arrays"] = numpy_set(mask_host, scratch_bytes)
        if 2 in b.device_types:  # kDLCUDA
            try:
                import cupy as cp
                sets["CuPy arrays"] = cupy_set(cp, mask_host, scratch_bytes)
            except Exception as e:  # noqa: BLE001 - an optional peer, named when missing
                skipped.append(f"CuPy arrays ({type(e).__name__}: {e})")
            try:
                import torch
                if not torch.cuda.is_available():
                    raise RuntimeError("torch sees no GPU")
                sets["torch tensors"] = torch_set(torch, mask_host, scratch_bytes)
            except Exception as e:  # noqa: BLE001
                skipped.append(f"torch tensors ({type(e).__name__}: {e})")

    compact = eagle.compact
    pairs = {}
    for name, (mask, idx, count, scratch) in sets.items():
        desc = ffi.new("struct eagle_backend_compact_desc*")
        desc.struct_size, desc.device, desc.n, desc.stream = ffi.sizeof(desc[0]), -1, n, raw_s
        desc.mask, desc.index_map, desc.count, desc.scratch = (address(a) for a in (mask, idx, count, scratch))
        desc.scratch_bytes = nbytes(scratch)

        # both ways give flatnonzero(mask)
        for way in ("eager", "raw"):
            if way == "eager":
                compact(mask, idx, count, scratch)
            else:
                _check(compact_device(desc), "compact_device", b)
                _check(sync(h), "stream_synchronize", b)
            got = int(host_copy(count)[0])
            if got != expect.size or not np.array_equal(host_copy(idx)[:got], expect):
                raise RuntimeError(f"{name}: {way} compaction differs from numpy.flatnonzero")

        def eager_loop(mask=mask, idx=idx, count=count, scratch=scratch):
            t0 = time.perf_counter()
            for _ in range(calls):
                compact(mask, idx, count, scratch)
            return (time.perf_counter() - t0) / calls * 1e6

        def raw_loop(desc=desc):
            t0 = time.perf_counter()
            for _ in range(calls):
                compact_device(desc)
                sync(h)
            return (time.perf_counter() - t0) / calls * 1e6

        pairs[f"eagle.compact, {name}"] = (eager_loop, raw_loop)
    if not args.only_compact:
        mask, idx, count, scratch = sets["eagle arrays"]
        pairs["Backend.compact, eagle arrays"] = (timed(lambda: b.compact(mask, idx, count, scratch), calls),
                                                  pairs["eagle.compact, eagle arrays"][1])
        pairs.update(copy_and_run_pairs(b, n, calls, raw_s, h))

    names = list(pairs)
    for k in names:  # warm up
        pairs[k][0]()
        pairs[k][1]()
    samples = interleave_pairs(pairs, args.rounds)

    header()
    print(f"backend: {b.kind} '{b.path}'; n = {n} (2^{n.bit_length() - 1}), {calls} calls per case, "
          f"{args.rounds} interleaved rounds; median over rounds of the per-call wall time")
    for why in skipped:
        print(f"skipped: {why}")
    print()
    print(f"{'eager call':<44}{'eager us':>10}{'raw+sync us':>13}{'eager-raw us':>14}{'ratio':>8}")
    for how, pick in (("median", statistics.median), ("best round", min)):
        for k in names:
            e, raw = (pick(v) for v in samples[k])
            print(f"{k + ', ' + how:<44}{e:>10.2f}{raw:>13.2f}{e - raw:>14.2f}{e / raw:>7.2f}x")


_AXPY = r"""
#include <eagle/kernel.h>
EAGLE_KERNEL(axpy, (double*, y), (const double*, x), (double, a), (int64_t, k)) {
    y[i] = a * x[i] + (double)k;
}
"""


def main_run(args):
    """Eager eagle.run of a declared kernel against its raw run_device + stream_synchronize."""
    n, calls = args.n, args.calls
    b = eagle.backend(args.backend)
    s = own_stream(b)
    h, raw_s = s._h, s.handle
    f = b._f
    sync, run_device = f.stream_synchronize, f.run_device
    axpy = eagle.compile(_AXPY, backend=b, kernels=["axpy"]).axpy
    x_host = np.arange(n, dtype=np.float64)
    want = 0.5 * x_host + 3.0
    sets = {"eagle arrays": (b.zeros(n, "float64"), b.asarray(x_host))}
    if 1 in b.device_types and not args.no_foreign:
        sets["numpy arrays"] = (np.zeros(n), x_host.copy())
    run = eagle.run
    pairs = {}
    keep = []
    for name, (y, x) in sets.items():
        storage = ffi.new("uint64_t[8]")
        storage[0], storage[2] = _arrays.address_of(y).ptr, _arrays.address_of(x).ptr
        ffi.cast("double*", storage + 4)[0] = 0.5
        storage[6] = 3
        params = ffi.new("uint64_t[]", [int(ffi.cast("uintptr_t", storage + 2 * k)) for k in range(4)])
        sizes = ffi.new("uint64_t[]", [8, 8, 8, 8])
        desc = ffi.new("struct eagle_backend_launch_desc*", {
            "struct_size": ffi.sizeof("struct eagle_backend_launch_desc"), "device": -1,
            "function": axpy.handle, "params": params, "param_sizes": sizes, "nparams": 4, "base": 0,
            "count": n, "n_samples": n, "stream": raw_s})
        launched = ffi.new("int32_t*")
        keep.append((storage, params, sizes, desc, launched))
        for way in ("eager", "raw"):
            if way == "eager":
                run(axpy, [y, x, 0.5, 3], n)
            else:
                _check(run_device(desc, launched), "run_device", b)
                _check(sync(h), "stream_synchronize", b)
            if not np.array_equal(host_copy(y), want):
                raise RuntimeError(f"{name}: {way} axpy differs from numpy")

        def eager_loop(y=y, x=x):
            t0 = time.perf_counter()
            for _ in range(calls):
                run(axpy, [y, x, 0.5, 3], n)
            return (time.perf_counter() - t0) / calls * 1e6

        def raw_loop(desc=desc, launched=launched):
            t0 = time.perf_counter()
            for _ in range(calls):
                run_device(desc, launched)
                sync(h)
            return (time.perf_counter() - t0) / calls * 1e6

        pairs[name] = (eager_loop, raw_loop)
    names = list(pairs)
    for k in names:
        pairs[k][0]()
        pairs[k][1]()
    samples = interleave_pairs(pairs, args.rounds)
    header()
    print(f"backend: {b.kind} '{b.path}'; eagle.run of a declared 4-argument kernel, n = {n}, {calls} calls "
          f"per case, {args.rounds} interleaved rounds; median over rounds of the per-call wall time")
    print()
    print(f"{'eager eagle.run() of':<26}{'eager us':>10}{'raw+sync us':>13}{'eager-raw us':>14}{'ratio':>8}")
    for how, pick in (("median", statistics.median), ("best round", min)):
        for k in names:
            e, raw = (pick(v) for v in samples[k])
            print(f"{k + ', ' + how:<26}{e:>10.2f}{raw:>13.2f}{e - raw:>14.2f}{e / raw:>7.2f}x")


if __name__ == "__main__":
    main()
