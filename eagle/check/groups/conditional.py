"""Checks of the ``conditional`` group and of ``conditional_begin_case`` (extends conditional): IF and
WHILE decide by the guard word each replay, SWITCH runs one case, the queries, and descriptors
read to their struct_size."""
import numpy as np

from ..._seam_ffi import ffi
from .._registry import CheckFailure
from .._seam import STATUS, status_name
from ._helpers import (COND, Capture, Objects, UNKNOWN_FLAG, bcheck, captured_of, conditional_of,
                       expect_equal, garbage_desc, launcher_of, refused, release_null_check, replay,
                       unknown_flags_check)


release_null_check("conditional", "conditional_release")


@unknown_flags_check("conditional", "conditional_desc.flags")
def _conditional_flags(s):
    for g in ("stream", "capturer", "captured"):
        s.require(g)
    mem = s.device()
    words = mem.zeros(4, "uint32")
    h, raw = s.new_stream()
    cap = ffi.new("eagle_backend_capturer*")
    captured = ffi.new("eagle_backend_captured*")
    try:
        d = ffi.new("struct eagle_backend_capturer_desc*")
        d.struct_size, d.device, d.stream = ffi.sizeof(d[0]), -1, raw
        s.ok("capturer_create", d, cap)
        s.ok("capturer_begin", cap[0])
        c = ffi.new("struct eagle_backend_conditional_desc*")
        c.struct_size, c.flags, c.device, c.origin, c.count_ptr = ffi.sizeof(c[0]), UNKNOWN_FLAG, -1, raw, words.addr
        out = ffi.new("eagle_backend_conditional*")
        st = s.raw("conditional_create", c, out)
        if st == 0:
            s.raw("conditional_release", out[0])
        if s.raw("capturer_end", cap[0], captured) == 0:
            s.raw("captured_release", captured[0])
        return refused(s, "conditional_create", st)
    finally:
        s.raw("capturer_release", cap[0])
        s.raw("stream_release", h)


def _if_program(s, use_baseline):
    mem = s.device()
    n = 4
    x = mem.zeros(n, np.int64)
    count, base = mem.zeros(1, np.uint32), mem.zeros(1, np.uint32)
    o = Objects(s)
    with o:
        h, raw = o.stream()

        def record():
            c = conditional_of(s, o, raw, count, base if use_baseline else None)
            body = ffi.new("uint64_t*")
            s.ok("conditional_begin", c, body)
            s.launch("affine", int(body[0]), [x.addr, 1, 1, 0], n)
            s.ok("conditional_end", c)
            s.launch("affine", raw, [x.addr, 1, 100, 0], n)

        lau = o.add("launcher_release", launcher_of(s, captured_of(s, raw, record), raw))
        expect_equal("x after recording an IF (nothing may run yet)", x.get(), np.zeros(n))
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
            c = conditional_of(s, o, raw, count, None, cell, loop_cap=cap)
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
            cond = conditional_of(s, o, raw, count)
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
            c = conditional_of(s, o, raw, sel, case_count=len(adds))
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
            d, _keep = garbage_desc("struct eagle_backend_conditional_desc", size,
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
        expect_equal("x after an IF of a short desc ran once (*count 1) and was skipped once (*count 0)", x.get(),
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
            c = conditional_of(s, o, raw, sel, case_count=3)
            body = ffi.new("uint64_t*")
            s.ok("conditional_begin_case", c, 0, body)
            s.expect("conditional_begin_case", "INVALID_ARGUMENT", c, 0, body, why="case 0, the open one, again")
            s.ok("conditional_begin_case", c, 1, body)
            s.expect("conditional_begin_case", "INVALID_ARGUMENT", c, 0, body, why="case 0, opened before")
            s.ok("conditional_end", c)
            cif = conditional_of(s, o, raw, sel)
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


@bcheck("conditional.is_loop_kinds", needs=("stream", "capturer", "captured"))
def conditional_is_loop_kinds(s):
    """is_loop follows the node's kind, not its loop_cap: 0 for an IF with loop_cap 5 (ignored for
    an IF), 1 for a WHILE with loop_cap 1, 0 for a SWITCH (where provided) with loop_cap 3."""
    mem = s.device()
    count, cell = mem.zeros(1, np.uint32), mem.zeros(2, np.uint32)
    cases = [("an IF with loop_cap 5", dict(loop_cap=5), 0), ("a WHILE with loop_cap 1",
                                                                 dict(counter=cell, loop_cap=1), 1)]
    if s.provides("conditional_begin_case"):
        cases.append(("a SWITCH with loop_cap 3", dict(loop_cap=3, case_count=2), 0))
    got = {}
    with Objects(s) as o:
        h, raw = o.stream()

        def record():
            for what, kw, _want in cases:
                cond = conditional_of(s, o, raw, count, **kw)
                loop = ffi.new("int32_t*", -1)
                s.ok("conditional_is_loop", cond, loop)
                got[what] = int(loop[0])
                body = ffi.new("uint64_t*")
                s.ok("conditional_begin", cond, body)
                s.ok("conditional_end", cond)

        s.raw("captured_release", captured_of(s, raw, record))
    bad = [f"{what}: is_loop = {got[what]} (want {want})" for what, _kw, want in cases if got[what] != want]
    if bad:
        raise CheckFailure("; ".join(bad) + " -- *is_loop = 1 for a WHILE, else 0")
    return ", ".join(f"{w}: {got[w]}" for w, _k, _x in cases)


@bcheck("conditional_begin_case.switch_pointers", needs=("stream", "capturer", "captured"))
def conditional_switch_pointers(s):
    """A SWITCH whose baseline_ptr or counter_ptr is not 0 is refused (INVALID_ARGUMENT with a
    message): both must be 0."""
    mem = s.device()
    count, word, cell = mem.zeros(1, np.uint32), mem.zeros(1, np.uint32), mem.zeros(2, np.uint32)
    results = {}
    with Objects(s) as o:
        h, raw = o.stream()

        def record():
            for what, base_p, counter_p in (("baseline_ptr", word.addr, 0), ("counter_ptr", 0, cell.addr)):
                d = ffi.new("struct eagle_backend_conditional_desc*")
                d.struct_size, d.device, d.origin = ffi.sizeof(d[0]), -1, raw
                d.count_ptr, d.baseline_ptr, d.counter_ptr = count.addr, base_p, counter_p
                d.loop_cap, d.case_count = 1, 2
                c = ffi.new("eagle_backend_conditional*")
                st = int(s.raw("conditional_create", d, c))
                results[what] = (st, s.last_error() if st else "")
                if st == 0:
                    body = ffi.new("uint64_t*")
                    s.raw("conditional_begin_case", c[0], 0, body)
                    s.raw("conditional_end", c[0])
                    s.raw("conditional_release", c[0])

        cap = Capture(s, raw).begin()
        try:
            record()
        finally:
            out = ffi.new("eagle_backend_captured*")
            if s.raw("capturer_end", cap.h[0], out) == 0:
                s.raw("captured_release", out[0])
            cap.release()
    for what, (st, msg) in results.items():
        if st != STATUS["INVALID_ARGUMENT"]:
            raise CheckFailure(f"conditional_create of a SWITCH with {what} != 0 returned {status_name(st)}; "
                               "a SWITCH's baseline_ptr and counter_ptr must be 0 (INVALID_ARGUMENT otherwise)")
        if not msg.strip():
            raise CheckFailure(f"a SWITCH with {what} != 0 was refused with an empty last_error")
    return "baseline_ptr and counter_ptr refused"
