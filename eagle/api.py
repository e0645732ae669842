"""eagle's module-level calls: on arrays (``eagle.copy``, ``eagle.run``, ``eagle.compact``,
``eagle.pinned``, ``eagle.host_func``, ``eagle.fence``) and for a named backend (``eagle.compile``,
``eagle.load_image``, ``eagle.empty``, ``eagle.zeros``, ``eagle.asarray``).

Each decides its backend with the one resolver (eagle/_resolve.py) from where its arrays live
(and the eagle stream it is given), overridden by ``backend=``; none defaults to a kind. Then it
hands the :class:`eagle.Backend` to the seam object that does the work; a call that enqueues work
does so through :func:`eagle._inflight.submit`, the one meaning of ``stream=``."""
from . import _arrays, _validate
from . import _eager_memo
from . import array as _array
from . import exec as _exec
from . import filtering as _filtering
from . import interop as _interop
from . import memory as _memory
from . import module as _module

from ._backend import backend as open_backend
from ._inflight import call_and_wait, own_stream, submit
from ._device_kind import KIND_OF_DEVICE_TYPE, kind_of_device_type
from ._resolve import resolve, resolve_exact
from .errors import EagleValueError

_STABLE = _arrays.STABLE
_COMPACT_KEYWORDS = frozenset({"n", "drop", "live32", "span", "fire", "theta", "device", "flags"})
_MEMO_KEYWORDS = frozenset({"n", "drop"})

def _eager_compact(mask, index_map, count, scratch, kw):
    """Eager ``compact`` (no ``backend=``, no stream) when every array's exact type has a reader
    (eagle's and numpy's arrays; CuPy's and torch's once one was seen:
    :func:`eagle._resolve.resolve_exact`), and False otherwise, for the general path to decide.

    The arrays' infos decide the backend and give the addresses, read once. With four arrays of
    stable types (eagle's DeviceArray, CuPy's ndarray: :data:`eagle._arrays.STABLE`) and no
    argument but ``n`` (an int) and ``drop`` (a bool), the checked desc is kept in this thread's
    memo (eagle/_eager_memo.py) and a later call with the same objects makes the same seam call
    again, once it has checked what can change: the backend their kind opens now and this
    thread's own stream."""
    if kw and not kw.keys() <= _COMPACT_KEYWORDS:
        return False  # the general path names the keyword
    arrays = (mask, index_map, count, scratch)
    key = None
    if type(mask) in _STABLE and (not kw or kw.keys() <= _MEMO_KEYWORDS):
        n, drop = kw.get("n"), kw.get("drop", False)
        if (n is None or type(n) is int) and type(drop) is bool:
            table = _eager_memo.table()
            key = (id(mask), id(index_map), id(count), id(scratch), n, drop)
            e = table.get(key)
            if e is not None and e.holds4(mask, index_map, count, scratch):
                b = e.backend
                if open_backend(e.kind) is b:
                    s = own_stream(b, "eagle.compact")
                    if s is e.stream and s.handle == e.raw:  # .handle refuses a closed stream
                        call_and_wait(b, s, e.raw, arrays, b.call.compact_device, e.desc)
                        return None
    hit = resolve_exact(arrays)
    if hit is None:
        return False
    b, _, infos = hit
    s = own_stream(b, "eagle.compact")
    desc, raw, refs = _filtering.compact_desc(b, *infos, stream=s, **kw)
    call_and_wait(b, s, raw, (arrays, refs), b.call.compact_device, desc)
    if (key is not None and type(index_map) in _STABLE and type(count) in _STABLE
            and type(scratch) in _STABLE):
        _eager_memo.put(table, key, _eager_memo.Entry(arrays, KIND_OF_DEVICE_TYPE[infos[0].device_type], b, s,
                                                      raw, desc))
    return None


def copy(dst, src, nbytes=None, *, stream=None, backend=None, direction=None):
    """Copy ``nbytes`` (default: the whole of ``src``) from ``src`` to ``dst`` in stream order.

    Parameters
    ----------
    dst, src : arrays or int addresses
        Arrays say where they live (DLPack device), which gives the backend and the direction;
        with an int address pass ``direction`` (``'h2d'``, ``'d2h'``, ``'d2d'``, ``'h2h'``).
    nbytes : int, optional
        Bytes to copy; both sides must hold at least that many (nothing is truncated silently).
    stream : stream, optional
        An eagle stream, a raw stream int or a foreign stream (``__cuda_stream__``): the copy is
        enqueued there and the call returns at once. With no stream, eagle copies on a stream
        of its own and returns when the copy is done.
    backend : kind, 'gpu', path or Backend, optional
        Overrides what the arrays say.

    The copy keeps ``dst`` and ``src`` alive until it has run.
    """
    b, _ = resolve((dst, src), backend=backend, streams=(stream,), what="eagle.copy", host_ok=True)
    return submit(b, stream, _memory.enqueue_copy, dst, src, nbytes, direction=direction)


def run(kernel, args, n, *, backend=None, stream=None, **kw):
    """Launch ``kernel`` once over lanes ``[base, base + count)`` of a run of ``n`` samples.

    The backend is the kernel's own (a kernel compiled by a backend carries it), else the one the
    array arguments live on, else ``backend=``. Keyword arguments: ``base``, ``count``,
    ``n_samples``, ``block``, ``device``. With ``stream`` the launch is enqueued there; with no
    stream eagle launches on a stream of its own and returns when the kernel is done. Returns True
    when a launch was made, False for an empty partition."""
    owner = getattr(kernel, "backend", None)
    if owner is None:  # an eagle Kernel: its module's backend
        owner = getattr(getattr(kernel, "module", None), "backend", None)
    if backend is None and owner is not None and not isinstance(owner, str):
        backend = owner
    signature = getattr(kernel, "signature", None)
    arrays = [] if not isinstance(args, (list, tuple)) else (
        list(args) if signature is None else signature.arrays(args))  # a declared kernel's scalars name no device
    b, _ = resolve(arrays, backend=backend, streams=(stream,), what="eagle.run")
    return submit(b, stream, _exec.enqueue_run, kernel, args, n, **kw)


def compact(mask, index_map, count, scratch, *, backend=None, stream=None, **kw):
    """``index_map[:count] = flatnonzero(mask)`` (``drop=True``: of ``mask == 0``) on the backend
    the arrays live on; see :func:`eagle.filtering.enqueue_compact`. Enqueued on ``stream``; with no
    stream, done on a stream of eagle's own before the call returns."""
    if backend is None and stream is None and _eager_compact(mask, index_map, count, scratch, kw) is None:
        return None
    b, _ = resolve((mask, index_map, count, scratch), backend=backend, streams=(stream,),
                   what="eagle.compact")
    return submit(b, stream, _filtering.enqueue_compact, mask, index_map, count, scratch, **kw)


def pinned(shape, dtype="float64", *, backend=None):
    """A numpy array over page-locked host memory of ``backend`` that frees itself with its last
    view. With no backend, the backend that serves host memory allocates it (no arrays name one);
    pass the GPU backend whose copies should be fast."""
    b, _ = resolve((), backend=backend, what="eagle.pinned")
    return _memory.pinned(b, shape, dtype)


def host_func(fn, *, stream=None, backend=None):
    """Run the Python callable ``fn()`` in the order of ``stream`` (a host node when the stream is
    being captured). The backend is the eagle stream's own, else ``backend=``.

    An exception ``fn`` raises is re-raised by the next ``synchronize()`` of that stream."""
    b, _ = resolve((), backend=backend, streams=(stream,), what="eagle.host_func")
    return _memory.host_func(b, fn, stream=stream)


def fence(producer, consumer, *, backend=None, device_type=None, device_id=0):
    """Order ``consumer`` after the work enqueued so far on ``producer`` without blocking the
    host. Streams are DLPack stream codes, eagle streams or foreign streams; None means "no
    stream given". The backend is the eagle streams' own, else the kind serving ``device_type``,
    else ``backend=``."""
    if device_type is not None:
        device_type = _validate.integer(device_type, "eagle.fence: device_type (a DLPack device type code)",
                                        minimum=0, maximum=_validate.INT32_MAX)
    device_id = _validate.integer(device_id, "eagle.fence: device_id", minimum=0, maximum=_validate.INT32_MAX)
    if backend is None and device_type is not None:
        backend = open_backend(kind_of_device_type(device_type))
    b, _ = resolve((), backend=backend, streams=(producer, consumer), what="eagle.fence")
    return _interop.fence(b, producer, consumer, device_type, device_id)


def _named_backend(backend, what):
    """A call with no arrays to name its backend needs ``backend=``: there is no default kind."""
    if backend is None:
        raise EagleValueError(f"{what}: give backend= (a kind such as 'cpu' or 'cuda', 'gpu', a library "
                              "path, or an eagle.Backend): no array names one, and there is no default kind")
    return open_backend(backend)


def compile(source, *, backend=None, **kw):
    """Compile ``source`` for ``backend`` with the kind's own compiler and load it as a
    :class:`eagle.Module`; see :func:`eagle.module.compile` for the keywords."""
    return _module.compile(_named_backend(backend, "eagle.compile"), source, **kw)


def load_image(image, *, backend=None, **kw):
    """Load a binary image the kind understands as a :class:`eagle.Module`; see
    :func:`eagle.module.load_image`."""
    return _module.load_image(_named_backend(backend, "eagle.load_image"), image, **kw)


def empty(shape, dtype="float64", *, backend=None, device=0):
    """An uninitialised :class:`eagle.DeviceArray` of ``backend``'s ``device``."""
    return _array.empty(_named_backend(backend, "eagle.empty"), shape, dtype, device=device)


def zeros(shape, dtype="float64", *, backend=None, device=0):
    """A zero-filled :class:`eagle.DeviceArray` of ``backend``'s ``device``."""
    return _array.zeros(_named_backend(backend, "eagle.zeros"), shape, dtype, device=device)


def asarray(obj, dtype=None, *, backend=None, device=0):
    """A :class:`eagle.DeviceArray` of ``backend`` holding a copy of ``obj``. With no backend, an
    array that says where it lives (DLPack) names it."""
    if backend is None and hasattr(obj, "__dlpack_device__"):
        backend, _ = resolve((obj,), what="eagle.asarray")
    return _array.asarray(_named_backend(backend, "eagle.asarray"), obj, dtype, device=device)
