import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.append(ROOT)  # build_tools, for tests that generate from the header
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/stubs


@pytest.fixture(scope="session")
def cpu():
    import eagle
    return eagle.backend("cpu")


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


@pytest.fixture(scope="session")
def cuda():
    b, reason = _gpu_backend_or_reason()
    if b is None:
        pytest.skip(reason)
    return b
