"""The factories and per-backend state of :class:`eagle.Backend`: one method per seam object."""


class BackendAPI:
    """Mixed into :class:`eagle.Backend`. Each method creates one seam object on this backend."""

    def _init_state(self):
        self._capturing = {}        # raw stream -> Capture recording it (fork branches, bodies too)
        self._host_errors = []      # exceptions raised by host functions, re-raised at synchronize
        self._pending_calls = set() # eager host functions not yet run (kept alive until they run)

    def _forget_capture(self, capture):
        for raw in [r for r, c in self._capturing.items() if c is capture]:
            del self._capturing[raw]

    def _raise_host_error(self):
        exc = self._host_errors.pop(0)
        raise exc

    # -- streams and capture ------------------------------------------------------------------
    def stream(self, device=-1, non_blocking=False):
        """A new :class:`eagle.Stream` on ``device`` (-1: the current device)."""
        from .stream import Stream
        return Stream(self, device, non_blocking)

    def stream_ref(self, raw):
        """Borrow a raw stream value of this kind (not released by eagle)."""
        from .stream import StreamRef
        return StreamRef(self, raw)

    def capture(self, stream, device=-1):
        """A :class:`eagle.Capture` of ``stream``; use ``with`` to record."""
        from .capture import Capture
        return Capture(self, stream, device)

    def fork(self, origin, branch_count, device=-1):
        """A :class:`eagle.Fork` of ``branch_count`` branches beside ``origin``."""
        from .fork import Fork
        return Fork(self, origin, branch_count, device)

    # -- conditionals -------------------------------------------------------------------------
    def if_(self, origin, count, baseline=None, device=-1):
        """Record an IF on the captured ``origin``: the body runs iff ``*count != *baseline``."""
        from .conditional import Conditional
        return Conditional(self, origin, count, baseline, device=device)

    def while_(self, origin, count, counter, loop_cap, baseline=None, device=-1):
        """Record a WHILE: at most ``loop_cap`` iterations while ``*count != *baseline``;
        ``counter`` is the device ``uint32[2]`` cell ``[remaining, ran]``."""
        from .conditional import Conditional
        return Conditional(self, origin, count, baseline, counter, loop_cap, device=device)

    def switch(self, origin, selector, case_count, device=-1):
        """Record a SWITCH: case ``*selector`` runs (none when >= case_count)."""
        from .conditional import Conditional
        return Conditional(self, origin, selector, case_count=case_count, device=device)

    # -- graphs ---------------------------------------------------------------------------------
    def graph(self, device=-1):
        """An empty :class:`eagle.GraphBuilder`, built node by node."""
        from .graph import GraphBuilder
        return GraphBuilder.empty(self, device)

    def graph_from_captured(self, captured):
        """A :class:`eagle.GraphBuilder` made of ``captured`` (consumed)."""
        from .graph import GraphBuilder
        return GraphBuilder.from_captured(captured)

    def snapshot_nodes(self, stream):
        """Raw nodes recorded so far by the capture on ``stream``."""
        from .graph import snapshot_nodes
        return snapshot_nodes(self, stream)

    def is_node_toggleable(self, node):
        from .graph import is_node_toggleable
        return is_node_toggleable(self, node)

    # -- exec, device, interop --------------------------------------------------------------------
    def run(self, kernel, args, n, **kw):
        """Launch ``kernel`` over lanes; see :func:`eagle.run`."""
        from .exec import run
        return run(kernel, args, n, backend=self, **kw)

    def device_props(self, device=0):
        """:class:`eagle.DeviceProps` of ``device``."""
        from .device import device_props
        return device_props(self, device)

    def fence(self, producer, consumer, device_type=None, device_id=0):
        """Order ``consumer`` after ``producer``'s work so far (DLPack stream codes)."""
        from .interop import fence
        return fence(self, producer, consumer, device_type, device_id)

    @property
    def event_pool_created(self):
        from .interop import event_pool_created
        return event_pool_created(self)

    # -- memory -------------------------------------------------------------------------------------
    def copy(self, dst, src, nbytes=None, *, stream=None, direction=None):
        from .memory import copy
        return copy(dst, src, nbytes, stream=stream, backend=self, direction=direction)

    def pinned(self, shape, dtype="float64"):
        from .memory import pinned
        return pinned(shape, dtype, backend=self)

    def host_func(self, fn, *, stream=None):
        from .memory import host_func
        return host_func(fn, stream=stream, backend=self)

    # -- kernels and device memory (minor 7) -----------------------------------------------------
    def compile(self, source, **kw):
        """A :class:`eagle.Module` of ``source`` compiled for this backend; see :func:`eagle.compile`."""
        from .module import compile as _compile
        return _compile(source, backend=self, **kw)

    def load_image(self, image, **kw):
        """A :class:`eagle.Module` of a binary image; see :func:`eagle.load_image`."""
        from .module import load_image
        return load_image(image, backend=self, **kw)

    def empty(self, shape, dtype="float64", device=0):
        """An uninitialised :class:`eagle.DeviceArray` on this backend's ``device``."""
        from .array import empty
        return empty(shape, dtype, backend=self, device=device)

    def zeros(self, shape, dtype="float64", device=0):
        from .array import zeros
        return zeros(shape, dtype, backend=self, device=device)

    def asarray(self, obj, dtype=None, device=0):
        from .array import asarray
        return asarray(obj, dtype, backend=self, device=device)

    # -- filtering ------------------------------------------------------------------------------------
    def compact_scratch_bytes(self, n, **kw):
        from .filtering import compact_scratch_bytes
        return compact_scratch_bytes(self, n, **kw)

    def compact(self, mask, index_map, count, scratch, **kw):
        from .filtering import compact
        return compact(self, mask, index_map, count, scratch, **kw)

    def reorder_scratch_bytes(self, n, **kw):
        from .filtering import reorder_scratch_bytes
        return reorder_scratch_bytes(self, n, **kw)

    def reorder(self, planes, mask, perm, inv, span, scratch, **kw):
        from .filtering import reorder
        return reorder(self, planes, mask, perm, inv, span, scratch, **kw)
