"""eagle.ActiveSet on the cpu backend: compaction and reorder bit-exact against numpy, capturable
compaction, restore, and refusal to export reordered planes; the compaction and the reorder on a
device kind (cuda, opencl: the `device` fixture) against numpy too."""
import numpy as np
import pytest

import eagle
from eagle.activeset import PermutedError


def live_of(mask):
    return np.flatnonzero(mask == 0).astype(np.int32)


@pytest.mark.parametrize("n", [0, 1, 7, 1000, 100003])
def test_compact_gives_the_ascending_live_samples(cpu, n):
    rng = np.random.default_rng(n)
    mask = (rng.random(n) < 0.6).astype(np.uint8)
    aset = eagle.ActiveSet(mask)
    assert aset.backend is cpu and aset.n == n
    s = cpu.stream()
    aset.compact(s)
    s.synchronize()
    want = live_of(mask)
    assert aset.live == want.size == int(aset.count[0])
    assert np.array_equal(aset.index_map[:want.size], want)
    assert np.array_equal(aset.indices(), want)
    assert not aset.permuted


def test_compact_is_capturable_and_follows_the_mask_at_every_replay(cpu):
    n = 5000
    mask = np.zeros(n, np.uint8)
    aset = eagle.ActiveSet(mask)
    g = eagle.Graph.build([aset], planes=[mask])
    rng = np.random.default_rng(1)
    for _ in range(3):
        mask[:] = rng.random(n) < 0.3
        g()
        want = live_of(mask)
        assert np.array_equal(aset.index_map[:aset.live], want) and aset.live == want.size


def test_the_count_word_guards_a_while_until_no_sample_is_live(cpu):
    n = 300
    rng = np.random.default_rng(2)
    steps = rng.integers(1, 20, n).astype(np.int32)
    done = np.zeros(n, np.int32)
    mask = np.zeros(n, np.uint8)
    aset = eagle.ActiveSet(mask)

    def one_step(s):  # numpy in a host function: a step that advances the live samples
        def advance():
            idx = aset.index_map[:int(aset.count[0])]
            done[idx] += 1
            mask[idx] = done[idx] >= steps[idx]
        s.host_func(advance)
    loop = eagle.repeat_while([one_step, aset], aset, max_iters=100)
    g = eagle.Graph.build([aset, loop], planes=[mask])
    g()
    assert np.array_equal(done, steps) and aset.live == 0 and g.ran(loop) == steps.max()


def test_reorder_needs_theta_in_range(cpu):
    mask = np.zeros(10, np.uint8)
    for bad in (0.1, 0.8, -1):
        with pytest.raises(ValueError, match=r"\[0.25, 0.75\]"):
            eagle.ActiveSet(mask, reorder=bad)
    with pytest.raises(ValueError, match="only reordered with reorder=theta"):
        eagle.ActiveSet(mask, planes=[np.zeros(10)])
    with pytest.raises(ValueError, match="shape"):
        eagle.ActiveSet(mask, reorder=0.5, planes=[np.zeros(11)])
    with pytest.raises(TypeError, match="1-byte"):
        eagle.ActiveSet(np.zeros(10, np.int32))


@pytest.mark.parametrize("theta", [0.25, 0.5, 0.75])
def test_reorder_moves_the_live_samples_first_and_restore_puts_them_back(cpu, theta):
    n = 2000
    rng = np.random.default_rng(int(theta * 100))
    x0 = rng.random(n)
    y0 = rng.integers(-1000, 1000, (3, n)).astype(np.int32)
    z0 = rng.integers(0, 255, n).astype(np.uint8)
    x, y, z = x0.copy(), y0.copy(), z0.copy()
    mask = np.zeros(n, np.uint8)
    aset = eagle.ActiveSet(mask, reorder=theta, planes=[x, y, z])
    s = cpu.stream()
    drop = rng.random(n) < 0.9          # 10% live: sparse enough for every theta
    mask[:] = drop
    aset.compact(s)                      # computes the trigger (fire) from the count
    s.synchronize()
    assert not aset.permuted and np.array_equal(aset.index_map[:aset.live], live_of(mask))
    aset.compact(s)                      # the fired reorder, then the compaction of the moved mask
    s.synchronize()
    keep = np.flatnonzero(~drop)
    order = np.concatenate([keep, np.flatnonzero(drop)])  # stable partition, kept first
    k = keep.size
    assert aset.permuted and aset.live == k
    assert np.array_equal(x[:k], x0[keep]) and np.array_equal(y[:, :k], y0[:, keep])
    assert np.array_equal(z[:k], z0[keep])
    assert np.array_equal(aset.index_map[:k], np.arange(k, dtype=np.int32))
    assert np.array_equal(np.sort(aset.perm[:k]), keep) and np.array_equal(aset.indices(), keep)
    assert np.array_equal(aset.perm[:k], order[:k])
    assert np.array_equal(mask[:k], np.zeros(k, np.uint8))
    # work on positions: mark half of the live ones done, compact again (no refire: not sparse)
    x[:k] += 1.0
    aset.restore()
    assert not aset.permuted
    assert np.array_equal(x, np.where(drop, x0, x0 + 1.0)) and np.array_equal(y, y0) and np.array_equal(z, z0)
    assert np.array_equal(mask, drop.astype(np.uint8))
    assert np.array_equal(aset.index_map[:aset.live], keep)


def test_no_reorder_while_the_live_samples_are_dense(cpu):
    n = 1000
    x0 = np.arange(n, dtype=np.float64)
    x = x0.copy()
    mask = np.zeros(n, np.uint8)
    aset = eagle.ActiveSet(mask, reorder=0.25, planes=[x])
    mask[::2] = 1                       # half live: above theta = 0.25
    s = cpu.stream()
    for _ in range(3):
        aset.compact(s)
    s.synchronize()
    assert not aset.permuted and np.array_equal(x, x0)


def test_owned_planes_refuse_export_while_permuted(cpu):
    n = 100
    x = np.arange(n, dtype=np.float64)
    mask = np.ones(n, np.uint8)
    mask[[3, 50]] = 0
    aset = eagle.ActiveSet(mask, reorder=0.5)
    px = aset.own(x)
    s = cpu.stream()
    assert np.array_equal(np.asarray(px), x)
    aset.compact(s)
    aset.compact(s)
    s.synchronize()
    assert aset.permuted
    for export in (lambda: np.asarray(px), lambda: px.data, lambda: px.__dlpack__(),
                   lambda: px.__array_interface__):
        with pytest.raises(PermutedError, match="restore"):
            export()
    assert px.address == x.__array_interface__["data"][0]   # kernels still get the address
    assert isinstance(PermutedError("x"), eagle.EagleError)
    aset.restore()
    assert np.array_equal(np.asarray(px), np.arange(n)) and px.data is x


def test_reorder_inside_a_graph_matches_numpy_bit_for_bit(cpu):
    """A decaying process over live samples, recorded once with reorder; restored result == numpy."""
    from eagle import kernels
    K = kernels.load("cpu", r"""
    #include <stdint.h>
    void decay(void* const* p, int64_t base, int64_t count, int64_t n) {
        const int32_t* idx = *(const int32_t* const*)p[0];
        const uint32_t live = **(const uint32_t* const*)p[1];
        double* x = *(double* const*)p[2];
        const double* r = *(const double* const*)p[3];
        uint8_t* mask = *(uint8_t* const*)p[4];
        for (int64_t l = base; l < base + count && l < live; ++l) {
            const int32_t i = idx[l];
            x[i] = x[i] * r[i] + 0.125;
            mask[i] = x[i] < 0.5;
        }
    }""", ["decay"], exact=True)  # compared with numpy bit for bit: no contracted multiply-add
    n = 4000
    rng = np.random.default_rng(7)
    x0, r = rng.random(n) * 4 + 1, rng.random(n) * 0.25 + 0.45  # fixed points < 0.42
    x, mask = x0.copy(), np.zeros(n, np.uint8)
    aset = eagle.ActiveSet(mask, reorder=0.5, planes=[x, r])

    def step(s):
        s.run(K.decay, [aset.index_map, aset.count, x, r, mask], n)
    loop = eagle.repeat_while([step, aset], aset, max_iters=10000)
    g = eagle.Graph.build([aset, loop], planes=[x, r, mask])
    g()
    assert aset.permuted  # the live set thinned: the planes were reordered on the way
    aset.restore()
    want, live = x0.copy(), np.ones(n, bool)
    while live.any():
        want[live] = want[live] * r[live] + 0.125
        live &= ~(want < 0.5)
    assert np.array_equal(x, want)


def _permuted_set(n, planes, seed):
    """An ActiveSet owning ``planes`` whose reorder has fired (90 % dropped); the drop mask."""
    rng = np.random.default_rng(seed)
    mask = np.zeros(n, np.uint8)
    aset = eagle.ActiveSet(mask, reorder=0.5, planes=planes)
    drop = rng.random(n) < 0.9
    mask[:] = drop
    s = aset._io_stream()
    aset.compact(s)
    aset.compact(s)
    s.synchronize()
    assert aset.permuted
    return aset, mask, drop


def _every_element_size(n, rng):
    return [rng.random(n), rng.integers(-9, 9, (2, n)).astype(np.int32),
            rng.integers(0, 60000, n).astype(np.uint16), rng.integers(0, 255, n).astype(np.uint8),
            (rng.random((3, n)) + 1j * rng.random((3, n))).astype(np.complex128)]


def test_restore_gathers_with_the_compiled_kernels_every_element_size_and_resets_the_words(cpu):
    from eagle import activeset
    n = 3001
    rng = np.random.default_rng(11)
    planes = _every_element_size(n, rng)
    before = [p.copy() for p in planes]
    aset, mask, drop = _permuted_set(n, planes, 3)
    aset.restore()
    assert activeset._restore_modules[(cpu.path, cpu.kind, -1)] is not None  # the kernels ran, not numpy
    assert all(np.array_equal(p, q) for p, q in zip(planes, before)) and np.array_equal(mask, drop)
    ident = np.arange(n, dtype=np.int32)
    assert np.array_equal(aset.perm, ident) and np.array_equal(aset.inv, ident)
    assert int(aset.span[0]) == n and int(aset.fire[0]) == 0 and not aset.permuted
    assert np.array_equal(aset.index_map[:aset.live], np.flatnonzero(~drop))
    # again, with the buffer restore() kept
    mask[:] = np.random.default_rng(5).random(n) < 0.8
    s = aset._io_stream()
    aset.compact(s)
    aset.compact(s)
    s.synchronize()
    assert aset.permuted
    aset.restore()
    assert all(np.array_equal(p, q) for p, q in zip(planes, before))


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_restore_interrupted_between_planes_goes_on_when_called_again(cpu, monkeypatch, when):
    """Ctrl-C lands in restore() at the second plane's gather, before it is enqueued or after:
    the next restore() puts back exactly the planes not yet back (it used to gather the first
    plane a second time, leaving it and the mask scrambled while `permuted` said False)."""
    from eagle.stream import StreamRef
    n = 3001
    planes = _every_element_size(n, np.random.default_rng(13))
    before = [p.copy() for p in planes]
    aset, mask, drop = _permuted_set(n, planes, 3)
    real_run, gathers = StreamRef.run, []

    def interrupted_run(self, kernel, args, count, **kw):
        if getattr(kernel, "name", "").startswith("eagle_restore_gather"):
            gathers.append(kernel.name)
            if len(gathers) == 2:
                if when == "after":
                    real_run(self, kernel, args, count, **kw)
                raise KeyboardInterrupt
        return real_run(self, kernel, args, count, **kw)
    monkeypatch.setattr(StreamRef, "run", interrupted_run)
    with pytest.raises(KeyboardInterrupt):
        aset.restore()
    monkeypatch.setattr(StreamRef, "run", real_run)
    aset.restore()
    assert all(np.array_equal(p, q) for p, q in zip(planes, before)) and np.array_equal(mask, drop)
    assert not aset.permuted and np.array_equal(aset.inv, np.arange(n))


def test_restore_without_a_compiler_gathers_through_the_host(cpu, monkeypatch):
    from eagle import activeset
    from eagle.errors import BackendUnavailable

    def no_compiler(*args, **kw):
        raise BackendUnavailable("eagle: no C compiler (test)")
    monkeypatch.setattr(activeset, "_restore_modules", {})
    monkeypatch.setattr(activeset._module, "compile", no_compiler)
    n = 2000
    rng = np.random.default_rng(12)
    planes = _every_element_size(n, rng)
    before = [p.copy() for p in planes]
    aset, mask, drop = _permuted_set(n, planes, 4)
    aset.restore()
    assert activeset._restore_modules[(cpu.path, cpu.kind, -1)] is None
    assert all(np.array_equal(p, q) for p, q in zip(planes, before)) and np.array_equal(mask, drop)
    assert np.array_equal(aset.perm, np.arange(n)) and int(aset.span[0]) == n and not aset.permuted


def test_restore_clears_a_fired_trigger_whose_reorder_has_not_run(cpu):
    n = 1000
    x = np.arange(n, dtype=np.float64)
    mask = np.zeros(n, np.uint8)
    aset = eagle.ActiveSet(mask, reorder=0.5, planes=[x])
    mask[1:] = 1
    s = aset._io_stream()
    aset.compact(s)  # the trigger fires; the reorder would run at the next compact()
    s.synchronize()
    assert int(aset.fire[0]) == 1 and not aset.permuted
    aset.restore()
    assert int(aset.fire[0]) == 0 and not aset.permuted and np.array_equal(x, np.arange(n))
    aset.compact(s)
    s.synchronize()
    assert not aset.permuted and aset.live == 1


# ------------------------------------------------------------------------------ on a device kind (cuda, opencl)

def _host(a):
    return a.numpy() if hasattr(a, "numpy") else np.asarray(a)


# around one tile of opencl's parallel compaction (1024 bytes) and past 256 tiles (its scan's carry)
@pytest.mark.parametrize("n", [0, 1, 7, 1000, 1024, 1025, 100003, 300007])
def test_compact_on_a_device_kind_gives_the_ascending_live_samples(device, n):
    """The device's compaction (compact_device) writes numpy.flatnonzero's order and count."""
    rng = np.random.default_rng(n + 1)
    mask_host = (rng.random(n) < 0.6).astype(np.uint8)
    mask = device.asarray(mask_host)
    aset = eagle.ActiveSet(mask, backend=device)
    s = device.stream()
    for _ in range(2):  # a second compaction of the same mask gives the same
        aset.compact(s)
        s.synchronize()
        want = live_of(mask_host)
        assert aset.live == want.size == int(_host(aset.count)[0])
        assert np.array_equal(_host(aset.index_map)[:want.size], want)
    mask_host[::5] = 0  # samples come live again: the next compaction follows the mask
    s.copy(mask, mask_host)
    aset.compact(s)
    s.synchronize()
    assert np.array_equal(_host(aset.index_map)[:aset.live], live_of(mask_host))


@pytest.mark.parametrize("theta, n", [(0.25, 20000), (0.75, 20000), (0.5, 300007)])
def test_reorder_on_a_device_kind_moves_the_live_samples_first_and_restore_puts_them_back(device, theta, n):
    """reorder_device's stable partition (kept first) of every plane and the perm, as on cpu."""
    rng = np.random.default_rng(int(theta * 100) + 7)
    x0 = rng.random(n)
    y0 = rng.integers(-1000, 1000, (3, n)).astype(np.int32)
    z0 = rng.integers(0, 255, n).astype(np.uint8)
    x, y, z = device.asarray(x0), device.asarray(y0), device.asarray(z0)
    drop = rng.random(n) < 0.9
    mask = device.asarray(np.zeros(n, np.uint8))
    aset = eagle.ActiveSet(mask, reorder=theta, planes=[x, y, z], backend=device)
    s = device.stream()
    s.copy(mask, drop.astype(np.uint8))
    aset.compact(s)                      # computes the trigger from the count
    s.synchronize()
    assert not aset.permuted
    aset.compact(s)                      # the fired reorder, then the compaction of the moved mask
    s.synchronize()
    keep = np.flatnonzero(~drop)
    order = np.concatenate([keep, np.flatnonzero(drop)])
    k = keep.size
    assert aset.permuted and aset.live == k
    assert np.array_equal(x.numpy(), x0[order]) and np.array_equal(y.numpy(), y0[:, order])
    assert np.array_equal(z.numpy(), z0[order])
    assert np.array_equal(_host(aset.perm)[:n], order)
    assert np.array_equal(_host(aset.index_map)[:k], np.arange(k, dtype=np.int32))
    aset.restore()
    assert not aset.permuted
    assert np.array_equal(x.numpy(), x0) and np.array_equal(y.numpy(), y0) and np.array_equal(z.numpy(), z0)
    assert np.array_equal(mask.numpy(), drop.astype(np.uint8))
