"""What an OpenCL platform offers that eagle's opencl kind depends on (issue 31), read through
ctypes from libOpenCL.so.1 with no eagle involved: versions, OpenCL C versions and features (the
generic address space), SVM capabilities, command-buffer extensions; then whether a program in the
form <eagle/kernel.h> generates (a variadic macro, unqualified pointers in a helper) builds under
each -cl-std the device lists, with the build log.

    python benchmarks/diag/opencl_probe.py            # every platform
"""
import ctypes
import ctypes.util
import sys

cl = ctypes.CDLL(ctypes.util.find_library("OpenCL") or "libOpenCL.so.1")
u32, u64, sz = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t

PLATFORM_NAME, PLATFORM_VERSION = 0x0902, 0x0901
DEVICE_NAME, DEVICE_VERSION, DEVICE_C_VERSION, DEVICE_EXTENSIONS = 0x102B, 0x102F, 0x103D, 0x1030
DEVICE_SVM, DEVICE_C_ALL_VERSIONS, DEVICE_C_FEATURES, DEVICE_GENERIC_AS = 0x1053, 0x1066, 0x106F, 0x1069
PROGRAM_BUILD_LOG = 0x1183


def info(fn, obj, key):
    n = sz()
    if fn(obj, u32(key), sz(0), None, ctypes.byref(n)) != 0:
        return None
    buf = ctypes.create_string_buffer(n.value)
    fn(obj, u32(key), n, buf, None)
    return buf.raw


def text(fn, obj, key):
    raw = info(fn, obj, key)
    return None if raw is None else raw.rstrip(b"\0").decode(errors="replace")


def name_versions(raw):
    """cl_name_version[]: a uint32 version then a 64-byte name."""
    out = []
    for k in range(0, len(raw or b""), 68):
        v = int.from_bytes(raw[k:k + 4], "little")
        out.append((raw[k + 4:k + 68].split(b"\0")[0].decode(), f"{v >> 22}.{(v >> 12) & 0x3FF}"))
    return out


PROGRAM = rb"""
#define EAGLE_MAP(f, ...) f(__VA_ARGS__)
#define EAGLE_ADD(a, b) ((a) + (b))
static inline void helper(double* y, const double* x, long i) { y[i] = EAGLE_MAP(EAGLE_ADD, x[i], 1.0); }
__kernel void k(ulong ybits, ulong xbits) {
    double* y = (double*)ybits; const double* x = (const double*)xbits;
    helper(y, x, (long)get_global_id(0));
}
"""


def try_build(ctx, dev, options):
    err = ctypes.c_int32()
    src = ctypes.c_char_p(PROGRAM)
    cl.clCreateProgramWithSource.restype = ctypes.c_void_p
    prog = cl.clCreateProgramWithSource(ctypes.c_void_p(ctx), u32(1), ctypes.byref(src), None, ctypes.byref(err))
    st = cl.clBuildProgram(ctypes.c_void_p(prog), u32(1), ctypes.byref(ctypes.c_void_p(dev)), options, None, None)
    n = sz()
    cl.clGetProgramBuildInfo(ctypes.c_void_p(prog), ctypes.c_void_p(dev), u32(PROGRAM_BUILD_LOG), sz(0), None, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    cl.clGetProgramBuildInfo(ctypes.c_void_p(prog), ctypes.c_void_p(dev), u32(PROGRAM_BUILD_LOG), n, log, None)
    return st, log.value.decode(errors="replace").strip()


def main():
    n = u32()
    cl.clGetPlatformIDs(u32(0), None, ctypes.byref(n))
    plats = (ctypes.c_void_p * n.value)()
    cl.clGetPlatformIDs(n, plats, None)
    for p in plats:
        print("platform:", text(cl.clGetPlatformInfo, ctypes.c_void_p(p), PLATFORM_NAME), "|",
              text(cl.clGetPlatformInfo, ctypes.c_void_p(p), PLATFORM_VERSION))
        nd = u32()
        if cl.clGetDeviceIDs(ctypes.c_void_p(p), u64(0xFFFFFFFF), u32(0), None, ctypes.byref(nd)) != 0:
            continue
        devs = (ctypes.c_void_p * nd.value)()
        cl.clGetDeviceIDs(ctypes.c_void_p(p), u64(0xFFFFFFFF), nd, devs, None)
        for d in devs:
            dv = ctypes.c_void_p(d)
            print("  device:", text(cl.clGetDeviceInfo, dv, DEVICE_NAME), "|", text(cl.clGetDeviceInfo, dv, DEVICE_VERSION),
                  "|", text(cl.clGetDeviceInfo, dv, DEVICE_C_VERSION))
            svm = info(cl.clGetDeviceInfo, dv, DEVICE_SVM)
            print("  SVM capabilities:", None if svm is None else hex(int.from_bytes(svm[:8], "little")),
                  "(1 coarse buffer, 2 fine buffer, 4 fine system, 8 atomics)")
            gas = info(cl.clGetDeviceInfo, dv, DEVICE_GENERIC_AS)
            print("  generic address space support:", None if gas is None else int.from_bytes(gas[:4], "little"))
            versions = name_versions(info(cl.clGetDeviceInfo, dv, DEVICE_C_ALL_VERSIONS))
            print("  OpenCL C versions:", versions)
            print("  OpenCL C features:", [f for f, _ in name_versions(info(cl.clGetDeviceInfo, dv, DEVICE_C_FEATURES))])
            ext = (text(cl.clGetDeviceInfo, dv, DEVICE_EXTENSIONS) or "").split()
            print("  extensions:", " ".join(e for e in ext if "command_buffer" in e or "fp64" in e or "il_program" in e
                                            or "spirv" in e.lower() or "generic" in e))
            err = ctypes.c_int32()
            cl.clCreateContext.restype = ctypes.c_void_p
            ctx = cl.clCreateContext(None, u32(1), ctypes.byref(dv), None, None, ctypes.byref(err))
            stds = sorted({v for _, v in versions}) or ["1.2"]
            for std in [None] + [f"-cl-std=CL{v}" for v in stds]:
                st, log = try_build(ctx, d, None if std is None else std.encode())
                print(f"  build {std or '(no -cl-std)'}: status {st}" + (f"\n    " + log.replace("\n", "\n    ")[:1500] if log else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
