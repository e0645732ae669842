"""examples/: each runs on cpu at small N and matches its numpy reference (bit for bit: both are
compiled bit-exact and the references evaluate the same operations in the same order); where NVRTC
is installed (the toolkit or eagle's cuda extra) the same sources compile for cuda too, with
no GPU and no nvcc."""
import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import eagle
from _nvrtc import BIT_EXACT, nvrtc_compile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")


def _example(name):
    path = os.path.join(EXAMPLES, name, f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("loop, reorder", [("drain", None), ("while", None), ("while", 0.5)])
def test_oscillator_example_equals_numpy_bit_for_bit(cpu, loop, reorder):
    osc = _example("oscillator")
    n = 1500
    x, v = osc.run("cpu", n, K=32, reorder=reorder, loop=loop)
    rx, rv = osc.numpy_reference(*osc.workload(n))
    assert np.array_equal(x, rx) and np.array_equal(v, rv)


def test_barrier_example_equals_numpy_bit_for_bit_and_paths_stop_at_different_times(cpu):
    bar = _example("barrier")
    n = 2000
    payoff, t = bar.run("cpu", n, K=8)
    rp, rt = bar.numpy_reference(n, **bar.PARAMS)
    assert np.array_equal(payoff, rp) and np.array_equal(t, rt)
    T = bar.PARAMS["T"]
    knocked = t < T
    assert 0.2 < knocked.mean() < 0.8          # many paths stop early, many run to maturity
    assert np.all(payoff[knocked] == 0.0) and np.any(payoff[~knocked] > 0)
    assert len(np.unique(t[knocked])) > 50      # they stop at many different steps


def test_barrier_random_numbers_do_not_depend_on_launch_shape(cpu):
    bar = _example("barrier")
    a, _ = bar.run("cpu", 700, K=1)
    b, _ = bar.run("cpu", 700, K=250)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("name", ["oscillator", "barrier"])
def test_examples_run_as_scripts(cpu, name):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, name, f"{name}.py"), "--backend", "cpu",
                           "--n", "500"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "on cpu" in proc.stdout


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_lorenz_bifurcation_rests_where_theory_says_and_is_chaotic_beyond(cpu):
    """eagle.ode's example (issue 26) against the Lorenz system's known structure: for rho < 1 the
    origin attracts (z -> 0); for 1 < rho < 13.9 the fixed points with z = rho - 1 attract without
    oscillating for long (by t = 40 scipy's DOP853 is within 5e-8 of them up to rho = 12); in the
    chaotic band z keeps having maxima after the transient, above rho - 1."""
    lb = _load(os.path.join(EXAMPLES, "ode", "lorenz_bifurcation.py"), "example_lorenz_bifurcation")
    rho, sol = lb.run("cpu", 400)
    assert np.all(sol.status == 0)
    z = np.asarray(sol.y)[:, 2]
    origin, fixed = rho < 0.8, (rho > 1.5) & (rho < 12.0)
    assert origin.sum() >= 1 and fixed.sum() >= 20
    assert np.all(np.abs(z[origin]) < 1e-4), z[origin]
    assert np.all(np.abs(z[fixed] - (rho[fixed] - 1.0)) < 1e-4), np.max(np.abs(z[fixed] - (rho[fixed] - 1.0)))
    assert np.asarray(sol.ys).shape == (400, 3, lb.N_EVAL)
    i, zmax = lb.local_maxima(np.asarray(sol.ys)[:, 2, :])
    chaotic = np.nonzero((rho > 30.0) & (rho < 90.0))[0]
    counts = np.bincount(i, minlength=len(rho))
    assert np.all(counts[chaotic] >= 5), counts[chaotic]
    assert np.all(zmax[np.isin(i, chaotic)] > rho[i[np.isin(i, chaotic)]] - 1.0)


def test_lorenz_bifurcation_runs_as_a_script_and_writes_its_picture(cpu, tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), MPLBACKEND="Agg")
    env.pop("DISPLAY", None)
    out = tmp_path / "lorenz.png"
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, "ode", "lorenz_bifurcation.py"), "--backend", "cpu",
                           "--n", "200", "--out", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "200 Lorenz trajectories on cpu" in proc.stdout
    try:
        import matplotlib  # noqa: F401
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    except ImportError:
        assert "matplotlib is not installed" in proc.stdout
        data = np.load(tmp_path / "lorenz.npz")
        assert data["rho"].shape == (200,) and len(data["max_z"]) > 0


# Command lines no run can take: argparse refuses each (status 2, "argument --X: ..."), before
# anything runs: zero samples (barrier's error bar needs two paths), zero or negative K, a blank
# backend name.
BAD_COMMAND_LINES = [
    ("oscillator/oscillator.py", ["--backend", "cpu", "--n", "0"], "argument --n: must be >= 1"),
    ("oscillator/oscillator.py", ["--backend", "cpu", "--K", "0"], "argument --K: must be >= 1"),
    ("oscillator/oscillator.py", ["--backend", "cpu", "--K", "-3"], "argument --K: must be >= 1"),
    ("oscillator/oscillator.py", ["--backend", "", "--n", "10"], "argument --backend"),
    ("barrier/barrier.py", ["--backend", "cpu", "--n", "0"], "argument --n: must be >= 2"),
    ("barrier/barrier.py", ["--backend", "cpu", "--n", "1"], "argument --n: must be >= 2"),
    ("barrier/barrier.py", ["--backend", "", "--n", "10"], "argument --backend"),
    ("card_mpi.py", ["--backend", "cpu", "--k", "0"], "argument --k: must be >= 1"),
    ("card_mpi.py", ["--backend", "cpu", "--n", "0"], "argument --n: must be >= 1"),
    ("card_mpi.py", ["--backend", "", "--n", "10"], "argument --backend"),
    ("ode/lorenz_bifurcation.py", ["--backend", "cpu", "--n", "1"], "argument --n: must be >= 2"),
    ("ode/lorenz_bifurcation.py", ["--backend", "", "--n", "10"], "argument --backend"),
]


@pytest.mark.parametrize("script,args,message", BAD_COMMAND_LINES,
                         ids=[f"{c[0]} {' '.join(map(repr, c[1]))}" for c in BAD_COMMAND_LINES])
def test_examples_refuse_bad_command_lines_naming_the_argument(script, args, message):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, script), *args], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 2 and message in proc.stderr, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stdout == "", proc.stderr


# ------------------------------------------------------------------------------ NVRTC, no GPU

@pytest.mark.parametrize("name", ["oscillator", "barrier"])
def test_examples_compile_for_cuda_with_nvrtc_and_no_gpu(name):
    src = open(os.path.join(EXAMPLES, name, f"{name}.c"), "rb").read()
    res, log, cubin = nvrtc_compile(src, f"{name}.c", BIT_EXACT)
    assert res == 0, log
    assert cubin[:4] == b"\x7fELF"
    for kernel in {"oscillator": [b"osc_reset", b"osc_steps", b"osc_steps_active", b"osc_steps_drain"],
                   "barrier": [b"barrier_reset", b"barrier_steps", b"barrier_steps_active"]}[name]:
        assert kernel in cubin
    # the WHILE-end entries, named with their kernel's number of declared arguments
    step = {"oscillator": b"osc_steps", "barrier": b"barrier_steps"}[name]
    assert re.search(rb"eagle_while_end_[0-9]+_" + step + rb"\x00", cubin), "no WHILE-end entry"
    # The WHILE-end variant calls the one device-runtime builtin kernel.h declares for NVRTC; the
    # driver resolves it when the module is loaded, as it does for nvcc's code.
    assert b"cudaGraphSetConditional" in cubin


@pytest.mark.parametrize("name", ["oscillator", "barrier"])
def test_examples_compile_for_hip_with_hipcc_and_no_gpu(name, tmp_path):
    """kernel.h's hip branch (its drain entry claims positions lane by lane) for an AMD target,
    with hipcc offline: the closest this workplace gets to hiprtc, which needs an AMD device."""
    import shutil
    import subprocess
    hipcc = shutil.which("hipcc")
    if hipcc is None:
        pytest.skip("hipcc is not installed (Debian: apt-get install hipcc libamdhip64-dev)")
    src = os.path.join(EXAMPLES, name, f"{name}.c")
    wrapper = tmp_path / f"{name}_hip.cpp"
    wrapper.write_text(f'#include "{src}"\n')
    env = dict(os.environ, HIP_PLATFORM="amd")
    proc = subprocess.run([hipcc, "--offload-arch=gfx90a", "-include", "hip/hip_runtime.h", "-I", eagle.include_dir(),
                           "-c", str(wrapper), "-o", str(tmp_path / f"{name}.o")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_nvrtc_names_the_line_of_a_syntax_error():
    src = b"#include <eagle/kernel.h>\nEAGLE_KERNEL(k, (double*, x))\n{\n    x[i] = = 1.0;\n}\n"
    res, log, _ = nvrtc_compile(src, "bad.c", BIT_EXACT)
    assert res != 0 and "bad.c(4)" in log


def test_the_checkers_kernel_source_compiles_with_nvrtc():
    from eagle.check._device import KERNELS, SOURCE
    res, log, cubin = nvrtc_compile(SOURCE.encode(), "eagle_check_kernels.c", BIT_EXACT)
    assert res == 0, log
    for name in KERNELS:
        assert f"eagle_check_{name}".encode() in cubin
