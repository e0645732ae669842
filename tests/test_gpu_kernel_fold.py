"""The kernel WHILE fold on a real GPU (issue 17): a WHILE body whose last word is a launch of a
kernel compiled from EAGLE_KERNEL ends with that kernel's `eagle_while_end_<N>_<name>` entry, which takes the
loop's decision itself, so no setter kernel follows it (backends/cuda/kernel_fold.cpp).

What must hold: the body has no node after the kernel; the loop runs exactly as the setter would
have run it (guard, baseline, cap, the [remaining, ran] cell), replay after replay; with a grid of
many blocks the decision waits for every block (a decision taken early would read a guard not yet
written and run extra iterations); the ticket word a folded node borrows lives as long as any
launcher holds it. Skipped with the probe's reason where no cuda backend or no usable GPU exists."""
import gc

import pytest

import eagle
from conftest import dependents, finish, kernel_ptr

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy", reason="the GPU tests take device memory from CuPy")

SOURCE = r"""
#include <eagle/kernel.h>
/* one lane takes one off the counter */
EAGLE_KERNEL(count_down, (EAGLE_BUFFER uint32_t*, c)) { (void)n; if (i == 0) c[0] -= 1u; }
/* every lane takes one off the counter and counts its own calls */
EAGLE_KERNEL(spread_down, (EAGLE_BUFFER uint32_t*, c), (uint32_t*, hits)) { (void)n; hits[i] += 1u; atomicSub(c, 1u); }
/* one lane adds one (a body step that is not the last word) */
EAGLE_KERNEL(bump, (EAGLE_BUFFER uint32_t*, c)) { (void)n; if (i == 0) c[0] += 1u; }
"""

FOREIGN = r"""
extern "C" __global__ void foreign_bump(unsigned* c, long long base, long long count, long long n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) c[0] += 1u;
}
"""


@pytest.fixture(scope="module")
def m(cuda):
    return eagle.compile(SOURCE, backend=cuda, name="kernel_fold_test.c")


@pytest.fixture
def s(cuda):
    st = cuda.stream(non_blocking=True)
    yield st
    st.close()


def record_while(cuda, s, cnt, cell, loop_cap, body_fn, baseline=None):
    """Capture WHILE(cnt [!= baseline]) [body_fn(body)]; returns (launcher, body nodes)."""
    with cuda.capture(s) as cap:
        w = cuda.while_(s, cnt, cell, loop_cap=loop_cap, baseline=baseline)
        body = w.begin()
        body_fn(body)
        nodes = cuda.snapshot_nodes(body)
        w.end()
        w.close()
    L = cuda.graph_from_captured(cap.captured).launcher()
    L.set_stream(s)
    return L, nodes


def put(arr, value):
    arr.fill(value)
    cp.cuda.Device().synchronize()


def test_an_eagle_kernel_ends_a_while_body_with_no_setter(cuda, m, s):
    cnt, cell = cp.zeros(1, cp.uint32), cp.zeros(2, cp.uint32)
    L, nodes = record_while(cuda, s, cnt, cell, 50, lambda b: m.count_down.run([cnt], 1, stream=b, block=1))
    assert len(nodes) == 1 and dependents(nodes[0]) == 0, "a setter kernel follows the eagle kernel"
    for start, ran in ((5, 5), (0, 0), (1, 1), (49, 49), (50, 50), (80, 50)):
        put(cnt, start)
        finish(L, s)
        assert cell.get().tolist() == [50 - ran, ran], start
        assert int(cnt.get()[0]) == start - ran, start


@pytest.mark.parametrize("n", [1, 100, 256, 257, 100_000], ids=lambda n: f"n{n}")
def test_a_folded_kernel_of_many_blocks_decides_after_every_block(cuda, m, s, n):
    """The guard falls by n an iteration, written by every lane: after `iters` iterations it is 0.
    A decision read before the last block's writes would see it nonzero and run on (the counter
    would wrap and the loop would run to its cap)."""
    iters = 37
    cnt, cell = cp.zeros(1, cp.uint32), cp.zeros(2, cp.uint32)
    hits = cp.zeros(n, cp.uint32)
    L, nodes = record_while(cuda, s, cnt, cell, 10_000,
                            lambda b: m.spread_down.run([cnt, hits], n, stream=b, block=256))
    assert dependents(nodes[-1]) == 0
    for replay in range(3):
        put(hits, 0)
        put(cnt, iters * n)
        finish(L, s)
        assert cell.get().tolist() == [10_000 - iters, iters], replay
        assert int(cnt.get()[0]) == 0
        assert int(hits.min()) == iters and int(hits.max()) == iters


def test_a_folded_kernel_keeps_the_baseline_and_the_cap(cuda, m, s):
    cnt, cell, base = cp.zeros(1, cp.uint32), cp.zeros(2, cp.uint32), cp.zeros(1, cp.uint32)
    L, nodes = record_while(cuda, s, cnt, cell, 8, lambda b: m.count_down.run([cnt], 1, stream=b, block=1),
                            baseline=base)
    assert dependents(nodes[0]) == 0
    for start, baseline, ran in ((10, 4, 6), (10, 10, 0), (20, 0, 8), (3, 7, 8)):
        put(cnt, start)
        put(base, baseline)
        finish(L, s)
        assert cell.get().tolist() == [8 - ran, ran], (start, baseline)
        assert int(cnt.get()[0]) == (start - ran) % (1 << 32)


def test_only_the_last_word_is_folded(cuda, m, s):
    """[eagle bump, eagle count_down]: only the last is folded, and the first still runs every
    iteration. [eagle count_down, foreign kernel]: no fold, the setter follows the foreign kernel."""
    cnt, cell, hits = cp.zeros(1, cp.uint32), cp.zeros(2, cp.uint32), cp.zeros(1, cp.uint32)

    def two_eagle(b):
        m.bump.run([hits], 1, stream=b, block=1)
        m.count_down.run([cnt], 1, stream=b, block=1)
    L, nodes = record_while(cuda, s, cnt, cell, 100, two_eagle)
    assert len(nodes) == 2 and dependents(nodes[0]) == 1 and dependents(nodes[1]) == 0
    put(cnt, 9)
    put(hits, 0)
    finish(L, s)
    assert cell.get().tolist() == [91, 9] and int(hits.get()[0]) == 9 and int(cnt.get()[0]) == 0

    foreign = cp.RawModule(code=FOREIGN).get_function("foreign_bump")

    def then_foreign(b):
        m.count_down.run([cnt], 1, stream=b, block=1)
        cuda.run(kernel_ptr(foreign), [hits], 1, stream=b, block=1)
    L2, nodes2 = record_while(cuda, s, cnt, cell, 100, then_foreign)
    assert len(nodes2) == 2 and dependents(nodes2[1]) == 1, "the setter must follow the foreign kernel"
    put(cnt, 4)
    put(hits, 0)
    finish(L2, s)
    assert cell.get().tolist() == [96, 4] and int(hits.get()[0]) == 4


def test_a_folded_kernel_nested_in_a_while(cuda, m, s):
    """Outer WHILE (its body ends with the inner WHILE node: setter kept) over an inner WHILE whose
    body is folded: the inner loop borrows its ticket from the outermost capture's graph."""
    n = 5000
    outer_cnt, inner_cnt = cp.zeros(1, cp.uint32), cp.zeros(1, cp.uint32)
    outer_cell, inner_cell = cp.zeros(2, cp.uint32), cp.zeros(2, cp.uint32)
    hits = cp.zeros(n, cp.uint32)
    refill = eagle.compile("#include <eagle/kernel.h>\nEAGLE_KERNEL(refill, (EAGLE_BUFFER uint32_t*, c), (int64_t, v))"
                           " { (void)n; if (i == 0) c[0] = (uint32_t)v; }\n", backend=cuda, name="refill.c")
    with cuda.capture(s) as cap:
        o = cuda.while_(s, outer_cnt, outer_cell, loop_cap=100)
        ob = o.begin()
        m.count_down.run([outer_cnt], 1, stream=ob, block=1)
        refill.refill.run([inner_cnt, 6 * n], 1, stream=ob, block=1)
        i = cuda.while_(ob, inner_cnt, inner_cell, loop_cap=1000)
        ib = i.begin()
        m.spread_down.run([inner_cnt, hits], n, stream=ib, block=128)
        inner_nodes = cuda.snapshot_nodes(ib)
        i.end()
        i.close()
        outer_nodes = cuda.snapshot_nodes(ob)
        o.end()
        o.close()
    L = cuda.graph_from_captured(cap.captured).launcher()
    L.set_stream(s)
    assert dependents(inner_nodes[-1]) == 0
    assert dependents(outer_nodes[-1]) == 1  # the inner WHILE node, then the outer setter
    put(outer_cnt, 3)
    put(inner_cnt, 0)
    put(hits, 0)
    finish(L, s)
    assert outer_cell.get().tolist() == [97, 3] and inner_cell.get().tolist() == [994, 6]
    assert int(hits.min()) == 18 and int(hits.max()) == 18


def test_a_launcher_outlives_its_graph_and_keeps_its_ticket(cuda, m, s):
    """The graph and capture of L1 are gone; more folded graphs are recorded (each borrows a ticket
    word), then L1 and L2 run at the same time on two streams. Had L1's word gone back to the pool
    with its graph, L2 could hold the same word and the two grids' last-block counts would mix."""
    n = 200_000
    s2 = cuda.stream(non_blocking=True)
    try:
        arrays = [(cp.zeros(1, cp.uint32), cp.zeros(2, cp.uint32), cp.zeros(n, cp.uint32)) for _ in range(2)]

        def record(k, stream):
            cnt, cell, hits = arrays[k]
            with cuda.capture(stream) as cap:
                w = cuda.while_(stream, cnt, cell, loop_cap=10_000)
                body = w.begin()
                m.spread_down.run([cnt, hits], n, stream=body, block=256)
                w.end()
                w.close()
            g = cuda.graph_from_captured(cap.captured)
            L = g.launcher()
            L.set_stream(stream)
            return L

        L1 = record(0, s)
        gc.collect()
        spare = [record(1, s2) for _ in range(3)]  # borrow and give back words while L1 lives
        del spare
        gc.collect()
        L2 = record(1, s2)
        for rnd in range(5):
            for cnt, cell, hits in arrays:
                put(hits, 0)
                put(cnt, 23 * n)
            L1.launch()
            L2.launch()
            L1.synchronize()
            L2.synchronize()
            for cnt, cell, hits in arrays:
                assert cell.get().tolist() == [10_000 - 23, 23], rnd
                assert int(cnt.get()[0]) == 0 and int(hits.min()) == 23 and int(hits.max()) == 23
    finally:
        s2.close()


def test_graph_build_repeat_while_over_an_eagle_kernel_step(cuda, m):
    """The user-level API: eagle.Graph.build([repeat_while([step], guard, cap)]) whose step runs
    an EAGLE_KERNEL: decided on the device, the step folded, the iteration count as the guard says."""
    n, iters = 3000, 11
    cnt, hits = cp.zeros(1, cp.uint32), cp.zeros(n, cp.uint32)

    def step(st):
        st.run(m.spread_down, [cnt, hits], n, block=256)
    for cap, ran in ((1000, iters), (4, 4)):
        loop = eagle.repeat_while([step], cnt, cap)
        g = eagle.Graph.build([loop], planes=[cnt, hits], toggle=False)
        assert g.decides_on_device
        for _ in range(2):
            put(hits, 0)
            put(cnt, iters * n)
            g.launch()
            g.synchronize()
            assert g.ran(loop) == ran
            assert int(cnt.get()[0]) == (iters - ran) * n
            assert int(hits.min()) == ran and int(hits.max()) == ran
        g.close()


def test_a_users_kernel_that_only_has_the_entrys_name_is_never_folded(cuda, s):
    """`foo` and an `eagle_while_end_1_foo` written by hand: the entry's parameters after foo's
    are not the header's five 8-byte words, so the backend keeps the setter and never launches it."""
    src = r"""
#include <eagle/kernel.h>
extern "C" __global__ void foo(uint32_t* c, int64_t base, int64_t count, int64_t n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) c[0] -= 1u;
}
extern "C" __global__ void eagle_while_end_1_foo(uint32_t* c, int64_t base, int64_t count, int64_t n,
                                                 int a, int b, int d, int e, int f) {
    c[0] = 12345u;
}
"""
    mod = eagle.compile(src, backend=cuda, name="impostor.c")
    cnt, cell = cp.zeros(1, cp.uint32), cp.zeros(2, cp.uint32)
    L, nodes = record_while(cuda, s, cnt, cell, 100, lambda b: mod.foo.run([cnt], 1, stream=b, block=1))
    assert len(nodes) == 1 and dependents(nodes[0]) == 1, "the setter must follow a hand-written kernel"
    put(cnt, 7)
    finish(L, s)
    assert cell.get().tolist() == [93, 7] and int(cnt.get()[0]) == 0


def test_threads_record_and_replay_folded_loops_at_once(cuda, m):
    """Four threads, each recording its own folded WHILE on its own stream at the same time (the
    fold's registries and the ticket pool are shared), then replaying it: every loop runs as its
    own guard says."""
    import threading
    n, errors = 20_000, []
    barrier, recorded = threading.Barrier(4), threading.Barrier(4)

    def worker(k):
        try:
            st = cuda.stream(non_blocking=True)
            cnt, cell, hits = cp.zeros(1, cp.uint32), cp.zeros(2, cp.uint32), cp.zeros(n, cp.uint32)
            barrier.wait(60)
            L, nodes = record_while(cuda, st, cnt, cell, 1000,
                                    lambda b: m.spread_down.run([cnt, hits], n, stream=b, block=256))
            assert dependents(nodes[-1]) == 0
            recorded.wait(60)  # no thread's capture is open from here on
            for rnd in range(3):
                iters = 5 + k + rnd
                hits.fill(0)
                cnt.fill(iters * n)
                cp.cuda.Stream.null.synchronize()
                L.launch()
                L.synchronize()
                assert cell.get().tolist() == [1000 - iters, iters], (k, rnd)
                assert int(cnt.get()[0]) == 0 and int(hits.min()) == iters == int(hits.max())
            st.close()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append((k, repr(e)))
            barrier.abort()  # the others stop waiting for this one
            recorded.abort()

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    assert not errors, errors
