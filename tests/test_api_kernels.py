"""run(kernel, args, partition) on the cpu backend: cffi callbacks and C kernels compiled here with
``cc``, the partition triple, argument passing and refusals.

Also home of :func:`c_kernels`, the small C kernel library the other cpu API tests share."""
import ctypes
import functools
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import eagle

KERNELS_C = r"""
#include <stdint.h>
typedef void* const* P;
#define X __attribute__((visibility("default")))
#define LANES for (int64_t i = base; i < base + count; ++i)
X void add1(P p, int64_t base, int64_t count, int64_t n) { (void)n; double* x = *(double**)p[0]; LANES x[i] += 1.0; }
X void addv(P p, int64_t base, int64_t count, int64_t n) {
    (void)n; double* x = *(double**)p[0]; double v = *(const double*)p[1]; LANES x[i] += v; }
X void mul2(P p, int64_t base, int64_t count, int64_t n) { (void)n; double* x = *(double**)p[0]; LANES x[i] *= 2.0; }
/* every lane: hits[i] += 1, seen_n[i] = n_samples, seen_base[i] = tile base, seen_count[i] = tile count */
X void mark(P p, int64_t base, int64_t count, int64_t n) {
    int64_t* hits = *(int64_t**)p[0]; int64_t* ns = *(int64_t**)p[1];
    int64_t* bs = *(int64_t**)p[2]; int64_t* cs = *(int64_t**)p[3];
    LANES { __atomic_fetch_add(&hits[i], 1, __ATOMIC_RELAXED); ns[i] = n; bs[i] = base; cs[i] = count; } }
/* one-lane word kernels (run with n = 1) */
X void dec_u32(P p, int64_t base, int64_t count, int64_t n) { (void)base; (void)count; (void)n; uint32_t* c = *(uint32_t**)p[0]; c[0] -= 1u; }
X void inc_u32(P p, int64_t base, int64_t count, int64_t n) { (void)n; (void)base; uint32_t* c = *(uint32_t**)p[0]; __atomic_fetch_add(c, (uint32_t)count, __ATOMIC_RELAXED); }
/* argument passing: out[0..4] = (int64 a, double b, int32 c, uint8 d, 16-byte blob sum) */
X void args(P p, int64_t base, int64_t count, int64_t n) {
    (void)base; (void)count; (void)n; double* out = *(double**)p[0];
    out[0] = (double)*(const int64_t*)p[1]; out[1] = *(const double*)p[2];
    out[2] = (double)*(const int32_t*)p[3]; out[3] = (double)*(const uint8_t*)p[4];
    const uint8_t* blob = (const uint8_t*)p[5]; int s = 0; for (int k = 0; k < 16; ++k) s += blob[k]; out[4] = s;
    out[5] = (double)(((uintptr_t)p[5]) % 16 == 0); }
"""


@functools.lru_cache(maxsize=None)
def c_kernels():
    """The kernel library above, compiled once per process: a ctypes CDLL."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler (cc) to build test kernels")
    d = tempfile.mkdtemp(prefix="eagle_kernels_")
    src, lib = os.path.join(d, "k.c"), os.path.join(d, "libk.so")
    with open(src, "w") as fh:
        fh.write(KERNELS_C)
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-fvisibility=hidden", src, "-o", lib], check=True)
    return ctypes.CDLL(lib)


def kaddr(name):
    """Address of kernel `name` of the compiled library (an int kernel handle)."""
    return ctypes.cast(getattr(c_kernels(), name), ctypes.c_void_p).value


# ------------------------------------------------------------------------------------------------

def test_cffi_callback_kernel_runs_every_lane_once(cpu):
    from eagle._seam_ffi import ffi
    x = np.zeros(1000)

    @ffi.callback("void(void* const*, int64_t, int64_t, int64_t)")
    def k(params, base, count, n):
        p = ffi.cast("double**", params[0])[0]
        for i in range(base, base + count):
            p[i] += 1.0
    s = cpu.stream()
    assert cpu.run(k, [x], 1000, stream=s) is True
    s.synchronize()
    assert (x == 1.0).all()


@pytest.mark.parametrize("kernel_as", ["int", "ctypes"])
def test_c_kernel_compiled_at_test_time_over_lanes(cpu, kernel_as):
    n = 100_003
    x = np.arange(n, dtype=np.float64)
    k = kaddr("mul2") if kernel_as == "int" else c_kernels().mul2
    s = cpu.stream()
    s.run(k, [x], n)
    s.synchronize()
    np.testing.assert_array_equal(x, 2.0 * np.arange(n))


@pytest.mark.parametrize("base,count,n_samples,block", [
    (0, 10, 10, 0), (0, 100_000, 100_000, 0), (5, 20, 40, 0), (1000, 50_000, 60_000, 0),
    (3, 97, 100, 7), (0, 1, 1, 0), (17, 4096, 10_000, 1000)])
def test_partition_triple_reaches_each_tile(cpu, base, count, n_samples, block):
    hits = np.zeros(n_samples, np.int64)
    ns = np.full(n_samples, -1, np.int64)
    bs = np.full(n_samples, -1, np.int64)
    cs = np.full(n_samples, -1, np.int64)
    s = cpu.stream()
    cpu.run(kaddr("mark"), [hits, ns, bs, cs], n_samples, base=base, count=count, block=block, stream=s)
    s.synchronize()
    inside = np.zeros(n_samples, bool)
    inside[base:base + count] = True
    assert (hits[inside] == 1).all() and (hits[~inside] == 0).all()
    assert (ns[inside] == n_samples).all()
    # tiles: every lane lies in [its tile's base, base + count) and tiles cover the launch exactly
    idx = np.arange(n_samples)[inside]
    assert ((bs[inside] <= idx) & (idx < bs[inside] + cs[inside])).all()
    tiles = sorted(set(zip(bs[inside].tolist(), cs[inside].tolist())))
    assert tiles[0][0] == base and sum(c for _, c in tiles) == count
    for (b0, c0), (b1, _) in zip(tiles, tiles[1:]):
        assert b0 + c0 == b1
    if block:
        assert all(c == block for _, c in tiles[:-1])


def test_empty_partition_launches_nothing(cpu):
    x = np.zeros(4)
    assert cpu.run(kaddr("add1"), [x], 4, base=4, count=0) is False
    assert cpu.run(kaddr("add1"), [x], 0) is False
    assert (x == 0).all()


def test_arguments_are_copied_at_enqueue(cpu):
    out = np.zeros(6)
    s = cpu.stream()
    blob = bytes(range(16))
    cpu.run(kaddr("args"), [out, -7, 2.5, np.int32(-3), np.uint8(200), blob], 1, stream=s)
    s.synchronize()
    assert out.tolist() == [-7.0, 2.5, -3.0, 200.0, float(sum(range(16))), 1.0]


def test_module_level_run_takes_values_beside_arrays(cpu):
    """eagle.run resolves the backend from the arrays: the values beside them (a Python float,
    bytes, a numpy scalar) name no device and pass by value, as Backend.run passes them."""
    out = np.zeros(6)
    blob = bytes(range(16))
    eagle.run(kaddr("args"), [out, -7, 2.5, np.int32(-3), np.uint8(200), blob], 1)
    assert out.tolist() == [-7.0, 2.5, -3.0, 200.0, float(sum(range(16))), 1.0]
    x = eagle.asarray(np.zeros(8), backend=cpu)
    s = cpu.stream()
    eagle.run(kaddr("addv"), [x, 1.5], 8, backend=cpu, stream=s)
    eagle.run(kaddr("addv"), [x, np.float64(2.0)], 8, stream=s)
    s.synchronize()
    assert (x.numpy() == 3.5).all()


def test_argument_storage_may_die_after_enqueue(cpu):
    x = np.zeros(50_000)
    s = cpu.stream()
    for v in (1.0, 2.0, 3.0):
        cpu.run(kaddr("addv"), [x, v], x.size, stream=s)  # the float's storage is freed at once
    s.synchronize()
    assert (x == 6.0).all()


def test_kernel_runs_on_default_stream_without_stream(cpu):
    x = np.zeros(8)
    eagle.run(kaddr("add1"), [x], 8, backend=cpu)
    s = cpu.stream()
    z = np.zeros(1)
    s.run(kaddr("add1"), [z], 1)  # a blocking stream orders after the default stream
    s.synchronize()
    assert (x == 1.0).all() and z[0] == 1.0


@pytest.mark.parametrize("kw,exc", [
    (dict(base=-1), ValueError), (dict(count=-1), ValueError), (dict(base=5, count=10), ValueError),
    (dict(n_samples=3), ValueError), (dict(device=1), IndexError)])
def test_bad_partition_is_refused(cpu, kw, exc):
    x = np.zeros(10)
    with pytest.raises(exc) as ei:
        cpu.run(kaddr("add1"), [x], 10, **kw)
    assert isinstance(ei.value, eagle.EagleError)
    assert (x == 0).all()


def test_null_kernel_and_too_many_args_are_refused(cpu):
    x = np.zeros(4)
    with pytest.raises(ValueError, match="function"):
        cpu.run(0, [x], 4)
    with pytest.raises(ValueError, match="at most 64"):
        cpu.run(kaddr("add1"), [x] * 65, 4)
    with pytest.raises(TypeError):
        cpu.run(object(), [x], 4)


def test_run_refuses_a_released_stream(cpu):
    s = cpu.stream()
    raw = s.handle
    s.close()
    with pytest.raises(ValueError, match="not a live stream"):
        cpu.run(kaddr("add1"), [np.zeros(1)], 1, stream=raw)
