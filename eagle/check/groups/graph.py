"""Checks of the ``graph`` group: nodes added by hand and from a capture, the stream a graph orders
on, and the general rules (bad handles, NULL outs)."""
import numpy as np

from ..._seam_ffi import ffi
from .._registry import CheckFailure
from .._seam import status_name
from ._helpers import (CAPTURE, OPS, Objects, SLOW_US, UNKNOWN_FLAG, bcheck, captured_of, chain, chain_numpy,
                       expect_equal, refused, release_null_check, replay, unknown_flags_check)


release_null_check("graph", "graph_release")


@unknown_flags_check("graph", "graph_desc.flags")
def _graph_flags(s):
    d = ffi.new("struct eagle_backend_graph_desc*", {"struct_size": 16, "flags": UNKNOWN_FLAG, "device": -1})
    out = ffi.new("eagle_backend_graph*")
    return refused(s, "graph_create", s.raw("graph_create", d, out),
                   lambda: s.raw("graph_release", out[0]))


@bcheck("graph.add_node_chain", needs=CAPTURE)
def graph_add_node_chain(s):
    """graph_create + graph_add_node append captured pieces in order (graph_last_node counts
    them); the launcher outlives the graph."""
    mem = s.device()
    n = 16
    x = mem.array(np.arange(n), np.int64)
    with Objects(s) as o:
        h, raw = o.stream()
        d = ffi.new("struct eagle_backend_graph_desc*", {"struct_size": 16, "device": -1})
        g = ffi.new("eagle_backend_graph*")
        s.ok("graph_create", d, g)
        last = ffi.new("int64_t*", 99)
        try:
            s.ok("graph_last_node", g[0], last)
            if last[0] != -1:
                raise CheckFailure(f"graph_last_node = {last[0]} for an empty graph (expected -1)")
            lau = ffi.new("eagle_backend_launcher*")
            s.expect("graph_launcher", "INVALID_ARGUMENT", g[0], lau, why="empty graph")
            for i, ops in enumerate((OPS[:2], OPS[2:])):
                captured = captured_of(s, raw, lambda ops=ops: chain(s, raw, x, n, ops))
                st = s.raw("graph_add_node", g[0], captured)
                if st:
                    s.raw("captured_release", captured)
                    raise CheckFailure(f"graph_add_node failed with {st}: {s.last_error()!r}")
                s.ok("graph_last_node", g[0], last)
                if last[0] != i:
                    raise CheckFailure(f"graph_last_node = {last[0]} after {i + 1} nodes")
            s.ok("graph_stream", g[0], raw)
            s.ok("graph_launcher", g[0], lau)
            o.add("launcher_release", lau[0])
        finally:
            s.raw("graph_release", g[0])
        replay(s, lau[0], 2)
        expect_equal("x after 2 replays of a two-node graph (graph released)", x.get(),
                     chain_numpy(np.arange(n), OPS, 2))


@bcheck("graph.empty_capture_refused", needs=("stream", "capturer", "captured"))
def graph_empty_capture(s):
    """graph_from_captured and graph_add_node refuse an empty capture with INVALID_ARGUMENT and
    leave it owned by the caller."""
    s.need_device()
    with Objects(s) as o:
        h, raw = o.stream()
        empty = o.add("captured_release", captured_of(s, raw, lambda: None))
        g = ffi.new("eagle_backend_graph*")
        s.expect("graph_from_captured", "INVALID_ARGUMENT", empty, g, why="empty capture")
        d = ffi.new("struct eagle_backend_graph_desc*", {"struct_size": 16, "device": -1})
        s.ok("graph_create", d, g)
        o.add("graph_release", g[0])
        s.expect("graph_add_node", "INVALID_ARGUMENT", g[0], empty, why="empty capture")


@bcheck("graph.last_node_from_captured", needs=CAPTURE)
def graph_last_node_from_captured(s):
    """A graph made from a one-node capture has its last node at index 0; a node appended with
    graph_add_node is index 1."""
    mem = s.device()
    x = mem.zeros(4, np.int64)
    with Objects(s) as o:
        h, raw = o.stream()
        g = ffi.new("eagle_backend_graph*")
        captured = captured_of(s, raw, lambda: chain(s, raw, x, 4, OPS[:1]))
        st = s.raw("graph_from_captured", captured, g)
        if st:
            s.raw("captured_release", captured)
            raise CheckFailure(f"graph_from_captured failed with {st}: {s.last_error()!r}")
        o.add("graph_release", g[0])
        last = ffi.new("int64_t*", 99)
        s.ok("graph_last_node", g[0], last)
        if last[0] != 0:
            raise CheckFailure(f"graph_last_node = {last[0]} for a graph made from a one-node capture (expected 0)")
        more = captured_of(s, raw, lambda: chain(s, raw, x, 4, OPS[1:2]))
        st = s.raw("graph_add_node", g[0], more)
        if st:
            s.raw("captured_release", more)
            raise CheckFailure(f"graph_add_node failed with {st}: {s.last_error()!r}")
        s.ok("graph_last_node", g[0], last)
        if last[0] != 1:
            raise CheckFailure(f"graph_last_node = {last[0]} after one graph_add_node (expected 1)")


@bcheck("graph.stream_orders", needs=CAPTURE)
def graph_stream_orders(s):
    """Launchers of a graph launch on the stream graph_stream set: a replay follows the work
    enqueued before it on that (non-blocking) stream."""
    mem = s.device()
    x, y = mem.zeros(1, np.int64), mem.array([1], np.int64)
    with Objects(s) as o:
        h, raw = o.stream(flags=1)
        h2, raw2 = o.stream(flags=1)
        captured = captured_of(s, raw, lambda: s.launch("accum", raw, [y.addr, x.addr, 0], 1))
        g = ffi.new("eagle_backend_graph*")
        st = s.raw("graph_from_captured", captured, g)
        if st:
            s.raw("captured_release", captured)
            raise CheckFailure(f"graph_from_captured failed with {st}: {s.last_error()!r}")
        try:
            s.ok("graph_stream", g[0], raw2)
            lau = ffi.new("eagle_backend_launcher*")
            s.ok("graph_launcher", g[0], lau)
            o.add("launcher_release", lau[0])
        finally:
            s.raw("graph_release", g[0])
        s.launch("affine", raw2, [x.addr, 0, 7, SLOW_US], 1)
        s.ok("launcher_launch", lau[0])
        s.ok("launcher_synchronize", lau[0])
        s.sync(h2)
        expect_equal("y after a replay on the graph's stream behind a slow x = 7", y.get(), [1 * 3 + 7])


@bcheck("graph.add_node_after_last", needs=CAPTURE)
def graph_add_node_after_last(s):
    """A node appended with graph_add_node runs after the graph's last node: a slow first node's
    write is seen by the second."""
    mem = s.device()
    x, y = mem.zeros(1, np.int64), mem.array([1], np.int64)
    with Objects(s) as o:
        h, raw = o.stream()
        d = ffi.new("struct eagle_backend_graph_desc*", {"struct_size": 16, "device": -1})
        g = ffi.new("eagle_backend_graph*")
        s.ok("graph_create", d, g)
        lau = ffi.new("eagle_backend_launcher*")
        try:
            for record in (lambda: s.launch("affine", raw, [x.addr, 0, 7, SLOW_US], 1),
                           lambda: s.launch("accum", raw, [y.addr, x.addr, 0], 1)):
                captured = captured_of(s, raw, record)
                st = s.raw("graph_add_node", g[0], captured)
                if st:
                    s.raw("captured_release", captured)
                    raise CheckFailure(f"graph_add_node failed with {status_name(st)}: {s.last_error()!r}")
            s.ok("graph_stream", g[0], raw)
            s.ok("graph_launcher", g[0], lau)
            o.add("launcher_release", lau[0])
        finally:
            s.raw("graph_release", g[0])
        replay(s, lau[0])
        expect_equal("y after a replay: node 2 (y = y*3 + x) after node 1 (a slow x = 7)", y.get(), [1 * 3 + 7])


@bcheck("graph.bad_handle", advice=True)
def graph_bad_handle(s):
    """A released graph is BAD_HANDLE."""
    s.need_device()
    d = ffi.new("struct eagle_backend_graph_desc*", {"struct_size": 16, "device": -1})
    g = ffi.new("eagle_backend_graph*")
    s.ok("graph_create", d, g)
    s.raw("graph_release", g[0])
    last = ffi.new("int64_t*")
    s.expect("graph_last_node", "BAD_HANDLE", g[0], last, why="a released graph")
    s.expect("graph_stream", "BAD_HANDLE", g[0], 0, why="a released graph")
    lau = ffi.new("eagle_backend_launcher*")
    s.expect("graph_launcher", "BAD_HANDLE", g[0], lau, why="a released graph")


@bcheck("graph.null_out")
def graph_null_out(s):
    """NULL out-parameters of the graph group are INVALID_ARGUMENT."""
    s.need_device()
    d = ffi.new("struct eagle_backend_graph_desc*", {"struct_size": 16, "device": -1})
    s.expect("graph_create", "INVALID_ARGUMENT", d, ffi.NULL, why="out is NULL")
    g = ffi.new("eagle_backend_graph*")
    s.ok("graph_create", d, g)
    try:
        s.expect("graph_last_node", "INVALID_ARGUMENT", g[0], ffi.NULL, why="index is NULL")
    finally:
        s.raw("graph_release", g[0])
