"""NVRTC with no GPU, for tests that compile eagle sources for cuda where no device is present.

``nvrtc_compile(source, name, options)`` runs libnvrtc (the nvidia-cuda-nvrtc wheel, eagle's cuda
extra, or the toolkit's) on ``source`` with eagle's include directory and returns (result, log,
cubin bytes); it skips the calling test, naming why, when NVRTC is not installed. The option
lists are the ones the cuda backend passes for each floating-point mode
(backends/cuda/native.cpp, rtc_options); a test pins them against that file."""
import ctypes
import glob
import os

import pytest

import eagle

ARCH = ["--gpu-architecture=sm_90", "-std=c++17"]
# exact=True: no contraction, IEEE division and square root, no flush-to-zero.
BIT_EXACT = ARCH + ["--fmad=false", "--prec-div=true", "--prec-sqrt=true", "--ftz=false"]
# the default mode (EAGLE_BACKEND_MODULE_CONTRACT): fused multiply-adds, the rest as exact.
CONTRACT = ARCH + ["--fmad=true", "--prec-div=true", "--prec-sqrt=true", "--ftz=false"]
# fast_math=True.
FAST_MATH = ARCH + ["--use_fast_math"]
MODES = {"exact": BIT_EXACT, "default": CONTRACT, "fast": FAST_MATH}


def _nvrtc():
    """libnvrtc from the wheel (eagle's cuda extra) or the toolkit, or None."""
    from eagle._compilers import wheel_library_dirs
    dirs = wheel_library_dirs() + ["/usr/local/cuda/lib64"]
    for d in dirs:
        for f in sorted(glob.glob(os.path.join(d, "libnvrtc.so*"))):
            if "builtins" in f:
                continue
            try:
                return ctypes.CDLL(f)
            except OSError:
                continue
    for name in ("libnvrtc.so.13", "libnvrtc.so.12"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    return None


def nvrtc_compile(source, name, options, output="CUBIN"):
    """(result, log, cubin bytes) of NVRTC on source, with eagle's include dir (``output="PTX"``:
    the PTX text's bytes instead of the cubin)."""
    lib = _nvrtc()
    if lib is None:
        pytest.skip("NVRTC is not installed (pip install nvidia-cuda-nvrtc, or the CUDA toolkit)")
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source, name.encode(), 0, None, None) == 0
    opts = [o.encode() for o in options + [f"-I{eagle.include_dir()}"]]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    res = lib.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, buf)
    cubin = b""
    if res == 0:
        getattr(lib, f"nvrtcGet{output}Size")(prog, ctypes.byref(size))
        out = ctypes.create_string_buffer(size.value)
        getattr(lib, f"nvrtcGet{output}")(prog, out)
        cubin = out.raw
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return res, buf.value.decode(errors="replace"), cubin
