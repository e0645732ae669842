"""Checks of the ``filtering`` group and of ``reorder_device`` (extends filtering): compaction and
reordering match numpy at every size, their limits and trigger, and under capture."""
import numpy as np

from ... import _seam_meta as meta
from ..._seam_ffi import ffi
from .._registry import CheckFailure
from .._seam import STATUS, status_name
from ._helpers import (CAPTURE, Objects, UNKNOWN_FLAG, bcheck, captured_of, expect_equal, launcher_of,
                       refused, replay, unknown_flags_check)


MASK_IS_DROP = meta.CONSTANTS["EAGLE_BACKEND_COMPACT_MASK_IS_DROP"]


@unknown_flags_check("filtering", "compact_desc.flags")
def _compact_flags(s):
    mem = s.device()
    n = 16
    mask, imap, cnt = mem.zeros(n, "uint8"), mem.zeros(n, "int32"), mem.zeros(1, "uint32")
    d = ffi.new("struct eagle_backend_compact_desc*")
    d.struct_size, d.flags, d.device = ffi.sizeof(d[0]), MASK_IS_DROP | UNKNOWN_FLAG, -1
    d.mask, d.index_map, d.count, d.scratch, d.n, d.stream = mask.addr, imap.addr, cnt.addr, 0, n, 0
    return refused(s, "compact_device (query)", s.raw("compact_device", d))


@unknown_flags_check("reorder_device", "reorder_desc.flags")
def _reorder_flags(s):
    mem = s.device()
    n = 16
    plane = mem.zeros(n, "int32")
    mask, perm, inv, span = mem.zeros(n, "uint8"), mem.zeros(n, "int32"), mem.zeros(n, "int32"), mem.zeros(1, "uint32")
    planes = ffi.new("struct eagle_backend_reorder_plane[1]")
    planes[0].data, planes[0].elem_size, planes[0].width = plane.addr, 4, 1
    d = ffi.new("struct eagle_backend_reorder_desc*")
    d.struct_size, d.flags, d.device, d.plane_count, d.planes = ffi.sizeof(d[0]), MASK_IS_DROP | UNKNOWN_FLAG, -1, 1, planes
    d.mask, d.perm, d.inv, d.span, d.scratch, d.n, d.stream = mask.addr, perm.addr, inv.addr, span.addr, 0, n, 0
    return refused(s, "reorder_device (query)", s.raw("reorder_device", d))


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
                expect_equal(f"index_map of compaction {what}", got[:kept.size], kept)
                expect_equal(f"tail of index_map after compaction {what} (must be untouched)", got[kept.size:],
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
            expect_equal("replayed compaction's index_map", imap.get()[:kept.size], kept)


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
    # width 0 is taken as 1 (struct reorder_plane)
    for elem, width in ((1, 0), (2, 1), (4, 2), (8, 1), (16, 3)):
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
        expect_equal(f"{what}: perm of the kept samples", got_perm[:k], perm0[kept])
        expect_equal(f"{what}: perm from span on (untouched)", got_perm[span_v:], perm0[span_v:])
        rest = np.sort(got_perm[k:span_v])
        expect_equal(f"{what}: perm of the dropped samples (a permutation of them)", rest,
                     np.sort(perm0[np.flatnonzero(~region)]))
        pos_of = np.empty(n, np.int64)
        pos_of[perm0] = np.arange(n)
        order = pos_of[got_perm]          # new position p holds the sample from old position order[p]
    got_perm, got_inv = perm.get(), inv.get()
    expect_equal(f"{what}: perm", got_perm, perm0[order])
    want_inv = np.empty(n, np.int32)
    want_inv[got_perm] = np.arange(n, dtype=np.int32)
    expect_equal(f"{what}: inv (inv[perm[p]] == p)", got_inv, want_inv)
    for (arr, elem, width, pitch), (old, _, rows, stride) in zip(specs, host):
        got = arr.get()
        for r in range(rows):
            row_old = old[r * stride:r * stride + n * elem].reshape(n, elem) if n else old[:0].reshape(0, elem)
            row_got = got[r * stride:r * stride + n * elem].reshape(n, elem) if n else got[:0].reshape(0, elem)
            expect_equal(f"{what}: plane of {elem}-byte elements, row {r}", row_got, row_old[order])
            if stride > n * elem:
                expect_equal(f"{what}: plane of {elem}-byte elements, row {r} padding (untouched)",
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


def _compact_query(s, n, mask, imap, cnt, raw=0):
    d = ffi.new("struct eagle_backend_compact_desc*")
    d.struct_size, d.device = ffi.sizeof(d[0]), -1
    d.mask, d.index_map, d.count, d.n, d.stream = mask.addr, imap.addr, cnt.addr, n, raw
    return d


@bcheck("filtering.sample_count_boundaries", needs=("stream",))
def filtering_sample_count_boundaries(s):
    """compact_device's n at its limits, asked as a query (scratch 0: nothing is enqueued, so no
    memory of that size is needed): 0, 1 and 2^31 - 1 are accepted (the scratch size is written);
    2^31, 2^31 + 1 and 2^63 - 1 are UNSUPPORTED; -1 and INT64_MIN are INVALID_ARGUMENT. The
    reorder (where provided) the same."""
    mem = s.device()
    mask, imap, cnt = mem.zeros(16, np.uint8), mem.zeros(16, np.int32), mem.zeros(1, np.uint32)
    ok_n, too_big, negative = (0, 1, 2**31 - 1), (2**31, 2**31 + 1, 2**63 - 1), (-1, -2**63)
    for n in ok_n:
        d = _compact_query(s, n, mask, imap, cnt)
        d.scratch_bytes = -7
        st = int(s.raw("compact_device", d))
        if st:
            raise CheckFailure(f"compact_device query with n = {n} returned {status_name(st)}: {s.last_error()!r}; "
                               "n is 0 .. 2^31-1")
        if d.scratch_bytes < 0:
            raise CheckFailure(f"compact_device query with n = {n} wrote scratch_bytes = {d.scratch_bytes}")
    for n in too_big:
        s.expect("compact_device", "UNSUPPORTED", _compact_query(s, n, mask, imap, cnt), why=f"n = {n}")
    for n in negative:
        s.expect("compact_device", ("INVALID_ARGUMENT", "UNSUPPORTED"), _compact_query(s, n, mask, imap, cnt),
                 why=f"n = {n} (out of 0 .. 2^31-1)")
    note = ""
    if s.provides("reorder_device"):
        plane = mem.zeros(16, np.uint32)
        planes = ffi.new("struct eagle_backend_reorder_plane[1]")
        planes[0].data, planes[0].elem_size, planes[0].width = plane.addr, 4, 1
        perm, inv, span = mem.zeros(16, np.int32), mem.zeros(16, np.int32), mem.zeros(1, np.uint32)

        def rdesc(n):
            d = ffi.new("struct eagle_backend_reorder_desc*")
            d.struct_size, d.device, d.plane_count, d.planes = ffi.sizeof(d[0]), -1, 1, planes
            d.mask, d.perm, d.inv, d.span, d.n, d.stream = mask.addr, perm.addr, inv.addr, span.addr, n, 0
            return d
        for n in ok_n:
            st = int(s.raw("reorder_device", rdesc(n)))
            if st:
                raise CheckFailure(f"reorder_device query with n = {n} returned {status_name(st)}: "
                                   f"{s.last_error()!r}; n is 0 .. 2^31-1")
        for n in too_big:
            s.expect("reorder_device", "UNSUPPORTED", rdesc(n), why=f"n = {n}")
        note = "; reorder_device the same"
    return f"n {ok_n} accepted, {too_big} UNSUPPORTED, {negative} refused" + note


@bcheck("filtering.scratch_boundaries", needs=("stream",))
def filtering_scratch_boundaries(s):
    """Scratch at its limits: exactly the size the query wrote is enough (the compaction runs and
    is right); one byte short, 0 bytes and a negative size are INVALID_ARGUMENT with a message."""
    mem = s.device()
    n = 1000
    m = (np.arange(n) % 3 == 0).astype(np.uint8)
    mask, imap, cnt = mem.array(m, np.uint8), mem.zeros(n, np.int32), mem.zeros(1, np.uint32)
    with Objects(s) as o:
        h, raw = o.stream()
        d = _compact_query(s, n, mask, imap, cnt, raw)
        s.ok("compact_device", d)
        need = int(d.scratch_bytes)
        scratch = mem.zeros(max(need, 1), np.uint8)
        short = [b for b in (need - 1, 0, -1) if b < need]
        for nbytes in short:
            d = _compact_query(s, n, mask, imap, cnt, raw)
            d.scratch, d.scratch_bytes = scratch.addr, nbytes
            s.expect("compact_device", "INVALID_ARGUMENT", d, why=f"scratch_bytes {nbytes}, the query said {need}")
        d = _compact_query(s, n, mask, imap, cnt, raw)
        d.scratch, d.scratch_bytes = scratch.addr, need
        st = int(s.raw("compact_device", d))
        if st:
            raise CheckFailure(f"compact_device with exactly the scratch the query asked for ({need} bytes) "
                               f"returned {status_name(st)}: {s.last_error()!r}")
        s.sync(h)
        k = int(m.sum())
        expect_equal("count after a compaction with exactly enough scratch", cnt.get(), [k])
        expect_equal("index map", imap.get()[:k], np.flatnonzero(m))
    return f"scratch {need} accepted, {short} refused"
