"""The cuda backend on a real GPU, through eagle's Python API (run on the H200 with the device tool).

Skipped with the probe's reason where no cuda backend or no usable GPU exists. Device memory and
kernels come from CuPy (``RawKernel.kernel.ptr`` is a ``CUfunction``); torch is used for DLPack."""
import threading

import numpy as np
import pytest

import eagle
from conftest import kernel_ptr

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy", reason="the GPU tests take device memory and kernels from CuPy")

KERNELS = r"""
extern "C" __global__ void add_one(double* x, long long base, long long count, long long n) {
    long long i = base + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < base + count) x[i] += 1.0;
}
extern "C" __global__ void record_n(long long* out, long long base, long long count, long long n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) { out[0] = base; out[1] = count; out[2] = n; }
}
extern "C" __global__ void decrement(unsigned* c, long long base, long long count, long long n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) c[0] -= 1u;
}
extern "C" __global__ void bump(unsigned* c, long long base, long long count, long long n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) c[0] += 1u;
}
"""


@pytest.fixture(scope="module")
def k():
    mod = cp.RawModule(code=KERNELS)
    return {name: kernel_ptr(mod.get_function(name)) for name in ("add_one", "record_n", "decrement", "bump")}


@pytest.fixture
def s(cuda):
    st = cuda.stream(non_blocking=True)
    yield st
    st.close()


def test_backend_promises_every_group(cuda):
    assert cuda.kind == "cuda" and cuda.version == (1, 7)
    assert cuda.groups == frozenset({"stream", "capturer", "captured", "fork", "conditional", "attribution",
                                     "graph", "launcher", "exec", "device", "interop", "filtering"})
    assert all(v == "" for v in cuda.unavailable.values()), cuda.unavailable
    assert set(cuda.device_types) >= {2}


def test_device_props_from_attributes(cuda):
    p = cuda.device_props(0)
    assert p.cc_major >= 7 and p.sm_count > 0 and p.warp_size == 32 and p.name
    assert p.peak_bytes_per_s > 1e11
    with pytest.raises(IndexError):
        cuda.device_props(1000)


def test_run_and_replay_equal_eager(cuda, s, k):
    x = cp.zeros(1000, cp.float64)
    cuda.run(k["add_one"], [x], 1000, stream=s, block=128)
    s.synchronize()
    assert float(x.sum().get()) == 1000.0
    with cuda.capture(s) as cap:
        cuda.run(k["add_one"], [x], 1000, stream=s, block=128)
    launcher = cuda.graph_from_captured(cap.captured).launcher()
    launcher.set_stream(s)
    launcher.launch(3)
    launcher.synchronize()
    assert np.array_equal(x.get(), np.full(1000, 4.0))
    assert launcher.kernel_node_count == 1


def test_partition_triple_and_logical_size(cuda, s, k):
    out = cp.zeros(3, cp.int64)
    assert cuda.run(k["record_n"], [out], 500, base=100, count=50, n_samples=500, stream=s) is True
    s.synchronize()
    assert out.get().tolist() == [100, 50, 500]
    assert cuda.run(k["record_n"], [out], 500, base=0, count=0, stream=s) is False
    with cuda.capture(s) as cap:
        cuda.run(k["record_n"], [out], 500, stream=s)
    L = cuda.graph_from_captured(cap.captured).launcher()
    L.set_stream(s)
    L.set_logical_size(77)
    L.launch()
    L.synchronize()
    assert out.get().tolist() == [0, 77, 77]
    L.set_logical_size(-1)
    L.launch()
    L.synchronize()
    assert out.get().tolist() == [0, 500, 500]


@pytest.mark.parametrize("with_baseline", [False, True], ids=["guard_vs_0", "guard_vs_baseline"])
@pytest.mark.parametrize("cell_offset", [0, 1], ids=["cell_8B_aligned", "cell_4B_aligned"])
def test_while_decides_on_device_across_replays(cuda, s, k, with_baseline, cell_offset):
    """Each of the backend's body-setter variants (baseline word or not, cell stored as one 8-byte
    word or as two 4-byte words) steps the [remaining, ran] cell and stops where the guard says."""
    stop = 2 if with_baseline else 0
    cnt = cp.zeros(1, cp.uint32)
    base = cp.full(1, stop, cp.uint32)
    cell_store = cp.zeros(3, cp.uint32)
    cell = cell_store[cell_offset:cell_offset + 2]
    assert (cell.data.ptr % 8 == 0) == (cell_offset == 0)
    with cuda.capture(s) as cap:
        w = cuda.while_(s, cnt, cell, loop_cap=50, baseline=base if with_baseline else None)
        body = w.begin()
        cuda.run(k["decrement"], [cnt], 1, stream=body, block=1)
        w.end()
        w.close()
    L = cuda.graph_from_captured(cap.captured).launcher()
    L.set_stream(s)
    for start in (stop + 5, stop, stop + 80, stop + 1):
        ran = min(start - stop, 50)
        cnt.fill(start)
        cp.cuda.Device().synchronize()
        L.launch()
        L.synchronize()
        assert cell.get().tolist() == [50 - ran, ran]
        assert int(cnt.get()[0]) == start - ran
        assert int(cell_store[2 if cell_offset == 0 else 0].get()) == 0  # nothing written beside the cell


def test_if_and_switch_follow_their_guards(cuda, s, k):
    count = cp.zeros(1, cp.uint32)
    base = cp.zeros(1, cp.uint32)
    hits = cp.zeros(4, cp.uint32)
    with cuda.capture(s) as cap:
        c = cuda.if_(s, count, base)
        body = c.begin()
        cuda.run(k["bump"], [hits], 1, stream=body, block=1)
        c.end()
        c.close()
        sw = cuda.switch(s, count, 3)
        for i in range(3):
            body = sw.begin_case(i)
            cuda.run(k["bump"], [int(hits.data.ptr) + 4 * (i + 1)], 1, stream=body, block=1)
        sw.end()
        sw.close()
    L = cuda.graph_from_captured(cap.captured).launcher()
    L.set_stream(s)
    expect = np.zeros(4, np.uint32)
    for cval, bval in ((0, 0), (2, 0), (1, 1), (7, 3), (1, 0)):
        count.fill(cval)
        base.fill(bval)
        cp.cuda.Device().synchronize()
        L.launch()
        L.synchronize()
        if cval != bval:
            expect[0] += 1
        if cval < 3:
            expect[1 + cval] += 1
        assert hits.get().tolist() == expect.tolist()


def test_node_toggling(cuda, s, k):
    x = cp.zeros(10, cp.float64)
    with cuda.capture(s) as cap:
        cuda.run(k["add_one"], [x], 10, stream=s)
        nodes = cuda.snapshot_nodes(s)
        cuda.run(k["add_one"], [x], 10, stream=s)
    assert len(nodes) >= 1 and cuda.is_node_toggleable(nodes[0])
    L = cuda.graph_from_captured(cap.captured).launcher()
    L.set_stream(s)
    L.set_node_enabled(nodes[0], False)
    L.launch()
    L.synchronize()
    assert float(x.get()[0]) == 1.0
    L.set_node_enabled(nodes[0], True)
    L.launch()
    L.synchronize()
    assert float(x.get()[0]) == 3.0


def test_fork_branches_all_run_and_join(cuda, s, k):
    xs = [cp.zeros(100, cp.float64) for _ in range(3)]
    with cuda.capture(s) as cap:
        with cuda.fork(s, 3) as f:
            for br, x in zip(f.branches, xs):
                cuda.run(k["add_one"], [x], 100, stream=br)
    L = cuda.graph_from_captured(cap.captured).launcher()
    L.set_stream(s)
    L.launch(2)
    L.synchronize()
    assert all(float(x.sum().get()) == 200.0 for x in xs)


@pytest.mark.parametrize("n", [0, 1, 7, 256, 257, 4096, 100003, 1 << 20, 10**7])
def test_compaction_bit_exact_with_numpy(cuda, s, n):
    rng = np.random.default_rng(n)
    mask_h = (rng.random(n) < 0.37).astype(np.uint8)
    mask = cp.asarray(mask_h)
    idx = cp.full(n + 8, -7, cp.int32)
    count = cp.zeros(1, cp.uint32)
    scratch = cp.zeros(max(cuda.compact_scratch_bytes(n, stream=s), 1), cp.uint8)
    cuda.compact(mask, idx, count, scratch, n=n, stream=s)
    s.synchronize()
    got = idx.get()
    kept = np.flatnonzero(mask_h)
    assert int(count.get()[0]) == kept.size
    assert np.array_equal(got[:kept.size], kept)
    assert np.all(got[n:] == -7), "wrote past index_map"
    cuda.compact(mask, idx, count, scratch, n=n, stream=s, drop=True)
    s.synchronize()
    dropped = np.flatnonzero(mask_h == 0)
    assert int(count.get()[0]) == dropped.size and np.array_equal(idx.get()[:dropped.size], dropped)


def test_compaction_is_capturable(cuda, s):
    n = 5000
    mask = cp.zeros(n, cp.uint8)
    idx = cp.zeros(n, cp.int32)
    count = cp.zeros(1, cp.uint32)
    scratch = cp.zeros(cuda.compact_scratch_bytes(n, stream=s), cp.uint8)
    with cuda.capture(s) as cap:
        cuda.compact(mask, idx, count, scratch, stream=s)
    L = cuda.graph_from_captured(cap.captured).launcher()
    L.set_stream(s)
    for p in (0.1, 0.9):
        mh = (np.random.default_rng(3).random(n) < p).astype(np.uint8)
        mask.set(mh)
        L.launch()
        L.synchronize()
        kept = np.flatnonzero(mh)
        assert int(count.get()[0]) == kept.size and np.array_equal(idx.get()[:kept.size], kept)


def test_reorder_is_a_stable_partition(cuda, s):
    n = 10007
    rng = np.random.default_rng(5)
    mask_h = (rng.random(n) < 0.3).astype(np.uint8)
    a_h = rng.random(n)
    b_h = rng.integers(0, 1 << 30, size=(2, n)).astype(np.int32)
    a, bb, mask = cp.asarray(a_h), cp.asarray(b_h), cp.asarray(mask_h)
    perm = cp.arange(n, dtype=cp.int32)
    inv = cp.arange(n, dtype=cp.int32)
    span = cp.asarray(np.array([n], np.uint32))
    scratch = cp.zeros(max(cuda.reorder_scratch_bytes(n, planes=[a, bb], stream=s), 1), cp.uint8)
    cuda.reorder([a, bb], mask, perm, inv, span, scratch, n=n, stream=s)
    s.synchronize()
    order = np.concatenate([np.flatnonzero(mask_h), np.flatnonzero(mask_h == 0)])
    k = int(mask_h.sum())
    assert int(span.get()[0]) == k
    assert np.array_equal(a.get()[:k], a_h[order][:k])
    assert np.array_equal(bb.get()[:, :k], b_h[:, order][:, :k])
    assert np.array_equal(perm.get()[:k], order[:k])
    assert np.array_equal(inv.get()[perm.get()], np.arange(n))


def test_activeset_restore_gathers_on_the_device(cuda, s, monkeypatch):
    """restore() puts every plane (element sizes 1 to 16, 2- and 3-row planes) back by kernels
    compiled through the seam (NVRTC), never through the host, and resets perm, inv, span, fire."""
    from eagle import activeset

    def through_the_host(*a, **kw):
        raise AssertionError("restore() went through the host")
    monkeypatch.setattr(eagle.ActiveSet, "_gather", through_the_host)
    n = 100003
    rng = np.random.default_rng(17)
    host = [rng.random(n), rng.integers(-9, 9, (2, n)).astype(np.int32),
            rng.integers(0, 60000, n).astype(np.uint16), rng.integers(0, 255, n).astype(np.uint8),
            (rng.random((3, n)) + 1j * rng.random((3, n))).astype(np.complex128)]
    planes = [cp.asarray(h) for h in host]
    mask = cp.zeros(n, cp.uint8)
    cp.cuda.Device().synchronize()
    aset = eagle.ActiveSet(mask, reorder=0.5, planes=planes, stream=s)
    ident = np.arange(n, dtype=np.int32)
    for seed in (1, 2):  # twice: the second restore reuses the gather buffer
        drop = np.random.default_rng(seed).random(n) < 0.9
        mask.set(drop.astype(np.uint8))
        cp.cuda.Device().synchronize()
        aset.compact(s)
        aset.compact(s)
        s.synchronize()
        keep = np.flatnonzero(~drop)
        assert aset.permuted and np.array_equal(planes[0].get()[:keep.size], host[0][keep])
        aset.restore()
        assert activeset._restore_modules[(cuda.path, cuda.kind, 0)] is not None
        for p, h in zip(planes, host):
            assert np.array_equal(p.get(), h)
        assert np.array_equal(mask.get(), drop.astype(np.uint8))
        assert np.array_equal(aset.perm.get(), ident) and np.array_equal(aset.inv.get(), ident)
        assert int(aset.span.get()[0]) == n and int(aset.fire.get()[0]) == 0 and not aset.permuted
        assert aset.live == keep.size and np.array_equal(aset.index_map.get()[:keep.size], keep)


@pytest.mark.parametrize("direction", ["h2d", "d2h", "d2d", "h2h"])
def test_copies_in_stream_order(cuda, s, direction):
    n = 1 << 16
    src_h = np.arange(n, dtype=np.float64)
    host_src = cuda.pinned(n)
    host_src[:] = src_h
    dev_src = cp.asarray(src_h)
    dst = {"h2d": cp.zeros(n), "d2h": cuda.pinned(n), "d2d": cp.zeros(n), "h2h": cuda.pinned(n)}[direction]
    src = {"h2d": host_src, "d2h": dev_src, "d2d": dev_src, "h2h": host_src}[direction]
    cuda.copy(dst, src, stream=s)
    s.synchronize()
    got = dst.get() if isinstance(dst, cp.ndarray) else np.asarray(dst)
    assert np.array_equal(got, src_h)
    with pytest.raises(ValueError, match="holds"):
        cuda.copy(cp.zeros(4), cp.zeros(8), stream=s)


def test_host_func_in_order_and_as_a_host_node(cuda, s, k):
    x = cp.zeros(1, cp.float64)
    seen = []
    cuda.run(k["add_one"], [x], 1, stream=s)
    cuda.host_func(lambda: seen.append("ran"), stream=s)
    s.synchronize()
    assert seen == ["ran"]
    with cuda.capture(s) as cap:
        cuda.host_func(lambda: seen.append(threading.get_ident()), stream=s)
    L = cuda.graph_from_captured(cap.captured).launcher()
    L.set_stream(s)
    L.launch(3)
    L.synchronize()
    assert len(seen) == 4


def test_host_func_inside_a_conditional_body_is_refused(cuda, s):
    count = cp.ones(1, cp.uint32)
    with pytest.raises(ValueError, match="host"):
        with cuda.capture(s):
            c = cuda.if_(s, count)
            body = c.begin()
            cuda.host_func(lambda: None, stream=body)


def test_a_refused_body_leaves_no_stream_capturing(cuda, s):
    """Found by compute-sanitizer: the body stream of a conditional left open by the refusal above
    stayed in capture until the garbage collector released the conditional, and in between every
    device-wide call (CuPy's device synchronize here) failed with 'operation not permitted when
    stream is capturing'. The capture that ends in an exception now releases it at once."""
    import gc
    count = cp.ones(1, cp.uint32)
    gc.disable()
    try:
        with pytest.raises(ValueError, match="host"):
            with cuda.capture(s):
                c = cuda.if_(s, count)
                body = c.begin()
                cuda.host_func(lambda: None, stream=body)
        assert c.closed
        cp.cuda.Device().synchronize()  # raised cudaErrorStreamCaptureUnsupported before the fix
    finally:
        gc.enable()


def test_fence_orders_a_foreign_stream(cuda, s, k):
    other = cp.cuda.Stream(non_blocking=True)
    x = cp.zeros(1 << 20, cp.float64)
    with other:
        x += 1
    cuda.fence(other.ptr, s.handle, device_type=2)
    cuda.run(k["add_one"], [x], x.size, stream=s)
    s.synchronize()
    assert float(x.min().get()) == 2.0
    cuda.fence(1, s.handle, device_type=2)            # the legacy default stream
    cuda.fence(2, s.handle, device_type=2)            # the per-thread default stream
    cuda.fence(eagle.STREAM_NONE, s.handle, device_type=2)
    with pytest.raises(eagle.InteropError):
        cuda.fence(0, s.handle, device_type=2)
    assert cuda.event_pool_created >= 1


def test_dlpack_round_trips_pick_cuda(cuda, s):
    from eagle._arrays import address_of
    x = cp.arange(10, dtype=cp.float64)
    assert eagle.kind_of_array(x) == "cuda"
    assert address_of(x).ptr == x.data.ptr
    torch = pytest.importorskip("torch", reason="torch is the second DLPack producer")
    t = torch.arange(10, dtype=torch.float64, device="cuda")
    assert eagle.kind_of_array(t) == "cuda"
    assert address_of(t).ptr == t.data_ptr()
    back = torch.from_dlpack(x)
    assert back.data_ptr() == x.data.ptr
    mask = torch.tensor([1, 0, 1, 1, 0], dtype=torch.uint8, device="cuda")
    idx = torch.zeros(5, dtype=torch.int32, device="cuda")
    count = torch.zeros(1, dtype=torch.int32, device="cuda")
    scratch = torch.zeros(max(cuda.compact_scratch_bytes(5, stream=s), 1), dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    cuda.compact(mask, idx, count, scratch, stream=s)
    s.synchronize()
    assert int(count.item()) == 3 and idx[:3].tolist() == [0, 2, 3]


def test_one_scratch_serves_many_compactions_of_any_size(cuda, s):
    """The scratch keeps the scan's state from one compaction to the next (no clearing between)."""
    rng = np.random.default_rng(11)
    nmax = 300000
    scratch = cp.zeros(cuda.compact_scratch_bytes(nmax, stream=s), cp.uint8)
    idx = cp.zeros(nmax, cp.int32)
    count = cp.zeros(1, cp.uint32)
    for n in list(rng.integers(0, nmax, size=40)) + [nmax, 1, 4096, 4097]:
        n = int(n)
        mask_h = (rng.random(n) < rng.random()).astype(np.uint8)
        mask = cp.asarray(mask_h)
        cp.cuda.Device().synchronize()
        cuda.compact(mask, idx, count, scratch, n=n, stream=s)
        s.synchronize()
        kept = np.flatnonzero(mask_h)
        assert int(count.get()[0]) == kept.size, n
        assert np.array_equal(idx.get()[:kept.size], kept), n

