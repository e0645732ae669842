"""``eagle.Backend``: an opened backend library and the factories of its seam objects.

This module sits above the seam objects (it imports them; they never import it) and below the
program layer. :func:`backend` opens a backend by kind, ``'gpu'`` or path; which backend a call
on arrays uses is decided by :func:`eagle._resolve.resolve`, never by a default kind."""
from . import _loader
from ._inflight import submit
from . import array as _array
from . import capture as _capture
from . import conditional as _conditional
from . import device as _device
from . import exec as _exec
from . import filtering as _filtering
from . import fork as _fork
from . import interop as _interop
from . import launcher as _launcher
from . import memory as _memory
from . import module as _module
from . import stream as _stream


class Backend(_loader.Library):
    """One opened backend library; get it from :func:`eagle.backend`. Each method below creates
    one seam object on this backend or issues one piece of work on it."""

    # -- streams and capture ------------------------------------------------------------------
    def stream(self, device=-1, non_blocking=False):
        """A new :class:`eagle.Stream` on ``device`` (-1: the current device)."""
        return _stream.Stream(self, device, non_blocking)

    def capture(self, stream, device=-1):
        """A :class:`eagle.Capture` of ``stream``; use ``with`` to record."""
        return _capture.Capture(self, stream, device)

    def fork(self, origin, branch_count, device=-1):
        """A :class:`eagle.Fork` of ``branch_count`` branches beside ``origin``."""
        return _fork.Fork(self, origin, branch_count, device)

    # -- conditionals (the seam's words: IF, WHILE, SWITCH) --------------------------------------
    def if_(self, origin, count, baseline=None, device=-1):
        """Record an IF on the captured ``origin``: the body runs iff ``*count != *baseline``."""
        return _conditional.Conditional(self, origin, count, baseline, device=device)

    def while_(self, origin, count, counter, loop_cap, baseline=None, device=-1):
        """Record a WHILE: at most ``loop_cap`` iterations while ``*count != *baseline``;
        ``counter`` is the device ``uint32[2]`` cell ``[remaining, ran]``."""
        return _conditional.Conditional(self, origin, count, baseline, counter, loop_cap, device=device)

    def switch(self, origin, selector, case_count, device=-1):
        """Record a SWITCH: case ``*selector`` runs (none when >= case_count)."""
        return _conditional.Conditional(self, origin, selector, case_count=case_count, device=device)

    # -- graphs ---------------------------------------------------------------------------------
    def graph(self, device=-1):
        """An empty :class:`eagle.GraphBuilder`, built node by node."""
        return _launcher.GraphBuilder.empty(self, device)

    def graph_from_captured(self, captured):
        """A :class:`eagle.GraphBuilder` made of ``captured`` (consumed)."""
        return _launcher.GraphBuilder.from_captured(captured)

    def snapshot_nodes(self, stream):
        """Raw nodes recorded so far by the capture on ``stream``."""
        return _launcher.snapshot_nodes(self, stream)

    def is_node_toggleable(self, node):
        """True when ``node`` (from :meth:`snapshot_nodes`) can be switched on and off."""
        return _launcher.is_node_toggleable(self, node)

    # -- exec, device, interop --------------------------------------------------------------------
    def run(self, kernel, args, n, *, stream=None, **kw):
        """Launch ``kernel`` over lanes on this backend; see :func:`eagle.run` (no stream: done
        on eagle's own stream before this returns)."""
        return submit(self, stream, _exec.enqueue_run, kernel, args, n, **kw)

    def device_props(self, device=0):
        """:class:`eagle.DeviceProps` of ``device``."""
        return _device.device_props(self, device)

    def fence(self, producer, consumer, device_type=None, device_id=0):
        """Order ``consumer`` after ``producer``'s work so far (DLPack stream codes)."""
        return _interop.fence(self, producer, consumer, device_type, device_id)

    @property
    def event_pool_created(self):
        """Events the backend's interop pool has created so far."""
        return _interop.event_pool_created(self)

    # -- memory -------------------------------------------------------------------------------------
    def copy(self, dst, src, nbytes=None, *, stream=None, direction=None):
        """Copy in stream order on this backend; see :func:`eagle.copy` (no stream: done on
        eagle's own stream before this returns)."""
        return submit(self, stream, _memory.enqueue_copy, dst, src, nbytes, direction=direction)

    def pinned(self, shape, dtype="float64"):
        """Page-locked host memory of this backend as a numpy array; see :func:`eagle.pinned`."""
        return _memory.pinned(self, shape, dtype)

    def host_func(self, fn, *, stream=None):
        """Run ``fn()`` in stream order on this backend; see :func:`eagle.host_func`."""
        return _memory.host_func(self, fn, stream=stream)

    # -- kernels and device memory (seam minor 7) -------------------------------------------------
    def compile(self, source, **kw):
        """A :class:`eagle.Module` of ``source`` compiled for this backend; see :func:`eagle.compile`."""
        return _module.compile(self, source, **kw)

    def load_image(self, image, **kw):
        """A :class:`eagle.Module` of a binary image; see :func:`eagle.load_image`."""
        return _module.load_image(self, image, **kw)

    def empty(self, shape, dtype="float64", device=0):
        """An uninitialised :class:`eagle.DeviceArray` on this backend's ``device``."""
        return _array.empty(self, shape, dtype, device=device)

    def zeros(self, shape, dtype="float64", device=0):
        """A zero-filled :class:`eagle.DeviceArray` on this backend's ``device``."""
        return _array.zeros(self, shape, dtype, device=device)

    def asarray(self, obj, dtype=None, device=0):
        """A :class:`eagle.DeviceArray` on this backend holding a copy of ``obj``."""
        return _array.asarray(self, obj, dtype, device=device)

    # -- filtering ------------------------------------------------------------------------------------
    def compact_scratch_bytes(self, n, **kw):
        """Scratch bytes :meth:`compact` of ``n`` samples needs."""
        return _filtering.compact_scratch_bytes(self, n, **kw)

    def compact(self, mask, index_map, count, scratch, *, stream=None, **kw):
        """A compaction on ``stream``; see :func:`eagle.compact` (no stream: done on eagle's own
        stream before this returns)."""
        return submit(self, stream, _filtering.enqueue_compact, mask, index_map, count, scratch, **kw)

    def reorder_scratch_bytes(self, n, **kw):
        """Scratch bytes :meth:`reorder` of ``n`` samples needs."""
        return _filtering.reorder_scratch_bytes(self, n, **kw)

    def reorder(self, planes, mask, perm, inv, span, scratch, *, stream=None, **kw):
        """A reorder on ``stream``; see :func:`eagle.filtering.enqueue_reorder` (no stream: done
        on eagle's own stream before this returns)."""
        return submit(self, stream, _filtering.enqueue_reorder, planes, mask, perm, inv, span, scratch, **kw)


def backend(name, *, trace=None):
    """The :class:`Backend` named by a kind (``'cpu'``, ``'cuda'``, ...), ``'gpu'`` (the one GPU
    kind installed) or a library path, opened once per path. A :class:`Backend` is returned as is.

    Raises :class:`eagle.BackendLoadError` when the library is refused and
    :class:`eagle.BackendUnavailable` when no such backend is installed."""
    if isinstance(name, Backend):
        return name
    return _loader.open_library(name, Backend, trace=trace)


def backends():
    """Every installed backend: kind -> absolute path, opening none of them."""
    return _loader.backends()
