"""Progress of a long solve: the fraction of samples done, read from the device while it works.

The step kernel adds one to a device word (``done``) when a sample ends. While the host waits
for the solve, a watcher thread sleeps ``delay`` seconds; if the solve is still running then, it
copies that word to the host every ``period`` seconds on a stream of its own (non-blocking, so
the device is never stopped or ordered behind it) and shows it: with tqdm when it is installed,
else as one updating line on stderr. Nothing is shown for a solve shorter than ``delay``."""
import sys
import threading
import time

import numpy as np


class Progress:
    def __init__(self, backend, done, n, *, enabled=True, delay=2.0, period=0.25, label="eagle.ode"):
        self.backend, self.done, self.n = backend, done, n
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
        stream.synchronize()
        return min(int(host[0]), self.n)

    def _watch(self):
        if self._stop.wait(self.delay):
            return
        try:
            s = self.backend.stream(non_blocking=True)
        except Exception:  # a backend with no second stream: no progress, never a failed solve
            return
        host = np.zeros(1, np.uint32)
        bar = _bar(self.n, self.label, self._t0)
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


def _bar(n, label, t0):
    try:
        import tqdm
        return _Tqdm(tqdm.tqdm(total=n, desc=label, unit="samples", leave=False))
    except ImportError:
        return _Line(n, label, t0)


class _Tqdm:
    def __init__(self, t):
        self.t = t

    def update(self, k):
        self.t.update(k - self.t.n)

    def close(self):
        self.t.close()


class _Line:
    def __init__(self, n, label, t0):
        self.n, self.label, self.t0 = n, label, t0
        self.tty = getattr(sys.stderr, "isatty", lambda: False)()

    def update(self, k):
        sys.stderr.write(f"{chr(13) if self.tty else ''}{self.label}: {k}/{self.n} samples done "
                         f"({100.0 * k / self.n:5.1f} %), {time.monotonic() - self.t0:.1f} s{'' if self.tty else chr(10)}")
        sys.stderr.flush()

    def close(self):
        if self.tty:
            sys.stderr.write("\n")
            sys.stderr.flush()
