"""Addresses of array memory, named by protocol rather than by framework.

``address_of`` accepts an int (taken as an address), a numpy array (``__array_interface__``),
anything with ``__cuda_array_interface__``, or anything that exports DLPack."""
import ctypes

from ._device_kind import kind_of_device_type
from .errors import EagleTypeError, EagleValueError


class ArrayInfo:
    __slots__ = ("ptr", "nbytes", "device_type", "device_id", "keepalive")

    def __init__(self, ptr, nbytes, device_type, device_id, keepalive=None):
        self.ptr, self.nbytes = ptr, nbytes
        self.device_type, self.device_id = device_type, device_id
        self.keepalive = keepalive

    @property
    def kind(self):
        return kind_of_device_type(self.device_type)


def _contiguous_nbytes(shape, strides, itemsize, what):
    n = 1
    for s in shape:
        n *= s
    if strides is not None and n:
        expect = itemsize
        for dim, stride in zip(reversed(shape), reversed(strides)):
            if dim != 1 and stride != expect:
                raise EagleValueError(f"eagle: {what} must be C-contiguous (shape {tuple(shape)}, "
                                 f"strides {tuple(strides)} bytes)")
            expect *= dim
    return n * itemsize


def _from_interface(obj, iface, device_type, device_id):
    import numpy as np
    ptr, readonly = iface["data"]
    itemsize = np.dtype(iface["typestr"]).itemsize
    nbytes = _contiguous_nbytes(iface["shape"], iface.get("strides"), itemsize, type(obj).__name__)
    return ArrayInfo(int(ptr or 0), nbytes, device_type, device_id, obj)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


# PyCapsule_GetPointer with its signature, made once: a private prototype, so neither another
# user of ctypes.pythonapi.PyCapsule_GetPointer nor eagle changes the other's restype/argtypes.
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def _from_dlpack(obj):
    capsule = obj.__dlpack__()
    # DLManagedTensor begins with its DLTensor; the capsule keeps the tensor alive while held.
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    shape = [t.shape[i] for i in range(t.ndim)]
    itemsize = (t.dtype.bits * t.dtype.lanes + 7) // 8
    strides = None if not t.strides else [t.strides[i] * itemsize for i in range(t.ndim)]
    nbytes = _contiguous_nbytes(shape, strides, itemsize, type(obj).__name__)
    return ArrayInfo((t.data or 0) + t.byte_offset, nbytes, t.device.device_type,
                     t.device.device_id, (obj, capsule))


def address_of(obj) -> ArrayInfo:
    """Address, size and DLPack device of ``obj``'s memory (which must be contiguous)."""
    if isinstance(obj, ArrayInfo):
        return obj
    if isinstance(obj, int):
        return ArrayInfo(obj, None, None, None)
    iface = getattr(obj, "__array_interface__", None)
    if iface is not None:
        return _from_interface(obj, iface, 1, 0)
    iface = getattr(obj, "__cuda_array_interface__", None)
    if iface is not None:
        dev = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (2, 0)
        return _from_interface(obj, iface, int(dev[0]), int(dev[1]))
    if hasattr(obj, "__dlpack__"):
        return _from_dlpack(obj)
    raise EagleTypeError(f"eagle: cannot take the address of a {type(obj).__name__}; pass an int "
                    "address or an array with __array_interface__, __cuda_array_interface__ or DLPack")


def dlpack_device(obj):
    """(device_type, device_id) of an array, from ``__dlpack_device__`` (numpy arrays: (1, 0))."""
    dev = getattr(obj, "__dlpack_device__", None)
    if dev is not None:
        t, i = dev()
        return int(t), int(i)
    if hasattr(obj, "__array_interface__"):
        return 1, 0
    raise EagleTypeError(f"eagle: {type(obj).__name__} does not say where it lives (no __dlpack_device__)")
