"""The pin tests/expected_backend_symbols.txt and `python -m build_tools pins`."""

import os
import re
import subprocess
import sys
from pathlib import Path

from build_tools import parse as seam_parse

ROOT = Path(__file__).resolve().parent.parent
HEADER = ROOT / "eagle_backend.h"
PIN = ROOT / "tests" / "expected_backend_symbols.txt"
HEADER_TEXT = HEADER.read_text()


def _pins(*args, env_extra=None, unset_ci=True):
    env = dict(os.environ)
    if unset_ci:
        env.pop("CI", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "build_tools", "pins", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True)


def _copy(tmp_path, text):
    header = tmp_path / "eagle_backend.h"
    header.write_text(text)
    return header


def test_committed_pin_agrees_with_the_header():
    result = _pins("--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_pin_is_sorted_commented_and_complete():
    lines = PIN.read_text().splitlines()
    assert lines[0] == "# generated from eagle_backend.h by: python -m build_tools pins --write"
    names = [line for line in lines if not line.startswith("#")]
    assert names == sorted(names, key=str.encode)
    assert set(names) == set(seam_parse.load(HEADER).symbols)
    assert len(names) == len(set(names)) == 66


def test_renaming_a_symbol_fails_naming_both(tmp_path):
    header = _copy(tmp_path, HEADER_TEXT.replace("eagle_backend_fork_size(", "eagle_backend_fork_count("))
    result = _pins("--check", "--header", str(header))
    assert result.returncode == 1
    assert "added:   eagle_backend_fork_count (group fork, since 0)" in result.stdout
    assert re.search(r"removed: eagle_backend_fork_size \(was group fork, since 0 in ", result.stdout)


def test_removing_a_symbol_fails_naming_it(tmp_path):
    declaration = ("/* @eagle group=per-symbol since=6\n * Frees memory from host_alloc. NULL-safe. */\n"
                   "void eagle_backend_host_free(void* ptr);\n")
    assert declaration in HEADER_TEXT
    header = _copy(tmp_path, HEADER_TEXT.replace(declaration, ""))
    result = _pins("--check", "--header", str(header))
    assert result.returncode == 1
    assert re.search(r"removed: eagle_backend_host_free \(was group per-symbol, since 6 in ", result.stdout)
    assert "added:" not in result.stdout


def test_adding_a_symbol_fails_naming_it_with_its_group(tmp_path):
    anchor = "#ifdef __cplusplus\n} /* extern"
    addition = ("/* @eagle group=per-symbol since=6\n * Unregisters nothing; a test symbol. */\n"
                "eagle_backend_status eagle_backend_host_unregister(void* ptr);\n\n")
    header = _copy(tmp_path, HEADER_TEXT.replace(anchor, addition + anchor))
    result = _pins("--check", "--header", str(header))
    assert result.returncode == 1
    assert "added:   eagle_backend_host_unregister (group per-symbol, since 6)" in result.stdout
    assert "removed:" not in result.stdout


def test_an_unsorted_pin_fails(tmp_path):
    lines = PIN.read_text().splitlines()
    pin = tmp_path / "pin.txt"
    pin.write_text("\n".join([lines[0], *reversed(lines[1:])]) + "\n")
    result = _pins("--check", "--pin", str(pin))
    assert result.returncode == 1
    assert "canonical form" in result.stdout


def test_write_is_refused_under_ci(tmp_path):
    pin = tmp_path / "pin.txt"
    pin.write_text("stale\n")
    result = _pins("--write", "--pin", str(pin), env_extra={"CI": "1"}, unset_ci=False)
    assert result.returncode == 2
    assert "CI" in result.stderr
    assert pin.read_text() == "stale\n"


def test_write_reproduces_the_committed_pin(tmp_path):
    pin = tmp_path / "pin.txt"
    result = _pins("--write", "--pin", str(pin))
    assert result.returncode == 0, result.stderr
    assert pin.read_text() == PIN.read_text()
    assert _pins("--check", "--pin", str(pin)).returncode == 0


def test_check_of_a_broken_header_fails_with_file_line(tmp_path):
    header = _copy(tmp_path, HEADER_TEXT.replace("eagle_backend_status eagle_backend_probe(void);",
                                                 "eagle_backend_status eagle_backend_probe(foo_t x);"))
    result = _pins("--check", "--header", str(header))
    assert result.returncode == 1
    assert re.match(rf"{re.escape(str(header))}:\d+: unknown type 'foo_t'", result.stderr)
