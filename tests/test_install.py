"""The installed package: the generated modules and the cpu backend sit beside it, and importing
eagle parses nothing (no pycparser, no cdef) — what a user who ran `pip install .` gets."""
import os
import subprocess
import sys

import eagle


def _run(code):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), timeout=60)


def test_import_eagle_and_the_cffi_module_leaves_pycparser_unloaded():
    r = _run("import sys, eagle, eagle._seam_ffi, eagle._seam_meta; "
             "b = eagle.backend('cpu'); "
             "print('pycparser' in sys.modules, 'build_tools' in sys.modules, b.kind)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False", "cpu"]


def test_the_cpu_backend_is_beside_the_generated_modules():
    from eagle import _seam_ffi
    here = os.path.dirname(os.path.abspath(_seam_ffi.__file__))
    assert os.path.isfile(os.path.join(here, "_seam_meta.py"))
    if "EAGLE_BACKEND_CPU" not in os.environ:
        assert eagle.backends()["cpu"] == os.path.join(here, "libeagle_cpu.so")


def test_import_eagle_loads_no_backend_and_no_numpy():
    r = _run("import sys, eagle; print('eagle._loader' in sys.modules, 'numpy' in sys.modules)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False"]


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _from_checkout_or_skip():
    if os.path.exists(os.path.join(ROOT, "eagle", "_seam_ffi.py")):
        import pytest
        pytest.skip("this checkout holds generated modules of its own (an in-place build): nothing is borrowed")


def test_the_readme_commands_from_the_checkout_warn_nothing_when_the_header_is_the_same():
    # issue 33: the installed copy generated from this very header is what this checkout would
    # generate, so running from the checkout says nothing (-W error turns any warning into a failure)
    _from_checkout_or_skip()
    r = subprocess.run([sys.executable, "-W", "error", "-c",
                        "import eagle; eagle.backend('cpu'); print(eagle.BORROWED_FROM is not None)"],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.split() == ["True"]


def test_a_checkout_whose_header_differs_from_the_installed_one_refuses_to_import(tmp_path):
    _from_checkout_or_skip()
    import shutil
    shutil.copytree(os.path.join(ROOT, "eagle"), tmp_path / "eagle", ignore=shutil.ignore_patterns("__pycache__"))
    with open(os.path.join(ROOT, "eagle_backend.h"), encoding="utf-8") as f:
        (tmp_path / "eagle_backend.h").write_text(f.read() + "\n/* one more line */\n")
    r = subprocess.run([sys.executable, "-c", "import eagle"], capture_output=True, text=True, cwd=str(tmp_path),
                       timeout=60)
    assert r.returncode != 0 and "generated from another" in r.stderr and "eagle_backend.h" in r.stderr, r.stderr
