"""Issue 17's fast paths of eager ``eagle.compact()`` (no ``backend=``, no stream) on the cpu
backend: the exact-type resolver (eagle._resolve.resolve_exact), the desc packed in one call
(eagle._desc) and the per-thread memo of calls on arrays that never move (eagle._eager_memo) give
the answer, the result and the error of the general path (the resolver, then the enqueue that
reads every array), every time: on a first call, on a repeated one (a memo hit), with an id
recycled after its array was freed, after the environment names another library, with the
thread's own stream closed, and in threads, each on its own stream."""
import gc
import random
import threading

import numpy as np
import pytest

import eagle
from eagle import _arrays, _eager_memo, api, filtering
from eagle._arrays import ArrayInfo
from eagle._desc import Packer
from eagle._loader import TRACE_COUNTS
from eagle._resolve import resolve, resolve_exact
from eagle._seam_ffi import ffi

N = 64
MASK = (np.arange(N) % 3 == 0).astype(np.uint8)
COMPACT = "eagle_backend_compact_device"


def general(mask, index_map, count, scratch, **kw):
    """The general path: the one resolver, then the enqueue that reads every array, on eagle's own
    stream, waited for."""
    b, _ = resolve((mask, index_map, count, scratch), what="eagle.compact")
    return api.submit(b, None, filtering.enqueue_compact, mask, index_map, count, scratch, **kw)


def host(a):
    return a.numpy() if isinstance(a, eagle.DeviceArray) else np.asarray(a)


def outcome(fn, args, kw):
    """What a call gives: the count and index_map it wrote, or its exception's type and message."""
    try:
        fn(*args, **kw)
    except Exception as e:  # noqa: BLE001 - compared, not swallowed
        return type(e).__name__, str(e)
    count = int(host(args[2]).view(np.uint32)[0])
    return "ok", count, host(args[1])[:count].tolist()


class OnDevice:
    """An array type with an exact-type fast path (as eagle's own arrays have) living on a chosen
    DLPack device: host memory that says it is elsewhere."""

    def __init__(self, nbytes, device):
        self.buf = np.zeros(nbytes, np.uint8)
        self.device = device

    def __dlpack_device__(self):
        return self.device


@pytest.fixture
def on_device():
    _arrays.register_exact(OnDevice, lambda a: ArrayInfo(a.buf.ctypes.data, a.buf.nbytes, *a.device, a),
                           OnDevice.__dlpack_device__)
    yield OnDevice
    del _arrays._EXACT[OnDevice], _arrays._DEVICE_EXACT[OnDevice]


def sb(cpu):
    return cpu.compact_scratch_bytes(N)


def eagle_set(cpu, idx_n=N, count_n=1):
    return cpu.asarray(MASK), cpu.empty(idx_n, "int32"), cpu.zeros(count_n, "uint32"), cpu.zeros(sb(cpu), "uint8")


def numpy_set(cpu, idx_n=N):
    return MASK.copy(), np.zeros(idx_n, np.int32), np.zeros(1, np.uint32), np.zeros(sb(cpu), np.uint8)


def read_only(a):
    a.setflags(write=False)
    return a


# (id, make(cpu, on_device) -> (args, kw)); each case is made afresh for every call compared
CASES = [
    ("eagle arrays", lambda cpu, od: (eagle_set(cpu), {})),
    ("eagle arrays, n", lambda cpu, od: (eagle_set(cpu), {"n": N // 2})),
    ("eagle arrays, drop", lambda cpu, od: (eagle_set(cpu), {"drop": True})),
    ("eagle arrays, drop as an int", lambda cpu, od: (eagle_set(cpu), {"drop": 1})),
    ("eagle arrays, theta", lambda cpu, od: (eagle_set(cpu), {"theta": 0.5})),
    ("numpy arrays", lambda cpu, od: (numpy_set(cpu), {})),
    ("eagle and numpy arrays", lambda cpu, od: (eagle_set(cpu)[:2] + numpy_set(cpu)[2:], {})),
    ("eagle arrays of a traced cpu backend", lambda cpu, od: (eagle_set(eagle.backend("cpu", trace=True)), {})),
    ("a read-only numpy count", lambda cpu, od: (eagle_set(cpu)[:2] + (read_only(np.zeros(1, np.uint32)),
                                                                      eagle_set(cpu)[3]), {})),
    ("a read-only numpy index_map", lambda cpu, od: ((MASK.copy(), read_only(np.zeros(N, np.int32)))
                                                     + numpy_set(cpu)[2:], {})),
    ("a read-only numpy scratch", lambda cpu, od: (numpy_set(cpu)[:3] + (read_only(np.zeros(sb(cpu), np.uint8)),),
                                                   {})),
    ("a too-small eagle index_map", lambda cpu, od: (eagle_set(cpu, idx_n=N - 1), {})),
    ("a too-small numpy index_map", lambda cpu, od: (numpy_set(cpu, idx_n=N - 1), {})),
    ("an empty eagle count", lambda cpu, od: (eagle_set(cpu, count_n=0), {})),
    ("n beyond the mask", lambda cpu, od: (eagle_set(cpu), {"n": N + 1})),
    ("a negative n", lambda cpu, od: (eagle_set(cpu), {"n": -1})),
    ("n as a bool", lambda cpu, od: (eagle_set(cpu), {"n": True})),
    ("n as a float", lambda cpu, od: (eagle_set(cpu), {"n": 2.5})),
    ("n as a numpy int", lambda cpu, od: (eagle_set(cpu), {"n": np.int64(N)})),
    ("no scratch", lambda cpu, od: (eagle_set(cpu)[:3] + (None,), {})),
    ("a too-small scratch", lambda cpu, od: (eagle_set(cpu)[:3] + (cpu.zeros(1, "uint8"),), {})),
    ("an unknown flag", lambda cpu, od: (eagle_set(cpu), {"flags": 2})),
    ("flags out of range", lambda cpu, od: (eagle_set(cpu), {"flags": 1 << 40})),
    ("a float device", lambda cpu, od: (eagle_set(cpu), {"device": 0.5})),
    ("an unknown keyword", lambda cpu, od: (eagle_set(cpu), {"nn": 3})),
    ("a strided numpy index_map", lambda cpu, od: ((MASK.copy(), np.zeros(2 * N, np.int32)[::2])
                                                   + numpy_set(cpu)[2:], {})),
    ("a list as the mask", lambda cpu, od: ((MASK.tolist(),) + numpy_set(cpu)[1:], {})),
    ("an array on another device", lambda cpu, od: (eagle_set(cpu)[:2] + (od(4, (1, 1)), eagle_set(cpu)[3]), {})),
    ("arrays on a device no backend serves", lambda cpu, od: ((od(N, (99, 0)), od(4 * N, (99, 0)), od(4, (99, 0)),
                                                               od(4096, (99, 0))), {})),
    ("a host array beside device arrays", lambda cpu, od: ((od(N, (2, 0)), od(4 * N, (2, 0)), np.zeros(1, np.uint32),
                                                            od(4096, (2, 0))), {})),
]


@pytest.mark.parametrize("make", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_eager_compact_gives_what_the_general_path_gives(cpu, on_device, make):
    expect = outcome(general, *make(cpu, on_device))
    args, kw = make(cpu, on_device)
    first = outcome(eagle.compact, args, kw)
    again = outcome(eagle.compact, args, kw)  # the same objects: a memo hit where one was kept
    assert first == expect and again == expect


def test_the_exact_resolver_answers_as_the_resolver_does(cpu, on_device):
    traced = eagle.backend("cpu", trace=True)
    for arrays in (eagle_set(cpu), numpy_set(cpu), eagle_set(traced), eagle_set(cpu)[:2] + numpy_set(cpu)[2:],
                   (on_device(4, (1, 0)), np.zeros(3))):
        b, device, infos = resolve_exact(arrays)
        assert (b, device) == resolve(arrays, what="x")
        assert [(i.ptr, i.nbytes, i.device_type, i.device_id, i.readonly) for i in infos] == \
            [(i.ptr, i.nbytes, i.device_type, i.device_id, i.readonly) for i in map(_arrays.address_of, arrays)]
    for arrays in ((), (MASK.tolist(),), (np.zeros(8)[::2],), (np.zeros(4).view(np.matrix),), (1024,),
                   (np.zeros(4), on_device(4, (1, 1))), (on_device(4, (99, 0)),), (None,)):
        assert resolve_exact(arrays) is None, arrays


def test_a_memo_hit_compacts_the_mask_as_it_is_now(cpu):
    mask, idx, count, scratch = eagle_set(cpu)
    for m in (MASK, 1 - MASK, np.zeros(N, np.uint8), np.ones(N, np.uint8)):
        eagle.copy(mask, m)
        eagle.compact(mask, idx, count, scratch)
        want = np.flatnonzero(m)
        assert int(count.numpy()[0]) == want.size and (idx.numpy()[:want.size] == want).all()
    key = (id(mask), id(idx), id(count), id(scratch), None, False)
    assert _eager_memo.table()[key].holds4(mask, idx, count, scratch)  # the loop above hit it


def test_foreign_arrays_are_never_memoized(cpu):
    before = dict(_eager_memo.table())
    args = numpy_set(cpu)
    eagle.compact(*args)
    eagle.compact(*(eagle_set(cpu)[:3] + numpy_set(cpu)[3:]))
    assert _eager_memo.table() == before


def test_cupys_arrays_are_memoized_and_a_hit_compacts_the_mask_as_it_is_now(cpu):
    """CuPy's ndarray is registered stable with its reader (its memory, dtype and strides cannot
    change): after the call that learns the type, eager calls on the same four objects hit the
    memo. Checked with the stand-in of CuPy's class over host memory (tests/test_gpu_arrays.py
    checks real CuPy arrays)."""
    from test_array_fast_paths import _fake_cupy_ndarray_class
    cls = _fake_cupy_ndarray_class()
    try:
        bufs = numpy_set(cpu)
        fake = [cls(b.ctypes.data, (b.size,), b.itemsize, device=(1, 0)) for b in bufs]
        key = tuple(map(id, fake)) + (None, False)
        for m in (MASK, 1 - MASK, np.zeros(N, np.uint8), np.ones(N, np.uint8), MASK):
            bufs[0][:] = m
            eagle.compact(*fake)
            want = np.flatnonzero(m)
            assert int(bufs[2][0]) == want.size and (bufs[1][:want.size] == want).all()
        assert cls in _arrays.STABLE
        assert _eager_memo.table()[key].holds4(*fake)
        # the same call on numpy's arrays over the same memory is never kept
        before = dict(_eager_memo.table())
        eagle.compact(*bufs)
        assert _eager_memo.table() == before
    finally:
        _arrays._EXACT.pop(cls, None)
        _arrays._DEVICE_EXACT.pop(cls, None)
        _arrays.STABLE.discard(cls)
        _eager_memo.table().clear()


def test_a_recycled_id_never_hits(cpu):
    mask, idx, count, scratch = eagle_set(cpu)
    eagle.compact(mask, idx, count, scratch)
    key = (id(mask), id(idx), id(count), id(scratch), None, False)
    table = _eager_memo.table()
    stale = table[key]
    old = id(idx)
    del idx
    gc.collect()
    assert stale.refs[1]() is None
    # a too-small index_map, under the freed one's id when the allocator gives it back (CPython
    # usually does); otherwise the stale entry is planted under the new array's id
    kept, small = [], None
    for _ in range(200):
        a = cpu.empty(N // 2, "int32")
        if id(a) == old:
            small = a
            break
        kept.append(a)
    if small is None:
        small = kept.pop()
        table[(id(mask), id(small), id(count), id(scratch), None, False)] = stale
    with pytest.raises(eagle.EagleValueError, match=r"index_map holds 128 bytes, 256 are needed"):
        eagle.compact(mask, small, count, scratch)


def test_the_memo_keeps_no_array_alive_and_stays_bounded(cpu):
    scratch = cpu.zeros(sb(cpu), "uint8")
    refs = []
    for _ in range(3 * _eager_memo.LIMIT):
        mask, idx, count = cpu.asarray(MASK), cpu.empty(N, "int32"), cpu.zeros(1, "uint32")
        eagle.compact(mask, idx, count, scratch)
        refs.append(_eager_memo.table()[(id(mask), id(idx), id(count), id(scratch), None, False)].refs)
    del mask, idx, count
    gc.collect()
    assert len(_eager_memo.table()) <= _eager_memo.LIMIT
    assert all(r() is None for rs in refs for r in rs[:3])


def test_a_memo_hit_follows_the_environment_to_another_library(cpu, monkeypatch):
    args = eagle_set(cpu)
    eagle.compact(*args)
    before = TRACE_COUNTS[COMPACT]
    monkeypatch.setenv("EAGLE_TRACE_CALLS", "1")  # eagle.backend("cpu") is now the traced library
    eagle.compact(*args)
    eagle.compact(*args)
    assert TRACE_COUNTS[COMPACT] == before + 2
    monkeypatch.delenv("EAGLE_TRACE_CALLS")
    eagle.compact(*args)
    assert TRACE_COUNTS[COMPACT] == before + 2
    assert int(args[2].numpy()[0]) == int(MASK.sum())


def in_thread(fn):
    """Run ``fn`` in a new thread; return what it returned (or raise what it raised)."""
    out = {}

    def body():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            out["error"] = e

    t = threading.Thread(target=body)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_with_its_own_stream_closed_a_memo_hit_raises_as_the_general_path_does(cpu):
    def closed():
        args = eagle_set(cpu)
        eagle.compact(*args)  # kept in this thread's memo
        api.own_stream(cpu).close()
        return outcome(eagle.compact, args, {}), outcome(general, eagle_set(cpu), {})

    hit, expect = in_thread(closed)
    assert hit == expect and hit[0] == "HandleError"


def test_threads_each_compact_on_their_own_stream(cpu):
    shared = eagle_set(cpu)
    in_thread(lambda: eagle.compact(*shared))  # kept in that thread's memo, with its stream
    rounds = 30

    def worker(seed):
        rng = random.Random(seed)
        mask, idx, count, scratch = eagle_set(cpu)
        for _ in range(rounds):
            m = np.array([rng.random() < 0.5 for _ in range(N)], np.uint8)
            eagle.copy(mask, m)
            eagle.compact(mask, idx, count, scratch)
            want = np.flatnonzero(m)
            assert int(count.numpy()[0]) == want.size and (idx.numpy()[:want.size] == want).all()
        eagle.compact(*shared)  # the arrays another thread compacted: this thread's own entry
        entry = _eager_memo.table()[tuple(map(id, shared)) + (None, False)]
        assert entry.holds4(*shared)
        own = api.own_stream(cpu)
        assert entry.stream is own and entry.raw == own.handle
        return own.handle

    results, errors = [], []

    def run(seed):
        try:
            results.append(worker(seed))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(set(results)) == 4 and api.own_stream(cpu).handle not in results


def test_the_packer_writes_what_field_assignment_writes():
    name = "struct eagle_backend_compact_desc"
    fields = ("struct_size", "flags", "device", "mask", "index_map", "count", "scratch", "n", "stream",
              "scratch_bytes", "live32", "span", "fire", "theta")
    p = Packer(name, fields)
    rng = random.Random(7)
    for _ in range(50):
        values = (ffi.sizeof(name), rng.getrandbits(32), rng.randrange(-2 ** 31, 2 ** 31),
                  *(rng.getrandbits(64) for _ in range(4)), rng.randrange(-2 ** 63, 2 ** 63), rng.getrandbits(64),
                  rng.randrange(-2 ** 63, 2 ** 63), *(rng.getrandbits(64) for _ in range(3)), rng.random())
        ref = ffi.new(name + "*")
        for f, v in zip(fields, values):
            setattr(ref, f, v)
        assert ffi.buffer(p.new(*values))[:] == ffi.buffer(ref)[:]
    assert filtering._COMPACT.fields == fields


@pytest.mark.parametrize("field,value", [("flags", 1 << 32), ("flags", -1), ("flags", 1.5), ("device", 1 << 31),
                                         ("mask", 1 << 64), ("mask", "x"), ("theta", "x")])
def test_the_packer_refuses_what_cffi_refuses(field, value):
    name = "struct eagle_backend_compact_desc"
    p = Packer(name, ("flags", "device", "mask", "theta"))
    values = {"flags": 0, "device": -1, "mask": 0, "theta": 0.0, field: value}
    with pytest.raises(Exception) as cffi_error:
        ffi.new(name + "*", values)
    with pytest.raises(type(cffi_error.value)):
        p.new(*values.values())


def test_the_packer_refuses_fields_out_of_order_or_unknown():
    with pytest.raises(ValueError, match="in its order"):
        Packer("struct eagle_backend_compact_desc", ("mask", "flags"))
    with pytest.raises(KeyError, match="no field"):
        Packer("struct eagle_backend_compact_desc", ("flags", "nope"))


def test_the_fast_path_knows_every_keyword_of_the_enqueue():
    import inspect
    params = inspect.signature(filtering.enqueue_compact).parameters.values()
    assert api._COMPACT_KEYWORDS == {p.name for p in params if p.kind is p.KEYWORD_ONLY} - {"stream"}
