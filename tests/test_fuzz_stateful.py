"""Random sequences of public API calls on the cpu backend, misuse included: every failure must be
a typed eagle exception (a subclass of eagle.EagleError), never a crash or a foreign exception.

Interrupts (issue 28) are part of the sequences: a SIGINT, a SIGALRM or ``_thread.interrupt_main``
lands in a wait for work that cannot finish (a kernel spinning on a flag, a host function waiting
on an event), which must raise the handler's exception promptly and leave that work enqueued, its
arrays alive and its result right once released; or lands at a random moment of an eager copy,
run or compaction, a drain's wait, a graph's launch and wait or build, which must either complete
or raise it, and leave the work done exactly once or not at all, never half or twice, with the
stream and the backend usable. One sequence in INTERRUPTING_ONE_IN takes interrupts, at most
INTERRUPTS of them (``EAGLE_FUZZ_INTERRUPTS``): each costs a wait of about 20 ms, eagle's signal
check interval.

Runs ``max_examples=50`` by default; ``EAGLE_FUZZ_EXAMPLES=N`` raises it. ``EAGLE_FUZZ_STATS=path``
appends one line per sequence to ``path``: the interrupt rules it ran (count them with
``awk '$1 > 0' path | wc -l``)."""
import os
import signal
import threading
import weakref

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, precondition, rule

import eagle
from eagle._backend import Backend
from _interrupt import HOWS, Interrupter
from test_api_kernels import kaddr

EXAMPLES = int(os.environ.get("EAGLE_FUZZ_EXAMPLES", "50"))
N = 256


TYPED = r"""
#include <eagle/kernel.h>
EAGLE_KERNEL(fz, (double*, x), (const int32_t*, q), (double, a), (int32_t, k)) { x[i] += a * (double)k + q[i]; }
"""


# kernels the interrupt rules wait for
INTR = r"""
#include <eagle/kernel.h>
/* started[i] = 1, then never ends while flag[i] == 0 (the host sets it); then y = src + 1 */
EAGLE_KERNEL(spin, (double*, y), (const double*, src), (const int32_t*, flag), (int32_t*, started))
{
    (void)n; volatile int32_t* s = started; s[i] = 1;
    volatile const int32_t* f = flag; while (f[i] == 0) {}
    y[i] = src[i] + 1.0;
}
/* y += steps, one at a time: takes time in proportion to steps */
EAGLE_KERNEL(slow, (double*, y), (int64_t, steps))
{ (void)n; volatile double v = y[i]; for (int64_t k = 0; k < steps; ++k) v = v + 1.0; y[i] = v; }
/* a drain's round: x counts the rounds a sample had; it drops once x reaches its cost */
EAGLE_KERNEL(tick, (double*, x), (const int32_t*, cost), (uint8_t*, mask))
{ (void)n; x[i] += 1.0; mask[i] = x[i] >= (double)cost[i]; }
"""
INTERRUPTS = int(os.environ.get("EAGLE_FUZZ_INTERRUPTS", "1"))  # interrupt rules a sequence, at most
INTERRUPTING_ONE_IN = 3  # the share of sequences that take interrupts
PROMPT = 1.0     # seconds from an interrupt to the exception of the wait it landed in
WATCHDOG = 4.0   # seconds after which blocked work is released anyway (a wait that was not interrupted)
SPIN_LANES = 2   # each spins on a thread of the backend's


class Planted(Exception):
    """Raised on purpose by a host function; re-raised at a later synchronize."""


def _private_cpu():
    cpu = eagle.backend("cpu")
    # its own Backend object: its pending host-function errors stay out of other tests
    return Backend(cpu.path, "cpu", "fuzz")


class ApiMachine(RuleBasedStateMachine):
    streams = Bundle("streams")
    captures = Bundle("captures")
    captureds = Bundle("captureds")
    graphs = Bundle("graphs")
    launchers = Bundle("launchers")
    forks = Bundle("forks")

    def __init__(self):
        super().__init__()
        self.b = _private_cpu()
        self.x = np.zeros(N)
        self.words = np.zeros(4, np.uint32)
        self.m = (np.arange(N) % 3 == 0).astype(np.uint8)
        self.idx = np.zeros(N, np.int32)
        self.count = np.zeros(1, np.uint32)
        self.scratch = np.zeros(self.b.compact_scratch_bytes(N), np.uint8)
        self.objects = []
        self.misuses = 0
        self.tx = np.zeros(N)
        self.typed = self.b.compile(TYPED)  # the process's compile cache: compiled once
        self.intr = self.b.compile(INTR, kernels=["spin", "slow", "tick_drain"], name="fuzz_intr.c")
        self.interrupts = 0
        self.interrupt_budget = 0  # set by first_stream
        self.handlers_at_start = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGALRM))
        self.spin_graph = None   # the spin graph and its planes (built on first use)
        self.count_graph = None  # the graph whose replays are counted, and its plane
        self.kept = []      # what blocked work of an interrupt rule uses: alive until the machine ends

    # -- the one rule every call follows ---------------------------------------------------------
    def call(self, fn, *args, **kw):
        try:
            return fn(*args, **kw)
        except Planted:
            return None
        except eagle.EagleError:
            self.misuses += 1
            return None
        # anything else propagates and fails the run

    def keep(self, obj):
        if obj is not None:
            self.objects.append(obj)
        return obj

    # -- streams ---------------------------------------------------------------------------------
    @initialize(target=streams, interrupting=st.integers(0, INTERRUPTING_ONE_IN - 1))
    def first_stream(self, interrupting):
        # one sequence in INTERRUPTING_ONE_IN may take interrupts (each costs a wait of ~20 ms)
        self.interrupt_budget = INTERRUPTS if interrupting == 0 else 0
        return self.keep(self.b.stream())

    @rule(target=streams, non_blocking=st.booleans(), device=st.sampled_from([-1, 0, 0, 0, 3]))
    def new_stream(self, non_blocking, device):
        s = self.call(self.b.stream, device=device, non_blocking=non_blocking)
        return self.keep(s) if s is not None else self.keep(self.b.stream())

    @rule(s=streams)
    def close_stream(self, s):
        self.call(s.close)

    @rule(s=streams)
    def synchronize(self, s):
        self.call(s.synchronize)

    @rule(s=streams, default=st.booleans(), lanes=st.integers(0, N), block=st.sampled_from([0, 1, 7]))
    def run_kernel(self, s, default, lanes, block):
        self.call(self.b.run, kaddr("add1"), [self.x], N, count=lanes, block=block,
                  stream=None if default else s)

    # -- typed launches: every argument right, or at least one wrong (which must be refused) -------
    def _typed_pool(self):
        """Per parameter of TYPED's kernel: (value, whether it is right for the declaration)."""
        ro = np.arange(N, dtype=np.int32)
        ro.flags.writeable = False
        ro_x = np.zeros(N)
        ro_x.flags.writeable = False
        return (
            [(self.tx, True), (np.zeros((2, N)), True), (self.tx.astype(np.float32), False),
             (self.tx[: N // 2], False), (0, False), (2.0, False), (ro_x, False), (np.float64(1.0), False)],
            [(np.arange(N, dtype=np.int32), True), (ro, True), (np.arange(N), False), (1, False),
             (np.zeros((3, 2), np.int32), False)],
            [(1.5, True), (2, True), (np.float32(0.5), True), (True, False), (self.tx, False), (1j, False)],
            [(3, True), (np.int64(2), True), (True, True), (3.0, False), (2 ** 40, False), (None, False)],
        )

    @rule(s=streams, default=st.booleans(), picks=st.tuples(st.integers(0, 7), st.integers(0, 4),
                                                             st.integers(0, 5), st.integers(0, 5)))
    def typed_launch(self, s, default, picks):
        pool = self._typed_pool()
        chosen = [pool[k][i % len(pool[k])] for k, i in enumerate(picks)]
        args, right = [v for v, _ in chosen], all(ok for _, ok in chosen)
        try:
            self.b.run(self.typed.fz, args, N, stream=None if default else s)
        except eagle.EagleError:
            self.misuses += 1
            return
        except Planted:  # a planted host-function error of this thread, raised by the launch's wait
            pass         # (stream=None waits): the launch itself was accepted, so it must be right
        assert right, f"a launch breaking the declaration ran: {[type(a).__name__ for a in args]}"

    @rule(s=streams, fail=st.booleans())
    def host_func(self, s, fail):
        def fn():
            if fail:
                raise Planted("planted")
        self.call(self.b.host_func, fn, stream=s)

    @rule(s=streams)
    def copy(self, s):
        self.call(self.b.copy, self.words[:2], self.words[2:], stream=s)

    @rule(s=streams, k=st.integers(0, 1000))
    def copy_from_a_temporary(self, s, k):
        """The README's taste: the source is a temporary, other allocations follow before the
        stream runs the copy; after synchronize the destination holds the copy."""
        dst = np.zeros(64)
        try:
            self.b.copy(dst, np.arange(64.0) + k, stream=s)
        except eagle.HandleError:  # a closed stream
            self.misuses += 1
            return
        _ = [np.full(64, -1.0) for _ in range(3)]
        while True:
            try:
                s.synchronize()
                break
            except Planted:
                continue
            except eagle.EagleError:  # the stream is being captured: the copy was recorded
                self.misuses += 1
                return
        assert (dst == np.arange(64.0) + k).all(), "a copy from a temporary lost its data"

    @rule(s=streams, how=st.sampled_from(["flag", "bytes"]))
    def copy_into_read_only_memory(self, s, how):
        if how == "flag":
            dst = np.zeros(4)
            dst.setflags(write=False)
        else:
            dst = np.frombuffer(bytes(32))
        try:
            self.b.copy(dst, np.ones(4), stream=s)
        except (eagle.EagleValueError, eagle.HandleError):
            self.misuses += 1
        else:
            raise AssertionError("a copy into read-only memory was accepted")
        assert not dst.any(), "read-only memory was written"

    @rule(s=streams, fail=st.booleans())
    def host_func_from_another_thread(self, s, fail):
        """A host function enqueued by another thread on this thread's stream is refused there; one
        on the other thread's own stream raises (if it fails) in that thread only."""
        box = []

        def other():
            try:
                self.b.host_func(lambda: None, stream=s)
                box.append("accepted")
            except eagle.HandleError:
                box.append("refused")
            mine = self.b.stream()
            try:
                def fn():
                    if fail:
                        raise Planted("other thread")
                mine.host_func(fn)
                try:
                    mine.synchronize()
                    box.append("clean")
                except Planted:
                    box.append("planted")
            finally:
                mine.close()
        t = threading.Thread(target=other)
        t.start()
        t.join(30)
        assert not t.is_alive(), "a host function across threads hung"
        assert box[0] == "refused", box  # open or closed, the stream is not the other thread's
        assert box[-1] == ("planted" if fail else "clean"), box

    @rule(s=streams)
    def compact(self, s):
        self.call(self.b.compact, self.m, self.idx, self.count, self.scratch, stream=s)

    @rule(a=streams, b=streams, none=st.booleans())
    def fence(self, a, b, none):
        self.call(self.b.fence, None if none else a, b)

    # -- capture ---------------------------------------------------------------------------------
    @rule(target=captures, s=streams, default=st.booleans())
    def begin_capture(self, s, default):
        cap = self.call(self.b.capture, None if default else s)
        if cap is None:
            cap = self.b.capture(self.b.stream())  # something to misuse later
        self.call(cap.begin)
        return self.keep(cap)

    @rule(cap=captures)
    def begin_again(self, cap):
        self.call(cap.begin)

    @rule(target=captureds, cap=captures)
    def end_capture(self, cap):
        out = self.call(cap.end)
        if out is None:
            out = cap.captured
        return self.keep(out) if out is not None else self.keep(self._empty_captured())

    def _empty_captured(self):
        s = self.b.stream()
        self.keep(s)
        with self.b.capture(s) as c:
            pass
        return c.captured

    @rule(cap=captures)
    def close_capture(self, cap):
        self.call(cap.close)

    @rule(s=streams, cap_kind=st.sampled_from(["if", "while", "switch"]))
    def conditional(self, s, cap_kind):
        def record():
            if cap_kind == "if":
                c = self.b.if_(s, self.words[0:1])
            elif cap_kind == "while":
                c = self.b.while_(s, self.words[0:1], self.words[2:4], loop_cap=3)
            else:
                c = self.b.switch(s, self.words[0:1], 2)
            self.keep(c)
            body = c.begin()
            self.b.run(kaddr("add1"), [self.x], 1, stream=body)
            c.end()
        self.call(record)

    @rule(s=streams)
    def snapshot(self, s):
        nodes = self.call(self.b.snapshot_nodes, s)
        for n in nodes or ():
            self.call(self.b.is_node_toggleable, n)

    # -- captured, graphs, launchers ---------------------------------------------------------------
    @rule(c=captureds)
    def captured_is_valid(self, c):
        self.call(lambda: c.is_valid)

    @rule(c=captureds)
    def close_captured(self, c):
        self.call(c.close)

    @rule(target=graphs, c=captureds)
    def graph_from_captured(self, c):
        g = self.call(self.b.graph_from_captured, c)
        return self.keep(g if g is not None else self.b.graph())

    @rule(g=graphs, c=captureds)
    def graph_add(self, g, c):
        self.call(g.add, c)

    @rule(g=graphs, s=streams)
    def graph_stream(self, g, s):
        self.call(g.set_stream, s)

    @rule(target=launchers, g=graphs)
    def make_launcher(self, g):
        launcher = self.call(g.launcher)
        return self.keep(launcher) if launcher is not None else self._any_launcher()

    def _any_launcher(self):
        s = self.keep(self.b.stream())
        with self.b.capture(s) as c:
            self.b.run(kaddr("add1"), [self.x], 1, stream=s)
        return self.keep(self.b.graph_from_captured(c.captured).launcher())

    @rule(g=graphs)
    def close_graph(self, g):
        self.call(g.close)

    @rule(launcher=launchers, times=st.integers(0, 3))
    def launch(self, launcher, times):
        self.call(launcher.launch, times)

    @rule(launcher=launchers)
    def launcher_synchronize(self, launcher):
        self.call(launcher.synchronize)

    @rule(launcher=launchers, s=streams)
    def launcher_stream(self, launcher, s):
        self.call(launcher.set_stream, s)

    @rule(launcher=launchers, size=st.sampled_from([-1, 0, 1, N, 2 ** 31]))
    def logical_size(self, launcher, size):
        self.call(launcher.set_logical_size, size)

    @rule(launcher=launchers, node=st.integers(0, 2 ** 64 - 1), on=st.booleans())
    def toggle_bogus_node(self, launcher, node, on):
        self.call(launcher.set_node_enabled, node, on)

    @rule(launcher=launchers)
    def close_launcher(self, launcher):
        self.call(launcher.close)

    # -- fork --------------------------------------------------------------------------------------
    @rule(target=forks, s=streams, n=st.integers(0, 3))
    def new_fork(self, s, n):
        f = self.call(self.b.fork, s, n)  # n == 0 is refused
        return self.keep(f if f is not None else self.b.fork(self.keep(self.b.stream()), 1))

    @rule(f=forks)
    def fork_fork(self, f):
        self.call(f.fork)

    @rule(f=forks)
    def fork_join(self, f):
        self.call(f.join)

    @rule(f=forks, i=st.integers(0, 4))
    def fork_branch_work(self, f, i):
        def go():
            br = f.branch(i)
            self.b.run(kaddr("add1"), [self.x], 4, stream=br)
        self.call(go)

    @rule(f=forks)
    def fork_close(self, f):
        self.call(f.close)

    # -- another thread ------------------------------------------------------------------------------
    @rule(data=st.data())
    @precondition(lambda self: self.objects)
    def from_another_thread(self, data):
        obj = data.draw(st.sampled_from(self.objects))
        use = {
            "Stream": lambda o: o.synchronize(), "Capture": lambda o: o.end(),
            "Captured": lambda o: o.is_valid, "GraphBuilder": lambda o: o.launcher(),
            "Launcher": lambda o: o.launch(), "Fork": lambda o: o.join(),
            "Conditional": lambda o: o.end(),
        }[type(obj).__name__]
        box = []

        def target():
            try:
                use(obj)
                box.append(None)
            except BaseException as e:  # noqa: BLE001
                box.append(e)
        t = threading.Thread(target=target)
        t.start()
        t.join(30)
        assert not t.is_alive(), "a call from another thread hung"
        assert isinstance(box[0], eagle.HandleError), f"{type(obj).__name__} from another thread: {box[0]!r}"

    # -- interrupts (issue 28) -----------------------------------------------------------------------
    def _until_done(self, wait):
        """wait(), again after each planted host-function error of this thread it raises (those are
        raised once the wait has finished: the next wait returns at once)."""
        while True:
            try:
                return wait()
            except Planted:
                continue

    def _drain_planted(self):
        """Raise (and drop) this thread's planted host-function errors now, so that a wait inside
        an eagle call (Graph.build's) does not raise them."""
        while True:
            try:
                self.b.run(kaddr("add1"), [np.zeros(1)], 1)
                return
            except Planted:
                continue

    def _capturing(self, s):
        """True when ``s`` is being captured (its work is recorded, not run)."""
        try:
            self.b.snapshot_nodes(s)
            return True
        except eagle.EagleError:  # not being captured (or closed)
            return False

    def _eager_refused_under_default_capture(self):
        """While the default stream is being captured, a call given no stream is refused, naming
        the capture (issue 42: it ran on eagle's own stream, outside the capture, and nothing was
        said); the interrupt rules, which make such calls, then check that and do nothing else.
        True when the default stream is being captured."""
        if not self._capturing(0):
            # the backend's own answer: an interrupt that lands in a dropped Capture's finalizer
            # leaves its release due, and this (a seam call) makes it first
            # (eagle/_inflight/releases.py, tests/test_release_interrupted.py)
            assert 0 not in self.b._capturing, "eagle's record says the default stream is captured, the backend not"
            return False
        assert 0 in self.b._capturing, "the backend says the default stream is captured, eagle's record not"
        try:
            self.b.run(kaddr("add1"), [np.zeros(1)], 1)
        except eagle.EagleValueError as e:
            assert "default stream is being captured" in str(e), e
        else:
            raise AssertionError("an eager call ran while the default stream was being captured")
        self.misuses += 1
        return True

    def _eager_barrier(self):
        """Wait for all the work on eagle's own stream of this thread: an eager call does."""
        try:
            self.b.run(kaddr("add1"), [np.zeros(1)], 1)
        except Planted:  # raised after the wait
            pass

    def _spin_graph(self):
        """A graph of one spin kernel over its own planes (built once per sequence)."""
        if self.spin_graph is None:
            planes = (np.zeros(SPIN_LANES), np.arange(SPIN_LANES, dtype=np.float64), np.ones(SPIN_LANES, np.int32),
                      np.zeros(SPIN_LANES, np.int32))
            gs = self.b.stream()
            self.kept.append(gs)
            self._drain_planted()
            g = eagle.Graph.build([lambda st: st.run(self.intr.spin, list(planes), SPIN_LANES)],
                                  planes=list(planes), backend=self.b, stream=gs)
            self.spin_graph = (g, planes)
            self.kept.append(g)
        return self.spin_graph

    @precondition(lambda self: self.interrupts < self.interrupt_budget)
    @rule(s=streams, wait=st.sampled_from(["stream", "close", "eager", "graph"]), host=st.booleans(),
          how=st.sampled_from(HOWS), after=st.sampled_from([0.0, 0.001, 0.004]), k=st.integers(0, 1000))
    def interrupt_a_wait(self, s, wait, host, how, after, k):
        """Work that cannot finish until released (a spinning kernel; on a stream also a host
        function waiting for an event), then a wait for it that an interrupt lands in: the wait
        raises the handler's exception within PROMPT s; the work is still pending and what it reads
        alive (src, a temporary of this rule, is held by the stream alone), the stream takes more
        work; once released, the next wait completes it with the right result."""
        if self._eager_refused_under_default_capture():
            return
        self.interrupts += 1
        host = host and wait in ("stream", "close")
        flag, go = np.zeros(SPIN_LANES, np.int32), threading.Event()
        dst, started = np.zeros(SPIN_LANES), np.zeros(SPIN_LANES, np.int32)
        src = np.arange(SPIN_LANES, dtype=np.float64) + k
        want = src + 1.0
        self.kept += [flag, dst, started]  # work recorded by a capture may run later: it finds the flag set

        def release():
            flag[:] = 1
            go.set()
        watchdog = threading.Timer(WATCHDOG, release)  # not interrupted: the wait ends late, not never
        watchdog.daemon = True
        watchdog.start()
        try:
            if wait == "graph":
                g, (dst, src, flag, started) = self._spin_graph()
                want = src + 1.0
                dst[:] = 0.0
                flag[:] = started[:] = 0
                g.launch()
                again = lambda: self._until_done(g.synchronize)  # noqa: E731
            elif wait == "eager":
                again = self._eager_barrier
            else:
                if s.closed or self._capturing(s):  # a closed stream refuses work; a captured one records it
                    self.misuses += 1
                    return
                if host:
                    def blocked(dst=dst, src=src):
                        started[:] = 1
                        go.wait()
                        dst[:] = src + 1.0
                    self.b.host_func(blocked, stream=s)
                else:
                    self.b.run(self.intr.spin, [dst, src, flag, started], SPIN_LANES, stream=s)
                again = lambda: self._until_done(s.close if wait == "close" else s.synchronize)  # noqa: E731
            src_alive = weakref.ref(src) if not host and wait != "graph" else None
            if src_alive is not None and wait != "eager":
                del src  # held by the stream alone from here on
            def blocked_wait():
                if wait == "eager":
                    self.b.run(self.intr.spin, [dst, src, flag, started], SPIN_LANES)
                else:
                    again()
            with Interrupter(how, after, when=started.any) as irq:  # sent once the work runs
                raised, _ = irq.during(blocked_wait)
                irq.settle()
            if wait == "eager":
                del src
            assert raised, f"a wait ({wait}) for work that cannot finish returned"
            assert irq.raised_after < PROMPT, \
                f"a wait ({wait}) raised {irq.raised_after:.3f} s after the interrupt ({how}, {irq.sends} sent)"
            assert not dst.any(), "the blocked work ran before it was released"
            assert src_alive is None or src_alive() is not None, \
                f"an array that interrupted work ({wait}) reads was freed while the work is pending"
            if wait == "close":
                assert not s.closed, "an interrupted close closed the stream"
            extra = np.zeros(4)
            if wait in ("stream", "close"):  # the stream takes more work, ordered after the blocked one
                self.b.copy(extra, np.full(4, 7.0), stream=s)
            release()
            again()
            assert (dst == want).all(), f"interrupted work ({wait}, {'host' if host else 'kernel'}) " \
                                        f"gave {dst} once released, not {want}"
            if wait in ("stream", "close"):
                assert (extra == 7.0).all(), "work enqueued behind an interrupted wait was lost"
            if wait == "close":
                assert s.closed, "the close after the interrupted one did not close the stream"
        finally:
            release()
            watchdog.cancel()

    @precondition(lambda self: self.interrupts < self.interrupt_budget)
    @rule(op=st.sampled_from(["copy", "run", "compact", "drain", "graph", "build"]), how=st.sampled_from(HOWS),
          after=st.sampled_from([0.0, 0.0002, 0.001, 0.003]), size=st.integers(0, 3))
    def interrupt_a_call(self, op, how, after, size):
        """An interrupt at a random moment of an eagle call that does work: the call completes or
        raises the handler's exception; either way, once everything is waited for, the work was
        done exactly once or not at all, and the stream and the backend still work."""
        if self._eager_refused_under_default_capture():
            return
        self.interrupts += 1
        getattr(self, "_interrupted_" + op)(how, after, size)

    def _interrupted(self, how, after, call):
        """call() with an interrupt landing in it (or after it); True when it raised there."""
        def call_through_planted():
            try:
                call()
            except Planted:  # an eager call's wait finished, then raised this thread's planted error
                pass
        with Interrupter(how, after) as irq:
            raised, _ = irq.during(call_through_planted)
            irq.settle()
        return raised

    def _interrupted_copy(self, how, after, size):
        n = (256, 4096, 1 << 15, 1 << 18)[size]
        dst = np.zeros(n)
        self._interrupted(how, after, lambda: self.b.copy(dst, np.arange(1.0, n + 1.0)))  # a temporary
        self._eager_barrier()
        assert not dst.any() or (dst == np.arange(1.0, n + 1.0)).all(), "an interrupted copy did half"

    def _interrupted_run(self, how, after, size):
        steps = (100, 2000, 10000, 30000)[size]
        y = np.zeros(64)
        self._interrupted(how, after, lambda: self.b.run(self.intr.slow, [y, steps], 64))
        self._eager_barrier()
        assert (y == 0).all() or (y == steps).all(), f"an interrupted run left {np.unique(y)}"

    def _interrupted_compact(self, how, after, size):
        n = (256, 4096, 1 << 16, 1 << 18)[size]
        m = (np.random.default_rng(n + size).random(n) < 0.3).astype(np.uint8)
        idx, count = np.full(n, -1, np.int32), np.full(1, 0xFFFFFFFF, np.uint32)
        scratch = np.zeros(self.b.compact_scratch_bytes(n), np.uint8)
        self._interrupted(how, after, lambda: self.b.compact(m, idx, count, scratch))
        self._eager_barrier()
        if count[0] == 0xFFFFFFFF:
            assert (idx == -1).all(), "an interrupted compaction wrote the map but not the count"
            return
        want = np.flatnonzero(m)
        assert count[0] == want.size and (idx[: want.size] == want).all(), "an interrupted compaction is wrong"

    def _interrupted_drain(self, how, after, size):
        cost = np.random.default_rng(size).integers(1, (50, 500, 3000, 10000)[size], 64).astype(np.int32)
        rounds = int(cost.max()) // (1 + size % 2) + 1
        x, mask = np.zeros(64), np.zeros(64, np.uint8)
        ds = self.b.stream()
        try:
            aset = eagle.ActiveSet(mask, backend=self.b, stream=ds)

            def drain():
                aset.drain(ds, self.intr.tick_drain, [x, cost, mask], rounds, compacted=False)
                self._until_done(ds.synchronize)
            self._interrupted(how, after, drain)
            self._until_done(ds.synchronize)
            assert not x.any() or (x == np.minimum(cost, rounds)).all(), "an interrupted drain is wrong"
        finally:
            self._until_done(ds.close)

    def _interrupted_graph(self, how, after, size):
        if self.count_graph is None:  # a graph whose every replay adds 1 to its plane
            y, gs = np.zeros(64), self.b.stream()
            self.kept.append(gs)
            self._drain_planted()
            g = eagle.Graph.build([lambda st: st.run(kaddr("add1"), [y], 64)], planes=[y], backend=self.b, stream=gs)
            self.kept.append(g)
            self.count_graph = (g, y)
        g, y = self.count_graph
        before, times = y.copy(), size + 1

        def launch():
            g.launch(times)
            self._until_done(g.synchronize)
        self._interrupted(how, after, launch)
        self._until_done(g.synchronize)
        ran = y - before
        assert (ran == ran[0]).all() and ran[0] in range(times + 1), \
            f"an interrupted launch of {times} replays ran {np.unique(ran)} of them"
        self.b.run(kaddr("add1"), [y], 64, stream=g.stream)  # its stream still works
        self._until_done(g.synchronize)
        assert (y == before + ran[0] + 1).all(), "the stream of an interrupted graph launch does not run work"

    def _interrupted_build(self, how, after, size):
        y = np.zeros(64)
        bs = self.b.stream()
        built = []
        self._drain_planted()

        def build():
            built.append(eagle.Graph.build([lambda st: st.run(self.intr.slow, [y, 10 ** size], 64)],
                                           planes=[y], backend=self.b, stream=bs))
            built[0].launch()
            self._until_done(built[0].synchronize)
        try:
            self._interrupted(how, after, build)
            if built:
                self._until_done(built[0].synchronize)
            assert (y == 0).all() or (y == 10 ** size).all(), f"an interrupted build and launch left {np.unique(y)}"
            probe = np.zeros(4)  # the stream it recorded on is not left capturing
            self.b.run(kaddr("add1"), [probe], 4, stream=bs)
            self._until_done(bs.synchronize)
            assert (probe == 1.0).all(), "the stream of an interrupted Graph.build does not run work"
        finally:
            if built:
                built[0].close()
            self._until_done(bs.close)

    @invariant()
    def backend_answers(self):
        assert self.b.event_pool_created >= 0

    @invariant()
    def default_capture_recorded(self):
        """eagle's record of the default stream's capture agrees with the backend's answer."""
        assert self._capturing(0) == (0 in self.b._capturing), \
            f"backend says captured: {self._capturing(0)}, eagle's record: {0 in self.b._capturing}"

    def teardown(self):
        stats = os.environ.get("EAGLE_FUZZ_STATS")
        if stats:
            with open(stats, "a") as fh:
                fh.write(f"{self.interrupts} {self.interrupt_budget}\n")
        # no interrupt rule leaves its handlers or a timer behind
        assert signal.getsignal(signal.SIGINT) is self.handlers_at_start[0], signal.getsignal(signal.SIGINT)
        assert signal.getsignal(signal.SIGALRM) is self.handlers_at_start[1], signal.getsignal(signal.SIGALRM)
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0), signal.getitimer(signal.ITIMER_REAL)
        for obj in reversed(self.objects + [o for o in self.kept if hasattr(o, "close")]):
            try:
                obj.close()
            except eagle.EagleError:
                pass
        # every capture closed: the default stream is left captured for no later example
        assert not self._capturing(0), "the sequence left the default stream captured"
        s = self.b.stream()
        x = np.zeros(4)
        self.b.run(kaddr("add1"), [x], 4, stream=s)
        while True:  # drain planted errors, then the backend must still work
            try:
                s.synchronize()
                break
            except Planted:
                continue
        assert (x == 1).all()
        s.close()


ApiMachine.TestCase.settings = settings(max_examples=EXAMPLES, deadline=None, stateful_step_count=40,
                                        suppress_health_check=list(HealthCheck))
TestApiFuzz = ApiMachine.TestCase
