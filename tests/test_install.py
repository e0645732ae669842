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
