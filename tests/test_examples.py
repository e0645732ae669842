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
    rp, rt = bar.numpy_reference(n, **bar.PARAMS, backend="cpu")
    assert np.array_equal(payoff, rp) and np.array_equal(t, rt)
    T = bar.PARAMS["T"]
    knocked = t < T
    assert 0.2 < knocked.mean() < 0.8          # many paths stop early, many run to maturity
    assert np.all(payoff[knocked] == 0.0) and np.any(payoff[~knocked] > 0)
    assert len(np.unique(t[knocked])) > 50      # they stop at many different steps


def discrete_barrier_price(s0, strike, barrier, T, drift, vol, seed=None, h=0.01):
    """The exact price of the up-and-out call watched once a step, by numerical integration: the
    density of the surviving paths is carried step by step (convolved with the step's normal
    kernel on a grid of spacing h, killed at >= barrier) and the payoff integrated against it at
    step T. The killed edge makes the error first order in h: two spacings, Richardson-extrapolated."""
    from scipy.signal import fftconvolve

    def on_grid(h):
        lo = s0 + drift * T - 9 * vol * np.sqrt(T)
        y = barrier - h * np.arange(int(round((barrier - lo) / h)), -1, -1)   # the grid ends at the barrier
        x = np.arange(-int(9 * vol / h), int(9 * vol / h) + 1) * h
        kernel = np.exp(-0.5 * ((x - drift) / vol) ** 2) / (vol * np.sqrt(2 * np.pi))
        w = np.full(y.size, h)
        w[0] = w[-1] = h / 2                                                    # trapezoid weights
        f = np.exp(-0.5 * ((y - s0 - drift) / vol) ** 2) / (vol * np.sqrt(2 * np.pi))
        f[-1] = 0.0                                                             # S >= barrier: out
        c = (kernel.size - 1) // 2
        for _ in range(1, T):
            f = fftconvolve(f * w, kernel, mode="full")[c:c + y.size]
            f[-1] = 0.0
        return float(np.sum(np.maximum(y - strike, 0.0) * f * w))

    return 2 * on_grid(h / 2) - on_grid(h)


def test_barrier_price_agrees_with_the_exact_discrete_price(cpu):
    """The price of 200 000 paths is within 3 standard errors of the exact price of the barrier
    watched once a step (numerical integration, above). The mean and standard error come from
    eagle.mean_var on the device plane; numpy agrees with them. Broadie-Glasserman-Kou's
    continuity-corrected closed form, which the example prints, is within 0.01 of the exact price
    (it is a first-order correction); the uncorrected continuous price is far off."""
    bar = _example("barrier")
    n = 200_000
    payoff, t = bar.simulate("cpu", n)
    got = eagle.mean_var(payoff)
    host = payoff.numpy()
    assert got.n == n and abs(got.mean - host.mean()) <= 1e-12 * host.mean()
    assert abs(got.stderr - host.std(ddof=1) / np.sqrt(n)) <= 1e-9 * got.stderr
    exact = discrete_barrier_price(**bar.PARAMS)
    assert abs(got.mean - exact) <= 3 * got.stderr, (got, exact)
    assert abs(bar.discrete_price_bgk(**bar.PARAMS) - exact) < 0.01
    assert abs(bar.continuous_price(**bar.PARAMS) - exact) > 0.05


def test_the_exact_discrete_price_converges():
    bar = _example("barrier")
    a, b = discrete_barrier_price(**bar.PARAMS, h=0.02), discrete_barrier_price(**bar.PARAMS, h=0.01)
    assert abs(a - b) < 1e-5


def test_barrier_closed_form_matches_numerical_integration():
    """continuous_price against a quadrature of the reflection-principle density (scipy)."""
    from scipy import integrate, stats
    bar = _example("barrier")
    p = dict(bar.PARAMS)
    s0, k, b, T, mu, vol = p["s0"], p["strike"], p["barrier"], p["T"], p["drift"], p["vol"]
    sd = vol * np.sqrt(T)
    dens = lambda x: (stats.norm.pdf(x, s0 + mu * T, sd)  # noqa: E731
                      - np.exp(2 * mu * (b - s0) / vol**2) * stats.norm.pdf(x, 2 * b - s0 + mu * T, sd))
    ref, _ = integrate.quad(lambda x: (x - k) * dens(x), k, b, epsabs=1e-13)
    assert abs(bar.continuous_price(**p) - ref) < 1e-10


def test_barrier_random_numbers_do_not_depend_on_launch_shape(cpu):
    bar = _example("barrier")
    a, _ = bar.run("cpu", 700, K=1)
    b, _ = bar.run("cpu", 700, K=250)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("name", [pytest.param("oscillator", marks=pytest.mark.slow), "barrier"])  # oscillator: 5 s
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


def test_bouncing_balls_count_the_closed_form_impacts_and_stop_the_zeno_ones(cpu, tmp_path):
    """eagle.ode's events with an affect (issue 41): every ball short of its Zeno limit counts the
    closed form's impacts in [0, 3] s; every ball past it fails with the max_events code; the
    script writes its picture (or the counts without matplotlib)."""
    bb = _load(os.path.join(EXAMPLES, "ode", "bouncing_balls.py"), "example_bouncing_balls")
    e, sol = bb.run("cpu", 200)
    want = np.array([bb.closed_form_count(x) for x in e])
    finite = np.isfinite(want)
    assert finite.sum() >= 20 and (~finite).sum() >= 20
    np.testing.assert_array_equal(sol.n_events[finite, 0], want[finite].astype(int))
    np.testing.assert_array_equal(sol.status[finite], 0)
    np.testing.assert_array_equal(sol.failure[~finite], 8)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), MPLBACKEND="Agg")
    out = tmp_path / "bounces.png"
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, "ode", "bouncing_balls.py"), "--backend", "cpu",
                           "--n", "50", "--out", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "50 balls on cpu" in proc.stdout and "0 counts differ from the closed form" in proc.stdout
    try:
        import matplotlib  # noqa: F401
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    except ImportError:
        assert "matplotlib is not installed" in proc.stdout
        assert np.load(tmp_path / "bounces.npz")["count"].shape == (50,)


def test_robertson_example_runs_as_a_script_and_writes_its_picture(cpu, tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), MPLBACKEND="Agg")
    env.pop("DISPLAY", None)
    out = tmp_path / "robertson.png"
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, "ode", "robertson_ensemble.py"), "--backend", "cpu",
                           "--n", "50", "--out", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "50 Robertson samples on cpu" in proc.stdout and "0 failed" in proc.stdout
    try:
        import matplotlib  # noqa: F401
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    except ImportError:
        assert "matplotlib is not installed" in proc.stdout
        data = np.load(tmp_path / "robertson.npz")
        assert data["ys"].shape == (50, 3, 61) and np.all(data["status"] == 0)


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
    ("ode/bouncing_balls.py", ["--backend", "cpu", "--n", "1"], "argument --n: must be >= 2"),
    ("ode/robertson_ensemble.py", ["--backend", "cpu", "--n", "0"], "argument --n: must be >= 1"),
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
                   "barrier": [b"barrier_reset", b"barrier_steps", b"barrier_steps_active",
                               b"barrier_normals"]}[name]:
        assert kernel in cubin
    # the WHILE-end entries, named with their kernel's number of declared arguments
    step = {"oscillator": b"osc_steps", "barrier": b"barrier_steps"}[name]
    assert re.search(rb"eagle_while_end_[0-9]+_" + step + rb"\x00", cubin), "no WHILE-end entry"
    # The WHILE-end variant calls the one device-runtime builtin kernel.h declares for NVRTC; the
    # driver resolves it when the module is loaded, as it does for nvcc's code.
    assert b"cudaGraphSetConditional" in cubin


@pytest.mark.slow  # hipcc's first compile takes about 15 s; CI's slow step runs it
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
