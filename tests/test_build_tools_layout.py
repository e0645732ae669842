"""The layout manifest agrees with the C compiler (a probe) and with cffi; so do the constants."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from build_tools import cdef, layout

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "tests" / "c" / "layout_probe.c"


@pytest.fixture(scope="module")
def compiler_says(model, tmp_path_factory):
    """{'sizeof tag' | 'offsetof tag.field' | 'constant NAME': int} as the system cc computes them."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    work = tmp_path_factory.mktemp("probe")
    items = []
    for s in model.structs:
        items.append(f"SIZE({s.tag})")
        items += [f"OFFSET({s.tag}, {f.name})" for f in s.fields]
    items += [f"CONSTANT({c.name})" for c in model.constants]
    (work / "probe_items.h").write_text("\n".join(items) + "\n")
    exe = work / "probe"
    subprocess.run([cc, "-std=c99", "-I", str(work), "-I", str(ROOT), str(PROBE), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return {" ".join(line.split()[:2]): int(line.split()[2]) for line in out.splitlines()}


def _manifest_view(manifest):
    view = {}
    for tag, entry in manifest.items():
        view[f"sizeof {tag}"] = entry["sizeof"]
        view.update({f"offsetof {tag}.{name}": offset for name, offset in entry["fields"].items()})
    return view


def test_probe_covers_every_struct_field(model, compiler_says):
    expected = sum(1 + len(s.fields) for s in model.structs) + len(model.constants)
    assert len(compiler_says) == expected


def test_manifest_equals_the_c_compiler(model, compiler_says):
    manifest = layout.manifest(model)
    assert _manifest_view(manifest) == {k: v for k, v in compiler_says.items() if not k.startswith("constant")}


def test_manifest_equals_cffi(model):
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(cdef.emit(model))
    manifest = layout.manifest(model)
    cffi_view = {}
    for tag, entry in manifest.items():
        cffi_view[f"sizeof {tag}"] = ffi.sizeof(f"struct {tag}")
        cffi_view.update({f"offsetof {tag}.{name}": ffi.offsetof(f"struct {tag}", name) for name in entry["fields"]})
    assert cffi_view == _manifest_view(manifest)


def test_constants_equal_the_c_compiler(model, compiler_says):
    assert {c.name: c.value for c in model.constants} == {
        k.split()[1]: v for k, v in compiler_says.items() if k.startswith("constant")}


def test_known_1_0_sizes(model):
    """Binary compatibility with the published 1.0 seam pins these."""
    sizes = {tag: entry["sizeof"] for tag, entry in layout.manifest(model).items()}
    assert sizes["eagle_backend_build_info"] == 192
    assert sizes["eagle_backend_device_props"] == 368
    assert sizes["eagle_backend_stream_desc"] == 16
    assert sizes["eagle_backend_launch_desc"] == 80
    assert layout.manifest(model)["eagle_backend_conditional_desc"]["fields"]["case_count"] == 48


def test_layout_cli_writes_the_manifest(model, tmp_path):
    out = tmp_path / "layout.json"
    subprocess.run([sys.executable, "-m", "build_tools", "layout", "-o", str(out)], cwd=ROOT, check=True)
    assert json.loads(out.read_text()) == layout.manifest(model)
