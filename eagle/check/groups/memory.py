"""Checks of copies and host memory (minor 6, per-symbol entries): ``memcpy`` (every direction,
stream order, every byte), ``host_alloc`` / ``host_free`` (round trip, refusals, releases free) and
``host_func`` (stream order, replayed under capture)."""
import numpy as np

from ..._seam_ffi import ffi
from .._registry import CheckFailure
from .._seam import STATUS, status_name
from ._helpers import (CAPTURE, Capture, Objects, SLOW_US, UNKNOWN_FLAG, bcheck, captured_of, expect_equal,
                       launcher_of, measured_release, refused, release_null_check, replay,
                       unknown_flags_check)


release_null_check("host_free", "host_free")


@unknown_flags_check("host_alloc", "host_alloc's flags")
def _host_alloc_flags(s):
    out = ffi.new("void**")
    return refused(s, "host_alloc", s.raw("host_alloc", 64, UNKNOWN_FLAG, out),
                   lambda: s.raw("host_free", out[0]) if s.has("host_free") else None)


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
        expect_equal("H2D then D2D then D2H then H2H", hh, src)
        expect_equal("device copy (D2D)", d2.get(), src)
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
        expect_equal("D2H copy after a slow kernel", out, np.full(n, 42))


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

    return measured_release(s, "host_alloc(1 MiB) + write + host_free", cycle, 300, per_cycle_bytes=4096)


@bcheck("host_alloc.too_large")
def host_alloc_too_large(s):
    """host_alloc of 2^62 bytes cannot be had: UNAVAILABLE with a message (never OK, never a crash);
    0 bytes is INVALID_ARGUMENT."""
    s.need_device()
    p = ffi.new("void**")
    s.expect("host_alloc", "UNAVAILABLE", 1 << 62, 0, p, why="2^62 bytes")
    s.expect("host_alloc", "INVALID_ARGUMENT", 0, 0, p, why="0 bytes")
    s.expect("host_alloc", "INVALID_ARGUMENT", 64, 0, ffi.NULL, why="out is NULL")


#: Directions outside the table (1..4), on both sides of it and at the ends of int32.
BAD_DIRECTIONS = (0, 5, -1, 9, 2**31 - 1, -2**31)


@bcheck("memcpy.direction_boundaries", needs=("stream",))
def memcpy_direction_boundaries(s):
    """Every direction outside 1..4 is INVALID_ARGUMENT with a message -- 0 and 5 (both sides of
    the table), -1, 9 and the ends of int32 -- for a copy of some bytes and of 0 bytes; 1..4 are
    accepted at both ends of the table (4: H2H; 1 and 4 of 0 bytes)."""
    s.need_device()
    src, src_addr = _host(8, np.int64, range(8))
    dst, dst_addr = _host(8, np.int64)
    with Objects(s) as o:
        h, raw = o.stream()
        for nbytes in (64, 0):
            for direction in BAD_DIRECTIONS:
                st = int(s.raw("memcpy", dst_addr, src_addr, nbytes, direction, raw))
                if st != STATUS["INVALID_ARGUMENT"]:
                    s.sync(h)
                    raise CheckFailure(f"memcpy with direction {direction} ({nbytes} bytes) returned "
                                       f"{status_name(st)}; directions other than 1..4 are INVALID_ARGUMENT")
                if not s.last_error().strip():
                    raise CheckFailure(f"memcpy with direction {direction} returned INVALID_ARGUMENT with an "
                                       "empty last_error")
        s.ok("memcpy", dst_addr, src_addr, 64, 4, raw)
        s.ok("memcpy", dst_addr, src_addr, 0, 4, raw)
        s.ok("memcpy", dst_addr, src_addr, 0, 1, raw)
        s.sync(h)
    expect_equal("H2H copy after the refused directions", dst, src)
    return f"directions {BAD_DIRECTIONS} refused, of 64 and 0 bytes"


@bcheck("memcpy.captured_as_node", needs=("stream", "capturer", "captured", "graph", "launcher"))
def memcpy_captured_as_node(s):
    """Under capture memcpy is recorded as a copy node: nothing is copied while recording, and every
    replay copies what the source holds then (device to device)."""
    mem = s.device()
    n = 256
    src, dst = mem.array(np.arange(n) * 3 + 1, np.int64), mem.zeros(n, np.int64)
    with Objects(s) as o:
        h, raw = o.stream()
        s.sync(h)
        captured = captured_of(s, raw, lambda: s.ok("memcpy", dst.addr, src.addr, n * 8, 3, raw))
        got = dst.get()
        if np.any(got != 0):
            s.raw("captured_release", captured)
            raise CheckFailure("memcpy under capture copied at once (the destination changed before any "
                               "replay); it is captured as a copy node")
        lau = o.add("launcher_release", launcher_of(s, captured, raw))
        replay(s, lau)
        expect_equal("destination after the first replay", dst.get(), np.arange(n) * 3 + 1)
        src.set(np.arange(n) * -5)
        replay(s, lau)
        expect_equal("destination after a replay with a new source", dst.get(), np.arange(n) * -5)
    return "recorded, not run; each replay copies the source as it is then"


#: Sizes no host has: 2^62, both sides of INT64_MAX, 2^64 - 1.
HUGE = (1 << 62, (1 << 63) - 1, 1 << 63, (1 << 64) - 1)


@bcheck("host_alloc.limits", needs=("host_free",))
def host_alloc_limits(s):
    """host_alloc: 1 byte (the smallest size) is OK; sizes no host has (2^62, 2^63 - 1, 2^63,
    2^64 - 1) are UNAVAILABLE with a message, never another status, never a crash."""
    s.need_device()
    p = ffi.new("void**")
    s.ok("host_alloc", 1, 0, p)
    s.raw("host_free", p[0])
    for nbytes in HUGE:
        p[0] = ffi.NULL
        st = int(s.raw("host_alloc", nbytes, 0, p))
        if st == 0:
            s.raw("host_free", p[0])
        if st != STATUS["UNAVAILABLE"]:
            raise CheckFailure(f"host_alloc of {nbytes} bytes returned {status_name(st)}; memory that cannot be "
                               "had is UNAVAILABLE")
        if not s.last_error().strip():
            raise CheckFailure(f"host_alloc of {nbytes} bytes returned UNAVAILABLE with an empty last_error")
    return "1 byte OK; " + ", ".join(hex(b) for b in HUGE) + " UNAVAILABLE"
