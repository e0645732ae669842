"""compact_device and reorder_device on the cpu backend: bit-exact with numpy, guard bytes after
every buffer untouched, n >= 2^31 refused without allocating, capturable."""
import numpy as np
import pytest

import eagle

SIZES = [0, 1, 7, 256, 257, 4096, 100_003, pytest.param(10 ** 7, marks=pytest.mark.slow)]  # 10^7: 5 s each
GUARD = 64
SENTINEL = 0xA5


def _guarded(n, dtype, fill):
    """An array of n elements followed by GUARD sentinel bytes: (view, whole byte buffer)."""
    dtype = np.dtype(dtype)
    raw = np.full(n * dtype.itemsize + GUARD, SENTINEL, np.uint8)
    view = raw[:n * dtype.itemsize].view(dtype)
    if dtype.kind == "V":
        raw[:n * dtype.itemsize] = fill
    else:
        view[...] = fill
    return view, raw


def _assert_guard(raw, what):
    assert (raw[-GUARD:] == SENTINEL).all(), f"{what}: bytes past the buffer were written"


def _mask(n, density, seed):
    rng = np.random.default_rng(seed)
    m = (rng.random(n) < density).astype(np.uint8)
    m[m == 1] = rng.integers(1, 256, size=int(m.sum()), dtype=np.uint8)  # any nonzero byte keeps
    return m


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("drop", [False, True])
def test_compaction_bit_exact_with_numpy(cpu, n, drop):
    density = 0.3 if n < 10 ** 7 else 0.5
    mask_v, mask_raw = _guarded(n, np.uint8, 0)
    mask_v[:] = _mask(n, density, n)
    idx, idx_raw = _guarded(n, np.int32, -77)
    count, count_raw = _guarded(1, np.uint32, 0xFFFFFFFF)
    sb = cpu.compact_scratch_bytes(n)
    assert sb >= 0
    scratch, scratch_raw = _guarded(sb, np.uint8, 0)
    s = cpu.stream()
    cpu.compact(mask_v, idx, count, scratch, drop=drop, stream=s)
    s.synchronize()
    expect = np.flatnonzero(mask_v == 0) if drop else np.flatnonzero(mask_v)
    k = int(count[0])
    assert k == expect.size
    np.testing.assert_array_equal(idx[:k], expect.astype(np.int32))
    assert (idx[k:] == -77).all()  # the tail is untouched
    for raw, what in ((mask_raw, "mask"), (idx_raw, "index_map"), (count_raw, "count"),
                      (scratch_raw, "scratch")):
        _assert_guard(raw, what)


@pytest.mark.parametrize("n", [7, 9, 65_536 + 5, 300_001])
@pytest.mark.parametrize("density", [0.003, 0.997])
@pytest.mark.parametrize("drop", [False, True])
def test_sparse_and_dense_masks_compact_bit_exact(cpu, n, density, drop):
    # long runs with nothing kept are skipped 8 bytes at a time; kept bytes at the very start,
    # the very end and in the tail of fewer than 8 bytes must all be found
    m = _mask(n, density, n + 1)
    m[0], m[-1] = 5, 0
    m[-3:-1] = (0, 9) if drop else (9, 0)
    idx, count = np.full(n, -77, np.int32), np.zeros(1, np.uint32)
    scratch = np.zeros(cpu.compact_scratch_bytes(n), np.uint8)
    s = cpu.stream()
    cpu.compact(m, idx, count, scratch, drop=drop, stream=s)
    s.synchronize()
    expect = np.flatnonzero(m == 0) if drop else np.flatnonzero(m)
    k = int(count[0])
    assert k == expect.size
    np.testing.assert_array_equal(idx[:k], expect.astype(np.int32))
    assert (idx[k:] == -77).all()


@pytest.mark.parametrize("density", [0.0, 1.0])
def test_compaction_all_or_nothing(cpu, density):
    n = 70_001
    m = np.full(n, 1 if density else 0, np.uint8)
    idx, count = np.full(n, -1, np.int32), np.zeros(1, np.uint32)
    scratch = np.zeros(cpu.compact_scratch_bytes(n), np.uint8)
    s = cpu.stream()
    cpu.compact(m, idx, count, scratch, stream=s)
    s.synchronize()
    assert count[0] == (n if density else 0)
    if density:
        np.testing.assert_array_equal(idx, np.arange(n, dtype=np.int32))


@pytest.mark.parametrize("theta,live,span,fires", [
    (0.5, 10, 100, 1), (0.5, 60, 100, 0), (1.0, 100, 100, 0), (1.0, 99, 100, 1), (0.1, 10, 100, 1)])
def test_compaction_reorder_trigger(cpu, theta, live, span, fires):
    m = np.zeros(span, np.uint8)
    m[np.linspace(0, span - 1, live).astype(int)] = 1
    assert m.sum() == live
    idx, count = np.zeros(span, np.int32), np.zeros(1, np.uint32)
    live32, span_w, fire = np.zeros(1, np.uint32), np.array([span], np.uint32), np.array([7], np.uint32)
    s = cpu.stream()
    scratch = np.zeros(cpu.compact_scratch_bytes(span), np.uint8)  # must live until the stream ran
    cpu.compact(m, idx, count, scratch, stream=s, live32=live32, span=span_w, fire=fire, theta=theta)
    s.synchronize()
    assert count[0] == live and live32[0] == live and fire[0] == fires


def test_compaction_is_capturable_and_replays_on_new_masks(cpu):
    n = 5000
    m = np.zeros(n, np.uint8)
    idx, count = np.zeros(n, np.int32), np.zeros(1, np.uint32)
    scratch = np.zeros(cpu.compact_scratch_bytes(n), np.uint8)
    s = cpu.stream()
    with cpu.capture(s) as cap:
        cpu.compact(m, idx, count, scratch, stream=s)
    launcher = cpu.graph_from_captured(cap.captured).launcher()
    launcher.set_stream(s)
    for seed in range(3):
        m[:] = _mask(n, 0.2 + 0.3 * seed, seed)
        launcher.launch()
        launcher.synchronize()
        expect = np.flatnonzero(m)
        assert count[0] == expect.size and (idx[:expect.size] == expect).all()


def test_compaction_refusals(cpu):
    n = 16
    m, idx, count = np.ones(n, np.uint8), np.zeros(n, np.int32), np.zeros(1, np.uint32)
    with pytest.raises(ValueError, match="scratch"):
        cpu.compact(m, idx, count, np.zeros(1, np.uint8))
    with pytest.raises(ValueError, match="index_map holds"):
        cpu.compact(m, np.zeros(n - 1, np.int32), count, np.zeros(4096, np.uint8))
    with pytest.raises(eagle.Unsupported, match="flags"):
        cpu.compact(m, idx, count, np.zeros(4096, np.uint8), flags=2)
    with pytest.raises(ValueError, match="negative"):
        cpu.compact_scratch_bytes(-1)


def test_n_at_or_beyond_2_31_is_unsupported_without_allocating(cpu):
    tiny = np.zeros(64, np.uint8)  # never read: the size is refused first
    addr = tiny.ctypes.data
    count = np.zeros(1, np.uint32)
    scratch = np.zeros(4096, np.uint8)
    for n in (2 ** 31, 2 ** 40):
        with pytest.raises(eagle.Unsupported, match="2\\^31"):
            cpu.compact(addr, addr, count, scratch, n=n)
        with pytest.raises(eagle.Unsupported):
            cpu.compact_scratch_bytes(n)
        with pytest.raises(eagle.Unsupported):
            cpu.reorder([(addr, 8)], addr, addr, addr, count, scratch, n=n)
        with pytest.raises(eagle.Unsupported):
            cpu.reorder_scratch_bytes(n)
    assert count[0] == 0 and (tiny == 0).all()


# -- reorder -----------------------------------------------------------------------------------------

def _reorder_reference(planes, mask, perm, inv, span, drop):
    keep = (mask[:span] != 0) != drop
    order = np.concatenate([np.flatnonzero(keep), np.flatnonzero(~keep)])
    out = []
    for p in planes:
        q = p.copy()
        q[..., :span] = p[..., :span][..., order]
        out.append(q)
    perm2 = perm.copy()
    perm2[:span] = perm[:span][order]
    inv2 = inv.copy()
    inv2[perm2[:span]] = np.arange(span, dtype=np.int32)
    return out, perm2, inv2, int(keep.sum())


REORDER_SIZES = SIZES


@pytest.mark.parametrize("n", REORDER_SIZES)
def test_reorder_bit_exact_with_numpy(cpu, n):
    rng = np.random.default_rng(1000 + n)
    big = n >= 10 ** 7
    span = n if n < 300 else n - n // 7
    mask_v, mask_raw = _guarded(n, np.uint8, 0)
    mask_v[:] = _mask(n, 0.4, n + 1)
    dtypes = [np.float64, np.uint8] if big else [np.float64, np.float32, np.int16, np.uint8, "V16"]
    planes, raws = [], []
    for dt in dtypes:
        dt = np.dtype(dt)
        v, raw = _guarded(n, dt, 0)
        v.view(np.uint8)[:] = rng.integers(0, 256, size=v.nbytes, dtype=np.uint8)
        planes.append(v)
        raws.append(raw)
    if not big:  # a (3, n) component-major plane
        v, raw = _guarded(3 * n, np.float64, 0)
        v[:] = rng.random(3 * n)
        planes.append(v.reshape(3, n))
        raws.append(raw)
    perm_v, perm_raw = _guarded(n, np.int32, 0)
    perm_v[:] = rng.permutation(n).astype(np.int32)
    inv_v, inv_raw = _guarded(n, np.int32, 0)
    inv_v[perm_v] = np.arange(n, dtype=np.int32)
    span_w, span_raw = _guarded(1, np.uint32, span)
    sb = cpu.reorder_scratch_bytes(n)
    scratch, scratch_raw = _guarded(sb, np.uint8, 0)
    expect_planes, expect_perm, expect_inv, kept = _reorder_reference(planes, mask_v, perm_v, inv_v,
                                                                       span, False)
    s = cpu.stream()
    cpu.reorder(planes, mask_v, perm_v, inv_v, span_w, scratch, stream=s)
    s.synchronize()
    for got, want in zip(planes, expect_planes):
        assert got.tobytes() == want.tobytes()
    np.testing.assert_array_equal(perm_v, expect_perm)
    np.testing.assert_array_equal(inv_v, expect_inv)
    assert span_w[0] == kept
    for raw, what in [(mask_raw, "mask"), (perm_raw, "perm"), (inv_raw, "inv"), (span_raw, "span"),
                      (scratch_raw, "scratch")] + [(r, "plane") for r in raws]:
        _assert_guard(raw, what)


@pytest.mark.parametrize("fire_value", [0, 1])
def test_reorder_fire_gate_and_drop_flag(cpu, fire_value):
    n = 1000
    rng = np.random.default_rng(5)
    mask = _mask(n, 0.5, 9)
    x = rng.random(n)
    perm = np.arange(n, dtype=np.int32)
    inv = np.arange(n, dtype=np.int32)
    span, fire = np.array([n], np.uint32), np.array([fire_value], np.uint32)
    scratch = np.zeros(cpu.reorder_scratch_bytes(n), np.uint8)
    (ex,), ep, ei, kept = _reorder_reference([x], mask, perm, inv, n, True)
    x0 = x.copy()
    s = cpu.stream()
    cpu.reorder([x], mask, perm, inv, span, scratch, fire=fire, drop=True, stream=s)
    s.synchronize()
    assert fire[0] == 0  # reset either way
    if fire_value:
        assert x.tobytes() == ex.tobytes() and (perm == ep).all() and (inv == ei).all()
        assert span[0] == kept
    else:
        assert x.tobytes() == x0.tobytes() and span[0] == n


def test_reorder_refusals(cpu):
    n = 8
    m, perm, inv = np.ones(n, np.uint8), np.arange(n, dtype=np.int32), np.arange(n, dtype=np.int32)
    span = np.array([n], np.uint32)
    scratch = np.zeros(cpu.reorder_scratch_bytes(n), np.uint8)
    with pytest.raises(eagle.Unsupported, match="elem_size"):
        cpu.reorder([(np.zeros(n * 3, np.uint8).ctypes.data, 3)], m, perm, inv, span, scratch, n=n)
    with pytest.raises(ValueError, match="scratch"):
        cpu.reorder([np.zeros(n)], m, perm, inv, span, np.zeros(8, np.uint8))
    with pytest.raises(ValueError, match="plane_count"):
        cpu.reorder([np.zeros(n)] * 65, m, perm, inv, span, scratch)
    s = cpu.stream()
    span[0] = n + 1  # detected when it runs: reported at synchronize, nothing moved
    x = np.arange(n, dtype=np.float64)
    cpu.reorder([x], m, perm, inv, span, scratch, stream=s)
    with pytest.raises(eagle.EagleError, match="exceeds n"):
        s.synchronize()
    assert (x == np.arange(n)).all()
