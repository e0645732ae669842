"""A third-party-style backend written from the header's text alone (tests/check_corpus/minimal_1_0.c:
the seven required symbols and the stream group, declaring eagle-backend/1.0, why lines for the
rest, no handle registry) passes `python -m eagle.check`, with advice allowed, and loads in eagle."""
import json
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(REPO, "tests", "check_corpus", "minimal_1_0.c")


def _build(tmp_path_factory, *defines):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc) to build the minimal backend")
    lib = tmp_path_factory.mktemp("minimal") / "libeagle_minimal.so"
    subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-fvisibility=hidden",
                    *defines, f"-I{REPO}", SOURCE, "-o", str(lib)], check=True, capture_output=True)
    return str(lib)


@pytest.fixture(scope="module")
def minimal(tmp_path_factory):
    return _build(tmp_path_factory)


@pytest.fixture(scope="module")
def checked(minimal, tmp_path_factory):
    junit = tmp_path_factory.mktemp("junit") / "minimal.xml"
    proc = subprocess.run([sys.executable, "-m", "eagle.check", minimal, "--json", "--junit", str(junit)],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    return proc, {r["id"]: r for r in json.loads(proc.stdout)[0]["results"]}, junit


def test_the_minimal_1_0_backend_passes(checked):
    proc, results, _ = checked
    bad = {i: (r["result"], r["message"]) for i, r in results.items()
           if r["result"] in ("fail", "crash", "timeout")}
    assert bad == {}
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_it_is_checked_as_what_it_is(checked):
    _, results, _ = checked
    assert results["required.version_major"]["message"] == "eagle-backend/1.0"
    assert results["stream.create_and_ptr"]["result"] == "pass"
    assert results["stream.unknown_flags"]["result"] == "pass"
    assert results["stream.null_out"]["result"] == "pass"      # struct_size 3 read as all zero: OK
    assert results["fork.queries"]["result"] == "not_supported"
    # a rule stated from minor 8 is not imposed on a 1.0 backend
    assert results["stream.default_stream_order"]["result"] == "skip"
    assert "minor 8" in results["stream.default_stream_order"]["message"]


def test_not_recognising_a_released_handle_is_advice_not_failure(checked):
    _, results, junit = checked
    r = results["stream.bad_handle"]
    assert r["result"] in ("advice", "pass")
    if r["result"] == "advice":
        assert r["message"].startswith("advice (not required by the header)")
        text = junit.read_text()
        assert 'name="advice"' in text and "<failure" not in text


def test_eagle_loads_it(minimal):
    code = ("import eagle; b = eagle.backend('minimal'); "
            "print(b.kind, b.version if hasattr(b, 'version') else '')")
    env = dict(os.environ, EAGLE_BACKEND_MINIMAL=minimal)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("minimal")


def test_a_backend_that_trusts_its_handles_gets_advice_and_passes(tmp_path_factory, tmp_path):
    """The variant that trusts every non-NULL handle (a released or foreign one is the caller's
    error, as in Vulkan) is told so as advice: in the table, in --json, and in --junit as a passed
    test case with an advice property; the exit status stays 0."""
    lib = _build(tmp_path_factory, "-DMINIMAL_TRUST_HANDLES")
    junit = tmp_path / "advice.xml"
    proc = subprocess.run([sys.executable, "-m", "eagle.check", lib, "--group", "stream", "--json",
                           "--junit", str(junit)], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads(proc.stdout)[0]
    r = {x["id"]: x for x in doc["results"]}["stream.bad_handle"]
    assert r["result"] == "advice", r
    assert "BAD_HANDLE" in r["message"] and r["message"].startswith("advice (not required by the header)")
    assert doc["summary"]["advice"] >= 1 and doc["summary"]["fail"] == 0
    assert any(c["where"] == "EAGLE_BACKEND_BAD_HANDLE" for c in r["cites"])
    import xml.etree.ElementTree as ET
    case = next(c for c in ET.parse(junit).getroot().iter("testcase") if c.get("name") == "stream.bad_handle")
    assert case.find("failure") is None and case.find("error") is None and case.find("skipped") is None
    assert case.find("properties/property").get("name") == "advice"
    assert "BAD_HANDLE" in case.find("system-out").text
    table = subprocess.run([sys.executable, "-m", "eagle.check", lib, "--group", "stream"], capture_output=True,
                           text=True, timeout=600, cwd=REPO)
    assert table.returncode == 0
    line = next(ln for ln in table.stdout.splitlines() if ln.split()[:1] == ["stream"])
    assert line.rstrip().endswith("ok")
    assert any(ln.strip().startswith("ADVICE   stream.bad_handle") for ln in table.stdout.splitlines())
    assert "1 advice" in table.stdout
