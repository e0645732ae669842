"""eagle/ keeps its layers (eagle/README.md): the import graph of the package, module-level and
function-level imports alike, read from the AST, has no cycle, and no module imports a floor above
its own. Seam objects never look a backend up."""
import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "eagle"

FLOORS = {
    0: {"errors", "_seam_ffi", "_seam_meta", "_status", "_device_kind", "_arrays", "_stream_arg", "_validate", "_hostmem", "_elf_check", "_compilers", "_dlpack",
        "_desc", "_hotcall", "_marker", "_handle", "_loader", "_signature", "_recording"},
    1: {"stream", "capture", "fork", "conditional", "launcher", "memory", "filtering", "interop", "exec",
        "device", "module", "array"},
    2: {"_backend", "_resolve", "_eager_memo", "api", "kernels"},
    3: {"constructs", "_record", "_interpret", "_render", "graph", "_alloc", "activeset"},
    4: {"ode"},  # the solver floor: eagle/ode/ (public API and eagle.compile only)
}


def _module_name(path):
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve_from(module, is_pkg, node):
    """Absolute module names a `from X import a, b` names (X itself, or X.a when a is a module)."""
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    if node.level:
        base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module
    return target, [f"{target}.{alias.name}" for alias in node.names]


def import_graph():
    """module -> set of eagle modules it imports (anywhere in its body)."""
    modules = {}
    for path in PKG.rglob("*.py"):
        modules[_module_name(path)] = path
    graph = {}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name.split(".")[0] == "eagle")
            elif isinstance(node, ast.ImportFrom):
                target, subs = _resolve_from(name, is_pkg, node)
                if target and target.split(".")[0] == "eagle":
                    named_modules = [s for s in subs if s in modules]
                    edges.update(named_modules)
                    if len(named_modules) < len(subs):  # names from the module itself
                        edges.add(target)
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
                if node.args and isinstance(node.args[0], ast.Constant):  # eagle.__getattr__'s lazy map
                    edges.add("eagle" + node.args[0].value if node.args[0].value.startswith(".")
                              else node.args[0].value)
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def _cycle(graph):
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_the_import_graph_has_no_cycle():
    graph = import_graph()
    # the package's own __init__ reaches everything lazily; it is the top, not part of a floor
    core = {n: {m for m in e if m != "eagle"} for n, e in graph.items() if n != "eagle"}
    assert _cycle(core) is None, " -> ".join(_cycle(core))


def _floor(module):
    short = module.split(".")[1] if "." in module else module
    for floor, names in FLOORS.items():
        if short in names:
            return floor
    return None


def test_every_core_module_has_a_floor():
    graph = import_graph()
    unplaced = sorted(n for n in graph if n.startswith("eagle.") and not n.startswith("eagle.check")
                      and not n.startswith("eagle.distributed") and n != "eagle.__main__"
                      and _floor(n) is None)
    assert not unplaced, f"modules with no floor in eagle/README.md and this test: {unplaced}"


def test_imports_point_downwards_only():
    graph = import_graph()
    upward = []
    for n, edges in graph.items():
        fn = _floor(n)
        for m in edges:
            fm = _floor(m)
            if fn is not None and fm is not None and fm > fn:
                upward.append(f"{n} (floor {fn}) imports {m} (floor {fm})")
    assert not upward, "\n".join(upward)


@pytest.mark.parametrize("module", sorted(FLOORS[1]))
def test_seam_objects_never_look_a_backend_up(module):
    edges = import_graph()[f"eagle.{module}"]
    assert not edges & {"eagle._loader", "eagle._backend", "eagle._resolve", "eagle.api"}, edges


def test_the_checker_uses_only_the_seam_binding():
    graph = import_graph()
    for n, edges in graph.items():
        if n.startswith("eagle.check"):
            above = [m for m in edges if not m.startswith("eagle.check") and _floor(m) not in (0, None)]
            assert not above, f"{n} imports {above}"


def test_the_solver_floor_uses_only_the_public_api():
    """eagle/ode/ reaches the core through `import eagle` (public names) and eagle.errors alone."""
    graph = import_graph()
    leaks = sorted(f"{n} imports {m}" for n, edges in graph.items() if n.startswith("eagle.ode")
                   for m in edges if not (m.startswith("eagle.ode") or m in ("eagle", "eagle.errors")))
    assert not leaks, "\n".join(leaks)
