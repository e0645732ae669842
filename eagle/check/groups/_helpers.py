"""What several group modules share, and only that (a helper one group uses lives in that
group's module): the decorators that register checks, comparisons, the objects a check makes and
releases, the work it enqueues, the measured release and the completion-query probes."""
import os
import time

import numpy as np

from ... import _seam_meta as meta
from ..._seam_ffi import ffi
from .._registry import CheckFailure, NotSupported, Skip, check
from .._seam import PREFIX, STATUS, status_name


# ------------------------------------------------------------------------------- registering checks
def bcheck(check_id, needs=(), advice=False):
    """Register a behavioural check (it runs where probe() says a device is usable; `needs`: the
    groups and per-symbol entries it uses besides its own). `advice`: see _registry.check."""
    return check(check_id, kind="behaviour", needs=needs, advice=advice)


def release_null_check(group, release):
    """Register ``<group>.release_null`` (kind static): ``release(NULL)`` is a no-op."""
    @check(f"{group}.release_null", kind="static")
    def fn(s):
        if not s.has(release):
            raise NotSupported(f"{PREFIX}{release} is not exported")
        s.raw(release, ffi.NULL)
        return f"{PREFIX}{release}(NULL) returned"
    fn.__doc__ = f"{PREFIX}{release}(NULL) is a no-op."
    return fn


UNKNOWN_FLAG = 0x80000000  # a flag bit no minor defines (bit 31)


def unknown_flags_check(entry, what):
    """Decorator: register ``<entry>.unknown_flags`` (kind static, but it needs a device); the body
    provokes the call with UNKNOWN_FLAG in `what` and returns refused(...)."""
    def register(body):
        @check(f"{entry}.unknown_flags", kind="static")
        def fn(s):
            s.require(entry, own=True)
            s.need_device()
            return body(s)
        fn.__doc__ = f"An unknown flag bit ({UNKNOWN_FLAG:#x}) in {what} is refused with UNSUPPORTED."
        return fn
    return register


def refused(s, name, st, cleanup=None):
    """A summary when status `st` of `name` is UNSUPPORTED; else CheckFailure (after cleanup()
    of what an OK call made)."""
    if st == STATUS["UNSUPPORTED"]:
        return f"{PREFIX}{name}: UNSUPPORTED ({s.last_error()!r})"
    if st == 0 and cleanup:
        cleanup()
    raise CheckFailure(f"{PREFIX}{name} with unknown flag bit {UNKNOWN_FLAG:#x} returned "
                       f"{status_name(st)}; an unknown flag must be refused with UNSUPPORTED, never ignored")


# ------------------------------------------------------------------------- comparing what came back
def expect_equal(what, got, want):
    """CheckFailure naming `what` and the first differing elements unless got == want (shape too)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.array_equal(got, want):
        bad = np.flatnonzero(got != want)[:4] if got.shape == want.shape else []
        detail = ", ".join(f"[{i}] {got[i]} != {want[i]}" for i in bad) or f"shapes {got.shape} vs {want.shape}"
        raise CheckFailure(f"{what}: {detail}")


GUARD = 0xA5


def output_struct(s, fn_name, tag, call, short_sizes):
    """The output-struct rule, both ways, for one struct. Returns a summary."""
    full = meta.STRUCT_SIZES[tag]
    ver = int(s.raw("version")) if s.has("version") else 0
    same_header = (ver >> 16) == meta.VERSION_MAJOR and (ver & 0xFFFF) <= meta.VERSION_MINOR
    notes = []
    for caller in short_sizes + [full + 64]:
        total = full + 128
        buf = ffi.new("unsigned char[]", total)
        ffi.memmove(buf, bytes([GUARD]) * total, total)
        ffi.cast("uint32_t*", buf)[0] = caller
        st = call(ffi.cast(f"struct {tag}*", buf))
        if st != 0:
            raise CheckFailure(f"{PREFIX}{fn_name} with struct_size {caller} returned "
                               f"{status_name(st)}: {s.last_error()!r}")
        written = int(ffi.cast("uint32_t*", buf)[0])
        data = bytes(ffi.buffer(buf, total))
        if written > caller:
            raise CheckFailure(f"{PREFIX}{fn_name}: caller's struct_size {caller}, the backend wrote back "
                               f"{written} (must be min(caller, callee) <= {caller})")
        if caller < full and written != caller:
            raise CheckFailure(f"{PREFIX}{fn_name}: caller's struct_size {caller} (short), the backend "
                               f"wrote back {written}; it must write min(caller, callee) = {caller}")
        if caller > full and same_header and written != full:
            raise CheckFailure(f"{PREFIX}{fn_name}: caller's struct_size {caller} (long), the backend "
                               f"(eagle-backend/{ver >> 16}.{ver & 0xFFFF}, a {full}-byte struct) wrote "
                               f"back {written}; it must write back its own size {full}")
        touched = [i for i in range(max(written, 4), total) if data[i] != GUARD]
        if touched:
            raise CheckFailure(f"{PREFIX}{fn_name}: caller's struct_size {caller}, wrote back {written}, "
                               f"but changed bytes beyond it (first at offset {touched[0]}; "
                               f"{len(touched)} bytes)")
        notes.append(f"{caller}->{written}")
    return "struct_size in->out: " + ", ".join(notes)


def garbage_desc(ctype, struct_size, fields=None):
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


# -------------------------------------------------------------- objects a check makes, and captures
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
    """Launch `launcher` `times` times, then wait for it."""
    for _ in range(times):
        s.ok("launcher_launch", launcher)
    s.ok("launcher_synchronize", launcher)


CAPTURE = ("stream", "capturer", "captured", "graph", "launcher", "exec")

COND = CAPTURE + ("conditional",)


def conditional_of(s, o, raw, count, baseline=None, counter=None, loop_cap=0, case_count=0):
    """conditional_create with origin `raw` (a stream being captured) and the device words
    given as its guard; released with Objects `o`."""
    d = ffi.new("struct eagle_backend_conditional_desc*")
    d.struct_size, d.device, d.origin = ffi.sizeof(d[0]), -1, raw
    d.count_ptr = count.addr
    d.baseline_ptr = baseline.addr if baseline is not None else 0
    d.counter_ptr = counter.addr if counter is not None else 0
    d.loop_cap, d.case_count = loop_cap, case_count
    c = ffi.new("eagle_backend_conditional*")
    s.ok("conditional_create", d, c)
    return o.add("conditional_release", c[0])


# ---------------------------------------------------------------------------------- work to enqueue
SLOW_US = 150_000  # a kernel this slow is still running when unordered work would start

OPS = [(2, 1), (3, 5), (1, -4), (5, 0), (1, 11)]


def chain(s, raw, x, n, ops, delay_first=0):
    """Enqueue x = x * a + b for each (a, b) of `ops` on raw stream `raw` (the checker's affine
    kernel); the first launch is made slow by `delay_first` us."""
    for i, (a, b) in enumerate(ops):
        s.launch("affine", raw, [x.addr, a, b, delay_first if i == 0 else 0], n)


def chain_numpy(x, ops, times=1):
    """What chain() computes, `times` over, in numpy."""
    x = np.array(x, np.int64)
    for _ in range(times):
        for a, b in ops:
            x = x * a + b
    return x


class HostWork:
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


NOOP = ffi.callback("eagle_backend_host_fn", lambda _: None)


def enqueue_work(s, raw, keep):
    """Enqueue (or record) one small piece of work on raw stream `raw` with whatever the backend
    offers: a host function, a host-to-host copy or a kernel. Returns how, or None when it has
    no way to enqueue work."""
    if s.provides("host_func"):
        s.ok("host_func", raw, NOOP, ffi.NULL)
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


def recorded(s, raw, keep):
    """A captured handle holding one node; Skip when the backend can record nothing."""
    how = {}
    captured = captured_of(s, raw, lambda: how.setdefault("how", enqueue_work(s, raw, keep)))
    if how.get("how") is None:
        s.raw("captured_release", captured)
        raise Skip("the backend has no way to record a node (no host_func, memcpy or exec)")
    return captured


# ----------------------------------------------------------- releases free what they hold, measured
def _usage():
    """(threads, open descriptors, resident bytes) of this process."""
    threads = len(os.listdir("/proc/self/task"))
    fds = len(os.listdir("/proc/self/fd"))
    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return threads, fds, rss


#: How long measured_release waits for threads and descriptors to come back down after the cycles: a
#: backend may end a released object's thread after the release returns (the cpu backend's
#: released streams finish their queue on their own thread), and on a loaded machine that thread
#: can still be there when the cycles end. Growth that lasts is a leak; this is not.
_SETTLE_S = 2.0


def measured_release(s, what, cycle, n, per_cycle_bytes=96, warm=None):
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


# ------------------------------------------------ completion queries (stream_query, launcher_query)
#: A query answers within this (it must not wait for the SLOW_US work).
PROMPT_S = SLOW_US / 1e6 / 3


def query_done(s, symbol, handle):
    """(done, seconds the call took) of one OK query."""
    done = ffi.new("int32_t*", 7)
    t0 = time.monotonic()
    s.ok(symbol, handle, done)
    took = time.monotonic() - t0
    if done[0] not in (0, 1):
        raise CheckFailure(f"{symbol} wrote {done[0]} to *done (0 or 1)")
    return int(done[0]), took


def poll_until_done(s, symbol, handle, finished, limit_s=30.0):
    """Query until done = 1; `finished()` must be True from then on (and the query must not say
    done before it is). Returns the number of queries made."""
    end = time.monotonic() + limit_s
    polls = 0
    while True:
        done, _ = query_done(s, symbol, handle)
        polls += 1
        if done:
            if not finished():
                raise CheckFailure(f"{symbol} said done = 1 before the work's result was there")
            return polls
        if time.monotonic() > end:
            raise CheckFailure(f"{symbol} still said done = 0 after {limit_s:g} s")
        time.sleep(0.002)


def answers_at_once(s, symbol, handle, finished):
    """One query right after slow work was enqueued: it must return within PROMPT_S and may say
    done only when `finished()`. Returns done."""
    done, took = query_done(s, symbol, handle)
    if took > PROMPT_S:
        raise CheckFailure(f"{symbol} took {took * 1e3:.0f} ms with slow work enqueued: it must not wait "
                           f"(the work takes {SLOW_US / 1e3:.0f} ms)")
    if done and not finished():
        raise CheckFailure(f"{symbol} said done = 1 right after slow work was enqueued, before it finished")
    return done


def query_until_settled(s, symbol, handle, limit_s=30.0):
    """Query until the answer is done = 1 or a status other than OK; returns (status, done) of that
    last query (done as the backend left it: 7 when it wrote nothing)."""
    end = time.monotonic() + limit_s
    while True:
        done = ffi.new("int32_t*", 7)
        st = int(s.raw(symbol, handle, done))
        if st != 0 or done[0] != 0:
            return st, int(done[0])
        if time.monotonic() > end:
            raise CheckFailure(f"{symbol} still said done = 0 after {limit_s:g} s")
        time.sleep(0.002)


def failed_work_queried(s, symbol, handle, sync_symbol, ran_clamped):
    """After work that fails when it runs: a query, polled, says done = 1 and returns ERROR with a
    message (what synchronize would), once: the next query is OK with done = 1, and so is
    `sync_symbol`. Returns a summary; passes with a note when the backend ran the work clamped."""
    st, done = query_until_settled(s, symbol, handle)
    if st == 0:
        if ran_clamped():
            return "the backend ran the work with its span clamped (nothing failed)"
        raise CheckFailure(f"{symbol} returned OK with done = 1 after work that failed; it returns what "
                           f"{sync_symbol} would: ERROR")
    if st != STATUS["ERROR"]:
        raise CheckFailure(f"{symbol} after failed work returned {status_name(st)}; expected ERROR "
                           f"(what {sync_symbol} returns)")
    msg = s.last_error()
    if done != 1:
        raise CheckFailure(f"{symbol} returned ERROR for failed work with *done = {done}; the work has "
                           "finished (in failure), so *done is 1 with synchronize's status")
    if not msg.strip():
        raise CheckFailure(f"{symbol} returned ERROR with an empty last_error")
    again = ffi.new("int32_t*", 7)
    st2 = int(s.raw(symbol, handle, again))
    if st2 != 0 or again[0] != 1:
        raise CheckFailure(f"a second {symbol} after the failure was reported returned {status_name(st2)}, "
                           f"done = {again[0]}; the failure is reported once (then OK, done = 1)")
    st3 = int(s.raw(sync_symbol, handle))
    if st3 != 0:
        raise CheckFailure(f"{sync_symbol} after {symbol} reported the failure returned {status_name(st3)}; "
                           "the failure is reported once, with the same effects as synchronize")
    return f"ERROR with done = 1 ({msg[:80]!r}), then OK"
