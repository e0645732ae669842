"""run(kernel, args, partition): one launch over lanes.

The kernel handle is the kind's own: a C function pointer on cpu
(``void k(void* const* params, int64_t base, int64_t count, int64_t n_samples)``), a
``CUfunction`` on cuda, a ``hipFunction_t`` on hip. The kernel gets its arguments followed by
the partition triple ``(base, count, n_samples)``."""
import struct

from ._arrays import address_of
from ._handle import raw_int
from ._seam_ffi import ffi
from ._stream_arg import raw_stream
from .errors import EagleTypeError, EagleValueError

_MAX_PARAMS = 64


def _arg_bytes(arg):
    """Bytes of one kernel argument: ints are int64 (or addresses), floats double, arrays their
    data address, numpy scalars their own bytes, bytes as given."""
    if isinstance(arg, bool):
        return struct.pack("<q", int(arg))
    if isinstance(arg, int):
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
    return struct.pack("<Q", address_of(arg).ptr)


def kernel_handle(kernel):
    """An int kernel handle from an int, a cffi function pointer, or an object with ``.ptr`` /
    ``.address`` (e.g. numba cfunc) or ctypes function."""
    if isinstance(kernel, (int, ffi.CData)):
        return raw_int(kernel)
    for attr in ("address", "ptr", "handle"):
        v = getattr(kernel, attr, None)
        if isinstance(v, int):
            return v
    try:
        import ctypes
        return ctypes.cast(kernel, ctypes.c_void_p).value
    except Exception:
        raise EagleTypeError(f"eagle: cannot use a {type(kernel).__name__} as a kernel handle") from None


def run(backend, kernel, args, n, *, base=0, count=None, n_samples=None, stream=None, block=0, device=-1):
    """Launch ``kernel`` once over lanes ``[base, base + count)`` of a run of ``n`` samples on
    ``backend``.

    Returns True when a launch was enqueued, False for an empty partition."""
    b = backend
    n = int(n)
    count = n - int(base) if count is None else int(count)
    n_samples = n if n_samples is None else int(n_samples)
    args = list(args)
    if len(args) > _MAX_PARAMS:
        raise EagleValueError(f"eagle: a kernel takes at most {_MAX_PARAMS} arguments, got {len(args)}")
    blobs = [_arg_bytes(a) for a in args]
    storage = [ffi.from_buffer(bytearray(bl).ljust(max(len(bl), 8), b"\0")) for bl in blobs]
    params = ffi.new("uint64_t[]", [raw_int(s) for s in storage] or [0])
    sizes = ffi.new("uint64_t[]", [len(bl) for bl in blobs] or [0])
    desc = ffi.new("struct eagle_backend_launch_desc*")
    desc.struct_size = ffi.sizeof(desc[0])
    desc.device = device
    desc.block = int(block)
    desc.function = kernel_handle(kernel)
    desc.params = params
    desc.param_sizes = sizes
    desc.nparams = len(args)
    desc.base = int(base)
    desc.count = count
    desc.n_samples = n_samples
    desc.stream = raw_stream(b, stream)
    launched = ffi.new("int32_t*")
    b.call.run_device(desc, launched)
    return bool(launched[0])
