"""Interrupts of the main thread at a chosen moment, for tests that check what a call does when
Ctrl-C or an alarm lands in it (tests/test_fuzz_stateful.py).

``with Interrupter(how, after, when=None) as irq:`` installs its own SIGINT and SIGALRM handlers;
``irq.during(call)`` then calls ``call()``, and another thread interrupts the main thread
``after`` seconds in (counted from when ``when()`` first returns true, if given: say, once the
work the call waits for has started):

- ``"sigint"``: SIGINT to the main thread (``signal.pthread_kill``);
- ``"interrupt_main"``: ``_thread.interrupt_main()`` (a simulated SIGINT: Python's flag is set,
  no signal is delivered);
- ``"alarm"``: SIGALRM to the main thread;
- ``"itimer"``: ``signal.setitimer`` (SIGALRM to the process: the kernel may deliver it to any
  thread, a backend's workers included).

The SIGINT handler raises KeyboardInterrupt, the SIGALRM one :class:`Alarm`; ``irq.exception`` is
the one this interrupt raises. A handler that runs inside a finalizer (a ``weakref.finalize``
callback, a ``__del__``) has its exception swallowed by Python ("Exception ignored in"), as a
user's Ctrl-C would be; the user presses again, so the interrupt is sent again every
:data:`RESEND` s until the call has raised or returned (``irq.sends`` counts them).
``irq.raised_after``: seconds from the first send to the exception reaching ``during``.

Leaving the block never lets an interrupt escape: nothing more is sent, and every interrupt sent
is waited for until its handler has run (its exception swallowed there); the previous handlers
are put back."""
import _thread
import signal
import threading
import time

HOWS = ("sigint", "interrupt_main", "alarm", "itimer")
RESEND = 0.1  # seconds between sends while the call neither raised nor returned
WHEN_TIMEOUT = 5.0  # seconds the sender waits for when() before it sends anyway


class Alarm(Exception):
    """Raised by the SIGALRM handler of an :class:`Interrupter`."""


class Interrupter:
    def __init__(self, how, after, when=None):
        if how not in HOWS:
            raise ValueError(f"Interrupter: how must be one of {HOWS}, got {how!r}")
        self.how, self.after, self.when = how, float(after), when
        self.exception = KeyboardInterrupt if how in ("sigint", "interrupt_main") else Alarm
        self.first_sent_at = self.raised_after = None
        self.sends = self.handled = 0
        self._lock = threading.Lock()
        self._saved = self._thread = None
        self._go, self._done = threading.Event(), threading.Event()

    # -- the handlers ------------------------------------------------------------------------------
    def _on_sigint(self, signum, frame):
        self.handled += 1
        raise KeyboardInterrupt("the fuzz's interrupt")

    def _on_alarm(self, signum, frame):
        self.handled += 1
        raise Alarm("the fuzz's alarm")

    # -- the sender ----------------------------------------------------------------------------------
    def _send_once(self, main):
        with self._lock:
            if self._done.is_set():
                return False
            self.sends += 1
            if self.first_sent_at is None:
                self.first_sent_at = time.monotonic()
            if self.how == "interrupt_main":
                _thread.interrupt_main()
            elif self.how == "itimer":
                signal.setitimer(signal.ITIMER_REAL, 1e-6)
            else:
                signal.pthread_kill(main, signal.SIGINT if self.how == "sigint" else signal.SIGALRM)
        return True

    def _sender(self, main):
        self._go.wait()
        if self.when is not None:
            deadline = time.monotonic() + WHEN_TIMEOUT
            while not self.when() and time.monotonic() < deadline:
                if self._done.wait(5e-5):
                    return
        if self._done.wait(self.after):
            return
        while self._send_once(main) and not self._done.wait(RESEND):
            pass

    # -- arming and disarming ------------------------------------------------------------------------
    def __enter__(self):
        self._saved = {signal.SIGINT: signal.getsignal(signal.SIGINT),
                       signal.SIGALRM: signal.getsignal(signal.SIGALRM)}
        signal.signal(signal.SIGINT, self._on_sigint)
        signal.signal(signal.SIGALRM, self._on_alarm)
        main = threading.main_thread().ident
        self._thread = threading.Thread(target=self._sender, args=(main,), name="fuzz-interrupter", daemon=True)
        self._thread.start()  # it waits for during(): nothing is sent yet
        return self

    def during(self, call):
        """Start the countdown, then ``call()``: ``(False, its value)``, or ``(True, None)`` when
        the interrupt's exception was raised (in the call, or in the few steps around it). Nothing
        is sent after this returns."""
        try:
            self._go.set()
            return False, call()
        except self.exception:
            if self.first_sent_at is not None:
                self.raised_after = time.monotonic() - self.first_sent_at
            return True, None
        finally:
            with self._lock:
                self._done.set()

    def settle(self, timeout=5.0):
        """Stop sending, then wait until the interrupts sent have been handled (swallowing the
        handlers' exceptions here). Returns the number of sends."""
        self._done.set()
        self._go.set()
        while self._thread.is_alive():
            try:
                self._thread.join()
            except self.exception:  # an interrupt landing in the join
                pass
        # signals sent while the main thread was busy may have merged into one: wait for the
        # first to be handled, then a moment more for any still pending
        deadline = time.monotonic() + timeout
        quiet = 0
        while quiet < 3:
            if self.sends and not self.handled and time.monotonic() > deadline:
                raise AssertionError(f"{self.sends} interrupts ({self.how}) were sent, none was handled")
            seen = self.handled
            try:
                time.sleep(0.0005)
            except self.exception:
                pass
            quiet = quiet + 1 if (self.handled or not self.sends) and self.handled == seen else 0
        return self.sends

    def __exit__(self, *exc):
        try:
            self.settle()
        finally:
            if self.how == "itimer":
                signal.setitimer(signal.ITIMER_REAL, 0)
            for sig, handler in self._saved.items():
                signal.signal(sig, handler)
        return False
