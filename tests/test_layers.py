"""eagle/ keeps its layers (eagle/README.md): the import graph of the package, module-level and
function-level imports alike, read from the AST, has no cycle, and no module imports a floor above
its own. Seam objects never look a backend up."""
import ast
import functools
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "eagle"

FLOORS = {
    0: {"errors", "_seam_ffi", "_seam_meta", "_status", "_device_kind", "_arrays", "_stream_arg", "_validate", "_hostmem", "_elf_check", "_compilers", "_dlpack",
        "_desc", "_hotcall", "_inflight", "_handle", "_loader", "_signature", "_recording", "_kernel_handles", "_stdout"},
    1: {"stream", "capture", "fork", "conditional", "launcher", "memory", "filtering", "interop", "exec",
        "device", "module", "array"},
    2: {"_backend", "_resolve", "_eager_memo", "api", "kernels"},
    3: {"extend", "benchknobs", "constructs", "_record", "_interpret", "_render", "graph", "_alloc", "activeset", "reduce"},
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


@functools.lru_cache(maxsize=None)
def import_graph():
    """module -> set of eagle modules it imports (anywhere in its body); parsed once per run
    (about a second on 2 cores), the tests only read it."""
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
                      and not n.startswith("eagle.distributed") and not n.startswith("eagle.kit")
                      and n != "eagle.__main__"
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


#: What eagle/_inflight/ may import from outside itself: the seam binding it stands on, and the
#: reader of a stream argument's raw value (to hold what an interrupted call was given).
# eagle._recording: which Graph.build step records on this thread (a thread-local, no work); own_stream
# asks it before handing out eagle's stream, the one place calls given no stream are refused.
_INFLIGHT_STANDS_ON = {"eagle", "eagle._hotcall", "eagle._seam_ffi", "eagle._status", "eagle.errors",
                       "eagle._stream_arg", "eagle._recording"}


def test_work_in_flight_has_one_home_on_the_ground_floor():
    # holds, markers, attention lists, pending host calls, parked releases, the exit drain and the
    # stream= policy live in eagle/_inflight/ alone, which imports nothing that issues work
    graph = import_graph()
    parts = sorted(n for n in graph if n.startswith("eagle._inflight."))
    assert {"eagle._inflight.policy", "eagle._inflight.holds", "eagle._inflight.markers",
            "eagle._inflight.attention", "eagle._inflight.host_calls", "eagle._inflight.exit"} <= set(parts), parts
    for n in parts + ["eagle._inflight"]:
        outside = {m for m in graph[n] if not m.startswith("eagle._inflight")} - _INFLIGHT_STANDS_ON
        assert not outside, f"{n} imports {sorted(outside)}"
    assert "eagle._marker" not in graph, "release markers live in eagle/_inflight/markers.py"


def test_the_backend_carries_no_state_of_work_in_flight():
    # the per-thread attention lists and per-stream holds are keyed by backend in eagle/_inflight/,
    # not attributes of every Backend
    import eagle
    from eagle._loader import Library
    gone = {"host_errors_of", "drop_finished", "_raise_host_error", "_sweep_ended", "_holds", "_host_errors",
            "_ended", "_thread_end"}
    b = eagle.backend("cpu")
    assert not gone & (set(vars(b)) | set(dir(Library))), sorted(gone & (set(vars(b)) | set(dir(Library))))


@pytest.mark.parametrize("module", sorted(FLOORS[1]))
def test_seam_objects_never_look_a_backend_up(module):
    edges = import_graph()[f"eagle.{module}"]
    assert not edges & {"eagle._loader", "eagle._backend", "eagle._resolve", "eagle.api"}, edges


def test_the_author_kit_lives_in_eagle_kit_and_reads_only_the_ground_floor():
    # the kit writes a backend's source; the checker runs backends: neither imports the other
    graph = import_graph()
    assert "eagle.kit.skeleton" in graph
    for n, edges in graph.items():
        if n.startswith("eagle.kit"):
            above = [m for m in edges if not m.startswith("eagle.kit") and m != "eagle" and _floor(m) != 0]
            assert not above, f"{n} imports {above}"
        if n.startswith("eagle.check"):
            assert not any(m.startswith("eagle.kit") for m in edges), f"{n} imports the kit"


def test_the_checker_uses_only_the_seam_binding():
    graph = import_graph()
    for n, edges in graph.items():
        if n.startswith("eagle.check"):
            above = [m for m in edges if not m.startswith("eagle.check") and _floor(m) not in (0, None)]
            assert not above, f"{n} imports {above}"


CHECK_GROUPS = PKG / "check" / "groups"
_REGISTERS = {"bcheck", "check", "release_null_check", "unknown_flags_check"}


def _groups_registered_by(path):
    """Check groups (first dotted part of an ID) that the module at ``path`` registers checks of,
    read from its decorator and factory calls."""
    groups = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", "") in _REGISTERS and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            groups.add(node.args[0].value.split(".", 1)[0])
    return groups


def test_check_group_modules_import_only_the_helpers():
    graph = import_graph()
    modules = sorted(n for n in graph if n.startswith("eagle.check.groups."))
    assert "eagle.check.groups._helpers" in modules
    for n in modules:
        others = sorted(m for m in graph[n] if m.startswith("eagle.check.groups.")
                        and m != "eagle.check.groups._helpers")
        assert not others, f"{n} imports another group's module: {others} (shared code goes to _helpers)"


def test_every_check_group_lives_in_one_module():
    from eagle.check._all import all_checks
    where = {}
    for path in sorted(CHECK_GROUPS.glob("*.py")):
        for g in _groups_registered_by(path):
            where.setdefault(g, []).append(path.name)
    assert not _groups_registered_by(CHECK_GROUPS / "_helpers.py"), "the helpers register no check"
    split = {g: files for g, files in where.items() if len(files) > 1}
    assert not split, f"a group's checks are spread over several modules: {split}"
    registered = {c.group for c in all_checks()}
    assert registered == set(where), (registered ^ set(where))


# -- walls: what code outside the core may import, and where header constants come from ----------

ROOT = PKG.parent
BENCHMARKS = ROOT / "benchmarks"


def _private(module):
    """An eagle module name with a private part (``eagle._arrays``, ``eagle.check._seam``)."""
    return any(part.startswith("_") for part in module.split(".")[1:])


def test_eagle_distributed_imports_no_private_module_of_eagle():
    graph = import_graph()
    private = sorted(f"{n} imports {m}" for n, edges in graph.items() if n.startswith("eagle.distributed")
                     for m in edges if not m.startswith("eagle.distributed") and _private(m))
    assert not private, "eagle.distributed uses eagle's public names only (eagle.extend):\n" + "\n".join(private)


def _eagle_imports(path):
    """Every eagle module (or module.name) a file outside the package imports, anywhere in it."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.split(".")[0] == "eagle")
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "eagle":
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_benchmarks_import_no_private_module_of_eagle():
    scripts = [p for p in BENCHMARKS.rglob("*.py") if "logs" not in p.relative_to(BENCHMARKS).parts]
    assert len(scripts) > 5, f"found only {scripts} under {BENCHMARKS}"
    private = sorted(f"{p.relative_to(ROOT)} imports {m}" for p in scripts for m in _eagle_imports(p)
                     if _private(m))
    assert not private, "benchmarks use eagle's public names only (eagle.extend, eagle.benchknobs):\n" + "\n".join(private)


_GENERATED = {"_seam_meta.py", "_seam_ffi.py"}


def _header_constants():
    from eagle import _seam_meta
    return _seam_meta.CONSTANTS


def _mirrored(name, constants):
    """The header constant a Python name spells (``_FAST_MATH`` -> EAGLE_BACKEND_MODULE_FAST_MATH,
    ``MASK_IS_DROP``, ``STREAM_NONE``), or None."""
    bare = name.lstrip("_")
    if bare in constants:
        return bare
    hits = [c for c in constants if c.endswith("_" + bare) and "_" in bare]
    return hits[0] if len(hits) == 1 else None


def _literal_int(node):
    """True for an int written out in the source: 5, -1, 0x80, 1 << 4, 1 | 2."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _literal_int(node.operand)
    if isinstance(node, ast.BinOp):
        return _literal_int(node.left) and _literal_int(node.right)
    return False


def _sources():
    return [p for p in PKG.rglob("*.py") if p.name not in _GENERATED]


def test_no_header_constant_is_copied_by_hand_into_the_python_sources():
    # A name that spells a header constant is read from the generated metadata (eagle._seam_meta),
    # never written out; nor does a literal sit beside a comment naming a header constant.
    import re
    constants = _header_constants()
    copied = []
    for path in _sources():
        text = path.read_text()
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.Assign) and _literal_int(node.value):
                for t in node.targets:
                    if isinstance(t, ast.Name) and _mirrored(t.id, constants):
                        copied.append(f"{path.relative_to(ROOT)}:{node.lineno}: {t.id} = a literal "
                                      f"(read {_mirrored(t.id, constants)} from eagle._seam_meta)")
            if (isinstance(node, ast.Dict) and node.keys and all(k is not None and _literal_int(k) for k in node.keys)
                    and any(isinstance(v, ast.Attribute) and getattr(v.value, "id", "") == "errors"
                            for v in node.values)):
                copied.append(f"{path.relative_to(ROOT)}:{node.lineno}: statuses written out as numbers "
                              "(key the table by eagle._seam_meta.CONSTANTS)")
        for i, line in enumerate(text.splitlines(), 1):
            code, _, comment = line.partition("#")
            if re.search(r"\bEAGLE_BACKEND_[A-Z0-9_]+", comment) and re.search(r"=\s*-?(0x[0-9a-fA-F]+|\d+)\b", code):
                copied.append(f"{path.relative_to(ROOT)}:{i}: a literal beside {comment.strip()}")
    assert not copied, "\n".join(copied)


def test_every_python_constant_that_mirrors_a_header_constant_equals_the_generated_metadata():
    import importlib
    constants = _header_constants()
    compared, wrong = 0, []
    for path in _sources():
        module = _module_name(path)
        names = {t.id for node in ast.parse(path.read_text()).body if isinstance(node, ast.Assign)
                 for t in node.targets if isinstance(t, ast.Name) and _mirrored(t.id, constants)}
        if not names:
            continue
        mod = importlib.import_module(module)
        for name in sorted(names):
            value, want = getattr(mod, name), constants[_mirrored(name, constants)]
            compared += 1
            if value != want:
                wrong.append(f"{module}.{name} = {value!r}, the header says {want!r}")
    from eagle import _status
    expected = _expected_exceptions()  # the status table, by the header's names
    compared += len(expected)
    table = {constants[name]: cls for name, cls in expected.items()}
    if _status._EXCEPTION_OF_STATUS != table:
        wrong.append(f"eagle._status's table {_status._EXCEPTION_OF_STATUS} is not {table}")
    assert compared >= 10 and not wrong, "\n".join(wrong) or f"only {compared} constants compared"


def _expected_exceptions():
    from eagle import errors
    return {"EAGLE_BACKEND_INVALID_ARGUMENT": errors.EagleValueError, "EAGLE_BACKEND_INDEX": errors.EagleIndexError,
            "EAGLE_BACKEND_INTEROP": errors.InteropError, "EAGLE_BACKEND_UNAVAILABLE": errors.BackendUnavailable,
            "EAGLE_BACKEND_UNSUPPORTED": errors.Unsupported, "EAGLE_BACKEND_COMPILE_FAILED": errors.CompileError}


def test_the_solver_floor_uses_only_the_public_api():
    """eagle/ode/ reaches the core through `import eagle` (public names), eagle.errors and the public
    eagle.distributed package alone."""
    graph = import_graph()
    leaks = sorted(f"{n} imports {m}" for n, edges in graph.items() if n.startswith("eagle.ode")
                   for m in edges if not (m.startswith("eagle.ode") or m in ("eagle", "eagle.errors", "eagle.distributed")))
    assert not leaks, "\n".join(leaks)


def test_the_solver_floor_holds_no_kind_literal_and_reads_no_private_name_of_eagle():
    """eagle/ode/ picks no kind by name (the backend comes from where y0 lives, through the core's
    resolver, or from backend=): no string constant in its code is a kind, and it reads no
    private attribute of eagle (eagle._x) behind the import graph's back."""
    from eagle._device_kind import KIND_OF_DEVICE_TYPE
    kinds = set(KIND_OF_DEVICE_TYPE.values()) | {"gpu", "cpu", "cuda", "hip", "opencl"}
    found = []
    for path in sorted((PKG / "ode").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                    and node.value.strip().lower() in kinds:
                found.append(f"{path.name}:{node.lineno}: the kind literal {node.value!r}")
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") \
                    and isinstance(node.value, ast.Name) and node.value.id == "eagle":
                found.append(f"{path.name}:{node.lineno}: eagle.{node.attr} is private")
    assert not found, "\n".join(found)
