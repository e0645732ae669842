"""Checks of the ``attribution`` group: the node snapshot of a capture, and toggleable nodes toggle."""
import numpy as np

from ..._seam_ffi import ffi
from .._registry import CheckFailure
from .._seam import status_name
from ._helpers import COND, Objects, bcheck, captured_of, conditional_of, expect_equal, launcher_of, replay


@bcheck("attribution.snapshot_nodes", needs=("stream", "capturer", "captured", "exec"))
def attribution_snapshot(s):
    """snapshot_nodes lists the nodes recorded so far in order (freed with free); outside a
    capture it is INVALID_ARGUMENT; is_node_toggleable answers 0 or 1."""
    mem = s.device()
    x = mem.zeros(4, np.int64)
    with Objects(s) as o:
        h, raw = o.stream()
        nodes, count = ffi.new("uint64_t**"), ffi.new("int64_t*")
        s.expect("capture_snapshot_nodes", "INVALID_ARGUMENT", raw, nodes, count, why="not capturing")
        seen = []

        def record():
            for i in range(3):
                s.ok("capture_snapshot_nodes", raw, nodes, count)
                got = [int(nodes[0][j]) for j in range(count[0])]
                s.raw("free", nodes[0])
                if got[:len(seen)] != seen or len(got) != i:
                    raise CheckFailure(f"snapshot after {i} kernels lists {len(got)} nodes {got}; "
                                       f"expected {i}, starting with {seen}")
                if i:
                    seen.append(got[-1])
                s.launch("affine", raw, [x.addr, 1, 1, 0], 4)
            s.ok("capture_snapshot_nodes", raw, nodes, count)
            got = [int(nodes[0][j]) for j in range(count[0])]
            s.raw("free", nodes[0])
            if len(got) != 3 or len(set(got)) != 3:
                raise CheckFailure(f"snapshot after 3 kernels: {got}")
            flag = ffi.new("int32_t*", -1)
            s.ok("is_node_toggleable", got[-1], flag)
            if flag[0] not in (0, 1):
                raise CheckFailure(f"is_node_toggleable wrote {flag[0]}")

        s.raw("captured_release", captured_of(s, raw, record))


@bcheck("attribution.toggleable_means_toggles", needs=COND + ("attribution",))
def attribution_toggleable_means_toggles(s):
    """is_node_toggleable says 1 exactly for the nodes launcher_set_node_enabled can switch: for a
    kernel node and a conditional node of one capture, a 1 means disabling it works (its work does
    not run in the next replay) and a 0 means set_node_enabled refuses it."""
    mem = s.device()
    n = 4
    x, y = mem.zeros(n, np.int64), mem.zeros(n, np.int64)
    count = mem.array([1], np.uint32)
    nodes, cnt = ffi.new("uint64_t**"), ffi.new("int64_t*")
    with Objects(s) as o:
        h, raw = o.stream()
        got = {}

        def record():
            s.launch("affine", raw, [x.addr, 1, 1, 0], n)                    # a kernel node: x += 1
            c = conditional_of(s, o, raw, count)                              # an IF node: y += 1
            body = ffi.new("uint64_t*")
            s.ok("conditional_begin", c, body)
            s.launch("affine", int(body[0]), [y.addr, 1, 1, 0], n)
            s.ok("conditional_end", c)
            s.ok("capture_snapshot_nodes", raw, nodes, cnt)
            got["nodes"] = [int(nodes[0][j]) for j in range(cnt[0])]
            s.raw("free", nodes[0])

        lau = o.add("launcher_release", launcher_of(s, captured_of(s, raw, record), raw))
        if len(got["nodes"]) < 2:
            raise CheckFailure(f"snapshot after a kernel and an IF lists {len(got['nodes'])} node(s)")
        kernel_node, cond_node = got["nodes"][0], got["nodes"][-1]
        flag = ffi.new("int32_t*")
        said = []
        for what, node, arr in (("kernel", kernel_node, x), ("conditional", cond_node, y)):
            s.ok("is_node_toggleable", node, flag)
            t = int(flag[0])
            said.append(f"{what} {t}")
            st = s.raw("launcher_set_node_enabled", lau, node, 0)
            if t == 1:
                if st:
                    raise CheckFailure(f"is_node_toggleable = 1 for the {what} node, but set_node_enabled(0) "
                                       f"returned {status_name(st)}: {s.last_error()!r}")
                before = arr.get()
                replay(s, lau)
                expect_equal(f"the disabled {what} node's work (it must do nothing)", arr.get(), before)
                s.ok("launcher_set_node_enabled", lau, node, 1)
            elif st == 0:
                s.ok("launcher_set_node_enabled", lau, node, 1)
                raise CheckFailure(f"is_node_toggleable = 0 for the {what} node, but set_node_enabled switched it")
        replay(s, lau)
    return ", ".join(said)


@bcheck("attribution.empty_snapshot", needs=("stream", "capturer", "captured"))
def attribution_empty_snapshot(s):
    """A snapshot of a capture that has recorded nothing has count 0 and *nodes NULL (the caller's
    old pointer is not left there)."""
    s.need_device()
    stale = ffi.new("uint64_t[1]", [0xDEAD])
    nodes, count = ffi.new("uint64_t**", stale), ffi.new("int64_t*", -1)
    with Objects(s) as o:
        h, raw = o.stream()

        def record():
            s.ok("capture_snapshot_nodes", raw, nodes, count)

        cap_out = captured_of(s, raw, record)
        s.raw("captured_release", cap_out)
    if count[0] != 0:
        if nodes[0] != ffi.NULL and nodes[0] != stale:
            s.raw("free", nodes[0])
        raise CheckFailure(f"a snapshot of a capture with nothing recorded has count {count[0]}")
    if nodes[0] != ffi.NULL:
        if nodes[0] != stale:
            s.raw("free", nodes[0])
        raise CheckFailure("a snapshot with count 0 left *nodes " + ("as the caller had it" if nodes[0] == stale
                                                                    else "pointing to a buffer") + "; it is NULL")
    return "count 0, nodes NULL"
