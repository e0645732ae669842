"""python -m eagle.check on the real cpu backend: every group passes, every seam symbol is
called by a behavioural check, and the output formats and exit status say what they promise."""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = {"pass", "fail", "advice", "skip", "not_supported", "crash", "timeout"}


def _run(*args):
    return subprocess.run([sys.executable, "-m", "eagle.check", *args], capture_output=True,
                          text=True, timeout=600, cwd=REPO)


@pytest.fixture(scope="module")
def cpu_json(tmp_path_factory, cpu_backend_path):
    junit = tmp_path_factory.mktemp("junit") / "check.xml"
    proc = _run("cpu", "--json", "--junit", str(junit))
    return proc, json.loads(proc.stdout), junit


def test_cpu_backend_passes_every_group(cpu_json):
    proc, runs, _ = cpu_json
    results = runs[0]["results"]
    bad = {r["id"]: (r["result"], r["message"]) for r in results if r["result"] != "pass"}
    assert not bad
    assert proc.returncode == 0


def test_every_result_has_id_group_result_message(cpu_json):
    from eagle.check._registry import GROUP_ORDER
    _, runs, _ = cpu_json
    ids = [r["id"] for r in runs[0]["results"]]
    assert len(ids) == len(set(ids))
    for r in runs[0]["results"]:
        assert r["result"] in RESULTS
        assert r["id"].startswith(r["group"] + ".")
        assert r["group"] in GROUP_ORDER
        assert isinstance(r["message"], str)


def test_every_seam_symbol_is_called_by_a_behavioural_check_on_cpu(cpu_json):
    import eagle._seam_meta as meta
    _, runs, _ = cpu_json
    called = set()
    for r in runs[0]["results"]:
        if r["kind"] == "behaviour" and r["result"] == "pass":
            called |= set(r["symbols_called"])
    assert sorted(set(meta.SYMBOLS) - called) == []


def test_every_group_of_the_seam_has_checks():
    import eagle._seam_meta as meta
    from eagle.check._all import all_checks
    groups = {c.group for c in all_checks()}
    wanted = set(meta.GROUP_BITS) | {s[len("eagle_backend_"):] for s in meta.PER_SYMBOL} | {"required"}
    assert wanted <= groups


def test_junit_lists_every_check(cpu_json):
    _, runs, junit = cpu_json
    suite = ET.parse(junit).getroot().find("testsuite")
    assert int(suite.get("tests")) == len(runs[0]["results"])
    assert int(suite.get("failures")) == 0


def test_table_has_one_line_per_group_and_exit_status_zero(cpu_backend_path):
    proc = _run("cpu", "--group", "stream", "--group", "fork")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert any(ln.split()[:1] == ["stream"] for ln in lines)
    assert any(ln.split()[:1] == ["fork"] for ln in lines)
    assert not any(ln.split()[:1] == ["filtering"] for ln in lines)
    assert "0 failed" in proc.stdout


def test_a_missing_file_is_refused_by_name(tmp_path):
    proc = _run(str(tmp_path / "libeagle_nothere.so"))
    assert proc.returncode != 0
    assert "libeagle_nothere.so" in proc.stderr


def test_a_file_that_is_not_a_library_is_refused_with_status_two(tmp_path):
    bogus = tmp_path / "libeagle_bogus.so"
    bogus.write_text("not an ELF file\n")
    proc = _run(str(bogus), "--json", "--group", "static", "--group", "required")
    assert proc.returncode == 2
    assert "libeagle_bogus.so" in proc.stderr and "does not load" in proc.stderr
    doc = json.loads(proc.stdout)  # --json still gives a document, saying no check ran and why
    assert doc[0]["results"] == [] and "does not load" in doc[0]["error"]
