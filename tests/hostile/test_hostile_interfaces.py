"""Foreign objects that describe their memory through ``__array_interface__``, say where they live
through ``__dlpack_device__`` or hand over a stream through ``__cuda_stream__``, and lie or answer
junk, on the cpu backend. Each case runs in a fresh interpreter, so a crash is a failing test, not a
dead run; each is refused with an EagleError naming the object's type and what is wrong, before
anything reads the memory it claims."""
import pytest

from _subproc import run_snippet

SETUP = """
import numpy as np
import eagle
cpu = eagle.backend("cpu")
buf = np.zeros(64)  # real memory, for interfaces that lie about something else


class Foreign:
    def __init__(self, iface):
        self.__array_interface__ = iface


def iface(**fields):
    '''An honest interface over buf (8 float64), with ``fields`` replaced (None: removed).'''
    out = {"shape": (8,), "typestr": "<f8", "data": (buf.ctypes.data, False), "version": 3}
    out.update(fields)
    return {k: v for k, v in out.items() if v is not None}
"""

# (id, the interface expression, exception class name, strings its message holds)
LYING_OR_MALFORMED = [
    ("an unmapped address", "iface(data=(0x10, False))", "EagleValueError", ["Foreign", "0x10", "not (all) mapped"]),
    ("a negative address", "iface(data=(-8, False))", "EagleValueError", ["Foreign", "'data'", "-8"]),
    ("an address nothing maps", "iface(data=(0xdead0000, False))", "EagleValueError",
     ["Foreign", "0xdead0000", "not (all) mapped"]),
    ("an address past 64 bits", "iface(data=(1 << 70, False))", "EagleValueError", ["Foreign", "'data'", str(1 << 70)]),
    ("a NULL address for 64 bytes", "iface(data=(0, False))", "EagleValueError", ["Foreign", "'data'", "NULL"]),
    ("data None", "dict(iface(), data=None)", "EagleTypeError", ["Foreign", "'data'", "None"]),
    ("no data", "iface(data=None)", "EagleTypeError", ["Foreign", "'data'", "missing"]),
    ("data of three", "iface(data=(buf.ctypes.data, False, 0))", "EagleTypeError", ["Foreign", "'data'"]),
    ("a typestr numpy does not read", "iface(typestr='zz')", "EagleTypeError", ["Foreign", "'typestr'", "'zz'"]),
    ("an int shape", "iface(shape=8)", "EagleTypeError", ["Foreign", "'shape'", "8"]),
    ("a str shape", "iface(shape='12')", "EagleTypeError", ["Foreign", "'shape'", "'12'"]),
    ("a float dimension", "iface(shape=(7.9,))", "EagleTypeError", ["Foreign", "'shape'", "7.9"]),
    ("a shape past the address space", "iface(shape=(2**62, 2**62))", "EagleValueError",
     ["Foreign", "'shape'", "64-bit address space"]),
    ("fewer strides than dimensions", "iface(shape=(2, 4), strides=(8,))", "EagleValueError",
     ["Foreign", "strides (8,)", "(2, 4)"]),
    ("a list, not a dict", "[buf.ctypes.data, 8]", "EagleTypeError", ["Foreign", "list", "not a dict"]),
    # numpy's other form of 'data', an object whose buffer holds the memory: numpy does not bound
    # the claim by the buffer's size
    ("a data buffer shorter than the shape", "iface(data=bytes(12), shape=(10**8,), typestr='|u1')",
     "EagleValueError", ["Foreign", "100000000 bytes", "buffer holds 12"]),
    ("a data buffer past its offset", "iface(data=bytes(12), offset=8, shape=(8,), typestr='|u1')",
     "EagleValueError", ["Foreign", "'offset'", "buffer holds 4"]),
]
CASES = [pytest.param(*c[1:], id=c[0]) for c in LYING_OR_MALFORMED]


@pytest.mark.parametrize("interface,expected,match", CASES)
def test_asarray_refuses_a_lying_or_malformed_interface_before_numpy_reads_it(interface, expected, match):
    """eagle.asarray used to hand the object to numpy, which trusts the interface: an address that
    is not mapped crashed the process, and malformed fields raised numpy's bare errors."""
    out = run_snippet(SETUP + f"eagle.asarray(Foreign({interface}), backend=cpu)")
    out.expect_no_crash()
    out.expect_raises(expected, match=match)


# the malformed fields eagle's own reader (eagle.copy, run, compact) used to take for something else
# (shape '12' as (1, 2), (7.9,) as (7,), one stride for two dimensions as contiguous)
MISREAD = [("a str shape", "iface(shape='12')", "np.zeros(2)", "EagleTypeError", ["Foreign", "'shape'", "'12'"]),
           ("a float dimension", "iface(shape=(7.9,))", "np.zeros(7)", "EagleTypeError", ["Foreign", "'shape'", "7.9"]),
           ("fewer strides than dimensions", "iface(shape=(2, 4), strides=(8,))", "np.zeros(8)", "EagleValueError",
            ["Foreign", "strides (8,)", "(2, 4)"])]


@pytest.mark.parametrize("interface,dst,expected,match", [pytest.param(*c[1:], id=c[0]) for c in MISREAD])
def test_copy_refuses_a_malformed_interface_it_used_to_misread(interface, dst, expected, match):
    out = run_snippet(SETUP + f"eagle.copy({dst}, Foreign({interface}))")
    out.expect_no_crash()
    out.expect_raises(expected, match=match)


def test_asarray_refuses_python_objects_in_foreign_memory():
    """An interface that says its memory holds Python objects (typestr '|O8'): numpy would take the
    words as object pointers and crash converting them; refused before numpy sees the memory."""
    out = run_snippet(SETUP + "buf[:] = np.frombuffer(np.full(64, 0x10, np.int64).tobytes())\n"
                              "eagle.asarray(Foreign(iface(typestr='|O8')), 'float64', backend=cpu)")
    out.expect_no_crash()
    out.expect_raises("EagleTypeError", match=["eagle.asarray", "object", "no DLPack code"])


def test_asarray_refuses_more_dimensions_than_numpy_holds():
    out = run_snippet(SETUP + "eagle.asarray(Foreign(iface(shape=(1,) * 65)), backend=cpu)")
    out.expect_no_crash()
    out.expect_raises("EagleValueError", match=["eagle.asarray", "Foreign", "65"])


def test_after_refusing_a_liar_asarray_copies_honest_foreign_interfaces():
    """Honest foreign interfaces keep their shape and values (another byte order made native, 0-d,
    read-only memory, none at all, eagle's own host array, and a buffer as 'data' made afresh at
    each read, as PIL's images give it), after a liar was refused."""
    out = run_snippet(SETUP + """
try:
    eagle.asarray(Foreign(iface(data=(0x10, False))), backend=cpu)
    refused = None
except eagle.EagleValueError as e:
    refused = type(e).__name__
big = np.arange(6, dtype='>f4').reshape(2, 3)
frozen = np.frombuffer(bytes(range(16)), np.uint8)
scalar = np.array(7, np.int32)
own = eagle.asarray(np.arange(5.0), backend=cpu)
hosts = [big, frozen, scalar, np.zeros((0, 3))]
checks = []
for host in hosts:
    a = eagle.asarray(Foreign(dict(host.__array_interface__)), backend=cpu)
    checks.append([a.dtype.isnative, a.shape == host.shape, bool(np.array_equal(a.numpy(), host))])
b = eagle.asarray(Foreign(own.__array_interface__), backend=cpu)
checks.append([b.address != own.address, bool(np.array_equal(b.numpy(), np.arange(5.0)))])
class Image:
    @property
    def __array_interface__(self):
        return {"version": 3, "data": bytes(range(14)), "offset": 2, "shape": (3, 4), "typestr": "|u1"}
c = eagle.asarray(Image(), backend=cpu)
checks.append([c.shape == (3, 4), bool(np.array_equal(c.numpy(), np.arange(2, 14).reshape(3, 4)))])
result = [refused, checks]
""")
    refused, checks = out.expect_ok()
    assert refused == "EagleValueError"
    assert checks == [[True] * 3] * 4 + [[True, True]] * 2


# what a __dlpack_device__ may answer that is no (device_type, device_id) pair of ints:
# (id, the attribute's source, exception class name, what the message quotes)
JUNK_DEVICES = [
    ("None", "lambda self: None", "EagleTypeError", "returned None"),
    ("an int", "lambda self: 1", "EagleTypeError", "returned 1"),
    ("three ints", "lambda self: (1, 0, 0)", "EagleTypeError", "returned (1, 0, 0)"),
    ("a kind name", "lambda self: ('cpu', 0)", "EagleTypeError", "returned ('cpu', 0)"),
    ("floats", "lambda self: (1.7, 0.2)", "EagleTypeError", "returned (1.7, 0.2)"),
    ("a bool", "lambda self: (True, 0)", "EagleTypeError", "returned (True, 0)"),
    ("a negative device id", "lambda self: (1, -1)", "EagleValueError", "returned (1, -1)"),
    ("a tuple, not a method", "(1, 0)", "EagleTypeError", "is a tuple"),
]
# every public way in that asks an array where it lives
ENTRY_POINTS = {
    "eagle.copy": "eagle.copy(np.zeros(8), {a})",
    "eagle.run": "eagle.run(mod.bump, [{a}], 8)",
    "eagle.asarray": "eagle.asarray({a})",
    "Graph.build(planes=)": "eagle.Graph.build([lambda st: st.copy({a}, np.ones(8))], planes=[{a}])",
    "eagle.kind_of_array": "eagle.kind_of_array({a})",
}
KERNEL = ("mod = eagle.compile('#include <eagle/kernel.h>\\nEAGLE_KERNEL(bump, (double*, x)) "
          "{ (void)n; x[i] += 1.0; }\\n', backend=cpu)\n")


# In the default run: every junk answer through eagle.copy, and every other way in with these two
# (a wrong type, no method at all); the rest of the grid with -m slow (each case is an interpreter).
JUNK_EVERYWHERE_BY_DEFAULT = {"None", "a tuple, not a method"}


@pytest.mark.parametrize("entry,answer,expected,quoted", [
    pytest.param(entry, *c[1:], id=f"{c[0]}-{entry}",
                 marks=[] if entry == "eagle.copy" or c[0] in JUNK_EVERYWHERE_BY_DEFAULT else [pytest.mark.slow])
    for entry in ENTRY_POINTS for c in JUNK_DEVICES])
def test_junk_from_dlpack_device_is_refused_naming_the_type_and_the_answer(entry, answer, expected, quoted):
    """The same array answering (np.int64(1), np.int32(0)) is taken; answering junk, it is refused
    with an EagleError quoting the answer, not a bare TypeError or ValueError, and not truncated."""
    call = ENTRY_POINTS[entry]
    out = run_snippet(SETUP + (KERNEL if "mod." in call else "") + f"""
class Honest(Foreign):
    __dlpack_device__ = lambda self: (np.int64(1), np.int32(0))
class Junk(Foreign):
    __dlpack_device__ = {answer}
a = Honest(iface())
{call.format(a="a")}
a = Junk(iface())
{call.format(a="a")}
""")
    out.expect_no_crash()
    out.expect_raises(expected, match=["Junk", "__dlpack_device__", quoted])


@pytest.mark.parametrize("raw", [1 << 63, 2**64 - 1], ids=["2**63", "2**64-1"])
@pytest.mark.parametrize("side", ["producer", "consumer"])
def test_fence_refuses_a_raw_stream_past_int64(raw, side):
    """A raw stream value is 0 .. 2**64-1, the seam's stream code an int64: refused, naming it."""
    args = "Foreign(), None" if side == "producer" else "None, Foreign()"
    out = run_snippet(f"""
import eagle
cpu = eagle.backend("cpu")
class Foreign:
    def __cuda_stream__(self):
        return (0, {raw})
eagle.fence({args}, backend=cpu)
""")
    out.expect_no_crash()
    out.expect_raises("EagleValueError", match=["eagle.fence", "Foreign", str(raw)])
