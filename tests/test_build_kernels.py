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


def test_a_changed_option_or_floating_point_mode_is_a_cache_miss(cpu):
    a = eagle.compile(SRC, backend=cpu, options=["-DA=1"])
    b = eagle.compile(SRC, backend=cpu, options=["-DA=2"])
    c = eagle.compile(SRC, backend=cpu, fast_math=True)
    d = eagle.compile(SRC, backend=cpu, exact=True)
    e = eagle.compile(SRC, backend=cpu)
    assert len({id(m) for m in (a, b, c, d, e)}) == 5
    assert eagle.compile(SRC, backend=cpu, exact=True) is d and eagle.compile(SRC, backend=cpu) is e


def test_exact_and_fast_math_together_or_not_bools_are_refused(cpu):
    with pytest.raises(eagle.EagleValueError, match="exact=True and fast_math=True"):
        eagle.compile(SRC, backend=cpu, exact=True, fast_math=True)
    with pytest.raises(eagle.EagleTypeError, match="exact must be a bool, got a str"):
        eagle.compile(SRC, backend=cpu, exact="yes")
    with pytest.raises(eagle.EagleTypeError, match="fast_math must be a bool, got a int"):
        eagle.compile(SRC, backend=cpu, fast_math=1)


# A module_from_source that says which flags it was given, and compiles nothing.
_FLAGS_SEEN = ('(void)source; (void)source_bytes; (void)out; if (log) *log = NULL; '
               'snprintf(stub_error, sizeof stub_error, "stub: flags=%u", desc->flags); '
               'return EAGLE_BACKEND_COMPILE_FAILED;')


@pytest.mark.parametrize("minor, want", [(8, {"default": 2, "exact": 0, "fast": 1}),
                                         (7, {"default": 0, "exact": 0, "fast": 1})])
def test_the_default_asks_for_contraction_only_from_a_backend_of_minor_8(make_stub, minor, want):
    """Minor 8 added EAGLE_BACKEND_MODULE_CONTRACT (2); a minor-7 backend refuses unknown flags, so
    eagle asks it for bit-exact code (0), which is one of the results contraction allows."""
    import re
    b = eagle.backend(make_stub(f"minor{minor}", minor=minor,
                                bodies={"eagle_backend_module_from_source": _FLAGS_SEEN}))
    assert b.version == (1, minor)
    seen = {}
    for mode, kw in (("default", {}), ("exact", {"exact": True}), ("fast", {"fast_math": True})):
        with pytest.raises(eagle.CompileError) as e:
            eagle.compile(SRC, backend=b, cache=False, **kw)
        seen[mode] = int(re.search(r"flags=(\d+)", str(e.value)).group(1))
    assert seen == want


def test_the_cpu_backend_refuses_contract_with_fast_math(cpu):
    """The seam's rule (minor 8): one floating-point mode per module; both flags are INVALID_ARGUMENT."""
    from eagle._seam_ffi import ffi
    from eagle.module import _desc
    keep = []
    desc = _desc("test", -1, "k.c", [eagle.include_dir()], [], None, 1 | 2, keep)
    out, logp = ffi.new("eagle_backend_module*"), ffi.new("char**")
    data = SRC.encode()
    assert cpu._f.module_from_source(desc, data, len(data), out, logp) == 2  # INVALID_ARGUMENT
    assert "FAST_MATH and CONTRACT" in ffi.string(cpu._f.last_error()).decode()


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
