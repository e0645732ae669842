"""Round 4's fresh mutation batch (issue 43, tools/mutants_round4.py) against eagle.check, in CI's
slow step: every mutant still applies (its text is found once), builds, and >= 90 % of the scored
ones (equivalent mutants apart) make eagle.check fail. The cpu and kit mutants rebuild the cpu
backend; the opencl ones need an OpenCL platform (PoCL in CI) and cmake's OpenCL package.
About 35 s a mutant on 2 cores: tens of minutes, hence slow."""
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))
from mutants_round4 import EQUIVALENT, MUTANTS_ROUND4  # noqa: E402


def test_the_batch_is_fresh_and_applies():
    # cheap: every mutant's text is found exactly once in today's sources, ids are unique, and the
    # batch has at least 40 scored defects across cpu, the kit and opencl
    ids = [m[0] for m in MUTANTS_ROUND4]
    assert len(ids) == len(set(ids))
    assert EQUIVALENT <= set(ids)
    assert len(set(ids) - EQUIVALENT) >= 40
    assert {m[1] for m in MUTANTS_ROUND4} == {"cpu", "kit", "opencl"}
    for mid, _backend, fname, old, new, why in MUTANTS_ROUND4:
        with open(os.path.join(REPO, "backends", fname)) as f:
            n = f.read().count(old)
        assert n == 1, f"{mid}: the text to mutate occurs {n} times in backends/{fname}"
        assert old != new and why


def _opencl_platform():
    return bool(glob.glob("/etc/OpenCL/vendors/*.icd")) and shutil.which("cmake") is not None


@pytest.mark.slow
@pytest.mark.parametrize("backends", [("cpu", "kit"), ("opencl",)], ids=["cpu+kit", "opencl"])
def test_eagle_check_catches_the_fresh_batch(tmp_path, backends):
    if "opencl" in backends and not _opencl_platform():
        pytest.skip("no OpenCL platform registered (/etc/OpenCL/vendors): install pocl-opencl-icd")
    if shutil.which("cmake") is None:
        pytest.skip("needs cmake to rebuild the mutated backends")
    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tools", "mutate_cpu.py"), "--round4", "--backend",
                           *backends, "--json", str(out)], capture_output=True, text=True, cwd=REPO, timeout=4 * 3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = json.loads(out.read_text())
    unscored = [r for r in rows if r["status"] not in ("caught", "survived")]
    assert not unscored, unscored
    scored = [r for r in rows if r["id"] not in EQUIVALENT]
    caught = [r for r in scored if r["status"] == "caught"]
    assert len(caught) >= 0.9 * len(scored), proc.stdout[-3000:]
