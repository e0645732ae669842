"""Seam minor 7 on a device kind: one source for cpu, cuda and opencl, device arrays through DLPack.

Each test that every device kind must pass takes the `device` fixture (tests/conftest.py): it runs
on cuda (the H200, with the cuda backend built) and on opencl (PoCL in CI, $EAGLE_BACKEND_OPENCL),
each skipped with its own reason where that kind or its device is absent. Every test here runs with
no nvcc on PATH (the fixture removes it, and checks), since cuda kernels are compiled by NVRTC
loaded at run time. NVRTC comes from the toolkit's lib64 or the nvidia-cuda-nvrtc wheel (eagle's
cuda extra: `pip install ".[cuda]"`). The CuPy, torch and JAX round trips are cuda's alone."""
import importlib.util
import os
import shutil

import numpy as np
import pytest

import eagle

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
# Samples per run of the examples: the H200 takes 100 000 in milliseconds; PoCL runs them on the
# CI machine's few cores, where 5 000 keep each test to about a second.
SAMPLES = {"cuda": 100_000, "opencl": 5_000}
# DLPack's device type of each kind (dlpack.h: kDLCUDA 2, kDLOpenCL 4).
DLPACK_TYPE = {"cuda": 2, "opencl": 4}
# How each kind's compiler names the line of an error in bad.c (NVRTC: bad.c(4); clang-based
# OpenCL compilers such as PoCL's: bad.c:4:).
ERROR_LINE = {"cuda": "bad.c(4)", "opencl": "bad.c:4:"}


@pytest.fixture(autouse=True)
def no_nvcc(monkeypatch):
    """PATH without any directory that holds nvcc: the kernels must not need it."""
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not os.path.exists(os.path.join(d, "nvcc"))]
    monkeypatch.setenv("PATH", os.pathsep.join(dirs))
    monkeypatch.delenv("NVCC", raising=False)
    assert shutil.which("nvcc") is None


def _example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}",
                                                  os.path.join(EXAMPLES, name, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_device_kind_compiles_and_a_second_compile_is_a_cache_hit(device):
    src = "#include <eagle/kernel.h>\nEAGLE_KERNEL(twice, (double*, x)) { (void)n; x[i] *= 2.0; }\n"
    m = eagle.compile(src, backend=device, kernels=["twice", "twice_active"], cache=False)
    x = device.asarray(np.arange(1000.0))
    s = device.stream()
    m.twice.run([x], 1000, stream=s)
    s.synchronize()
    assert np.array_equal(x.numpy(), 2 * np.arange(1000.0))
    a = eagle.compile(src, backend=device)
    assert eagle.compile(src, backend=device) is a and a.cached


def test_eagle_run_launches_a_kernel_on_its_own_modules_backend(device):
    """eagle.run takes the backend from the kernel's module: a device kernel given host arrays is
    refused, naming where they live (it used to go to the cpu backend, which would have called
    the device's function handle as a host function)."""
    src = "#include <eagle/kernel.h>\nEAGLE_KERNEL(twice, (double*, x)) { (void)n; x[i] *= 2.0; }\n"
    m = eagle.compile(src, backend=device)
    with pytest.raises(eagle.EagleValueError, match="does not serve"):
        eagle.run(m.twice, [np.arange(8.0)], 8)
    x = device.asarray(np.arange(8.0))
    eagle.run(m.twice, [x], 8)
    assert np.array_equal(x.numpy(), 2 * np.arange(8.0))


def test_a_syntax_error_is_a_compile_error_naming_the_line(device):
    src = "#include <eagle/kernel.h>\nEAGLE_KERNEL(k, (double*, x))\n{\n    x[i] = = 1.0;\n}\n"
    with pytest.raises(eagle.CompileError) as e:
        eagle.compile(src, backend=device, name="bad.c")
    assert ERROR_LINE[device.kind] in e.value.log


@pytest.mark.parametrize("loop, reorder", [("drain", None), ("while", None), ("while", 0.5)])
def test_oscillator_equals_cpu_bit_for_bit(device, cpu, loop, reorder):
    osc = _example("oscillator")
    n = SAMPLES[device.kind]
    xg, vg = osc.run(device.kind, n, K=64, reorder=reorder, loop=loop, exact=True)
    xc, vc = osc.run("cpu", n, K=64, reorder=reorder, loop=loop, exact=True)
    rel = np.max(np.abs(xg - xc) / np.maximum(np.abs(xc), 1e-300))
    assert rel <= 1e-12
    assert np.array_equal(xg, xc) and np.array_equal(vg, vc)  # bit-exact mode: the same bits


def test_oscillator_in_the_default_mode_agrees_with_exact_to_rounding(device, cpu):
    """The default mode fuses multiply-adds (NVRTC --fmad=true; OpenCL C's FP_CONTRACT ON, which
    PoCL's clang honours with the host's FMA instructions): the bits may differ from exact mode's,
    the values by a few roundings over up to 999 RK4 steps."""
    osc = _example("oscillator")
    n = SAMPLES[device.kind]
    xe, _ = osc.run(device.kind, n, K=64, exact=True)
    xd, _ = osc.run(device.kind, n, K=64, exact=False)
    xc, _ = osc.run("cpu", n, K=64, exact=False)
    for got in (xd, xc):
        assert np.max(np.abs(got - xe) / np.maximum(np.abs(xe), 1e-300)) <= 1e-12
    assert not np.array_equal(xd, xe)  # the kind did fuse: some sample's bits changed


def test_barrier_equals_cpu_bit_for_bit(device, cpu):
    bar = _example("barrier")
    n = 2 * SAMPLES[device.kind]
    pg, tg = bar.run(device.kind, n)  # compiled exact=True (examples/barrier/barrier.py)
    pc, tc = bar.run("cpu", n)
    assert np.array_equal(tg, tc)
    assert np.array_equal(pg, pc)
    assert abs(pg.mean() - pc.mean()) <= 1e-12 * max(1.0, abs(pc.mean()))


def test_fast_math_still_agrees_to_rounding(device, cpu):
    src = open(os.path.join(EXAMPLES, "oscillator", "oscillator.c")).read()
    osc = _example("oscillator")
    n = 4096
    omega, zeta, steps = osc.workload(n)
    outs = []
    for b in (device, cpu):
        m = eagle.compile(src, backend=b, fast_math=True, name="oscillator.c")
        x, v, done, mask = b.empty(n), b.empty(n), b.empty(n, "int32"), b.empty(n, "uint8")
        om, ze, tg = b.asarray(omega), b.asarray(zeta), b.asarray(steps)
        s = b.stream()
        m.osc_reset.run([x, v, done, mask], n, stream=s)
        m.osc_steps.run([x, v, om, ze, done, tg, mask, 1000], n, stream=s)
        s.synchronize()
        outs.append(x.numpy())
    assert np.allclose(outs[0], outs[1], rtol=1e-9, atol=1e-12)


def test_device_memory_is_aligned_and_freed(device):
    arrs = [device.empty(n, "uint8") for n in (1, 3, 1000, 1 << 20)]
    assert all(a.address % 256 == 0 for a in arrs)
    assert arrs[2].__dlpack_device__() == (DLPACK_TYPE[device.kind], 0)
    del arrs


@pytest.mark.gpu
def test_arrays_round_trip_with_cupy_without_a_copy(cuda):
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    x = cuda.asarray(np.arange(10.0))
    c = cp.from_dlpack(x)
    assert c.data.ptr == x.address
    c *= 3
    cp.cuda.Device().synchronize()
    assert np.array_equal(x.numpy(), 3 * np.arange(10.0))
    assert cp.asarray(x).data.ptr == x.address       # __cuda_array_interface__
    back = cp.arange(5, dtype=cp.float64)
    s = cuda.stream()
    z = cuda.empty(5)
    cuda.copy(z, back, stream=s)
    s.synchronize()
    assert np.array_equal(z.numpy(), np.arange(5.0))


@pytest.mark.gpu
def test_arrays_round_trip_with_torch_without_a_copy(cuda):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    x = cuda.asarray(np.arange(10.0))
    t = torch.from_dlpack(x)
    assert t.data_ptr() == x.address and t.device.type == "cuda"
    t.mul_(2)
    torch.cuda.synchronize()
    assert np.array_equal(x.numpy(), 2 * np.arange(10.0))


@pytest.mark.gpu
def test_arrays_round_trip_with_jax_without_a_copy(cuda):
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    if not gpus:
        pytest.skip("JAX has no GPU here")
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)  # else JAX converts float64 to float32 (a copy)
    x = cuda.asarray(np.arange(16.0))
    j = jnp.from_dlpack(x)
    assert j.unsafe_buffer_pointer() == x.address
    assert np.array_equal(np.asarray(j), np.arange(16.0))
