"""Is coarse-grained SVM what makes NVIDIA's OpenCL slow for eagle (issue 31)? No eagle involved:
ctypes over libOpenCL.so.1, one axpy kernel (y = a x + y over n doubles) timed launch by launch
(wall clock around clEnqueueNDRangeKernel + clFinish) on the same device with its arrays as

  buffer     cl_mem buffers (clCreateBuffer), passed with clSetKernelArg;
  svm        coarse-grained SVM (clSVMAlloc), passed with clSetKernelArgSVMPointer (eagle's way
             minus the integer arguments);
  svm+info   the same plus CL_KERNEL_EXEC_INFO_SVM_PTRS naming both (as eagle names every live
             allocation);
  svm+big    svm+info with 2 GB more SVM allocated and named (eagle names every allocation);
  svm+host   svm+info with a clEnqueueSVMMap/Unmap of x between launches (host access).

    python benchmarks/diag/opencl_svm_probe.py [--platform NVIDIA] [--n 10000000] [--reps 10]
"""
import argparse
import ctypes
import ctypes.util
import statistics
import time

cl = ctypes.CDLL(ctypes.util.find_library("OpenCL") or "libOpenCL.so.1")
vp, u32, u64, sz, i32 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int32
for name, res in (("clCreateContext", vp), ("clCreateCommandQueueWithProperties", vp), ("clCreateBuffer", vp),
                  ("clSVMAlloc", vp), ("clCreateProgramWithSource", vp), ("clCreateKernel", vp)):
    getattr(cl, name).restype = res
PLATFORM_NAME, DEVICE_TYPE_ALL, MEM_READ_WRITE = 0x0902, 0xFFFFFFFF, 1
EXEC_INFO_SVM_PTRS, MAP_READ, MAP_WRITE = 0x11B6, 1, 2

SRC = b"""
__kernel void axpy(__global double* y, __global const double* x, double a) {
    const size_t i = get_global_id(0);
    y[i] = a * x[i] + y[i];
}
"""


def check(err, what):
    if err != 0:
        raise RuntimeError(f"{what}: OpenCL error {err}")


def platform_device(want):
    n = u32()
    cl.clGetPlatformIDs(u32(0), None, ctypes.byref(n))
    plats = (vp * n.value)()
    cl.clGetPlatformIDs(n, plats, None)
    for p in plats:
        buf = ctypes.create_string_buffer(256)
        cl.clGetPlatformInfo(vp(p), u32(PLATFORM_NAME), sz(255), buf, None)
        if want.lower() in buf.value.decode().lower():
            dev = vp()
            check(cl.clGetDeviceIDs(vp(p), u64(DEVICE_TYPE_ALL), u32(1), ctypes.byref(dev), None), "clGetDeviceIDs")
            return buf.value.decode(), dev
    raise SystemExit(f"no OpenCL platform named like {want!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--platform", default="NVIDIA")
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    name, dev = platform_device(args.platform)
    err = i32()
    ctx = cl.clCreateContext(None, u32(1), ctypes.byref(dev), None, None, ctypes.byref(err))
    check(err.value, "clCreateContext")
    q = cl.clCreateCommandQueueWithProperties(vp(ctx), dev, None, ctypes.byref(err))
    check(err.value, "clCreateCommandQueueWithProperties")
    src = ctypes.c_char_p(SRC)
    prog = cl.clCreateProgramWithSource(vp(ctx), u32(1), ctypes.byref(src), None, ctypes.byref(err))
    check(cl.clBuildProgram(vp(prog), u32(1), ctypes.byref(dev), b"-cl-std=CL3.0", None, None), "clBuildProgram")
    k = cl.clCreateKernel(vp(prog), b"axpy", ctypes.byref(err))
    check(err.value, "clCreateKernel")
    nbytes = 8 * args.n
    a = ctypes.c_double(0.5)
    gsize = sz(args.n)
    print(f"platform {name!r}, n = {args.n} doubles, axpy moves {3 * nbytes / 1e6:.0f} MB a launch")

    def fill(ptr_or_mem, svm):
        # every element 1.0 through the queue (a fill of the pattern), so the host never touches it
        one = ctypes.c_double(1.0)
        if svm:
            check(cl.clEnqueueSVMMemFill(vp(q), vp(ptr_or_mem), ctypes.byref(one), sz(8), sz(nbytes), u32(0), None,
                                         None), "clEnqueueSVMMemFill")
        else:
            check(cl.clEnqueueFillBuffer(vp(q), vp(ptr_or_mem), ctypes.byref(one), sz(8), sz(0), sz(nbytes), u32(0),
                                         None, None), "clEnqueueFillBuffer")
        cl.clFinish(vp(q))

    def timed(between=None):
        times = []
        for r in range(args.reps + 1):
            if between:
                between()
            t0 = time.perf_counter()
            check(cl.clEnqueueNDRangeKernel(vp(q), vp(k), u32(1), None, ctypes.byref(gsize), None, u32(0), None, None),
                  "clEnqueueNDRangeKernel")
            cl.clFinish(vp(q))
            times.append(time.perf_counter() - t0)
        first, rest = times[0], times[1:]
        med = statistics.median(rest)
        return (f"first {1e3 * first:8.3f} ms, then median {1e3 * med:8.3f} ms (min {1e3 * min(rest):.3f}) "
                f"= {3 * nbytes / med / 1e12:.2f} TB/s")

    # buffers
    bx = cl.clCreateBuffer(vp(ctx), u64(MEM_READ_WRITE), sz(nbytes), None, ctypes.byref(err))
    by = cl.clCreateBuffer(vp(ctx), u64(MEM_READ_WRITE), sz(nbytes), None, ctypes.byref(err))
    fill(bx, False), fill(by, False)
    check(cl.clSetKernelArg(vp(k), u32(0), sz(8), ctypes.byref(vp(by))), "arg0")
    check(cl.clSetKernelArg(vp(k), u32(1), sz(8), ctypes.byref(vp(bx))), "arg1")
    check(cl.clSetKernelArg(vp(k), u32(2), sz(8), ctypes.byref(a)), "arg2")
    print("  buffer     ", timed())
    # SVM
    sx = cl.clSVMAlloc(vp(ctx), u64(MEM_READ_WRITE), sz(nbytes), u32(0))
    sy = cl.clSVMAlloc(vp(ctx), u64(MEM_READ_WRITE), sz(nbytes), u32(0))
    if not sx or not sy:
        raise SystemExit("clSVMAlloc failed")
    fill(sx, True), fill(sy, True)
    check(cl.clSetKernelArgSVMPointer(vp(k), u32(0), vp(sy)), "svm arg0")
    check(cl.clSetKernelArgSVMPointer(vp(k), u32(1), vp(sx)), "svm arg1")
    print("  svm        ", timed())
    ptrs = (vp * 2)(sx, sy)
    check(cl.clSetKernelExecInfo(vp(k), u32(EXEC_INFO_SVM_PTRS), sz(ctypes.sizeof(ptrs)), ptrs), "exec info")
    print("  svm+info   ", timed())
    extra = [cl.clSVMAlloc(vp(ctx), u64(MEM_READ_WRITE), sz(256 << 20), u32(0)) for _ in range(8)]
    for e in extra:
        fill_n = 256 << 20
        one = ctypes.c_double(0.0)
        cl.clEnqueueSVMMemFill(vp(q), vp(e), ctypes.byref(one), sz(8), sz(fill_n), u32(0), None, None)
    cl.clFinish(vp(q))
    many = (vp * 10)(sx, sy, *extra)
    check(cl.clSetKernelExecInfo(vp(k), u32(EXEC_INFO_SVM_PTRS), sz(ctypes.sizeof(many)), many), "exec info big")
    print("  svm+big    ", timed())
    check(cl.clSetKernelExecInfo(vp(k), u32(EXEC_INFO_SVM_PTRS), sz(ctypes.sizeof(ptrs)), ptrs), "exec info")

    def host_touch():
        check(cl.clEnqueueSVMMap(vp(q), u32(1), u64(MAP_READ | MAP_WRITE), vp(sx), sz(nbytes), u32(0), None, None),
              "clEnqueueSVMMap")
        ctypes.c_double.from_address(sx).value  # noqa: B018 -- one host read of the mapped region
        check(cl.clEnqueueSVMUnmap(vp(q), vp(sx), u32(0), None, None), "clEnqueueSVMUnmap")
        cl.clFinish(vp(q))
    print("  svm+host   ", timed(host_touch))


if __name__ == "__main__":
    main()
