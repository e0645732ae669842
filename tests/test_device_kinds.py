"""Seam behaviour every device kind must show, through eagle's own arrays and EAGLE_KERNEL kernels
(the CuPy-based tests of test_gpu_cuda.py are cuda's alone): compaction against numpy (the tail
of the map untouched), the stable reorder, restore by compiled kernels, copies in every
direction, host functions and fork branches in stream order, and capture where the kind has it.

Each test takes the `device` fixture (tests/conftest.py: cuda on a GPU, opencl on PoCL, each
skipped naming why); a test that needs a group a kind leaves out is skipped with that kind's own
reason (`require`, from the backend's capabilities)."""
import numpy as np
import pytest

import eagle
from conftest import require
from eagle._interpret import CAPTURE_GROUPS

KERNELS = r"""
#include <eagle/kernel.h>
EAGLE_KERNEL(add_one, (double*, x)) { (void)n; x[i] += 1.0; }
EAGLE_KERNEL(twice, (double*, x)) { (void)n; x[i] *= 2.0; }
"""


@pytest.fixture
def mod(device):
    return eagle.compile(KERNELS, backend=device, name="kinds.c", exact=True)


@pytest.fixture
def s(device):
    st = device.stream(non_blocking=True)
    yield st
    st.close()


@pytest.mark.parametrize("n", [0, 1, 7, 256, 257, 1024, 1025, 4096, 100003, 1 << 20])
def test_compaction_equals_numpy_and_leaves_the_tail_alone(device, s, n):
    rng = np.random.default_rng(n)
    mask_h = (rng.random(n) < 0.37).astype(np.uint8)
    mask = device.asarray(mask_h)
    idx = device.asarray(np.full(n + 8, -7, np.int32))
    count = device.zeros(1, "uint32")
    scratch = device.zeros(max(device.compact_scratch_bytes(n, stream=s), 1), "uint8")
    device.compact(mask, idx, count, scratch, n=n, stream=s)
    s.synchronize()
    got, kept = idx.numpy(), np.flatnonzero(mask_h)
    assert int(count.numpy()[0]) == kept.size and np.array_equal(got[:kept.size], kept)
    assert np.all(got[kept.size:] == -7), "wrote past the kept entries of index_map"
    device.compact(mask, idx, count, scratch, n=n, stream=s, drop=True)
    s.synchronize()
    dropped = np.flatnonzero(mask_h == 0)
    assert int(count.numpy()[0]) == dropped.size and np.array_equal(idx.numpy()[:dropped.size], dropped)
    assert np.all(idx.numpy()[n:] == -7)


def test_one_scratch_serves_compactions_of_every_size_up_to_its_own(device, s):
    big = 300007
    scratch = device.zeros(max(device.compact_scratch_bytes(big, stream=s), 1), "uint8")
    for n in (big, 5, 70000, 0, 1025, big):
        mask_h = (np.random.default_rng(n + 3).random(n) < 0.5).astype(np.uint8)
        mask, idx, count = device.asarray(mask_h), device.zeros(max(n, 1), "int32"), device.zeros(1, "uint32")
        device.compact(mask, idx, count, scratch, n=n, stream=s)
        s.synchronize()
        kept = np.flatnonzero(mask_h)
        assert int(count.numpy()[0]) == kept.size and np.array_equal(idx.numpy()[:kept.size], kept), n


def test_reorder_is_a_stable_partition_and_inv_inverts_perm(device, s):
    n = 10007
    rng = np.random.default_rng(5)
    mask_h = (rng.random(n) < 0.3).astype(np.uint8)
    a_h, b_h = rng.random(n), rng.integers(0, 1 << 30, size=(2, n)).astype(np.int32)
    a, bb, mask = device.asarray(a_h), device.asarray(b_h), device.asarray(mask_h)
    perm, inv = device.asarray(np.arange(n, dtype=np.int32)), device.asarray(np.arange(n, dtype=np.int32))
    span = device.asarray(np.array([n], np.uint32))
    scratch = device.zeros(max(device.reorder_scratch_bytes(n, planes=[a, bb], stream=s), 1), "uint8")
    device.reorder([a, bb], mask, perm, inv, span, scratch, n=n, stream=s)
    s.synchronize()
    order = np.concatenate([np.flatnonzero(mask_h), np.flatnonzero(mask_h == 0)])
    k = int(mask_h.sum())
    assert int(span.numpy()[0]) == k
    assert np.array_equal(a.numpy(), a_h[order]) and np.array_equal(bb.numpy(), b_h[:, order])
    assert np.array_equal(perm.numpy(), order)
    assert np.array_equal(inv.numpy()[perm.numpy()], np.arange(n))


def test_activeset_restore_gathers_every_element_size_on_the_device(device, s, monkeypatch):
    """restore() puts every plane (element sizes 1 to 16, 2- and 3-row planes) back by kernels
    compiled through the seam, never through the host."""
    from eagle import activeset

    def through_the_host(*a, **kw):
        raise AssertionError("restore() went through the host")
    monkeypatch.setattr(eagle.ActiveSet, "_gather", through_the_host)
    n = 30011
    rng = np.random.default_rng(17)
    host = [rng.random(n), rng.integers(-9, 9, (2, n)).astype(np.int32),
            rng.integers(0, 60000, n).astype(np.uint16), rng.integers(0, 255, n).astype(np.uint8),
            (rng.random((3, n)) + 1j * rng.random((3, n))).astype(np.complex128)]
    planes = [device.asarray(h) for h in host]
    mask = device.zeros(n, "uint8")
    aset = eagle.ActiveSet(mask, reorder=0.5, planes=planes, stream=s, backend=device)
    drop = np.random.default_rng(1).random(n) < 0.9
    s.copy(mask, drop.astype(np.uint8))
    aset.compact(s)
    aset.compact(s)
    s.synchronize()
    keep = np.flatnonzero(~drop)
    assert aset.permuted and np.array_equal(planes[0].numpy()[:keep.size], host[0][keep])
    aset.restore()
    assert any(v is not None for key, v in activeset._restore_modules.items() if key[0] == device.path)
    for p, h in zip(planes, host):
        assert np.array_equal(p.numpy(), h)
    assert np.array_equal(mask.numpy(), drop.astype(np.uint8)) and not aset.permuted
    assert aset.live == keep.size and np.array_equal(aset.index_map.numpy()[:keep.size], keep)


@pytest.mark.parametrize("direction", ["h2d", "d2h", "d2d", "h2h"])
def test_copies_in_stream_order(device, s, direction):
    n = 1 << 16
    src_h = np.arange(n, dtype=np.float64)
    host_src = device.pinned(n)
    host_src[:] = src_h
    dev_src = device.asarray(src_h)
    dst = {"h2d": device.zeros(n), "d2h": device.pinned(n), "d2d": device.zeros(n), "h2h": device.pinned(n)}[direction]
    src = {"h2d": host_src, "d2h": dev_src, "d2d": dev_src, "h2h": host_src}[direction]
    device.copy(dst, src, stream=s)
    s.synchronize()
    got = dst.numpy() if isinstance(dst, eagle.DeviceArray) else np.asarray(dst)
    assert np.array_equal(got, src_h)


def test_host_functions_run_in_stream_order(device, s, mod):
    x = device.zeros(4)
    seen = []
    s.run(mod.add_one, [x], 4)
    s.host_func(lambda: seen.append("first"))
    s.run(mod.twice, [x], 4)
    s.host_func(lambda: seen.append("second"))
    s.synchronize()
    assert seen == ["first", "second"] and np.array_equal(x.numpy(), np.full(4, 2.0))


def test_fork_branches_all_run_and_join(device, s, mod):
    require(device, "fork")
    xs = [device.zeros(100) for _ in range(3)]
    with device.fork(s, 3) as f:
        for br, x in zip(f.branches, xs):
            br.run(mod.add_one, [x], 100)
    s.run(mod.twice, [xs[0]], 100)  # after the join: every branch's work is done before it
    s.synchronize()
    assert np.array_equal(xs[0].numpy(), np.full(100, 2.0))
    assert all(np.array_equal(x.numpy(), np.ones(100)) for x in xs[1:])


def test_a_captured_launch_replays_as_eager_does(device, s, mod):
    require(device, *CAPTURE_GROUPS)
    x = device.zeros(1000)
    with device.capture(s) as cap:
        s.run(mod.add_one, [x], 1000)
    launcher = device.graph_from_captured(cap.captured).launcher()
    launcher.set_stream(s)
    launcher.launch(3)
    launcher.synchronize()
    assert np.array_equal(x.numpy(), np.full(1000, 3.0)) and launcher.kernel_node_count == 1


def test_graph_build_decides_on_the_device_where_the_kind_can_and_on_the_host_otherwise(device, mod):
    """Graph.build records the program where the kind provides conditional and capture, and runs
    the same program with host decisions where it does not: the result is the same."""
    x = device.zeros(64)
    g = eagle.Graph.build([lambda st: st.run(mod.add_one, [x], 64), lambda st: st.run(mod.twice, [x], 64)],
                          planes=[x])
    can = all(device.provides(e) for e in ("conditional", *CAPTURE_GROUPS))
    assert g.decides_on_device == can
    g()
    g()
    assert np.array_equal(x.numpy(), np.full(64, 6.0))
