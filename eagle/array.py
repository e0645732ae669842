"""Device arrays allocated through the seam (minor 7: ``mem_alloc`` / ``mem_free``).

A :class:`DeviceArray` is C-contiguous memory of one backend's device. It exports DLPack (the
versioned 1.x capsule when the consumer asks with ``max_version >= (1, 0)``, the legacy one
otherwise), ``__array_interface__`` when the host can read the memory directly and
``__cuda_array_interface__`` where the DLPack device table says CUDA, so numpy, CuPy, torch and
JAX take it without a copy. Its memory is freed when the array and every capsule exported from
it are gone.

Readiness: the memory holds what the work enqueued on it wrote once that work has finished; a
consumer reads it after ``stream.synchronize()`` (``__dlpack__(stream=...)`` does not order)."""
import ctypes
import weakref

import numpy as np

from . import _arrays
from . import _dlpack as _dl
from . import _hostmem
from ._device_kind import CUDA_ARRAY_INTERFACE_DEVICE_TYPES, HOST_DEVICE_TYPES
from ._seam_ffi import ffi
from .errors import EagleBufferError as _BufferError
from .errors import EagleTypeError, EagleValueError

_ALLOC = "eagle_backend_mem_alloc"

# ------------------------------------------------------------------------------------ DLPack ABI

_DL_CODE = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}  # numpy kind -> DLDataTypeCode


_exported = {}  # managed tensor address -> (struct, shape, array): alive until the consumer deletes it


@_dl.DELETER
def _delete_managed(address):
    _exported.pop(address, None)


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi))
_capsule_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.c_void_p)(("PyCapsule_GetName", ctypes.pythonapi))
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_NAMES = (b"dltensor", b"dltensor_versioned")  # kept alive: the capsules point at these bytes


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule):
    # A consumer renames the capsule (used_dltensor...) and owns the tensor; otherwise it is ours.
    name = _capsule_name(capsule)
    if name in _NAMES:
        _exported.pop(_capsule_pointer(capsule, name), None)


def _capsule(arr, versioned):
    """A DLPack capsule over ``arr`` that keeps it alive until the consumer's deleter runs."""
    ndim = len(arr.shape)
    shape = (ctypes.c_int64 * max(ndim, 1))(*arr.shape)
    managed = _dl.DLManagedTensorVersioned() if versioned else _dl.DLManagedTensor()
    t = managed.dl_tensor
    t.data = arr.address
    t.device = _dl.DLDevice(arr.device_type, arr.device_id)
    t.ndim = ndim
    t.dtype = _dl.DLDataType(_DL_CODE[arr.dtype.kind], arr.dtype.itemsize * 8, 1)
    t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = None  # C-contiguous
    t.byte_offset = 0
    managed.deleter = _delete_managed
    if versioned:
        managed.version = _dl.DLPackVersion(1, 0)
        managed.flags = 0
    address = ctypes.addressof(managed)
    _exported[address] = (managed, shape, arr)
    name = _NAMES[1] if versioned else _NAMES[0]
    return _capsule_new(address, name, ctypes.cast(_capsule_destructor, ctypes.c_void_p))


# ------------------------------------------------------------------------------------ arrays

def _free(free_fn, address, backend):
    _hostmem.disown(address)
    free_fn(address)  # `backend` is held so its library stays loaded until here


class DeviceArray:
    """C-contiguous memory of one backend's device, from :func:`eagle.empty`, :func:`eagle.zeros`
    or :func:`eagle.asarray`.

    Attributes
    ----------
    backend : Backend
    shape : tuple of int
    dtype : numpy.dtype
    address : int
        The device address kernels take (``eagle.run`` passes it for the array).
    nbytes : int
    device_type, device_id : int
        Where it lives, as DLPack says.
    """

    __slots__ = ("backend", "shape", "dtype", "address", "nbytes", "device_type", "device_id", "_finalizer",
                 "__weakref__")

    def __init__(self, backend, shape, dtype, device=0):
        backend.require(_ALLOC)
        self.backend = backend
        self.shape = tuple(int(s) for s in ((shape,) if isinstance(shape, int) else shape))
        if any(s < 0 for s in self.shape):
            raise EagleValueError(f"eagle.empty: negative dimension in shape {self.shape}")
        self.dtype = np.dtype(dtype)
        if self.dtype.kind not in _DL_CODE:
            raise EagleTypeError(f"eagle.empty: dtype {self.dtype} has no DLPack code (use ints, floats, "
                                 "complex or bool)")
        count = 1
        for s in self.shape:
            count *= s
        self.nbytes = count * self.dtype.itemsize
        device = 0 if device is None else int(device)
        if device < 0:
            raise EagleValueError(f"eagle.empty: device must be >= 0, got {device}")
        out = ffi.new("uint64_t*")
        backend._check(_ALLOC, backend._f.mem_alloc(device, max(self.nbytes, 1), 0, out))
        self.address = int(out[0])
        self.device_type, self.device_id = backend.device_types[0], device
        self._finalizer = weakref.finalize(self, _free, backend._f.mem_free, self.address, backend)
        if self.device_type in HOST_DEVICE_TYPES:
            _hostmem.own(self.address, self.nbytes)

    @property
    def size(self):
        return self.nbytes // self.dtype.itemsize

    @property
    def ndim(self):
        return len(self.shape)

    # -- interchange ------------------------------------------------------------------------------
    def __dlpack_device__(self):
        return (self.device_type, self.device_id)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise _BufferError("eagle.DeviceArray: __dlpack__(copy=True) is not offered; eagle exports "
                               "without a copy")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise _BufferError(f"eagle.DeviceArray: lives on DLPack device {self.__dlpack_device__()}, "
                               f"not {tuple(dl_device)}")
        versioned = max_version is not None and int(max_version[0]) >= 1
        return _capsule(self, versioned)

    @property
    def __array_interface__(self):
        if self.device_type not in HOST_DEVICE_TYPES:
            raise AttributeError("__array_interface__: this memory is not readable by the host; use "
                                 "DLPack or .numpy()")
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.address, False), "version": 3,
                "strides": None}

    @property
    def __cuda_array_interface__(self):
        if self.device_type not in CUDA_ARRAY_INTERFACE_DEVICE_TYPES:
            raise AttributeError("__cuda_array_interface__: this memory is not CUDA memory; use DLPack")
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.address, False), "version": 3,
                "strides": None, "stream": None}

    # -- host copies ------------------------------------------------------------------------------
    def _host_copy(self, host, to_device):
        s = self.backend.stream(self.device_id)
        try:
            if to_device:
                self.backend.copy(self.address, host, self.nbytes, stream=s, direction="h2d")
            else:
                self.backend.copy(host, self.address, self.nbytes, stream=s, direction="d2h")
            s.synchronize()
        finally:
            s.close()

    def numpy(self):
        """A host copy as a numpy array (waits for the copy)."""
        out = np.empty(self.shape, self.dtype)
        if self.nbytes:
            self._host_copy(out, to_device=False)
        return out

    def __repr__(self):
        return (f"<eagle.DeviceArray shape={self.shape} dtype={self.dtype} on {self.backend.kind}:"
                f"{self.device_id} at 0x{self.address:x}>")


def _array_info(a):
    """eagle's own arrays need no protocol: their memory never moves and its size is known."""
    return _arrays.ArrayInfo(a.address, a.nbytes, a.device_type, a.device_id, a)


_arrays.register_exact(DeviceArray, _array_info, DeviceArray.__dlpack_device__, stable=True)


def empty(backend, shape, dtype="float64", *, device=0):
    """An uninitialised :class:`DeviceArray` on ``backend``'s ``device``."""
    return DeviceArray(backend, shape, dtype, device)


def zeros(backend, shape, dtype="float64", *, device=0):
    """A zero-filled :class:`DeviceArray` (filled by a copy from the host; waits for it)."""
    a = DeviceArray(backend, shape, dtype, device)
    if a.nbytes:
        a._host_copy(np.zeros(a.shape, a.dtype), to_device=True)
    return a


def asarray(backend, obj, dtype=None, *, device=0):
    """A :class:`DeviceArray` holding a copy of the host array ``obj`` (anything numpy takes);
    waits for the copy."""
    host = np.ascontiguousarray(np.asarray(obj, dtype=dtype))
    a = DeviceArray(backend, host.shape, host.dtype, device)
    if a.nbytes:
        a._host_copy(host, to_device=True)
    return a
