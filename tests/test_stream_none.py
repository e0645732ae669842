"""``stream=None`` means one thing at every public entry point that does work on arrays (issue 33,
eagle/_inflight.py): the work runs on eagle's own stream and the call returns when it is done, even
behind slow work already queued on the backend's default stream or on eagle's own stream. An
explicit stream is the asynchronous path: the call returns at once, and the output is written
after that stream's ``synchronize()``.

Each case enqueues one piece of work whose output starts as zeros and is checked against numpy.
The work queued ahead is a Python host function that waits for a gate: opened by a timer for the
calls with no stream (which must wait for it), and only after the call has returned for the calls
on an explicit stream (which must not). Outputs are read through host views (numpy arrays,
``np.asarray`` of a cpu DeviceArray), never through a stream, which would wait itself."""
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


@pytest.fixture(scope="module")
def bump(cpu):
    return eagle.compile(KERNEL, backend=cpu).bump


def _copy_case(call, make):
    """A copy of 0..N-1 into zeros; ``make(values)`` makes each side."""
    def case(b, bump, stream):
        src, dst = make(b, np.arange(N, dtype=np.float64)), make(b, np.zeros(N))
        call(b, dst, src, stream)
        return lambda: np.array_equal(np.asarray(dst), np.arange(N, dtype=np.float64))
    return case


def _numpy(b, values):
    return values.copy()


def _pinned(b, values):
    out = eagle.pinned(values.shape, values.dtype, backend=b)
    out[...] = values
    return out


def _run_case(call):
    def case(b, bump, stream):
        x = np.zeros(N)
        call(b, bump, x, stream)
        return lambda: np.array_equal(x, np.ones(N))
    return case


def _compacted(index_map, count, mask=MASK):
    """The compaction of ``mask`` (drop=False: the positions of its nonzero bytes) is in place."""
    want = np.flatnonzero(mask)
    got = int(np.asarray(count)[0])
    return got == want.size and np.array_equal(np.asarray(index_map)[:got], want)


def _compact_case(call, make=_numpy):
    def case(b, bump, stream):
        scratch = make(b, np.zeros(max(b.compact_scratch_bytes(N), 1), np.uint8))
        mask, index_map, count = make(b, MASK), make(b, np.zeros(N, np.int32)), make(b, np.zeros(1, np.uint32))
        call(b, mask, index_map, count, scratch, stream)
        return lambda: _compacted(index_map, count)
    return case


def _device(b, values):
    return b.asarray(values)


def _memo_hit_case(b, bump, stream):
    """eagle.compact of eagle's own arrays, called again with the same objects (with no stream:
    the memo's hit, eagle/_eager_memo.py), after a first call with no stream compacted an all-zero
    mask."""
    arrays = [b.asarray(a) for a in (np.zeros(N, np.uint8), np.zeros(N, np.int32), np.zeros(1, np.uint32),
                                      np.zeros(max(b.compact_scratch_bytes(N), 1), np.uint8))]
    mask, index_map, count, scratch = arrays
    eagle.compact(mask, index_map, count, scratch)  # no stream: the call the memo keeps
    assert int(np.asarray(count)[0]) == 0
    np.asarray(mask)[...] = MASK  # the host's view of cpu memory
    eagle.compact(mask, index_map, count, scratch, **_s(stream))
    return lambda: _compacted(index_map, count)


def _activeset_case(reorder):
    def case(b, bump, stream):
        # ActiveSet's mask is a drop mask: the live samples are its zeros
        drop = (1 - MASK).astype(np.uint8)
        planes = [np.arange(N, dtype=np.float64)] if reorder else []
        aset = eagle.ActiveSet(drop, reorder=reorder, planes=planes, backend=b)
        aset.compact(stream)  # the first compaction: the reorder has not fired, nothing moves
        return lambda: _compacted(aset.index_map, aset.count)
    return case


def _s(stream):
    return {} if stream is None else {"stream": stream}


CASES = {
    "eagle.copy": _copy_case(lambda b, d, s_, st: eagle.copy(d, s_, **_s(st)), _numpy),
    "Backend.copy": _copy_case(lambda b, d, s_, st: b.copy(d, s_, **_s(st)), _numpy),
    "eagle.copy of eagle.pinned arrays": _copy_case(lambda b, d, s_, st: eagle.copy(d, s_, **_s(st)), _pinned),
    "Backend.copy of Backend.pinned arrays": _copy_case(lambda b, d, s_, st: b.copy(d, s_, **_s(st)), _pinned),
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
    "Stream.copy": _copy_case(lambda b, d, s_, st: st.copy(d, s_), _numpy),
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
def test_no_stream_returns_with_the_output_written(cpu, bump, name, behind):
    _gate(cpu, None if behind == "the default stream" else own_stream(cpu), opens_after=SLOW_S)
    written = CASES[name](cpu, bump, None)
    assert written(), f"{name} with no stream returned before its output was written"


def test_no_stream_memo_hit_returns_with_the_output_written(cpu, bump):
    _gate(cpu, own_stream(cpu), opens_after=SLOW_S)
    assert _memo_hit_case(cpu, bump, None)()


def _explicit(cpu, bump, case, name):
    s = cpu.stream()
    gate = threading.Event()
    try:
        gate = _gate(cpu, s)
        t0 = time.perf_counter()
        written = case(cpu, bump, s)
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
def test_an_explicit_stream_returns_at_once_and_is_written_after_synchronize(cpu, bump, name):
    _explicit(cpu, bump, {**CASES, **EXPLICIT_ONLY}[name], name)


def test_an_explicit_stream_memo_hit_returns_at_once(cpu, bump):
    _explicit(cpu, bump, _memo_hit_case, "eagle.compact of eagle arrays, again")
