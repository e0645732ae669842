"""Checks of the ``exec`` group: run_device runs each lane of its partition exactly once and refuses bad
arguments."""
import numpy as np

from ..._seam_ffi import ffi
from .._registry import CheckFailure
from ._helpers import Objects, UNKNOWN_FLAG, bcheck, expect_equal, refused, unknown_flags_check


@unknown_flags_check("exec", "launch_desc.flags")
def _exec_flags(s):
    s.require("stream")
    mem = s.device()
    x = mem.zeros(4, "int64")
    h, raw = s.new_stream()
    try:
        st = _launch_raw(s, raw, x, UNKNOWN_FLAG)
        s.raw("stream_synchronize", h)
        return refused(s, "run_device", st)
    finally:
        s.raw("stream_release", h)


def _launch_raw(s, raw, x, flags):
    storage = ffi.new("int64_t[4]", [x.addr, 1, 1, 0])
    params = ffi.new("uint64_t[4]", [int(ffi.cast("uintptr_t", storage + i)) for i in range(4)])
    d = ffi.new("struct eagle_backend_launch_desc*")
    d.struct_size, d.flags, d.device = ffi.sizeof(d[0]), flags, -1
    d.function = s.kernels.handle("affine")
    d.params, d.param_sizes, d.nparams = params, ffi.NULL, 4
    d.base, d.count, d.n_samples, d.stream = 0, 4, 4, raw
    launched = ffi.new("int32_t*")
    return s.raw("run_device", d, launched)


@bcheck("exec.partition", needs=("stream",))
def exec_partition(s):
    """run_device runs each lane of [base, base+count) exactly once, passes n_samples, and
    leaves the rest alone; count 0 launches nothing (*launched = 0)."""
    mem = s.device()
    n = 1000
    with Objects(s) as o:
        h, raw = o.stream()
        x = mem.zeros(n, np.int64)
        launched = s.launch("stamp", raw, [x.addr], n, base=100, count=500, n_samples=n)
        if launched != 1:
            raise CheckFailure(f"run_device wrote *launched = {launched} for a non-empty partition")
        launched = s.launch("stamp", raw, [x.addr], n, base=700, count=0, n_samples=n)
        if launched != 0:
            raise CheckFailure(f"run_device wrote *launched = {launched} for count 0")
        s.sync(h)
        want = np.zeros(n, np.int64)
        want[100:600] = n
        expect_equal("lanes after run_device over [100, 600) of 1000", x.get(), want)
        big = 100003
        y = mem.zeros(big, np.int64)
        for _ in range(2):
            s.launch("affine", raw, [y.addr, 3, 1, 0], big)
        z = mem.zeros(big, np.int64)
        s.launch("stamp", raw, [z.addr], big, base=3, count=big - 3, n_samples=big)
        s.sync(h)
        expect_equal(f"{big} lanes after two launches", y.get(), np.full(big, 4))
        want = np.full(big, big, np.int64)
        want[:3] = 0
        expect_equal(f"n_samples seen by every lane of a {big - 3}-lane launch (however it is split)", z.get(), want)


@bcheck("exec.bad_arguments", needs=("stream",))
def exec_bad_arguments(s):
    """A partition beyond n_samples, a negative count and nparams > 64 are INVALID_ARGUMENT."""
    mem = s.device()
    x = mem.zeros(8, np.int64)
    with Objects(s) as o:
        h, raw = o.stream()
        fn = s.kernels.handle("stamp")
        for what, base, count, ns, nparams in (("base + count > n_samples", 4, 8, 8, 1),
                                               ("negative count", 0, -1, 8, 1),
                                               ("nparams 65", 0, 8, 8, 65)):
            storage = ffi.new("int64_t[65]", [x.addr] * 65)
            params = ffi.new("uint64_t[65]", [int(ffi.cast("uintptr_t", storage + i)) for i in range(65)])
            d = ffi.new("struct eagle_backend_launch_desc*")
            d.struct_size, d.device, d.function = ffi.sizeof(d[0]), -1, fn
            d.params, d.nparams, d.base, d.count, d.n_samples, d.stream = params, nparams, base, count, ns, raw
            s.expect("run_device", "INVALID_ARGUMENT", d, ffi.new("int32_t*"), why=what)
        s.sync(h)
        expect_equal("x after refused launches", x.get(), np.zeros(8))


@bcheck("exec.partition_boundaries", needs=("stream",))
def exec_partition_boundaries(s):
    """The partition triple at its limits: n_samples == base + count, count 0 and the last lane
    alone are launched; n_samples one short of base + count, n_samples between count and
    base + count, a negative base, count or n_samples, and base + count past INT64_MAX are
    INVALID_ARGUMENT; nparams -1 and 65 too. The kernel runs exactly the accepted lanes."""
    mem = s.device()
    n = 8
    x = mem.zeros(n, np.int64)
    fn = s.kernels.handle("affine")
    big = 2**63 - 1
    accepted = ((4, 4, 8), (0, 0, 0), (0, 8, 8), (7, 1, 8), (0, 0, 8))
    refused_ = ((4, 4, 7), (4, 4, 6), (-1, 1, 8), (0, -1, 8), (0, 1, -1), (big, 1, big), (1, big, big))
    with Objects(s) as o:
        h, raw = o.stream()
        storage = ffi.new("int64_t[4]", [x.addr, 1, 1, 0])
        params = ffi.new("uint64_t[4]", [int(ffi.cast("uintptr_t", storage + i)) for i in range(4)])

        def desc(base, count, ns, nparams=4):
            d = ffi.new("struct eagle_backend_launch_desc*")
            d.struct_size, d.device, d.function = ffi.sizeof(d[0]), -1, fn
            d.params, d.nparams, d.base, d.count, d.n_samples, d.stream = params, nparams, base, count, ns, raw
            return d

        launched = ffi.new("int32_t*", 7)
        for base, count, ns in accepted:
            launched[0] = 7
            st = int(s.raw("run_device", desc(base, count, ns), launched))
            if st:
                raise CheckFailure(f"run_device with base {base}, count {count}, n_samples {ns} returned "
                                   f"{st}: {s.last_error()!r}; n_samples >= base + count is a partition")
            if launched[0] != (1 if count else 0):
                raise CheckFailure(f"run_device (base {base}, count {count}) wrote *launched = {launched[0]}")
        for base, count, ns in refused_:
            s.expect("run_device", "INVALID_ARGUMENT", desc(base, count, ns), launched,
                     why=f"base {base}, count {count}, n_samples {ns}")
        for nparams in (-1, 65):
            s.expect("run_device", "INVALID_ARGUMENT", desc(0, 1, 8, nparams), launched, why=f"nparams {nparams}")
        s.sync(h)
        want = np.zeros(n, np.int64)
        for base, count, _ns in accepted:
            want[base:base + count] += 1
        expect_equal("x after the accepted launches (each adds 1 to its lanes)", x.get(), want)
    return "accepted and refused at every limit of the triple"
