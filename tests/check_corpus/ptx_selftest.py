"""Self-test of the PTX kernels eagle.check carries for the cuda kind (needs a GPU and libcuda.so.1):
    python tests/check_corpus/ptx_selftest.py
Runs them through the driver API alone, so a wrong kernel is told apart from a wrong backend."""
import sys, types, ctypes
sys.modules['eagle._seam_ffi'] = types.SimpleNamespace(ffi=None)
import numpy as np
from eagle.check import _device as D
cu = ctypes.CDLL("libcuda.so.1")
def ck(r, w):
    assert r == 0, (w, r)
ck(cu.cuInit(0), "init"); dev = ctypes.c_int(); ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "dev")
ctx = ctypes.c_void_p(); ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "ctx"); ck(cu.cuCtxSetCurrent(ctx), "cur")
mod = ctypes.c_void_p(); ck(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.create_string_buffer(D.PTX.encode())), "load")
def fn(name):
    f = ctypes.c_void_p(); ck(cu.cuModuleGetFunction(ctypes.byref(f), mod, ("eagle_check_" + name).encode()), name); return f
n = 1000
def dev_arr(a):
    p = ctypes.c_uint64(); ck(cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(a.nbytes)), "alloc")
    ck(cu.cuMemcpyHtoD_v2(p, a.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(a.nbytes)), "h2d"); return p
def get(p, a):
    out = np.empty_like(a); ck(cu.cuMemcpyDtoH_v2(out.ctypes.data_as(ctypes.c_void_p), p, ctypes.c_size_t(a.nbytes)), "d2h"); return out
def launch(name, args, base, count, ns):
    vals = [ctypes.c_uint64(int(v) & (2**64 - 1)) for v in list(args) + [base, count, ns]]
    arr = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
    ck(cu.cuLaunchKernel(fn(name), (count + 127) // 128, 1, 1, 128, 1, 1, 0, None, arr, None), "launch " + name)
    ck(cu.cuCtxSynchronize(), "sync " + name)
x = np.arange(n, dtype=np.int64); px = dev_arr(x)
launch("affine", [px.value, 3, -2, 1000], 100, 500, n)
w = x.copy(); w[100:600] = w[100:600] * 3 - 2; assert (get(px, x) == w).all(), "affine"
y = np.ones(n, dtype=np.int64); py = dev_arr(y)
launch("accum", [py.value, px.value, 0], 0, n, n); assert (get(py, y) == 3 + w).all(), "accum"
u = np.full(4, 5, dtype=np.uint32); pu = dev_arr(u)
launch("add_u32", [pu.value, 2**32 - 1], 0, 1, 1); assert get(pu, u).tolist() == [4, 5, 5, 5], "add_u32"
z = np.zeros(n, dtype=np.int64); pz = dev_arr(z)
launch("stamp", [pz.value], 10, 20, n); zz = get(pz, z); assert zz[10:30].tolist() == [n] * 20 and zz.sum() == 20 * n, "stamp"
print("PTX kernels OK")
