"""docs/add_a_backend.md followed literally: every ```sh block, in order, in one shell, in an empty
folder outside the repository, must succeed (the skeleton builds with two generators, passes
eagle.check, loads through $EAGLE_BACKEND_MYKIND and installed beside the package)."""
import os
import re
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(REPO, "docs", "add_a_backend.md")


def sh_blocks(text):
    """The bodies of the ```sh fenced blocks of a markdown text, in order."""
    return re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M)


def test_the_doc_has_the_walkthrough():
    with open(DOC) as f:
        blocks = sh_blocks(f.read())
    joined = "\n".join(blocks)
    for step in ("python -m eagle new-backend", "--cmake-dir", "cmake --build", "python -m eagle.check",
                 "EAGLE_BACKEND_MYKIND", "cmake --install"):
        assert step in joined, step


@pytest.mark.slow  # about 40 s: builds the doc's backend with cmake
def test_every_shell_block_of_the_doc_runs(tmp_path):
    for tool in ("cmake", "ninja", "bash"):
        if not shutil.which(tool):
            pytest.skip(f"the doc's commands need {tool}")
    if not (shutil.which("c++") or shutil.which("g++")):
        pytest.skip("the doc's commands need a C++ compiler")
    probe = subprocess.run([sys.executable, "-m", "eagle", "--package-dir"], capture_output=True, text=True,
                           cwd=REPO)
    if probe.returncode != 0:
        pytest.skip(f"the author kit is not installed: {probe.stderr.strip()}")
    installed = os.path.join(probe.stdout.strip(), "libeagle_mykind.so")
    if os.path.exists(installed):
        pytest.skip(f"{installed} exists already; the doc's install step would overwrite it")
    with open(DOC) as f:
        script = "set -euxo pipefail\n" + "\n".join(sh_blocks(f.read()))
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    # this checkout's eagle first; the generated modules and the kit come from the install, which
    # may itself be on PYTHONPATH (the device set-up installs into a --target folder)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH")) if p)
    env.pop("EAGLE_BACKEND_MYKIND", None)
    try:
        proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=900,
                              cwd=str(tmp_path), env=env)
    finally:
        if os.path.exists(installed):
            os.remove(installed)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    assert "total:" in proc.stdout and "0 failed" in proc.stdout
