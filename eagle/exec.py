"""run(kernel, args, partition): one launch over lanes.

The kernel handle is the kind's own: a C function pointer on cpu
(``void k(void* const* params, int64_t base, int64_t count, int64_t n_samples)``), a
``CUfunction`` on cuda, a ``hipFunction_t`` on hip. The kernel gets its arguments followed by
the partition triple ``(base, count, n_samples)``."""
import struct

from . import _kernel_handles, _recording, _validate
from ._arrays import address_of, fast_info
from ._handle import raw_int
from ._seam_ffi import ffi
from ._stream_arg import raw_stream
from .errors import EagleTypeError, EagleValueError, HandleError

_MAX_PARAMS = 64
_U64 = struct.Struct("<Q")
_LAUNCH = "struct eagle_backend_launch_desc*"
_LAUNCH_SIZE = ffi.sizeof("struct eagle_backend_launch_desc")


def _arg_bytes(arg):
    """Bytes of one kernel argument: ints are int64 (or addresses), floats double, arrays their
    data address, numpy scalars their own bytes, bytes as given."""
    info = fast_info(arg)  # eagle's and numpy's own arrays, first: the common case
    if info is not None and arg.shape != ():  # a 0-d array is a scalar, passed by value below
        if info.readonly:
            _validate.writable(info, f"eagle.run: the {type(arg).__name__} argument")
        return _U64.pack(info.ptr)
    if isinstance(arg, bool):
        return struct.pack("<q", int(arg))
    if isinstance(arg, int):
        if not -(1 << 63) <= arg < (1 << 64):
            raise EagleValueError(f"eagle.run: the integer argument {arg} does not fit 64 bits")
        if arg < 0:
            return struct.pack("<q", arg)
        return struct.pack("<Q", arg)
    if isinstance(arg, float):
        return struct.pack("<d", arg)
    if isinstance(arg, (bytes, bytearray)):
        return bytes(arg)
    if isinstance(arg, ffi.CData):
        return struct.pack("<Q", raw_int(arg))
    if hasattr(arg, "dtype") and getattr(arg, "shape", None) == ():
        return arg.tobytes() if hasattr(arg, "tobytes") else bytes(arg)
    if isinstance(arg, (str, list, tuple, dict, set)) or arg is None:
        raise EagleTypeError(f"eagle.run: a kernel argument cannot be a {type(arg).__name__} ({arg!r:.40}); "
                             "pass ints, floats, bytes, numpy scalars or arrays")
    info = address_of(arg)
    _validate.writable(info, f"eagle.run: the {type(arg).__name__} argument")  # a kernel may write it
    return struct.pack("<Q", info.ptr)


def kernel_handle(kernel):
    """An int kernel handle from an int, a cffi function pointer, an object with an int
    ``.handle`` / ``.address`` / ``.ptr`` (e.g. numba cfunc), or a ctypes function pointer.
    Strings, bytes, bools, floats and arrays are refused: their bytes are no kernel."""
    if type(kernel) is int:
        return _validate.integer(kernel, "eagle.run: the kernel handle", minimum=0, maximum=(1 << 64) - 1)
    import ctypes
    if isinstance(kernel, (bool, float, str, bytes, bytearray)) or kernel is None:
        raise EagleTypeError(f"eagle.run: a {type(kernel).__name__} ({kernel!r:.40}) is no kernel handle; pass "
                             "a compiled kernel, a function pointer or its address as an int")
    if isinstance(kernel, ffi.CData):
        value = raw_int(kernel)
    elif isinstance(kernel, int):
        value = kernel
    elif isinstance(kernel, ctypes._CFuncPtr):
        value = ctypes.cast(kernel, ctypes.c_void_p).value or 0
    else:
        value = next((v for v in (getattr(kernel, a, None) for a in ("handle", "address", "ptr"))
                      if isinstance(v, int) and not isinstance(v, bool)), None)
        if value is None:
            raise EagleTypeError(f"eagle.run: cannot use a {type(kernel).__name__} as a kernel handle")
    return _validate.integer(value, "eagle.run: the kernel handle", minimum=0, maximum=(1 << 64) - 1)


def enqueue_run(backend, kernel, args, n, *, base=0, count=None, n_samples=None, stream=None, block=0, device=-1):
    """Enqueue one launch of ``kernel`` over lanes ``[base, base + count)`` of a run of ``n``
    samples on ``backend``'s ``stream``: ``(launched, raw stream, refs)``, where ``refs`` (the
    arguments, their packed bytes and the kernel's loaded code) must stay alive until the stream
    has run the launch (eagle._inflight.submit decides who keeps them; a capture keeps them with
    the recording); None when nothing was launched (``launched`` False: an empty partition)."""
    b = backend
    n = _validate.integer(n, "eagle.run: n", minimum=0)
    base = _validate.integer(base, "eagle.run: base", minimum=0)
    count = n - base if count is None else _validate.integer(count, "eagle.run: count", minimum=0)
    n_samples = n if n_samples is None else _validate.integer(n_samples, "eagle.run: n_samples", minimum=0)
    block = _validate.integer(block, "eagle.run: block", minimum=0, maximum=(1 << 31) - 1)
    device = _validate.integer(device, "eagle.run: device", minimum=-1, maximum=(1 << 31) - 1)
    if not isinstance(args, (list, tuple)):
        raise EagleTypeError(f"eagle.run: args must be a list or tuple of kernel arguments, got a "
                             f"{type(args).__name__}")
    args = list(args)
    if len(args) > _MAX_PARAMS:
        raise EagleValueError(f"eagle: a kernel takes at most {_MAX_PARAMS} arguments, got {len(args)}")
    signature = getattr(kernel, "signature", None)
    raw_code = None
    if not hasattr(kernel, "signature"):  # a raw handle: eagle's own (checked as its Kernel), or foreign
        known, raw_code, signature = _kernel_handles.code_of(kernel_handle(kernel))
        if known and raw_code is None:
            function = kernel_handle(kernel)
            raise HandleError(f"eagle.run: kernel handle 0x{function:x} belonged to module "
                              f"{_kernel_handles.module_name(function)}, which was closed or dropped (its code is "
                              "unloaded or about to be); launch the Kernel of a module you keep open")
    if signature is not None and signature.names is None:
        signature.refuse()  # a declaration eagle could not see through (eagle/_signature.py: Unseen)
    if signature is not None:
        names = signature.names
        if len(args) != len(names):
            # the kernel would read arguments that are not there (or ignore some): refused here
            raise EagleValueError(f"eagle.run: kernel {signature.kernel} takes {len(names)} arguments "
                                  f"({', '.join(names)}), got {len(args)}")
        # each argument checked against its declared C type, written at its declared width; the
        # planes must hold every sample the launch may index: its lanes' [base, base + count), or
        # for an ActiveSet entry any of the run's n_samples
        need = n_samples if signature.indexed else base + count
        data, rel, sizes = signature.pack(args, need, _arg_bytes)
        storage = ffi.new("char[]", data or b"\0" * 8)
        at = raw_int(storage)
        params = ffi.new("uint64_t[]", [at + o for o in rel] or [0])
        sizes = ffi.new("uint64_t[]", sizes or [0])
    else:
        blobs = [_arg_bytes(a) for a in args]
        # every argument in one buffer, each in its own 16-byte-aligned slot of at least 8 bytes
        slots = [bl.ljust((max(len(bl), 8) + 15) & ~15, b"\0") for bl in blobs]
        storage = ffi.new("char[]", b"".join(slots) or b"\0" * 8)
        at = raw_int(storage)
        offsets = []
        for sl in slots:
            offsets.append(at)
            at += len(sl)
        params = ffi.new("uint64_t[]", offsets or [0])
        sizes = ffi.new("uint64_t[]", [len(bl) for bl in blobs] or [0])
    # An eagle Kernel's loaded code, read before its handle (which raises HandleError once the
    # module is closed): the launch's references keep it, so a close or a dropped module leaves
    # the code loaded until the launch has run, or as long as a recording of it lives.
    loaded = getattr(kernel, "loaded", None) or raw_code
    function = kernel_handle(kernel)
    raw = raw_stream(b, stream)
    desc = ffi.new(_LAUNCH, {"struct_size": _LAUNCH_SIZE, "device": device, "block": block, "function": function,
                             "params": params, "param_sizes": sizes, "nparams": len(args), "base": base,
                             "count": count, "n_samples": n_samples, "stream": raw})
    launched = ffi.new("int32_t*")
    b.call.run_device(desc, launched)
    return (True, raw, (args, storage, loaded)) if launched[0] else (False, raw, None)
