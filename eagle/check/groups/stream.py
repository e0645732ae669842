"""Checks of the ``stream`` group and of ``stream_query`` (minor 8, extends stream): order on one
stream, synchronize and release wait, descriptors read to their struct_size, NON_BLOCKING streams
and the default stream, and the general rules (bad handles, NULL outs, failed work, releases free).

stream_query (and launcher_query, in launcher.py) is a synchronize that does not wait:

- "Otherwise writes 0 to *done and returns OK" and "Returns without waiting": right after a slow
  piece of work is enqueued the query answers at once, done = 0, and the work is not yet done;
- "When every piece of work ... has finished, writes 1 to *done": polled, it answers 1 once the
  work's result is there (never before), and 1 again on an idle stream;
- "INVALID_ARGUMENT for a NULL done"."""
import time

import numpy as np

from ..._seam_ffi import ffi
from .._registry import CheckFailure, Skip
from .._seam import STATUS, status_name
from ._helpers import (NOOP, Capture, HostWork, OPS, Objects, PROMPT_S, SLOW_US, UNKNOWN_FLAG, answers_at_once,
                       bcheck, chain, chain_numpy, enqueue_work, expect_equal, failed_work_queried,
                       garbage_desc, measured_release, poll_until_done, query_done, refused,
                       release_null_check, unknown_flags_check)


release_null_check("stream", "stream_release")


@unknown_flags_check("stream", "stream_desc.flags")
def _stream_flags(s):
    d = ffi.new("struct eagle_backend_stream_desc*", {"struct_size": 16, "flags": UNKNOWN_FLAG, "device": -1})
    out = ffi.new("eagle_backend_stream*")
    return refused(s, "stream_create", s.raw("stream_create", d, out),
                   lambda: s.raw("stream_release", out[0]))


@bcheck("stream.order")
def stream_order(s):
    """Work on one stream runs in enqueue order (a slow first piece is not overtaken). With exec
    the checker's kernels do the work; without it, host functions or copies."""
    if not s.provides("exec"):
        w = HostWork(s)
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
        expect_equal("x after five ordered kernels", x.get(), chain_numpy(np.arange(n), OPS))


@bcheck("stream.synchronize_waits")
def stream_synchronize_waits(s):
    """stream_synchronize returns only after the stream's work has finished."""
    if not s.provides("exec"):
        w = HostWork(s)
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
        expect_equal("x right after synchronize", x.get(), np.full(8, 5))


@bcheck("stream.release_waits")
def stream_release_waits(s):
    """stream_release waits for the stream's work before destroying it."""
    if not s.provides("exec"):
        w = HostWork(s)
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
    expect_equal("x right after stream_release", x.get(), np.full(8, 9))


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


@bcheck("stream.desc_read_to_struct_size")
def stream_desc_read_to_struct_size(s):
    """A stream desc is read only up to the caller's struct_size, the rest taken as zero: with
    struct_size 4 or 8 and garbage beyond (an unknown flag bit, device 0xA5A5A5A5), stream_create
    makes a stream (flags 0, device 0)."""
    s.need_device()
    for size, beyond in ((4, "flags and device"), (8, "device")):
        d, _keep = garbage_desc("struct eagle_backend_stream_desc", size)
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

    a = measured_release(s, "stream create + work + release", with_work, 200)
    b = measured_release(s, "stream create + release", bare, 20000)
    return f"{a}; {b}"


@bcheck("stream_query.without_waiting", needs=("stream",))
def stream_query_without_waiting(s):
    """stream_query answers at once: done = 0 while slow work runs, 1 once it has finished (and
    never before), 1 on an idle stream; a NULL done is INVALID_ARGUMENT."""
    s.need_device()
    with Objects(s) as o:
        h, raw = o.stream()
        if s.provides("exec"):
            mem = s.device()
            x = mem.zeros(8, np.int64)
            s.launch("affine", raw, [x.addr, 1, 5, SLOW_US], 8)
            finished = lambda: bool(np.all(x.get() == 5))  # noqa: E731
            how = "a slow kernel"
        else:
            w = HostWork(s)
            s.need_device()
            w.slow_set(raw, 5)
            finished = lambda: int(w.cell[0]) == 5  # noqa: E731
            how = f"slow {w.how} work"
        early = answers_at_once(s, "stream_query", h, finished)
        polls = poll_until_done(s, "stream_query", h, finished)
        if not query_done(s, "stream_query", h)[0]:
            raise CheckFailure("stream_query said done = 0 on an idle stream")
        s.expect("stream_query", "INVALID_ARGUMENT", h, ffi.NULL, why="done is NULL")
        s.ok("stream_synchronize", h)  # a query that said done leaves the stream as a synchronize does
    return f"with {how}: {'done' if early else 'not done'} at once, done after {polls} queries"


@bcheck("stream_query.failed_work", needs=("stream", "reorder_device"))
def stream_query_failed_work(s):
    """Work that fails when it runs: stream_query, polled, writes done = 1 and returns ERROR with a
    message, as stream_synchronize would, and reports it once (the next query and a synchronize
    are OK)."""
    s.device()
    with Objects(s) as o:
        h, raw = o.stream()
        ran_clamped = s.kernels.enqueue_failing(raw)
        return failed_work_queried(s, "stream_query", h, "stream_synchronize", ran_clamped)


@bcheck("stream_query.while_capturing", needs=("stream", "capturer", "captured"))
def stream_query_while_capturing(s):
    """stream_query on a stream being captured is INVALID_ARGUMENT (with a message), whether or not
    work was recorded; the capture may be broken by it (capturer_end is then INVALID_ARGUMENT and
    returns nothing), never left half-open: after the end the stream answers done = 1."""
    s.need_device()
    keep, notes = [], []
    with Objects(s) as o:
        h, raw = o.stream()
        for record in (False, True):
            cap = Capture(s, raw).begin()
            try:
                if record and enqueue_work(s, raw, keep) is None:
                    continue
                done = ffi.new("int32_t*", 7)
                st = int(s.raw("stream_query", h, done))
                if st != STATUS["INVALID_ARGUMENT"]:
                    raise CheckFailure(f"stream_query on a stream being captured ({'with' if record else 'without'} "
                                       f"recorded work) returned {status_name(st)}, done = {done[0]}; expected "
                                       "INVALID_ARGUMENT")
                if not s.last_error().strip():
                    raise CheckFailure("stream_query returned INVALID_ARGUMENT with an empty last_error")
                out = ffi.new("eagle_backend_captured*")
                st = int(s.raw("capturer_end", cap.h[0], out))
                if st == 0:
                    s.raw("captured_release", out[0])
                    notes.append("kept")
                elif st == STATUS["INVALID_ARGUMENT"]:
                    if out[0] != ffi.NULL:
                        raise CheckFailure("capturer_end of a capture broken by stream_query returned "
                                           "INVALID_ARGUMENT and a handle; then nothing is returned")
                    notes.append("broken")
                else:
                    raise CheckFailure(f"capturer_end after stream_query refused during the capture returned "
                                       f"{status_name(st)}")
            finally:
                cap.release()
            d, _ = query_done(s, "stream_query", h)
            if not d:
                s.sync(h)
        s.sync(h)
    return "INVALID_ARGUMENT while capturing; the capture was " + ", ".join(notes)


# advice: the header lets a kind whose runtime allows no calls from host functions (CUDA's, HIP's)
# leave it to the caller not to call it there; on such a kind this may fail, hang or be refused.
@bcheck("stream_query.inside_host_func", needs=("stream", "host_func"), advice=True)
def stream_query_inside_host_func(s):
    """Since minor 9: a host function may query another stream; it gets the answer (OK, done as
    it is) at once, never waiting for that stream's work (or, where the kind allows no calls from
    host functions, a refusal with a message)."""
    s.need_device()
    seen = {}
    with Objects(s) as o:
        ha, rawa = o.stream()
        hb, rawb = o.stream()
        w = HostWork(s)
        w.slow_set(rawb, 9)   # stream b is busy for SLOW_US

        def fn(_):
            done = ffi.new("int32_t*", 7)
            t0 = time.monotonic()
            st = int(s.lib.eagle_backend_stream_query(hb, done))
            seen["took"] = time.monotonic() - t0
            seen["st"], seen["done"] = st, int(done[0])
            seen["msg"] = "" if st == 0 else ffi.string(s.lib.eagle_backend_last_error()).decode("utf-8", "replace")
            seen["finished"] = int(w.cell[0]) == 9

        cb = ffi.callback("eagle_backend_host_fn", fn)
        s.ok("host_func", rawa, cb, ffi.NULL)
        s.sync(ha)
        s.sync(hb)
    if "st" not in seen:
        raise CheckFailure("the host function did not run before stream_synchronize returned")
    if seen["took"] > PROMPT_S:
        raise CheckFailure(f"stream_query from inside a host function took {seen['took'] * 1e3:.0f} ms while "
                           "the other stream was busy: it must not wait")
    if seen["st"] == 0:
        if seen["done"] not in (0, 1) or (seen["done"] == 1 and not seen["finished"]):
            raise CheckFailure(f"stream_query from inside a host function said done = {seen['done']} "
                               "while the other stream's work had not finished")
        return f"answered: done = {seen['done']}"
    if not seen["msg"].strip():
        raise CheckFailure(f"stream_query from inside a host function returned {status_name(seen['st'])} "
                           "with an empty last_error")
    return f"refused: {status_name(seen['st'])} ({seen['msg'][:80]!r})"
