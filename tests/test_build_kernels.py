"""eagle.kernels / eagle.compile on the cpu kind: compiled through the seam, cached, errors named."""
import os

import numpy as np
import pytest

import eagle
from eagle import kernels

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SRC = r"""
#include <stdint.h>
void twice(void* const* p, int64_t base, int64_t count, int64_t n) {
    double* x = *(double* const*)p[0];
    for (int64_t i = base; i < base + count; ++i) x[i] *= 2.0;
}
"""


def test_load_compiles_once_and_gives_kernel_handles(cpu):
    eagle.compile(SRC, backend=cpu)  # whatever the cache held, the next load is a hit
    k = kernels.load(cpu, SRC, ["twice"])
    assert isinstance(k["twice"].handle, int) and k.twice is k["twice"] and k.backend is cpu
    assert k.cached
    assert kernels.load("cpu", SRC, "twice") is k
    x = np.arange(1000, dtype=np.float64)
    s = cpu.stream()
    s.run(k.twice, [x], x.size)
    s.synchronize()
    assert np.array_equal(x, 2 * np.arange(1000))


def test_a_changed_option_is_a_cache_miss(cpu):
    a = eagle.compile(SRC, backend=cpu, options=["-DA=1"])
    b = eagle.compile(SRC, backend=cpu, options=["-DA=2"])
    c = eagle.compile(SRC, backend=cpu, fast_math=True)
    assert a is not b and a is not c and b is not c


def test_load_from_a_path_finds_its_headers(cpu):
    k = kernels.load(cpu, os.path.join(ROOT, "examples", "oscillator", "oscillator.c"),
                     ["osc_reset", "osc_steps", "osc_single"])  # includes <eagle/kernel.h>
    assert len({k[n].handle for n in ("osc_reset", "osc_steps", "osc_single")}) == 3
    assert k.name == "oscillator.c"


def test_kernel_errors_name_the_problem(cpu):
    with pytest.raises(eagle.EagleError, match="no kernel named 'nope'"):
        kernels.load(cpu, SRC, ["nope"])
    with pytest.raises(eagle.CompileError, match="this is not C") as e:
        kernels.load(cpu, "int ok;\nthis is not C;\n", ["x"], name="bad.c")
    assert "bad.c:2:" in e.value.log
    with pytest.raises(AttributeError, match="no kernel named 'other'"):
        kernels.load(cpu, SRC, ["twice"]).other
    with pytest.raises(ValueError, match="exactly one of source and image"):
        kernels.load(cpu, names=["twice"])
    with pytest.raises(ValueError, match="give backend="):
        eagle.compile(SRC)


def test_an_image_loads_and_junk_is_a_compile_error(cpu, tmp_path):
    import shutil
    import subprocess
    cc = os.environ.get("CC") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc) to build a shared object")
    src, so = tmp_path / "k.c", tmp_path / "k.so"
    src.write_text(SRC)
    subprocess.run([cc, "-shared", "-fPIC", str(src), "-o", str(so)], check=True)
    k = kernels.load(cpu, image=str(so), names=["twice"])
    assert k.twice.handle
    with pytest.raises(eagle.CompileError, match="could not be loaded"):
        kernels.load(cpu, image=b"\x7fELF not really", names=["twice"])
