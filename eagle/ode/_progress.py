"""Progress of a long solve, read from the device while it works: the samples done and how far
the running ones are (the median and the furthest time reached, of up to 65536 samples' ``t``),
so a solve whose samples all end late still shows it moving.

The step kernel adds one to a device word (``done``) when a sample ends and stores each sample's
time in W's T row after every call of its body. While the host waits
for the solve, a watcher thread sleeps ``delay`` seconds; if the solve is still running then, it
copies that word to the host every ``period`` seconds on a stream of its own (non-blocking, so
the device is never stopped or ordered behind it) and shows it: with tqdm when it is installed,
else as one updating line on stderr. Nothing is shown for a solve shorter than ``delay``."""
import sys
import threading
import time

import numpy as np


class Progress:
    def __init__(self, backend, done, n, *, enabled=True, delay=2.0, period=0.25, label="eagle.ode", times=None):
        self.backend, self.done, self.n = backend, done, n
        self.times = times  # (W, its T row, t1): the samples' times, read beside the count
        self.enabled, self.delay, self.period, self.label = enabled, delay, period, label
        self._stop = threading.Event()
        self._thread = None
        self.shown = False

    def __enter__(self):
        self._t0 = time.monotonic()
        if self.enabled and self.n > 0:
            self._thread = threading.Thread(target=self._watch, name="eagle.ode progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
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
        if self._stop.wait(self.delay):
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
