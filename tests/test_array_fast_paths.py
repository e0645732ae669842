"""Per-type readers of eagle._arrays (the fast paths): for CuPy's ndarray, registered the first
time one goes through the general path, the reader must say what the array's
__cuda_array_interface__ says. Checked here with a stand-in of CuPy's class (same module and
name, the attributes the reader reads), so it runs without a GPU; tests/test_gpu_arrays.py checks
real CuPy arrays."""
import pytest

from eagle import _arrays
from eagle.errors import EagleValueError


def _fake_cupy_ndarray_class():
    class Pointer:
        def __init__(self, ptr):
            self.ptr = ptr

    class Flags:
        def __init__(self, c):
            self.c_contiguous = c

    class ndarray:  # noqa: N801 - CuPy's class name is what the registration looks for
        def __init__(self, ptr, shape, itemsize, strides=None, device=(2, 0)):
            self.data, self.shape, self.itemsize, self._strides = Pointer(ptr), shape, itemsize, strides
            self._device = device
            n = 1
            for d in shape:
                n *= d
            self.nbytes = n * itemsize
            contiguous = strides is None
            self.flags = Flags(contiguous)

        def __dlpack_device__(self):
            return self._device

        @property
        def __cuda_array_interface__(self):
            return {"shape": self.shape, "typestr": f"<u{self.itemsize}", "data": (self.data.ptr, False),
                    "version": 3, "strides": self._strides}

    ndarray.__module__ = "cupy"
    return ndarray


@pytest.fixture
def fake_cls():
    cls = _fake_cupy_ndarray_class()
    yield cls
    _arrays._EXACT.pop(cls, None)
    _arrays._DEVICE_EXACT.pop(cls, None)


def _same(a, b):
    return (a.ptr, a.nbytes, a.device_type, a.device_id, a.readonly) == (b.ptr, b.nbytes, b.device_type,
                                                                       b.device_id, b.readonly)


def test_the_cupy_reader_is_learned_and_says_what_the_interface_says(fake_cls):
    a = fake_cls(0x7000, (10, 3), 8, device=(2, 1))
    assert fake_cls not in _arrays._EXACT
    general = _arrays.address_of(a)  # the general path, through __cuda_array_interface__
    assert fake_cls in _arrays._EXACT
    fast = _arrays.address_of(a)
    assert _same(general, fast) and fast.keepalive is a
    assert (fast.ptr, fast.nbytes, fast.device_type, fast.device_id, fast.readonly) == (0x7000, 240, 2, 1, False)
    assert _arrays.dlpack_device(a) == (2, 1)
    rocm = fake_cls(0x9000, (4,), 4, device=(10, 0))  # a HIP build of CuPy says ROCm
    assert _arrays.address_of(rocm).device_type == 10


def test_a_strided_cupy_array_still_gets_the_general_paths_error(fake_cls):
    _arrays.address_of(fake_cls(0x7000, (4,), 8))  # learn the type
    strided = fake_cls(0x7000, (4, 2), 8, strides=(8, 32))
    with pytest.raises(EagleValueError, match="C-contiguous"):
        _arrays.address_of(strided)


def test_only_cupys_ndarray_is_learned():
    cls = _fake_cupy_ndarray_class()
    cls.__module__ = "mylib"
    _arrays.address_of(cls(0x7000, (4,), 8))
    assert cls not in _arrays._EXACT
