"""Graph builders and launchers (seam objects): recorded work made replayable.

:class:`GraphBuilder` holds a graph (from one capture, or built node by node from several);
:meth:`GraphBuilder.launcher` instantiates it into a :class:`Launcher` that replays it."""
from _thread import get_ident

from . import _hotcall
from ._handle import Owner
from ._inflight import attention_list
from ._seam_ffi import ffi
from .errors import EagleTypeError, EagleValueError
from ._stream_arg import raw_stream


class GraphBuilder(Owner):
    """A graph of recorded work. Consumes the :class:`Captured` objects given to it."""

    __slots__ = ("keepalive",)
    _what = "graph"

    def __init__(self, backend, handle, keepalive=()):
        self._own(backend, handle, "graph_release")
        self.keepalive = list(keepalive)

    @classmethod
    def empty(cls, backend, device=-1):
        desc = ffi.new("struct eagle_backend_graph_desc*")
        desc.struct_size = ffi.sizeof(desc[0])
        desc.device = device
        out = ffi.new("eagle_backend_graph*")
        backend.call.graph_create(desc, out)
        return cls(backend, out[0])

    @classmethod
    def from_captured(cls, captured):
        b = captured._backend
        out = ffi.new("eagle_backend_graph*")
        b.call.graph_from_captured(captured._live(), out)
        captured._consumed("graph_from_captured")
        return cls(b, out[0], captured.keepalive)

    def add(self, captured):
        """Append ``captured`` as one node after the last (consumes it)."""
        b = self._backend
        b.call.graph_add_node(self._live(), captured._live())
        captured._consumed("GraphBuilder.add")
        self.keepalive.extend(captured.keepalive)

    def set_stream(self, stream):
        """The stream launchers made from now on launch on."""
        b = self._backend
        b.call.graph_stream(self._live(), raw_stream(b, stream))

    @property
    def last_node(self):
        """Index of the last node added, -1 when none."""
        b = self._backend
        out = ffi.new("int64_t*")
        b.call.graph_last_node(self._live(), out)
        return int(out[0])

    def launcher(self):
        """An executable instance of the graph as it is now."""
        b = self._backend
        out = ffi.new("eagle_backend_launcher*")
        b.call.graph_launcher(self._live(), out)
        return Launcher(b, out[0], self.keepalive)


class Launcher(Owner):
    """Replays a graph.

    ``launch(n=1)`` enqueues ``n`` replays and returns without waiting (the first failing replay
    raises); ``synchronize()`` waits for them and raises what a host function in the graph raised,
    if any. Both are bound calls (eagle/_hotcall/__init__.py): no Python frame between the caller and the
    backend, and ``launch(n)`` makes its n replays in one call.

    The GIL: a graph with no Python host function in it is launched with the GIL kept while no
    Python host function is pending anywhere in eagle (``GIL_WHEN_QUIET``); a graph with some
    releases it and counts its launches as pending until ``synchronize()`` (``GIL_COUNTED``)."""

    # _cancel_stream, _cancel_sets: the stream it replays on and the ActiveSets whose drains its
    # graph recorded (weak references), for eagle/_inflight/cancel.py
    __slots__ = ("keepalive", "launch", "synchronize", "runs_python", "_cancel_stream", "_cancel_sets")
    _what = "launcher"

    def __init__(self, backend, handle, keepalive):
        self._own(backend, handle, "launcher_release", query="launcher_query")
        self.keepalive = list(keepalive)
        #: whether a replay runs Python: a host function recorded into the graph
        self.runs_python = holds_python_host_calls(self.keepalive)
        gil = _hotcall.GIL_COUNTED if self.runs_python else _hotcall.GIL_WHEN_QUIET
        self.launch = self._bind("launcher_launch", counted=True, gil=gil)
        self.synchronize = self._bind("launcher_synchronize", watch=attention_list(backend, get_ident()),
                                      partner=0 if self.runs_python else None, query="launcher_query")

    def _hot_bad_args(self, symbol, args):
        """``launch(n)`` with an ``n`` that is no int >= 0; else as for every bound call."""
        if symbol == "eagle_backend_launcher_launch" and isinstance(args, tuple) and len(args) == 1:
            n = args[0]
            if isinstance(n, int) and not isinstance(n, bool):
                raise EagleValueError(f"eagle: Launcher.launch(n): n must be >= 0, got {n}")
            raise EagleTypeError(f"eagle: Launcher.launch(n): n must be an int, got {type(n).__name__}")
        super()._hot_bad_args(symbol, args)

    def set_stream(self, stream):
        b = self._backend
        raw = raw_stream(b, stream)
        b.call.launcher_stream(self._live(), raw)
        self._cancel_stream = int(raw)

    def set_logical_size(self, size):
        """Run whole-run kernel nodes over ``size`` lanes from now on (``-1`` restores)."""
        b = self._backend
        b.call.launcher_set_logical_size(self._live(), int(size))

    @property
    def kernel_node_count(self):
        b = self._backend
        out = ffi.new("int64_t*")
        b.call.launcher_kernel_node_count(self._live(), out)
        return int(out[0])

    def set_node_enabled(self, node, enabled=True):
        """Switch a node (from :func:`snapshot_nodes`) on or off for later replays."""
        b = self._backend
        b.call.launcher_set_node_enabled(self._live(), int(node), 1 if enabled else 0)


def holds_python_host_calls(keepalive):
    """Whether the objects a recording keeps alive include a Python host function: anything
    with a true ``runs_python_on_host`` (eagle/_inflight/host_calls.py), looked for through lists,
    tuples, sets and dicts and through the ``keepalive`` of graphs and launchers kept there."""
    seen, todo = set(), [keepalive]
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if getattr(type(x), "runs_python_on_host", False):
            return True
        if isinstance(x, (list, tuple, set, frozenset)):
            todo.extend(x)
        elif isinstance(x, dict):
            todo.extend(x.values())
        elif isinstance(x, (GraphBuilder, Launcher)):
            todo.append(x.keepalive)
    return False


def snapshot_nodes(backend, stream):
    """The raw nodes recorded so far by the capture on ``stream``, in record order."""
    nodes = ffi.new("uint64_t**")
    count = ffi.new("int64_t*")
    backend.call.capture_snapshot_nodes(raw_stream(backend, stream), nodes, count)
    try:
        return [int(nodes[0][i]) for i in range(int(count[0]))]
    finally:
        backend._f.free(nodes[0])


def is_node_toggleable(backend, node):
    out = ffi.new("int32_t*")
    backend.call.is_node_toggleable(int(node), out)
    return bool(out[0])
