"""Checks of the ``capturer`` and ``captured`` groups: a capture records what is enqueued on its
stream, replays as the eager work did, refuses misuse, and a release abandons the capture."""
import numpy as np

from ..._seam_ffi import ffi
from .._registry import CheckFailure
from .._seam import STATUS, status_name
from ._helpers import (CAPTURE, Capture, HostWork, OPS, Objects, UNKNOWN_FLAG, bcheck, captured_of, chain,
                       chain_numpy, enqueue_work, expect_equal, launcher_of, recorded, refused, release_null_check,
                       replay, unknown_flags_check)


release_null_check("capturer", "capturer_release")
release_null_check("captured", "captured_release")


@unknown_flags_check("capturer", "capturer_desc.flags")
def _capturer_flags(s):
    s.require("stream")
    h, raw = s.new_stream()
    try:
        d = ffi.new("struct eagle_backend_capturer_desc*")
        d.struct_size, d.flags, d.device, d.stream = ffi.sizeof(d[0]), UNKNOWN_FLAG, -1, raw
        out = ffi.new("eagle_backend_capturer*")
        return refused(s, "capturer_create", s.raw("capturer_create", d, out),
                       lambda: s.raw("capturer_release", out[0]))
    finally:
        s.raw("stream_release", h)


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
        expect_equal("x after capture (capture must record, not run)", x.get(), x0)
        lau = o.add("launcher_release", launcher_of(s, captured, raw))
        replay(s, lau, 3)
        expect_equal("x after 3 replays", x.get(), chain_numpy(x0, OPS, 3))


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
        w = HostWork(s)
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
        full = recorded(s, raw, keep)
        g = ffi.new("eagle_backend_graph*")
        st = s.raw("graph_from_captured", full, g)
        if st:
            s.raw("captured_release", full)
            raise CheckFailure(f"graph_from_captured of a one-node capture failed: {s.last_error()!r}")
        o.add("graph_release", g[0])
        s.expect("captured_is_valid", "BAD_HANDLE", full, valid, why="captured work graph_from_captured consumed")
        s.expect("graph_add_node", "BAD_HANDLE", g[0], full, why="captured work already consumed")
        full2 = recorded(s, raw, keep)
        st = s.raw("graph_add_node", g[0], full2)
        if st:
            s.raw("captured_release", full2)
            raise CheckFailure(f"graph_add_node of a one-node capture failed: {s.last_error()!r}")
        s.expect("captured_is_valid", "BAD_HANDLE", full2, valid, why="captured work graph_add_node consumed")


def _end_after(s, raw, h, misuse):
    """Begin a capture on raw, record one piece of work, call misuse(h) (which must be refused with
    INVALID_ARGUMENT), end it: 'kept' (OK: the captured work is released) or 'broken'
    (INVALID_ARGUMENT, nothing returned); CheckFailure otherwise."""
    keep = []
    cap = Capture(s, raw).begin()
    try:
        enqueue_work(s, raw, keep)
        st = int(misuse(h))
        if st != STATUS["INVALID_ARGUMENT"]:
            raise CheckFailure(f"a wait on a stream being captured returned {status_name(st)}; expected "
                               "INVALID_ARGUMENT")
        out = ffi.new("eagle_backend_captured*")
        st = int(s.raw("capturer_end", cap.h[0], out))
        if st == 0:
            if out[0] == ffi.NULL:
                raise CheckFailure("capturer_end returned OK and no captured handle")
            s.raw("captured_release", out[0])
            return "kept"
        if st != STATUS["INVALID_ARGUMENT"]:
            raise CheckFailure(f"capturer_end after a refused wait returned {status_name(st)}; OK, or "
                               "INVALID_ARGUMENT for a capture broken by misuse")
        if not s.last_error().strip():
            raise CheckFailure("capturer_end of a broken capture left last_error empty")
        if out[0] != ffi.NULL:
            raise CheckFailure("capturer_end of a broken capture wrote a captured handle (nothing is returned)")
        return "broken"
    finally:
        cap.release()


@bcheck("capturer.end_after_refused_wait", needs=("stream", "captured"))
def capturer_end_after_refused_wait(s):
    """A capture during which stream_synchronize was refused (misuse that may break it) ends either
    with its work (OK) or broken (INVALID_ARGUMENT, nothing returned, a message); stream_query,
    where provided, breaks it exactly when synchronize does ("as synchronize does"). Needs no
    conditional: the misuse is a wait."""
    s.need_device()
    with Objects(s) as o:
        h, raw = o.stream()
        by_sync = _end_after(s, raw, h, lambda hh: s.raw("stream_synchronize", hh))
        s.sync(h)
        if not s.provides("stream_query"):
            return f"after a refused synchronize the capture was {by_sync}"
        by_query = _end_after(s, raw, h, lambda hh: s.raw("stream_query", hh, ffi.new("int32_t*")))
        s.sync(h)
    if by_query != by_sync:
        raise CheckFailure(f"a refused stream_synchronize left the capture {by_sync}, a refused stream_query "
                           f"left it {by_query}: stream_query may break the capture as synchronize does")
    return f"the capture was {by_sync} after a refused synchronize and after a refused query"
