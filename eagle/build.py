"""Graph.build: record a program of steps once, replay it again and again.

A *step* is a callable ``step(stream)`` that issues work on the stream it is given, or one of the
constructs below; they nest freely:

- :func:`repeat_while` ``(body, guard, max_iters)``: a WHILE decided on the device, at most
  ``max_iters`` iterations per replay (the graph owns the ``[remaining, ran]`` cell);
- :func:`skippable` ``(step, guard)``: an IF;
- :func:`switch` ``(selector, cases)``: a SWITCH (case ``*selector`` runs, none when out of range);
- :func:`concurrent` ``(*steps)``: fork/join, each member on its own branch.

A *guard* is ``count`` or ``(count, baseline)``: device ``uint32`` words on the planes' device;
the region runs iff ``*count != *baseline`` (baseline 0 when absent).

Decisions on the device or on the host. Where the backend provides ``conditional`` (and
``conditional_begin_case`` for a SWITCH) the whole program is one recorded graph and
:attr:`Graph.decides_on_device` is True. Otherwise the runs of plain steps are recorded as pieces,
and the host replays them, reading the guard words (after synchronizing) to decide.

Toggling members. The top-level steps are the graph's *members*; ``graph.disable(m)`` and
``graph.enable(m)`` switch one off and on for later launches without rebuilding:
a plain callable member whose recorded nodes are all toggleable is switched by node enabling in
the launcher ("node"); a construct member (or any member where the backend cannot attribute
nodes) is wrapped at build time in an IF on a guard word the graph owns, which the host flips
("guard"; one IF node per replay, omitted with ``toggle=False``); on the host-decided path the
host simply skips it ("host")."""
import numpy as np

from . import _alloc
from ._arrays import dlpack_device
from ._device_kind import kind_of_device_type
from .errors import EagleTypeError, EagleValueError, Unsupported


# ----------------------------------------------------------------------------------- constructs

class Guard:
    """``count`` (and optional ``baseline``) uint32 words: the region runs iff count != baseline."""

    __slots__ = ("count", "baseline")

    def __init__(self, guard):
        if isinstance(guard, Guard):
            guard = (guard.count, guard.baseline)
        elif not isinstance(guard, tuple) and isinstance(getattr(guard, "guard", None), tuple):
            guard = guard.guard  # e.g. an ActiveSet: holds while any sample is live
        if isinstance(guard, tuple):
            if len(guard) not in (1, 2):
                raise EagleValueError(f"eagle: a guard is count or (count, baseline), got a {len(guard)}-tuple")
            count, baseline = (guard + (None,))[:2]
        else:
            count, baseline = guard, None
        if count is None:
            raise EagleValueError("eagle: a guard needs a count word")
        self.count, self.baseline = count, baseline

    def arrays(self):
        return [a for a in (self.count, self.baseline) if a is not None and not isinstance(a, int)]

    def __repr__(self):
        return "count != " + ("0" if self.baseline is None else "baseline")


class _Construct:
    name = None

    def children(self):
        return []

    def __call__(self, stream):
        raise EagleTypeError(f"eagle: a {type(self).__name__} is a step for eagle.Graph.build, not a callable")


class RepeatWhile(_Construct):
    """WHILE: run ``body`` while the guard holds, at most ``max_iters`` times per replay."""

    def __init__(self, body, guard, max_iters, name=None):
        if int(max_iters) < 1:
            raise EagleValueError(f"eagle.repeat_while: max_iters must be >= 1, got {max_iters}")
        self.body, self.guard, self.max_iters = _steps(body), Guard(guard), int(max_iters)
        self.name = name

    def children(self):
        return [self.body]

    def label(self):
        return f"while {self.guard!r} (max {self.max_iters})"


class Skippable(_Construct):
    """IF: run ``step`` iff the guard holds."""

    def __init__(self, step, guard, name=None):
        self.body, self.guard, self.name = _steps(step), Guard(guard), name

    def children(self):
        return [self.body]

    def label(self):
        return f"if {self.guard!r}"


class Switch(_Construct):
    """SWITCH: run case ``*selector`` (none when >= len(cases))."""

    def __init__(self, selector, cases, name=None):
        cases = list(cases)
        if not cases:
            raise EagleValueError("eagle.switch: needs at least one case")
        self.selector, self.cases, self.name = selector, [_steps(c) for c in cases], name

    def children(self):
        return list(self.cases)

    def label(self):
        return f"switch selector ({len(self.cases)} cases)"


class Concurrent(_Construct):
    """Fork/join: every member on its own branch, joined before what follows."""

    def __init__(self, *steps, name=None):
        if not steps:
            raise EagleValueError("eagle.concurrent: needs at least one step")
        self.members, self.name = [_steps(s) for s in steps], name

    def children(self):
        return list(self.members)

    def label(self):
        return f"concurrent ({len(self.members)} branches)"


def repeat_while(body, guard, max_iters, *, name=None):
    """A WHILE step: ``body`` (a step or list of steps) repeats while ``guard`` holds, at most
    ``max_iters`` iterations per launch. Decided on the device where the backend can."""
    return RepeatWhile(body, guard, max_iters, name)


def skippable(step, guard, *, name=None):
    """An IF step: ``step`` runs iff ``guard`` holds (``count != baseline``)."""
    return Skippable(step, guard, name)


def switch(selector, cases, *, name=None):
    """A SWITCH step: case ``*selector`` (a device uint32 word) runs; none when out of range."""
    return Switch(selector, cases, name)


def concurrent(*steps, name=None):
    """A fork/join step: each of ``steps`` runs on its own branch; what follows waits for all."""
    return Concurrent(*steps, name=name)


def _steps(s):
    """A step or a sequence of steps -> a list of steps, each checked."""
    seq = list(s) if isinstance(s, (list, tuple)) else [s]
    for st in seq:
        if not (isinstance(st, _Construct) or callable(st)):
            raise EagleTypeError(f"eagle: a step must be callable (taking the stream) or an eagle construct, "
                            f"got {type(st).__name__}")
    return seq


def _name(step):
    if isinstance(step, _Construct):
        return step.name or step.label()
    return getattr(step, "__name__", None) or type(step).__name__


def _is_plain(step):
    return not isinstance(step, _Construct)


def _walk(steps):
    for st in steps:
        yield st
        if isinstance(st, _Construct):
            for child in st.children():
                yield from _walk(child)


def _needs(steps):
    """('conditional' constructs present?, 'switch' present?)."""
    cond = sw = False
    for st in _walk(steps):
        if isinstance(st, (RepeatWhile, Skippable)):
            cond = True
        elif isinstance(st, Switch):
            sw = True
    return cond, sw


def _guard_arrays(steps):
    out = []
    for st in _walk(steps):
        if isinstance(st, (RepeatWhile, Skippable)):
            out.extend(st.guard.arrays())
        elif isinstance(st, Switch) and not isinstance(st.selector, int):
            out.append(st.selector)
    return out


# ------------------------------------------------------------------------------------ backend

def _describe(dev):
    t, i = dev
    try:
        return f"{kind_of_device_type(t)}:{i} (DLPack device {t}, {i})"
    except ValueError:
        return f"DLPack device ({t}, {i})"


def resolve_backend(planes, backend=None, device=-1):
    """(Backend, device, device of the planes or None) from ``backend=`` or where the planes live."""
    from ._loader import backend as _backend
    devs = []
    for i, p in enumerate(planes):
        try:
            devs.append((i, dlpack_device(p)))
        except TypeError as e:
            raise EagleTypeError(f"eagle.Graph.build: plane {i}: {e}") from None
    for (i, d), (j, e) in zip(devs, devs[1:]):
        if d != e:
            raise EagleValueError(f"eagle.Graph.build: the planes live on different devices: plane {i} on "
                             f"{_describe(d)}, plane {j} on {_describe(e)}; put them on one device")
    where = devs[0][1] if devs else None
    if backend is None:
        if where is None:
            raise EagleValueError("eagle.Graph.build: give planes= (arrays the steps work on) or backend= "
                             "so eagle knows which device to record for")
        b = _backend(kind_of_device_type(where[0]))
    else:
        b = _backend(backend)
        if where is not None and where[0] not in b.device_types:
            raise EagleValueError(f"eagle.Graph.build: the planes live on {_describe(where)}, which the "
                             f"{b.kind} backend '{b.path}' does not serve (it serves DLPack device types "
                             f"{list(b.device_types)}); pass backend=None to infer it")
    if device == -1 and where is not None:
        device = where[1]
    return b, device, where


# -------------------------------------------------------------------------------------- graph

class Member:
    """One top-level step of a :class:`Graph`, switchable with :attr:`enabled`."""

    __slots__ = ("index", "name", "step", "how", "nodes", "word", "_enabled", "_graph")

    def __init__(self, graph, index, step):
        self._graph, self.index, self.step = graph, index, step
        self.name = _name(step)
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


class _Piece:
    """Host-decided path: a run of plain steps recorded as one launcher."""

    def __init__(self, steps):
        self.steps, self.launcher = steps, None


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
        steps = _steps(steps)
        planes = list(planes or [])
        refs = planes or _guard_arrays(steps)
        b, device, where = resolve_backend(refs if backend is None else planes, backend, device)
        self.backend, self.device, self._like = b, device, (refs[0] if refs else None)
        self.steps, self.planes = steps, planes
        need_cond, need_switch = _needs(steps)
        can = b.provides("conditional") and (not need_switch or b.provides("eagle_backend_conditional_begin_case"))
        if on_device and not can:
            missing = "conditional" if not b.provides("conditional") else "eagle_backend_conditional_begin_case"
            raise Unsupported(f"eagle.Graph.build: on_device=True, but the {b.kind} backend '{b.path}' "
                              f"does not provide {missing}")
        self.decides_on_device = can if on_device is None else bool(on_device)
        self.stream = stream if stream is not None else b.stream(device, non_blocking=True)
        self._owned = []     # words the graph owns (cells, toggles), kept alive with it
        self._cells = {}     # id(RepeatWhile) -> its [remaining, ran] cell
        self.members = [Member(self, i, st) for i, st in enumerate(steps)]
        self._toggle = toggle
        if self.decides_on_device:
            self._record_device()
        else:
            self._prepare_host()
        return self

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
        return cell

    def ran(self, loop):
        """Iterations the WHILE ``loop`` (a repeat_while step of this graph) ran in the last launch."""
        return int(self._read(self._cell(loop), 2)[1])

    # -- recording on the device -------------------------------------------------------------------
    def _record(self, step, stream):
        b = self.backend
        if _is_plain(step):
            step(stream)
        elif isinstance(step, RepeatWhile):
            g = step.guard
            w = b.while_(stream, g.count, self._cell(step), step.max_iters, g.baseline)
            body = w.begin()
            for st in step.body:
                self._record(st, body)
            w.end()
            w.close()
        elif isinstance(step, Skippable):
            c = b.if_(stream, step.guard.count, step.guard.baseline)
            body = c.begin()
            for st in step.body:
                self._record(st, body)
            c.end()
            c.close()
        elif isinstance(step, Switch):
            c = b.switch(stream, step.selector, len(step.cases))
            for i, case in enumerate(step.cases):
                body = c.begin_case(i)
                for st in case:
                    self._record(st, body)
            c.end()
            c.close()
        elif isinstance(step, Concurrent):
            f = b.fork(stream, len(step.members))
            f.fork()
            for branch, member in zip(f.branches, step.members):
                for st in member:
                    self._record(st, branch)
            f.join()
            f.close()
        else:  # pragma: no cover - _steps refuses anything else
            raise EagleTypeError(step)

    def _record_device(self):
        b, s = self.backend, self.stream
        attribute = b.provides("attribution")
        # Every word the graph owns is allocated and written before the capture begins: an
        # allocation (or its write) on a device while a stream is captured would be recorded
        # into the graph or refused by the runtime.
        for m in self.members:
            if self._toggle and (not _is_plain(m.step) or not attribute):
                m.word = self._word([1])
        for st in _walk([m.step for m in self.members]):
            if isinstance(st, RepeatWhile):
                self._cell(st)
        if hasattr(s, "synchronize"):
            s.synchronize()
        with b.capture(s) as cap:
            for m in self.members:
                wrap = self._toggle and (not _is_plain(m.step) or not attribute)
                if wrap:
                    c = b.if_(s, m.word)
                    body = c.begin()
                    self._record(m.step, body)
                    c.end()
                    c.close()
                    m.how = "guard"
                    continue
                before = len(b.snapshot_nodes(s)) if attribute else 0
                self._record(m.step, s)
                if attribute:
                    m.nodes = b.snapshot_nodes(s)[before:]
                    if m.nodes and all(b.is_node_toggleable(n) for n in m.nodes):
                        m.how = "node"
        captured = cap.captured
        if not captured.is_valid:
            captured.close()
            raise EagleValueError("eagle.Graph.build: the steps recorded no work")
        self._builder = b.graph_from_captured(captured)
        self._launcher = self._builder.launcher()
        self._launcher.set_stream(s)
        self._builder.close()

    # -- the host-decided path -------------------------------------------------------------------
    def _prepare_host(self):
        """Pieces: maximal runs of plain steps (and concurrents of plain steps) per body."""
        self._launcher = None
        self._program = [self._compile_host([m.step]) for m in self.members]
        for m in self.members:
            m.how = "host"

    def _recordable(self, step):
        if _is_plain(step):
            return True
        if isinstance(step, Concurrent) and self.backend.provides("fork"):
            return all(self._recordable(st) for member in step.members for st in member)
        return False

    def _compile_host(self, steps):
        out, run = [], []
        for st in steps:
            if self._recordable(st):
                run.append(st)
                continue
            if run:
                out.append(self._piece(run))
                run = []
            if isinstance(st, Concurrent):  # members with decisions in them: run one after another
                for member in st.members:
                    out.extend(self._compile_host(member))
            elif isinstance(st, Switch):
                out.append((st, [self._compile_host(c) for c in st.cases]))
            else:
                if isinstance(st, RepeatWhile):
                    self._cell(st)
                out.append((st, self._compile_host(st.body)))
        if run:
            out.append(self._piece(run))
        return out

    def _piece(self, steps):
        b, s = self.backend, self.stream
        piece = _Piece(list(steps))
        with b.capture(s) as cap:
            for st in steps:
                self._record(st, s)
        captured = cap.captured
        if captured.is_valid:
            gb = b.graph_from_captured(captured)
            piece.launcher = gb.launcher()
            piece.launcher.set_stream(s)
            gb.close()
        else:
            captured.close()
        return piece

    def _guard_holds(self, g):
        count = int(self._read_any(g.count))
        base = 0 if g.baseline is None else int(self._read_any(g.baseline))
        return count != base

    def _read_any(self, word):
        if isinstance(word, int):  # a raw address: only host memory can be read directly
            import ctypes
            return ctypes.c_uint32.from_address(word).value
        return self._read(word, 1)[0]

    def _run_host(self, program):
        for item in program:
            if isinstance(item, _Piece):
                if item.launcher is not None:
                    item.launcher.launch()
                continue
            st, body = item
            self.stream.synchronize()
            if isinstance(st, Skippable):
                if self._guard_holds(st.guard):
                    self._run_host(body)
            elif isinstance(st, Switch):
                sel = int(self._read_any(st.selector))
                if sel < len(body):
                    self._run_host(body[sel])
            else:
                cell = self._cell(st)
                remaining, ran = st.max_iters, 0
                while remaining > 0 and self._guard_holds(st.guard):
                    self._run_host(body)
                    self.stream.synchronize()
                    remaining, ran = remaining - 1, ran + 1
                self._write(cell, [remaining, ran])

    # -- launching ---------------------------------------------------------------------------------
    def launch(self, n=1):
        """Enqueue ``n`` replays (on the host-decided path each blocks at its decisions)."""
        if self.decides_on_device:
            self._launcher.launch(n)
            return
        for _ in range(n):
            for m, program in zip(self.members, self._program):
                if m._enabled:
                    self._run_host(program)

    def enqueue(self):
        """Enqueue one replay and return (without waiting, where decisions are on the device)."""
        self.launch(1)

    def synchronize(self):
        """Wait for every replay enqueued so far."""
        if self._launcher is not None:
            self._launcher.synchronize()
        else:
            self.stream.synchronize()

    def __call__(self):
        """Launch once and wait."""
        self.launch(1)
        self.synchronize()

    @property
    def kernel_node_count(self):
        """Kernel nodes in the recorded graph (all pieces on the host-decided path)."""
        if self._launcher is not None:
            return self._launcher.kernel_node_count
        total = 0
        for item in _flatten(self._program):
            if isinstance(item, _Piece) and item.launcher is not None:
                total += item.launcher.kernel_node_count
        return total

    # -- members -------------------------------------------------------------------------------------
    def member(self, which):
        """A member by index, name or the step object itself."""
        if isinstance(which, Member):
            return which
        if isinstance(which, int):
            return self.members[which]
        for m in self.members:
            if m.step is which or m.name == which:
                return m
        raise KeyError(f"eagle.Graph: no member {which!r} (members: {[m.name for m in self.members]})")

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
    def _where(self):
        return "on the device" if self.decides_on_device else "on the host"

    def to_text(self):
        """The recorded program as an indented tree."""
        lines = [f"eagle.Graph: {self.backend.kind} backend, decisions {self._where()}, "
                 f"{len(self.members)} member(s)"]

        def walk(steps, indent):
            for st in steps:
                pad = "  " * indent
                if isinstance(st, Switch):
                    lines.append(f"{pad}{_name(st)}")
                    for i, case in enumerate(st.cases):
                        lines.append(f"{pad}  case {i}:")
                        walk(case, indent + 2)
                elif isinstance(st, Concurrent):
                    lines.append(f"{pad}{_name(st)}")
                    for i, member in enumerate(st.members):
                        lines.append(f"{pad}  branch {i}:")
                        walk(member, indent + 2)
                elif isinstance(st, _Construct):
                    lines.append(f"{pad}{_name(st)}")
                    walk(st.body, indent + 1)
                else:
                    lines.append(f"{pad}{_name(st)}")

        for m in self.members:
            state = "on" if m._enabled else "off"
            lines.append(f"  [{m.index}] {state}, toggled by {m.how or 'nothing'}:")
            walk([m.step], 2)
        return "\n".join(lines)

    __str__ = to_text

    def to_dot(self):
        """The recorded program as a Graphviz DOT digraph (members in order, bodies as clusters)."""
        out = ["digraph eagle {", "  rankdir=TB;", '  node [shape=box, fontname="monospace"];',
               f'  label="eagle.Graph ({self.backend.kind}, decisions {self._where()})";']
        counter = [0]

        def node(label, shape="box", style=""):
            counter[0] += 1
            nid = f"n{counter[0]}"
            extra = f", style={style}" if style else ""
            out.append(f'  {nid} [label="{_dot_escape(label)}", shape={shape}{extra}];')
            return nid

        def chain(steps):
            """Emit steps in order; returns (first, last) node ids."""
            first = prev = None
            for st in steps:
                a, z = emit(st)
                if prev is not None:
                    out.append(f"  {prev} -> {a};")
                first = first or a
                prev = z
            return first, prev

        def emit(st):
            if not isinstance(st, _Construct):
                n = node(_name(st))
                return n, n
            if isinstance(st, Concurrent):
                f = node("fork", "circle")
                j = node("join", "circle")
                for member in st.members:
                    a, z = chain(member)
                    out.append(f"  {f} -> {a};")
                    out.append(f"  {z} -> {j};")
                return f, j
            head = node(_name(st), "diamond")
            bodies = st.cases if isinstance(st, Switch) else [st.body]
            for i, body in enumerate(bodies):
                a, z = chain(body)
                lbl = f"case {i}" if isinstance(st, Switch) else ("body" if isinstance(st, RepeatWhile) else "then")
                out.append(f'  {head} -> {a} [label="{lbl}"];')
                if isinstance(st, RepeatWhile):
                    out.append(f'  {z} -> {head} [style=dashed, label="again"];')
            return head, head

        prev = None
        for m in self.members:
            a, z = emit(m.step)
            if not m._enabled:
                out.append(f"  {a} [style=dotted];")
            if prev is not None:
                out.append(f"  {prev} -> {a};")
            prev = z
        out.append("}")
        return "\n".join(out)

    def __repr__(self):
        return (f"<eagle.Graph {self.backend.kind} {len(self.members)} member(s), decisions "
                f"{self._where()}>")

    def close(self):
        """Release the launcher(s) now (the stream is released with the graph)."""
        if self._launcher is not None:
            self._launcher.close()
        for item in _flatten(getattr(self, "_program", [])):
            if isinstance(item, _Piece) and item.launcher is not None:
                item.launcher.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _flatten(program):
    for item in program:
        if isinstance(item, _Piece):
            yield item
        elif isinstance(item, list):
            yield from _flatten(item)
        else:
            st, body = item
            if isinstance(st, Switch):
                for case in body:
                    yield from _flatten(case)
            else:
                yield from _flatten(body)


def _dot_escape(s):
    return str(s).replace("\\", "\\\\").replace('"', '\\"')
