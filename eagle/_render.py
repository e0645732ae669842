"""Drawing a recorded program: an indented text tree and a Graphviz DOT digraph. The constructs
say how they are drawn (eagle/constructs.py); this module walks them."""
from .constructs import Construct, step_name


def to_text(graph):
    lines = [f"eagle.Graph: {graph.backend.kind} backend, decisions {graph.where}, "
             f"{len(graph.members)} member(s)"]

    def walk(steps, indent):
        for st in steps:
            pad = "  " * indent
            lines.append(f"{pad}{step_name(st)}")
            if not isinstance(st, Construct):
                continue
            for label, body in st.labelled_bodies():
                if label is None:
                    walk(body, indent + 1)
                else:
                    lines.append(f"{pad}  {label}")
                    walk(body, indent + 2)

    for m in graph.members:
        state = "on" if m.enabled else "off"
        lines.append(f"  [{m.index}] {state}, toggled by {m.how or 'nothing'}:")
        walk([m.step], 2)
    return "\n".join(lines)


def _escape(s):
    return str(s).replace("\\", "\\\\").replace('"', '\\"')


class Dot:
    """DOT output being built: nodes, edges, and chains of steps."""

    def __init__(self, title):
        self.out = ["digraph eagle {", "  rankdir=TB;", '  node [shape=box, fontname="monospace"];',
                    f'  label="{_escape(title)}";']
        self.count = 0

    def node(self, label, shape="box"):
        self.count += 1
        nid = f"n{self.count}"
        self.out.append(f'  {nid} [label="{_escape(label)}", shape={shape}];')
        return nid

    def edge(self, a, b, label=None, dashed=False):
        attrs = []
        if dashed:
            attrs.append("style=dashed")
        if label:
            attrs.append(f'label="{_escape(label)}"')
        self.out.append(f"  {a} -> {b}" + (f" [{', '.join(attrs)}]" if attrs else "") + ";")

    def emit(self, step):
        if isinstance(step, Construct):
            return step.dot(self)
        n = self.node(step_name(step))
        return n, n

    def chain(self, steps):
        """Emit steps in order; returns (first, last) node ids."""
        first = prev = None
        for st in steps:
            a, z = self.emit(st)
            if prev is not None:
                self.edge(prev, a)
            first = first or a
            prev = z
        return first, prev


def to_dot(graph):
    d = Dot(f"eagle.Graph ({graph.backend.kind}, decisions {graph.where})")
    prev = None
    for m in graph.members:
        a, z = d.emit(m.step)
        if not m.enabled:
            d.out.append(f"  {a} [style=dotted];")
        if prev is not None:
            d.edge(prev, a)
        prev = z
    d.out.append("}")
    return "\n".join(d.out)
