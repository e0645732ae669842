"""Addresses of array memory, named by protocol rather than by framework.

``address_of`` accepts an int (taken as an address), a numpy array (``__array_interface__``),
anything with ``__cuda_array_interface__``, or anything that exports DLPack."""
import ctypes
import sys

from . import _hostmem
from . import _validate
from ._dlpack import DLTensor as _DLTensor
from ._device_kind import HOST_DEVICE, HOST_DEVICE_TYPES, KDL_CPU, KDL_CUDA, device_pair, kind_of_device_type
from ._seam_ffi import ffi
from .errors import EagleError, EagleTypeError, EagleValueError

#: Per-type fast paths of :func:`address_of`, for exact types only (no subclasses): type ->
#: ``fn(obj) -> ArrayInfo``, or None to take the general path (which then names what is wrong).
#: numpy's ndarray is added once numpy is in use, CuPy's ndarray and torch's Tensor once one of
#: their arrays is seen; eagle's DeviceArray registers itself.
_EXACT = {}
#: Exact types whose DLPack device is known without asking them: type -> fn(obj) -> (type, id).
_DEVICE_EXACT = {}
#: Exact types registered ``stable`` (see :func:`register_exact`).
STABLE = set()
#: One past the last byte an address reaches: addresses and the memory after them lie below it.
_ADDRESS_END = 1 << 64


class ArrayInfo:
    """Where an array's memory is: address, size in bytes (None for a raw address), DLPack device,
    whether it is read-only, and the objects that keep it alive (held while work uses it)."""

    __slots__ = ("ptr", "nbytes", "device_type", "device_id", "keepalive", "readonly")

    def __init__(self, ptr, nbytes, device_type, device_id, keepalive=None, readonly=False):
        self.ptr, self.nbytes = ptr, nbytes
        self.device_type, self.device_id = device_type, device_id
        self.keepalive = keepalive
        self.readonly = bool(readonly)

    @property
    def kind(self):
        return kind_of_device_type(self.device_type)


def _contiguous_nbytes(shape, strides, itemsize, what):
    """Bytes of an array of ``shape`` and ``itemsize``-byte items whose ``strides`` (in bytes, one
    per dimension; None: C order) say C-contiguous (a dimension of 1 may have any stride); refused
    otherwise, naming ``what``."""
    n = 1
    for s in shape:
        n *= s
    if strides is not None and len(strides) != len(shape):
        raise EagleValueError(f"eagle: the strides {tuple(strides)} of a {what} are not one per dimension of "
                              f"its shape {tuple(shape)}")
    if strides is not None and n:
        expect = itemsize
        for dim, stride in zip(reversed(shape), reversed(strides)):
            if dim != 1 and stride != expect:
                raise EagleValueError(f"eagle: {what} must be C-contiguous (shape {tuple(shape)}, "
                                 f"strides {tuple(strides)} bytes)")
            expect *= dim
    return n * itemsize


def register_exact(cls, info, device, *, stable=False):
    """Give the exact type ``cls`` a fast path: ``info(obj)`` is its :class:`ArrayInfo` (or None
    for the general path), ``device(obj)`` its ``(device_type, device_id)``. ``stable``: an
    object's address, size and device never change while it lives, so what was decided about it
    may be kept as long as it lives (eagle._eager_memo)."""
    _EXACT[cls] = info
    _DEVICE_EXACT[cls] = device
    if stable:
        STABLE.add(cls)


_from_buffer, _cast = ffi.from_buffer, ffi.cast


def fast_info(obj):
    """:class:`ArrayInfo` of ``obj`` when its exact type has a fast path (and it takes it), else None."""
    fast = _EXACT.get(type(obj))
    return None if fast is None else fast(obj)


def fast_infos(objs):
    """[:class:`ArrayInfo`] of every object of ``objs`` when each one's exact type has a fast path
    and it takes it, else None."""
    out = []
    for obj in objs:
        fast = _EXACT.get(type(obj))
        if fast is None:
            return None
        info = fast(obj)
        if info is None:
            return None
        out.append(info)
    return out


def _ndarray_info(a):
    """A numpy array's memory through its buffer: what its ``__array_interface__`` says, without
    building that dict (which costs microseconds a call). Not C-contiguous, or a dtype the
    buffer protocol refuses: None, for the general path."""
    flags = a.flags
    if not flags.c_contiguous:
        return None
    try:
        ptr = int(_cast("uintptr_t", _from_buffer(a)))
    except (TypeError, ValueError, BufferError):
        return None
    return ArrayInfo(ptr, a.nbytes, KDL_CPU, 0, a, not flags.writeable)


def _host_device(_obj):
    return HOST_DEVICE


def _cupy_info(a):
    """CuPy's ndarray, the common GPU array: what its ``__cuda_array_interface__`` says (address,
    size, writable), read as attributes without building that dict (microseconds a call), and
    its device from ``__dlpack_device__`` (CUDA, or ROCm on a HIP build of CuPy). A CuPy array's
    memory never moves while it lives. Not C-contiguous: None, for the general path (which
    names it)."""
    if not a.flags.c_contiguous:
        return None
    device_type, device_id = a.__dlpack_device__()
    return ArrayInfo(a.data.ptr, a.nbytes, int(device_type), int(device_id), a, False)


def _cupy_device(a):
    device_type, device_id = a.__dlpack_device__()
    return int(device_type), int(device_id)


def _torch_reader(strided):
    """The reader of torch's Tensor (``strided``: torch.strided, the dense layout)."""
    def info(t):
        """A tensor on a CUDA device: what its ``__cuda_array_interface__`` says, read through its
        methods. A tensor's memory can move (``Tensor.set_``), so this reads it afresh each call.
        Anything the interface refuses or that is not plain dense CUDA memory (a tensor that
        requires grad, a conjugate or negative view, another layout, not C-contiguous, the host):
        None, for the general path, which decides or names what is wrong as before."""
        if (t.layout is not strided or t.requires_grad or not t.is_cuda or t.is_conj() or t.is_neg()
                or not t.is_contiguous()):
            return None
        return _torch_cuda_info(t)
    return info


def _torch_cuda_info(t):
    device_type, device_id = t.__dlpack_device__()
    if int(device_type) != KDL_CUDA:  # a ROCm build says 10: its interface is the general path's to read
        return None
    return ArrayInfo(t.data_ptr(), t.numel() * t.element_size(), KDL_CUDA, int(device_id), t, False)


def _torch_device(t):
    device_type, device_id = t.__dlpack_device__()
    return int(device_type), int(device_id)


def _learn_type(cls):
    """Give CuPy's ndarray and torch's Tensor their fast paths the first time one goes through the
    general path (exact types only: a subclass may change what its memory is)."""
    if cls in _EXACT:
        return
    top = cls.__module__.partition(".")[0]
    if cls.__name__ == "ndarray" and top == "cupy":
        # stable: CuPy's ndarray cannot be given other memory, another dtype or other strides
        # (those attributes are read-only); setting its shape keeps its bytes where they are.
        register_exact(cls, _cupy_info, _cupy_device, stable=True)
    elif cls.__name__ == "Tensor" and top == "torch":
        strided = getattr(sys.modules.get("torch"), "strided", None)
        if strided is not None:
            register_exact(cls, _torch_reader(strided), _torch_device)


def _read_interface(obj, iface, device_type, device_id):
    """What the array interface ``iface`` of ``obj`` says, checked before anything reads the memory:
    ``(ArrayInfo, dtype, shape)``. ``iface`` must be a dict whose ``data`` is an (address, read-only)
    tuple with an int address (or, for host memory, an object with a contiguous buffer, read from
    ``offset`` on, as numpy allows), ``typestr`` a str numpy reads as a dtype, ``shape`` a tuple of
    ints >= 0 and ``strides`` None or one int per dimension, saying C-contiguous. The bytes must lie
    in 0 .. 2**64-1, at an address other than NULL unless there are none, and within the buffer
    where one holds them; a foreign object's other host memory must be mapped in this process,
    every byte (read-only where a mapping is). Refusals are EagleTypeError or EagleValueError
    naming ``obj``'s type and the field."""
    import numpy as np
    if np.ndarray not in _EXACT:
        register_exact(np.ndarray, _ndarray_info, _host_device)
    what = type(obj).__name__
    head = f"eagle: the array interface of a {what}"
    bad = f"{head} is malformed"
    if not isinstance(iface, dict):
        raise EagleTypeError(f"{bad}: it is a {type(iface).__name__}, not a dict")

    def field(name, ok, want):
        value = iface.get(name)
        if not ok(value):
            got = repr(value) if name in iface else "missing"
            raise EagleTypeError(f"{bad}: its {name!r} is {got}, not {want}")
        return value

    data = iface.get("data")
    if isinstance(data, tuple) and len(data) == 2:
        ptr = _validate.integer(data[0], f"{bad}: the address in its 'data'", minimum=0, maximum=_ADDRESS_END - 1)
        readonly, keepalive, buffer_bytes = data[1], obj, None
    else:  # numpy's other form, for host memory: an object whose buffer holds it, from 'offset' on
        found = None if data is None or device_type not in HOST_DEVICE_TYPES else _buffer(data)
        field("data", lambda _: found is not None, "an (address, read-only) tuple or an object with a "
              "contiguous buffer")
        offset = _validate.integer(iface.get("offset", 0), f"{bad}: its 'offset'", minimum=0)
        ptr, buffer_bytes, readonly = found[0] + offset, found[1] - offset, found[2]
        keepalive = (obj, data)
    typestr = field("typestr", lambda v: isinstance(v, str), "a str")
    try:
        dtype = np.dtype(typestr)
    except (TypeError, ValueError) as e:
        raise EagleTypeError(f"{bad}: its 'typestr' {typestr!r} is no dtype ({e})") from None
    shape = _validate.shape(field("shape", lambda v: isinstance(v, tuple), "a tuple"), f"{bad}: its 'shape'")
    strides = field("strides", lambda v: v is None or isinstance(v, tuple), "None or a tuple")
    if strides is not None and not all(type(x) is int for x in strides):
        strides = tuple(_validate.integer(x, f"{bad}: stride {i} of its 'strides' {strides!r}", maximum=None)
                        for i, x in enumerate(strides))
    nbytes = _contiguous_nbytes(shape, strides, dtype.itemsize, what)
    if ptr + nbytes > _ADDRESS_END:
        raise EagleValueError(f"{head} claims {nbytes} bytes ('shape' {shape} of {dtype}) at 'data' address "
                              f"0x{ptr:x}, past the end of a 64-bit address space")
    if nbytes and not ptr:
        raise EagleValueError(f"{head} gives 'data' address 0 (NULL) for the {nbytes} bytes of its 'shape' {shape}")
    if buffer_bytes is not None:
        if nbytes > buffer_bytes:  # the buffer's own size bounds the claim
            raise EagleValueError(f"{head} claims {nbytes} bytes ('shape' {shape} of {dtype}) where its 'data' "
                                  f"buffer holds {max(buffer_bytes, 0)} past its 'offset'")
    elif (not isinstance(obj, np.ndarray) and device_type in HOST_DEVICE_TYPES and nbytes
            and not _hostmem.owned(ptr, nbytes)):
        # a foreign object's claim about host memory is checked against the process's mappings
        readonly = not _hostmem.check_range(ptr, nbytes, what) or readonly
    return ArrayInfo(ptr, nbytes, device_type, device_id, keepalive, readonly), dtype, shape


def _buffer(obj):
    """(address, size in bytes, read-only) of ``obj``'s buffer when it offers a contiguous one,
    else None."""
    try:
        with memoryview(obj) as view:
            return int(_cast("uintptr_t", _from_buffer(obj))), view.nbytes, view.readonly
    except (TypeError, ValueError, BufferError):
        return None


def host_interface(obj, iface):
    """What ``iface``, the ``__array_interface__`` of ``obj``, says of host memory, checked as
    :func:`address_of` checks it (see :func:`_read_interface`): ``(ArrayInfo, dtype, shape)``. A
    reader shows numpy only these values, never ``obj``, whose interface may say something else
    when read again."""
    return _read_interface(obj, iface, *HOST_DEVICE)


# PyCapsule_GetPointer with its signature, made once: a private prototype, so neither another
# user of ctypes.pythonapi.PyCapsule_GetPointer nor eagle changes the other's restype/argtypes.
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def _from_dlpack(obj):
    """(ArrayInfo, dtype or None, shape) of ``obj``'s DLPack export; what its ``__dlpack__``
    raises, or a malformed export, is an EagleTypeError chained from the cause."""
    try:
        return _read_dlpack(obj)
    except EagleTypeError:
        raise
    except Exception as e:  # noqa: BLE001 - a malformed export is the array's defect, named
        raise EagleTypeError(f"eagle: cannot read the DLPack export of a {type(obj).__name__} "
                             f"({type(e).__name__}: {e})") from e


#: DLPack type codes -> numpy kind characters (kDLInt, kDLUInt, kDLFloat, kDLComplex, kDLBool).
_DL_KINDS = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}


def _read_dlpack(obj):
    capsule = obj.__dlpack__()
    # DLManagedTensor begins with its DLTensor; the capsule keeps the tensor alive while held.
    at = _capsule_pointer(capsule, b"dltensor")
    # the tensor, its shape and its strides are the exporter's memory: each is checked for being
    # mapped memory of this process before it is read (a garbage pointer would be SIGSEGV here);
    # memory that is mapped but not what the exporter meant cannot be told apart
    what = f"eagle: the DLPack export of a {type(obj).__name__}"
    _validate.host_range(at or 0, ctypes.sizeof(_DLTensor), f"{what}: its DLTensor")
    t = _DLTensor.from_address(at)
    if not 0 <= t.ndim <= 64:
        raise EagleTypeError(f"{what} says it has {t.ndim} dimensions (0 to 64 are read)")
    for field in ("shape", "strides"):
        where = ctypes.cast(getattr(t, field), ctypes.c_void_p).value
        if t.ndim and (where or field == "shape"):
            _validate.host_range(where or 0, 8 * t.ndim, f"{what}: its {field} pointer")
    shape = [t.shape[i] for i in range(t.ndim)]
    itemsize = (t.dtype.bits * t.dtype.lanes + 7) // 8
    strides = None if not t.strides else [t.strides[i] * itemsize for i in range(t.ndim)]
    nbytes = _contiguous_nbytes(shape, strides, itemsize, type(obj).__name__)
    kind = _DL_KINDS.get(t.dtype.code)
    dtype = None
    if kind is not None and t.dtype.lanes == 1 and t.dtype.bits % 8 == 0:
        import numpy as np
        try:
            dtype = np.dtype(f"{kind}{t.dtype.bits // 8}")
        except TypeError:
            dtype = None
    info = ArrayInfo((t.data or 0) + t.byte_offset, nbytes, t.device.device_type, t.device.device_id,
                     (obj, capsule))
    return info, dtype, tuple(shape)


def _interface(obj, name):
    """``obj``'s attribute ``name`` (an array interface), None when it has none; an interface that
    raises (other than eagle's own refusals) is an EagleTypeError naming it, chained from what
    it raised."""
    try:
        return getattr(obj, name, None)
    except EagleError:
        raise
    except Exception as e:  # noqa: BLE001 - the object's own defect, named
        raise EagleTypeError(f"eagle: the {name} of a {type(obj).__name__} raised "
                             f"{type(e).__name__}: {e}") from e


def _device_of(obj):
    dev = _interface(obj, "__dlpack_device__")
    return (KDL_CUDA, 0) if dev is None else device_pair(obj, dev)


def address_of(obj) -> ArrayInfo:
    """Address, size and DLPack device of ``obj``'s memory (which must be contiguous)."""
    fast = _EXACT.get(type(obj))
    if fast is not None:
        info = fast(obj)
        if info is not None:
            return info
    if isinstance(obj, ArrayInfo):
        return obj
    if isinstance(obj, bool):
        raise EagleTypeError(f"eagle: {obj!r} is no address or array")
    if isinstance(obj, int):
        if not 0 <= obj < _ADDRESS_END:
            raise EagleValueError(f"eagle: {obj} is no address (0 .. 2**64-1)")
        return ArrayInfo(obj, None, None, None)
    return _general(obj, "eagle")[0]


def describe(obj, what="eagle"):
    """``(ArrayInfo, dtype, shape)`` of the array ``obj`` (dtype a numpy dtype, or a framework's
    own, or None where DLPack names a type numpy has not): what a kernel's typed parameter is
    checked against. An int address, which says neither, is refused, naming ``what``."""
    fast = _EXACT.get(type(obj))
    if fast is not None:
        info = fast(obj)
        if info is not None:
            return info, obj.dtype, tuple(obj.shape)
    if isinstance(obj, (bool, int, ArrayInfo)):
        raise EagleTypeError(f"{what}: a {type(obj).__name__} is no array")
    return _general(obj, what)


def _general(obj, what):
    """(ArrayInfo, dtype, shape) of ``obj`` through its protocols: an object's own
    ``__eagle_array__`` (eagle's OwnedPlane), ``__array_interface__``,
    ``__cuda_array_interface__``, then DLPack."""
    own = getattr(type(obj), "__eagle_array__", None)
    if own is not None:
        return own(obj)
    iface = _interface(obj, "__array_interface__")
    if iface is not None:
        return _read_interface(obj, iface, *HOST_DEVICE)
    iface = _interface(obj, "__cuda_array_interface__")
    if iface is not None:
        device_type, device_id = _device_of(obj)
        out = _read_interface(obj, iface, device_type, device_id)
        _learn_type(type(obj))
        return out
    if _interface(obj, "__dlpack__") is not None:
        return _from_dlpack(obj)
    raise EagleTypeError(f"{what}: cannot take the address of a {type(obj).__name__}; pass an int "
                         "address or an array with __array_interface__, __cuda_array_interface__ or DLPack")


def dlpack_device(obj):
    """(device_type, device_id) of an array, from ``__dlpack_device__`` (numpy arrays: (1, 0))."""
    fast = _DEVICE_EXACT.get(type(obj))
    if fast is not None:
        return fast(obj)
    dev = _interface(obj, "__dlpack_device__")
    if dev is not None:
        return device_pair(obj, dev)
    if _interface(obj, "__array_interface__") is not None:
        return HOST_DEVICE
    raise EagleTypeError(f"eagle: {type(obj).__name__} does not say where it lives (no __dlpack_device__)")
