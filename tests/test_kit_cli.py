"""`python -m eagle new-backend DIR KIND` refusing what it cannot do: a kind that is eagle's own
(cmake --install would put the new libeagle_<kind>.so over eagle's) or not a kind at all, and a DIR
the OS will not let it write. Each refusal is one line on stderr naming the kind, or the path and the
OS's reason, with exit status 2, and leaves nothing behind, also when the failure comes midway
through the files. The kit itself is tested in test_check_kit.py."""
import os
import resource
import subprocess
import sys

import pytest

from eagle._device_kind import GPU_KINDS, KIND_OF_DEVICE_TYPE

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# eagle's own kinds, from the one table that names them, and the name that asks for a GPU kind
EAGLE_KINDS = sorted(set(KIND_OF_DEVICE_TYPE.values()) | GPU_KINDS | {"gpu"})


def new_backend(directory, kind, cwd, preexec_fn=None):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONDONTWRITEBYTECODE="1", PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-m", "eagle", "new-backend", str(directory), kind],
                          capture_output=True, text=True, timeout=120, cwd=str(cwd), env=env,
                          preexec_fn=preexec_fn)


def eagle_main(*args):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONDONTWRITEBYTECODE="1", PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-m", "eagle", *args], capture_output=True, text=True, timeout=120,
                          env=env)


@pytest.mark.parametrize("args", [(), ("-h",)])
def test_python_m_eagle_says_what_it_does_and_names_new_backend(args):
    proc = eagle_main(*args)
    assert proc.returncode == 0 and proc.stderr == "", (proc.returncode, proc.stderr)
    for word in ("--cmake-dir", "--include-dir", "--package-dir", "new-backend DIR KIND"):
        assert word in proc.stdout, (word, proc.stdout)


def test_python_m_eagle_with_an_unknown_argument_names_new_backend_in_its_usage():
    proc = eagle_main("--nonsense")
    assert proc.returncode == 2 and "new-backend" in proc.stderr.splitlines()[0], proc.stderr


def assert_refused(proc, *words):
    """Exit status 2 and one line on stderr holding every one of ``words``, no traceback."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, (proc.returncode, proc.stderr)
    assert all(w in lines[0] for w in words), (words, proc.stderr)
    assert proc.stdout == "", proc.stdout


@pytest.mark.parametrize("kind", EAGLE_KINDS)
def test_new_backend_refuses_eagles_own_kinds(tmp_path, kind):
    proc = new_backend(tmp_path / "b", kind, tmp_path)
    assert_refused(proc, repr(kind), "reserved")
    assert not (tmp_path / "b").exists()


def test_new_backend_refuses_a_kind_with_a_trailing_newline(tmp_path):
    proc = new_backend(tmp_path / "b", "nl\n", tmp_path)
    assert_refused(proc, "kind", repr("nl\n"))
    assert not (tmp_path / "b").exists()


def _os_refusals(tmp_path):
    (tmp_path / "file").write_text("")
    cases = {"a parent that is a file": str(tmp_path / "file" / "b")}
    for path in ("/proc/eagle_new_backend", "/sys/eagle_new_backend"):  # the OS makes no folder there
        if os.path.isdir(os.path.dirname(path)):
            cases[path] = path
    return cases


@pytest.mark.parametrize("case", ["a parent that is a file", "/proc/eagle_new_backend", "/sys/eagle_new_backend"])
def test_new_backend_names_the_path_and_the_reason_when_the_os_refuses(tmp_path, case):
    cases = _os_refusals(tmp_path)
    if case not in cases:
        pytest.skip(f"no {os.path.dirname(case)} here")
    path = cases[case]
    proc = new_backend(path, "mykind", tmp_path)
    assert_refused(proc, f"'{path}'", "cannot write")
    assert "Traceback" not in proc.stderr and not os.path.exists(path)


def test_a_failure_midway_leaves_nothing_behind(tmp_path):
    # the skeleton written in full, to pick a file-size limit that lets some files through and not all
    ref = tmp_path / "ref"
    assert new_backend(ref, "mykind", tmp_path).returncode == 0
    limit = 1024
    sizes = {name: (ref / name).stat().st_size for name in os.listdir(ref)}
    assert min(sizes.values()) <= limit < max(sizes.values()), sizes

    def small_files():  # in the child: writing past `limit` bytes fails with EFBIG (Python ignores SIGXFSZ)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    target = tmp_path / "new" / "parents" / "b"
    proc = new_backend(target, "mykind", tmp_path, preexec_fn=small_files)
    assert_refused(proc, str(target), "File too large")
    assert not (tmp_path / "new").exists(), sorted(os.listdir(tmp_path / "new"))
