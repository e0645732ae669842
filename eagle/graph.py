"""``eagle.Graph``: a program of steps recorded once and replayed again and again.

Decisions on the device or on the host. Where the backend provides what the program's constructs
need (``conditional``; ``conditional_begin_case`` for a SWITCH) the whole program is one recorded
graph and :attr:`Graph.decides_on_device` is True (eagle/_record.py). Otherwise the runs of plain
steps are recorded as pieces, and the host replays them, reading the guard words (after
synchronizing) to decide (eagle/_interpret.py).

Toggling members. The top-level steps are the graph's *members*; ``graph.disable(m)`` and
``graph.enable(m)`` switch one off and on for later launches without rebuilding:
a plain callable member whose recorded nodes are all toggleable is switched by node enabling in
the launcher ("node"); a construct member (or any member where the backend cannot attribute
nodes) is wrapped at build time in an IF on a guard word the graph owns, which the host flips
("guard"; one IF node per replay, omitted with ``toggle=False``); on the host-decided path the
host simply skips it ("host")."""
import time
import warnings
import weakref

import numpy as np

from . import _alloc, _recording, _render
from ._interpret import Compiler, Interpreter, pieces
from ._record import Recorder
from ._resolve import resolve
from ._validate import integer
from .stream import StreamRef
from .constructs import as_steps, guard_arrays, needs_of, step_name
from .errors import EagleKeyError, EagleTypeError, EagleValueError, RanOutWarning, Unsupported


class Member:
    """One top-level step of a :class:`Graph`, switchable with :attr:`enabled`."""

    __slots__ = ("index", "name", "step", "how", "nodes", "word", "_enabled", "_graph")

    def __init__(self, graph, index, step):
        self._graph, self.index, self.step = graph, index, step
        self.name = step_name(step)
        self.how = None      # 'node', 'guard', 'host', or None (cannot toggle)
        self.nodes = []
        self.word = None
        self._enabled = True

    @property
    def enabled(self):
        return self._enabled

    @enabled.setter
    def enabled(self, on):
        self._graph._set_enabled(self, bool(on))

    def __repr__(self):
        return f"<eagle.Member [{self.index}] {self.name} {'on' if self._enabled else 'off'} ({self.how})>"


class Graph:
    """A recorded program of steps. Make one with :meth:`Graph.build`.

    ``launch(n)`` enqueues n replays, ``enqueue()`` one, ``synchronize()`` waits. On the
    host-decided path a launch blocks at every decision (it reads guard words)."""

    def __init__(self):
        raise EagleTypeError("eagle.Graph: use eagle.Graph.build(steps, planes=...)")

    @classmethod
    def build(cls, steps, *, planes=None, backend=None, device=-1, stream=None, toggle=True,
              on_device=None):
        """Record ``steps`` once and return a :class:`Graph`.

        Parameters
        ----------
        steps : step or sequence of steps
            Callables ``f(stream)`` and eagle constructs; the top-level ones are the members.
        planes : sequence of arrays, optional
            The arrays the steps work on: their DLPack device picks the backend when
            ``backend`` is None (all must agree), and owned words are allocated beside them.
        backend : Backend, kind or 'gpu', optional
        device : int
            -1: the planes' device.
        stream : eagle Stream, optional
            Where the graph records and launches (default: a new stream of the backend).
        toggle : bool
            Wrap construct members in an owned guard IF so they can be switched off.
        on_device : bool, optional
            None: decide on the device where the backend can. False forces the host-decided
            path (True where the backend cannot is an error).
        """
        self = object.__new__(cls)
        steps = as_steps(steps)
        if planes is not None and not isinstance(planes, (list, tuple)):
            raise EagleTypeError(f"eagle.Graph.build: planes= must be a list or tuple of arrays, got a "
                                 f"{type(planes).__name__}; pass one array as [array]")
        if stream is not None and not isinstance(stream, StreamRef):
            raise EagleTypeError(f"eagle.Graph.build: stream= must be an eagle stream (Backend.stream() or "
                                 f"eagle.StreamRef.from_handle), got a {type(stream).__name__} ({stream!r})")
        planes = list(planes or [])
        refs = planes or guard_arrays(steps)
        if not refs and backend is None and getattr(stream, "_raw_for", None) is None:
            raise EagleValueError("eagle.Graph.build: give planes= (arrays the steps work on) or backend= "
                                  "so eagle knows which device to record for")
        b, where_id = resolve(refs if backend is None else planes, backend=backend, streams=(stream,),
                              what="eagle.Graph.build", noun="plane")
        self.backend, self._like = b, (refs[0] if refs else None)
        if device == -1 and where_id is not None and not _alloc.is_host(self._like):
            device = where_id
        self.device = device
        self.steps, self.planes = steps, planes
        # The program is recorded whole only where the backend decides on the device (conditional)
        # and provides every entry its constructs need; fork is needed on both paths.
        missing = [e for e in dict.fromkeys(["conditional", *needs_of(steps)])
                   if e != "fork" and not b.provides(e)]
        can = not missing
        if on_device and not can:
            raise Unsupported(f"eagle.Graph.build: on_device=True, but the {b.kind} backend '{b.path}' "
                              f"does not provide {missing[0]}")
        self.decides_on_device = can if on_device is None else bool(on_device)
        self.stream = stream if stream is not None else b.stream(device, non_blocking=True)
        self._owned = []     # words the graph owns (cells, toggles), kept alive with it
        self._cells = {}     # id(RepeatWhile) -> its [remaining, ran] cell
        self._loops = []     # the RepeatWhile steps with a cell, in recording order
        self.members = [Member(self, i, st) for i, st in enumerate(steps)]
        self._toggle = toggle
        recorder = Recorder(self)
        with _recording.collecting() as drains:  # the ActiveSets whose drains are recorded
            if self.decides_on_device:
                self._launcher = recorder.record_program()
                self._program = []
            else:
                self._launcher = None
                compiler = Compiler(self, recorder)
                self._program = [compiler.compile([m.step]) for m in self.members]
                for m in self.members:
                    m.how = "host"
        # a wait for a replay that is interrupted stops them, and ends this graph's WHILE loops
        # (eagle/_inflight/cancel.py, Graph._cancel)
        if self._loops:
            drains.append(weakref.ref(self))
        for launcher in ([self._launcher] if self._launcher is not None else
                         [p.launcher for prog in self._program for p in pieces(prog) if p.launcher is not None]):
            launcher._cancel_sets = drains
        return self

    def _cancel(self, stream):
        """A wait for this graph's replay was interrupted (eagle/_inflight/cancel.py): every WHILE
        loop of it ends within an iteration (the loop's remaining count, word 0 of its cell, set
        to 1 now: the decision after the iteration running now steps it to 0, and 0 would wrap
        where a backend steps it after the body; each replay sets it again when the loop begins).
        The drains in it stop by their own cancel words. A decision that read the count just
        before the write may write it back: the word is read again and rewritten a few times;
        a loop that still escapes runs on to its max_iters, as it would have without this."""
        for cell in self._cells.values():
            for _ in range(4):
                # the next replay (on `stream`) begins after the write, wherever it lands
                if not _alloc.write_now(cell, 0, 1, self.backend, before=stream):
                    break  # not landed yet (the device runs it after its kernels): it will
                time.sleep(0.002)
                now = _alloc.read_now(cell, 0, self.backend)
                if now is None or now <= 1:
                    break

    # -- owned words ----------------------------------------------------------------------------
    def _word(self, values, dtype="uint32"):
        arr = _alloc.zeros(len(values), dtype, self._like)
        self._write(arr, values)
        self._owned.append(arr)
        return arr

    def _write(self, arr, values):
        _alloc.write(arr, values, np.uint32, self.backend, self.stream)

    def _read(self, arr, count=1):
        return _alloc.read(arr, np.uint32, count, self.backend, self.stream)

    def _cell(self, loop):
        cell = self._cells.get(id(loop))
        if cell is None:
            cell = self._cells[id(loop)] = self._word([0, 0])
            self._loops.append(loop)
        return cell

    def _warn_ran_out(self):
        """Warn (:class:`eagle.RanOutWarning`) for each loop whose last run stopped at its
        ``max_iters`` with its guard still holding: the samples it left are unfinished. Reads the
        loop's [remaining, ran] cell, and its guard words only when it ran out."""
        for loop in self._loops:
            remaining, ran = (int(v) for v in self._read(self._cells[id(loop)], 2))
            if remaining != 0 or ran < loop.max_iters:
                continue
            g = loop.guard
            count = int(self._read(g.count)[0])
            base = 0 if g.baseline is None else int(self._read(g.baseline)[0])
            if count != base:
                left = (f"{count} samples still live" if g.baseline is None else
                        f"its guard still holding (count {count}, baseline {base})")
                warnings.warn(f"eagle: repeat_while {step_name(loop)!r} ran out of its max_iters={loop.max_iters} "
                              f"iterations with {left}: they are left unfinished where they stopped; raise "
                              "max_iters or launch again", RanOutWarning, stacklevel=3)

    def ran(self, loop):
        """Iterations the WHILE ``loop`` (a repeat_while step of this graph) ran in the last launch.
        Every loop of the graph has its cell from the recording on (the graph keeps its steps, so
        their ids stay theirs); anything else is refused."""
        cell = self._cells.get(id(loop))
        if cell is None:
            raise EagleKeyError(f"eagle.Graph.ran: {loop!r} is not a repeat_while step of this graph")
        return int(self._read(cell, 2)[1])

    # -- launching ---------------------------------------------------------------------------------
    def launch(self, n=1):
        """Enqueue ``n`` replays (on the host-decided path each blocks at its decisions)."""
        if self.decides_on_device:
            self._launcher.launch(n)
            return
        n = integer(n, "eagle.Graph.launch: n", minimum=0)
        interp = Interpreter(self)
        for _ in range(n):
            for m, program in zip(self.members, self._program):
                if m._enabled:
                    interp.run(program)

    def enqueue(self):
        """Enqueue one replay and return (without waiting, where decisions are on the device)."""
        self.launch(1)

    def synchronize(self):
        """Wait for every replay enqueued so far. A loop whose last run stopped at its
        ``max_iters`` with its guard still holding is then reported with an
        :class:`eagle.RanOutWarning` naming it and how many samples it left."""
        if self._launcher is not None:
            self._launcher.synchronize()
        else:
            self.stream.synchronize()
        if self._loops:
            self._warn_ran_out()

    def __call__(self):
        """Launch once and wait."""
        self.launch(1)
        self.synchronize()

    @property
    def kernel_node_count(self):
        """Kernel nodes in the recorded graph (all pieces on the host-decided path)."""
        if self._launcher is not None:
            return self._launcher.kernel_node_count
        return sum(p.launcher.kernel_node_count for prog in self._program for p in pieces(prog)
                   if p.launcher is not None)

    # -- members -------------------------------------------------------------------------------------
    def member(self, which):
        """A member by index, name or the step object itself."""
        if isinstance(which, Member):
            return which
        if isinstance(which, int) and not isinstance(which, bool):
            if not -len(self.members) <= which < len(self.members):
                raise EagleKeyError(f"eagle.Graph: no member {which} (the graph has {len(self.members)})")
            return self.members[which]
        for m in self.members:
            if m.step is which or m.name == which:
                return m
        raise EagleKeyError(f"eagle.Graph: no member {which!r} (members: {[m.name for m in self.members]})")

    def enable(self, which, on=True):
        """Switch member ``which`` on (or off with ``on=False``) for later launches."""
        self._set_enabled(self.member(which), on)

    def disable(self, which):
        """Switch member ``which`` off for later launches (no rebuild)."""
        self._set_enabled(self.member(which), False)

    def _set_enabled(self, m, on):
        if m.how == "node":
            self._launcher.synchronize()
            for node in m.nodes:
                self._launcher.set_node_enabled(node, on)
        elif m.how == "guard":
            self._launcher.synchronize()
            self._write(m.word, [1 if on else 0])
        elif m.how == "host":
            pass
        else:
            raise Unsupported(f"eagle.Graph: member {m.name!r} cannot be switched off: "
                              + ("it was built with toggle=False" if not self._toggle else
                                 "the backend cannot toggle the nodes it recorded")
                              + "; wrap it in eagle.skippable(step, guard) with a guard word you own")
        m._enabled = on

    # -- printing --------------------------------------------------------------------------------------
    @property
    def where(self):
        """'on the device' or 'on the host': where the decisions are taken."""
        return "on the device" if self.decides_on_device else "on the host"

    def to_text(self):
        """The recorded program as an indented tree."""
        return _render.to_text(self)

    __str__ = to_text

    def to_dot(self):
        """The recorded program as a Graphviz DOT digraph (members in order, bodies as clusters)."""
        return _render.to_dot(self)

    def __repr__(self):
        return f"<eagle.Graph {self.backend.kind} {len(self.members)} member(s), decisions {self.where}>"

    def close(self):
        """Release the launcher(s) now (the stream is released with the graph)."""
        if self._launcher is not None:
            self._launcher.close()
        for prog in self._program:
            for p in pieces(prog):
                if p.launcher is not None:
                    p.launcher.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
