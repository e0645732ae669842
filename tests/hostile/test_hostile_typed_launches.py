"""Launches of EAGLE_KERNEL kernels checked against the declared C types (eagle/_signature.py).

Before this check a launch was counted only: an int for a ``double`` multiplied by 1e-323, ``2.0``
for an ``int64_t`` step count ran for 4.6e18 iterations, swapped arguments or ``0`` for a pointer
segfaulted, a float32 array for ``double*``, an int64 array for ``int32_t*``, a ``(3, 2)`` plane
over n = 4 and a drain plane shorter than the live count read and wrote out of bounds. Each case
runs in a fresh interpreter: a refusal is an eagle error naming the kernel, the argument, its
declared type and what was given; what is allowed computes what numpy computes."""
import textwrap

import pytest

from _subproc import run_snippet

SRC = r"""
#include <eagle/kernel.h>
EAGLE_KERNEL(scale, (double*, x), (double, r)) { x[i] *= r; }
EAGLE_KERNEL(steps, (double*, x), (int64_t, k)) { for (int64_t s = 0; s < k; ++s) x[i] += 1.0; }
EAGLE_KERNEL(narrow, (float*, y), (float, a), (int32_t, k), (const int32_t*, q), (uint8_t*, flag)) {
    y[i] = a * (float)k + (float)q[i];
    flag[i] = 1;
}
EAGLE_KERNEL(lookup, (double*, y), (EAGLE_BUFFER const double*, table), (int64_t, m)) { y[i] = table[i % m]; }
EAGLE_KERNEL(anyptr, (void*, p), (double*, x)) { (void)p; x[i] = 1.0; }
EAGLE_KERNEL(rows, (double*, x)) { x[i] = 1.0; x[n + i] = 2.0; }
typedef float real;
typedef real* real_ptr;
EAGLE_KERNEL(typed, (real*, y), (real, a)) { y[i] = a; }
EAGLE_KERNEL(halve, (double*, x), (double, r), (uint8_t*, done)) {
    x[i] *= r;
    done[i] = x[i] < 1.0;
}
"""

PRELUDE = """
import numpy as np, eagle
cpu = eagle.backend(PATH)
m = eagle.compile(SRC, backend=cpu)
n = 4
x = np.arange(1.0, 5.0)
x32 = x.astype(np.float32)
y = np.zeros(n, np.float32)
q = np.arange(n, dtype=np.int32)
flag = np.zeros(n, np.uint8)
ro = np.arange(1.0, 5.0)
ro.flags.writeable = False

class OnlyDLPack:  # exports DLPack and nothing else (no numpy protocol)
    def __init__(self, a):
        self.a = a
    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)
    def __dlpack_device__(self):
        return self.a.__dlpack_device__()
"""


def _run(body, cpu_backend_path):
    return run_snippet(PRELUDE + textwrap.dedent(body), globals={"PATH": cpu_backend_path, "SRC": SRC})


BREAKS = [
    # scalars
    ("eagle.run(m.steps, [x, 2.0], n)", "EagleTypeError",
     ["kernel steps", "argument 1 (k, declared 'int64_t')", "takes an integer", "float (2.0)"]),
    ("eagle.run(m.scale, [x, True], n)", "EagleTypeError",
     ["kernel scale", "argument 1 (r, declared 'double')", "a bool"]),
    ("eagle.run(m.scale, [x, 1j], n)", "EagleTypeError", ["argument 1 (r, declared 'double')", "complex"]),
    ("eagle.run(m.scale, [x, x], n)", "EagleTypeError", ["argument 1 (r, declared 'double')", "ndarray"]),
    ("eagle.run(m.narrow, [y, 1.5, 2 ** 40, q, flag], n)", "EagleValueError",
     ["argument 2 (k, declared 'int32_t')", "out of its range"]),
    ("eagle.run(m.narrow, [y, 1e300, 2, q, flag], n)", "EagleValueError",
     ["argument 1 (a, declared 'float')", "does not fit"]),
    ("eagle.run(m.narrow, [y, 1.5, np.float64(2.0), q, flag], n)", "EagleTypeError",
     ["argument 2 (k, declared 'int32_t')", "float64"]),
    # pointers
    ("eagle.run(m.scale, [2.0, x], n)", "EagleTypeError",
     ["kernel scale", "argument 0 (x, declared 'double*')", "takes an array", "float (2.0)"]),
    ("eagle.run(m.scale, [0, 2.0], n)", "EagleTypeError",
     ["argument 0 (x, declared 'double*')", "an int (0)", "address eagle cannot check"]),
    ("eagle.run(m.scale, [x.ctypes.data, 2.0], n)", "EagleTypeError", ["argument 0 (x", "Python int"]),
    ("eagle.run(m.scale, [np.float64(1.0), 2.0], n)", "EagleTypeError", ["argument 0 (x", "float64"]),
    ("eagle.run(m.scale, [np.array(1.0), 2.0], n)", "EagleTypeError", ["argument 0 (x", "0-d"]),
    ("eagle.run(m.scale, [x32, 2.0], n)", "EagleTypeError",
     ["argument 0 (x, declared 'double*')", "array of float64", "dtype float32"]),
    ("eagle.run(m.narrow, [y, 1.5, 2, q.astype(np.int64), flag], n)", "EagleTypeError",
     ["argument 3 (q, declared 'const int32_t*')", "array of int32", "dtype int64"]),
    ("eagle.run(m.narrow, [y, 1.5, 2, q, flag.astype(bool)], n)", "EagleTypeError",
     ["argument 4 (flag, declared 'uint8_t*')", "array of uint8", "dtype bool"]),
    ("eagle.run(m.scale, [x.astype('>f8'), 2.0], n)", "EagleTypeError", ["argument 0 (x", "array of float64"]),
    ("eagle.run(m.scale, [OnlyDLPack(x32), 2.0], n)", "EagleTypeError",
     ["argument 0 (x, declared 'double*')", "array of float64"]),
    ("eagle.run(m.scale, [ro, 2.0], n)", "EagleValueError", ["argument 0 (x, declared 'double*')", "read-only"]),
    # planes: at least n samples along the last axis
    ("eagle.run(m.scale, [np.zeros((3, 2)), 2.0], n)", "EagleValueError",
     ["argument 0 (x, declared 'double*')", "shape (3, 2)", "fewer than the 4"]),
    ("eagle.run(m.scale, [np.zeros(3), 2.0], n)", "EagleValueError", ["argument 0 (x", "shape (3,)"]),
    ("eagle.run(m.rows, [np.zeros((2, 3))], n)", "EagleValueError", ["argument 0 (x", "shape (2, 3)"]),
    ("eagle.run(m.scale, [x, 2.0], 8, base=4, count=4)", "EagleValueError", ["argument 0 (x", "fewer than the 8"]),
    # every entry point: Stream.run, Kernel.run, a recorded step
    ("s = cpu.stream(); s.run(m.scale, [2.0, x], n)", "EagleTypeError", ["argument 0 (x, declared 'double*')"]),
    ("m.scale.run([x, 2.0j], n)", "EagleTypeError", ["argument 1 (r, declared 'double')"]),
    ("eagle.Graph.build([lambda s: s.run(m.steps, [x, 2.0], n)], planes=[x])", "EagleTypeError",
     ["argument 1 (k, declared 'int64_t')"]),
    ("m.scale_active.run([x, 2.0, np.zeros(n, np.int64), np.zeros(1, np.uint32)], n)", "EagleTypeError",
     ["argument 2 (index_map, declared 'const int32_t*')", "array of int32"]),
]


# The default run takes every other case (each is an interpreter of its own, ~0.7 s); CI's slow
# step runs the rest, so every case is checked there.
@pytest.mark.parametrize("call,error,match", [pytest.param(*c, marks=pytest.mark.slow) if k % 2 else c
                                              for k, c in enumerate(BREAKS)])
def test_a_launch_that_breaks_the_declaration_is_refused_naming_the_argument(cpu_backend_path, call, error, match):
    out = _run(call, cpu_backend_path)
    out.expect_no_crash()
    out.expect_raises(error, match=match)


def test_an_int_for_a_floating_parameter_is_converted(cpu_backend_path):
    out = _run("""
        eagle.run(m.scale, [x, 2], n)
        s = cpu.stream()
        s.run(m.scale, [x, np.int32(3)], n)
        s.synchronize()
        result = x.tolist()
    """, cpu_backend_path)
    assert out.expect_ok() == [6.0, 12.0, 18.0, 24.0]  # 1..4 times 2 then 3, not times 1e-323


def test_float_and_int32_scalars_are_passed_at_their_declared_width(cpu_backend_path):
    out = _run("""
        eagle.run(m.narrow, [y, 1.5, 3, q, flag], n)
        result = [y.tolist(), flag.tolist()]
    """, cpu_backend_path)
    # an 8-byte double read as a float, or an int64 beside an int32, gives other values
    assert out.expect_ok() == [[4.5, 5.5, 6.5, 7.5], [1, 1, 1, 1]]


def test_a_typedef_of_a_known_type_is_checked_and_passed_as_that_type(cpu_backend_path):
    out = _run("""
        eagle.run(m.typed, [y, 2.5], n)   # real is float: 2.5 as 4 bytes, not a double's
        try:
            eagle.run(m.typed, [x, 2.5], n)
        except eagle.EagleTypeError as e:
            refused = str(e)
        result = [y.tolist(), refused]
    """, cpu_backend_path)
    values, refused = out.expect_ok()
    assert values == [2.5] * 4 and "argument 0 (y, declared 'float*')" in refused and "float32" in refused


def test_a_buffer_parameter_takes_any_length_and_void_star_any_dtype(cpu_backend_path):
    out = _run("""
        out = np.zeros(8)
        eagle.run(m.lookup, [out, np.array([10.0, 20.0, 30.0]), 3], 8)
        z = np.zeros(8)
        eagle.run(m.anyptr, [np.zeros(1, np.int32), z], 8)
        planes = np.zeros((2, n))
        eagle.run(m.rows, [planes], n)
        eagle.run(m.scale, [OnlyDLPack(x), 2.0], n)
        result = [out.tolist(), z.tolist(), planes.tolist(), x.tolist()]
    """, cpu_backend_path)
    table = [10.0, 20.0, 30.0]
    assert out.expect_ok() == [[table[i % 3] for i in range(8)], [1.0] * 8, [[1.0] * 4, [2.0] * 4],
                               [2.0, 4.0, 6.0, 8.0]]


def test_a_drain_plane_shorter_than_the_samples_is_refused(cpu_backend_path):
    out = _run("""
        k = 8
        mask = np.zeros(k, np.uint8)
        aset = eagle.ActiveSet(mask)
        s = cpu.stream()
        aset.compact(s)
        aset.drain(s, m.halve_drain, [np.ones(4), 0.5, mask], 10)
        s.synchronize()
    """, cpu_backend_path)
    out.expect_no_crash()
    out.expect_raises("EagleValueError", match=["kernel halve_drain", "argument 0 (x, declared 'double*')",
                                                "fewer than the 8"])


def test_a_drain_with_its_declared_types_matches_numpy(cpu_backend_path):
    out = _run("""
        k = 8
        v = np.arange(1.0, k + 1.0) * 3
        want = v.copy()
        for j in range(k):
            while want[j] >= 1.0:
                want[j] *= 0.5
        mask = np.zeros(k, np.uint8)
        aset = eagle.ActiveSet(mask)
        s = cpu.stream()
        aset.compact(s)
        aset.drain(s, m.halve_drain, [v, 1, mask], 100)  # an int for the double r: converted
        s.synchronize()
        r_is_one = v.tolist()
        v[:] = np.arange(1.0, k + 1.0) * 3
        mask[:] = 0
        aset.compact(s)
        aset.drain(s, m.halve_drain, [v, 0.5, mask], 100)
        s.synchronize()
        result = [r_is_one, bool(np.array_equal(v, want))]
    """, cpu_backend_path)
    r_is_one, same = out.expect_ok()
    assert r_is_one == [3.0 * j for j in range(1, 9)] and same


def test_a_recorded_graph_replays_what_was_checked(cpu_backend_path):
    out = _run("""
        g = eagle.Graph.build([lambda s: s.run(m.scale, [x, 2], n)], planes=[x])
        g()
        g()
        result = x.tolist()
    """, cpu_backend_path)
    assert out.expect_ok() == [4.0, 8.0, 12.0, 16.0]


def test_an_owned_plane_is_taken_by_a_typed_parameter(cpu_backend_path):
    out = _run("""
        k = 8
        mask = np.zeros(k, np.uint8)
        v = np.arange(k, dtype=np.float64)
        aset = eagle.ActiveSet(mask, reorder=0.5)
        pv = aset.own(v)
        eagle.run(m.scale, [pv, 2.0], k)
        try:
            eagle.run(m.scale, [aset.own(np.zeros(k, np.float32)), 2.0], k)
        except eagle.EagleTypeError as e:
            refused = str(e)
        result = [v.tolist(), refused]
    """, cpu_backend_path)
    values, refused = out.expect_ok()
    assert values == [2.0 * j for j in range(8)] and "array of float64" in refused


def test_a_distributed_global_plane_is_taken_by_a_typed_parameter(cpu_backend_path):
    # eagle.distributed's Job.plane: an address biased by -base elements (an int subclass), whose
    # kernel indexes the global samples of the rank's share [base, base + count)
    out = _run("""
        from eagle import distributed as ed
        from eagle.distributed.job import GlobalPlane
        from eagle._arrays import address_of
        p = ed.split(10, 3, 1)
        share = np.ones(p.count)
        plane = GlobalPlane(address_of(share).ptr - p.base * 8, share, p)
        eagle.run(m.scale, [plane, 3], 10, base=p.base, count=p.count, n_samples=10)
        short = GlobalPlane(address_of(share).ptr - p.base * 8, share[:2], p)
        try:
            eagle.run(m.scale, [short, 3.0], 10, base=p.base, count=p.count, n_samples=10)
        except eagle.EagleValueError as e:
            refused = str(e)
        result = [[p.base, p.count], share.tolist(), refused]
    """, cpu_backend_path)
    (base, count), values, refused = out.expect_ok()
    assert (base, count) == (4, 3) and values == [3.0, 3.0, 3.0] and "argument 0 (x" in refused
