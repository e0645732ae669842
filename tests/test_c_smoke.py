"""tests/c_backend/smoke.c: the C smoke test of a cpu-kind backend, compiled here with ``cc`` and
run through dlopen on the cpu backend; and its symbol list covers exactly the pinned seam."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, pinned_symbols

SMOKE_DIR = os.path.join(ROOT, "tests", "c_backend")
SMOKE = os.path.join(SMOKE_DIR, "smoke.c")
SYMBOLS_INC = os.path.join(SMOKE_DIR, "smoke_symbols.inc")


def test_smoke_symbols_are_the_pinned_symbols():
    with open(SYMBOLS_INC) as fh:
        names = ["eagle_backend_" + m for m in re.findall(r"^SYM\((\w+)\)\s*$", fh.read(), re.M)]
    assert sorted(names) == sorted(pinned_symbols())


def test_smoke_passes_on_the_cpu_backend(cpu, tmp_path):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc) to build tests/c_backend/smoke.c")
    exe = tmp_path / "smoke"
    # smoke_symbols.inc is found beside smoke.c; eagle_backend.h at the repository root.
    build = subprocess.run([cc, "-std=c11", "-O1", f"-I{ROOT}", SMOKE, "-o", str(exe), "-ldl", "-lpthread"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe), cpu.path], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
