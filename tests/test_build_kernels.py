"""eagle.kernels: compiled C kernels for the cpu kind, CUDA images compiled (not run) where nvcc is."""
import os
import shutil

import numpy as np
import pytest

from eagle import kernels

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SRC = r"""
#include <stdint.h>
void twice(void* const* p, int64_t base, int64_t count, int64_t n) {
    double* x = *(double* const*)p[0];
    for (int64_t i = base; i < base + count; ++i) x[i] *= 2.0;
}
"""


def test_load_cpu_compiles_once_and_returns_function_pointers(cpu, tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLE_KERNEL_CACHE", str(tmp_path))
    k = kernels.load_cpu(SRC, ["twice"])
    assert isinstance(k["twice"], int) and k.twice == k["twice"] and k.kind == "cpu"
    assert len([f for f in os.listdir(tmp_path) if f.endswith(".so")]) == 1
    assert kernels.load("cpu", SRC, "twice") is k
    x = np.arange(1000, dtype=np.float64)
    s = cpu.stream()
    s.run(k.twice, [x], x.size)
    s.synchronize()
    assert np.array_equal(x, 2 * np.arange(1000))


def test_load_cpu_from_a_path_finds_its_headers():
    k = kernels.load_cpu(os.path.join(ROOT, "benchmarks", "kernels", "oscillator_cpu.c"),
                         ["osc_reset", "osc_steps", "osc_single"])
    assert len(set(k.values())) == 3


def test_kernel_errors_name_the_problem(tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLE_KERNEL_CACHE", str(tmp_path))
    with pytest.raises(ValueError, match="no kernel named 'nope'"):
        kernels.load_cpu(SRC, ["nope"])
    with pytest.raises(RuntimeError, match="compiling failed"):
        kernels.load_cpu("this is not C\n", ["x"])
    with pytest.raises(ValueError, match="no kernel loader for the 'metal' kind"):
        kernels.load("metal", SRC, ["twice"])
    with pytest.raises(AttributeError, match="no kernel 'other'"):
        kernels.load_cpu(SRC, ["twice"]).other


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_the_oscillator_cuda_kernels_compile_to_a_fatbin(tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLE_KERNEL_CACHE", str(tmp_path))
    path = kernels.compile_cuda(os.path.join(ROOT, "benchmarks", "kernels", "oscillator_cuda.cu"))
    data = open(path, "rb").read()
    assert path.endswith(".fatbin") and len(data) > 1000
    for name in (b"osc_reset", b"osc_steps", b"osc_single"):
        assert name in data
