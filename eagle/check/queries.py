"""Checks of the completion queries (seam minor 8): eagle_backend_stream_query and
eagle_backend_launcher_query are synchronizes that do not wait.

- "Otherwise writes 0 to *done and returns OK" and "Returns without waiting": right after a slow
  piece of work is enqueued the query answers at once, done = 0, and the work is not yet done;
- "When every piece of work ... has finished, writes 1 to *done": polled, it answers 1 once the
  work's result is there (never before), and 1 again on an idle stream;
- "INVALID_ARGUMENT for a NULL done"."""
import time

import numpy as np

from .._seam_ffi import ffi
from ._registry import CheckFailure, check
from .behaviour import CAPTURE, SLOW_US, Objects, _HostWork, _eq, captured_of, launcher_of

#: A query answers within this (it must not wait for the SLOW_US work).
PROMPT_S = SLOW_US / 1e6 / 3


def _query(s, symbol, handle):
    """(done, seconds the call took) of one OK query."""
    done = ffi.new("int32_t*", 7)
    t0 = time.monotonic()
    s.ok(symbol, handle, done)
    took = time.monotonic() - t0
    if done[0] not in (0, 1):
        raise CheckFailure(f"{symbol} wrote {done[0]} to *done (0 or 1)")
    return int(done[0]), took


def _poll(s, symbol, handle, finished, limit_s=30.0):
    """Query until done = 1; `finished()` must be True from then on (and the query must not say
    done before it is). Returns the number of queries made."""
    end = time.monotonic() + limit_s
    polls = 0
    while True:
        done, _ = _query(s, symbol, handle)
        polls += 1
        if done:
            if not finished():
                raise CheckFailure(f"{symbol} said done = 1 before the work's result was there")
            return polls
        if time.monotonic() > end:
            raise CheckFailure(f"{symbol} still said done = 0 after {limit_s:g} s")
        time.sleep(0.002)


def _answers_at_once(s, symbol, handle, finished):
    done, took = _query(s, symbol, handle)
    if took > PROMPT_S:
        raise CheckFailure(f"{symbol} took {took * 1e3:.0f} ms with slow work enqueued: it must not wait "
                           f"(the work takes {SLOW_US / 1e3:.0f} ms)")
    if done and not finished():
        raise CheckFailure(f"{symbol} said done = 1 right after slow work was enqueued, before it finished")
    return done


@check("stream_query.without_waiting", kind="behaviour", needs=("stream",))
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
            w = _HostWork(s)
            s.need_device()
            w.slow_set(raw, 5)
            finished = lambda: int(w.cell[0]) == 5  # noqa: E731
            how = f"slow {w.how} work"
        early = _answers_at_once(s, "stream_query", h, finished)
        polls = _poll(s, "stream_query", h, finished)
        if not _query(s, "stream_query", h)[0]:
            raise CheckFailure("stream_query said done = 0 on an idle stream")
        s.expect("stream_query", "INVALID_ARGUMENT", h, ffi.NULL, why="done is NULL")
        s.ok("stream_synchronize", h)  # a query that said done leaves the stream as a synchronize does
    return f"with {how}: {'done' if early else 'not done'} at once, done after {polls} queries"


@check("launcher_query.without_waiting", kind="behaviour", needs=CAPTURE)
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
        early = _answers_at_once(s, "launcher_query", lau, finished)
        polls = _poll(s, "launcher_query", lau, finished)
        _eq("x after the replay", x.get(), np.full(4, 3))
        s.expect("launcher_query", "INVALID_ARGUMENT", lau, ffi.NULL, why="done is NULL")
        s.ok("launcher_synchronize", lau)
    return f"{'done' if early else 'not done'} at once, done after {polls} queries"
