"""Behavioural checks: what the backend does, per group, where probe() says a device is usable.

Each check builds its own objects from raw seam calls (eagle/check/_seam.py) and compares with
what the seam's comments promise; the work is done by the checker's own kernels (_device.py)."""
import time

import numpy as np

from .._seam_ffi import ffi
from ._registry import CheckFailure, Skip, check
from ._seam import PREFIX, STATUS, status_name
from .static import _output_struct

SLOW_US = 150_000  # a kernel this slow is still running when unordered work would start


def _eq(what, got, want):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.array_equal(got, want):
        bad = np.flatnonzero(got != want)[:4] if got.shape == want.shape else []
        detail = ", ".join(f"[{i}] {got[i]} != {want[i]}" for i in bad) or f"shapes {got.shape} vs {want.shape}"
        raise CheckFailure(f"{what}: {detail}")


# ------------------------------------------------------------------------------ helpers
class Capture:
    """capturer_create/begin/end on a raw stream; end() gives the captured handle."""

    def __init__(self, s, raw):
        self.s = s
        d = ffi.new("struct eagle_backend_capturer_desc*")
        d.struct_size, d.device, d.stream = ffi.sizeof(d[0]), -1, raw
        self.h = ffi.new("eagle_backend_capturer*")
        s.ok("capturer_create", d, self.h)

    def begin(self):
        self.s.ok("capturer_begin", self.h[0])
        return self

    def end(self):
        out = ffi.new("eagle_backend_captured*")
        self.s.ok("capturer_end", self.h[0], out)
        return out[0]

    def release(self):
        self.s.raw("capturer_release", self.h[0])


def captured_of(s, raw, record):
    """Capture what record() enqueues on raw; returns the captured handle."""
    cap = Capture(s, raw).begin()
    try:
        record()
        return cap.end()
    finally:
        cap.release()


def launcher_of(s, captured, raw):
    """graph_from_captured (consuming) -> graph_stream -> graph_launcher; the graph is released."""
    g = ffi.new("eagle_backend_graph*")
    st = s.raw("graph_from_captured", captured, g)
    if st:
        msg = s.last_error()
        s.raw("captured_release", captured)
        raise CheckFailure(f"{PREFIX}graph_from_captured failed with {st}: {msg!r}")
    try:
        s.ok("graph_stream", g[0], raw)
        lau = ffi.new("eagle_backend_launcher*")
        s.ok("graph_launcher", g[0], lau)
        return lau[0]
    finally:
        s.raw("graph_release", g[0])


def replay(s, launcher, times=1):
    for _ in range(times):
        s.ok("launcher_launch", launcher)
    s.ok("launcher_synchronize", launcher)


class Objects:
    """Releases what a check made, in reverse order, even when it fails."""

    def __init__(self, s):
        self.s, self.items = s, []

    def add(self, release, handle):
        self.items.append((release, handle))
        return handle

    def stream(self, flags=0):
        h, raw = self.s.new_stream(flags)
        self.add("stream_release", h)
        return h, raw

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for release, h in reversed(self.items):
            self.s.raw(release, h)
        if self.s.kernels is not None:
            self.s.kernels.check_errors()
        return False


def bcheck(check_id, needs=()):
    return check(check_id, kind="behaviour", needs=needs)


CAPTURE = ("stream", "capturer", "captured", "graph", "launcher", "exec")


def chain(s, raw, x, n, ops, delay_first=0):
    for i, (a, b) in enumerate(ops):
        s.launch("affine", raw, [x.addr, a, b, delay_first if i == 0 else 0], n)


def chain_numpy(x, ops, times=1):
    x = np.array(x, np.int64)
    for _ in range(times):
        for a, b in ops:
            x = x * a + b
    return x


OPS = [(2, 1), (3, 5), (1, -4), (5, 0), (1, 11)]


# ------------------------------------------------------------------------------ stream
class _HostWork:
    """Ordered work without kernels, for a backend without exec: host functions (a slow one that
    sets a host word, then one that reads it) or, lacking those, host-to-host copies."""

    def __init__(self, s):
        self.s = s
        if s.provides("host_func"):
            self.how = "host_func"
        elif s.provides("memcpy"):
            self.how = "memcpy"
        else:
            raise Skip("nothing can be enqueued on a stream: the backend provides none of exec, "
                       "host_func, memcpy")
        self.cell = np.zeros(4, np.int64)
        self._cbs = []

    def slow_set(self, raw, value):
        """Enqueue: after SLOW_US, cell[0] = value."""
        cell = self.cell
        if self.how == "host_func":
            def fn(_):
                time.sleep(SLOW_US / 1e6)
                cell[0] = value
            cb = ffi.callback("eagle_backend_host_fn", fn)
            self._cbs.append(cb)
            self.s.ok("host_func", raw, cb, ffi.NULL)
        else:
            # a large copy is the slow work; its last word carries the value
            big = np.zeros(1 << 22, np.int64)
            big[-1] = value
            dst = np.zeros_like(big)
            self._cbs += [big, dst]
            self.s.ok("memcpy", dst.ctypes.data, big.ctypes.data, big.nbytes, 4, raw)
            self.s.ok("memcpy", cell.ctypes.data, dst.ctypes.data + big.nbytes - 8, 8, 4, raw)

    def affine(self, raw, a, b):
        """Enqueue: cell[0] = cell[0] * a + b (after the work before it)."""
        cell = self.cell
        if self.how == "host_func":
            def fn(_):
                cell[0] = cell[0] * a + b
            cb = ffi.callback("eagle_backend_host_fn", fn)
            self._cbs.append(cb)
            self.s.ok("host_func", raw, cb, ffi.NULL)
        else:
            tmp = np.array([int(self.cell[0])], np.int64)   # not host work: copy the cell twice
            self._cbs.append(tmp)
            self.s.ok("memcpy", cell.ctypes.data + 8, cell.ctypes.data, 8, 4, raw)
            self.s.ok("memcpy", cell.ctypes.data + 16, cell.ctypes.data + 8, 8, 4, raw)

    def result(self):
        return int(self.cell[0]) if self.how == "host_func" else int(self.cell[2])


@bcheck("stream.order")
def stream_order(s):
    """Work on one stream runs in enqueue order (a slow first piece is not overtaken). With exec
    the checker's kernels do the work; without it, host functions or copies."""
    if not s.provides("exec"):
        w = _HostWork(s)
        s.need_device()
        with Objects(s) as o:
            h, raw = o.stream()
            w.slow_set(raw, 5)
            for a, b in OPS[:3]:
                w.affine(raw, a, b)
            s.sync(h)
            want = chain_numpy([5], OPS[:3])[0] if w.how == "host_func" else 5
            if w.result() != want:
                raise CheckFailure(f"{w.how} work after a slow first piece saw {w.result()}, in stream "
                                   f"order it is {want}")
        return f"ordered with {w.how} (no exec)"
    mem = s.device()
    n = 64
    x = mem.array(np.arange(n), np.int64)
    with Objects(s) as o:
        h, raw = o.stream()
        chain(s, raw, x, n, OPS, delay_first=SLOW_US)
        s.sync(h)
        _eq("x after five ordered kernels", x.get(), chain_numpy(np.arange(n), OPS))


@bcheck("stream.synchronize_waits")
def stream_synchronize_waits(s):
    """stream_synchronize returns only after the stream's work has finished."""
    if not s.provides("exec"):
        w = _HostWork(s)
        s.need_device()
        with Objects(s) as o:
            h, raw = o.stream()
            w.slow_set(raw, 5)
            s.sync(h)
            if int(w.cell[0]) != 5:
                raise CheckFailure(f"right after synchronize the slow {w.how} work has not finished")
        return f"with {w.how} (no exec)"
    mem = s.device()
    x = mem.zeros(8, np.int64)
    with Objects(s) as o:
        h, raw = o.stream()
        s.launch("affine", raw, [x.addr, 1, 5, SLOW_US], 8)
        s.sync(h)
        _eq("x right after synchronize", x.get(), np.full(8, 5))


@bcheck("stream.release_waits")
def stream_release_waits(s):
    """stream_release waits for the stream's work before destroying it."""
    if not s.provides("exec"):
        w = _HostWork(s)
        s.need_device()
        h, raw = s.new_stream()
        w.slow_set(raw, 9)
        s.raw("stream_release", h)
        if int(w.cell[0]) != 9:
            raise CheckFailure(f"right after stream_release the slow {w.how} work has not finished")
        return f"with {w.how} (no exec)"
    mem = s.device()
    x = mem.zeros(8, np.int64)
    h, raw = s.new_stream()
    s.launch("affine", raw, [x.addr, 1, 9, SLOW_US], 8)
    s.raw("stream_release", h)
    _eq("x right after stream_release", x.get(), np.full(8, 9))


@bcheck("stream.create_and_ptr")
def stream_create_and_ptr(s):
    """Streams (blocking and NON_BLOCKING) are created, have stable distinct raw values, and an
    absent device is INDEX."""
    s.need_device()
    with Objects(s) as o:
        h1, raw1 = o.stream()
        h2, raw2 = o.stream(flags=1)
        again = ffi.new("uint64_t*")
        s.ok("stream_ptr", h1, again)
        if int(again[0]) != raw1:
            raise CheckFailure(f"stream_ptr changed: {raw1:#x} then {int(again[0]):#x}")
        if raw1 == raw2:
            raise CheckFailure(f"two streams share the raw value {raw1:#x}")
        s.sync(h1)
        d = ffi.new("struct eagle_backend_stream_desc*", {"struct_size": 16, "device": 1 << 20})
        out = ffi.new("eagle_backend_stream*")
        st = s.raw("stream_create", d, out)
        if st == 0:
            o.add("stream_release", out[0])
            raise CheckFailure("stream_create on device 1048576 returned OK; expected INDEX")
        if st != STATUS["INDEX"]:
            raise CheckFailure(f"stream_create on device 1048576 returned {st}; expected INDEX")


# ------------------------------------------------------------------------------ capturer
@bcheck("capturer.replay_matches_eager", needs=CAPTURE)
def capturer_replay(s):
    """Work captured on a stream is recorded, not run; each replay reproduces the eager result."""
    mem = s.device()
    n = 100
    x0 = np.arange(n) - 50
    x = mem.array(x0, np.int64)
    with Objects(s) as o:
        h, raw = o.stream()
        captured = captured_of(s, raw, lambda: chain(s, raw, x, n, OPS))
        _eq("x after capture (capture must record, not run)", x.get(), x0)
        lau = o.add("launcher_release", launcher_of(s, captured, raw))
        replay(s, lau, 3)
        _eq("x after 3 replays", x.get(), chain_numpy(x0, OPS, 3))


@bcheck("capturer.misuse", needs=("stream", "captured"))
def capturer_misuse(s):
    """begin twice and end without begin are INVALID_ARGUMENT; so is begin of a second capturer of
    a stream that is being captured; synchronize while capturing is INVALID_ARGUMENT."""
    s.need_device()
    with Objects(s) as o:
        h, raw = o.stream()
        cap = Capture(s, raw)
        o.add("capturer_release", cap.h[0])
        out = ffi.new("eagle_backend_captured*")
        s.expect("capturer_end", "INVALID_ARGUMENT", cap.h[0], out, why="end before begin")
        cap.begin()
        s.expect("capturer_begin", "INVALID_ARGUMENT", cap.h[0], why="begin twice")
        other = Capture(s, raw)
        o.add("capturer_release", other.h[0])
        s.expect("capturer_begin", "INVALID_ARGUMENT", other.h[0],
                 why="a second capturer of a stream that is being captured")
        s.expect("stream_synchronize", "INVALID_ARGUMENT", h, why="the stream is being captured")
        st = s.raw("capturer_end", cap.h[0], out)
        if st == 0:
            s.raw("captured_release", out[0])


@bcheck("capturer.release_abandons", needs=("stream", "captured"))
def capturer_release_abandons(s):
    """A capturer released during its capture abandons the capture: the stream runs work eagerly
    again (the work runs, synchronize is OK), what was recorded never runs, and a new capture of
    the stream begins and holds only its own work (it is empty)."""
    if s.provides("exec"):
        mem = s.device()
        x = mem.zeros(8, np.int64)

        def work(raw, a, b):
            s.launch("affine", raw, [x.addr, a, b, 0], 8)

        def value():
            return int(x.get()[0])
        how = "exec"
    else:
        w = _HostWork(s)
        s.need_device()
        value, how = w.result, w.how

        def work(raw, a, b):
            if how == "memcpy":
                w.cell[0] = 3   # copies carry cell[0] along; only the eager ones are to run
            w.affine(raw, a, b)
    with Objects(s) as o:
        h, raw = o.stream()
        cap = Capture(s, raw).begin()
        try:
            work(raw, 1, 100)   # recorded, then abandoned
        finally:
            cap.release()
        work(raw, 2, 3)          # eager again: 0 * 2 + 3
        st = s.raw("stream_synchronize", h)
        if st:
            raise CheckFailure(f"stream_synchronize after the capturer was released during its "
                               f"capture returned {status_name(st)}: {s.last_error()!r}; the capture "
                               "was abandoned, the stream is no longer being captured")
        if value() != 3:
            raise CheckFailure(f"work enqueued after the capturer was released during its capture left "
                               f"{value()}, expected 3 (it runs eagerly; the abandoned capture's work "
                               "never runs)")
        again = Capture(s, raw)
        o.add("capturer_release", again.h[0])
        st = s.raw("capturer_begin", again.h[0])
        if st:
            raise CheckFailure(f"capturer_begin of a new capturer, after the stream's capturer was "
                               f"released during its capture, returned {status_name(st)}: "
                               f"{s.last_error()!r}; the abandoned capture must not keep the stream "
                               "captured")
        captured = o.add("captured_release", again.end())
        valid = ffi.new("int32_t*", -1)
        s.ok("captured_is_valid", captured, valid)
        if valid[0] != 0:
            raise CheckFailure(f"captured_is_valid = {valid[0]} for a capture that recorded nothing, begun "
                               "after an abandoned one (it must not hold the abandoned capture's work)")
    return f"with {how}"


# ------------------------------------------------------------------------------ captured
@bcheck("captured.is_valid", needs=("stream", "capturer", "exec"))
def captured_is_valid(s):
    """A capture with a node is valid (1); an empty one is not (0); both release."""
    mem = s.device()
    x = mem.zeros(4, np.int64)
    with Objects(s) as o:
        h, raw = o.stream()
        valid = ffi.new("int32_t*", -1)
        full = o.add("captured_release", captured_of(s, raw, lambda: chain(s, raw, x, 4, OPS[:1])))
        s.ok("captured_is_valid", full, valid)
        if valid[0] != 1:
            raise CheckFailure(f"captured_is_valid = {valid[0]} for a capture with one kernel node")
        empty = o.add("captured_release", captured_of(s, raw, lambda: None))
        s.ok("captured_is_valid", empty, valid)
        if valid[0] != 0:
            raise CheckFailure(f"captured_is_valid = {valid[0]} for an empty capture")


# ------------------------------------------------------------------------------ fork
def _fork(s, o, raw, k):
    d = ffi.new("struct eagle_backend_fork_desc*")
    d.struct_size, d.device, d.origin, d.branch_count = ffi.sizeof(d[0]), -1, raw, k
    f = ffi.new("eagle_backend_fork*")
    s.ok("fork_create", d, f)
    return o.add("fork_release", f[0])


def _fork_program(s, f, raw, x, bs, r, k):
    """origin: slow x = 5; fork; branch i: b_i = b_i*3 + x; join; origin: r = r*3 + b_i in order."""
    s.launch("affine", raw, [x.addr, 0, 5, SLOW_US], 1)
    s.ok("fork_fork", f)
    br = ffi.new("uint64_t*")
    for i in range(k):
        s.ok("fork_branch", f, i, br)
        s.launch("accum", int(br[0]), [bs[i].addr, x.addr, SLOW_US // (i + 2)], 1)
    s.ok("fork_join", f)
    for i in range(k):
        s.launch("accum", raw, [r.addr, bs[i].addr, 0], 1)


def _fork_expect(k, rounds):
    b = [i + 1 for i in range(k)]
    r = 0
    for _ in range(rounds):
        b = [v * 3 + 5 for v in b]
        for v in b:
            r = r * 3 + v
    return b, r


@bcheck("fork.branches_run_and_join", needs=("stream", "exec"))
def fork_branches(s):
    """Every branch starts after the origin's earlier work, and the origin's later work starts
    after every branch (eagerly)."""
    mem = s.device()
    k = 3
    with Objects(s) as o:
        h, raw = o.stream()
        x, r = mem.zeros(1, np.int64), mem.zeros(1, np.int64)
        bs = [mem.array([i + 1], np.int64) for i in range(k)]
        f = _fork(s, o, raw, k)
        _fork_program(s, f, raw, x, bs, r, k)
        s.sync(h)
        b, rr = _fork_expect(k, 1)
        _eq("branch results (branches must start after the origin's work)", [v.get()[0] for v in bs], b)
        _eq("origin result after join (it must wait for every branch)", r.get(), [rr])


@bcheck("fork.under_capture", needs=CAPTURE)
def fork_under_capture(s):
    """Fork and join recorded under capture replay as they ran eagerly, replay after replay."""
    mem = s.device()
    k = 2
    with Objects(s) as o:
        h, raw = o.stream()
        x, r = mem.zeros(1, np.int64), mem.zeros(1, np.int64)
        bs = [mem.array([i + 1], np.int64) for i in range(k)]
        f = _fork(s, o, raw, k)
        captured = captured_of(s, raw, lambda: _fork_program(s, f, raw, x, bs, r, k))
        lau = o.add("launcher_release", launcher_of(s, captured, raw))
        replay(s, lau, 2)
        b, rr = _fork_expect(k, 2)
        _eq("branch results after 2 replays", [v.get()[0] for v in bs], b)
        _eq("origin result after 2 replays", r.get(), [rr])


@bcheck("fork.queries", needs=("stream",))
def fork_queries(s):
    """fork_size/origin/forked/branch answer as documented; INDEX past the last branch;
    join before fork and fork twice are INVALID_ARGUMENT."""
    s.need_device()
    k = 3
    with Objects(s) as o:
        h, raw = o.stream()
        f = _fork(s, o, raw, k)
        u64, i32 = ffi.new("uint64_t*"), ffi.new("int32_t*")
        s.ok("fork_size", f, u64)
        if u64[0] != k:
            raise CheckFailure(f"fork_size = {u64[0]}, created with {k} branches")
        s.ok("fork_origin", f, u64)
        if u64[0] != raw:
            raise CheckFailure(f"fork_origin = {int(u64[0]):#x}, the origin is {raw:#x}")
        s.ok("fork_forked", f, i32)
        if i32[0] != 0:
            raise CheckFailure(f"fork_forked = {i32[0]} before fork_fork")
        s.expect("fork_join", "INVALID_ARGUMENT", f, why="join before fork")
        branches = set()
        for i in range(k):
            s.ok("fork_branch", f, i, u64)
            branches.add(int(u64[0]))
        if len(branches) != k or raw in branches:
            raise CheckFailure(f"branch streams are not {k} distinct streams beside the origin")
        s.expect("fork_branch", "INDEX", f, k, u64, why=f"branch {k} of {k}")
        s.ok("fork_fork", f)
        s.ok("fork_forked", f, i32)
        if i32[0] != 1:
            raise CheckFailure(f"fork_forked = {i32[0]} between fork and join")
        s.expect("fork_fork", "INVALID_ARGUMENT", f, why="fork twice")
        s.ok("fork_join", f)
        s.ok("fork_forked", f, i32)
        if i32[0] != 0:
            raise CheckFailure(f"fork_forked = {i32[0]} after join")
        s.sync(h)


# ------------------------------------------------------------------------------ conditional
COND = CAPTURE + ("conditional",)


def _conditional(s, o, raw, count, baseline=None, counter=None, loop_cap=0, case_count=0):
    d = ffi.new("struct eagle_backend_conditional_desc*")
    d.struct_size, d.device, d.origin = ffi.sizeof(d[0]), -1, raw
    d.count_ptr = count.addr
    d.baseline_ptr = baseline.addr if baseline is not None else 0
    d.counter_ptr = counter.addr if counter is not None else 0
    d.loop_cap, d.case_count = loop_cap, case_count
    c = ffi.new("eagle_backend_conditional*")
    s.ok("conditional_create", d, c)
    return o.add("conditional_release", c[0])


def _if_program(s, use_baseline):
    mem = s.device()
    n = 4
    x = mem.zeros(n, np.int64)
    count, base = mem.zeros(1, np.uint32), mem.zeros(1, np.uint32)
    o = Objects(s)
    with o:
        h, raw = o.stream()

        def record():
            c = _conditional(s, o, raw, count, base if use_baseline else None)
            body = ffi.new("uint64_t*")
            s.ok("conditional_begin", c, body)
            s.launch("affine", int(body[0]), [x.addr, 1, 1, 0], n)
            s.ok("conditional_end", c)
            s.launch("affine", raw, [x.addr, 1, 100, 0], n)

        lau = o.add("launcher_release", launcher_of(s, captured_of(s, raw, record), raw))
        _eq("x after recording an IF (nothing may run yet)", x.get(), np.zeros(n))
        expect = 0
        cases = [(1, 0), (0, 0), (7, 7), (3, 2), (0, 5), (0, 0), (2**32 - 1, 0)]
        for cnt, bl in cases:
            if not use_baseline:
                bl = 0
            count.set([cnt])
            base.set([bl])
            replay(s, lau)
            expect += (1 if cnt != bl else 0) + 100
            got = int(x.get()[0])
            if got != expect:
                runs = "run" if cnt != bl else "be skipped"
                raise CheckFailure(f"IF with *count={cnt}, *baseline={bl}: the body should {runs} "
                                   f"(x = {got}, expected {expect}); the guard must be read at each replay")
    return f"{len(cases)} replays of one launcher decided as the guard said"


@bcheck("conditional.if_guard", needs=COND)
def conditional_if_guard(s):
    """An IF runs its body iff *count != *baseline, read at each replay (guard words changed
    between replays, no rebuild)."""
    return _if_program(s, True)


@bcheck("conditional.if_zero_baseline", needs=COND)
def conditional_if_zero_baseline(s):
    """An IF with baseline_ptr == 0 compares *count with 0."""
    return _if_program(s, False)


@bcheck("conditional.while_guard", needs=COND)
def conditional_while_guard(s):
    """A WHILE re-reads its guard before every iteration, stops at loop_cap, and leaves the cell
    [remaining, ran] as documented, replay after replay."""
    mem = s.device()
    n, cap = 2, 10
    x = mem.zeros(n, np.int64)
    count, cell = mem.zeros(1, np.uint32), mem.array([77, 77], np.uint32)
    with Objects(s) as o:
        h, raw = o.stream()

        def record():
            c = _conditional(s, o, raw, count, None, cell, loop_cap=cap)
            loop = ffi.new("int32_t*", -1)
            s.ok("conditional_is_loop", c, loop)
            if loop[0] != 1:
                raise CheckFailure(f"conditional_is_loop = {loop[0]} for a WHILE")
            body = ffi.new("uint64_t*")
            s.ok("conditional_begin", c, body)
            s.launch("add_u32", int(body[0]), [count.addr, 2**32 - 1], 1)   # *count -= 1
            s.launch("affine", int(body[0]), [x.addr, 1, 1, 0], n)
            s.ok("conditional_end", c)

        lau = o.add("launcher_release", launcher_of(s, captured_of(s, raw, record), raw))
        total = 0
        for start in (3, 0, 25, 10, 1):
            count.set([start])
            replay(s, lau)
            runs = min(start, cap)
            total += runs
            got_cell, got_count, got_x = cell.get().tolist(), int(count.get()[0]), int(x.get()[0])
            if got_cell != [cap - runs, runs] or got_count != start - runs or got_x != total:
                raise CheckFailure(f"WHILE with *count={start}, loop_cap={cap}: expected {runs} "
                                   f"iterations, cell [{cap - runs}, {runs}], *count {start - runs}; got "
                                   f"cell {got_cell}, *count {got_count}, x {got_x} (expected {total})")
    return "5 replays decided as the guard said"


@bcheck("conditional.queries", needs=("stream", "capturer", "captured"))
def conditional_queries(s):
    """is_loop is 0 for an IF, body_stream answers the open body, begin twice is
    INVALID_ARGUMENT, and conditional_create outside a capture is INVALID_ARGUMENT."""
    mem = s.device()
    count = mem.zeros(1, np.uint32)
    with Objects(s) as o:
        h, raw = o.stream()
        d = ffi.new("struct eagle_backend_conditional_desc*")
        d.struct_size, d.device, d.origin, d.count_ptr = ffi.sizeof(d[0]), -1, raw, count.addr
        c = ffi.new("eagle_backend_conditional*")
        st = s.raw("conditional_create", d, c)
        if st == 0:
            s.raw("conditional_release", c[0])
        if st != STATUS["INVALID_ARGUMENT"]:
            raise CheckFailure(f"conditional_create on a stream not being captured returned {st}; "
                               "expected INVALID_ARGUMENT")
        body, again, loop = ffi.new("uint64_t*"), ffi.new("uint64_t*"), ffi.new("int32_t*", -1)

        def record():
            cond = _conditional(s, o, raw, count)
            s.ok("conditional_is_loop", cond, loop)
            s.expect("conditional_body_stream", "INVALID_ARGUMENT", cond, again, why="no body open")
            s.ok("conditional_begin", cond, body)
            s.ok("conditional_body_stream", cond, again)
            s.expect("conditional_begin", "INVALID_ARGUMENT", cond, again, why="begin twice")
            s.ok("conditional_end", cond)

        captured = captured_of(s, raw, record)
        s.raw("captured_release", captured)
        if loop[0] != 0:
            raise CheckFailure(f"conditional_is_loop = {loop[0]} for an IF")


@bcheck("conditional_begin_case.switch", needs=COND)
def conditional_switch(s):
    """A SWITCH runs case *selector (none for a value >= case_count), re-read at every replay;
    begin_case past the last case is INDEX."""
    mem = s.device()
    n = 2
    x = mem.zeros(n, np.int64)
    sel = mem.zeros(1, np.uint32)
    adds = [1, 10, 100]
    with Objects(s) as o:
        h, raw = o.stream()

        def record():
            c = _conditional(s, o, raw, sel, case_count=len(adds))
            body = ffi.new("uint64_t*")
            for i, a in enumerate(adds):
                s.ok("conditional_begin_case", c, i, body)
                s.launch("affine", int(body[0]), [x.addr, 1, a, 0], n)
            s.expect("conditional_begin_case", "INDEX", c, len(adds), body, why="case past the last")
            s.ok("conditional_end", c)

        lau = o.add("launcher_release", launcher_of(s, captured_of(s, raw, record), raw))
        total = 0
        for v in (0, 2, 1, 3, 2**32 - 1, 1):
            sel.set([v])
            replay(s, lau)
            total += adds[v] if v < len(adds) else 0
            got = int(x.get()[0])
            if got != total:
                raise CheckFailure(f"SWITCH with *selector={v}: x = {got}, expected {total}")


# ------------------------------------------------------------------------------ attribution
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


# ------------------------------------------------------------------------------ graph
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
        _eq("x after 2 replays of a two-node graph (graph released)", x.get(),
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
        _eq("y after a replay on the graph's stream behind a slow x = 7", y.get(), [1 * 3 + 7])


# ------------------------------------------------------------------------------ launcher
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
        _eq("x after 4 replays queued without waiting", x.get(), chain_numpy(np.zeros(n), OPS, 4))
        s.ok("launcher_stream", lau, raw2)
        s.ok("launcher_launch", lau)
        s.ok("launcher_synchronize", lau)
        s.sync(h)
        _eq("x after 5 replays (4 + 1 on another stream)", x.get(), chain_numpy(np.zeros(n), OPS, 5))


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
            _eq(f"x after a replay at {what} (lanes [0,{lanes}) with n_samples {lanes})", x.get(), want_x)
            _eq(f"y after a replay at {what} (a partial launch keeps its partition and n_samples {n})",
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
        _eq("x with the second node disabled", x.get(), np.full(n, 1))
        s.ok("launcher_set_node_enabled", lau, second, 1)
        replay(s, lau)
        _eq("x with the node enabled again", x.get(), np.full(n, 103))
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
        _eq("x right after launcher_release (it must wait for the replay)", x.get(), np.full(4, 3))


# ------------------------------------------------------------------------------ exec
@bcheck("exec.partition", needs=("stream",))
def exec_partition(s):
    """run_device runs each lane of [base, base+count) exactly once, passes n_samples, and
    leaves the rest alone; count 0 launches nothing (*launched = 0)."""
    mem = s.device()
    n = 1000
    with Objects(s) as o:
        h, raw = o.stream()
        x = mem.zeros(n, np.int64)
        launched = s.launch("stamp", raw, [x.addr], n, base=100, count=500, n_samples=n)
        if launched != 1:
            raise CheckFailure(f"run_device wrote *launched = {launched} for a non-empty partition")
        launched = s.launch("stamp", raw, [x.addr], n, base=700, count=0, n_samples=n)
        if launched != 0:
            raise CheckFailure(f"run_device wrote *launched = {launched} for count 0")
        s.sync(h)
        want = np.zeros(n, np.int64)
        want[100:600] = n
        _eq("lanes after run_device over [100, 600) of 1000", x.get(), want)
        big = 100003
        y = mem.zeros(big, np.int64)
        for _ in range(2):
            s.launch("affine", raw, [y.addr, 3, 1, 0], big)
        z = mem.zeros(big, np.int64)
        s.launch("stamp", raw, [z.addr], big, base=3, count=big - 3, n_samples=big)
        s.sync(h)
        _eq(f"{big} lanes after two launches", y.get(), np.full(big, 4))
        want = np.full(big, big, np.int64)
        want[:3] = 0
        _eq(f"n_samples seen by every lane of a {big - 3}-lane launch (however it is split)", z.get(), want)


@bcheck("exec.bad_arguments", needs=("stream",))
def exec_bad_arguments(s):
    """A partition beyond n_samples, a negative count and nparams > 64 are INVALID_ARGUMENT."""
    mem = s.device()
    x = mem.zeros(8, np.int64)
    with Objects(s) as o:
        h, raw = o.stream()
        fn = s.kernels.handle("stamp")
        for what, base, count, ns, nparams in (("base + count > n_samples", 4, 8, 8, 1),
                                               ("negative count", 0, -1, 8, 1),
                                               ("nparams 65", 0, 8, 8, 65)):
            storage = ffi.new("int64_t[65]", [x.addr] * 65)
            params = ffi.new("uint64_t[65]", [int(ffi.cast("uintptr_t", storage + i)) for i in range(65)])
            d = ffi.new("struct eagle_backend_launch_desc*")
            d.struct_size, d.device, d.function = ffi.sizeof(d[0]), -1, fn
            d.params, d.nparams, d.base, d.count, d.n_samples, d.stream = params, nparams, base, count, ns, raw
            s.expect("run_device", "INVALID_ARGUMENT", d, ffi.new("int32_t*"), why=what)
        s.sync(h)
        _eq("x after refused launches", x.get(), np.zeros(8))


# ------------------------------------------------------------------------------ device
@bcheck("device.props_sane")
def device_props_sane(s):
    """device_props(0) describes device 0 with non-negative figures (0 where the kind cannot know
    them; on the cpu kind its cores and warp_size 1) and a consistent fp64 ratio; an absent
    device is INDEX."""
    s.need_device()
    p = ffi.new("struct eagle_backend_device_props*")
    p.struct_size = ffi.sizeof(p[0])
    s.ok("device_props", 0, p)
    name = ffi.string(p.name).decode("utf-8", "replace")
    problems = []
    if p.device != 0:
        problems.append(f"device = {p.device}")
    # "Figures the kind cannot know are 0": only the cpu kind's are stated ("CPU cores on the cpu
    # kind", "1 on the cpu kind"); for any kind a figure is never negative (below).
    if s.kind == "cpu" and p.sm_count < 1:
        problems.append(f"sm_count = {p.sm_count} (CPU cores on the cpu kind)")
    if s.kind == "cpu" and p.warp_size != 1:
        problems.append(f"warp_size = {p.warp_size} (1 on the cpu kind)")
    for f in ("sm_count", "warp_size"):
        if getattr(p, f) < 0:
            problems.append(f"{f} = {getattr(p, f)}")
    for f in ("cc_major", "cc_minor", "clock_rate_khz", "memory_clock_rate_khz", "memory_bus_width_bits",
              "regs_per_block", "regs_per_sm", "shared_mem_per_block", "shared_mem_per_sm",
              "peak_bytes_per_s", "peak_flops_sp", "peak_flops_dp", "fp64_ratio",
              "ridge_flops_per_byte_sp", "ridge_flops_per_byte_dp"):
        v = getattr(p, f)
        if not (v >= 0) or v != v:
            problems.append(f"{f} = {v}")
    if p.peak_flops_sp > 0 and p.peak_flops_dp > 0 and p.fp64_ratio > 0:
        ratio = p.peak_flops_dp / p.peak_flops_sp
        if abs(ratio - p.fp64_ratio) > 1e-3 * max(ratio, 1e-9) + 1e-6:
            problems.append(f"fp64_ratio {p.fp64_ratio} != peak_flops_dp/peak_flops_sp {ratio:.6g}")
    if problems:
        raise CheckFailure("device_props(0): " + ", ".join(problems))
    s.expect("device_props", "INDEX", 1 << 20, p, why="device 1048576")
    return f"{name or '(no name)'}: {p.sm_count} SMs/cores, warp {p.warp_size}"


@bcheck("device.props_struct_size")
def device_props_struct_size(s):
    """device_props honours a short caller struct_size and a long one (output struct rules)."""
    s.need_device()
    return _output_struct(s, "device_props", "eagle_backend_device_props",
                          lambda p: s.raw("device_props", 0, p), [4, 8, 100, 300])


# ------------------------------------------------------------------------------ interop
@bcheck("interop.fence_orders", needs=("stream", "exec"))
def interop_fence_orders(s):
    """fence(producer, consumer) makes work enqueued later on the consumer wait for the
    producer's work so far, without blocking the host."""
    mem = s.device()
    dl = _device_type(s)
    with Objects(s) as o:
        ha, rawa = o.stream()
        hb, rawb = o.stream()
        x, y = mem.zeros(1, np.int64), mem.array([1], np.int64)
        s.launch("affine", rawa, [x.addr, 0, 7, SLOW_US * 2], 1)
        t0 = time.monotonic()
        s.ok("fence", dl, 0, rawa, rawb)
        blocked = time.monotonic() - t0
        s.launch("accum", rawb, [y.addr, x.addr, 0], 1)
        s.sync(hb)
        _eq("consumer's result (it must see the producer's write)", y.get(), [1 * 3 + 7])
        s.sync(ha)
        if blocked > SLOW_US * 2 / 1e6 * 0.8:
            raise CheckFailure(f"fence blocked the host for {blocked:.3f} s (it must only order streams)")


def _device_type(s):
    count = ffi.new("int32_t*")
    types = ffi.new("int32_t[16]")
    s.ok("device_types", types, 16, count)
    return int(types[0])


@bcheck("interop.fence_codes", needs=("stream",))
def interop_fence_codes(s):
    """fence with no stream given (STREAM_NONE) is OK; a device type the kind does not serve is
    INTEROP; event_pool_created is a count >= 0."""
    s.need_device()
    dl = _device_type(s)
    none = -2**63
    s.ok("fence", dl, 0, none, none)
    with Objects(s) as o:
        h, raw = o.stream()
        s.ok("fence", dl, 0, raw, none)
        s.ok("fence", dl, 0, none, raw)
    s.expect("fence", "INTEROP", 0x7FFF, 0, none, none, why="device type 32767 is served by no kind")
    created = ffi.new("int64_t*", -1)
    s.ok("event_pool_created", created)
    if created[0] < 0:
        raise CheckFailure(f"event_pool_created = {created[0]}")
    return f"event pool: {created[0]} created"


# ------------------------------------------------------------------------------ filtering
SIZES = (0, 1, 7, 256, 257, 4096, 100003)


def _compact_desc(s, n, mask, imap, cnt, flags, raw, scratch=None, extra=None):
    d = ffi.new("struct eagle_backend_compact_desc*")
    d.struct_size, d.flags, d.device = ffi.sizeof(d[0]), flags, -1
    d.mask, d.index_map, d.count, d.n, d.stream = mask.addr, imap.addr, cnt.addr, n, raw
    d.scratch = 0
    if extra:
        for k, v in extra.items():
            setattr(d, k, v)
    s.ok("compact_device", d)
    need = int(d.scratch_bytes)
    if need < 0:
        raise CheckFailure(f"compact_device query wrote scratch_bytes = {need}")
    buf = scratch if scratch is not None else s.mem.zeros(max(need, 1), np.uint8)
    d.scratch, d.scratch_bytes = buf.addr, max(need, 1)
    s.ok("compact_device", d)
    return d


@bcheck("filtering.compact_matches_numpy", needs=("stream",))
def filtering_compact(s):
    """compact_device writes the kept indices ascending and their count, bit-exact with numpy,
    for n in {0, 1, 7, 256, 257, 4096, 100003}, keep and MASK_IS_DROP, the tail untouched."""
    mem = s.device()
    rng = np.random.default_rng(7)
    with Objects(s) as o:
        h, raw = o.stream()
        for n in SIZES:
            m = (rng.random(n) < 0.37).astype(np.uint8) * rng.integers(1, 256, n).astype(np.uint8)
            for flags in (0, 1):
                mask, imap, cnt = mem.array(m, np.uint8), mem.array(np.full(n, -7), np.int32), mem.array([12345], np.uint32)
                _compact_desc(s, n, mask, imap, cnt, flags, raw)
                s.sync(h)
                kept = np.flatnonzero(m != 0 if flags == 0 else m == 0).astype(np.int32)
                got_n = int(cnt.get()[0])
                what = f"n={n}, {'MASK_IS_DROP' if flags else 'keep'}"
                if got_n != kept.size:
                    raise CheckFailure(f"compaction {what}: count {got_n}, numpy says {kept.size}")
                got = imap.get()
                _eq(f"index_map of compaction {what}", got[:kept.size], kept)
                _eq(f"tail of index_map after compaction {what} (must be untouched)", got[kept.size:],
                    np.full(n - kept.size, -7, np.int32))
    return f"n in {SIZES}, both mask senses"


@bcheck("filtering.reorder_trigger", needs=("stream",))
def filtering_trigger(s):
    """live32 receives the count and fire = (count < span && count <= theta * span)."""
    mem = s.device()
    n = 1000
    with Objects(s) as o:
        h, raw = o.stream()
        for keep, span, theta in ((100, 1000, 0.5), (600, 1000, 0.5), (1000, 1000, 1.0), (250, 500, 0.5)):
            m = np.zeros(n, np.uint8)
            m[np.random.default_rng(keep).choice(n, keep, replace=False)] = 1
            mask, imap, cnt = mem.array(m), mem.zeros(n, np.int32), mem.zeros(1, np.uint32)
            live, sp, fire = mem.array([999999], np.uint32), mem.array([span], np.uint32), mem.array([7], np.uint32)
            _compact_desc(s, n, mask, imap, cnt, 0, raw,
                          extra={"live32": live.addr, "span": sp.addr, "fire": fire.addr, "theta": theta})
            s.sync(h)
            want_fire = 1 if (keep < span and keep <= theta * span) else 0
            if int(live.get()[0]) != keep or int(fire.get()[0]) != want_fire:
                raise CheckFailure(f"trigger with count {keep}, span {span}, theta {theta}: live32 "
                                   f"{int(live.get()[0])} (want {keep}), fire {int(fire.get()[0])} (want {want_fire})")


@bcheck("filtering.compact_limits", needs=("stream",))
def filtering_limits(s):
    """n >= 2^31 is UNSUPPORTED; too little scratch and a NULL address with n > 0 are INVALID_ARGUMENT."""
    mem = s.device()
    n = 4096
    mask, imap, cnt = mem.zeros(n, np.uint8), mem.zeros(n, np.int32), mem.zeros(1, np.uint32)
    d = ffi.new("struct eagle_backend_compact_desc*")
    d.struct_size, d.device = ffi.sizeof(d[0]), -1
    d.mask, d.index_map, d.count, d.n, d.stream = mask.addr, imap.addr, cnt.addr, 2**31, 0
    s.expect("compact_device", "UNSUPPORTED", d, why="n = 2^31")
    d.n = n
    s.ok("compact_device", d)
    if d.scratch_bytes > 0:
        small = mem.zeros(1, np.uint8)
        d.scratch, d.scratch_bytes = small.addr, d.scratch_bytes - 1
        s.expect("compact_device", "INVALID_ARGUMENT", d, why="scratch one byte short")
    d.scratch, d.scratch_bytes = 0, 0
    s.ok("compact_device", d)
    enough = mem.zeros(max(int(d.scratch_bytes), 1), np.uint8)
    d.scratch, d.scratch_bytes, d.mask = enough.addr, max(int(d.scratch_bytes), 1), 0
    s.expect("compact_device", "INVALID_ARGUMENT", d, why="mask NULL with n > 0 (scratch given)")


@bcheck("filtering.compact_captured", needs=CAPTURE)
def filtering_compact_captured(s):
    """A compaction captured once follows the mask as it is at each replay."""
    mem = s.device()
    n = 300
    rng = np.random.default_rng(3)
    mask, imap, cnt = mem.zeros(n, np.uint8), mem.zeros(n, np.int32), mem.zeros(1, np.uint32)
    scratch_holder = {}
    with Objects(s) as o:
        h, raw = o.stream()
        # eager once, sizing the scratch; it is allocated here, since allocating (and the
        # synchronisation that comes with it) is not allowed while a stream is being captured
        query = ffi.new("struct eagle_backend_compact_desc*")
        query.struct_size, query.device, query.n, query.stream = ffi.sizeof(query[0]), -1, n, raw
        s.ok("compact_device", query)
        scratch = mem.zeros(max(int(query.scratch_bytes), 1), np.uint8)
        _compact_desc(s, n, mask, imap, cnt, 0, raw, scratch)
        s.sync(h)

        def record():
            scratch_holder["d"] = _compact_desc(s, n, mask, imap, cnt, 0, raw, scratch)

        lau = o.add("launcher_release", launcher_of(s, captured_of(s, raw, record), raw))
        for _ in range(3):
            m = (rng.random(n) < 0.5).astype(np.uint8)
            mask.set(m)
            replay(s, lau)
            kept = np.flatnonzero(m).astype(np.int32)
            if int(cnt.get()[0]) != kept.size:
                raise CheckFailure(f"replayed compaction: count {int(cnt.get()[0])}, numpy says {kept.size}")
            _eq("replayed compaction's index_map", imap.get()[:kept.size], kept)


# ------------------------------------------------------------------------------ reorder
def _reorder(s, raw, planes_arrays, mask, perm, inv, span, n, flags=0, fire=None):
    planes = ffi.new("struct eagle_backend_reorder_plane[]", max(len(planes_arrays), 1))
    for i, (arr, elem, width, pitch) in enumerate(planes_arrays):
        planes[i].data, planes[i].elem_size, planes[i].width, planes[i].pitch_bytes = arr.addr, elem, width, pitch
    d = ffi.new("struct eagle_backend_reorder_desc*")
    d.struct_size, d.flags, d.device, d.plane_count, d.planes = ffi.sizeof(d[0]), flags, -1, len(planes_arrays), planes
    d.mask, d.perm, d.inv, d.span, d.n, d.stream = mask.addr, perm.addr, inv.addr, span.addr, n, raw
    d.fire = fire.addr if fire is not None else 0
    s.ok("reorder_device", d)
    need = int(d.scratch_bytes)
    scratch = s.mem.zeros(max(need, 1), np.uint8)
    d.scratch, d.scratch_bytes = scratch.addr, max(need, 1)
    s.ok("reorder_device", d)
    return scratch


def _reorder_case(s, raw, h, n, span_v, flags, rng, fire_v=None):
    mem = s.mem
    m = (rng.random(n) < 0.4).astype(np.uint8)
    perm0 = rng.permutation(n).astype(np.int32)
    inv0 = np.empty(n, np.int32)
    inv0[perm0] = np.arange(n, dtype=np.int32)
    specs, host = [], []
    for elem, width in ((1, 1), (2, 1), (4, 2), (8, 1), (16, 3)):
        pitch = (n + 3) * elem if width > 1 else 0
        rows = max(width, 1)
        stride = pitch if pitch else n * elem
        raw_bytes = rng.integers(0, 256, max(stride * rows, 1)).astype(np.uint8)
        arr = mem.array(raw_bytes, np.uint8)
        specs.append((arr, elem, width, pitch))
        host.append((raw_bytes.copy(), elem, rows, stride))
    mask, perm, inv = mem.array(m, np.uint8), mem.array(perm0, np.int32), mem.array(inv0, np.int32)
    span = mem.array([span_v], np.uint32)
    fire = mem.array([fire_v], np.uint32) if fire_v is not None else None
    _reorder(s, raw, specs, mask, perm, inv, span, n, flags, fire)
    s.sync(h)
    what = f"reorder n={n}, span={span_v}, {'MASK_IS_DROP' if flags else 'keep'}" + (
        f", fire={fire_v}" if fire_v is not None else "")
    if fire_v == 0:
        order = np.arange(n)
        k = span_v
    else:
        region = m[:span_v] != 0 if flags == 0 else m[:span_v] == 0
        kept = np.flatnonzero(region)
        k = kept.size
        got_perm = perm.get()
        # kept positions come first in their old order; the rest of [0, span) follows in some order
        _eq(f"{what}: perm of the kept samples", got_perm[:k], perm0[kept])
        _eq(f"{what}: perm from span on (untouched)", got_perm[span_v:], perm0[span_v:])
        rest = np.sort(got_perm[k:span_v])
        _eq(f"{what}: perm of the dropped samples (a permutation of them)", rest,
            np.sort(perm0[np.flatnonzero(~region)]))
        pos_of = np.empty(n, np.int64)
        pos_of[perm0] = np.arange(n)
        order = pos_of[got_perm]          # new position p holds the sample from old position order[p]
    got_perm, got_inv = perm.get(), inv.get()
    _eq(f"{what}: perm", got_perm, perm0[order])
    want_inv = np.empty(n, np.int32)
    want_inv[got_perm] = np.arange(n, dtype=np.int32)
    _eq(f"{what}: inv (inv[perm[p]] == p)", got_inv, want_inv)
    for (arr, elem, width, pitch), (old, _, rows, stride) in zip(specs, host):
        got = arr.get()
        for r in range(rows):
            row_old = old[r * stride:r * stride + n * elem].reshape(n, elem) if n else old[:0].reshape(0, elem)
            row_got = got[r * stride:r * stride + n * elem].reshape(n, elem) if n else got[:0].reshape(0, elem)
            _eq(f"{what}: plane of {elem}-byte elements, row {r}", row_got, row_old[order])
            if stride > n * elem:
                _eq(f"{what}: plane of {elem}-byte elements, row {r} padding (untouched)",
                    got[r * stride + n * elem:(r + 1) * stride], old[r * stride + n * elem:(r + 1) * stride])
    want_span = span_v if fire_v == 0 else k
    if int(span.get()[0]) != want_span:
        raise CheckFailure(f"{what}: *span = {int(span.get()[0])}, expected {want_span}")
    if fire is not None and int(fire.get()[0]) != 0:
        raise CheckFailure(f"{what}: *fire = {int(fire.get()[0])} after the reorder (must be reset to 0)")


@bcheck("reorder_device.matches_numpy", needs=("stream", "filtering"))
def reorder_matches(s):
    """reorder_device is a stable partition of every plane (1, 2, 4, 8, 16-byte elements, pitched
    rows) over [0, *span), perm/inv kept consistent, positions from *span on untouched."""
    s.device()
    rng = np.random.default_rng(11)
    with Objects(s) as o:
        h, raw = o.stream()
        for n in SIZES:
            for flags in (0, 1):
                for span_v in sorted({n, n // 2}):
                    _reorder_case(s, raw, h, n, span_v, flags, rng)
    return f"n in {SIZES}"


@bcheck("reorder_device.fire_gate", needs=("stream", "filtering"))
def reorder_fire(s):
    """With fire given, the reorder happens only where *fire != 0, and *fire is reset to 0."""
    s.device()
    rng = np.random.default_rng(5)
    with Objects(s) as o:
        h, raw = o.stream()
        _reorder_case(s, raw, h, 257, 257, 0, rng, fire_v=0)
        _reorder_case(s, raw, h, 257, 200, 0, rng, fire_v=1)


# ------------------------------------------------------------------------------ memory
def _host(n, dtype, values=None):
    a = np.zeros(n, dtype) if values is None else np.array(values, dtype)
    return a, int(a.ctypes.data)


@bcheck("memcpy.directions", needs=("stream",))
def memcpy_directions(s):
    """memcpy copies H2D, D2H, D2D and H2H on a stream; an unknown direction is INVALID_ARGUMENT."""
    mem = s.device()
    n = 1000
    src, src_addr = _host(n, np.int64, np.arange(n) * 7 - 3)
    back, back_addr = _host(n, np.int64)
    hh, hh_addr = _host(n, np.int64)
    d1, d2 = mem.zeros(n, np.int64), mem.zeros(n, np.int64)
    with Objects(s) as o:
        h, raw = o.stream()
        nb = n * 8
        s.ok("memcpy", d1.addr, src_addr, nb, 1, raw)
        s.ok("memcpy", d2.addr, d1.addr, nb, 3, raw)
        s.ok("memcpy", back_addr, d2.addr, nb, 2, raw)
        s.ok("memcpy", hh_addr, back_addr, nb, 4, raw)
        s.sync(h)
        _eq("H2D then D2D then D2H then H2H", hh, src)
        _eq("device copy (D2D)", d2.get(), src)
        s.expect("memcpy", "INVALID_ARGUMENT", hh_addr, src_addr, nb, 9, raw, why="direction 9")


@bcheck("memcpy.stream_order", needs=("stream", "exec"))
def memcpy_stream_order(s):
    """A copy enqueued after a slow kernel copies what the kernel wrote."""
    mem = s.device()
    n = 16
    x = mem.zeros(n, np.int64)
    out, out_addr = _host(n, np.int64)
    with Objects(s) as o:
        h, raw = o.stream()
        s.launch("affine", raw, [x.addr, 1, 42, SLOW_US], n)
        s.ok("memcpy", out_addr, x.addr, n * 8, 2, raw)
        s.sync(h)
        _eq("D2H copy after a slow kernel", out, np.full(n, 42))


@bcheck("host_alloc.roundtrip")
def host_alloc_roundtrip(s):
    """host_alloc gives writable memory of the size asked; host_free frees it."""
    s.need_device()
    p = ffi.new("void**")
    for nbytes in (1, 4096, 1 << 20):
        s.ok("host_alloc", nbytes, 0, p)
        if p[0] == ffi.NULL:
            raise CheckFailure(f"host_alloc({nbytes}) returned OK and NULL")
        buf = ffi.buffer(p[0], nbytes)
        pattern = bytes(i * 13 % 256 for i in range(min(nbytes, 4096)))
        buf[:len(pattern)] = pattern
        buf[nbytes - 1:nbytes] = b"\x5a"
        if bytes(buf[:len(pattern) - (1 if nbytes <= 4096 else 0)]) != pattern[:len(pattern) - (1 if nbytes <= 4096 else 0)]:
            raise CheckFailure(f"host_alloc({nbytes}) memory does not keep what was written")
        if not s.has("host_free"):
            raise CheckFailure("host_alloc is exported without host_free")
        s.raw("host_free", p[0])


@bcheck("host_free.many", needs=("host_alloc",))
def host_free_many(s):
    """host_free returns what host_alloc gave, many times over (no failure, no growth)."""
    s.need_device()
    p = ffi.new("void**")
    for _ in range(200):
        s.ok("host_alloc", 65536, 0, p)
        s.raw("host_free", p[0])


@bcheck("host_func.stream_order", needs=("stream", "exec"))
def host_func_order(s):
    """Host functions run in stream order: after the work before them, before the work after."""
    mem = s.device()
    n = 4
    x = mem.zeros(n, np.int64)
    seen = []
    staging, staging_addr = _host(n, np.int64)
    direct = mem.host_is_device
    if not direct:
        s.require("memcpy")

    def read(tag):
        def fn(_):
            src = x.get() if direct else staging
            seen.append((tag, int(src[0])))
        return fn

    cbs = [ffi.callback("eagle_backend_host_fn", read(t)) for t in ("a", "b")]
    with Objects(s) as o:
        h, raw = o.stream()
        s.launch("affine", raw, [x.addr, 1, 5, SLOW_US], n)
        if not direct:
            s.ok("memcpy", staging_addr, x.addr, n * 8, 2, raw)
        s.ok("host_func", raw, cbs[0], ffi.NULL)
        s.launch("affine", raw, [x.addr, 2, 1, SLOW_US // 3], n)
        if not direct:
            s.ok("memcpy", staging_addr, x.addr, n * 8, 2, raw)
        s.ok("host_func", raw, cbs[1], ffi.NULL)
        s.sync(h)
    if seen != [("a", 5), ("b", 11)]:
        raise CheckFailure(f"host functions saw {seen}; in stream order they see [('a', 5), ('b', 11)]")


@bcheck("host_func.replayed", needs=CAPTURE)
def host_func_replayed(s):
    """A host function captured into a graph runs at every replay."""
    s.device()
    calls = []
    cb = ffi.callback("eagle_backend_host_fn", lambda _: calls.append(1))
    with Objects(s) as o:
        h, raw = o.stream()
        captured = captured_of(s, raw, lambda: s.ok("host_func", raw, cb, ffi.NULL))
        if calls:
            raise CheckFailure("a host function enqueued under capture ran at record time")
        lau = o.add("launcher_release", launcher_of(s, captured, raw))
        replay(s, lau, 3)
    if len(calls) != 3:
        raise CheckFailure(f"a captured host function ran {len(calls)} times in 3 replays")


@bcheck("required.handshake")
def required_handshake(s):
    """The handshake eagle's loader runs: version, capabilities, device_types, build_info, probe."""
    v = int(s.raw("version"))
    caps, count = ffi.new("uint64_t*"), ffi.new("int32_t*")
    s.ok("capabilities", caps)
    s.ok("device_types", ffi.NULL, 0, count)
    info = ffi.new("struct eagle_backend_build_info*")
    info.struct_size = ffi.sizeof(info[0])
    s.ok("build_info", info)
    usable, why = s.probe()
    s.raw("free", ffi.NULL)
    s.last_error()
    return (f"eagle-backend/{v >> 16}.{v & 0xFFFF}, {ffi.string(info.backend_kind).decode()}, "
            f"caps {int(caps[0]):#x}, " + ("device usable" if usable else f"no device: {why}"))


# ------------------------------------------------------------------------------ issue 29
# One check per contract sentence the mutation corpus showed unchecked (eagle/check/citations.py
# names each sentence). Each was shown to fail on a cpu mutant (tools/mutate_cpu.py) first.
def _garbage_desc(ctype, struct_size, fields=None):
    """A buffer holding the desc `ctype` whose bytes past `struct_size` are 0xA5 garbage: what a
    caller built against an older header (a smaller sizeof) may have there. `fields`: values set
    inside the caller's part. Returns (the desc pointer, the buffer that keeps it alive)."""
    size = ffi.sizeof(ctype) + 64
    buf = ffi.new("unsigned char[]", size)
    ffi.memmove(buf, b"\xa5" * size, size)
    d = ffi.cast(f"{ctype}*", buf)
    full = ffi.new(f"{ctype}*")
    for k, v in (fields or {}).items():
        setattr(full, k, v)
    ffi.memmove(buf, ffi.buffer(full, struct_size), struct_size)
    d.struct_size = struct_size
    return d, buf


@bcheck("stream.desc_read_to_struct_size")
def stream_desc_read_to_struct_size(s):
    """A stream desc is read only up to the caller's struct_size, the rest taken as zero: with
    struct_size 4 or 8 and garbage beyond (an unknown flag bit, device 0xA5A5A5A5), stream_create
    makes a stream (flags 0, device 0)."""
    s.need_device()
    for size, beyond in ((4, "flags and device"), (8, "device")):
        d, _keep = _garbage_desc("struct eagle_backend_stream_desc", size)
        out = ffi.new("eagle_backend_stream*")
        st = s.raw("stream_create", d, out)
        if st:
            raise CheckFailure(f"stream_create with desc->struct_size {size} and garbage in {beyond} (past "
                               f"the caller's struct_size) returned {status_name(st)}: {s.last_error()!r}; the "
                               "callee reads only the fields that fit and takes the rest as zero")
        s.raw("stream_release", out[0])
    return "struct_size 4 and 8 with garbage beyond: streams made"


def _hold_default_stream(s, seconds):
    """Enqueues on the default stream (raw 0) a host function that blocks until an event is set,
    which a timer sets after `seconds`. Returns the event and what must be kept alive; Skip when the
    kind has no default stream or no host_func."""
    import threading
    s.require("host_func")
    ev = threading.Event()

    def block(_):
        ev.wait(30)
    cb = ffi.callback("eagle_backend_host_fn", block)
    st = s.raw("host_func", 0, cb, ffi.NULL)
    if st:
        raise Skip(f"host_func on raw stream 0 returned {status_name(st)} ({s.last_error()!r}): the kind "
                   "has no default stream to order with")
    timer = threading.Timer(seconds, ev.set)
    timer.start()
    return ev, (cb, timer)


def _drain_default(s, keep):
    """Waits (at most 30 s) until the default stream has run everything enqueued so far."""
    import threading
    done = threading.Event()
    cb = ffi.callback("eagle_backend_host_fn", lambda _: done.set())
    keep.append(cb)
    s.ok("host_func", 0, cb, ffi.NULL)
    if not done.wait(30):
        raise CheckFailure("the default stream did not finish its work within 30 s")


def _small_work(s, keep):
    """Prepares one small piece of work that is not a host function (so it needs no host-callback
    thread that a blocked host function could hold): a kernel, else a copy. Everything it needs
    (device memory, the checker's kernels) is made now, before the default stream is held, since
    making it may synchronise with the default stream. Returns (how, enqueue(raw))."""
    if s.provides("exec") and s.provides("mem_alloc"):
        x = s.device().zeros(4, np.int64)
        keep.append(x)
        return "exec", lambda raw: s.launch("affine", raw, [x.addr, 1, 1, 0], 4)
    if s.provides("memcpy"):
        a, b = np.arange(4, dtype=np.int64), np.zeros(4, np.int64)
        keep += [a, b]
        return "memcpy", lambda raw: s.ok("memcpy", b.ctypes.data, a.ctypes.data, a.nbytes, 4, raw)
    raise Skip("needs exec or memcpy to enqueue work that is not a host function")


@bcheck("stream.non_blocking", needs=("host_func",))
def stream_non_blocking(s):
    """A NON_BLOCKING stream does not synchronise with the default stream: while the default
    stream is held by a blocked host function, work on a NON_BLOCKING stream runs and its
    synchronize returns."""
    s.need_device()
    hold = 5.0
    keep = []
    with Objects(s) as o:
        h, raw = o.stream(flags=1)
        how, work = _small_work(s, keep)
        ev, k = _hold_default_stream(s, hold)
        keep.append(k)
        try:
            work(raw)
            t0 = time.monotonic()
            s.sync(h)
            waited = time.monotonic() - t0
            released = ev.is_set()
        finally:
            ev.set()
            k[1].cancel()
            _drain_default(s, keep)
        if released:
            raise CheckFailure(f"synchronize of a NON_BLOCKING stream ({how} work) returned only after the "
                               f"default stream's blocked work was let go ({waited:.1f} s): it waited for the "
                               "default stream")
    return f"{how} on a NON_BLOCKING stream finished in {waited:.2f} s beside a held default stream"


@bcheck("stream.default_stream_order", needs=("host_func",))
def stream_default_stream_order(s):
    """Where the kind has a default stream, a stream made without NON_BLOCKING waits for the
    default stream's earlier work, and the default stream waits for its earlier work."""
    import threading
    s.need_device()
    hold = 1.0
    keep = []
    with Objects(s) as o:
        h, raw = o.stream()
        how, work = _small_work(s, keep)
        ev, k = _hold_default_stream(s, hold)
        keep.append(k)
        try:
            work(raw)
            s.sync(h)
            released = ev.is_set()
        finally:
            ev.set()
            _drain_default(s, keep)
        if not released:
            raise CheckFailure(f"{how} work on a blocking stream finished (synchronize returned) while the "
                               "default stream's earlier work was still held: it must wait for it")
        # the other way: the default stream waits for a blocking stream's earlier work
        ev2 = threading.Event()
        cb = ffi.callback("eagle_backend_host_fn", lambda _: ev2.wait(30))
        keep.append(cb)
        s.ok("host_func", raw, cb, ffi.NULL)
        timer = threading.Timer(hold, ev2.set)
        timer.start()
        saw = {}
        done = threading.Event()

        def after(_):
            saw["released"] = ev2.is_set()
            done.set()
        cb2 = ffi.callback("eagle_backend_host_fn", after)
        keep.append(cb2)
        try:
            s.ok("host_func", 0, cb2, ffi.NULL)
            done.wait(30)
        finally:
            ev2.set()
            s.sync(h)
        if not saw.get("released"):
            raise CheckFailure("a host function on the default stream ran while a blocking stream's earlier "
                               "work was still held: the default stream must wait for it")
    return f"both ways ({how} and host functions)"


@bcheck("capturer.end_broken", needs=("stream", "captured", "conditional"))
def capturer_end_broken(s):
    """A capture broken by misuse (a conditional released with its body open) ends with
    INVALID_ARGUMENT and hands nothing back."""
    mem = s.device()
    count = mem.zeros(1, np.uint32)
    with Objects(s) as o:
        _h, raw = o.stream()
        cap = Capture(s, raw)
        o.add("capturer_release", cap.h[0])
        cap.begin()
        d = ffi.new("struct eagle_backend_conditional_desc*")
        d.struct_size, d.device, d.origin, d.count_ptr = ffi.sizeof(d[0]), -1, raw, count.addr
        c = ffi.new("eagle_backend_conditional*")
        s.ok("conditional_create", d, c)
        body = ffi.new("uint64_t*")
        s.ok("conditional_begin", c[0], body)
        s.raw("conditional_release", c[0])     # "an open body is abandoned, breaking the capture"
        out = ffi.new("eagle_backend_captured*")
        st = s.raw("capturer_end", cap.h[0], out)
        if st == 0:
            if out[0] != ffi.NULL:
                s.raw("captured_release", out[0])
            raise CheckFailure("capturer_end returned OK for a capture broken by releasing a conditional with "
                               "its body open; expected INVALID_ARGUMENT, with nothing returned")
        if st != STATUS["INVALID_ARGUMENT"]:
            raise CheckFailure(f"capturer_end of a broken capture returned {status_name(st)}, expected "
                               "INVALID_ARGUMENT")
        if not s.last_error().strip():
            raise CheckFailure("capturer_end of a broken capture left last_error empty")
        if out[0] != ffi.NULL:
            raise CheckFailure("capturer_end of a broken capture wrote a captured handle (nothing is returned)")


@bcheck("conditional.desc_read_to_struct_size", needs=COND)
def conditional_desc_read_to_struct_size(s):
    """A conditional desc of the 1.0 size (up to counter_ptr), with garbage where minor 4's
    case_count would be, is an IF: the fields past the caller's struct_size are taken as zero."""
    mem = s.device()
    n = 4
    x = mem.zeros(n, np.int64)
    count = mem.array([1], np.uint32)
    size = ffi.offsetof("struct eagle_backend_conditional_desc", "case_count")
    with Objects(s) as o:
        h, raw = o.stream()

        def record():
            d, _keep = _garbage_desc("struct eagle_backend_conditional_desc", size,
                                     {"device": -1, "origin": raw, "count_ptr": count.addr})
            c = ffi.new("eagle_backend_conditional*")
            st = s.raw("conditional_create", d, c)
            if st:
                raise CheckFailure(f"conditional_create with the 1.0 struct_size {size} and garbage past it "
                                   f"returned {status_name(st)}: {s.last_error()!r}; case_count is past the "
                                   "caller's struct_size, so it is 0: an IF")
            o.add("conditional_release", c[0])
            body = ffi.new("uint64_t*")
            s.ok("conditional_begin", c[0], body)
            s.launch("affine", int(body[0]), [x.addr, 1, 1, 0], n)
            s.ok("conditional_end", c[0])

        lau = o.add("launcher_release", launcher_of(s, captured_of(s, raw, record), raw))
        replay(s, lau)
        count.set([0])
        replay(s, lau)
        _eq("x after an IF of a short desc ran once (*count 1) and was skipped once (*count 0)", x.get(),
            np.ones(n))


@bcheck("conditional_begin_case.once", needs=COND)
def conditional_begin_case_once(s):
    """Each SWITCH case may be opened once: opening a case already opened (the open one, or one
    closed by opening the next) is INVALID_ARGUMENT; begin_case on an IF is INVALID_ARGUMENT."""
    mem = s.device()
    sel = mem.zeros(1, np.uint32)
    with Objects(s) as o:
        h, raw = o.stream()

        def record():
            c = _conditional(s, o, raw, sel, case_count=3)
            body = ffi.new("uint64_t*")
            s.ok("conditional_begin_case", c, 0, body)
            s.expect("conditional_begin_case", "INVALID_ARGUMENT", c, 0, body, why="case 0, the open one, again")
            s.ok("conditional_begin_case", c, 1, body)
            s.expect("conditional_begin_case", "INVALID_ARGUMENT", c, 0, body, why="case 0, opened before")
            s.ok("conditional_end", c)
            cif = _conditional(s, o, raw, sel)
            s.expect("conditional_begin_case", "INVALID_ARGUMENT", cif, 0, body, why="an IF")
            s.ok("conditional_begin", cif, body)
            s.ok("conditional_end", cif)

        cap = Capture(s, raw).begin()
        try:
            record()
        finally:
            out = ffi.new("eagle_backend_captured*")
            if s.raw("capturer_end", cap.h[0], out) == 0:
                s.raw("captured_release", out[0])
            cap.release()


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
            c = _conditional(s, o, raw, count)                              # an IF node: y += 1
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
                _eq(f"the disabled {what} node's work (it must do nothing)", arr.get(), before)
                s.ok("launcher_set_node_enabled", lau, node, 1)
            elif st == 0:
                s.ok("launcher_set_node_enabled", lau, node, 1)
                raise CheckFailure(f"is_node_toggleable = 0 for the {what} node, but set_node_enabled switched it")
        replay(s, lau)
    return ", ".join(said)


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
        _eq("y after a replay: node 2 (y = y*3 + x) after node 1 (a slow x = 7)", y.get(), [1 * 3 + 7])


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
        _eq("y after a replay moved to s2 behind a slow x = 7 on s2", y.get(), [1 * 3 + 7])


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
            c = _conditional(s, o, raw, sel)
            body = ffi.new("uint64_t*")
            s.ok("conditional_begin", c, body)
            k(int(body[0]))
            k(int(body[0]))                                     # 2 in the IF
            s.ok("conditional_end", c)
            if switch:
                c = _conditional(s, o, raw, sel, case_count=3)
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
