"""Checks of the header's general rules, sentence by sentence, for every group they touch:

- "A handle is not one this backend made, or has been released or consumed" -> BAD_HANDLE, with a
  message (``<group>.bad_handle``). That sentence defines the status; the header nowhere requires a
  backend to recognise every released handle (in C that means a registry of every handle, which
  Vulkan and PJRT call invalid usage instead), so these checks are advice, never a failure;
- "A failed call leaves a message" -> every status provoked here and in behaviour.py carries one
  (Session.expect); NULL out-parameters are INVALID_ARGUMENT (``<group>.null_out``);
- out-parameters are checked with data whose every byte matters (``memcpy.every_byte``);
- "ERROR when that work failed" -> failed enqueued work surfaces at synchronize
  (``stream.failed_work_surfaces``, ``launcher.failed_replay_surfaces``);
- releases free what they release, measured: threads, descriptors and resident memory of this
  process do not grow over many create/release cycles (``<group>.release_frees``)."""
import os
import time

import numpy as np

from .._seam_ffi import ffi
from ._registry import CheckFailure, Skip, check
from ._seam import PREFIX, STATUS, status_name
from .behaviour import Capture, Objects, captured_of, launcher_of


def bcheck(check_id, needs=(), advice=False):
    return check(check_id, kind="behaviour", needs=needs, advice=advice)


_NOOP = ffi.callback("eagle_backend_host_fn", lambda _: None)


def enqueue_work(s, raw, keep):
    """Enqueue (or record) one small piece of work on raw stream `raw` with whatever the backend
    offers: a host function, a host-to-host copy or a kernel. Returns how, or None when it has
    no way to enqueue work."""
    if s.provides("host_func"):
        s.ok("host_func", raw, _NOOP, ffi.NULL)
        return "host_func"
    if s.provides("memcpy"):
        a, b = np.arange(4, dtype=np.int64), np.zeros(4, np.int64)
        keep += [a, b]
        s.ok("memcpy", b.ctypes.data, a.ctypes.data, a.nbytes, 4, raw)
        return "memcpy"
    if s.provides("exec"):
        x = s.device().zeros(4, np.int64)
        keep.append(x)
        s.launch("affine", raw, [x.addr, 1, 1, 0], 4)
        return "exec"
    return None


def _recorded(s, raw, keep):
    """A captured handle holding one node; Skip when the backend can record nothing."""
    how = {}
    captured = captured_of(s, raw, lambda: how.setdefault("how", enqueue_work(s, raw, keep)))
    if how.get("how") is None:
        s.raw("captured_release", captured)
        raise Skip("the backend has no way to record a node (no host_func, memcpy or exec)")
    return captured


# ------------------------------------------------------------------------------ BAD_HANDLE
FOREIGN = ffi.new("uint64_t[64]")   # zeroed memory no backend made


def _foreign(ctype):
    return ffi.cast(ctype, FOREIGN)


@bcheck("stream.bad_handle", advice=True)
def stream_bad_handle(s):
    """A released, a NULL and a foreign stream handle are BAD_HANDLE, with a message."""
    s.need_device()
    h, _raw = s.new_stream()
    s.raw("stream_release", h)
    out = ffi.new("uint64_t*")
    s.expect("stream_ptr", "BAD_HANDLE", h, out, why="a released stream")
    s.expect("stream_synchronize", "BAD_HANDLE", h, why="a released stream")
    s.expect("stream_synchronize", "BAD_HANDLE", ffi.NULL, why="a NULL stream")
    s.expect("stream_ptr", "BAD_HANDLE", _foreign("eagle_backend_stream"), out, why="a foreign pointer")


@bcheck("capturer.bad_handle", needs=("stream",), advice=True)
def capturer_bad_handle(s):
    """A released capturer is BAD_HANDLE for begin and end."""
    s.need_device()
    with Objects(s) as o:
        _h, raw = o.stream()
        cap = Capture(s, raw)
        cap.release()
        s.expect("capturer_begin", "BAD_HANDLE", cap.h[0], why="a released capturer")
        out = ffi.new("eagle_backend_captured*")
        s.expect("capturer_end", "BAD_HANDLE", cap.h[0], out, why="a released capturer")
        s.expect("capturer_begin", "BAD_HANDLE", ffi.NULL, why="a NULL capturer")


@bcheck("captured.bad_handle", needs=("stream", "capturer"), advice=True)
def captured_bad_handle(s):
    """Released captured work is BAD_HANDLE; so is captured work a graph consumed."""
    s.need_device()
    keep = []
    with Objects(s) as o:
        _h, raw = o.stream()
        empty = captured_of(s, raw, lambda: None)
        s.raw("captured_release", empty)
        valid = ffi.new("int32_t*")
        s.expect("captured_is_valid", "BAD_HANDLE", empty, valid, why="released captured work")
        s.expect("captured_is_valid", "BAD_HANDLE", ffi.NULL, valid, why="NULL captured work")
        if not s.provides("graph"):
            return "released: BAD_HANDLE (consumption not checked: no graph group)"
        full = _recorded(s, raw, keep)
        g = ffi.new("eagle_backend_graph*")
        st = s.raw("graph_from_captured", full, g)
        if st:
            s.raw("captured_release", full)
            raise CheckFailure(f"graph_from_captured of a one-node capture failed: {s.last_error()!r}")
        o.add("graph_release", g[0])
        s.expect("captured_is_valid", "BAD_HANDLE", full, valid, why="captured work graph_from_captured consumed")
        s.expect("graph_add_node", "BAD_HANDLE", g[0], full, why="captured work already consumed")
        full2 = _recorded(s, raw, keep)
        st = s.raw("graph_add_node", g[0], full2)
        if st:
            s.raw("captured_release", full2)
            raise CheckFailure(f"graph_add_node of a one-node capture failed: {s.last_error()!r}")
        s.expect("captured_is_valid", "BAD_HANDLE", full2, valid, why="captured work graph_add_node consumed")


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


@bcheck("conditional.bad_handle", needs=("stream", "capturer", "captured"), advice=True)
def conditional_bad_handle(s):
    """A released conditional is BAD_HANDLE."""
    mem = s.device()
    count = mem.zeros(1, np.uint32)
    with Objects(s) as o:
        _h, raw = o.stream()
        cap = Capture(s, raw).begin()
        try:
            d = ffi.new("struct eagle_backend_conditional_desc*")
            d.struct_size, d.device, d.origin, d.count_ptr = ffi.sizeof(d[0]), -1, raw, count.addr
            c = ffi.new("eagle_backend_conditional*")
            s.ok("conditional_create", d, c)
            s.raw("conditional_release", c[0])
            loop = ffi.new("int32_t*")
            s.expect("conditional_is_loop", "BAD_HANDLE", c[0], loop, why="a released conditional")
            body = ffi.new("uint64_t*")
            s.expect("conditional_begin", "BAD_HANDLE", c[0], body, why="a released conditional")
            out = ffi.new("eagle_backend_captured*")
            if s.raw("capturer_end", cap.h[0], out) == 0:
                s.raw("captured_release", out[0])
        finally:
            cap.release()


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


@bcheck("launcher.bad_handle", needs=("stream", "capturer", "captured", "graph"), advice=True)
def launcher_bad_handle(s):
    """A released launcher is BAD_HANDLE for launch, synchronize and its setters."""
    s.need_device()
    keep = []
    with Objects(s) as o:
        _h, raw = o.stream()
        lau = launcher_of(s, _recorded(s, raw, keep), raw)
        s.ok("launcher_launch", lau)
        s.ok("launcher_synchronize", lau)
        s.raw("launcher_release", lau)
        s.expect("launcher_launch", "BAD_HANDLE", lau, why="a released launcher")
        s.expect("launcher_synchronize", "BAD_HANDLE", lau, why="a released launcher")
        s.expect("launcher_set_logical_size", "BAD_HANDLE", lau, 4, why="a released launcher")
        cnt = ffi.new("int64_t*")
        s.expect("launcher_kernel_node_count", "BAD_HANDLE", lau, cnt, why="a released launcher")


# ------------------------------------------------------------------------------ NULL outs
@bcheck("stream.null_out")
def stream_null_out(s):
    """NULL out-parameters and descs of the stream group are INVALID_ARGUMENT, with a message."""
    s.need_device()
    d = ffi.new("struct eagle_backend_stream_desc*", {"struct_size": 16, "device": -1})
    s.expect("stream_create", "INVALID_ARGUMENT", d, ffi.NULL, why="out is NULL")
    out = ffi.new("eagle_backend_stream*")
    s.expect("stream_create", "INVALID_ARGUMENT", ffi.NULL, out, why="desc is NULL")
    # struct_size 3 holds no field at all: the header's rule for input descs is that the callee
    # takes what does not fit as zero (a stream on device 0), and INVALID_ARGUMENT says a size is
    # out of its domain. Either answer is what the header says; anything else is not.
    d.struct_size, d.device = 3, 12345
    st = s.raw("stream_create", d, out)
    if st == 0:
        s.raw("stream_release", out[0])
    elif st != STATUS["INVALID_ARGUMENT"]:
        raise CheckFailure(f"stream_create with desc->struct_size 3 returned {status_name(st)}: "
                           f"{s.last_error()!r}; a desc holding no field is read as all zero (OK, a stream "
                           "on device 0) or refused as a bad size (INVALID_ARGUMENT)")
    elif not s.last_error().strip():
        raise CheckFailure("stream_create refused desc->struct_size 3 with INVALID_ARGUMENT and an empty "
                           "last_error; a failed call leaves a message")
    with Objects(s) as o:
        h, _raw = o.stream()
        s.expect("stream_ptr", "INVALID_ARGUMENT", h, ffi.NULL, why="raw is NULL")


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


# ------------------------------------------------------------------------------ every byte
@bcheck("memcpy.every_byte", needs=("stream",))
def memcpy_every_byte(s):
    """memcpy copies exactly `bytes` bytes in every direction: random non-zero data (so a byte
    short is seen), odd sizes and unaligned addresses, and the bytes after the copy untouched."""
    mem = s.device()
    rng = np.random.default_rng(20261130)
    guard = 64
    with Objects(s) as o:
        h, raw = o.stream()
        for n in (1, 7, 8, 1001, 65537):
            src = np.zeros(n + 1 + guard, np.uint8)
            src[1:n + 1] = rng.integers(1, 256, n, dtype=np.uint8)
            src[n + 1:] = rng.integers(1, 256, guard, dtype=np.uint8)   # must not be copied
            want = src[1:n + 1]
            d1, d2 = mem.zeros(n + 1 + guard, np.uint8), mem.zeros(n + 1 + guard, np.uint8)
            back, back2 = np.zeros(n + 1 + guard, np.uint8), np.zeros(n + 1 + guard, np.uint8)
            s.ok("memcpy", d1.addr + 1, src.ctypes.data + 1, n, 1, raw)        # H2D, unaligned
            s.ok("memcpy", d2.addr + 1, d1.addr + 1, n, 3, raw)                 # D2D
            s.ok("memcpy", back.ctypes.data + 1, d2.addr + 1, n, 2, raw)        # D2H
            s.ok("memcpy", back2.ctypes.data + 1, back.ctypes.data + 1, n, 4, raw)  # H2H
            s.sync(h)
            for what, got in (("H2D", d1.get()), ("D2D", d2.get()), ("D2H", back), ("H2H", back2)):
                if not np.array_equal(got[1:n + 1], want):
                    bad = np.flatnonzero(got[1:n + 1] != want)
                    raise CheckFailure(f"memcpy {what} of {n} bytes: byte {int(bad[0])} differs "
                                       f"({len(bad)} bytes wrong; e.g. a copy that stops short)")
                if got[0] != 0 or np.any(got[n + 1:] != 0):
                    raise CheckFailure(f"memcpy {what} of {n} bytes wrote outside [dst, dst + {n})")
    return "1, 7, 8, 1001 and 65537 bytes, four directions, unaligned"


# ------------------------------------------------------------------------------ failed work
@bcheck("stream.failed_work_surfaces")
def stream_failed_work(s):
    """Enqueued work that fails makes stream_synchronize return ERROR with a message."""
    s.device()
    with Objects(s) as o:
        h, raw = o.stream()
        ran_clamped = s.kernels.enqueue_failing(raw)
        st = s.raw("stream_synchronize", h)
        if st == 0 and ran_clamped():
            return "the backend ran the work with its span clamped (nothing failed)"
        if st != 1:
            raise CheckFailure(f"stream_synchronize after failing work returned {st}; expected ERROR")
        if not s.last_error().strip():
            raise CheckFailure("stream_synchronize returned ERROR with an empty last_error")
    return "ERROR at synchronize"


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


# ------------------------------------------------------------------------------ release, measured
def _usage():
    threads = len(os.listdir("/proc/self/task"))
    fds = len(os.listdir("/proc/self/fd"))
    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return threads, fds, rss


#: How long _measured waits for threads and descriptors to come back down after the cycles: a
#: backend may end a released object's thread after the release returns (the cpu backend's
#: released streams finish their queue on their own thread), and on a loaded machine that thread
#: can still be there when the cycles end. Growth that lasts is a leak; this is not.
_SETTLE_S = 2.0


def _measured(s, what, cycle, n, per_cycle_bytes=96, warm=None):
    """Runs cycle() `warm` times, then n times; fails when threads or descriptors of this process
    grew (and stay grown for _SETTLE_S), or resident memory grew by more than per_cycle_bytes per
    cycle (min 1 MiB)."""
    if not os.path.isdir("/proc/self/task"):
        raise Skip("needs /proc to measure threads, descriptors and resident memory")
    for _ in range(warm if warm is not None else max(n // 10, 3)):
        cycle()
    t0, f0, r0 = _usage()
    for _ in range(n):
        cycle()
    t1, f1, r1 = _usage()
    deadline = time.monotonic() + _SETTLE_S
    while (t1 > t0 or f1 > f0) and time.monotonic() < deadline:
        time.sleep(0.01)  # a released object's thread may still be on its way out: not a leak
        t1, f1, r1 = _usage()
    problems = []
    if t1 > t0:
        problems.append(f"threads {t0} -> {t1}")
    if f1 > f0:
        problems.append(f"open descriptors {f0} -> {f1}")
    limit = max(1 << 20, per_cycle_bytes * n)
    if r1 - r0 > limit:
        problems.append(f"resident memory +{(r1 - r0) / 1024:.0f} KiB (more than {limit // 1024} KiB)")
    if problems:
        raise CheckFailure(f"{n} cycles of {what}: " + ", ".join(problems) + "; released objects "
                           "must free what they hold")
    return f"{n} cycles of {what}: threads {t0}->{t1}, fds {f0}->{f1}, rss {(r1 - r0) // 1024:+d} KiB"


@bcheck("stream.release_frees")
def stream_release_frees(s):
    """stream_create/release, with and without work enqueued, does not grow the process's
    threads, descriptors or memory."""
    s.need_device()
    keep = []
    box = {}

    def with_work():
        h, raw = s.new_stream()
        box["how"] = enqueue_work(s, raw, keep)
        s.sync(h)
        s.raw("stream_release", h)
        keep.clear()

    def bare():
        h, _raw = s.new_stream()
        s.raw("stream_release", h)

    a = _measured(s, "stream create + work + release", with_work, 200)
    b = _measured(s, "stream create + release", bare, 20000)
    return f"{a}; {b}"


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

        return _measured(s, "fork create + work on 3 branches + release", cycle, 200, per_cycle_bytes=512)


@bcheck("launcher.release_frees", needs=("stream", "capturer", "captured", "graph"))
def launcher_release_frees(s):
    """capture -> graph -> launcher -> replay -> release, over and over, does not grow threads,
    descriptors or memory (captured work, graphs and launchers are freed)."""
    s.need_device()
    keep = []
    with Objects(s) as o:
        _h, raw = o.stream()

        def cycle():
            lau = launcher_of(s, _recorded(s, raw, keep), raw)
            s.ok("launcher_launch", lau)
            s.ok("launcher_synchronize", lau)
            s.raw("launcher_release", lau)
            s.raw("captured_release", captured_of(s, raw, lambda: enqueue_work(s, raw, keep)))
            keep.clear()

        return _measured(s, "capture + graph + launcher + replay + release", cycle, 2000, per_cycle_bytes=256)


@bcheck("host_free.frees", needs=("host_alloc",))
def host_free_frees(s):
    """host_alloc(1 MiB), touched, then host_free, 300 times: resident memory does not grow."""
    s.need_device()
    p = ffi.new("void**")
    page = b"\x5a" * (1 << 20)

    def cycle():
        s.ok("host_alloc", 1 << 20, 0, p)
        ffi.memmove(p[0], page, len(page))
        s.raw("host_free", p[0])

    return _measured(s, "host_alloc(1 MiB) + write + host_free", cycle, 300, per_cycle_bytes=4096)


@bcheck("host_alloc.too_large")
def host_alloc_too_large(s):
    """host_alloc of 2^62 bytes cannot be had: UNAVAILABLE with a message (never OK, never a crash);
    0 bytes is INVALID_ARGUMENT."""
    s.need_device()
    p = ffi.new("void**")
    s.expect("host_alloc", "UNAVAILABLE", 1 << 62, 0, p, why="2^62 bytes")
    s.expect("host_alloc", "INVALID_ARGUMENT", 0, 0, p, why="0 bytes")
    s.expect("host_alloc", "INVALID_ARGUMENT", 64, 0, ffi.NULL, why="out is NULL")
