"""Where an array lives picks its backend: DLPack device type -> eagle kind.

This table is the only place in eagle's core that names kinds.

The codes are DLPack's ``DLDeviceType``. Only this table names device types; the rest of
eagle works with kinds."""

from .errors import EagleTypeError, EagleValueError

KIND_OF_DEVICE_TYPE = {
    1: "cpu",    # kDLCPU
    2: "cuda",   # kDLCUDA
    3: "cuda",   # kDLCUDAHost (page-locked host memory, served by the cuda kind)
    13: "cuda",  # kDLCUDAManaged
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


def kind_of_array(array) -> str:
    """The kind an array's memory belongs to, read from its ``__dlpack_device__``."""
    try:
        dev = array.__dlpack_device__
    except AttributeError:
        raise EagleTypeError(f"eagle: {type(array).__name__} has no __dlpack_device__; "
                        "pass an array that supports DLPack") from None
    device_type, _ = dev()
    return kind_of_device_type(device_type)
