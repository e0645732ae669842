"""Device memory and the kernels the checker carries, per kind.

Every kernel takes 8-byte arguments and then the partition triple (base, count, n_samples):
  affine(x: int64*, a, b, delay_us)    x[i] = x[i] * a + b
  accum(dst: int64*, src: int64*, delay_us)   dst[i] = dst[i] * 3 + src[i]
  add_u32(w: uint32*, delta)           w[i] += delta (mod 2^32)
  stamp(out: int64*)                   out[i] = out[i] * 2 + n_samples
for every lane i in [base, base + count). A nonzero delay makes the work slow, so that work
which is not ordered after it is caught reading stale values."""
import ctypes
import threading
import time

import numpy as np

from .._seam_ffi import ffi
from ._registry import CheckFailure, Skip

KERNELS = ("affine", "accum", "add_u32", "stamp")


def for_kind(session):
    kind = session.kind
    if kind == "cpu":
        return HostMemory(), CpuKernels(session)
    if kind == "cuda":
        mem = CudaMemory()
        return mem, CudaKernels(session, mem)
    raise Skip(f"the checker carries no kernel and no device memory for the kind '{kind}' "
               "(it knows cpu and cuda)")


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


# ------------------------------------------------------------------------------------ cpu
class HostMemory:
    """cpu kind: device memory is host memory."""
    host_is_device = True

    def __init__(self):
        self._keep = []

    def array(self, values, dtype=None):
        a = np.array(values, dtype=dtype, copy=True).ravel()
        buf = np.empty(max(a.nbytes, 1) + 64, np.uint8)  # never a NULL address, even for n = 0
        addr = (buf.ctypes.data + 63) & ~63
        self._keep.append(buf)
        arr = DevArray(self, addr, a.dtype, a.size, buf)
        arr.set(a)
        return arr

    def zeros(self, n, dtype):
        return self.array(np.zeros(n, dtype))

    def to_host(self, out, addr):
        ctypes.memmove(out.ctypes.data, addr, out.nbytes)

    def to_device(self, addr, values):
        ctypes.memmove(addr, values.ctypes.data, values.nbytes)

    def close(self):
        self._keep.clear()


class CpuKernels:
    """C callbacks (cffi) with the cpu kind's kernel signature."""

    def __init__(self, session):
        self.s = session
        self.errors = []
        self.calls = 0
        self._lock = threading.Lock()
        self._cbs = {name: ffi.callback("void(void* const*, int64_t, int64_t, int64_t)",
                                        self._wrap(getattr(self, "_" + name))) for name in KERNELS}

    def handle(self, name):
        return int(ffi.cast("uintptr_t", self._cbs[name]))

    def _wrap(self, body):
        def kernel(params, base, count, n_samples):
            try:
                with self._lock:
                    self.calls += 1
                body(params, int(base), int(count), int(n_samples))
            except BaseException as e:  # noqa: BLE001 - reported by the check, never lost
                self.errors.append(f"{type(e).__name__}: {e}")
        return kernel

    @staticmethod
    def _arg(params, i):
        return int(ffi.cast("int64_t*", params[i])[0])

    @staticmethod
    def _view(addr, dtype, base, count):
        dtype = np.dtype(dtype)
        if count <= 0:
            return np.empty(0, dtype)
        buf = ffi.buffer(ffi.cast("char*", addr + base * dtype.itemsize), count * dtype.itemsize)
        return np.frombuffer(buf, dtype)

    def _delay(self, us):
        if us > 0:
            time.sleep(us / 1e6)

    def _affine(self, p, base, count, n):
        x, a, b, d = (self._arg(p, i) for i in range(4))
        self._delay(d)
        v = self._view(x & 0xFFFFFFFFFFFFFFFF, np.int64, base, count)
        v *= a
        v += b

    def _accum(self, p, base, count, n):
        dst, src, d = (self._arg(p, i) for i in range(3))
        self._delay(d)
        v = self._view(dst & 0xFFFFFFFFFFFFFFFF, np.int64, base, count)
        w = self._view(src & 0xFFFFFFFFFFFFFFFF, np.int64, base, count)
        v *= 3
        v += w

    def _add_u32(self, p, base, count, n):
        w, delta = self._arg(p, 0), self._arg(p, 1)
        v = self._view(w & 0xFFFFFFFFFFFFFFFF, np.uint32, base, count)
        v += np.uint32(delta & 0xFFFFFFFF)

    def _stamp(self, p, base, count, n):
        out = self._arg(p, 0)
        v = self._view(out & 0xFFFFFFFFFFFFFFFF, np.int64, base, count)
        v *= 2
        v += n

    def check_errors(self):
        if self.errors:
            raise CheckFailure("the checker's kernel raised: " + "; ".join(self.errors[:3]))

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
        """Enqueue work on raw that fails when it runs."""
        self._reorder(raw, 1000)

    def failing_recorder(self, raw):
        """An object whose record() records work that succeeds, and whose make_fail() makes later
        replays of it fail."""
        kern = self

        class Arm:
            def record(self):
                self.span, self.n = kern._reorder(raw, 0)

            def make_fail(self):
                self.span.set([self.n + 1000])
        return Arm()

    def close(self):
        pass


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


# ------------------------------------------------------------------------------------ cuda
class CudaMemory:
    """cuda kind: device memory through the driver API (libcuda.so.1, ctypes)."""
    host_is_device = False

    def __init__(self):
        try:
            self.cu = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise Skip(f"cannot open libcuda.so.1 for device memory: {e}") from None
        self._check("cuInit", self.cu.cuInit(0))
        dev = ctypes.c_int()
        self._check("cuDeviceGet", self.cu.cuDeviceGet(ctypes.byref(dev), 0))
        ctx = ctypes.c_void_p()
        self._check("cuDevicePrimaryCtxRetain", self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
        self._check("cuCtxSetCurrent", self.cu.cuCtxSetCurrent(ctx))
        self._allocs = []

    def _check(self, what, rc):
        if rc:
            raise CheckFailure(f"the checker's own {what} failed with CUresult {rc}")

    def array(self, values, dtype=None):
        a = np.array(values, dtype=dtype, copy=True).ravel()
        p = ctypes.c_uint64()
        self._check("cuMemAlloc", self.cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(max(a.nbytes, 16))))
        self._allocs.append(p.value)
        arr = DevArray(self, p.value, a.dtype, a.size)
        arr.set(a)
        return arr

    def zeros(self, n, dtype):
        return self.array(np.zeros(n, dtype))

    def to_host(self, out, addr):
        self._check("cuCtxSynchronize", self.cu.cuCtxSynchronize())
        self._check("cuMemcpyDtoH", self.cu.cuMemcpyDtoH_v2(ctypes.c_void_p(out.ctypes.data),
                                                            ctypes.c_uint64(addr), ctypes.c_size_t(out.nbytes)))

    def to_device(self, addr, values):
        self._check("cuCtxSynchronize", self.cu.cuCtxSynchronize())
        self._check("cuMemcpyHtoD", self.cu.cuMemcpyHtoD_v2(ctypes.c_uint64(addr), ctypes.c_void_p(values.ctypes.data),
                                                            ctypes.c_size_t(values.nbytes)))

    def close(self):
        for p in self._allocs:
            self.cu.cuMemFree_v2(ctypes.c_uint64(p))
        self._allocs.clear()


def _ptx_kernel(name, params, body):
    decl = ", ".join(f".param .u64 {p}" for p in params + ["base", "count", "nsamp"])
    loads = "\n".join(f"  ld.param.u64 %a{i}, [{p}];" for i, p in enumerate(params))
    return f"""
.visible .entry eagle_check_{name}({decl})
{{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .b64 %a<8>;
  .reg .b64 %d<16>;
{loads}
  ld.param.u64 %d1, [base];
  ld.param.u64 %d2, [count];
  ld.param.u64 %d3, [nsamp];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %d4, %r1, %r2;
  cvt.u64.u32 %d5, %r3;
  add.u64 %d4, %d4, %d5;
  setp.ge.u64 %p1, %d4, %d2;
  @%p1 bra DONE;
  add.u64 %d6, %d1, %d4;
{body}
DONE:
  ret;
}}
"""


_DELAY = """  mul.lo.u64 %d14, {us}, 1000;
  mov.u64 %d12, %globaltimer;
  add.u64 %d13, %d12, %d14;
SPIN:
  mov.u64 %d12, %globaltimer;
  setp.lt.u64 %p2, %d12, %d13;
  @%p2 bra SPIN;
"""

PTX = ".version 7.0\n.target sm_52\n.address_size 64\n" + "".join([
    _ptx_kernel("affine", ["x", "a", "b", "delay"], _DELAY.format(us="%a3") + """
  shl.b64 %d7, %d6, 3;
  add.u64 %d7, %a0, %d7;
  ld.global.u64 %d8, [%d7];
  mul.lo.u64 %d8, %d8, %a1;
  add.u64 %d8, %d8, %a2;
  st.global.u64 [%d7], %d8;"""),
    _ptx_kernel("accum", ["dst", "src", "delay"], _DELAY.format(us="%a2") + """
  shl.b64 %d7, %d6, 3;
  add.u64 %d8, %a0, %d7;
  add.u64 %d9, %a1, %d7;
  ld.global.u64 %d10, [%d8];
  ld.global.u64 %d11, [%d9];
  mul.lo.u64 %d10, %d10, 3;
  add.u64 %d10, %d10, %d11;
  st.global.u64 [%d8], %d10;"""),
    _ptx_kernel("add_u32", ["w", "delta"], """
  shl.b64 %d7, %d6, 2;
  add.u64 %d7, %a0, %d7;
  ld.global.u32 %r4, [%d7];
  cvt.u32.u64 %r5, %a1;
  add.u32 %r4, %r4, %r5;
  st.global.u32 [%d7], %r4;"""),
    _ptx_kernel("stamp", ["out"], """
  shl.b64 %d7, %d6, 3;
  add.u64 %d7, %a0, %d7;
  ld.global.u64 %d8, [%d7];
  shl.b64 %d8, %d8, 1;
  add.u64 %d8, %d8, %d3;
  st.global.u64 [%d7], %d8;"""),
])


class CudaKernels:
    """PTX text loaded with cuModuleLoadData; the kernel handle is the CUfunction."""

    def __init__(self, session, mem):
        self.s, self.cu = session, mem.cu
        self.errors = []
        mod = ctypes.c_void_p()
        log = ctypes.create_string_buffer(PTX.encode() + b"\0")
        mem._check("cuModuleLoadData (the checker's PTX)", self.cu.cuModuleLoadData(ctypes.byref(mod), log))
        self._mod = mod
        self._fns = {}
        for name in KERNELS:
            f = ctypes.c_void_p()
            mem._check(f"cuModuleGetFunction({name})",
                       self.cu.cuModuleGetFunction(ctypes.byref(f), mod, f"eagle_check_{name}".encode()))
            self._fns[name] = f.value

    def handle(self, name):
        return self._fns[name]

    def check_errors(self):
        pass

    def launch(self, name, stream_raw, args, n, base=0, count=None, n_samples=None, flags=0):
        return launch(self.s, self.handle(name), stream_raw, args, n, base, count, n_samples, flags)

    def enqueue_failing(self, raw):
        raise Skip("the checker carries no failing work for cuda (a trapping kernel would poison the "
                   "CUDA context of every later check in this process)")

    def failing_recorder(self, raw):
        self.enqueue_failing(raw)

    def close(self):
        self.cu.cuModuleUnload(self._mod)
