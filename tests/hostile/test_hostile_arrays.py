"""Careless and hostile inputs to eagle's device arrays on the cpu backend (eagle.empty, zeros,
asarray, DeviceArray and their DLPack export): each case runs in a fresh interpreter, so a crash or
a hang is a failing test. Sizes, devices and dtypes that eagle cannot hold are refused with an
EagleError naming the argument and the value; what it takes keeps its shape and values."""
import numpy as np
import pytest

from _subproc import run_snippet

SETUP = """
import gc, weakref
import numpy as np
import eagle
cpu = eagle.backend("cpu")
"""

# longdouble is an 80-bit or 128-bit type only on some platforms (elsewhere it is float64)
WIDE_LONGDOUBLE = np.dtype(np.longdouble).itemsize > 8
wide = pytest.mark.skipif(not WIDE_LONGDOUBLE, reason="longdouble is float64 here")

# (id, snippet, expected exception class name, strings the message holds)
REFUSED = [
    ("a big-endian dtype", "eagle.empty(2, '>f8', backend=cpu)", "EagleTypeError", [">f8", "byte order"]),
    ("a big-endian dtype to zeros", "eagle.zeros(2, np.dtype('>i4'), backend=cpu)", "EagleTypeError",
     ["eagle.zeros", ">i4"]),
    ("a big-endian dtype to DeviceArray", "eagle.DeviceArray(cpu, 2, '>c16')", "EagleTypeError", ">c16"),
    ("a big-endian dtype asked of asarray", "eagle.asarray([1, 2], '>i2', backend=cpu)", "EagleTypeError",
     ["eagle.asarray", ">i2"]),
    ("a str shape", "eagle.empty('10', backend=cpu)", "EagleTypeError", ["eagle.empty", "shape", "'10'"]),
    ("a float dimension", "eagle.zeros((2.7,), backend=cpu)", "EagleTypeError", ["eagle.zeros", "2.7"]),
    ("a float shape", "eagle.zeros(3.0, backend=cpu)", "EagleTypeError", "3.0"),
    ("a bool shape", "eagle.empty(True, backend=cpu)", "EagleTypeError", "True"),
    ("a bool dimension", "eagle.empty((2, False), backend=cpu)", "EagleTypeError", "False"),
    ("a negative numpy size", "eagle.empty(np.int64(-1), backend=cpu)", "EagleValueError", "negative dimension"),
    ("a byte size past int64", "eagle.zeros(2**62, backend=cpu)", "EagleValueError",
     ["eagle.zeros", str(2**62), "bytes"]),
    ("a dimension past int64", "eagle.empty((2**64, 0), backend=cpu)", "EagleValueError", str(2**64)),
    ("a device past int32", "eagle.empty(3, device=2**40, backend=cpu)", "EagleValueError",
     ["device", str(2**40)]),
    ("a float device", "eagle.empty(3, device=1.0, backend=cpu)", "EagleTypeError", ["device", "1.0"]),
    ("no dtype at all", "eagle.empty(3, 'no such dtype', backend=cpu)", "EagleTypeError", "no such dtype"),
    ("a structured host array", "eagle.asarray(np.zeros(3, [('a', 'f4')]), backend=cpu)", "EagleTypeError",
     ["eagle.asarray", "no DLPack code"]),
    pytest.param("eagle.empty(4, np.longdouble, backend=cpu)", "EagleTypeError", "no DLPack code",
                 id="a longdouble dtype", marks=wide),
    pytest.param("eagle.zeros(4, np.clongdouble, backend=cpu)", "EagleTypeError", "no DLPack code",
                 id="a clongdouble dtype", marks=wide),
    pytest.param("eagle.asarray(np.ones(4, np.longdouble), backend=cpu)", "EagleTypeError",
                 ["eagle.asarray", "no DLPack code"], id="a longdouble host array", marks=wide),
]


@pytest.mark.parametrize("code,expected,match",
                         [pytest.param(*c[1:], id=c[0]) if type(c) is tuple else c for c in REFUSED])
def test_what_eagle_cannot_hold_is_refused_naming_it(code, expected, match):
    out = run_snippet(SETUP + code)
    out.expect_no_crash()
    out.expect_raises(expected, match=match)


def test_asarray_turns_other_byte_orders_native_keeping_the_values():
    """DLPack has no byte-order field and kernels read native order: asarray converts."""
    out = run_snippet(SETUP + """
result = []
for host in (np.array([1.0, 2.0], '>f8'), np.array([1, 300, -7], '>i2'), np.array([1 + 2j], '>c16'),
             np.arange(6, dtype='>u4').reshape(2, 3)):
    a = eagle.asarray(host, backend=cpu)
    back, view = a.numpy(), np.from_dlpack(a)
    result.append([a.dtype.isnative, a.dtype == host.dtype.newbyteorder('='), a.shape == host.shape,
                   bool(np.array_equal(back, host)), bool(np.array_equal(view, host))])
""")
    assert out.expect_ok() == [[True] * 5] * 4


def test_numpy_integers_are_sizes():
    out = run_snippet(SETUP + """
result = [eagle.zeros(np.int64(5), backend=cpu).shape, eagle.empty((np.int32(2), np.uint8(3)), backend=cpu).shape,
          eagle.empty([np.intp(0)], backend=cpu).shape, eagle.empty(2, device=np.int64(0), backend=cpu).shape,
          cpu.zeros(np.uint16(4), 'int8').shape]
""")
    assert out.expect_ok() == [[5], [2, 3], [0], [2], [4]]


def test_zero_dimensional_arrays_keep_their_shape():
    """A 0-d host array or scalar stays 0-d (one item): on the device, read back, and through DLPack."""
    out = run_snippet(SETUP + """
result = []
for obj in (np.float64(3.0), np.array(3.0), 3.0):
    a = eagle.asarray(obj, backend=cpu)
    result.append([a.shape, a.ndim, a.size, a.nbytes, a.numpy().shape, float(a.numpy()),
                   np.from_dlpack(a).shape, float(np.from_dlpack(a))])
z = eagle.zeros((), 'int32', backend=cpu)
result.append([z.shape, z.nbytes, z.numpy().shape, int(z.numpy())])
""")
    row = [[], 0, 1, 8, [], 3.0, [], 3.0]
    assert out.expect_ok() == [row, row, row, [[], 4, [], 0]]


def test_a_capsule_a_consumer_refuses_keeps_its_error_and_frees_the_array():
    """numpy refuses a capsule of device memory and drops it with its error set, so the
    capsule's destructor runs with that error pending. The error reaches the caller (no SystemError,
    nothing printed as ignored) and the array is freed with its last reference. The array claims
    CUDA memory (device_type 2), as a GPU backend's would; both capsule versions; and a capsule
    nobody consumes frees the array too."""
    out = run_snippet(SETUP + """
result = {}
for versioned in (True, False):
    a = eagle.zeros(1000, backend=cpu)
    a._device_type = 2                    # say CUDA (the read-only attribute's own field): numpy does not read such memory
    alive = weakref.ref(a)
    class Consumer:                      # numpy asks for the versioned capsule; this asks for either
        def __dlpack__(self, **kw):
            return a.__dlpack__(max_version=(1, 0) if versioned else None)
    try:
        np.from_dlpack(Consumer())
        result[str(versioned)] = "taken"
    except Exception as e:               # numpy's own refusal (RuntimeError or BufferError)
        result[str(versioned)] = "refused" if "device" in str(e) and not isinstance(e, SystemError) else repr(e)
    del a, Consumer
    gc.collect()
    result[f"{versioned} alive"] = alive() is not None
a = eagle.zeros(10, backend=cpu)
alive = weakref.ref(a)
capsules = [a.__dlpack__(), a.__dlpack__(max_version=(1, 0))]
del a
gc.collect()
result["held by capsules"] = alive() is not None
del capsules
gc.collect()
result["unconsumed alive"] = alive() is not None
""")
    assert out.expect_ok() == {"True": "refused", "True alive": False, "False": "refused",
                               "False alive": False, "held by capsules": True, "unconsumed alive": False}
    assert "Exception ignored" not in out.stderr, out.describe()


def test_asarray_reads_a_host_array_that_offers_dlpack_only():
    """A torch CPU tensor's case: __dlpack__ and __dlpack_device__, no numpy protocol. With and
    without backend= (its DLPack device names the cpu backend); a 0-d one stays 0-d."""
    out = run_snippet(SETUP + """
class DLPackOnly:
    def __init__(self, host):
        self._host = host
    def __dlpack__(self, **kw):
        return self._host.__dlpack__(**kw)
    def __dlpack_device__(self):
        return self._host.__dlpack_device__()
host = np.arange(12, dtype=np.int32).reshape(3, 4)
a = eagle.asarray(DLPackOnly(host), backend=cpu)
b = eagle.asarray(DLPackOnly(host), 'float64')
c = eagle.asarray(DLPackOnly(np.array(2.5)), backend=cpu)
result = [[str(a.dtype), a.shape, a.numpy().tolist()], [str(b.dtype), b.numpy().tolist()], [c.shape, float(c.numpy())]]
""")
    expect = np.arange(12).reshape(3, 4).tolist()
    assert out.expect_ok() == [["int32", [3, 4], expect], ["float64", expect], [[], 2.5]]
