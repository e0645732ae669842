"""Progress of a long solve, read from the device while it works: the samples done and how far
the running ones are (the median and the furthest time reached, of up to 65536 samples' ``t``),
so a solve whose samples all end late still shows it moving.

The step kernel adds one to a device word (``done``) when a sample ends and stores each sample's
time in W's T row after every call of its body. While the host waits for the solve, ONE
watcher thread of the process (started at the first solve, then reused: entering and leaving a
solve costs a lock and a notify, not a thread) sleeps ``delay`` seconds; if the solve is still
running then, it
copies that word to the host every ``period`` seconds on a stream of its own (non-blocking, so
the device is never stopped or ordered behind it) and shows it: with tqdm when it is installed,
else as one updating line on stderr. Nothing is shown for a solve shorter than ``delay``."""
import sys
import threading
import time

import numpy as np


_COND = threading.Condition()
_STATE = {"job": None, "thread": None, "idle": False}


def _watcher():
    """The process's watcher: wakes when the solve being waited for has run ``delay`` seconds and
    shows its progress. Solves that come and go faster only set and clear ``job`` (it is woken
    only from its idle wait, when no solve was running)."""
    while True:
        with _COND:
            job = _STATE["job"]
            while job is None:
                _STATE["idle"] = True
                _COND.wait()
                _STATE["idle"] = False
                job = _STATE["job"]
            wait = job._t0 + job.delay - time.monotonic()
            if wait > 0:
                _COND.wait(wait)
                continue  # the same solve, or a later one: look again
            _STATE["job"] = None
            job.finished = threading.Event()
            job.taken = True
        try:
            job._watch()
        finally:
            job.finished.set()


class Progress:
    def __init__(self, backend, done, n, *, enabled=True, delay=2.0, period=0.25, label="eagle.ode", times=None):
        self.backend, self.done, self.n = backend, done, n
        self.times = times  # (W, its T row, t1): the samples' times, read beside the count
        self.enabled, self.delay, self.period, self.label = enabled, delay, period, label
        self.shown = self.taken = False

    def __enter__(self):
        self._t0 = time.monotonic()
        if self.enabled and self.n > 0:
            self._stop = threading.Event()
            with _COND:
                if _STATE["thread"] is None:
                    _STATE["thread"] = threading.Thread(target=_watcher, name="eagle.ode progress", daemon=True)
                    _STATE["thread"].start()
                _STATE["job"] = self
                if _STATE["idle"]:
                    _COND.notify()
        return self

    def __exit__(self, *exc):
        if self.enabled and self.n > 0:
            self._stop.set()
            with _COND:
                if _STATE["job"] is self:
                    _STATE["job"] = None
                taken = self.taken
            if taken:  # the watcher has it: wait until its line is closed
                self.finished.wait()
        return False

    def _read(self, stream, host):
        self.backend.copy(host, self.done, 4, stream=stream)
        th = None
        if self.times is not None:
            W, row, _ = self.times
            th = np.empty(min(self.n, 65536), W.dtype)
            self.backend.copy(th, W.address + row * self.n * W.dtype.itemsize, th.nbytes, stream=stream,
                              direction="d2h")
        stream.synchronize()
        k = min(int(host[0]), self.n)
        if th is not None:
            self.reached = (float(np.median(th)), float(np.max(th)), self.times[2])
        return k

    def _watch(self):
        if self._stop.is_set():
            return
        try:
            s = self.backend.stream(non_blocking=True)
        except Exception:  # a backend with no second stream: no progress, never a failed solve
            return
        host = np.zeros(1, np.uint32)
        bar = _bar(self.n, self.label, self._t0, self)
        period = self.period if getattr(sys.stderr, "isatty", lambda: False)() else 10.0
        self.shown = True
        try:
            while True:
                try:
                    k = self._read(s, host)
                except Exception:
                    return
                bar.update(k)
                if self._stop.wait(period):
                    break
            bar.update(self._read(s, host))
        finally:
            bar.close()
            s.close()


def _bar(n, label, t0, prog):
    try:
        import tqdm
        return _Tqdm(tqdm.tqdm(total=n, desc=label, unit="samples", leave=False), prog)
    except ImportError:
        return _Line(n, label, t0, prog)


def _reached(prog):
    r = getattr(prog, "reached", None)
    return "" if r is None else f"t reached: median {r[0]:.4g}, furthest {r[1]:.4g} of {r[2]:.4g}"


class _Tqdm:
    def __init__(self, t, prog):
        self.t, self.prog = t, prog

    def update(self, k):
        self.t.set_postfix_str(_reached(self.prog), refresh=False)
        self.t.update(k - self.t.n)

    def close(self):
        self.t.close()


class _Line:
    def __init__(self, n, label, t0, prog):
        self.n, self.label, self.t0, self.prog = n, label, t0, prog
        self.tty = getattr(sys.stderr, "isatty", lambda: False)()

    def update(self, k):
        sys.stderr.write(f"{chr(13) if self.tty else ''}{self.label}: {k}/{self.n} samples done "
                         f"({100.0 * k / self.n:5.1f} %), {_reached(self.prog)}, {time.monotonic() - self.t0:.1f} s"
                         f"{'' if self.tty else chr(10)}")
        sys.stderr.flush()

    def close(self):
        if self.tty:
            sys.stderr.write("\n")
            sys.stderr.flush()
