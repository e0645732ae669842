"""One seam call three ways, interleaved in one run: eagle's wrapper (Stream.synchronize on an
idle cpu stream, through the compiled hot path eagle._hotcall when built), the raw cffi call
(backend._f.stream_synchronize(handle)) and the same C function through ctypes (ctypes.CDLL on the
same .so). Also eagle's wrapper forced onto its cffi fallback (eagle._hotcall.py_bound_call), as a
build without eagle._hotcall runs it. Goals: wrapper <= 1.5x raw cffi; raw cffi <= ctypes.

    python benchmarks/bench_seam_call.py [--calls 20000] [--rounds 41]
"""
import argparse
import ctypes
import statistics
import timeit

import eagle
from eagle.benchknobs import ffi, hot_path_compiled

from _machine import cffi_fallback, header


def per_call_ns(stmt, env, calls):
    """Nanoseconds per execution of the statement `stmt` (timeit: no extra Python frame around it)."""
    return timeit.Timer(stmt, globals=env).timeit(calls) * 1e9 / calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=41)
    args = ap.parse_args()

    b = eagle.backend("cpu")
    s = b.stream()
    s.synchronize()
    compiled = hot_path_compiled(s.synchronize)
    with cffi_fallback():
        s_fallback = b.stream()  # the same wrapper on its cffi fallback (py_bound_call)
    s_fallback.synchronize()
    handle = s._h
    raw_fn = b._f.stream_synchronize
    lib = ctypes.CDLL(b.path)
    ct_fn = lib.eagle_backend_stream_synchronize
    ct_fn.argtypes = [ctypes.c_void_p]
    ct_fn.restype = ctypes.c_int32
    ct_handle = int(ffi.cast("uintptr_t", handle))
    assert raw_fn(handle) == 0 and ct_fn(ct_handle) == 0

    env = {"s": s, "sf": s_fallback, "raw_fn": raw_fn, "handle": handle, "ct_fn": ct_fn, "ct_handle": ct_handle}
    cases = {
        "eagle Stream.synchronize()": "s.synchronize()",
        "eagle, cffi fallback (no _hotcall)": "sf.synchronize()",
        "raw cffi _f.stream_synchronize(h)": "raw_fn(handle)",
        "ctypes stream_synchronize(h)": "ct_fn(ct_handle)",
        "(empty statement: loop cost)": "pass",
    }
    samples = {k: [] for k in cases}
    for r in range(args.rounds):
        names = list(cases)
        names = names[r % len(names):] + names[:r % len(names)]
        for k in names:
            samples[k].append(per_call_ns(cases[k], env, args.calls))
    med = {k: statistics.median(v) for k, v in samples.items()}
    header("EAGLE_BACKEND_CPU")
    print(f"eagle._hotcall: {'built, used by Stream.synchronize()' if compiled else 'NOT built: the wrapper row is the cffi fallback'}")
    print(f"rounds:  {args.rounds} x {args.calls} calls per case, interleaved (rotating order); "
          "median ns per call, timeit loop (no extra frame)\n")
    print(f"{'call':<38}{'ns/call':>10}{'vs raw cffi':>14}{'min ns':>10}")
    raw = med["raw cffi _f.stream_synchronize(h)"]
    for k in cases:
        print(f"{k:<38}{med[k]:>10.0f}{med[k] / raw:>13.2f}x{min(samples[k]):>10.0f}")
    w = med["eagle Stream.synchronize()"] / raw
    c = raw / med["ctypes stream_synchronize(h)"]
    print(f"\nwrapper / raw cffi = {w:.2f}x (goal <= 1.5x): {'met' if w <= 1.5 else 'MISSED'}")
    print(f"raw cffi / ctypes  = {c:.2f}x (goal <= 1.0x): {'met' if c <= 1.0 else 'MISSED'}")
    s.close()
    s_fallback.close()

if __name__ == "__main__":
    main()
