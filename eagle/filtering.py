"""Low-level compaction and reorder (the seam's filtering group).

Both are enqueue-only and capturable: they take device addresses (or arrays) and a
scratch buffer, never allocate, never synchronise (the entry points decide what ``stream=None``
means: eagle/_inflight.py). :class:`eagle.ActiveSet` builds on them."""
from . import _seam_meta as meta
from . import _validate
from ._arrays import address_of
from ._desc import Packer
from ._seam_ffi import ffi
from ._stream_arg import raw_stream
from .errors import EagleTypeError, EagleValueError

MASK_IS_DROP = meta.CONSTANTS["EAGLE_BACKEND_COMPACT_MASK_IS_DROP"]
_COMPACT_SIZE = ffi.sizeof("struct eagle_backend_compact_desc")
_COMPACT = Packer("struct eagle_backend_compact_desc", (
    "struct_size", "flags", "device", "mask", "index_map", "count", "scratch", "n", "stream", "scratch_bytes",
    "live32", "span", "fire", "theta"))
_PLANE_TUPLE = "a tuple (address, elem_size[, width[, pitch_bytes]])"


def _word(x, nbytes, what, *, written):
    """The :class:`ArrayInfo` of ``x`` (None for None), a word the work reads ``nbytes`` bytes of
    and, ``written``, writes: refused when it holds fewer bytes or is written and read-only."""
    return None if x is None else _validate.word(address_of(x), nbytes, what, written=written)


def _device(device, caller):
    """``device``: -1 (the stream's device) or a device index, as the desc's int32 takes it."""
    return _validate.integer(device, f"{caller}: device", minimum=-1, maximum=_validate.INT32_MAX)


def _flags(flags, caller):
    """The caller's own flag word (``flags=``, in place of ``drop``'s), as the desc's u32 takes it."""
    return _validate.integer(flags, f"{caller}: flags", minimum=0, maximum=_validate.UINT32_MAX)


def _query_n(n, caller):
    """The ``n`` of a scratch-size query, as the desc's int64 takes it; the backend refuses a
    negative n, or one it does not support, itself (naming it)."""
    return _validate.integer(n, f"{caller}: n", minimum=_validate.INT64_MIN)


def compact_scratch_bytes(backend, n, *, device=-1, stream=None):
    """Scratch bytes compaction of ``n`` samples needs on this backend."""
    desc = ffi.new("struct eagle_backend_compact_desc*")
    desc.struct_size = ffi.sizeof(desc[0])
    desc.device = _device(device, "eagle.compact_scratch_bytes")
    desc.n = _query_n(n, "eagle.compact_scratch_bytes")
    desc.stream = raw_stream(backend, stream)
    backend.call.compact_device(desc)
    return int(desc.scratch_bytes)


def enqueue_compact(backend, mask, index_map, count, scratch, *, n=None, drop=False, stream=None,
                    live32=None, span=None, fire=None, theta=0.0, device=-1, flags=None):
    """Enqueue on ``stream``: ``index_map[:count] = flatnonzero(mask)`` (or of ``mask == 0`` with
    ``drop``). ``(None, raw stream, refs)``, where ``refs`` (every buffer) must stay alive until
    the stream has run the compaction (eagle._inflight.submit decides who keeps them).

    ``scratch`` holds :func:`compact_scratch_bytes` bytes, zero-filled before its first use; the
    backend may keep state in it between compactions, so give each stream its own and do not reuse
    it for anything else."""
    if scratch is None:
        raise EagleValueError("eagle.compact: a scratch buffer is needed; size it with compact_scratch_bytes()")
    # Each array's address is looked up once: for device arrays every lookup builds their
    # __cuda_array_interface__ or DLPack capsule, which costs microseconds a call.
    desc, raw, refs = compact_desc(backend, address_of(mask), address_of(index_map), address_of(count),
                                   address_of(scratch), n=n, drop=drop, stream=stream, live32=live32, span=span,
                                   fire=fire, theta=theta, device=device, flags=flags)
    backend.call.compact_device(desc)
    return None, raw, refs


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
    # theta, flags and device at their defaults cost a test each, no call
    if type(theta) is not float:
        theta = _validate.real(theta, "eagle.compact: theta")
    if flags is not None:
        flags = _flags(flags, "eagle.compact")
    if type(device) is not int or device != -1:
        device = _device(device, "eagle.compact")
    refs = (m.keepalive, im.keepalive, c.keepalive, sc.keepalive)
    trigger = 0, 0, 0
    if live32 is not None or span is not None or fire is not None:  # the reorder trigger
        # the compaction writes the count to live32 and the trigger to fire, and reads span
        infos = (_word(live32, 4, "eagle.compact: live32", written=True),
                 _word(span, 4, "eagle.compact: span", written=False),
                 _word(fire, 4, "eagle.compact: fire", written=True))
        trigger = tuple(0 if a is None else a.ptr for a in infos)
        refs += tuple(a.keepalive for a in infos if a is not None)
    desc = _COMPACT.new(_COMPACT_SIZE, (MASK_IS_DROP if drop else 0) if flags is None else flags, device, m.ptr,
                        im.ptr, c.ptr, sc.ptr, n, raw, 0 if sc.nbytes is None else sc.nbytes, *trigger, theta)
    return desc, raw, refs


def _reorder_desc(backend, planes, mask, perm, inv, span, fire, scratch, n, drop, stream, device, flags,
                  caller):
    """The desc of a reorder of ``n`` samples and the plane array it points to (keep it alive while
    the desc is used). With ``scratch`` None it is the size query, which reads the planes' layout
    only. Otherwise nothing the reorder touches is taken on trust: the planes, perm, inv, span,
    fire and scratch it writes are refused when too small or read-only, the mask (read) when it
    holds fewer than ``n`` bytes."""
    query = scratch is None
    desc = ffi.new("struct eagle_backend_reorder_desc*")
    desc.struct_size = ffi.sizeof(desc[0])
    desc.flags = (MASK_IS_DROP if drop else 0) if flags is None else _flags(flags, caller)
    desc.device = _device(device, caller)
    arr = ffi.new("struct eagle_backend_reorder_plane[]", max(len(planes), 1))
    for i, p in enumerate(planes):
        what = f"{caller}: planes[{i}]"
        if isinstance(p, tuple):
            if not 2 <= len(p) <= 4:
                raise EagleValueError(f"{what} must be an array or {_PLANE_TUPLE}, got a tuple of {len(p)}")
            data, elem_size, width, pitch = p + (1, 0)[len(p) - 2:]  # width 1, pitch 0 unless given
            elem_size = _validate.integer(elem_size, f"{what}: elem_size", minimum=0,
                                          maximum=_validate.UINT32_MAX)
            width = _validate.integer(width, f"{what}: width", minimum=0, maximum=_validate.UINT32_MAX)
            pitch = _validate.integer(pitch, f"{what}: pitch_bytes", minimum=0)
        else:
            if getattr(p, "shape", None) is None:
                raise EagleTypeError(f"{what} must be an array or {_PLANE_TUPLE}, got a {type(p).__name__}")
            shape = tuple(p.shape)
            if len(shape) not in (1, 2) or shape[-1] != n:
                raise EagleValueError(f"{what} must have shape ({n},) or (w, {n}), got {shape}")
            data, elem_size = p, p.dtype.itemsize
            width, pitch = (1 if len(shape) == 1 else shape[0]), n * elem_size
        info = address_of(data)
        if not query:  # width rows (0: one) of n elements, pitch bytes apart (0: n * elem_size), all written
            _validate.word(info, ((width or 1) - 1) * (pitch or n * elem_size) + n * elem_size, what,
                           written=True)
        arr[i].data, arr[i].elem_size, arr[i].width, arr[i].pitch_bytes = info.ptr, elem_size, width, pitch
    desc.plane_count = len(planes)
    desc.planes = arr
    if not query:
        words = (_word(mask, n, f"{caller}: mask", written=False),
                 _word(perm, 4 * n, f"{caller}: perm", written=True),
                 _word(inv, 4 * n, f"{caller}: inv", written=True),
                 _word(span, 4, f"{caller}: span", written=True),
                 _word(fire, 4, f"{caller}: fire", written=True),
                 _word(scratch, 0, f"{caller}: scratch", written=True))
        desc.mask, desc.perm, desc.inv, desc.span, desc.fire, desc.scratch = (0 if w is None else w.ptr
                                                                              for w in words)
        desc.scratch_bytes = words[-1].nbytes or 0  # the backend refuses too little (a raw address: 0)
    desc.n = n
    desc.stream = raw_stream(backend, stream)
    return desc, arr


def reorder_scratch_bytes(backend, n, *, planes=(), device=-1, stream=None):
    """Scratch bytes a reorder of ``n`` samples of ``planes`` needs (it may depend on the planes)."""
    caller = "eagle.reorder_scratch_bytes"
    desc, _keep = _reorder_desc(backend, list(planes), None, None, None, None, None, None, _query_n(n, caller),
                                False, stream, device, None, caller)
    backend.call.reorder_device(desc)
    return int(desc.scratch_bytes)


def enqueue_reorder(backend, planes, mask, perm, inv, span, scratch, *, n=None, fire=None, drop=False,
                    stream=None, device=-1, flags=None):
    """Enqueue a stable in-place partition of ``planes`` over ``[0, *span)``, kept samples first:
    ``(None, raw stream, refs)``, where ``refs`` (every buffer the reorder moves or reads) must stay
    alive until the stream has run it (eagle._inflight.submit decides who keeps them).

    ``planes`` are arrays of shape (n,) or (w, n), or tuples (address, elem_size, width, pitch)."""
    backend.require("eagle_backend_reorder_device")
    n = _validate.size(n, address_of(mask), "eagle.reorder", "n", "the mask")
    if scratch is None:
        raise EagleValueError("eagle.reorder: a scratch buffer is needed; size it with reorder_scratch_bytes()")
    planes = list(planes)
    desc, _keep = _reorder_desc(backend, planes, mask, perm, inv, span, fire, scratch, n, drop,
                                stream, device, flags, "eagle.reorder")
    backend.call.reorder_device(desc)
    return None, int(desc.stream), (planes, mask, perm, inv, span, fire, scratch)
