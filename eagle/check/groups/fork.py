"""Checks of the ``fork`` group: branches run and join (eagerly and under capture), the queries,
and the general rules (bad handles, NULL outs, releases free)."""
import numpy as np

from ..._seam_ffi import ffi
from .._registry import CheckFailure
from ._helpers import (CAPTURE, Objects, SLOW_US, UNKNOWN_FLAG, bcheck, captured_of, enqueue_work,
                       expect_equal, launcher_of, measured_release, refused, release_null_check, replay,
                       unknown_flags_check)


release_null_check("fork", "fork_release")


@unknown_flags_check("fork", "fork_desc.flags")
def _fork_flags(s):
    s.require("stream")
    h, raw = s.new_stream()
    try:
        d = ffi.new("struct eagle_backend_fork_desc*")
        d.struct_size, d.flags, d.device, d.origin, d.branch_count = ffi.sizeof(d[0]), UNKNOWN_FLAG, -1, raw, 2
        out = ffi.new("eagle_backend_fork*")
        return refused(s, "fork_create", s.raw("fork_create", d, out),
                       lambda: s.raw("fork_release", out[0]))
    finally:
        s.raw("stream_release", h)


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
        expect_equal("branch results (branches must start after the origin's work)", [v.get()[0] for v in bs], b)
        expect_equal("origin result after join (it must wait for every branch)", r.get(), [rr])


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
        expect_equal("branch results after 2 replays", [v.get()[0] for v in bs], b)
        expect_equal("origin result after 2 replays", r.get(), [rr])


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


@bcheck("fork.bad_handle", needs=("stream",), advice=True)
def fork_bad_handle(s):
    """A released fork is BAD_HANDLE."""
    s.need_device()
    with Objects(s) as o:
        _h, raw = o.stream()
        d = ffi.new("struct eagle_backend_fork_desc*")
        d.struct_size, d.device, d.origin, d.branch_count = ffi.sizeof(d[0]), -1, raw, 2
        f = ffi.new("eagle_backend_fork*")
        s.ok("fork_create", d, f)
        s.raw("fork_release", f[0])
        u64 = ffi.new("uint64_t*")
        s.expect("fork_size", "BAD_HANDLE", f[0], u64, why="a released fork")
        s.expect("fork_fork", "BAD_HANDLE", f[0], why="a released fork")
        s.expect("fork_branch", "BAD_HANDLE", f[0], 0, u64, why="a released fork")


@bcheck("fork.null_out", needs=("stream",))
def fork_null_out(s):
    """NULL out-parameters of the fork group and a zero branch_count are INVALID_ARGUMENT."""
    s.need_device()
    with Objects(s) as o:
        _h, raw = o.stream()
        d = ffi.new("struct eagle_backend_fork_desc*")
        d.struct_size, d.device, d.origin, d.branch_count = ffi.sizeof(d[0]), -1, raw, 0
        f = ffi.new("eagle_backend_fork*")
        s.expect("fork_create", "INVALID_ARGUMENT", d, f, why="branch_count 0")
        d.branch_count = 2
        s.expect("fork_create", "INVALID_ARGUMENT", d, ffi.NULL, why="out is NULL")
        s.ok("fork_create", d, f)
        o.add("fork_release", f[0])
        for fn, args in (("fork_size", ()), ("fork_origin", ()), ("fork_forked", ()), ("fork_branch", (0,))):
            s.expect(fn, "INVALID_ARGUMENT", f[0], *args, ffi.NULL, why="the out-parameter is NULL")


@bcheck("fork.release_frees", needs=("stream",))
def fork_release_frees(s):
    """fork_create/fork/join/release with work on the branches does not grow threads, descriptors
    or memory."""
    s.need_device()
    keep = []
    with Objects(s) as o:
        h, raw = o.stream()
        d = ffi.new("struct eagle_backend_fork_desc*")
        d.struct_size, d.device, d.origin, d.branch_count = ffi.sizeof(d[0]), -1, raw, 3
        f = ffi.new("eagle_backend_fork*")
        br = ffi.new("uint64_t*")

        def cycle():
            s.ok("fork_create", d, f)
            s.ok("fork_fork", f[0])
            for i in range(3):
                s.ok("fork_branch", f[0], i, br)
                enqueue_work(s, int(br[0]), keep)
            s.ok("fork_join", f[0])
            s.sync(h)
            s.raw("fork_release", f[0])
            keep.clear()

        return measured_release(s, "fork create + work on 3 branches + release", cycle, 200, per_cycle_bytes=512)
