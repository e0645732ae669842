"""Where an array lives picks its backend: DLPack device type -> eagle kind.

The codes are DLPack's ``DLDeviceType``. Only this table names device types; the rest of
eagle works with kinds."""

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


def kind_of_device_type(device_type: int) -> str:
    """The eagle kind that serves DLPack ``device_type``; ValueError naming it otherwise."""
    try:
        return KIND_OF_DEVICE_TYPE[int(device_type)]
    except KeyError:
        raise ValueError(f"eagle: no backend kind serves DLPack device type {device_type}") from None


def kind_of_array(array) -> str:
    """The kind an array's memory belongs to, read from its ``__dlpack_device__``."""
    try:
        dev = array.__dlpack_device__
    except AttributeError:
        raise TypeError(f"eagle: {type(array).__name__} has no __dlpack_device__; "
                        "pass an array that supports DLPack") from None
    device_type, _ = dev()
    return kind_of_device_type(device_type)
