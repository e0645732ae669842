"""python -m eagle.check's command line against hostile input: option values that would waste or
break a run are refused while parsing (exit status 2, nothing run); a library that cannot be found
or loaded is named with its defect (eagle's own ELF check, never a SIGBUS) and, with --json, still
gives a JSON document; $EAGLE_BACKEND_<KIND> naming something other than a file says what it is."""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXIT_NOT_LOADED = 2   # also argparse's status for a refused option value


def _run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "eagle.check", *args], capture_output=True,
                          text=True, timeout=300, cwd=REPO, env=env)


def _env(**extra):
    return {**os.environ, **extra}


# ------------------------------------------------------------------------------ --timeout
@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_a_timeout_that_is_not_a_positive_number_is_refused_while_parsing(value):
    proc = _run("cpu", "--group", "static", "--timeout", value)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "argument --timeout" in proc.stderr and repr(value) in proc.stderr, proc.stderr
    assert proc.stdout == ""   # nothing ran


def test_a_timeout_longer_than_select_can_wait_still_runs(cpu_backend_path):
    # 1e7 s is past epoll's limit (about 24 days): the wait for a result is taken in pieces
    proc = _run("cpu", "--group", "static", "--timeout", "1e7")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 timed out" in proc.stdout


# ------------------------------------------------------------------------------ output files
def _missing_folder(tmp_path):
    return tmp_path / "nonexistent" / "x.xml", "does not exist"


def _folder_is_a_file(tmp_path):
    (tmp_path / "plain").write_text("")
    return tmp_path / "plain" / "x.xml", "is not a folder"


def _path_is_a_folder(tmp_path):
    return tmp_path, "is a folder"


@pytest.mark.parametrize("case", [_missing_folder, _folder_is_a_file, _path_is_a_folder])
def test_an_output_file_that_cannot_be_written_is_refused_before_the_run(tmp_path, case):
    path, why = case(tmp_path)
    proc = _run("cpu", "--group", "static", "--junit", str(path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "argument --junit" in proc.stderr and str(path) in proc.stderr and why in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""   # nothing ran


@pytest.mark.parametrize("path", ["/proc/eagle-check-x.xml", "/proc/self/eagle-check-x.xml"])
def test_an_output_file_that_os_access_allows_but_cannot_be_created_is_refused(path):
    # os.access says yes to root for /proc; the up-front check creates the file to be sure
    proc = _run("cpu", "--group", "static", "--junit", path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "argument --junit" in proc.stderr and path in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""   # nothing ran


def test_a_writable_output_file_is_left_as_it_was_by_the_up_front_check(tmp_path):
    kept = tmp_path / "old.xml"
    kept.write_text("old")
    new = tmp_path / "new.xml"
    from eagle.check.__main__ import _output_file
    assert _output_file(str(kept)) == str(kept) and kept.read_text() == "old"
    assert _output_file(str(new)) == str(new) and not new.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write in any folder")
def test_an_output_file_in_a_folder_that_is_not_writable_is_refused(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        proc = _run("cpu", "--group", "static", "--junit", str(folder / "x.xml"))
    finally:
        folder.chmod(0o700)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "argument --junit" in proc.stderr and "is not writable" in proc.stderr, proc.stderr


# ------------------------------------------------------------------------------ not loaded
@pytest.fixture
def truncated_library(tmp_path, cpu_backend_path):
    """The cpu backend cut to its first 20000 bytes (dlopen of it dies of SIGBUS)."""
    with open(cpu_backend_path, "rb") as f:
        head = f.read(20000)
    lib = tmp_path / "libeagle_cut.so"
    lib.write_bytes(head)
    return str(lib)


def test_a_truncated_library_is_named_by_the_elf_check_not_a_signal(truncated_library):
    proc = _run(truncated_library)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert truncated_library in proc.stderr, proc.stderr
    assert "truncated" in proc.stderr and "the file has 20000 bytes" in proc.stderr, proc.stderr
    assert "signal" not in proc.stderr and "Bus error" not in proc.stderr, proc.stderr


@pytest.fixture(scope="module")
def json_shape(cpu_backend_path):
    """Top-level keys of one library's object in a --json run that checked something."""
    proc = _run("cpu", "--group", "static", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = json.loads(proc.stdout)
    return set(runs[0]), set(runs[0]["summary"])


# Each case: (what is named on the command line, which is also the JSON's "backend"; why it is refused).
def _absent(tmp_path, cut):
    return str(tmp_path / "libeagle_absent.so"), "no file at"


def _not_elf(tmp_path, cut):
    path = tmp_path / "libeagle_bogus.so"
    path.write_text("not an ELF file\n")
    return str(path), "not an ELF file"


def _unknown_kind(tmp_path, cut):
    return "nosuchkindhere", "no nosuchkindhere backend is installed"


def _truncated(tmp_path, cut):
    return cut, "truncated"


@pytest.mark.parametrize("case", [_absent, _not_elf, _unknown_kind, _truncated])
def test_json_says_which_library_did_not_load_and_why(tmp_path, json_shape, truncated_library, case):
    name, why = case(tmp_path, truncated_library)
    proc = _run("--json", name)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    runs = json.loads(proc.stdout)
    keys, summary_keys = json_shape
    assert len(runs) == 1
    assert set(runs[0]) == keys | {"error"}
    assert runs[0]["backend"] == name
    assert why in runs[0]["error"]
    assert set(runs[0]["summary"]) == summary_keys and not any(runs[0]["summary"].values())
    assert runs[0]["results"] == []
    assert why in proc.stderr   # the line on stderr stays


# ------------------------------------------------------------------------------ $EAGLE_BACKEND_<KIND>
def _a_folder(tmp_path):
    return str(tmp_path), "which is a directory"


def _a_device(tmp_path):
    return os.devnull, "which is not a regular file"


@pytest.mark.parametrize("case", [_a_folder, _a_device])
def test_an_env_var_naming_something_other_than_a_file_says_what_it_is(tmp_path, case):
    target, what = case(tmp_path)
    proc = _run("cpu", env=_env(EAGLE_BACKEND_CPU=target))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"$EAGLE_BACKEND_CPU names '{target}', {what}" in proc.stderr, proc.stderr
    assert "does not exist" not in proc.stderr
    # eagle.backend() gives the same words (the message comes from eagle's resolver)
    proc = subprocess.run([sys.executable, "-c", "import eagle; eagle.backend('cpu')"], capture_output=True,
                          text=True, timeout=300, cwd=REPO, env=_env(EAGLE_BACKEND_CPU=target))
    assert proc.returncode != 0 and "BackendLoadError" in proc.stderr, proc.stderr
    assert f"names '{target}', {what}" in proc.stderr, proc.stderr
