"""Device memory and the kernels the checker carries, through the seam for every kind.

Every kernel takes 8-byte arguments and then the partition triple (base, count, n_samples):
  affine(x: int64*, a, b, delay_us)    x[i] = x[i] * a + b
  accum(dst: int64*, src: int64*, delay_us)   dst[i] = dst[i] * 3 + src[i]
  add_u32(w: uint32*, delta)           w[i] += delta (mod 2^32)
  stamp(out: int64*)                   out[i] = out[i] * 2 + n_samples
for every lane i in [base, base + count). A nonzero delay makes the work slow, so that work
which is not ordered after it is caught reading stale values."""
import os

import numpy as np

from .._compilers import wheel_library_dirs
from .._seam_ffi import ffi
from ._registry import Skip
from .._seam_meta import CONSTANTS

KERNELS = ("affine", "accum", "add_u32", "stamp")

_INCLUDE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include")

# One source for every kind: the kind's own compiler picks its half through <eagle/kernel.h>'s
# EAGLE_KIND_GPU (the cpu lane-loop ABI, or __global__ functions taking the partition triple) and
# EAGLE_KIND_OPENCL (__kernel functions taking 8-byte values (ulong), then the triple).
# Arithmetic is on uint64_t so wrap-around is defined.
SOURCE = r"""
#include <eagle/kernel.h>
#if EAGLE_KIND_GPU
#if defined(__HIPCC_RTC__) || defined(__HIPCC__)
EAGLE_FN uint64_t check_now_ns(void) { return (uint64_t)wall_clock64() * 10u; }  /* 100 MHz */
#else
EAGLE_FN uint64_t check_now_ns(void) { uint64_t t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
#endif
EAGLE_FN void check_delay(int64_t us) {
    if (us <= 0) return;
    const uint64_t end = check_now_ns() + (uint64_t)us * 1000u;
    while (check_now_ns() < end) {}
}
#define LANE(l) const int64_t l = base + (int64_t)blockIdx.x * (int64_t)blockDim.x + threadIdx.x; \
                if (l >= base + count) return
extern "C" __global__ void eagle_check_affine(uint64_t* x, uint64_t a, uint64_t b, int64_t delay,
                                              int64_t base, int64_t count, int64_t n) {
    LANE(i); check_delay(delay); x[i] = x[i] * a + b; }
extern "C" __global__ void eagle_check_accum(uint64_t* dst, const uint64_t* src, int64_t delay,
                                             int64_t base, int64_t count, int64_t n) {
    LANE(i); check_delay(delay); dst[i] = dst[i] * 3u + src[i]; }
extern "C" __global__ void eagle_check_add_u32(uint32_t* w, uint64_t delta, int64_t base, int64_t count, int64_t n) {
    LANE(i); w[i] += (uint32_t)delta; }
extern "C" __global__ void eagle_check_stamp(uint64_t* out, int64_t base, int64_t count, int64_t n) {
    LANE(i); out[i] = out[i] * 2u + (uint64_t)n; }
#elif EAGLE_KIND_OPENCL
/* OpenCL C has no clock: the delay is a dependent chain of about 1 ns a step, run by the launch's
 * first work-item only. The kernel still lasts the delay (it ends when its last work-item does),
 * and a CPU device (PoCL), which runs the work-items a few at a time, does not take it once per
 * work-item: with every lane delaying, stream.order's 64 lanes took 17.9 s of its 20 s timeout. */
EAGLE_FN void check_delay(int64_t us) {
    if (get_global_id(0) != 0) return;
    volatile uint64_t acc = 1;
    for (int64_t k = 0; k < us * 1000; ++k) acc = acc * 3u + 1u;
}
#define LANE(l) const int64_t l = base + (int64_t)get_global_id(0); if (l >= base + count) return
#define P(T, a) ((T)(a))
__kernel void eagle_check_affine(ulong x, ulong a, ulong b, long delay, long base, long count, long n) {
    LANE(i); check_delay(delay); P(uint64_t*, x)[i] = P(uint64_t*, x)[i] * a + b; }
__kernel void eagle_check_accum(ulong dst, ulong src, long delay, long base, long count, long n) {
    LANE(i); check_delay(delay); P(uint64_t*, dst)[i] = P(uint64_t*, dst)[i] * 3u + P(const uint64_t*, src)[i]; }
__kernel void eagle_check_add_u32(ulong w, ulong delta, long base, long count, long n) {
    LANE(i); P(uint32_t*, w)[i] += (uint32_t)delta; }
__kernel void eagle_check_stamp(ulong out, long base, long count, long n) {
    LANE(i); P(uint64_t*, out)[i] = P(uint64_t*, out)[i] * 2u + (uint64_t)n; }
#else
#include <time.h>
static void check_delay(int64_t us) {
    if (us <= 0) return;
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000L};
    while (nanosleep(&ts, &ts) != 0) {}
}
#define ARG(T, k) (*(T const*)p[k])
#define LANES for (int64_t i = base; i < base + count; ++i)
#define X __attribute__((visibility("default")))
X void eagle_check_affine(void* const* p, int64_t base, int64_t count, int64_t n) {
    (void)n; uint64_t* x = ARG(uint64_t*, 0); const uint64_t a = ARG(uint64_t, 1), b = ARG(uint64_t, 2);
    check_delay(ARG(int64_t, 3)); LANES x[i] = x[i] * a + b; }
X void eagle_check_accum(void* const* p, int64_t base, int64_t count, int64_t n) {
    (void)n; uint64_t* d = ARG(uint64_t*, 0); const uint64_t* s = ARG(const uint64_t*, 1);
    check_delay(ARG(int64_t, 2)); LANES d[i] = d[i] * 3u + s[i]; }
X void eagle_check_add_u32(void* const* p, int64_t base, int64_t count, int64_t n) {
    (void)n; uint32_t* w = ARG(uint32_t*, 0); const uint32_t delta = (uint32_t)ARG(uint64_t, 1);
    LANES w[i] += delta; }
X void eagle_check_stamp(void* const* p, int64_t base, int64_t count, int64_t n) {
    uint64_t* out = ARG(uint64_t*, 0); LANES out[i] = out[i] * 2u + (uint64_t)n; }
#endif
"""

#: What the checker's device work needs besides the groups its checks name.
NEEDS = ("module_from_source", "module_function", "module_release", "mem_alloc", "mem_free", "memcpy",
         "stream")


def for_kind(session):
    """Device memory and the checker's kernels for the backend under check, through the seam (minor 7):
    the same source for every kind, compiled by the kind's own compiler."""
    for entry in NEEDS:
        session.require(entry)
    mem = SeamMemory(session)
    try:
        return mem, SeamKernels(session)
    except BaseException:
        mem.close()
        raise


class DevArray:
    """A device array of the checker: .addr, .get() (a numpy copy), .set(values)."""

    def __init__(self, mem, addr, dtype, n, keep=None):
        self.mem, self.addr, self.dtype, self.n, self._keep = mem, addr, np.dtype(dtype), n, keep

    @property
    def nbytes(self):
        return self.n * self.dtype.itemsize

    def get(self):
        out = np.empty(self.n, self.dtype)
        if self.n:
            self.mem.to_host(out, self.addr)
        return out

    def set(self, values):
        values = np.ascontiguousarray(values, self.dtype)
        assert values.size == self.n
        if self.n:
            self.mem.to_device(self.addr, values)


class SeamMemory:
    """Device memory from mem_alloc; host copies by memcpy on a private stream, then synchronized.
    The caller synchronizes its own work before reading."""

    #: Checks never read device memory directly, whatever the kind: they copy it with memcpy.
    host_is_device = False

    def __init__(self, session):
        self.s = session
        self._allocs = []
        self._stream, self._raw = session.new_stream()

    def array(self, values, dtype=None):
        a = np.array(values, dtype=dtype, copy=True).ravel()
        out = ffi.new("uint64_t*")
        self.s.ok("mem_alloc", -1, max(a.nbytes, 16), 0, out)
        self._allocs.append(int(out[0]))
        arr = DevArray(self, int(out[0]), a.dtype, a.size)
        arr.set(a)
        return arr

    def zeros(self, n, dtype):
        return self.array(np.zeros(n, dtype))

    def to_host(self, out, addr):
        self.s.ok("memcpy", out.ctypes.data, addr, out.nbytes, 2, self._raw)
        self.s.sync(self._stream)

    def to_device(self, addr, values):
        self.s.ok("memcpy", addr, values.ctypes.data, values.nbytes, 1, self._raw)
        self.s.sync(self._stream)

    def close(self):
        if self._stream is not None:
            self.s.raw("stream_synchronize", self._stream)
            self.s.raw("stream_release", self._stream)
            self._stream = None
        for p in self._allocs:
            self.s.raw("mem_free", p)
        self._allocs.clear()


class SeamKernels:
    """The checker's kernels compiled through module_from_source; handles from module_function."""

    def __init__(self, session):
        self.s = session
        keep = [ffi.new("char[]", _INCLUDE.encode()), ffi.new("char[]", b"eagle_check_kernels.c"),
                ffi.new("char[]", ":".join(wheel_library_dirs()).encode())]
        dirs = ffi.new("const char*[]", [keep[0]])
        desc = ffi.new("struct eagle_backend_module_desc*")
        desc.struct_size, desc.device = ffi.sizeof(desc[0]), -1
        desc.name, desc.include_dirs, desc.include_dir_count = keep[1], dirs, 1
        desc.compiler = keep[2]  # pip wheels' runtime compilers (eagle's cuda extra), as eagle.compile passes
        out = ffi.new("eagle_backend_module*")
        logp = ffi.new("char**")
        src = SOURCE.encode()
        st = session.raw("module_from_source", desc, src, len(src), out, logp)
        log = ""
        if logp[0] != ffi.NULL:
            log = ffi.string(logp[0]).decode("utf-8", "replace")
            session.raw("free", logp[0])
        if st == CONSTANTS["EAGLE_BACKEND_UNAVAILABLE"]:  # the kind's compiler is not installed here
            raise Skip(f"the checker's kernels need the kind's compiler: {session.last_error()}")
        if st != 0:
            session.ok("module_from_source", desc, src, len(src), out, ffi.NULL)  # raises, naming the status
        self._mod = out[0]
        self._fns = {}
        for name in KERNELS:
            f = ffi.new("uint64_t*")
            session.ok("module_function", self._mod, f"eagle_check_{name}".encode(), f)
            self._fns[name] = int(f[0])
        self.log = log

    def handle(self, name):
        return self._fns[name]

    def check_errors(self):
        pass

    def launch(self, name, stream_raw, args, n, base=0, count=None, n_samples=None, flags=0):
        return launch(self.s, self.handle(name), stream_raw, args, n, base, count, n_samples, flags)

    # Failing work. A cpu kernel has no way to fail (it returns void), so the checker uses the one
    # piece of cpu work that fails when it runs: a reorder whose *span, read when the work runs,
    # exceeds n. Needs reorder_device.
    def _reorder(self, raw, span_value):
        s = self.s
        s.require("reorder_device")
        n = 8
        mem = s.mem
        keep = [mem.zeros(n, np.int32), mem.zeros(n, np.uint8), mem.array(np.arange(n), np.int32),
                mem.array(np.arange(n), np.int32), mem.array([span_value], np.uint32)]
        plane, mask, perm, inv, span = keep
        planes = ffi.new("struct eagle_backend_reorder_plane[1]")
        planes[0].data, planes[0].elem_size, planes[0].width = plane.addr, 4, 1
        d = ffi.new("struct eagle_backend_reorder_desc*")
        d.struct_size, d.device, d.plane_count, d.planes = ffi.sizeof(d[0]), -1, 1, planes
        d.mask, d.perm, d.inv, d.span, d.n, d.stream = mask.addr, perm.addr, inv.addr, span.addr, n, raw
        s.ok("reorder_device", d)
        scratch = mem.zeros(max(int(d.scratch_bytes), 1), np.uint8)
        d.scratch, d.scratch_bytes = scratch.addr, max(int(d.scratch_bytes), 1)
        s.ok("reorder_device", d)
        self._keep = getattr(self, "_keep", []) + keep + [scratch, planes, d]
        return span, n

    def enqueue_failing(self, raw):
        """Enqueue work on raw that fails when it runs (a reorder whose *span exceeds n); returns
        ``ran_clamped()``: True when the backend ran that work with *span clamped to n instead of
        failing it, which the header allows (a GPU kernel cannot fail it); the work then ran and
        wrote *span back (<= n). A backend that neither fails nor runs it leaves *span alone."""
        span, n = self._reorder(raw, 1000)
        return lambda: int(span.get()[0]) <= n

    def failing_recorder(self, raw):
        """An object whose record() records work that succeeds, and whose make_fail() makes later
        replays of it fail."""
        kern = self

        class Arm:
            def record(self):
                self.span, self.n = kern._reorder(raw, 0)

            def make_fail(self):
                self.span.set([self.n + 1000])

            def ran_clamped(self):
                return int(self.span.get()[0]) <= self.n
        return Arm()

    def close(self):
        if self._mod is not None:
            self.s.raw("module_release", self._mod)
            self._mod = None


def launch(s, function, stream_raw, args, n, base=0, count=None, n_samples=None, flags=0):
    """eagle_backend_run_device over [base, base + count) of a run of n_samples (defaults: n)."""
    count = n if count is None else count
    n_samples = n if n_samples is None else n_samples
    storage = ffi.new("int64_t[]", [int(a) if int(a) < 2**63 else int(a) - 2**64 for a in args] or [0])
    params = ffi.new("uint64_t[]", [int(ffi.cast("uintptr_t", storage + i)) for i in range(len(args))] or [0])
    sizes = ffi.new("uint64_t[]", [8] * max(len(args), 1))
    desc = ffi.new("struct eagle_backend_launch_desc*")
    desc.struct_size = ffi.sizeof(desc[0])
    desc.flags = flags
    desc.device = -1
    desc.function = function
    desc.params = params
    desc.param_sizes = sizes
    desc.nparams = len(args)
    desc.base, desc.count, desc.n_samples = base, count, n_samples
    desc.stream = stream_raw
    launched = ffi.new("int32_t*", -1)
    s.ok("run_device", desc, launched)
    return int(launched[0])
