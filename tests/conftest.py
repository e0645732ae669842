import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.append(ROOT)  # build_tools, for tests that generate from the header
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/stubs

PIN = os.path.join(ROOT, "tests", "expected_backend_symbols.txt")


def _restore_interrupts():
    """A process started in the background by a shell without job control (`cmd &` in a script, as
    a CI runner may start the tests), and an xdist worker, begin with SIGINT and SIGQUIT ignored,
    and every process they start inherits that: the interrupt tests' subprocesses would never see
    their SIGINT (Python installs no KeyboardInterrupt handler where SIGINT is ignored at start).
    Restore both, so the tests' children start as under an interactive pytest."""
    import signal
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGQUIT) is signal.SIG_IGN:
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)


_restore_interrupts()

# Variables a process started by mpiexec/srun has (MPICH's hydra, Open MPI, PMIx).
_MPI_ENV = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """With pytest-xdist installed (the test extra), the tests run on a worker per CPU, a test file
    per worker at a time (``--dist loadfile``: a module's fixtures, compiles included, are made
    once), as if ``-n auto --dist loadfile`` had been given: the README's ``python3 -m pytest -q
    tests`` takes about half the time on 2 cores. Not when ``-n``/``--dist`` is given (``-n 0``:
    one process), nor without xdist or with ``-p no:xdist``, nor in an MPI rank (each rank of
    ``mpiexec -n K python -m pytest`` runs the tests itself, as a rank of the job), nor under a
    preloaded sanitizer runtime (.ci/sanitize.sh), nor in a worker. Runs before xdist's own hook
    (both tryfirst; a conftest registers later, so it is called first), which then starts them."""
    opt = config.option
    if not config.pluginmanager.hasplugin("xdist") or getattr(opt, "numprocesses", 0) is not None:
        return None
    if getattr(opt, "dist", "no") != "no" or getattr(opt, "tx", None) or os.environ.get("PYTEST_XDIST_WORKER"):
        return None
    if any(k in os.environ for k in _MPI_ENV) or "san.so" in os.environ.get("LD_PRELOAD", ""):
        return None
    if getattr(opt, "usepdb", False) or getattr(opt, "collectonly", False):
        return None
    opt.numprocesses, opt.dist = "auto", "loadfile"
    return None


def pinned_symbols():
    """The seam symbols of the pin tests/expected_backend_symbols.txt, in file order."""
    with open(PIN) as fh:
        return [ln.strip() for ln in fh if ln.strip() and not ln.startswith("#")]


@pytest.fixture(scope="session")
def cpu():
    import eagle
    return eagle.backend("cpu")


@pytest.fixture(scope="session")
def cpu_backend_path():
    """Path of the cpu backend library as eagle resolves it; skips when there is none."""
    try:
        from eagle._loader import _resolve
        return _resolve("cpu")[1]
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"no cpu backend: {e}")


@pytest.fixture(scope="module")
def model():
    """The seam model of eagle_backend.h (build_tools.parse.load), loaded once per test module."""
    from build_tools import parse as seam_parse
    return seam_parse.load(os.path.join(ROOT, "eagle_backend.h"))


@pytest.fixture
def make_stub(tmp_path):
    from stubs import build_stub

    def make(name="stub", **kw):
        return build_stub(tmp_path, name, **kw)
    return make


def _gpu_backend_or_reason():
    import eagle
    try:
        b = eagle.backend("cuda")
    except eagle.EagleError as e:
        return None, f"no cuda backend: {e}"
    try:
        b.probe()
    except eagle.BackendUnavailable as e:
        return None, f"the cuda backend has no usable device: {e}"
    return b, ""


def kernel_ptr(fn):
    """The CUfunction of a CuPy kernel (RawKernel.kernel.ptr, or Function.ptr)."""
    inner = getattr(fn, "kernel", fn)
    return int(inner.ptr)


def dependents(node):
    """Nodes that depend on a raw CUDA graph node (the driver's cuGraphNodeGetDependentNodes_v2)."""
    import ctypes
    drv = ctypes.CDLL("libcuda.so.1")
    f = drv.cuGraphNodeGetDependentNodes_v2
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
    f.restype = ctypes.c_int
    n = ctypes.c_size_t(0)
    rc = f(ctypes.c_void_p(node), None, None, ctypes.byref(n))
    assert rc == 0, f"cuGraphNodeGetDependentNodes_v2: CUresult {rc}"
    return n.value


def finish(launcher, stream, seconds=30.0):
    """Launch a cuda launcher and wait for it with a deadline: a WHILE whose condition is never set
    again would loop for ever, and a plain synchronize would hang the test run."""
    import time
    import cupy as cp
    launcher.launch()
    done = cp.cuda.Event(disable_timing=True)
    done.record(cp.cuda.ExternalStream(stream.handle))
    deadline = time.monotonic() + seconds
    while not done.done:
        if time.monotonic() > deadline:
            pytest.fail(f"the graph did not finish within {seconds} s (a WHILE that never stops)")
        time.sleep(0.001)
    launcher.synchronize()


@pytest.fixture(scope="session")
def cuda():
    b, reason = _gpu_backend_or_reason()
    if b is None:
        pytest.skip(reason)
    return b


def _opencl_backend_or_reason():
    import eagle
    try:
        b = eagle.backend("opencl")
    except eagle.EagleError as e:
        return None, (f"no opencl backend (build backends/opencl, see its README, and set $EAGLE_BACKEND_OPENCL "
                      f"to libeagle_opencl.so): {e}")
    try:
        b.probe()
    except eagle.BackendUnavailable as e:
        return None, f"the opencl backend has no usable platform: {e}"
    return b, ""


@pytest.fixture(scope="session")
def opencl():
    """The opencl backend ($EAGLE_BACKEND_OPENCL or an installed libeagle_opencl) with a usable
    platform (PoCL in CI); skips naming why otherwise."""
    b, reason = _opencl_backend_or_reason()
    if b is None:
        pytest.skip(reason)
    return b


# The device kinds a kind-generic test runs on: each a fixture of its own above, which skips with
# its reason where that kind is absent. cuda tests are marked gpu, opencl ones opencl (CI's
# opencl step selects them with -m opencl on PoCL).
DEVICE_KINDS = [pytest.param("cuda", marks=pytest.mark.gpu), pytest.param("opencl", marks=pytest.mark.opencl)]


@pytest.fixture(params=DEVICE_KINDS)
def device(request):
    """A device kind's backend (cuda, opencl), for the tests every such kind must pass."""
    return request.getfixturevalue(request.param)


def require(backend, *entries):
    """Skip unless the backend provides every group or per-symbol entry named, with the backend's
    own why line for the first it leaves out (its capabilities' left-out lines, not a list here)."""
    for entry in entries:
        if not backend.provides(entry):
            pytest.skip(f"the {backend.kind} backend leaves out '{entry}': {backend.unavailable.get(entry)}")
