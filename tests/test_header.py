"""The seam header compiles clean as C99 and as C++17 with warnings as errors."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

MOCK = ROOT / "tests" / "c" / "header_compiles.c"
STRICT = ["-Wall", "-Wextra", "-Werror", "-pedantic"]


@pytest.mark.parametrize("compiler, flags", [
    ("gcc", ["-x", "c", "-std=c99"]),
    ("g++", ["-x", "c++", "-std=c++17"]),
], ids=["c99", "c++17"])
def test_header_compiles_clean(compiler, flags, tmp_path):
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} not installed")
    cmd = [compiler, *flags, *STRICT, "-I", str(ROOT), "-c", str(MOCK), "-o", str(tmp_path / "mock.o")]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_header_is_standalone_c(tmp_path):
    """The header alone (no prior includes) is a valid C99 translation unit."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    cmd = ["gcc", "-x", "c", "-std=c99", *STRICT, "-fsyntax-only", str(ROOT / "eagle_backend.h")]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
