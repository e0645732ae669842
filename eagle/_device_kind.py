"""Facts about kinds: where an array lives picks its backend (DLPack device type -> eagle kind),
which environment variables narrow a kind's devices, which shared libraries a kind's backend may
need at run time.

These tables are the only place in eagle (core, eagle.check, eagle.distributed) that names kinds.
The codes are DLPack's ``DLDeviceType``. Only this module names device types; the rest of eagle
works with kinds."""

import operator

from ._validate import INT32_MAX
from .errors import EagleError, EagleTypeError, EagleValueError

#: DLPack's codes that eagle's readers name by themselves: host memory, and CUDA device memory
#: (what ``__cuda_array_interface__`` describes when an array says nothing else).
KDL_CPU = 1
KDL_CUDA = 2
#: The device of host memory: a numpy array's, or of arrays that name none.
HOST_DEVICE = (KDL_CPU, 0)

KIND_OF_DEVICE_TYPE = {
    1: "cpu",    # kDLCPU
    2: "cuda",   # kDLCUDA
    3: "cuda",   # kDLCUDAHost (page-locked host memory, served by the cuda kind)
    13: "cuda",  # kDLCUDAManaged
    4: "opencl",  # kDLOpenCL (SVM addresses on the OpenCL device; no other framework consumes them today)
    8: "metal",  # kDLMetal
    10: "hip",   # kDLROCM
    11: "hip",   # kDLROCMHost
}

#: Kinds whose memory is a GPU's; ``backend="gpu"`` means the one of these installed.
GPU_KINDS = frozenset({"cuda", "hip", "metal"})

#: Device types whose device memory is offered as ``__cuda_array_interface__`` too.
CUDA_ARRAY_INTERFACE_DEVICE_TYPES = frozenset({2, 13})

#: Device types whose memory the host can read directly.
HOST_DEVICE_TYPES = frozenset({1, 3, 11})

#: Device types of backends whose streams speak the CUDA stream protocol (``__cuda_stream__``).
CUDA_STREAM_PROTOCOL_TYPES = frozenset({2, 3, 13, 10, 11})

#: The environment variables through which a kind's runtime narrows the devices a process sees.
VISIBILITY_ENV = {
    "cuda": ("CUDA_VISIBLE_DEVICES",),
    "hip": ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"),
}

#: The shared libraries (glob patterns of DT_NEEDED entries) a backend of a kind may need beyond
#: the C and C++ runtimes: its device's driver, never a runtime that could be linked statically.
NEEDED_OF_KIND = {
    "cpu": (),
    "cuda": ("libcuda.so.1",),
    "hip": ("libamdhip64.so*", "libhsa-runtime64*"),
    "opencl": ("libOpenCL.so.1",),  # the Khronos ICD loader, which finds the platform's driver
}

#: A DT_NEEDED entry's prefix no backend may carry, and what to do instead.
NEEDED_FORBIDDEN_HINT = {"libcudart": "link the CUDA runtime statically (cudart_static); "
                                      "at run time a cuda backend may need the driver libcuda.so.1 only"}


# What a kind's compiler defines that a source may test (eagle/module.py's declaration reader runs
# the host preprocessor with these, so it sees the branch that kind's compiler compiles).
COMPILER_DEFINES_OF_KIND = {"cuda": ["-D__CUDACC_RTC__"], "hip": ["-D__HIPCC_RTC__"],
                            "opencl": ["-D__OPENCL_VERSION__=300", "-D__OPENCL_C_VERSION__=300"]}


def describe_device(device) -> str:
    """``cuda:0 (DLPack device 2, 0)`` for a ``(device_type, device_id)`` pair."""
    t, i = device
    kind = KIND_OF_DEVICE_TYPE.get(int(t))
    return f"{kind}:{i} (DLPack device {t}, {i})" if kind else f"DLPack device ({t}, {i})"


def kind_of_device_type(device_type: int) -> str:
    """The eagle kind that serves DLPack ``device_type``; ValueError naming it otherwise."""
    try:
        return KIND_OF_DEVICE_TYPE[int(device_type)]
    except KeyError:
        raise EagleValueError(f"eagle: no backend kind serves DLPack device type {device_type}") from None


def device_pair(obj, method):
    """What ``method`` (``obj``'s ``__dlpack_device__``) returns, checked: a tuple of two integers
    (ints, integer scalars, IntEnums; no bool, float or str) in 0 .. 2**31-1 (DLDevice's int32
    fields), as ``(int, int)``. Anything else, or a ``method`` that is not callable or raises
    TypeError/ValueError, is refused with an EagleTypeError (EagleValueError out of range) naming
    ``obj``'s type and what it gave."""
    name = type(obj).__name__
    if not callable(method):
        raise EagleTypeError(f"eagle: {name}.__dlpack_device__ is a {type(method).__name__} ({method!r}), not a "
                             "method returning (device_type, device_id)")
    try:
        dev = method()
    except EagleError:
        raise
    except Exception as e:  # noqa: BLE001 - the object's own defect, named and chained
        raise EagleTypeError(f"eagle: {name}.__dlpack_device__() failed ({type(e).__name__}: {e}); it must be "
                             "a method returning (device_type, device_id)") from e
    if isinstance(dev, tuple) and len(dev) == 2 and not any(isinstance(v, bool) for v in dev):
        try:
            pair = operator.index(dev[0]), operator.index(dev[1])
        except TypeError:
            pass
        else:
            if all(0 <= v <= INT32_MAX for v in pair):
                return pair
            raise EagleValueError(f"eagle: {name}.__dlpack_device__() returned {dev!r}; the device type and id "
                                  f"must lie in 0 .. {INT32_MAX}")
    raise EagleTypeError(f"eagle: {name}.__dlpack_device__() returned {dev!r}, not a tuple (device_type, "
                         "device_id) of two ints")


def kind_of_array(array) -> str:
    """The kind an array's memory belongs to, read from its ``__dlpack_device__``."""
    try:
        dev = array.__dlpack_device__
    except AttributeError:
        raise EagleTypeError(f"eagle: {type(array).__name__} has no __dlpack_device__; "
                        "pass an array that supports DLPack") from None
    device_type, _ = device_pair(array, dev)
    return kind_of_device_type(device_type)
