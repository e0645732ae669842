"""The host-decided path: where the backend cannot decide on the device, the runs of plain steps
are recorded as *pieces* (one launcher each) and the host takes every decision, reading the guard
words after synchronizing. Used by :meth:`eagle.Graph.build` and :meth:`eagle.Graph.launch`.

A backend that cannot record (no capture groups: the opencl kind without cl_khr_command_buffer)
gets *eager* pieces: their steps are enqueued on the graph's stream again at every replay, in the
same order, instead of replaying a launcher."""
import ctypes

from .constructs import Concurrent, is_plain


#: What recording a piece into a launcher needs.
CAPTURE_GROUPS = ("capturer", "captured", "graph", "launcher")


class Piece:
    """A run of plain steps recorded as one launcher (None when they recorded nothing), or, where
    the backend cannot record (``recorder`` set), enqueued by ``recorder`` at every replay."""

    def __init__(self, steps, recorder=None):
        self.steps, self.launcher, self.recorder = steps, None, recorder


class Decision:
    """A construct the host decides, with its compiled bodies."""

    def __init__(self, construct, programs):
        self.construct, self.programs = construct, programs


class Compiler:
    """Turns steps into a host program: a list of :class:`Piece` and :class:`Decision`."""

    def __init__(self, graph, recorder):
        self.graph, self.recorder = graph, recorder

    def cell(self, loop):
        return self.graph._cell(loop)

    def decision(self, construct, programs):
        return Decision(construct, programs)

    def _recordable(self, step):
        if is_plain(step):
            return True
        if isinstance(step, Concurrent) and self.graph.backend.provides("fork"):
            return all(self._recordable(st) for member in step.members for st in member)
        return False

    def compile(self, steps):
        out, run = [], []
        for st in steps:
            if self._recordable(st):
                run.append(st)
                continue
            if run:
                out.append(self._piece(run))
                run = []
            out.extend(st.compile_host(self))
        if run:
            out.append(self._piece(run))
        return out

    def _piece(self, steps):
        b, s = self.graph.backend, self.graph.stream
        if not all(b.provides(g) for g in CAPTURE_GROUPS):
            return Piece(list(steps), recorder=self.recorder)
        piece = Piece(list(steps))
        with b.capture(s) as cap:
            self.recorder.record_all(steps, s)
        captured = cap.captured
        if captured.is_valid:
            gb = b.graph_from_captured(captured)
            piece.launcher = gb.launcher()
            piece.launcher.set_stream(s)
            gb.close()
        else:
            captured.close()
        return piece


class Interpreter:
    """Runs a host program of ``graph``."""

    def __init__(self, graph):
        self.graph = graph

    def synchronize(self):
        self.graph.stream.synchronize()

    def run(self, program):
        for item in program:
            if isinstance(item, Piece):
                if item.launcher is not None:
                    item.launcher.launch()
                elif item.recorder is not None:
                    item.recorder.record_all(item.steps, self.graph.stream)
                continue
            self.synchronize()
            item.construct.run_host(self, item.programs)

    def read_word(self, word):
        """The uint32 at ``word`` (an array on the planes' device, or a raw host address)."""
        if isinstance(word, int):  # a raw address: only host memory can be read directly
            return ctypes.c_uint32.from_address(word).value
        return int(self.graph._read(word, 1)[0])

    def holds(self, guard):
        base = 0 if guard.baseline is None else self.read_word(guard.baseline)
        return self.read_word(guard.count) != base

    def write_cell(self, loop, values):
        self.graph._write(self.graph._cell(loop), values)


def pieces(program):
    """Every :class:`Piece` of a host program, depth first."""
    for item in program:
        if isinstance(item, Piece):
            yield item
        else:
            for body in item.programs:
                yield from pieces(body)
