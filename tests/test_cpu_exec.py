"""run_device on the cpu kind: lanes handed out in chunks from a shared counter over every thread
of the host (the affinity mask, or $EAGLE_CPU_THREADS), each lane exactly once, with chunk
boundaries and results that do not depend on the thread count."""
import hashlib
import os

import numpy as np
import pytest

import eagle
from _subproc import run_snippet

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# spread: lane i gets hits[i] += 1 and who[i] = the slot of the thread that ran it (threads are
# numbered as they first run a chunk of this library). A chunk that holds lanes below `hot` waits
# (up to 200 ms) until `want` threads have run hot lanes: costly lanes in one corner of the launch.
# A chunk of any other lane waits the same way for `want` threads in the whole launch, when
# `all_wait` is set.
SPREAD_C = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>
#define X __attribute__((visibility("default")))
enum { SLOTS = 256 };
static uintptr_t g_all[SLOTS], g_hot[SLOTS];
static int g_nall, g_nhot;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
/* The slot of the calling thread in table t (count *pn), added when new. */
static int slot_of(uintptr_t* t, int* pn) {
    const uintptr_t me = (uintptr_t)pthread_self();
    for (;;) {
        const int n = __atomic_load_n(pn, __ATOMIC_ACQUIRE);
        for (int k = 0; k < n; ++k)
            if (__atomic_load_n(&t[k], __ATOMIC_ACQUIRE) == me) return k;
        if (n >= SLOTS) return SLOTS - 1;
        uintptr_t zero = 0;
        if (__atomic_compare_exchange_n(&t[n], &zero, me, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            __atomic_fetch_add(pn, 1, __ATOMIC_SEQ_CST);
            return n;
        }
        while (__atomic_load_n(pn, __ATOMIC_ACQUIRE) == n) sched_yield();  /* another thread's slot */
    }
}
static void wait_for(int* pn, int64_t want) {
    const double end = now() + 0.2;
    while (__atomic_load_n(pn, __ATOMIC_ACQUIRE) < want && now() < end) sched_yield();
}
X void spread(void* const* p, int64_t base, int64_t count, int64_t n) {
    (void)n;
    int64_t* hits = *(int64_t* const*)p[0];
    int32_t* who = *(int32_t* const*)p[1];
    const int64_t hot = *(const int64_t*)p[2], want = *(const int64_t*)p[3], all_wait = *(const int64_t*)p[4];
    const int slot = slot_of(g_all, &g_nall);
    if (base < hot) {
        slot_of(g_hot, &g_nhot);
        wait_for(&g_nhot, want);
    } else if (all_wait) {
        wait_for(&g_nall, want);
    }
    for (int64_t i = base; i < base + count; ++i) {
        __atomic_fetch_add(&hits[i], 1, __ATOMIC_RELAXED);
        who[i] = slot;
    }
}
/* tiles: lane i records the (base, count) of the call that ran it */
X void tiles(void* const* p, int64_t base, int64_t count, int64_t n) {
    (void)n;
    int64_t* b = *(int64_t* const*)p[0];
    int64_t* c = *(int64_t* const*)p[1];
    for (int64_t i = base; i < base + count; ++i) { b[i] = base; c[i] = count; }
}
X void reset_threads(void* const* p, int64_t base, int64_t count, int64_t n) {
    (void)p; (void)base; (void)count; (void)n;
    for (int k = 0; k < SLOTS; ++k) { g_all[k] = 0; g_hot[k] = 0; }
    g_nall = g_nhot = 0;
}
"""

# Runs in a child (the pool's size is fixed when it starts): one `spread` launch, then reports the
# pool's size (device_props().sm_count) and how the launch went.
SPREAD_SNIPPET = """
import os
if CPUS is not None:
    os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:CPUS]))
import numpy as np
import eagle
b = eagle.backend("cpu")
k = eagle.compile(SRC, backend=b, kernels=["spread"])
hits, who = np.zeros(N, np.int64), np.full(N, -1, np.int32)
s = b.stream()
s.run(k.spread, [hits, who, HOT, WANT, ALL_WAIT], N)
s.synchronize()
result = {"sm_count": b.device_props().sm_count, "hits_all_one": bool((hits == 1).all()),
          "threads": len(set(who.tolist())), "hot_threads": len(set(who[:HOT].tolist())),
          "affinity": len(os.sched_getaffinity(0))}
"""


def _spread(n, hot=0, want=1, all_wait=0, threads=None, cpus=None):
    out = run_snippet(SPREAD_SNIPPET, timeout=120, env={"EAGLE_CPU_THREADS": threads},
                      globals={"SRC": SPREAD_C, "N": n, "HOT": hot, "WANT": want, "ALL_WAIT": all_wait,
                               "CPUS": cpus})
    return out.expect_ok()


@pytest.fixture(scope="module")
def spread_kernels(cpu):
    return eagle.compile(SPREAD_C, backend=cpu, kernels=["spread", "tiles", "reset_threads"])


@pytest.mark.parametrize("base,count", [(0, 1), (0, 127), (0, 128), (3, 129), (0, 100_003), (17, 1 << 20),
                                        (1000, 3 * (1 << 20) + 5)])
def test_lanes_of_uneven_cost_each_run_exactly_once(cpu, spread_kernels, base, count):
    n = base + count + 11
    hits, who = np.zeros(n, np.int64), np.full(n, -1, np.int32)
    s = cpu.stream()
    s.run(spread_kernels.reset_threads, [], 1)
    # the first tenth of the lanes waits for a second thread (where there is one): lanes of very
    # different cost
    want = min(2, cpu.device_props().sm_count)
    s.run(spread_kernels.spread, [hits, who, base + count // 10, want, 0], n, base=base, count=count)
    s.synchronize()
    inside = np.zeros(n, bool)
    inside[base:base + count] = True
    assert (hits[inside] == 1).all() and (hits[~inside] == 0).all()
    assert (who[inside] >= 0).all()


def test_costly_lanes_in_one_corner_are_shared_by_the_threads():
    # Lanes [0, n/16) wait for a second thread to run one of them: with a few big tiles (n/8 lanes
    # each, as before chunking) one thread ran them all, and waited; chunks spread them.
    r = _spread(1 << 16, hot=(1 << 16) // 16, want=2, threads=2)
    assert r["sm_count"] == 2 and r["hits_all_one"]
    assert r["hot_threads"] == 2


@pytest.mark.parametrize("threads", [1, 3])
def test_eagle_cpu_threads_sets_how_many_threads_compute(threads):
    # every chunk waits (briefly) until `threads` threads are in the launch: all of them join, and
    # no other thread ever runs a lane
    r = _spread(1 << 14, want=threads, all_wait=1, threads=threads)
    assert r["sm_count"] == threads and r["hits_all_one"]
    assert r["threads"] == threads


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no affinity masks here")
@pytest.mark.parametrize("override", [None, "0", "lots", ""])
def test_without_a_valid_override_the_affinity_mask_decides(override):
    r = _spread(1 << 14, want=1, threads=override, cpus=1)
    assert r["affinity"] == 1 and r["sm_count"] == 1 and r["threads"] == 1 and r["hits_all_one"]
    full = len(os.sched_getaffinity(0))
    r = _spread(1 << 14, want=full, all_wait=1, threads=override)
    assert r["sm_count"] == full and r["threads"] == full and r["hits_all_one"]


TILES_SNIPPET = """
import hashlib
import numpy as np
import eagle
b = eagle.backend("cpu")
k = eagle.compile(SRC, backend=b, kernels=["tiles"])
s = b.stream()
result = {}
for count in COUNTS:
    base, c = np.full(count, -1, np.int64), np.full(count, -1, np.int64)
    s.run(k.tiles, [base, c], count)
    s.synchronize()
    result[str(count)] = hashlib.sha256(base.tobytes() + c.tobytes()).hexdigest()
"""


def test_chunk_boundaries_do_not_depend_on_the_thread_count():
    counts = [1000, 100_000, (1 << 20) + 3]
    seen = [run_snippet(TILES_SNIPPET, timeout=120, env={"EAGLE_CPU_THREADS": t},
                        globals={"SRC": SPREAD_C, "COUNTS": counts}).expect_ok() for t in (1, 2, 5)]
    assert seen[0] == seen[1] == seen[2]


def test_a_large_launch_is_cut_into_many_chunks(cpu, spread_kernels):
    # enough pieces to balance lanes of uneven cost over many cores (a few big tiles do not)
    count = 1 << 20
    base, c = np.full(count, -1, np.int64), np.full(count, -1, np.int64)
    s = cpu.stream()
    s.run(spread_kernels.tiles, [base, c], count)
    s.synchronize()
    starts = np.unique(base)
    assert len(starts) >= 512
    assert (np.diff(starts) > 0).all() and starts[0] == 0


CARD_SNIPPET = """
import hashlib, sys
sys.path.insert(0, BENCH)
import oscillators as o
card = o.Card("cpu", 20_000, 32)
card.run_graph()
gx, gv = card.result()
card.run_single()
sx, sv = card.x.numpy(), card.v.numpy()
result = {"graph": hashlib.sha256(gx.tobytes() + gv.tobytes()).hexdigest(),
          "single": hashlib.sha256(sx.tobytes() + sv.tobytes()).hexdigest()}
"""


def test_the_oscillator_card_gives_the_same_bits_on_any_thread_count():
    bench = os.path.join(ROOT, "benchmarks")
    seen = [run_snippet(CARD_SNIPPET, timeout=300, env={"EAGLE_CPU_THREADS": t},
                        globals={"BENCH": bench}).expect_ok() for t in (1, 4)]
    assert seen[0] == seen[1]
