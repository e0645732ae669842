"""Device arrays allocated through the seam (minor 7: ``mem_alloc`` / ``mem_free``).

A :class:`DeviceArray` is C-contiguous memory of one backend's device. It exports DLPack (the
versioned 1.x capsule when the consumer asks with ``max_version >= (1, 0)`` and numpy is 2.1 or
newer, the legacy one otherwise), ``__array_interface__`` when the host can read the memory
directly and ``__cuda_array_interface__`` where the DLPack device table says CUDA, so numpy, CuPy, torch and
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
from . import _validate
from ._inflight import releases as _releases
from ._device_kind import CUDA_ARRAY_INTERFACE_DEVICE_TYPES, HOST_DEVICE_TYPES
from ._seam_ffi import ffi
from .errors import EagleBufferError as _BufferError
from .errors import EagleAttributeError, EagleMemoryError, EagleTypeError, EagleValueError

_ALLOC = "eagle_backend_mem_alloc"

# ------------------------------------------------------------------------------------ dtypes

# What eagle's memory may hold: the dtypes DLPack names without ambiguity, in native byte order
# (DLPack has no byte-order field and kernels read native order): bool, the integers, the IEEE
# floats of 16 to 64 bits and their complex pairs. Not longdouble: on x86 it is the 80-bit extended
# type padded to 16 bytes, which no DLPack code names.
_DLPACK_DTYPES = frozenset(np.dtype(c) for c in "?bBhHiIlLqQefdFD")


def _dtype(dtype, what):
    """``dtype`` as a numpy dtype of :data:`_DLPACK_DTYPES`, or an EagleTypeError naming it."""
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError) as e:
        raise EagleTypeError(f"{what}: {dtype!r} is no dtype ({e})") from None
    if dt in _DLPACK_DTYPES:
        return dt
    native = dt.newbyteorder("=")
    if native in _DLPACK_DTYPES:
        raise EagleTypeError(f"{what}: dtype {dt.str} is not in native byte order, which DLPack and kernels "
                             f"assume (use {native.str})")
    raise EagleTypeError(f"{what}: dtype {dt} has no DLPack code (use bool, ints, float16/32/64 or "
                         "complex64/128)")


# ------------------------------------------------------------------------------------ DLPack export

# numpy makes eagle's capsules, over a view of the array's memory, so that their capsule destructor
# and tensor deleter are C: a consumer may run them with an exception set (numpy's from_dlpack drops
# a capsule it refuses with its error set). A Python destructor (a ctypes or cffi callback) cannot
# keep that error: its call machinery turns a pending error into a SystemError and clears it, and
# the array it should free stays alive. numpy < 2.1 exports the legacy capsule only, which the
# protocol allows.
_NUMPY_VERSIONED = np.lib.NumpyVersion(np.__version__) >= "2.1.0"
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


class _Memory:
    """Memory as numpy's array interface describes it (C order), whatever device holds it: a numpy
    view of it carries the pointer without reading it, and holds ``owner``, which keeps the memory
    alive. Numpy reads only this interface, built from values eagle has checked."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, owner, shape, dtype, address, readonly=False):
        self.owner = owner
        self.__array_interface__ = {"shape": shape, "typestr": dtype.str, "data": (address, readonly),
                                    "version": 3}


def _capsule(arr, versioned):
    """A DLPack capsule over ``arr`` (versioned where asked and numpy can), its tensor on the array's
    device, that keeps the array alive until the consumer's deleter runs or the capsule is dropped
    unconsumed."""
    try:
        view = np.asarray(_Memory(arr, arr.shape, arr.dtype, arr.address))
    except ValueError as e:  # more dimensions than numpy holds
        raise _BufferError(f"eagle.DeviceArray: cannot export shape {arr.shape} through DLPack ({e})") from None
    versioned = versioned and _NUMPY_VERSIONED
    capsule = view.__dlpack__(max_version=(1, 0)) if versioned else view.__dlpack__()
    if view.__dlpack_device__() != (arr.device_type, arr.device_id):  # numpy says CPU: name the device
        name, struct = ((b"dltensor_versioned", _dl.DLManagedTensorVersioned) if versioned
                        else (b"dltensor", _dl.DLManagedTensor))
        struct.from_address(_capsule_pointer(capsule, name)).dl_tensor.device = _dl.DLDevice(
            arr.device_type, arr.device_id)
    return capsule


# ------------------------------------------------------------------------------------ arrays

def _free(free_fn, address, backend):
    _hostmem.disown(address)
    free_fn(address)  # `backend` is held so its library stays loaded until here


def _read_only(name, doc):
    """A property that reads ``_<name>``; assigning or deleting it raises
    :class:`eagle.EagleAttributeError` (an AttributeError) naming it."""
    def refuse(self, value=None):
        raise EagleAttributeError(f"eagle.DeviceArray: {name} is read-only (what an array exports must describe "
                                  f"the memory it holds); make a new array, or a view of it through DLPack")
    return property(lambda self: getattr(self, "_" + name), refuse, refuse, doc)


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

    ``shape`` is a tuple of integers >= 0 or one integer (``()`` is a 0-d array of one item);
    ``dtype`` one DLPack names, in native byte order; ``what`` names the caller in refusals.
    """

    # What an array exports (its memory's address, size, dtype, shape, device) is read-only: an
    # assignment raises AttributeError, so no export (DLPack, the array interfaces, a kernel's
    # argument) can describe memory the array does not hold.
    __slots__ = ("_backend", "_shape", "_dtype", "_address", "_nbytes", "_device_type", "_device_id",
                 "_finalizer", "__weakref__")

    def __init__(self, backend, shape, dtype, device=0, *, what="eagle.DeviceArray"):
        backend.require(_ALLOC)
        self._backend = backend
        self._shape = _validate.shape(shape, what)
        self._dtype = _dtype(dtype, what)
        count = 1
        for s in self._shape:
            count *= s
        self._nbytes = count * self._dtype.itemsize
        if self._nbytes > _validate.INT64_MAX:  # mem_alloc takes a uint64_t: no memory is that large
            raise EagleValueError(f"{what}: shape {self._shape} of {self._dtype} is {self._nbytes} bytes, more "
                                  f"than {_validate.INT64_MAX}")
        device = 0 if device is None else _validate.integer(device, f"{what}: device", minimum=0,
                                                            maximum=_validate.INT32_MAX)  # an int32_t
        out = ffi.new("uint64_t*")
        backend._check(_ALLOC, backend._f.mem_alloc(device, max(self._nbytes, 1), 0, out))
        self._address = int(out[0])
        self._device_type, self._device_id = backend.device_types[0], device
        # freed when safe: not at exit with work that never ends still using memory, nor (on cuda,
        # where cudaFree waits for the device) while work an interrupted wait left still runs
        self._finalizer = weakref.finalize(self, _releases.free_when_safe, _free, backend._f.mem_free,
                                           self._address, backend)
        if self._device_type in HOST_DEVICE_TYPES:
            _hostmem.own(self._address, self._nbytes)

    backend = _read_only("backend", "The Backend whose memory this is.")
    shape = _read_only("shape", "The shape, a tuple of ints (read-only).")
    dtype = _read_only("dtype", "The numpy dtype of an item (read-only).")
    address = _read_only("address", "The device address kernels take (read-only).")
    nbytes = _read_only("nbytes", "Bytes of memory (read-only).")
    device_type = _read_only("device_type", "DLPack device type (read-only).")
    device_id = _read_only("device_id", "DLPack device id (read-only).")

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
        if max_version is not None and not (isinstance(max_version, tuple) and len(max_version) == 2
                                            and all(type(v) is int for v in max_version)):
            raise EagleTypeError(f"eagle.DeviceArray: __dlpack__(max_version=...) takes a (major, minor) tuple of "
                                 f"ints, got {max_version!r:.40}")
        return _capsule(self, max_version is not None and max_version[0] >= 1)

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
        try:
            out = np.empty(self.shape, self.dtype)
        except MemoryError:
            raise EagleMemoryError(f"eagle.DeviceArray.numpy: the host copy of shape {self.shape} of {self.dtype} "
                                   f"needs {self.nbytes} bytes ({self.nbytes / 2**30:.2f} GiB) of host memory, which "
                                   "could not be had; copy it in parts (eagle.copy of slices)") from None
        if self.nbytes:
            self._host_copy(out, to_device=False)
        return out

    def __repr__(self):
        return (f"<eagle.DeviceArray shape={self.shape} dtype={self.dtype} on {self.backend.kind}:"
                f"{self.device_id} at 0x{self.address:x}>")


def _array_info(a):
    """eagle's own arrays need no protocol: their memory never moves and its size is known."""
    return _arrays.ArrayInfo(a._address, a._nbytes, a._device_type, a._device_id, a)


_arrays.register_exact(DeviceArray, _array_info, DeviceArray.__dlpack_device__, stable=True)


def empty(backend, shape, dtype="float64", *, device=0):
    """An uninitialised :class:`DeviceArray` on ``backend``'s ``device``."""
    return DeviceArray(backend, shape, dtype, device, what="eagle.empty")


def zeros(backend, shape, dtype="float64", *, device=0):
    """A zero-filled :class:`DeviceArray` (filled by a copy from the host; waits for it)."""
    a = DeviceArray(backend, shape, dtype, device, what="eagle.zeros")
    if a.nbytes:
        a._host_copy(np.zeros(a.shape, a.dtype), to_device=True)
    return a


def _host_array(obj, dtype, what):
    """``obj`` as a C-contiguous numpy array of its shape (0-d stays 0-d) in native byte order
    (values kept). numpy's own arrays and scalars go to numpy as they are. Anything else with
    ``__array_interface__`` (read once) is checked by eagle's reader first (every field, C order,
    every byte mapped, a dtype eagle holds), and numpy is shown only what was checked, read-only.
    An object that offers DLPack and no numpy protocol (a torch CPU tensor) is read through DLPack,
    which numpy would otherwise wrap as one object."""
    iface = None if isinstance(obj, (np.ndarray, np.generic)) else getattr(obj, "__array_interface__", None)
    if iface is not None:
        info, dt, shape = _arrays.host_interface(obj, iface)
        # a dtype eagle holds, in either byte order, before numpy reads a byte: numpy would take
        # the words of an object dtype for pointers
        _dtype(dt.newbyteorder("="), what)
        try:
            obj = np.asarray(_Memory(info.keepalive, shape, dt, info.ptr, readonly=True))
        except ValueError as e:  # more dimensions than numpy holds
            raise EagleValueError(f"{what}: numpy cannot hold the shape {shape} of a {type(obj).__name__} "
                                  f"({e})") from None
    elif hasattr(obj, "__dlpack__") and not hasattr(obj, "__array__"):
        try:
            obj = np.from_dlpack(obj)
        except Exception as e:  # noqa: BLE001 - what the exporter raises (a KeyError, say) is its defect, named
            raise EagleTypeError(f"{what}: numpy cannot read the {type(obj).__name__} through DLPack "
                                 f"({type(e).__name__}: {e}); eagle.asarray copies host memory") from e
    try:
        host = np.asarray(obj, dtype=dtype, order="C")
    except MemoryError:
        raise EagleMemoryError(f"{what}: the host staging copy of the {type(obj).__name__} (shape "
                               f"{getattr(obj, 'shape', '?')}) could not be allocated: the host is out of memory for it; "
                               "copy it in parts") from None
    except ValueError as e:  # a ragged sequence, a value the dtype cannot hold
        raise EagleValueError(f"{what}: numpy cannot make an array of the {type(obj).__name__} ({e})") from e
    except TypeError as e:
        raise EagleTypeError(f"{what}: numpy cannot make an array of the {type(obj).__name__} ({e})") from e
    return host if host.dtype.isnative else host.astype(host.dtype.newbyteorder("="))


def asarray(backend, obj, dtype=None, *, device=0):
    """A :class:`DeviceArray` holding a copy of the host array ``obj`` (anything numpy takes, or
    a host array that offers DLPack only), of its shape and values in native byte order; waits
    for the copy. An object other than numpy's read through ``__array_interface__`` must describe
    C-contiguous memory that is there (mapped, or within its buffer) and a dtype eagle holds, as
    everywhere eagle takes an array (refused otherwise, before anything reads it)."""
    what = "eagle.asarray"
    host = _host_array(obj, None if dtype is None else _dtype(dtype, what), what)
    a = DeviceArray(backend, host.shape, host.dtype, device, what=what)
    if a.nbytes:
        a._host_copy(host, to_device=True)
    return a
