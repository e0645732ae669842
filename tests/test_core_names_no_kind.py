"""eagle's core names no kind in its logic: kinds are reached through the seam, and only the DLPack
device table (eagle/_device_kind.py) maps device types to kind names."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = os.path.join(ROOT, "eagle")
KINDS = {"cpu", "cuda", "hip", "metal", "level_zero", "rocm", "opencl", "vulkan"}
ALLOWED = {"_device_kind.py"}


def _kind_literals(node):
    """Kind-name string constants directly in an expression (a literal, or a tuple/list/set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in KINDS:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [v for elt in node.elts for v in _kind_literals(elt)]
    return []


def _comparisons_against_kinds(path):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                found += [(node.lineno, v) for v in _kind_literals(side)]
        elif isinstance(node, ast.Dict):  # a table keyed by kind is a branch on the kind too
            found += [(node.lineno, v) for k in node.keys if k is not None for v in _kind_literals(k)]
        elif isinstance(node, ast.match_case):
            for sub in ast.walk(node.pattern):
                if isinstance(sub, ast.MatchValue):
                    found += [(node.pattern.lineno, v) for v in _kind_literals(sub.value)]
    return found


def test_the_detector_finds_a_comparison_against_a_kind(tmp_path):
    p = tmp_path / "m.py"
    p.write_text('def f(b):\n    if b.kind == "cuda":\n        return 1\n    return {"cpu": 2}\n')
    assert _comparisons_against_kinds(str(p)) == [(2, "cuda"), (4, "cpu")]


def test_no_core_module_compares_against_a_kind_name():
    bad = []
    for name in sorted(os.listdir(CORE)):
        if name.endswith(".py") and name not in ALLOWED:
            bad += [f"eagle/{name}:{line}: {v!r}" for line, v in _comparisons_against_kinds(os.path.join(CORE, name))]
    assert bad == [], "eagle's core branches on a kind name:\n" + "\n".join(bad)


def test_the_checker_has_no_driver_of_its_own():
    """eagle.check allocates, copies, compiles and launches through the seam only."""
    check_dir = os.path.join(CORE, "check")
    for name in sorted(os.listdir(check_dir)):
        if name.endswith(".py"):
            text = open(os.path.join(check_dir, name), encoding="utf-8").read()
            for needle in ("CDLL(", "cuInit", "cuModule", "cuMemAlloc", "cuMemcpy", "hipMalloc", "hipModule"):
                assert needle not in text, f"eagle/check/{name} uses {needle}"
