"""Broken backend libraries: truncated (a partial download or copy) or malformed files must be
refused with BackendLoadError naming the path and the defect, never kill the process (glibc's
dlopen dies of SIGBUS on a file cut inside a loadable segment). Each case loads the file in a
fresh interpreter, by path (``eagle.backend(path)``) and through ``$EAGLE_BACKEND_CPU``."""
import os
import platform
import struct

import pytest

from _subproc import run_snippet

pytestmark = pytest.mark.skipif(platform.system() != "Linux", reason="the ELF check runs on Linux only")

# ELF64 little-endian offsets (the built cpu backend on this host).
E_MACHINE, E_PHOFF, E_SHOFF, E_PHENTSIZE, E_PHNUM, E_SHNUM, E_SHSTRNDX = 18, 32, 40, 54, 56, 60, 62


def _phdrs(data):
    phoff = struct.unpack_from("<Q", data, E_PHOFF)[0]
    phnum = struct.unpack_from("<H", data, E_PHNUM)[0]
    return [(phoff + 56 * i,) + struct.unpack_from("<IIQQQQQQ", data, phoff + 56 * i) for i in range(phnum)]


def _loads(data):
    """[(header offset, p_offset, p_filesz)] of the PT_LOAD segments."""
    return [(at, off, filesz) for at, typ, _fl, off, _va, _pa, filesz, _mem, _al in _phdrs(data) if typ == 1]


def _no_sections(data):
    """The library without its section header table (e_shoff/e_shnum/e_shstrndx zero): it still
    loads, and a cut inside a segment then is the first defect."""
    d = bytearray(data)
    struct.pack_into("<Q", d, E_SHOFF, 0)
    struct.pack_into("<H", d, E_SHNUM, 0)
    struct.pack_into("<H", d, E_SHSTRNDX, 0)
    return bytes(d)


def _patched(data, offset, fmt, value):
    d = bytearray(data)
    struct.pack_into(fmt, d, offset, value)
    return bytes(d)


def _other_machine():
    return 183 if platform.machine() in ("x86_64", "AMD64") else 62  # AArch64 here, else x86-64


def _cut_mid_load(data, which):
    plain = _no_sections(data)
    _at, off, filesz = _loads(plain)[which]
    return plain[:off + filesz // 2]


# name -> (make bytes from the built library, words the refusal must contain)
CASES = {
    "empty": (lambda d: b"", ["empty"]),
    "text_file": (lambda d: b"#!/bin/sh\necho this is not a library\n" * 4, ["not an ELF file"]),
    "magic_only": (lambda d: d[:4], ["truncated", "ELF identification"]),
    "cut_in_ident": (lambda d: d[:10], ["truncated"]),
    "cut_in_header": (lambda d: d[:40], ["truncated", "ELF header"]),
    "cut_in_program_headers": (lambda d: _no_sections(d)[:64 + 56 * 2 + 7], ["truncated", "program header table"]),
    "cut_mid_first_segment": (lambda d: _cut_mid_load(d, 0), ["truncated", "PT_LOAD"]),
    "cut_mid_text_segment": (lambda d: _cut_mid_load(d, 1), ["truncated", "PT_LOAD"]),
    "cut_mid_last_segment": (lambda d: _cut_mid_load(d, -1), ["truncated", "PT_LOAD"]),
    "cut_at_last_segment_start": (lambda d: _no_sections(d)[:_loads(d)[-1][1] + 1], ["truncated", "PT_LOAD"]),
    "cut_one_byte_short": (lambda d: d[:-1], ["truncated", "section header table"]),
    "cut_in_section_table": (lambda d: d[:struct.unpack_from("<Q", d, E_SHOFF)[0] + 100],
                             ["truncated", "section header table"]),
    "cut_before_section_table": (lambda d: d[:struct.unpack_from("<Q", d, E_SHOFF)[0] - 1],
                                 ["truncated", "section header table"]),
    "class_32_bit": (lambda d: _patched(d, 4, "B", 1), ["32-bit"]),
    "class_invalid": (lambda d: _patched(d, 4, "B", 7), ["class"]),
    "big_endian": (lambda d: _patched(d, 5, "B", 2), ["big-endian"]),
    "wrong_machine": (lambda d: _patched(d, E_MACHINE, "<H", _other_machine()), ["built for"]),
    "executable_not_shared": (lambda d: _patched(d, 16, "<H", 2), ["not a shared library"]),
    "bad_phentsize": (lambda d: _patched(d, E_PHENTSIZE, "<H", 32), ["program header entries"]),
    "program_headers_past_end": (lambda d: _patched(d, E_PHOFF, "<Q", len(d) - 20), ["program header table"]),
    "section_table_past_end": (lambda d: _patched(d, E_SHOFF, "<Q", 1 << 40), ["section header table"]),
    "segment_size_past_end": (lambda d: _patched(d, _loads(d)[1][0] + 32, "<Q", 1 << 40), ["PT_LOAD"]),
    "segment_offset_past_end": (lambda d: _patched(d, _loads(d)[1][0] + 8, "<Q", len(d) + 4096), ["PT_LOAD"]),
    "segment_range_wraps": (lambda d: _patched(d, _loads(d)[1][0] + 8, "<Q", (1 << 64) - 16), ["PT_LOAD"]),
}


@pytest.fixture(scope="module")
def library_bytes(cpu_backend_path):
    with open(cpu_backend_path, "rb") as fh:
        data = fh.read()
    if data[:6] != b"\x7fELF\x02\x01":
        pytest.skip("the cpu backend is not a 64-bit little-endian ELF file; the byte patches assume one")
    return data


LOAD_BY_PATH = """
import eagle
eagle.backend(PATH)
"""

LOAD_BY_ENV = """
import eagle
eagle.backend("cpu")
"""


def _write(tmp_path, name, data):
    path = tmp_path / f"libeagle_{name}.so"
    path.write_bytes(data)
    return str(path)


# Every defect is loaded by path; by $EAGLE_BACKEND_CPU (the same check, then the variable named)
# these few in the default run, the rest with -m slow (each case is an interpreter: ~0.4 s).
BY_ENV_BY_DEFAULT = {"empty", "cut_one_byte_short", "wrong_machine"}


@pytest.mark.parametrize("case,how", [
    pytest.param(c, how, marks=[pytest.mark.slow] if how == "env" and c not in BY_ENV_BY_DEFAULT else [],
                 id=f"{c}-{how}")
    for how in ("path", "env") for c in sorted(CASES)])
def test_a_broken_library_is_refused_naming_the_path_and_the_defect(tmp_path, library_bytes, case, how):
    make, words = CASES[case]
    path = _write(tmp_path, case, make(library_bytes))
    if how == "path":
        out = run_snippet(LOAD_BY_PATH, globals={"PATH": path}, timeout=60)
    else:
        out = run_snippet(LOAD_BY_ENV, env={"EAGLE_BACKEND_CPU": path}, timeout=60)
    out.expect_raises("BackendLoadError", match=[path, *words])
    if how == "env":
        out.expect_raises("BackendLoadError", match="$EAGLE_BACKEND_CPU")


@pytest.mark.parametrize("variant", ["as_built", "without_section_table", "with_trailing_bytes"])
def test_an_intact_library_still_loads(tmp_path, library_bytes, variant):
    """The check refuses only real defects: a copy of the library, the same without its section
    header table (the loader does not need it), or with junk appended, loads and works."""
    data = {"as_built": library_bytes, "without_section_table": _no_sections(library_bytes),
            "with_trailing_bytes": library_bytes + b"\0junk" * 1000}[variant]
    path = _write(tmp_path, variant, data)
    out = run_snippet("""
        import eagle
        b = eagle.backend(PATH)
        s = b.stream()
        s.synchronize()
        result = [b.kind, b.version[0]]
    """, globals={"PATH": path})
    assert out.expect_ok() == ["cpu", 1]


def test_a_directory_is_refused(tmp_path):
    d = tmp_path / "libeagle_dir.so"
    d.mkdir()
    out = run_snippet(LOAD_BY_PATH, globals={"PATH": str(d)}, timeout=60)
    out.expect_raises("BackendLoadError", match=[str(d), "not a regular file"])


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "libeagle_fifo.so"
    os.mkfifo(fifo)
    out = run_snippet(LOAD_BY_PATH, globals={"PATH": str(fifo)}, timeout=30)
    out.expect_raises("BackendLoadError", match=[str(fifo), "not a regular file"])


def test_an_unreadable_library_is_refused(tmp_path, library_bytes):
    if os.geteuid() == 0:
        pytest.skip("running as root: a file without read permission is still readable")
    path = _write(tmp_path, "noperm", library_bytes)
    os.chmod(path, 0)
    out = run_snippet(LOAD_BY_PATH, globals={"PATH": path}, timeout=60)
    out.expect_raises("BackendLoadError", match=path)
