"""``stream=None`` means one thing at every public entry point that does work on arrays (issue 33,
eagle/_inflight.py): the work runs on eagle's own stream and the call returns when it is done, even
behind work already queued on the backend's default stream or on eagle's own stream. An explicit
stream is the asynchronous path: the call returns at once, and the output is written after that
stream's ``synchronize()``.

Each case enqueues one piece of work whose output starts as zeros and is checked against numpy.
The work queued ahead is a Python host function that waits for a gate: opened by a timer for the
calls with no stream (which must wait for it), and only after the call has returned for the calls
on an explicit stream (which must not). Outputs are read without waiting for the gated streams:
host memory directly, device memory through a non-blocking stream of its own.

On cpu the arrays are numpy's (the exact-type fast paths) and eagle's; on cuda (marked gpu) they
are eagle's DeviceArrays, and the pinned cases copy page-locked host memory."""
import threading
import time

import numpy as np
import pytest

import eagle
from eagle._inflight import own_stream

SLOW_S = 0.15  # the gate's timer for the calls with no stream
GATE_S = 10.0  # a gate nobody opens opens itself: a call that waits for it fails, it does not hang
N = 257
MASK = (np.arange(N) % 3 == 0).astype(np.uint8)
KERNEL = "#include <eagle/kernel.h>\nEAGLE_KERNEL(bump, (double*, x)) { (void)n; x[i] += 1.0; }\n"


@pytest.fixture(scope="module", params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu), pytest.param("opencl", marks=pytest.mark.opencl)])
def b(request):
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="module")
def bump(b):
    return eagle.compile(KERNEL, backend=b).bump


def _host_kind(b):
    return 1 in b.device_types  # kDLCPU: the host reads this backend's memory directly


def read(b, a):
    """A numpy copy of ``a``, read without waiting for any stream but a non-blocking one of its own."""
    if isinstance(a, np.ndarray) or _host_kind(b):
        return np.array(np.asarray(a))
    t = b.stream(non_blocking=True)
    try:
        out = np.zeros(a.shape, a.dtype)
        b.copy(out, a, stream=t)
        t.synchronize()
        return out
    finally:
        t.close()


def write(b, a, values):
    if isinstance(a, np.ndarray) or _host_kind(b):
        np.asarray(a)[...] = values
        return
    t = b.stream(non_blocking=True)
    try:
        b.copy(a, np.ascontiguousarray(values, a.dtype), stream=t)
        t.synchronize()
    finally:
        t.close()


def _native(b, values):
    """The kind's own arrays: numpy's where the host reads the memory, else eagle's."""
    return values.copy() if _host_kind(b) else b.asarray(values)


def _device(b, values):
    return b.asarray(values)


def _pinned(b, values):
    out = eagle.pinned(values.shape, values.dtype, backend=b)
    out[...] = values
    return out


def _copy_case(call, make):
    """A copy of 0..N-1 into zeros; ``make(b, values)`` makes each side."""
    def case(b, bump, stream):
        src, dst = make(b, np.arange(N, dtype=np.float64)), make(b, np.zeros(N))
        call(b, dst, src, stream)
        return lambda: np.array_equal(read(b, dst), np.arange(N, dtype=np.float64))
    return case


def _run_case(call):
    def case(b, bump, stream):
        x = _native(b, np.zeros(N))
        call(b, bump, x, stream)
        return lambda: np.array_equal(read(b, x), np.ones(N))
    return case


def _compacted(b, index_map, count, mask=MASK):
    """The compaction of ``mask`` (drop=False: the positions of its nonzero bytes) is in place."""
    want = np.flatnonzero(mask)
    got = int(read(b, count)[0])
    return got == want.size and np.array_equal(read(b, index_map)[:got], want)


def _compact_case(call, make=_native):
    def case(b, bump, stream):
        scratch = make(b, np.zeros(max(b.compact_scratch_bytes(N), 1), np.uint8))
        mask, index_map, count = make(b, MASK), make(b, np.zeros(N, np.int32)), make(b, np.zeros(1, np.uint32))
        call(b, mask, index_map, count, scratch, stream)
        return lambda: _compacted(b, index_map, count)
    return case


def _memo_hit_case(b, bump, stream):
    """eagle.compact of eagle's own arrays, called again with the same objects (with no stream:
    the memo's hit, eagle/_eager_memo.py), after a first call with no stream compacted an all-zero
    mask."""
    arrays = [b.asarray(a) for a in (np.zeros(N, np.uint8), np.zeros(N, np.int32), np.zeros(1, np.uint32),
                                      np.zeros(max(b.compact_scratch_bytes(N), 1), np.uint8))]
    mask, index_map, count, scratch = arrays
    eagle.compact(mask, index_map, count, scratch)  # no stream: the call the memo keeps
    assert int(read(b, count)[0]) == 0
    write(b, mask, MASK)
    eagle.compact(mask, index_map, count, scratch, **_s(stream))
    return lambda: _compacted(b, index_map, count)


def _activeset_case(reorder):
    def case(b, bump, stream):
        # ActiveSet's mask is a drop mask: the live samples are its zeros
        drop = _native(b, (1 - MASK).astype(np.uint8))
        planes = [_native(b, np.arange(N, dtype=np.float64))] if reorder else []
        aset = eagle.ActiveSet(drop, reorder=reorder, planes=planes, backend=b)
        aset.compact(stream)  # the first compaction: the reorder has not fired, nothing moves
        return lambda: _compacted(b, aset.index_map, aset.count)
    return case


def _s(stream):
    return {} if stream is None else {"stream": stream}


def _pinned_round_trip(b, stream):
    """Device array -> pinned -> device array, each by eagle.copy with its backend= (pinned memory
    is host memory: numpy's type, which alone would name the cpu kind)."""
    src = b.asarray(np.arange(N, dtype=np.float64))
    host, dst = _pinned(b, np.zeros(N)), b.zeros(N)
    eagle.copy(host, src, backend=b, **_s(stream))
    eagle.copy(dst, host, backend=b, **_s(stream))
    return lambda: np.array_equal(read(b, dst), np.arange(N, dtype=np.float64))


CASES = {
    "eagle.copy": _copy_case(lambda b, d, s_, st: eagle.copy(d, s_, **_s(st)), _native),
    "Backend.copy": _copy_case(lambda b, d, s_, st: b.copy(d, s_, **_s(st)), _native),
    "eagle.copy of eagle.pinned arrays": _copy_case(lambda b, d, s_, st: eagle.copy(d, s_, backend=b, **_s(st)),
                                                    _pinned),
    "Backend.copy of eagle.pinned arrays": _copy_case(lambda b, d, s_, st: b.copy(d, s_, **_s(st)), _pinned),
    "eagle.copy to and from eagle.pinned arrays": lambda b, bump, st: _pinned_round_trip(b, st),
    "eagle.run": _run_case(lambda b, k, x, st: eagle.run(k, [x], N, **_s(st))),
    "Backend.run": _run_case(lambda b, k, x, st: b.run(k, [x], N, **_s(st))),
    "Kernel.run": _run_case(lambda b, k, x, st: k.run([x], N, **_s(st))),
    "eagle.compact": _compact_case(lambda b, m, i, c, sc, st: eagle.compact(m, i, c, sc, **_s(st))),
    "eagle.compact of eagle arrays": _compact_case(lambda b, m, i, c, sc, st: eagle.compact(m, i, c, sc, **_s(st)),
                                                   _device),
    "eagle.compact, backend=": _compact_case(
        lambda b, m, i, c, sc, st: eagle.compact(m, i, c, sc, backend=b, **_s(st))),
    "Backend.compact": _compact_case(lambda b, m, i, c, sc, st: b.compact(m, i, c, sc, **_s(st))),
    "ActiveSet.compact": _activeset_case(None),
    "ActiveSet.compact with reorder": _activeset_case(0.5),
}
EXPLICIT_ONLY = {
    "Stream.copy": _copy_case(lambda b, d, s_, st: st.copy(d, s_), _native),
    "Stream.run": _run_case(lambda b, k, x, st: st.run(k, [x], N)),
}


def _gate(b, stream, opens_after=None):
    """A host function on ``stream`` (None: the default stream) that waits for the returned event;
    with ``opens_after`` a timer opens it that many seconds from now."""
    gate = threading.Event()
    b.host_func(lambda: gate.wait(GATE_S), stream=stream)
    if opens_after is not None:
        threading.Timer(opens_after, gate.set).start()
    return gate


@pytest.mark.parametrize("behind", ["the default stream", "eagle's own stream"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_no_stream_returns_with_the_output_written(b, bump, name, behind):
    _gate(b, None if behind == "the default stream" else own_stream(b), opens_after=SLOW_S)
    written = CASES[name](b, bump, None)
    assert written(), f"{name} with no stream returned before its output was written"


def test_no_stream_memo_hit_returns_with_the_output_written(b, bump):
    _gate(b, own_stream(b), opens_after=SLOW_S)
    assert _memo_hit_case(b, bump, None)()


def _explicit(b, bump, case, name):
    s = b.stream()
    gate = threading.Event()
    try:
        gate = _gate(b, s)
        t0 = time.perf_counter()
        written = case(b, bump, s)
        took = time.perf_counter() - t0
        early = written()
        gate.set()
        s.synchronize()
        assert not early and took < GATE_S / 2, f"{name} on an explicit stream waited for the work ahead of it"
        assert written(), f"{name}: the output is not written after synchronize()"
    finally:
        gate.set()
        s.synchronize()
        s.close()


@pytest.mark.parametrize("name", sorted({**CASES, **EXPLICIT_ONLY}))
def test_an_explicit_stream_returns_at_once_and_is_written_after_synchronize(b, bump, name):
    _explicit(b, bump, {**CASES, **EXPLICIT_ONLY}[name], name)


def test_an_explicit_stream_memo_hit_returns_at_once(b, bump):
    _explicit(b, bump, _memo_hit_case, "eagle.compact of eagle arrays, again")
