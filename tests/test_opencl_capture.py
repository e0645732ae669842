"""The opencl kind's capture groups (capturer, captured, attribution, graph, launcher) on
cl_khr_command_buffer: provided exactly where the device offers the extension (0.9.x) and
$EAGLE_OPENCL_COMMAND_BUFFER is not 0; left out otherwise, with why lines, and eagle.Graph.build
then enqueues its pieces again at each launch. A replay runs kernels (command buffers), copies and
host functions (enqueued between them) in record order. eagle.check's capture checks cover the
rest of the groups' contracts.

Run on PoCL in CI (``-m opencl``, $EAGLE_BACKEND_OPENCL naming the built library)."""
import ctypes
import ctypes.util
import os

import numpy as np
import pytest

from _subproc import run_snippet

pytestmark = pytest.mark.opencl

CAPTURE = ("capturer", "captured", "attribution", "graph", "launcher")

KERNELS = r"""
#include <eagle/kernel.h>
EAGLE_KERNEL(add_one, (double*, x)) { (void)n; x[i] += 1.0; }
EAGLE_KERNEL(twice, (double*, x)) { (void)n; x[i] *= 2.0; }
"""


class _NameVersion(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("name", ctypes.c_char * 64)]


def _command_buffer_version():
    """The cl_khr_command_buffer version (major, minor) the device the backend picks offers (the
    first platform with a device, or the first named like $EAGLE_OPENCL_PLATFORM), read here
    through the ICD loader with no help from the backend; None when it offers none."""
    lib = ctypes.CDLL(ctypes.util.find_library("OpenCL"))
    n = ctypes.c_uint32()
    assert lib.clGetPlatformIDs(0, None, ctypes.byref(n)) == 0 and n.value > 0
    plats = (ctypes.c_void_p * n.value)()
    lib.clGetPlatformIDs(n.value, plats, None)
    want = os.environ.get("EAGLE_OPENCL_PLATFORM", "")
    for p in plats:
        name = ctypes.create_string_buffer(256)
        lib.clGetPlatformInfo(ctypes.c_void_p(p), 0x0902, 256, name, None)  # CL_PLATFORM_NAME
        if want and want not in name.value.decode():
            continue
        dev = ctypes.c_void_p()
        if lib.clGetDeviceIDs(ctypes.c_void_p(p), ctypes.c_uint64(0xFFFFFFFF), 1, ctypes.byref(dev), None) != 0:
            continue
        size = ctypes.c_size_t()
        lib.clGetDeviceInfo(dev, 0x1060, 0, None, ctypes.byref(size))  # CL_DEVICE_EXTENSIONS_WITH_VERSION
        exts = (_NameVersion * (size.value // ctypes.sizeof(_NameVersion)))()
        lib.clGetDeviceInfo(dev, 0x1060, size, exts, None)
        for e in exts:
            if e.name.decode() == "cl_khr_command_buffer":
                return e.version >> 22, (e.version >> 12) & 0x3FF
        return None
    pytest.fail("no OpenCL platform with a device, though the opencl backend found one")


def test_capture_groups_are_provided_exactly_where_the_device_offers_command_buffers(opencl):
    version = _command_buffer_version()
    used = (version is not None and version[0] == 0 and version[1] == 9
            and os.environ.get("EAGLE_OPENCL_COMMAND_BUFFER", "") != "0")
    assert {g: opencl.provides(g) for g in CAPTURE} == {g: used for g in CAPTURE}, (version, opencl.unavailable)
    assert not opencl.provides("conditional")
    if not used:
        assert "cl_khr_command_buffer" in opencl.unavailable["capturer"]


def test_turned_off_the_groups_are_left_out_with_why_lines_and_graphs_run_on_the_host(opencl):
    out = run_snippet("""
        import numpy as np
        import eagle
        b = eagle.backend("opencl")
        mod = b.compile(KERNELS, name="k.c", exact=True)
        x = b.zeros(64)
        g = eagle.Graph.build([lambda s: s.run(mod.add_one, [x], 64), lambda s: s.run(mod.twice, [x], 64)],
                              planes=[x])
        for _ in range(3):
            g.launch()
        g.synchronize()
        result = [{k: b.provides(k) for k in CAPTURE}, {k: b.unavailable.get(k) for k in CAPTURE},
                  g.decides_on_device, x.numpy().tolist()]
    """, env={"EAGLE_OPENCL_COMMAND_BUFFER": "0"}, globals={"KERNELS": KERNELS, "CAPTURE": list(CAPTURE)},
        timeout=120)
    provided, why, on_device, x = out.result
    assert provided == {g: False for g in CAPTURE}, out.describe()
    assert "$EAGLE_OPENCL_COMMAND_BUFFER=0" in why["capturer"], why
    for g in CAPTURE[1:]:
        assert why[g] and "(see " in why[g], why
    assert on_device is False
    assert x == [14.0] * 64  # (((0 + 1) * 2 + 1) * 2 + 1) * 2: the pieces ran at each launch


def test_a_bad_value_of_the_variable_is_unavailable_naming_it(opencl):
    out = run_snippet("""
        import eagle
        eagle.backend("opencl").stream()
    """, env={"EAGLE_OPENCL_COMMAND_BUFFER": "yes"}, timeout=60)
    out.expect_raises("BackendUnavailable", match="EAGLE_OPENCL_COMMAND_BUFFER='yes' is not 0 or 1")


@pytest.fixture
def recording(opencl):
    for g in CAPTURE:
        if not opencl.provides(g):
            pytest.skip(f"the opencl backend leaves out '{g}': {opencl.unavailable.get(g)}")
    return opencl


def test_a_replay_runs_kernels_copies_and_host_functions_in_record_order(recording):
    b = recording
    mod = b.compile(KERNELS, name="k.c", exact=True)
    n = 8
    x = b.zeros(n)
    host = np.full(n, -1.0)
    seen = []
    s = b.stream()
    with b.capture(s) as cap:
        s.run(mod.add_one, [x], n)              # a command buffer
        s.copy(host, x)                          # a copy between command buffers
        s.host_func(lambda: seen.append(float(host[0])))  # a host call after the copy
        s.run(mod.twice, [x], n)                # another command buffer
    assert seen == [] and np.array_equal(x.numpy(), np.zeros(n)), "work under capture ran at record time"
    lau = b.graph_from_captured(cap.captured).launcher()
    lau.set_stream(s)
    lau.launch(3)
    lau.synchronize()
    assert seen == [1.0, 3.0, 7.0]
    assert np.array_equal(x.numpy(), np.full(n, 14.0)) and lau.kernel_node_count == 2


def test_each_recorded_launch_keeps_its_own_arguments(recording):
    """Recorded launches of one kernel with different arguments (PoCL 3.1's command buffers read
    a kernel's arguments at enqueue: the backend records a clone of the kernel per launch)."""
    b = recording
    mod = b.compile(KERNELS, name="k.c", exact=True)
    xs = [b.zeros(4) for _ in range(3)]
    s = b.stream()
    with b.capture(s) as cap:
        for x in xs:
            s.run(mod.add_one, [x], 4)
        s.run(mod.twice, [xs[1]], 4)
    lau = b.graph_from_captured(cap.captured).launcher()
    lau.set_stream(s)
    s.run(mod.add_one, [xs[2]], 4)  # eager use of the kernel after recording changes nothing recorded
    lau.launch(2)
    lau.synchronize()
    assert [x.numpy()[0] for x in xs] == [2.0, 6.0, 3.0]
