"""The constructs of a program for :meth:`eagle.Graph.build`, and the steps they hold.

A *step* is a callable ``step(stream)`` that issues work on the stream it is given, or one of the
constructs below; they nest freely. One vocabulary at every level (the seam's word in brackets):

- :func:`repeat_while` ``(body, guard, max_iters)`` [WHILE]: decided on the device, at most
  ``max_iters`` iterations per replay (the graph owns the ``[remaining, ran]`` cell);
- :func:`skippable` ``(step, guard)`` [IF];
- :func:`switch` ``(selector, cases)`` [SWITCH]: case ``*selector`` runs, none when out of range;
- :func:`concurrent` ``(*steps)`` [fork/join]: each member on its own branch.

A *guard* is ``count`` or ``(count, baseline)``: ``uint32`` words on the planes' device; the
region runs iff ``*count != *baseline`` (baseline 0 when absent).

Each construct owns what it means everywhere: how it is recorded on the device (:meth:`record`),
how the host decides it where the backend cannot (:meth:`compile_host`, :meth:`run_host`), and how
it is drawn (:meth:`labelled_bodies`, :meth:`dot`). The drivers (eagle/_record.py,
eagle/_interpret.py, eagle/_render.py) never ask which construct they hold."""
from ._arrays import address_of
from .errors import EagleTypeError, EagleValueError


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
        _check_word(count, "a guard's count")
        if baseline is not None:
            _check_word(baseline, "a guard's baseline")
        self.count, self.baseline = count, baseline

    def arrays(self):
        return [a for a in (self.count, self.baseline) if a is not None and not isinstance(a, int)]

    def __repr__(self):
        return "count != " + ("0" if self.baseline is None else "baseline")


def _check_word(word, what):
    """Refuses what cannot be a construct's uint32 word (a guard's count or baseline, a switch's
    selector): it must be a raw address (an int) or an array whose items can hold the word and
    that holds at least 4 bytes. Checked when the construct is made, so the device-decided and the
    host-decided path refuse alike (the host path reads the word's first 4 bytes)."""
    if isinstance(word, int) and not isinstance(word, bool):
        return
    if word is None or isinstance(word, (bool, float, str, bytes)):
        raise EagleTypeError(f"eagle: {what} must be a uint32 array (or a raw address), got a {type(word).__name__}")
    if not _is_word_array(word):
        raise EagleTypeError(f"eagle: {what} must be a uint32 word, got an array of {getattr(word, 'dtype', None)}")
    nbytes = address_of(word).nbytes
    if nbytes is not None and nbytes < 4:
        raise EagleValueError(f"eagle: {what} must hold a uint32 word (4 bytes), the array holds {nbytes}")


def _is_word_array(word):
    """True unless ``word`` is an array whose items cannot hold a uint32 word: floating point,
    complex, bool, or 2- or 8-byte items (bytes are allowed: eagle allocates words as bytes where
    an array library lacks uint32)."""
    import numpy as np
    dtype = getattr(word, "dtype", None)
    if dtype is None:
        return True
    try:
        dt = np.dtype(str(dtype).split(".")[-1])
    except TypeError:
        return True  # an array library's own dtype object numpy does not know: trust the bytes
    return dt.kind in "iu" and dt.itemsize in (1, 4)


class Construct:
    """Base of the constructs. Subclasses say what they need, how they record, how the host
    decides them and how they are drawn."""

    name = None
    #: Seam entries recording it on the device needs (a group or a per-symbol entry).
    needs = ()

    def bodies(self):
        """The step lists this construct holds."""
        return []

    def labelled_bodies(self):
        """``[(label or None, steps)]`` for rendering: None = the body, indented under the head."""
        return [(None, b) for b in self.bodies()]

    def guard_arrays(self):
        """The arrays holding the words this construct decides on."""
        return []

    def label(self):
        raise NotImplementedError

    def __call__(self, stream):
        raise EagleTypeError(f"eagle: a {type(self).__name__} is a step for eagle.Graph.build, not a callable")

    # -- recording on the device --------------------------------------------------------------
    def record(self, rec, stream):
        """Record this construct on ``stream`` (being captured) through ``rec`` (eagle._record)."""
        raise NotImplementedError

    # -- the host-decided path ----------------------------------------------------------------
    def compile_host(self, compiler):
        """Items of the host program for this construct (eagle._interpret): by default one
        decision whose bodies are compiled in turn."""
        return [compiler.decision(self, [compiler.compile(b) for b in self.bodies()])]

    def run_host(self, interp, programs):
        """Decide on the host and run the compiled bodies ``programs`` through ``interp``."""
        raise NotImplementedError

    # -- drawing --------------------------------------------------------------------------------
    #: DOT edge labels of the bodies (``{i}`` is the body's index); a loop adds an edge back.
    dot_edge = "body"
    loops = False

    def dot(self, d):
        """Emit DOT nodes through ``d`` (eagle._render.Dot); returns (first, last) node ids."""
        head = d.node(step_name(self), "diamond")
        for i, body in enumerate(self.bodies()):
            a, z = d.chain(body)
            d.edge(head, a, self.dot_edge.format(i=i))
            if self.loops:
                d.edge(z, head, "again", dashed=True)
        return head, head


class RepeatWhile(Construct):
    """WHILE: run ``body`` while the guard holds, at most ``max_iters`` times per replay."""

    needs = ("conditional",)
    loops = True

    def __init__(self, body, guard, max_iters, name=None):
        if isinstance(max_iters, bool) or not isinstance(max_iters, int):
            raise EagleTypeError(f"eagle.repeat_while: max_iters must be an int, got {type(max_iters).__name__}")
        if not 1 <= max_iters < 2**32:
            raise EagleValueError(f"eagle.repeat_while: max_iters must be in 1 .. 2**32-1, got {max_iters}")
        self.body, self.guard, self.max_iters = as_steps(body), Guard(guard), max_iters
        self.name = name

    def bodies(self):
        return [self.body]

    def guard_arrays(self):
        return self.guard.arrays()

    def label(self):
        return f"while {self.guard!r} (max {self.max_iters})"

    def record(self, rec, stream):
        g = self.guard
        w = rec.backend.while_(stream, g.count, rec.cell(self), self.max_iters, g.baseline)
        rec.record_all(self.body, w.begin())
        w.end()
        w.close()

    def compile_host(self, compiler):
        compiler.cell(self)  # allocated before any launch
        return super().compile_host(compiler)

    def run_host(self, interp, programs):
        remaining, ran = self.max_iters, 0
        while remaining > 0 and interp.holds(self.guard):
            interp.run(programs[0])
            interp.synchronize()
            remaining, ran = remaining - 1, ran + 1
        interp.write_cell(self, [remaining, ran])


class Skippable(Construct):
    """IF: run ``step`` iff the guard holds."""

    needs = ("conditional",)
    dot_edge = "then"

    def __init__(self, step, guard, name=None):
        self.body, self.guard, self.name = as_steps(step), Guard(guard), name

    def bodies(self):
        return [self.body]

    def guard_arrays(self):
        return self.guard.arrays()

    def label(self):
        return f"if {self.guard!r}"

    def record(self, rec, stream):
        c = rec.backend.if_(stream, self.guard.count, self.guard.baseline)
        rec.record_all(self.body, c.begin())
        c.end()
        c.close()

    def run_host(self, interp, programs):
        if interp.holds(self.guard):
            interp.run(programs[0])


class Switch(Construct):
    """SWITCH: run case ``*selector`` (none when >= len(cases))."""

    needs = ("conditional", "eagle_backend_conditional_begin_case")
    dot_edge = "case {i}"

    def __init__(self, selector, cases, name=None):
        cases = list(cases)
        if not cases:
            raise EagleValueError("eagle.switch: needs at least one case")
        _check_word(selector, "the switch's selector")
        self.selector, self.cases, self.name = selector, [as_steps(c) for c in cases], name

    def bodies(self):
        return list(self.cases)

    def labelled_bodies(self):
        return [(f"case {i}:", c) for i, c in enumerate(self.cases)]

    def guard_arrays(self):
        return [] if isinstance(self.selector, int) else [self.selector]

    def label(self):
        return f"switch selector ({len(self.cases)} cases)"

    def record(self, rec, stream):
        c = rec.backend.switch(stream, self.selector, len(self.cases))
        for i, case in enumerate(self.cases):
            rec.record_all(case, c.begin_case(i))
        c.end()
        c.close()

    def run_host(self, interp, programs):
        selected = interp.read_word(self.selector)
        if selected < len(programs):
            interp.run(programs[selected])


class Concurrent(Construct):
    """Fork/join: every member on its own branch, joined before what follows."""

    needs = ("fork",)

    def __init__(self, *steps, name=None):
        if not steps:
            raise EagleValueError("eagle.concurrent: needs at least one step")
        self.members, self.name = [as_steps(s) for s in steps], name

    def bodies(self):
        return list(self.members)

    def labelled_bodies(self):
        return [(f"branch {i}:", m) for i, m in enumerate(self.members)]

    def label(self):
        return f"concurrent ({len(self.members)} branches)"

    def record(self, rec, stream):
        f = rec.backend.fork(stream, len(self.members))
        f.fork()
        for branch, member in zip(f.branches, self.members):
            rec.record_all(member, branch)
        f.join()
        f.close()

    def compile_host(self, compiler):
        # Members with decisions in them: run one after another (order is all a join promises).
        return [item for member in self.members for item in compiler.compile(member)]

    def dot(self, d):
        f = d.node("fork", "circle")
        j = d.node("join", "circle")
        for member in self.members:
            a, z = d.chain(member)
            d.edge(f, a)
            d.edge(z, j)
        return f, j


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


def as_steps(s):
    """A step or a sequence of steps -> a list of steps, each checked."""
    seq = list(s) if isinstance(s, (list, tuple)) else [s]
    for st in seq:
        if not (isinstance(st, Construct) or callable(st)):
            raise EagleTypeError(f"eagle: a step must be callable (taking the stream) or an eagle construct, "
                                 f"got {type(st).__name__}")
    return seq


def is_plain(step):
    """True for a callable step (no construct)."""
    return not isinstance(step, Construct)


def step_name(step):
    if isinstance(step, Construct):
        return step.name or step.label()
    return getattr(step, "__name__", None) or type(step).__name__


def walk(steps):
    """Every step and construct, depth first."""
    for st in steps:
        yield st
        if isinstance(st, Construct):
            for body in st.bodies():
                yield from walk(body)


def needs_of(steps):
    """The seam entries recording ``steps`` on the device needs, in first-seen order."""
    out = []
    for st in walk(steps):
        for entry in getattr(st, "needs", ()) if isinstance(st, Construct) else ():
            if entry not in out:
                out.append(entry)
    return out


def guard_arrays(steps):
    return [a for st in walk(steps) if isinstance(st, Construct) for a in st.guard_arrays()]
