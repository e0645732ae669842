"""Checks of the ``launcher`` group and of ``launcher_query`` (minor 8, extends launcher): replays,
the logical size, node toggles, release waits, the stream honoured, kernel-node counts, and the
general rules (bad handles, failed replays surface, releases free).

launcher_query is a launcher_synchronize that does not wait: right after a slow replay it answers
at once with done = 0; polled, it answers 1 once the replay's result is there (never before); the
rules are stream_query's (stream.py)."""
import numpy as np

from ..._seam_ffi import ffi
from .._registry import CheckFailure, Skip
from .._seam import STATUS
from .._seam import status_name
from ._helpers import (CAPTURE, COND, OPS, Capture, Objects, SLOW_US, answers_at_once, bcheck, captured_of, chain,
                       chain_numpy, conditional_of, enqueue_work, expect_equal, failed_work_queried, launcher_of,
                       measured_release, poll_until_done, recorded, release_null_check, replay)


release_null_check("launcher", "launcher_release")


@bcheck("launcher.replays_and_stream", needs=CAPTURE)
def launcher_replays(s):
    """Launches queue up without waiting; launcher_stream moves later launches to another
    stream; kernel_node_count counts the kernel nodes."""
    mem = s.device()
    n = 8
    x = mem.zeros(n, np.int64)
    with Objects(s) as o:
        h, raw = o.stream()
        h2, raw2 = o.stream()
        captured = captured_of(s, raw, lambda: chain(s, raw, x, n, OPS, delay_first=20_000))
        lau = o.add("launcher_release", launcher_of(s, captured, raw))
        cnt = ffi.new("int64_t*", -1)
        s.ok("launcher_kernel_node_count", lau, cnt)
        if cnt[0] != len(OPS):
            raise CheckFailure(f"launcher_kernel_node_count = {cnt[0]}, {len(OPS)} kernels were captured")
        for _ in range(4):
            s.ok("launcher_launch", lau)
        s.ok("launcher_synchronize", lau)   # the next replay goes to another stream: unordered
        expect_equal("x after 4 replays queued without waiting", x.get(), chain_numpy(np.zeros(n), OPS, 4))
        s.ok("launcher_stream", lau, raw2)
        s.ok("launcher_launch", lau)
        s.ok("launcher_synchronize", lau)
        s.sync(h)
        expect_equal("x after 5 replays (4 + 1 on another stream)", x.get(), chain_numpy(np.zeros(n), OPS, 5))


@bcheck("launcher.logical_size", needs=CAPTURE)
def launcher_logical_size(s):
    """set_logical_size(k) runs whole-run kernel nodes over k lanes with n_samples k; partial ones
    keep their partition and their n_samples; 0 is a size (no lane of a whole-run node runs);
    size < 0 restores; 2^31-1 is accepted and 2^31 is INVALID_ARGUMENT."""
    mem = s.device()
    n = 32
    x = mem.zeros(n, np.int64)
    y = mem.zeros(n, np.int64)
    with Objects(s) as o:
        h, raw = o.stream()

        def record():
            s.launch("stamp", raw, [x.addr], n)                                 # whole run
            s.launch("stamp", raw, [y.addr], n, base=4, count=4, n_samples=n)   # a partial launch

        lau = o.add("launcher_release", launcher_of(s, captured_of(s, raw, record), raw))
        want_x, want_y = np.zeros(n, np.int64), np.zeros(n, np.int64)
        for size in (10, 0, -1):
            s.ok("launcher_set_logical_size", lau, size)
            replay(s, lau)
            lanes = n if size < 0 else size
            want_x[:lanes] = want_x[:lanes] * 2 + (n if size < 0 else size)
            want_y[4:8] = want_y[4:8] * 2 + n
            what = "the recorded size restored (size -1)" if size < 0 else f"logical size {size}"
            expect_equal(f"x after a replay at {what} (lanes [0,{lanes}) with n_samples {lanes})", x.get(), want_x)
            expect_equal(f"y after a replay at {what} (a partial launch keeps its partition and n_samples {n})",
                         y.get(), want_y)
        s.ok("launcher_set_logical_size", lau, 2**31 - 1)
        s.ok("launcher_set_logical_size", lau, -1)
        s.expect("launcher_set_logical_size", "INVALID_ARGUMENT", lau, 2**31, why="size 2^31")


@bcheck("launcher.node_toggle", needs=CAPTURE + ("attribution",))
def launcher_node_toggle(s):
    """A node disabled with set_node_enabled does nothing in later replays, and runs again once
    re-enabled; a node of another capture is INVALID_ARGUMENT."""
    mem = s.device()
    n = 4
    x = mem.zeros(n, np.int64)
    nodes, count = ffi.new("uint64_t**"), ffi.new("int64_t*")
    with Objects(s) as o:
        h, raw = o.stream()
        got = {}

        def record():
            s.launch("affine", raw, [x.addr, 2, 1, 0], n)
            s.launch("affine", raw, [x.addr, 1, 100, 0], n)
            s.ok("capture_snapshot_nodes", raw, nodes, count)
            got["nodes"] = [int(nodes[0][j]) for j in range(count[0])]
            s.raw("free", nodes[0])

        lau = o.add("launcher_release", launcher_of(s, captured_of(s, raw, record), raw))
        other = {}

        def record_other():
            s.launch("affine", raw, [x.addr, 1, 0, 0], n)
            s.ok("capture_snapshot_nodes", raw, nodes, count)
            other["nodes"] = [int(nodes[0][j]) for j in range(count[0])]
            s.raw("free", nodes[0])

        s.raw("captured_release", captured_of(s, raw, record_other))
        second = got["nodes"][-1]
        flag = ffi.new("int32_t*")
        s.ok("is_node_toggleable", second, flag)
        st = s.raw("launcher_set_node_enabled", lau, second, 0)
        if not flag[0]:
            if st == STATUS["UNSUPPORTED"]:
                raise Skip("the backend says this node is not toggleable (is_node_toggleable = 0, "
                           "set_node_enabled UNSUPPORTED)")
            raise CheckFailure(f"is_node_toggleable = 0 but set_node_enabled returned {st}, expected UNSUPPORTED")
        if st:
            raise CheckFailure(f"launcher_set_node_enabled(0) returned {st}: {s.last_error()!r}")
        replay(s, lau)
        expect_equal("x with the second node disabled", x.get(), np.full(n, 1))
        s.ok("launcher_set_node_enabled", lau, second, 1)
        replay(s, lau)
        expect_equal("x with the node enabled again", x.get(), np.full(n, 103))
        if other["nodes"] and other["nodes"][0] not in got["nodes"]:
            s.expect("launcher_set_node_enabled", "INVALID_ARGUMENT", lau, other["nodes"][0], 0,
                     why="a node of another capture")


@bcheck("launcher.release_waits", needs=CAPTURE)
def launcher_release_waits(s):
    """launcher_release waits for the launcher's replays before releasing it."""
    mem = s.device()
    x = mem.zeros(4, np.int64)
    with Objects(s) as o:
        h, raw = o.stream(flags=1)
        captured = captured_of(s, raw, lambda: s.launch("affine", raw, [x.addr, 1, 3, SLOW_US], 4))
        lau = launcher_of(s, captured, raw)
        s.ok("launcher_launch", lau)
        s.raw("launcher_release", lau)
        expect_equal("x right after launcher_release (it must wait for the replay)", x.get(), np.full(4, 3))


@bcheck("launcher.stream_honoured", needs=CAPTURE)
def launcher_stream_honoured(s):
    """After launcher_stream(s2) a launch goes on s2: it follows the work enqueued on s2 before it."""
    mem = s.device()
    x, y = mem.zeros(1, np.int64), mem.array([1], np.int64)
    with Objects(s) as o:
        h, raw = o.stream(flags=1)
        h2, raw2 = o.stream(flags=1)
        captured = captured_of(s, raw, lambda: s.launch("accum", raw, [y.addr, x.addr, 0], 1))
        lau = o.add("launcher_release", launcher_of(s, captured, raw))
        s.ok("launcher_stream", lau, raw2)
        s.launch("affine", raw2, [x.addr, 0, 7, SLOW_US], 1)
        s.ok("launcher_launch", lau)
        s.ok("launcher_synchronize", lau)
        s.sync(h2)
        s.sync(h)
        expect_equal("y after a replay moved to s2 behind a slow x = 7 on s2", y.get(), [1 * 3 + 7])


@bcheck("launcher.kernel_count_bodies", needs=COND)
def launcher_kernel_count_bodies(s):
    """kernel_node_count counts the kernel nodes in conditional bodies too: an IF's body and every
    case of a SWITCH (where conditional_begin_case is provided)."""
    mem = s.device()
    n = 2
    x = mem.zeros(n, np.int64)
    sel = mem.zeros(1, np.uint32)
    switch = s.provides("conditional_begin_case")
    with Objects(s) as o:
        h, raw = o.stream()

        def k(stream):
            s.launch("affine", stream, [x.addr, 1, 1, 0], n)

        def record():
            k(raw)                                              # 1
            c = conditional_of(s, o, raw, sel)
            body = ffi.new("uint64_t*")
            s.ok("conditional_begin", c, body)
            k(int(body[0]))
            k(int(body[0]))                                     # 2 in the IF
            s.ok("conditional_end", c)
            if switch:
                c = conditional_of(s, o, raw, sel, case_count=3)
                for case, kernels in ((0, 1), (1, 2), (2, 1)):  # 4 in the cases
                    s.ok("conditional_begin_case", c, case, body)
                    for _ in range(kernels):
                        k(int(body[0]))
                s.ok("conditional_end", c)

        lau = o.add("launcher_release", launcher_of(s, captured_of(s, raw, record), raw))
        cnt = ffi.new("int64_t*", -1)
        s.ok("launcher_kernel_node_count", lau, cnt)
        want = 7 if switch else 3
        if cnt[0] != want:
            raise CheckFailure(f"launcher_kernel_node_count = {cnt[0]}; the capture has {want} kernel nodes "
                               "(1 outside, 2 in an IF" + (", 1 + 2 + 1 in three SWITCH cases" if switch else "")
                               + "), bodies included")
    return f"{want} kernel nodes counted"


@bcheck("launcher.bad_handle", needs=("stream", "capturer", "captured", "graph"), advice=True)
def launcher_bad_handle(s):
    """A released launcher is BAD_HANDLE for launch, synchronize and its setters."""
    s.need_device()
    keep = []
    with Objects(s) as o:
        _h, raw = o.stream()
        lau = launcher_of(s, recorded(s, raw, keep), raw)
        s.ok("launcher_launch", lau)
        s.ok("launcher_synchronize", lau)
        s.raw("launcher_release", lau)
        s.expect("launcher_launch", "BAD_HANDLE", lau, why="a released launcher")
        s.expect("launcher_synchronize", "BAD_HANDLE", lau, why="a released launcher")
        s.expect("launcher_set_logical_size", "BAD_HANDLE", lau, 4, why="a released launcher")
        cnt = ffi.new("int64_t*")
        s.expect("launcher_kernel_node_count", "BAD_HANDLE", lau, cnt, why="a released launcher")


@bcheck("launcher.failed_replay_surfaces", needs=("stream", "capturer", "captured", "graph"))
def launcher_failed_replay(s):
    """A replay whose work fails makes launcher_synchronize return ERROR with a message."""
    s.device()
    with Objects(s) as o:
        _h, raw = o.stream()
        arm = s.kernels.failing_recorder(raw)
        captured = captured_of(s, raw, arm.record)
        lau = o.add("launcher_release", launcher_of(s, captured, raw))
        arm.make_fail()
        s.ok("launcher_launch", lau)
        st = s.raw("launcher_synchronize", lau)
        if st == 0 and arm.ran_clamped():
            return "the backend ran the replay with its span clamped (nothing failed)"
        if st != 1:
            raise CheckFailure(f"launcher_synchronize after a failing replay returned {st}; expected ERROR")
        if not s.last_error().strip():
            raise CheckFailure("launcher_synchronize returned ERROR with an empty last_error")


@bcheck("launcher.release_frees", needs=("stream", "capturer", "captured", "graph"))
def launcher_release_frees(s):
    """capture -> graph -> launcher -> replay -> release, over and over, does not grow threads,
    descriptors or memory (captured work, graphs and launchers are freed)."""
    s.need_device()
    keep = []
    with Objects(s) as o:
        _h, raw = o.stream()

        def cycle():
            lau = launcher_of(s, recorded(s, raw, keep), raw)
            s.ok("launcher_launch", lau)
            s.ok("launcher_synchronize", lau)
            s.raw("launcher_release", lau)
            s.raw("captured_release", captured_of(s, raw, lambda: enqueue_work(s, raw, keep)))
            keep.clear()

        return measured_release(s, "capture + graph + launcher + replay + release", cycle, 2000, per_cycle_bytes=256)


@bcheck("launcher_query.without_waiting", needs=CAPTURE)
def launcher_query_without_waiting(s):
    """launcher_query answers at once: done = 0 while a slow replay runs, 1 once it has finished
    (and never before); a NULL done is INVALID_ARGUMENT."""
    mem = s.device()
    x = mem.zeros(4, np.int64)
    with Objects(s) as o:
        h, raw = o.stream(flags=1)
        captured = captured_of(s, raw, lambda: s.launch("affine", raw, [x.addr, 1, 3, SLOW_US], 4))
        lau = launcher_of(s, captured, raw)
        o.add("launcher_release", lau)
        s.ok("launcher_launch", lau)
        finished = lambda: bool(np.all(x.get() == 3))  # noqa: E731
        early = answers_at_once(s, "launcher_query", lau, finished)
        polls = poll_until_done(s, "launcher_query", lau, finished)
        expect_equal("x after the replay", x.get(), np.full(4, 3))
        s.expect("launcher_query", "INVALID_ARGUMENT", lau, ffi.NULL, why="done is NULL")
        s.ok("launcher_synchronize", lau)
    return f"{'done' if early else 'not done'} at once, done after {polls} queries"


@bcheck("launcher_query.failed_replay", needs=("stream", "capturer", "captured", "graph", "reorder_device"))
def launcher_query_failed_replay(s):
    """A replay whose work fails: launcher_query, polled, writes done = 1 and returns ERROR with a
    message, as launcher_synchronize would, once (the next query and a synchronize are OK)."""
    s.device()
    with Objects(s) as o:
        _h, raw = o.stream()
        arm = s.kernels.failing_recorder(raw)
        captured = captured_of(s, raw, arm.record)
        lau = o.add("launcher_release", launcher_of(s, captured, raw))
        arm.make_fail()
        s.ok("launcher_launch", lau)
        return failed_work_queried(s, "launcher_query", lau, "launcher_synchronize", arm.ran_clamped)


@bcheck("launcher_query.while_capturing", needs=("stream", "capturer", "captured", "graph"))
def launcher_query_while_capturing(s):
    """launcher_query while the launcher's stream is being captured is INVALID_ARGUMENT with a
    message (what launcher_synchronize returns there)."""
    s.need_device()
    keep = []
    with Objects(s) as o:
        _h, raw = o.stream()
        lau = o.add("launcher_release", launcher_of(s, recorded(s, raw, keep), raw))
        s.ok("launcher_launch", lau)
        s.ok("launcher_synchronize", lau)
        cap = Capture(s, raw).begin()
        try:
            done = ffi.new("int32_t*", 7)
            st = int(s.raw("launcher_query", lau, done))
            msg = s.last_error() if st else ""
        finally:
            out = ffi.new("eagle_backend_captured*")
            if s.raw("capturer_end", cap.h[0], out) == 0:
                s.raw("captured_release", out[0])
            cap.release()
        if st != STATUS["INVALID_ARGUMENT"]:
            raise CheckFailure(f"launcher_query while the launcher's stream is being captured returned "
                               f"{status_name(st)}, done = {done[0]}; expected INVALID_ARGUMENT")
        if not msg.strip():
            raise CheckFailure("launcher_query returned INVALID_ARGUMENT with an empty last_error")
        s.ok("launcher_synchronize", lau)
    return f"INVALID_ARGUMENT ({msg[:80]!r})"
