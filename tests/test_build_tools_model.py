"""The model of eagle_backend.h, and the round trip header -> model -> cdef -> reparse."""

from pathlib import Path

from build_tools import cdef, model as seam_model, parse
from build_tools.errors import SeamError
from build_tools.model import Array, Builtin, FunctionType, Pointer, StructType, TypedefName

ROOT = Path(__file__).resolve().parent.parent
HEADER = ROOT / "eagle_backend.h"


def test_round_trip_model_cdef_reparse_is_the_same_model(model):
    again = parse.parse_text(cdef.emit(model), "<cdef>")
    assert again == model
    assert again.functions == model.functions
    assert again.structs == model.structs
    assert again.constants == model.constants
    assert again.typedefs == model.typedefs


def test_round_trip_is_a_fixed_point(model):
    text = cdef.emit(model)
    assert cdef.emit(parse.parse_text(text, str(HEADER))) == text


def test_round_trip_notices_a_changed_model(model):
    """The equality the round trip relies on is not vacuous."""
    text = cdef.emit(model).replace("uint32_t loop_cap;", "int32_t loop_cap;")
    assert parse.parse_text(text, "<cdef>") != model


def test_versions_and_statuses(model):
    assert (model.version_major, model.version_minor, model.version) == (1, 9, (1 << 16) | 9)
    assert model.statuses == {0: "OK", 1: "ERROR", 2: "INVALID_ARGUMENT", 3: "INDEX", 4: "INTEROP",
                              5: "UNAVAILABLE", 6: "CALLBACK_FAILED", 7: "BAD_HANDLE", 8: "UNSUPPORTED",
                              9: "COMPILE_FAILED"}


def test_constants_are_evaluated_to_integers(model):
    assert model.constant("EAGLE_BACKEND_STREAM_NONE") == -(2**63)
    assert model.constant("EAGLE_BACKEND_CAP_FORK") == 8
    assert model.constant("EAGLE_BACKEND_STREAM_NON_BLOCKING") == 1
    assert model.constant("EAGLE_BACKEND_MEMCPY_H2H") == 4


def test_capability_groups_are_the_cap_macros(model):
    assert model.group_bits == {"stream": 0, "capturer": 1, "captured": 2, "fork": 3, "conditional": 4,
                                "attribution": 5, "graph": 6, "launcher": 7, "exec": 9, "device": 10,
                                "interop": 11, "filtering": 12}


def test_functions_carry_group_since_and_line(model):
    by_name = {f.name: f for f in model.functions}
    assert len(by_name) == len(model.functions) == 66
    assert [f.name for f in model.functions if f.group == "required"] == [
        "eagle_backend_version", "eagle_backend_last_error", "eagle_backend_build_info", "eagle_backend_probe",
        "eagle_backend_free", "eagle_backend_capabilities", "eagle_backend_device_types"]
    assert {n: (f.group, f.since) for n, f in by_name.items() if f.group == "per-symbol"} == {
        "eagle_backend_conditional_begin_case": ("per-symbol", 4),
        "eagle_backend_reorder_device": ("per-symbol", 2),
        "eagle_backend_memcpy": ("per-symbol", 6),
        "eagle_backend_host_alloc": ("per-symbol", 6),
        "eagle_backend_host_free": ("per-symbol", 6),
        "eagle_backend_host_func": ("per-symbol", 6),
        "eagle_backend_module_from_source": ("per-symbol", 7),
        "eagle_backend_module_from_image": ("per-symbol", 7),
        "eagle_backend_module_function": ("per-symbol", 7),
        "eagle_backend_module_release": ("per-symbol", 7),
        "eagle_backend_mem_alloc": ("per-symbol", 7),
        "eagle_backend_mem_free": ("per-symbol", 7),
        "eagle_backend_stream_query": ("per-symbol", 8),
        "eagle_backend_launcher_query": ("per-symbol", 8)}
    lines = HEADER.read_text().splitlines()
    for f in model.functions:
        assert f.name + "(" in lines[f.line - 1], f.name


def test_types_are_modelled(model):
    snapshot = next(f for f in model.functions if f.name == "eagle_backend_capture_snapshot_nodes")
    assert [p.type for p in snapshot.params] == [
        Builtin("uint64_t"), Pointer(Pointer(Builtin("uint64_t"))), Pointer(Builtin("int64_t"))]
    create = next(f for f in model.functions if f.name == "eagle_backend_stream_create")
    assert create.returns == TypedefName("eagle_backend_status")
    assert create.params[0].type == Pointer(StructType("eagle_backend_stream_desc", const=True))
    assert model.typedef("eagle_backend_host_fn").type == Pointer(
        FunctionType(Builtin("void"), (seam_model.Param("user_data", Pointer(Builtin("void"))),)))
    assert model.typedef("eagle_backend_stream").type == Pointer(StructType("eagle_backend_stream_opaque"))
    fields = {f.name: f.type for f in model.struct("eagle_backend_build_info").fields}
    assert fields["archs"] == Array(Builtin("char"), 128)


def test_struct_fields_in_order(model):
    assert [f.name for f in model.struct("eagle_backend_compact_desc").fields] == [
        "struct_size", "flags", "device", "reserved", "mask", "index_map", "count", "scratch", "n", "stream",
        "scratch_bytes", "live32", "span", "fire", "theta", "reserved2"]


def test_seam_error_reads_file_line_reason():
    e = SeamError("x.h", 12, "unknown type 'foo_t'")
    assert str(e) == "x.h:12: unknown type 'foo_t'" and (e.path, e.line) == ("x.h", 12)


def test_build_tools_modules_import_one_another_without_a_cycle():
    """build_tools' imports (module level and inside functions) point one way: model and
    preprocess import no sibling but errors, macros reads model, parse reads model and macros."""
    import ast
    root = Path(__file__).resolve().parent.parent / "build_tools"
    names = {p.stem for p in root.glob("*.py")}
    graph = {}
    for p in root.glob("*.py"):
        edges = set()
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                edges.update([node.module] if node.module else [a.name for a in node.names])
        graph[p.stem] = {e for e in edges if e in names and e != p.stem}
    assert graph["model"] == set() and graph["preprocess"] <= {"errors"}, graph

    def reach(start):
        seen, todo = set(), list(graph[start])
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(graph[n])
        return seen
    cycles = sorted(n for n in graph if n in reach(n))
    assert not cycles, f"build_tools modules on an import cycle: {cycles} ({graph})"
