"""Recording a program on the device: the whole program becomes one graph whose decisions
(IF, WHILE, SWITCH) the device takes. Used by :meth:`eagle.Graph.build`."""
from . import _recording
from .constructs import is_plain, step_name, walk
from .errors import EagleValueError


class Recorder:
    """Records the members of ``graph`` (an :class:`eagle.Graph`) on its stream."""

    def __init__(self, graph):
        self.graph, self.backend = graph, graph.backend

    def cell(self, loop):
        return self.graph._cell(loop)

    def record_all(self, steps, stream):
        for st in steps:
            self.record(st, stream)

    def record(self, step, stream):
        if is_plain(step):
            with _recording.step(step_name(step), stream):
                step(stream)
        else:
            step.record(self, stream)

    def record_program(self):
        """Capture every member into one graph; returns the launcher."""
        g, b, s = self.graph, self.backend, self.graph.stream
        attribute = b.provides("attribution")
        # Every word the graph owns is allocated and written before the capture begins: an
        # allocation (or its write) on a device while a stream is captured would be recorded
        # into the graph or refused by the runtime.
        for m in g.members:
            if g._toggle and (not is_plain(m.step) or not attribute):
                m.word = g._word([1])
        for st in walk([m.step for m in g.members]):
            if getattr(st, "loops", False):
                self.cell(st)
        s.synchronize()
        with b.capture(s) as cap:
            for m in g.members:
                if g._toggle and (not is_plain(m.step) or not attribute):
                    c = b.if_(s, m.word)
                    self.record(m.step, c.begin())
                    c.end()
                    c.close()
                    m.how = "guard"
                    continue
                before = len(b.snapshot_nodes(s)) if attribute else 0
                self.record(m.step, s)
                if attribute:
                    m.nodes = b.snapshot_nodes(s)[before:]
                    if m.nodes and all(b.is_node_toggleable(n) for n in m.nodes):
                        m.how = "node"
        captured = cap.captured
        if not captured.is_valid:
            captured.close()
            raise EagleValueError("eagle.Graph.build: the steps recorded no work")
        builder = b.graph_from_captured(captured)
        launcher = builder.launcher()
        launcher.set_stream(s)
        builder.close()
        return launcher
