"""Low-level compaction and reorder (the seam's filtering group).

Both are enqueue-only and capturable: they take device addresses (or arrays) and a
scratch buffer, never allocate, never synchronise. :class:`eagle.ActiveSet` builds on them."""
from . import _seam_meta as meta
from . import _validate
from ._arrays import address_of
from ._desc import Packer
from ._seam_ffi import ffi
from ._stream_arg import raw_stream
from .memory import hold_until_done
from .errors import EagleValueError

MASK_IS_DROP = meta.CONSTANTS["EAGLE_BACKEND_COMPACT_MASK_IS_DROP"]
_COMPACT_SIZE = ffi.sizeof("struct eagle_backend_compact_desc")
_COMPACT = Packer("struct eagle_backend_compact_desc", (
    "struct_size", "flags", "device", "mask", "index_map", "count", "scratch", "n", "stream", "scratch_bytes",
    "live32", "span", "fire", "theta"))


def _ptr(x):
    return 0 if x is None else address_of(x).ptr


def compact_scratch_bytes(backend, n, *, device=-1, stream=None):
    """Scratch bytes compaction of ``n`` samples needs on this backend."""
    desc = ffi.new("struct eagle_backend_compact_desc*")
    desc.struct_size = ffi.sizeof(desc[0])
    desc.device = device
    desc.n = int(n)
    desc.stream = raw_stream(backend, stream)
    backend.call.compact_device(desc)
    return int(desc.scratch_bytes)


def compact(backend, mask, index_map, count, scratch, *, n=None, drop=False, stream=None,
            live32=None, span=None, fire=None, theta=0.0, device=-1, flags=None):
    """Enqueue: ``index_map[:count] = flatnonzero(mask)`` (or of ``mask == 0`` with ``drop``).

    ``scratch`` holds :func:`compact_scratch_bytes` bytes, zero-filled before its first use; the
    backend may keep state in it between compactions, so give each stream its own and do not reuse
    it for anything else. The stream holds every buffer until it has run the compaction."""
    raw, refs = enqueue_compact(backend, mask, index_map, count, scratch, n=n, drop=drop, stream=stream,
                                live32=live32, span=span, fire=fire, theta=theta, device=device, flags=flags)
    hold_until_done(backend, raw, refs)


def enqueue_compact(backend, mask, index_map, count, scratch, *, n=None, drop=False, stream=None,
                    live32=None, span=None, fire=None, theta=0.0, device=-1, flags=None):
    """:func:`compact` without the keepalive: ``(raw stream, refs)``, where ``refs`` must stay
    alive until the stream has run the compaction (the caller holds them, or waits for the stream)."""
    if scratch is None:
        raise EagleValueError("eagle.compact: a scratch buffer is needed; size it with compact_scratch_bytes()")
    # Each array's address is looked up once: for device arrays every lookup builds their
    # __cuda_array_interface__ or DLPack capsule, which costs microseconds a call.
    desc, raw, refs = compact_desc(backend, address_of(mask), address_of(index_map), address_of(count),
                                   address_of(scratch), n=n, drop=drop, stream=stream, live32=live32, span=span,
                                   fire=fire, theta=theta, device=device, flags=flags)
    backend.call.compact_device(desc)
    return raw, refs


def compact_desc(backend, m, im, c, sc, *, n=None, drop=False, stream=None, live32=None, span=None,
                 fire=None, theta=0.0, device=-1, flags=None):
    """The checked desc of :func:`enqueue_compact` from the :class:`ArrayInfo` of mask, index_map,
    count and scratch (``address_of`` of each): ``(desc, raw stream, refs)``. It refuses what
    :func:`compact` refuses; the desc may be passed to ``compact_device`` again while the arrays
    live (it holds their addresses, not the arrays)."""
    # This runs on every eager compaction, so it is written out flat: no loops over tuples,
    # constant messages, the checks in one test (the validators name the first that fails).
    n = _validate.size(n, m, "eagle.compact", "n", "the mask")
    if ((m.nbytes is not None and m.nbytes < n) or (im.nbytes is not None and im.nbytes < 4 * n)
            or (c.nbytes is not None and c.nbytes < 4) or im.readonly or c.readonly or sc.readonly):
        _validate.holds(m, n, "eagle.compact: mask")
        _validate.holds(im, 4 * n, "eagle.compact: index_map")
        _validate.holds(c, 4, "eagle.compact: count")
        _validate.writable(im, "eagle.compact: index_map")
        _validate.writable(c, "eagle.compact: count")
        _validate.writable(sc, "eagle.compact: scratch")
    raw = raw_stream(backend, stream)
    theta = float(theta)
    refs = (m.keepalive, im.keepalive, c.keepalive, sc.keepalive)
    trigger = 0, 0, 0
    if live32 is not None or span is not None or fire is not None:  # the reorder trigger
        infos = [None if a is None else address_of(a) for a in (live32, span, fire)]
        trigger = tuple(0 if a is None else a.ptr for a in infos)
        refs += tuple(a.keepalive for a in infos if a is not None)
    desc = _COMPACT.new(_COMPACT_SIZE, (MASK_IS_DROP if drop else 0) if flags is None else flags, device, m.ptr,
                        im.ptr, c.ptr, sc.ptr, n, raw, 0 if sc.nbytes is None else sc.nbytes, *trigger, theta)
    return desc, raw, refs


def _reorder_desc(backend, planes, mask, perm, inv, span, fire, scratch, n, drop, stream, device, flags):
    desc = ffi.new("struct eagle_backend_reorder_desc*")
    desc.struct_size = ffi.sizeof(desc[0])
    desc.flags = (MASK_IS_DROP if drop else 0) if flags is None else flags
    desc.device = device
    arr = ffi.new("struct eagle_backend_reorder_plane[]", max(len(planes), 1))
    for i, p in enumerate(planes):
        if isinstance(p, tuple):
            data, elem_size, width, pitch = (list(p) + [1, 0])[:4]
            arr[i].data = _ptr(data)
        else:
            shape = getattr(p, "shape", (n,))
            elem_size = p.dtype.itemsize
            width = 1 if len(shape) == 1 else int(shape[0])
            pitch = n * elem_size
            arr[i].data = _ptr(p)
        arr[i].elem_size, arr[i].width, arr[i].pitch_bytes = int(elem_size), int(width), int(pitch)
    desc.plane_count = len(planes)
    desc.planes = arr
    desc.mask, desc.perm, desc.inv = _ptr(mask), _ptr(perm), _ptr(inv)
    desc.span, desc.fire = _ptr(span), _ptr(fire)
    sc = address_of(scratch) if scratch is not None else None
    desc.scratch = 0 if sc is None else sc.ptr
    desc.scratch_bytes = 0 if sc is None or sc.nbytes is None else sc.nbytes
    desc.n = int(n)
    desc.stream = raw_stream(backend, stream)
    return desc, arr


def reorder_scratch_bytes(backend, n, *, planes=(), device=-1, stream=None):
    """Scratch bytes a reorder of ``n`` samples of ``planes`` needs (it may depend on the planes)."""
    desc, _keep = _reorder_desc(backend, list(planes), None, None, None, None, None, None, n, False, stream,
                                device, None)
    backend.call.reorder_device(desc)
    return int(desc.scratch_bytes)


def reorder(backend, planes, mask, perm, inv, span, scratch, *, n=None, fire=None, drop=False,
            stream=None, device=-1, flags=None):
    """Enqueue a stable in-place partition of ``planes`` over ``[0, *span)``, kept samples first.

    ``planes`` are arrays of shape (n,) or (w, n), or tuples (address, elem_size, width, pitch)."""
    backend.require("eagle_backend_reorder_device")
    n = _validate.size(n, address_of(mask), "eagle.reorder", "n", "the mask")
    if scratch is None:
        raise EagleValueError("eagle.reorder: a scratch buffer is needed; size it with reorder_scratch_bytes()")
    desc, _keep = _reorder_desc(backend, list(planes), mask, perm, inv, span, fire, scratch, n, drop,
                                stream, device, flags)
    backend.call.reorder_device(desc)
