"""The cuda backend on a real GPU, through eagle's Python API (run on the H200 with the device tool).

Skipped with the probe's reason where no cuda backend or no usable GPU exists. Device memory and
kernels come from CuPy (``RawKernel.kernel.ptr`` is a ``CUfunction``); torch is used for DLPack."""
import threading

import numpy as np
import pytest

import eagle
from conftest import dependents, finish, kernel_ptr

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
// One step of the live samples: lane j < *count steps sample idx[j]; a sample whose done count
// reaches its life is dropped (mask 1, as an ActiveSet's mask).
extern "C" __global__ void life_step(const int* idx, const unsigned* count, int* done, const int* life,
                                     unsigned char* mask, long long base, long long cnt, long long n) {
    long long j = base + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= base + cnt || j >= (long long)count[0]) return;
    int i = idx[j];
    int d = done[i] + 1;
    done[i] = d;
    if (d >= life[i]) mask[i] = 1;
}
extern "C" __global__ void life_reset(int* done, unsigned char* mask, long long base, long long cnt, long long n) {
    long long i = base + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < base + cnt) { done[i] = 0; mask[i] = 0; }
}
"""


@pytest.fixture(scope="module")
def k():
    mod = cp.RawModule(code=KERNELS)
    return {name: kernel_ptr(mod.get_function(name))
            for name in ("add_one", "record_n", "decrement", "bump", "life_step", "life_reset")}


@pytest.fixture
def s(cuda):
    st = cuda.stream(non_blocking=True)
    yield st
    st.close()


def test_backend_promises_every_group(cuda):
    from eagle import _seam_meta  # the header this eagle was built from
    assert cuda.kind == "cuda" and cuda.version == (_seam_meta.VERSION_MAJOR, _seam_meta.VERSION_MINOR)
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



# -- the WHILE fold (issue 17): a WHILE of guard `count != 0` whose body ends with the compaction
# writing that count ends its iterations from the compaction kernel (no setter kernel after it).

class LifeSet:
    """n samples, sample i live for life[i] steps; a compaction (drop mask) of them on cupy arrays."""

    def __init__(self, cuda, s, n, life):
        self.cuda, self.n = cuda, n
        self.life_h = np.asarray(life, np.int32)
        self.life = cp.asarray(self.life_h) if n else cp.zeros(1, cp.int32)
        self.done = cp.zeros(max(n, 1), cp.int32)
        self.mask = cp.zeros(max(n, 1), cp.uint8)
        self.idx = cp.zeros(max(n, 1), cp.int32)
        self.count = cp.zeros(1, cp.uint32)
        self.scratch = cp.zeros(max(cuda.compact_scratch_bytes(n, stream=s), 1), cp.uint8)

    def compact(self, stream):
        self.cuda.compact(self.mask, self.idx, self.count, self.scratch, n=self.n, drop=True, stream=stream)

    def step(self, k, stream):
        self.cuda.run(k["life_step"], [self.idx, self.count, self.done, self.life, self.mask], self.n,
                      stream=stream, block=256)

    def reset(self):
        self.done.fill(0)
        self.mask.fill(0)
        cp.cuda.Device().synchronize()


def record_life_while(cuda, s, k, ls, cell, loop_cap, *, after=None, guard=None, baseline=None):
    """Capture [compact, WHILE(guard) [step, compact, after...]]; returns (launcher, body nodes
    before the body's end)."""
    with cuda.capture(s) as cap:
        ls.compact(s)
        w = cuda.while_(s, ls.count if guard is None else guard, cell, loop_cap=loop_cap, baseline=baseline)
        body = w.begin()
        ls.step(k, body)
        ls.compact(body)
        for fn in after or ():
            fn(body)
        nodes = cuda.snapshot_nodes(body)
        w.end()
        w.close()
    L = cuda.graph_from_captured(cap.captured).launcher()
    L.set_stream(s)
    return L, nodes


@pytest.mark.parametrize("n", [1, 5000, 1 << 20])
@pytest.mark.parametrize("loop_cap", [1000, 7], ids=["guard_stops", "cap_stops"])
def test_activeset_while_is_folded_and_iterates_as_before(cuda, s, k, n, loop_cap):
    """Body [step, compaction of the guard word]: the compaction is the body's last node (no setter
    kernel depends on it) and the loop still runs min(max life, cap) iterations, steps every live
    sample each iteration and keeps the [remaining, ran] cell, replay after replay."""
    rng = np.random.default_rng(n + loop_cap)
    ls = LifeSet(cuda, s, n, rng.integers(1, 40, n))
    cell = cp.zeros(2, cp.uint32)
    L, nodes = record_life_while(cuda, s, k, ls, cell, loop_cap)
    assert len(nodes) == 2
    assert dependents(nodes[0]) == 1 and dependents(nodes[-1]) == 0, "the compaction must end the body"
    ran = min(int(ls.life_h.max()), loop_cap)
    for _ in range(2):
        ls.reset()
        finish(L, s)
        assert cell.get().tolist() == [loop_cap - ran, ran]
        assert np.array_equal(ls.done.get()[:n], np.minimum(ls.life_h, ran))
        live = np.flatnonzero(ls.life_h > ran)
        assert int(ls.count.get()[0]) == live.size
        assert np.array_equal(ls.idx.get()[:live.size], live)


def test_empty_compaction_ends_a_folded_while(cuda, s, k):
    """n = 0: the compaction's empty-launch path takes the decision too (count 1 on entry, so one
    iteration runs; without its decision the loop would never stop)."""
    ls = LifeSet(cuda, s, 0, [])
    cell = cp.zeros(2, cp.uint32)
    with cuda.capture(s) as cap:
        w = cuda.while_(s, ls.count, cell, loop_cap=100)
        body = w.begin()
        ls.compact(body)
        nodes = cuda.snapshot_nodes(body)
        w.end()
        w.close()
    L = cuda.graph_from_captured(cap.captured).launcher()
    L.set_stream(s)
    assert len(nodes) == 1 and dependents(nodes[0]) == 0
    for start, ran in ((1, 1), (0, 0), (5, 1)):
        ls.count.fill(start)
        cp.cuda.Device().synchronize()
        finish(L, s)
        assert cell.get().tolist() == [100 - ran, ran] and int(ls.count.get()[0]) == 0


def test_work_after_the_compaction_keeps_the_setter(cuda, s, k):
    """A kernel captured after the compaction: no fold (the setter follows that kernel), and the
    loop runs as before."""
    n = 3000
    ls = LifeSet(cuda, s, n, np.random.default_rng(4).integers(1, 30, n))
    hits = cp.zeros(1, cp.uint32)
    cell = cp.zeros(2, cp.uint32)
    L, nodes = record_life_while(cuda, s, k, ls, cell, 1000,
                                 after=[lambda b: cuda.run(k["bump"], [hits], 1, stream=b, block=1)])
    assert len(nodes) == 3 and dependents(nodes[1]) == 1 and dependents(nodes[2]) == 1
    ls.reset()
    finish(L, s)
    ran = int(ls.life_h.max())
    assert cell.get().tolist() == [1000 - ran, ran] and int(hits.get()[0]) == ran
    assert np.array_equal(ls.done.get(), ls.life_h) and int(ls.count.get()[0]) == 0


def test_a_while_on_another_guard_word_keeps_the_setter(cuda, s, k):
    """The guard is a separate counter: the compaction (of a different word) is not folded."""
    n = 3000
    ls = LifeSet(cuda, s, n, np.random.default_rng(5).integers(1, 30, n))
    cnt = cp.zeros(1, cp.uint32)
    cell = cp.zeros(2, cp.uint32)
    L, nodes = record_life_while(cuda, s, k, ls, cell, 1000, guard=cnt)
    assert dependents(nodes[-1]) == 1, "a setter must follow the compaction"
    for start in (4, 12):
        ls.reset()
        cnt.fill(start)
        cp.cuda.Device().synchronize()
        # the body does not touch cnt: the loop runs to the cap unless the guard starts at 0
        finish(L, s)
        assert cell.get().tolist() == [0, 1000]
        assert np.array_equal(ls.done.get(), ls.life_h) and int(ls.count.get()[0]) == 0
    cnt.fill(0)
    ls.reset()
    finish(L, s)
    assert cell.get().tolist() == [1000, 0] and int(ls.done.get().max()) == 0


def test_a_while_with_a_baseline_keeps_the_setter(cuda, s, k):
    """Guard (count, baseline): runs while the live count differs from the baseline; not folded."""
    n = 2000
    life = np.arange(n) % 20 + 1          # after t iterations n * (20 - t) / 20 samples are live
    ls = LifeSet(cuda, s, n, life)
    base = cp.zeros(1, cp.uint32)
    cell = cp.zeros(2, cp.uint32)
    L, nodes = record_life_while(cuda, s, k, ls, cell, 1000, baseline=base)
    assert dependents(nodes[-1]) == 1
    for t in (5, 13, 20):
        base.fill(n * (20 - t) // 20)
        ls.reset()
        finish(L, s)
        assert cell.get().tolist() == [1000 - t, t]
        assert np.array_equal(ls.done.get(), np.minimum(life, t))


def test_a_folded_while_nested_in_a_while(cuda, s, k):
    """Outer WHILE on a counter (setter kept: its body ends with the inner WHILE), inner WHILE over
    the live set (folded): every outer iteration resets the samples and drains them again."""
    n = 4096
    ls = LifeSet(cuda, s, n, np.random.default_rng(6).integers(1, 25, n))
    outer_cnt = cp.zeros(1, cp.uint32)
    outer_cell, inner_cell = cp.zeros(2, cp.uint32), cp.zeros(2, cp.uint32)
    runs = cp.zeros(1, cp.uint32)
    with cuda.capture(s) as cap:
        o = cuda.while_(s, outer_cnt, outer_cell, loop_cap=100)
        ob = o.begin()
        cuda.run(k["decrement"], [outer_cnt], 1, stream=ob, block=1)
        cuda.run(k["life_reset"], [ls.done, ls.mask], n, stream=ob)
        ls.compact(ob)
        i = cuda.while_(ob, ls.count, inner_cell, loop_cap=1000)
        ib = i.begin()
        cuda.run(k["bump"], [runs], 1, stream=ib, block=1)
        ls.step(k, ib)
        ls.compact(ib)
        inner_nodes = cuda.snapshot_nodes(ib)
        i.end()
        i.close()
        outer_nodes = cuda.snapshot_nodes(ob)
        o.end()
        o.close()
    L = cuda.graph_from_captured(cap.captured).launcher()
    L.set_stream(s)
    assert dependents(inner_nodes[-1]) == 0
    assert dependents(outer_nodes[-1]) == 1  # the inner WHILE node, followed by the outer setter
    outer_cnt.fill(3)
    cp.cuda.Device().synchronize()
    finish(L, s)
    m = int(ls.life_h.max())
    assert outer_cell.get().tolist() == [97, 3] and inner_cell.get().tolist() == [1000 - m, m]
    assert int(runs.get()[0]) == 3 * m
    assert np.array_equal(ls.done.get(), ls.life_h) and int(ls.count.get()[0]) == 0


def test_an_if_on_the_count_word_is_untouched(cuda, s, k):
    """An IF whose guard is the count its body's compaction writes: runs once iff count != 0."""
    n = 1000
    life = np.arange(n) % 3 + 1
    ls = LifeSet(cuda, s, n, life)
    with cuda.capture(s) as cap:
        ls.compact(s)
        c = cuda.if_(s, ls.count)
        body = c.begin()
        ls.step(k, body)
        ls.compact(body)
        c.end()
        c.close()
    L = cuda.graph_from_captured(cap.captured).launcher()
    L.set_stream(s)
    ls.reset()
    finish(L, s)
    assert np.array_equal(ls.done.get(), np.ones(n, np.int32))
    assert int(ls.count.get()[0]) == int((life > 1).sum())


@pytest.mark.parametrize("reorder", [None, 0.5], ids=["plain", "reorder"])
def test_graph_build_activeset_while_matches_numpy(cuda, k, reorder):
    """eagle.Graph.build([aset, repeat_while([step, aset], aset, cap)]): the ActiveSet's own
    compaction ends the WHILE (folded); results and iteration counts as the host model says."""
    n = 1 << 16
    rng = np.random.default_rng(7)
    life_h = rng.integers(1, 60, n).astype(np.int32)
    life, done, mask = cp.asarray(life_h), cp.zeros(n, cp.int32), cp.zeros(n, cp.uint8)
    cp.cuda.Device().synchronize()
    aset = eagle.ActiveSet(mask, reorder=reorder, planes=[done, life] if reorder else ())

    def step(st):
        st.run(k["life_step"], [aset.index_map, aset.count, done, life, mask], n, block=256)
    for cap in (1000, 9):
        loop = eagle.repeat_while([step, aset], aset, cap)
        g = eagle.Graph.build([aset, loop], planes=[mask, done, life], toggle=False)
        assert g.decides_on_device
        for _ in range(2):
            if reorder:
                aset.restore()
            done.fill(0)
            mask.fill(0)
            life.set(life_h)
            cp.cuda.Device().synchronize()
            g.launch()
            g.synchronize()
            ran = min(int(life_h.max()), cap)
            assert g.ran(loop) == ran
            if reorder:
                aset.restore()
            assert np.array_equal(done.get(), np.minimum(life_h, ran))
            assert aset.live == int((life_h > ran).sum())
        g.close()


def test_a_full_launch_queue_behind_a_python_host_function_does_not_deadlock(cuda):
    """Launcher.launch keeps the GIL only while no Python host function is pending
    (eagle/_hotcall). Here one is pending at the head of the stream and needs the GIL to run,
    and 20 000 replays of a 20-µs graph fill the launch queue behind it: the launches must
    release the GIL so that the host function runs and the queue drains. In a subprocess, so a
    deadlock fails the test instead of hanging the run."""
    import subprocess
    import sys
    code = r'''
import time, cupy as cp, eagle
from eagle import _hotcall
b = eagle.backend("cuda")
spin = cp.RawKernel(r"""extern "C" __global__ void spin(long long base, long long count, long long n) {
    long long t0 = clock64(); while (clock64() - t0 < 40000) {} }""", "spin")
spin.compile()
s = b.stream(non_blocking=True)
with b.capture(s) as cap:
    b.run(int(spin.kernel.ptr), [], 1, stream=s, block=1)
g = b.graph_from_captured(cap.captured); g.set_stream(s)
plain = g.launcher()
assert not plain.runs_python
ran = []
def busy():  # needs the GIL for ~50 ms
    t = time.perf_counter()
    while time.perf_counter() - t < 0.05:
        pass
    ran.append(1)
s.host_func(busy)
assert _hotcall.host_calls_pending() >= 1
t0 = time.perf_counter()
for _ in range(20000):
    plain.launch()
plain.synchronize()
assert ran == [1], ran
assert _hotcall.host_calls_pending() == 0
print("ok", round(time.perf_counter() - t0, 3))
'''
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0 and "ok" in r.stdout, (r.stdout[-2000:], r.stderr[-3000:])


def test_a_launcher_released_while_its_stream_is_captured_leaves_the_capture_intact(cuda, s, k):
    """Found by bench_cuda: a launcher collected by the garbage collector in the middle of another
    recording on its own stream waited for that stream, which the runtime refuses for a capturing
    stream by invalidating the capture ('the stream is not being captured' at the next node).
    Its release now waits until the capture has ended."""
    x = cp.zeros(256, cp.float64)
    with cuda.capture(s) as cap:
        cuda.run(k["add_one"], [x], x.size, stream=s, block=128)
    g = cuda.graph_from_captured(cap.captured)
    g.set_stream(s)
    old = g.launcher()
    old.launch(3)
    with cuda.capture(s) as cap2:
        cuda.run(k["add_one"], [x], x.size, stream=s, block=128)
        old.close()  # as the garbage collector would, during the recording
        cuda.run(k["add_one"], [x], x.size, stream=s, block=128)
    g2 = cuda.graph_from_captured(cap2.captured)
    g2.set_stream(s)
    new = g2.launcher()
    new.launch()
    new.synchronize()
    assert float(x.min().get()) == 5.0 and float(x.max().get()) == 5.0


def test_a_node_added_after_a_graph_from_a_capture_waits_for_the_whole_capture(cuda, s, k):
    """graph_add_node appends "after the graph's last node"; for a graph made by
    graph_from_captured that is the whole capture. Before eagle::cuda::Graph the new child node
    had no dependency at all and could run beside the capture's kernels (lost updates of x below);
    it now waits for every sink node of the capture."""
    x = cp.zeros(1 << 20, cp.float64)
    with cuda.capture(s) as cap:
        for _ in range(64):
            cuda.run(k["add_one"], [x], x.size, stream=s, block=256)
    g = cuda.graph_from_captured(cap.captured)
    with cuda.capture(s) as cap2:
        cuda.run(k["add_one"], [x], x.size, stream=s, block=256)
    g.add(cap2.captured)
    g.set_stream(s)
    assert g.last_node == 1
    L = g.launcher()
    for _ in range(5):
        L.launch()
    L.synchronize()
    assert float(x.min().get()) == 5 * 65 and float(x.max().get()) == 5 * 65
