"""ActiveSet.drain: one launch of a kernel's _drain entry ends every sample exactly as `rounds`
iterations of (its _active entry; compact) do, however unequal the samples are; on cpu (in CI),
on cuda (where the lanes refill from warp-claimed chunks; skipped without a GPU) and on opencl
(PoCL in CI; skipped without $EAGLE_BACKEND_OPENCL)."""
import math
import warnings

import numpy as np
import pytest

import eagle
from conftest import DEVICE_KINDS, require
from eagle._interpret import CAPTURE_GROUPS

SRC = r"""
#include <eagle/kernel.h>
/* Sample i takes cost[i] steps of a chain that depends on every step (so a lost, repeated or
 * reordered step changes its bits); K steps a call; mask[i] = 1 once done. */
EAGLE_KERNEL(walk, (double*, x), (int32_t*, done), (const int32_t*, cost), (uint8_t*, mask), (int64_t, K))
{
    (void)n;
    int32_t d = done[i];
    const int32_t t = cost[i];
    const int32_t stop = (int64_t)t - d < K ? t : (int32_t)(d + K);
    double v = x[i];
    for (; d < stop; ++d) v = v * 0.999 + (double)(i % 7) + 0.5 * (double)d;
    x[i] = v;
    done[i] = d;
    mask[i] = d >= t;
}
EAGLE_KERNEL(walk_reset, (double*, x), (int32_t*, done), (uint8_t*, mask))
{
    (void)n;
    x[i] = 1.0;
    done[i] = 0;
    mask[i] = 0;
}
"""


def _costs(n, seed=7):
    rng = np.random.default_rng(seed)
    return np.maximum(1, np.exp(rng.uniform(0, math.log(3000), n))).astype(np.int32)


class Walk:
    def __init__(self, b, n, K=32, seed=7):
        self.b, self.n, self.K = b, n, K
        # exact=True: the drain and the while loop are compared bit for bit (two entries of one
        # body, which a contracting compile might fuse differently)
        self.mod = eagle.compile(SRC, backend=b, kernels=["walk_active", "walk_drain", "walk_reset"], exact=True)
        self.cost_host = _costs(n, seed)
        self.x, self.done = b.zeros(n), b.zeros(n, "int32")
        self.mask, self.cost = b.zeros(n, "uint8"), b.asarray(self.cost_host)
        self.s = b.stream()
        self.aset = eagle.ActiveSet(self.mask, backend=b, stream=self.s)
        self.rounds = math.ceil(int(self.cost_host.max()) / K) + 1

    def args(self):
        return [self.x, self.done, self.cost, self.mask, self.K]

    def reset(self, s):
        s.run(self.mod.walk_reset, [self.x, self.done, self.mask], self.n)

    def drain(self, s, rounds=None, workers=None, compacted=True):
        self.aset.drain(s, self.mod.walk_drain, self.args(), rounds or self.rounds, workers=workers,
                        compacted=compacted)

    def step(self, s):
        s.run(self.mod.walk_active, self.args() + [self.aset.index_map, self.aset.count], self.n)

    def while_result(self, rounds=None):
        """The reference: `rounds` iterations of (active step; compact), from the host."""
        s = self.s
        self.reset(s)
        self.aset.compact(s)
        s.synchronize()
        for _ in range(rounds or self.rounds):
            if not self.aset.live:
                break
            self.step(s)
            self.aset.compact(s)
            s.synchronize()
        return self.x.numpy(), self.done.numpy()


def _kinds(request):
    return request.getfixturevalue(request.param)


@pytest.fixture(params=["cpu"] + DEVICE_KINDS)
def kind(request):
    return _kinds(request)


@pytest.mark.parametrize("workers", [None, 1, 37, 4096])
def test_drain_equals_the_while_loop_bit_for_bit(kind, workers):
    w = Walk(kind, 8000)
    want_x, want_d = w.while_result()
    assert np.array_equal(want_d, w.cost_host)
    g = eagle.Graph.build([w.reset, w.aset, lambda s: w.drain(s, workers=workers), w.aset],
                          planes=[w.x, w.done, w.mask, w.cost], stream=w.s, toggle=False)
    for _ in range(3):  # replays reuse the queue words: each must leave them ready for the next
        w.x.numpy()  # noqa - a host read between replays changes nothing
        g.launch()
        g.synchronize()
        assert w.aset.live == 0
        assert np.array_equal(w.done.numpy(), w.cost_host)
        assert np.array_equal(w.x.numpy(), want_x)


@pytest.mark.parametrize("workers", [None, 37])
def test_a_drain_straight_after_the_reset_needs_no_compaction(kind, workers):
    """compacted=False: no index map, every sample 0..n-1 visited; [reset, drain] ends every sample
    as [reset, compact, drain] does."""
    w = Walk(kind, 8000)
    want_x, _ = w.while_result()
    g = eagle.Graph.build([w.reset, lambda s: w.drain(s, workers=workers, compacted=False)],
                          planes=[w.x, w.done, w.mask, w.cost], stream=w.s, toggle=False)
    for _ in range(3):
        g.launch()
        g.synchronize()
        assert np.array_equal(w.done.numpy(), w.cost_host)
        assert np.array_equal(w.x.numpy(), want_x)
    w.aset.compact(w.s)  # the set is counted as usual afterwards
    w.s.synchronize()
    assert w.aset.live == 0


def test_a_recorded_drain_straight_after_the_reset_is_two_kernel_nodes(kind):
    """Where the backend records graphs: [reset, drain(compacted=False)] is the reset and the drain,
    no compaction node. A backend without capture enqueues the pieces at each launch instead."""
    require(kind, *CAPTURE_GROUPS)
    w = Walk(kind, 1000)
    g = eagle.Graph.build([w.reset, lambda s: w.drain(s, compacted=False)],
                          planes=[w.x, w.done, w.mask, w.cost], stream=w.s, toggle=False)
    assert g.kernel_node_count == 2


def test_a_drain_without_compaction_skips_the_dropped_samples(kind):
    w = Walk(kind, 3000)
    w.reset(w.s)
    mask = np.zeros(w.n, np.uint8)
    mask[::3] = 1
    w.s.copy(w.mask, mask)
    w.drain(w.s, workers=100, compacted=False)
    w.s.synchronize()
    d = w.done.numpy()
    assert np.all(d[::3] == 0)
    keep = np.ones(w.n, bool)
    keep[::3] = False
    assert np.array_equal(d[keep], w.cost_host[keep])
    with pytest.raises(eagle.EagleTypeError, match="compacted must be a bool"):
        w.drain(w.s, compacted="no")


def test_drain_stops_each_sample_after_rounds_calls(kind):
    w = Walk(kind, 5000)
    want_x, want_d = w.while_result(rounds=3)
    w.reset(w.s)
    w.aset.compact(w.s)
    w.drain(w.s, rounds=3, workers=64)
    w.aset.compact(w.s)
    w.s.synchronize()
    assert np.array_equal(w.done.numpy(), np.minimum(w.cost_host, 3 * w.K))
    assert np.array_equal(w.x.numpy(), want_x)
    left = int((w.cost_host > 3 * w.K).sum())
    with pytest.warns(eagle.RanOutWarning, match=rf"drain of \w+ ran out of its rounds=3 with {left} samples"):
        assert w.aset.live == left
    with warnings.catch_warnings():  # said once, for the drain that ran out
        warnings.simplefilter("error", eagle.RanOutWarning)
        assert w.aset.live == left


def test_drain_skips_samples_dropped_after_the_compaction(kind):
    """A stale index map (samples dropped since the compaction) is not stepped again."""
    w = Walk(kind, 3000)
    w.reset(w.s)
    w.aset.compact(w.s)
    w.s.synchronize()
    mask = np.zeros(w.n, np.uint8)
    mask[::3] = 1
    w.s.copy(w.mask, mask)
    w.drain(w.s, workers=100)
    w.s.synchronize()
    d = w.done.numpy()
    assert np.all(d[::3] == 0)
    keep = np.ones(w.n, bool)
    keep[::3] = False
    assert np.array_equal(d[keep], w.cost_host[keep])


def test_drain_refuses_what_it_cannot_run(cpu):
    w = Walk(cpu, 100)
    with pytest.raises(eagle.EagleValueError, match="walk_active.*not a drain entry"):
        w.aset.drain(w.s, w.mod.walk_active, w.args(), 3)
    with pytest.raises(eagle.EagleValueError, match="rounds"):
        w.aset.drain(w.s, w.mod.walk_drain, w.args(), 0)
    with pytest.raises(eagle.EagleTypeError, match="args"):
        w.aset.drain(w.s, w.mod.walk_drain, 5, 3)
    re = eagle.ActiveSet(cpu.zeros(100, "uint8"), reorder=0.5, backend=cpu)
    with pytest.raises(eagle.EagleValueError, match="reorder"):
        re.drain(w.s, w.mod.walk_drain, w.args(), 3)


def test_drain_refuses_a_wrong_number_of_arguments_before_the_launch(cpu):
    w = Walk(cpu, 100)
    with pytest.raises(eagle.EagleValueError, match=r"walk_drain takes 5 arguments of its own \(x, done, cost, mask, K\), got 4"):
        w.aset.drain(w.s, w.mod.walk_drain, w.args()[:-1], 3)
