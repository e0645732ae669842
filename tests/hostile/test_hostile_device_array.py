"""An eagle DeviceArray cannot be made to lie about what it exports: its shape, dtype, size,
address and device cannot be assigned (before, ``a.shape = (10**7,)`` then ``np.from_dlpack(a)``
read far past the memory, and a reassigned dtype exported float32 memory as float64). With them,
the interchange protocols' own misuse: ``__dlpack__(max_version=1)`` (an int, not a tuple), and
``eagle.asarray`` of what numpy cannot make an array of. Each case runs in a fresh interpreter."""
import pytest

from _subproc import run_snippet

PRELUDE = """
import numpy as np, eagle
cpu = eagle.backend(PATH)
a = cpu.asarray(np.arange(4.0))
"""


@pytest.mark.parametrize("attr,value", [
    ("shape", "(10 ** 7,)"), ("dtype", "np.dtype('float32')"), ("nbytes", "1 << 40"), ("address", "0"),
    ("device_type", "2"), ("device_id", "3"), ("backend", "None"),
])
def test_what_a_device_array_exports_cannot_be_assigned(cpu_backend_path, attr, value):
    out = run_snippet(PRELUDE + f"""
refused = False
try:
    a.{attr} = {value}
except AttributeError:
    refused = True
v = np.from_dlpack(a)
result = [refused, v.tolist(), a.shape, str(a.dtype), a.nbytes, np.asarray(a).tolist()]
""", globals={"PATH": cpu_backend_path})
    refused, exported, shape, dtype, nbytes, viewed = out.expect_ok()
    assert refused and exported == viewed == [0.0, 1.0, 2.0, 3.0]
    assert (shape, dtype, nbytes) == ([4], "float64", 32)


def test_dlpack_max_version_must_be_a_tuple(cpu_backend_path):
    out = run_snippet(PRELUDE + """
a.__dlpack__(max_version=1)
""", globals={"PATH": cpu_backend_path})
    out.expect_no_crash()
    out.expect_raises("EagleTypeError", match=["max_version", "(major, minor)", "1"])


def test_dlpack_max_version_tuples_still_export(cpu_backend_path):
    out = run_snippet(PRELUDE + """
result = [np.from_dlpack(a).tolist(), type(a.__dlpack__(max_version=(1, 0))).__name__,
          type(a.__dlpack__(max_version=(0, 8))).__name__]
""", globals={"PATH": cpu_backend_path})
    assert out.expect_ok() == [[0.0, 1.0, 2.0, 3.0], "PyCapsule", "PyCapsule"]


@pytest.mark.parametrize("obj,error", [
    ("[[1.0, 2.0], [3.0]]", "EagleValueError"),
    ("[1.0, [2.0, 3.0]]", "EagleValueError"),
    ("['x', 1.0]", "EagleTypeError"),
])
def test_asarray_of_what_numpy_cannot_make_an_array_of_is_refused(cpu_backend_path, obj, error):
    out = run_snippet(PRELUDE + f"""
cpu.asarray({obj})
""", globals={"PATH": cpu_backend_path})
    out.expect_no_crash()
    out.expect_raises(error, match="eagle.asarray")


@pytest.mark.parametrize("protocol", ["__array_interface__", "__cuda_array_interface__", "__dlpack__",
                                      "__dlpack_device__"])
def test_an_interface_that_raises_is_an_eagle_type_error_chained_from_it(cpu_backend_path, protocol):
    out = run_snippet(f"""
import numpy as np, eagle
cpu = eagle.backend(PATH)

class Boom(Exception):
    pass

class Hostile:
    def __dlpack_device__(self):
        return (1, 0)

    @property
    def {protocol}(self):
        raise Boom("no")

m = eagle.compile("#include <eagle/kernel.h>\\nEAGLE_KERNEL(k, (void*, p)) {{ (void)p; (void)n; (void)i; }}\\n",
                  backend=cpu)
read = eagle._arrays.dlpack_device if "{protocol}" == "__dlpack_device__" else eagle._arrays.address_of
for call in (lambda: read(Hostile()), lambda: eagle.run(m.k, [Hostile()], 1)):
    try:
        call()
    except eagle.EagleTypeError as e:
        assert type(e.__cause__).__name__ == "Boom", repr(e.__cause__)
        assert "{protocol}" in str(e) or "Boom" in str(e), str(e)
    else:
        raise AssertionError("not refused")
result = "ok"
""", globals={"PATH": cpu_backend_path})
    assert out.expect_ok() == "ok"
