"""Careless and hostile arguments to eagle.kernels.load, eagle.compile, eagle.load_image and
Module.kernel on the cpu backend. Each is refused with an EagleError that names the argument, before
anything reaches C: the names of kernels, a source file that is not there (never compiled as source
text), a NUL in any string given to C (C would cut it short: 'k\\0junk' was kernel k), a lone
surrogate, a device out of the seam's int32 range or not an integer, an image path that names no
file or that is source text. An image is any bytes-like object. Each case runs in a fresh
interpreter (tests/_subproc.py)."""
import shutil

import pytest

from _subproc import run_snippet

SETUP = """
import os, pathlib, shutil, subprocess
import eagle
import eagle.kernels as ek
cpu = eagle.backend("cpu")
SRC = "#include <eagle/kernel.h>\\nEAGLE_KERNEL(k, (double*, v)) { (void)n; v[i] = 2; }\\n"
os.mkdir("adir")

def image():
    # a shared object holding kernel k, as the cpu kind loads it
    with open("k.c", "w") as f:
        f.write(SRC)
    subprocess.run([shutil.which("cc"), "-shared", "-fPIC", "-I", eagle.include_dir(), "k.c", "-o", "k.so"],
                   check=True)
    with open("k.so", "rb") as f:
        return f.read()
"""

# (id, snippet, expected exception class name, strings the message must hold)
REFUSED = [
    ("names None", "ek.load(cpu, SRC, None)", "EagleTypeError", ["names", "NoneType"]),
    ("names an int", "ek.load(cpu, SRC, 5)", "EagleTypeError", ["names", "int"]),
    ("names with an int item", "ek.load(cpu, SRC, ['k', 5])", "EagleTypeError", ["names", "int"]),
    ("a missing source file", "ek.load(cpu, 'kernels_typo.c', 'k')", "EagleValueError",
     ["kernels_typo.c", "does not exist"]),
    ("a missing source file without a suffix", "eagle.compile('src/kernels', backend=cpu)", "EagleValueError",
     ["src/kernels", "does not exist"]),
    ("a missing source path object", "eagle.compile(pathlib.Path('nope.cu'), backend=cpu)", "EagleValueError",
     ["nope.cu", "does not exist"]),
    ("a folder as the source", "eagle.compile('adir', backend=cpu)", "EagleValueError", ["adir", "is a directory"]),
    ("a NUL in a kernel name", "ek.load(cpu, SRC, 'k\\0junk')", "EagleValueError", ["NUL", "kernel name"]),
    ("a NUL in a kernel name on a cache hit", "eagle.compile(SRC, backend=cpu)\n"
                                              "eagle.compile(SRC, backend=cpu, kernels=['k\\0junk'])",
     "EagleValueError", ["NUL", "kernel name"]),
    ("a NUL in a kernel looked up", "eagle.compile(SRC, backend=cpu)['k\\0junk']", "EagleValueError", ["NUL"]),
    ("a NUL in an option", "eagle.compile(SRC, backend=cpu, options=['-O2\\0junk'], cache=False)",
     "EagleValueError", ["options", "NUL"]),
    ("a NUL in the compiler", "eagle.compile(SRC, backend=cpu, compiler='/usr/bin/cc\\0junk', cache=False)",
     "EagleValueError", ["compiler", "NUL"]),
    ("a NUL in the source's name", "eagle.compile(SRC, backend=cpu, name='a\\0b.c', cache=False)",
     "EagleValueError", ["name", "NUL"]),
    ("a NUL in an include folder", "eagle.compile(SRC, backend=cpu, include_dirs=['adir\\0x'], cache=False)",
     "EagleValueError", ["include_dirs", "NUL"]),
    ("a NUL in the source file's name", "eagle.compile('k\\0.c', backend=cpu)", "EagleValueError", ["NUL"]),
    ("a NUL in an image's name", "eagle.load_image(image(), backend=cpu, name='i\\0x')", "EagleValueError",
     ["name", "NUL"]),
    ("a device beyond int32", "eagle.compile(SRC, backend=cpu, device=1 << 40)", "EagleValueError",
     ["device", "2147483647"]),
    ("a device below -1", "eagle.compile(SRC, backend=cpu, device=-2)", "EagleValueError", ["device", ">= -1"]),
    ("a device as a str", "eagle.compile(SRC, backend=cpu, device='0')", "EagleTypeError", ["device", "str"]),
    ("a device as a str on an image", "eagle.load_image(image(), backend=cpu, device='0')", "EagleTypeError",
     ["device", "str"]),
    ("the source's name an int", "eagle.compile(SRC, backend=cpu, name=5)", "EagleTypeError", ["name", "int"]),
    ("the compiler an int", "eagle.compile(SRC, backend=cpu, compiler=5)", "EagleTypeError", ["compiler", "int"]),
    ("a kernel name an int", "eagle.compile(SRC, backend=cpu)[5]", "EagleTypeError", ["kernel name", "int"]),
    ("a surrogate in a kernel name", "ek.load(cpu, SRC, 'k\\udc80')", "EagleValueError",
     ["kernel name", "surrogate"]),
    ("a missing image file", "eagle.load_image('nope.so', backend=cpu)", "EagleValueError",
     ["nope.so", "does not exist"]),
    ("a folder as the image", "eagle.load_image('adir', backend=cpu)", "EagleValueError", ["adir", "is a directory"]),
    ("source text as the image", "eagle.load_image(SRC, backend=cpu)", "EagleValueError",
     ["several lines", "eagle.compile"]),
    ("None as the image", "eagle.load_image(None, backend=cpu)", "EagleTypeError", ["image", "NoneType"]),
]


def _needs_cc(code):
    if "image()" in code and shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) to build a shared object")


@pytest.mark.parametrize("code,expected,match", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_a_bad_argument_is_refused_with_an_eagle_error_naming_it(cpu, code, expected, match):
    _needs_cc(code)
    out = run_snippet(SETUP + code)
    out.expect_raises(expected, match=match)
    assert out.eagle_error, out.describe()


def test_one_line_source_text_still_compiles_and_a_missing_file_beside_it_is_named(cpu):
    out = run_snippet(SETUP + """
one_line = "EAGLE_KERNEL(k, (double*, v)) { (void)n; v[i] = 3; }"
with open("one.c", "w") as f:
    f.write(SRC)
result = [eagle.compile("#include <eagle/kernel.h>\\n" + one_line, backend=cpu).k.name,
          eagle.compile("#include \\"one.c\\"", backend=cpu, include_dirs=["."]).k.name,
          eagle.compile("one.c", backend=cpu).k.name]
try:
    eagle.compile("two.c", backend=cpu)
except eagle.EagleValueError as e:
    result.append(str(e))
""")
    got = out.expect_ok()
    assert got[:3] == ["k", "k", "k"] and "two.c" in got[3] and "does not exist" in got[3], got


@pytest.mark.parametrize("wrap", ["memoryview(image())", "memoryview(bytearray(image()))",
                                  "np.frombuffer(image(), np.uint8)"])
def test_an_image_is_any_bytes_like_object(cpu, wrap):
    _needs_cc("image()")
    out = run_snippet(SETUP + f"""
import numpy as np
m = eagle.load_image({wrap}, backend=cpu, kernels=["k"])
result = [m.k.name, m.name]
""")
    assert out.expect_ok() == ["k", "image"]
