"""`python -m build_tools generate`: the cffi module, _seam_meta.py and the linker version script."""

import ctypes
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from build_tools import cdef, layout, model as seam_model
from build_tools.model import FunctionType
from conftest import pinned_symbols

ROOT = Path(__file__).resolve().parent.parent
META_NAMES = {"VERSION_MAJOR", "VERSION_MINOR", "VERSION", "CONSTANTS", "GROUP_BITS", "RESERVED_BITS_MASK",
              "SYMBOLS", "REQUIRED", "GROUP_SYMBOLS", "PER_SYMBOL", "STATUS_NAMES", "STRUCT_SIZES",
              "EXTENDS", "HEADER_SHA256"}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("generated")
    subprocess.run([sys.executable, "-m", "build_tools", "generate", "--out-dir", str(out)], cwd=ROOT, check=True)
    return out


def test_generate_writes_the_four_artefacts(generated):
    assert sorted(p.name for p in generated.iterdir()) == [
        "_seam_ffi.py", "_seam_meta.py", "eagle_backend.map", "layout.json"]


def test_generate_is_deterministic_and_leaves_unchanged_files_alone(generated, tmp_path):
    mtimes = {p.name: p.stat().st_mtime_ns for p in generated.iterdir()}
    subprocess.run([sys.executable, "-m", "build_tools", "generate", "--out-dir", str(generated)], cwd=ROOT,
                   check=True)
    assert {p.name: p.stat().st_mtime_ns for p in generated.iterdir()} == mtimes


def test_ffi_module_imports_without_pycparser(generated):
    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('eagle._seam_ffi', {str(generated / '_seam_ffi.py')!r})\n"
            "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)\n"
            "assert mod.ffi.sizeof('struct eagle_backend_build_info') == 192\n"
            "print(sorted(m for m in sys.modules if m.startswith(('pycparser', 'build_tools'))))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def _load_ffi(generated):
    import importlib.util

    spec = importlib.util.spec_from_file_location("_seam_ffi_under_test", generated / "_seam_ffi.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ffi


def test_ffi_module_layout_equals_the_manifest(generated):
    ffi = _load_ffi(generated)
    for tag, entry in json.loads((generated / "layout.json").read_text()).items():
        assert ffi.sizeof(f"struct {tag}") == entry["sizeof"]
        for name, offset in entry["fields"].items():
            assert ffi.offsetof(f"struct {tag}", name) == offset


def test_meta_defines_exactly_the_contract(generated, model):
    text = (generated / "_seam_meta.py").read_text()
    namespace = {}
    exec(compile(text, "_seam_meta.py", "exec"), namespace)
    namespace.pop("__builtins__")
    assert set(namespace) == META_NAMES
    m = namespace
    assert (m["VERSION_MAJOR"], m["VERSION_MINOR"], m["VERSION"]) == (1, 9, 0x10009)
    # which per-symbol entry needs which group comes from the header's extends= markers
    assert m["EXTENDS"] == {"eagle_backend_conditional_begin_case": "conditional",
                            "eagle_backend_reorder_device": "filtering",
                            "eagle_backend_stream_query": "stream",
                            "eagle_backend_launcher_query": "launcher"}
    assert len(m["HEADER_SHA256"]) == 64
    assert m["CONSTANTS"]["EAGLE_BACKEND_OK"] == 0
    assert m["CONSTANTS"]["EAGLE_BACKEND_STREAM_NONE"] == -(2**63)
    assert len(m["CONSTANTS"]) == len(model.constants)
    assert m["GROUP_BITS"]["stream"] == 0 and m["GROUP_BITS"]["filtering"] == 12 and "reserved" not in m["GROUP_BITS"]
    assert m["RESERVED_BITS_MASK"] == (2**64 - 1) & ~(0x1FFF & ~(1 << 8))
    assert m["SYMBOLS"]["eagle_backend_memcpy"] == ("per-symbol", 6)
    assert m["SYMBOLS"]["eagle_backend_fork_size"] == ("fork", 0)
    assert sorted(m["SYMBOLS"], key=str.encode) == pinned_symbols()
    assert len(m["REQUIRED"]) == 7 and m["REQUIRED"][0] == "eagle_backend_version"
    assert m["GROUP_SYMBOLS"]["conditional"] == (
        "eagle_backend_conditional_create", "eagle_backend_conditional_begin", "eagle_backend_conditional_body_stream",
        "eagle_backend_conditional_is_loop", "eagle_backend_conditional_end", "eagle_backend_conditional_release")
    assert set(m["PER_SYMBOL"]) == {n for n, (g, _) in m["SYMBOLS"].items() if g == "per-symbol"}
    assert m["STATUS_NAMES"][9] == "COMPILE_FAILED" and len(m["STATUS_NAMES"]) == 10
    assert m["STRUCT_SIZES"] == {tag: e["sizeof"] for tag, e in layout.manifest(model).items()}


def test_version_script_lists_exactly_the_pinned_symbols(generated):
    text = (generated / "eagle_backend.map").read_text()
    body = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    m = re.fullmatch(r"\s*EAGLE_BACKEND_1\s*\{\s*global:\s*(.*?)\s*local:\s*\*;\s*\};\s*", body, re.S)
    assert m, text
    assert [s.strip() for s in m.group(1).split(";") if s.strip()] == pinned_symbols()


def test_version_script_exports_the_seam_and_hides_the_rest(generated, model, tmp_path):
    """A stub backend linked with the script exports every seam symbol and nothing else, and the
    generated cffi module binds it."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or sys.platform != "linux":
        pytest.skip("needs cc and GNU ld")
    stubs = ['#include "eagle_backend.h"', "int eagle_private_helper(void) { return 42; }"]
    for f in model.functions:
        signature = cdef.declare(FunctionType(f.returns, f.params), f.name)
        value = "EAGLE_BACKEND_VERSION" if f.name == "eagle_backend_version" else "0"
        body = "" if f.returns == seam_model.Builtin("void") else f"return {value};"
        stubs.append(f"{signature} {{ {body} }}")
    source = tmp_path / "stub.c"
    source.write_text("\n".join(stubs) + "\n")
    lib = tmp_path / "libeagle_stub.so"
    subprocess.run([cc, "-std=c99", "-shared", "-fPIC", "-I", str(ROOT), str(source), "-o", str(lib),
                    f"-Wl,--version-script={generated / 'eagle_backend.map'}"], check=True)
    handle = ctypes.CDLL(str(lib))
    for name in pinned_symbols():
        assert hasattr(handle, name), name
    assert not hasattr(handle, "eagle_private_helper")
    seam = _load_ffi(generated).dlopen(str(lib))
    assert seam.eagle_backend_version() == 0x10009
    assert seam.EAGLE_BACKEND_STREAM_NONE == -(2**63)
