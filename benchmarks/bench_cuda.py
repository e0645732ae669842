"""eagle's cuda backend against its anchors, interleaved in one process (issue 5).

    python benchmarks/bench_cuda.py [--rounds 7] [--out FILE] [--no-card] [--no-sweep]

Needs: the cuda backend ($EAGLE_BACKEND_CUDA or installed), a GPU, nvcc (builds the raw-CUDA
peers in benchmarks/cuda/peers.cu), cupy (device arrays and events) and, optionally, torch.
Each figure is the median over --rounds interleaved rounds; ratios compare figures of one round
set, never figures from different processes (the device VM has two launch-cost modes)."""
import argparse
import ctypes
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time

from _machine import cffi_fallback

HERE = os.path.dirname(os.path.abspath(__file__))


def build_peers():
    out = os.path.join("/tmp", "libeagle_peers.so")
    src = os.path.join(HERE, "cuda", "peers.cu")
    gpu = os.path.join(HERE, "..", "backends", "gpu")  # eagle's compaction kernels (filtering_kernels.cuh)
    deps = [src] + [os.path.join(gpu, f) for f in ("filtering_kernels.cuh", "device_intrinsics.h")]
    if not os.path.exists(out) or os.path.getmtime(out) < max(os.path.getmtime(d) for d in deps):
        subprocess.run(["nvcc", "-O3", "-std=c++17", "-arch=sm_90", "--expt-relaxed-constexpr", "-I", gpu,
                        "-shared", "-Xcompiler", "-fPIC", src, "-o", out], check=True)
    lib = ctypes.CDLL(out)
    for name in ("peer_graph_launch_loop", "peer_seam_launch_loop", "peer_while", "peer_host_loop", "peer_cub_flagged",
                 "peer_cub_flagged_counting", "peer_memcpy", "peer_memcpy_wall", "peer_activeset_while",
                 "peer_activeset_while_on", "peer_activeset_graph", "peer_activeset_graph_release"):
        getattr(lib, name).restype = ctypes.c_int
    return lib


def ok(rc, what):
    if rc:
        raise RuntimeError(f"{what} failed with cudaError {rc}")


def med(xs):
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--launches", type=int, default=2000)
    ap.add_argument("--out", default=None)
    ap.add_argument("--card-n", type=int, default=1000000)
    ap.add_argument("--card-k", type=int, default=32)
    ap.add_argument("--no-card", action="store_true", help="skip the oscillator card with/without reorder")
    ap.add_argument("--no-sweep", action="store_true", help="skip benchmarks/cuda/compact_sweep.cu")
    args = ap.parse_args()

    import cupy as cp
    import eagle
    from eagle.benchknobs import ffi, hot_path_compiled, launch_releasing_gil, python_host_calls_pending
    from eagle.extend import address_of
    try:
        import torch
    except ImportError:  # torch is a peer, not a requirement
        torch = None

    b = eagle.backend("cuda")
    b.probe()
    props = b.device_props(0)
    peers = build_peers()
    s = b.stream(non_blocking=True)
    cs = cp.cuda.ExternalStream(s.handle)  # noqa: the image's CuPy 14 still provides it
    u64 = ctypes.c_uint64()
    dbl = ctypes.c_double()
    ok(peers.peer_function(b"peer_empty", ctypes.byref(u64)), "peer_function")
    f_empty = u64.value
    ok(peers.peer_function(b"peer_decrement", ctypes.byref(u64)), "peer_function")
    f_dec = u64.value

    rows = {}
    failures = []

    def add(name, value):
        rows.setdefault(name, []).append(value)

    # -- 1. graph replay enqueue -------------------------------------------------------------
    with b.capture(s) as cap:
        b.run(f_empty, [], 1, stream=s, block=1)
    graph = b.graph_from_captured(cap.captured)
    launcher = graph.launcher()
    launcher.set_stream(s)
    with cffi_fallback():  # a second launcher on the cffi fallback (py_bound_call), as without eagle._hotcall
        launcher_ffi = graph.launcher()
    launcher_ffi.set_stream(s)
    print(f"eagle._hotcall: {'built, used by Launcher.launch()' if hot_path_compiled(launcher.launch) else 'NOT built'}")
    # the same launch bound to release the GIL around every call (as EAGLE_LAUNCH_RELEASES_GIL=1 does)
    launch_releasing = launch_releasing_gil(launcher)
    seam_fn = int(ffi.cast("uintptr_t", b._f.launcher_launch))
    seam_launcher = int(ffi.cast("uintptr_t", launcher._h))
    ok(peers.peer_graph_make(ctypes.c_uint64(s.handle)), "peer_graph_make")
    x_cp = cp.zeros(1, cp.float32)
    with cs:
        cs.begin_capture()
        x_cp += 1
        g_cp = cs.end_capture()
    if torch is not None:
        x_t = torch.zeros(1, device="cuda")
        tg = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            x_t.add_(1)
        torch.cuda.synchronize()
        with torch.cuda.graph(tg):
            x_t.add_(1)
    N = args.launches
    raw_launch, raw_h = b._f.launcher_launch, launcher._h  # the seam call alone, no wrapper

    def timed(loop, sync):  # host microseconds per launch of N launches, after and before a sync
        sync()
        t0 = time.perf_counter()
        loop()
        t1 = time.perf_counter()
        sync()
        return (t1 - t0) / N * 1e6

    def eagle_launch():
        for _ in range(N):
            launcher.launch()

    def eagle_releasing():
        for _ in range(N):
            launch_releasing()

    def eagle_fallback():
        for _ in range(N):
            launcher_ffi.launch()

    def raw_cffi():
        for _ in range(N):
            raw_launch(raw_h)

    def cupy_launch():
        for _ in range(N):
            g_cp.launch(cs)

    def torch_replay():
        for _ in range(N):
            tg.replay()

    def c_loop(fn, *a):
        ok(fn(*a, N, ctypes.byref(dbl)), fn.__name__)
        return dbl.value

    replay_cases = {
        "replay: eagle Launcher.launch()": lambda: timed(eagle_launch, s.synchronize),
        "replay: eagle Launcher.launch(n)": lambda: timed(lambda: launcher.launch(N), s.synchronize),
        "replay: eagle Launcher.launch(), GIL released each call": lambda: timed(eagle_releasing, s.synchronize),
        "replay: eagle Launcher.launch(), cffi fallback": lambda: timed(eagle_fallback, s.synchronize),
        "replay: raw cffi eagle_backend_launcher_launch": lambda: timed(raw_cffi, s.synchronize),
        "replay: C loop of eagle_backend_launcher_launch": lambda: c_loop(
            peers.peer_seam_launch_loop, ctypes.c_uint64(seam_fn), ctypes.c_uint64(seam_launcher),
            ctypes.c_uint64(s.handle)),
        "replay: C loop of cudaGraphLaunch": lambda: c_loop(peers.peer_graph_launch_loop, ctypes.c_uint64(s.handle)),
        "replay: cupy Graph.launch": lambda: timed(cupy_launch, cs.synchronize),
    }
    if torch is not None:
        replay_cases["replay: torch CUDAGraph.replay"] = lambda: timed(torch_replay, torch.cuda.synchronize)
    names = list(replay_cases)
    print(f"Python host functions pending at the replay rounds: {python_host_calls_pending()} "
          "(Launcher.launch() keeps the GIL only at 0)")
    for r in range(2 * args.rounds + 1):  # rotating order: no case always follows the same one
        for name in names[r % len(names):] + names[:r % len(names)]:
            add(name, replay_cases[name]())

    # -- 2. WHILE per iteration --------------------------------------------------------------
    cnt = cp.zeros(1, cp.uint32)
    cell = cp.zeros(2, cp.uint32)
    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
    # The raw peers build and instantiate their graph on every call, and one instantiation of the
    # same graph can cost ~0.5 us an iteration more than another on this machine (two modes, seen
    # in every run): eagle is measured the same way, its loop recorded and instantiated afresh each
    # round (a graph with a conditional node is instantiated once), and also with one launcher kept
    # for all rounds (the rows "one launcher").
    def fresh_while_launcher():
        with b.capture(s) as cap:
            w = b.while_(s, cnt, cell, loop_cap=1 << 30)
            body = w.begin()
            b.run(f_dec, [cnt], 1, stream=body, block=1)
            w.end()
            w.close()
        launcher_ = b.graph_from_captured(cap.captured).launcher()
        launcher_.set_stream(s)
        return launcher_
    wl_kept = fresh_while_launcher()
    # The same loop with its body compiled from EAGLE_KERNEL: the cuda backend folds eagle's setter
    # into the kernel's `eagle_while_end_<N>_<name>` entry (backends/cuda/kernel_fold.cpp), one node an iteration.
    dec_module = eagle.compile("#include <eagle/kernel.h>\n"
                               "EAGLE_KERNEL(bench_decrement, (EAGLE_BUFFER uint32_t*, c)) { (void)n; if (i == 0) c[0] -= 1u; }\n",
                               backend=b, name="bench_decrement.c")

    def fresh_folded_launcher():
        with b.capture(s) as cap:
            w = b.while_(s, cnt, cell, loop_cap=1 << 30)
            body = w.begin()
            b.run(dec_module.bench_decrement, [cnt], 1, stream=body, block=1)
            w.end()
            w.close()
        launcher_ = b.graph_from_captured(cap.captured).launcher()
        launcher_.set_stream(s)
        return launcher_

    def eagle_while(iters, wl):
        with cs:
            cnt.fill(iters)
        ev0.record(cs)
        wl.launch()
        ev1.record(cs)
        ev1.synchronize()
        assert int(cell[1].get()) == iters and int(cnt.get()[0]) == 0, "WHILE ran the wrong count"
        return cp.cuda.get_elapsed_time(ev0, ev1) * 1000.0

    d_counter = cp.zeros(1, cp.uint32)
    for _ in range(args.rounds):
        wl = fresh_while_launcher()
        wf = fresh_folded_launcher()
        for iters in (1000, 10000):
            add(f"WHILE {iters} it: eagle (us/iter)", eagle_while(iters, wl) / iters)
            add(f"WHILE {iters} it: eagle, EAGLE_KERNEL body, setter folded (us/iter)", eagle_while(iters, wf) / iters)
            add(f"WHILE {iters} it: eagle, one launcher for all rounds (us/iter)", eagle_while(iters, wl_kept) / iters)
            for body_kind, what in ((0, "raw CUDA WHILE node"),
                                    (1, "raw WHILE, 2-kernel body (step, decide)"),
                                    (2, "raw WHILE, 2-kernel body, programmatic edge"),
                                    (3, "raw WHILE, 2-kernel body, programmatic edge, eagle's setter work"),
                                    (4, "raw WHILE, eagle's body by hand (triple, setter work, programmatic edge)")):
                ok(peers.peer_while(ctypes.c_uint64(s.handle), ctypes.c_void_p(d_counter.data.ptr), iters, 1,
                                    body_kind, ctypes.byref(dbl)), "peer_while")
                add(f"WHILE {iters} it: {what} (us/iter)", dbl.value)
        ok(peers.peer_host_loop(ctypes.c_uint64(s.handle), ctypes.c_void_p(d_counter.data.ptr), 1000,
                                ctypes.byref(dbl)), "peer_host_loop")
        add("WHILE 1000 it: host-driven loop (us/iter)", dbl.value)

    # -- 2b. the ActiveSet loop per iteration (issue 17) ------------------------------------------
    # eagle.repeat_while([step, aset], aset): the step kernel (peer_drop_step: each live sample
    # drops with probability 1/32 a step, by a hash, so every run drops the same samples at the
    # same steps) and the ActiveSet's compaction, which ends each iteration itself (the WHILE
    # fold) -- against the same loop built by hand as a raw WHILE (peer_activeset_while): body =
    # the same step kernel + eagle's compaction kernel whose last block sets the condition; and the
    # three-kernel body eagle recorded before the fold (compaction, then a decide kernel); and the
    # 2-kernel peer moved toward eagle one difference at a time (peers.cu, body_kind 2-4): (a) the
    # compaction steps eagle's [remaining, ran] cell, (b) the graph recorded by stream capture the
    # way eagle's cuda backend records it (the step by cuLaunchKernel, the fold by rewriting the
    # captured compaction node), (c) both; and (a)'s cell work in two other forms, (a1) read early
    # and stored as one word, (a2) stored only, with a control (peers.cu body_kind 5-7). Figures
    # are GPU time of one launch (events) over its iterations; every peer's result is checked
    # equal to eagle's. The cases run in a rotating order, so none always follows the same one.
    ok(peers.peer_function(b"peer_drop_step", ctypes.byref(u64)), "peer_function")
    f_drop = u64.value
    AS = "ActiveSet loop 2^{}: {} (us/iter)"
    AS_E = "eagle repeat_while([step, aset], aset)"
    AS_PEERS = ((0, "raw WHILE, 2-kernel body (step, compaction that sets the condition)"),
                (1, "raw WHILE, 3-kernel body (step, compaction, decide; programmatic edge)"),
                (2, "raw WHILE, 2-kernel body + eagle's [remaining, ran] cell (a)"),
                (3, "raw WHILE, 2-kernel body recorded by capture as eagle records it (b)"),
                (4, "raw WHILE, (a) + (b): eagle's graph by hand (c)"),
                (5, "raw WHILE, (a) with the cell read early, stored as one word (a1)"),
                (6, "raw WHILE, (a) with the cell only stored, never read (a2, timing only)"),
                (7, "raw WHILE, (a) with the compaction copied into peers.cu (control: as (a))"),
                # the same graphs run on eagle's own buffers (its mask, steps, index map, count,
                # compaction scratch and loop cell): what is left of eagle's gap is where its memory
                # lies, not what its graph does (peer_activeset_while_on)
                (102, "raw WHILE, (a) on eagle's own buffers"),
                (104, "raw WHILE, (c) on eagle's own buffers"))
    aset_cases = []
    for logn in (20, 10):
        n = 1 << logn
        mask, steps = cp.zeros(n, cp.uint8), cp.zeros(n, cp.uint32)
        raw = {"mask": cp.zeros(n, cp.uint8), "steps": cp.zeros(n, cp.uint32), "idx": cp.zeros(n, cp.int32),
               "count": cp.zeros(1, cp.uint32)}
        cp.cuda.Device().synchronize()
        aset = eagle.ActiveSet(mask, backend=b, stream=s)

        def drop_step(st, aset=aset, steps=steps, mask=mask, n=n):
            st.run(f_drop, [aset.index_map, aset.count, steps, mask], n, block=256)
        loop = eagle.repeat_while([drop_step, aset], aset, (1 << 31), name="step + compact")

        def build(aset=aset, loop=loop, mask=mask, steps=steps):  # a fresh instantiation, as the peers make
            return eagle.Graph.build([aset, loop], planes=[mask, steps], stream=s, toggle=False)
        own = {"mask": mask, "steps": steps, "idx": aset.index_map, "count": aset.count, "scratch": aset._scratch}
        aset_cases.append([logn, n, mask, steps, build, loop, raw, own, build()])
    cp.cuda.Device().synchronize()  # the ActiveSets' words were zero-filled on CuPy's stream

    def eagle_aset(n, mask, steps, g, loop, reps=5):
        times = []
        for r in range(reps + 1):  # the first launch warms up, untimed
            with cs:
                mask.fill(0)
                steps.fill(0)
            ev0.record(cs)
            g.launch()
            ev1.record(cs)
            ev1.synchronize()
            if r:
                times.append(cp.cuda.get_elapsed_time(ev0, ev1) * 1000.0)
        return med(times), g.ran(loop)

    aset_iters = {}
    aset_order = [None] + [kind for kind, _ in AS_PEERS]  # None: eagle
    aset_broken = set()
    for r in range(args.rounds):
        for case in aset_cases:
            logn, n, mask, steps, build, loop, raw, own, g_kept = case
            g = build()  # this round's instantiation of eagle's graph (see section 2)
            own["cell"] = g._cell(loop)
            ran, eagle_steps, peer_runs = None, None, {}
            for kind in aset_order[r % len(aset_order):] + aset_order[:r % len(aset_order)]:
                if kind is None:
                    us_kept, ran_kept = eagle_aset(n, mask, steps, g_kept, loop)
                    add(AS.format(logn, AS_E + ", one graph for all rounds"), us_kept / ran_kept)
                    us, ran = eagle_aset(n, mask, steps, g, loop)
                    add(AS.format(logn, AS_E), us / ran)
                    eagle_steps = steps.get()  # on the host: the peers' runs do not touch eagle's arrays
                    if not bool((mask == 1).all()):
                        failures.append(f"ActiveSet loop 2^{logn}: eagle left live samples")
                    continue
                if kind in aset_broken:
                    continue
                bufs = own if kind >= 100 else raw
                ptr = {k: ctypes.c_void_p(address_of(v).ptr) for k, v in bufs.items()}
                if kind >= 100:
                    rc = peers.peer_activeset_while_on(ctypes.c_uint64(s.handle), ptr["mask"], ptr["steps"], ptr["idx"],
                                                       ptr["count"], ptr["scratch"], ptr["cell"], n, kind - 100, 5,
                                                       ctypes.byref(dbl))
                else:
                    rc = peers.peer_activeset_while(ctypes.c_uint64(s.handle), ptr["mask"], ptr["steps"], ptr["idx"],
                                                    ptr["count"], n, kind, 5, ctypes.byref(dbl))
                if rc:  # a peer that cannot be built here is reported and left out, the rest still run
                    aset_broken.add(kind)
                    failures.append(f"ActiveSet loop 2^{logn}: peer_activeset_while kind {kind} failed with error {rc}")
                    print(failures[-1])
                    continue
                raw_steps = bufs["steps"].get()  # before the next peer zeroes them
                raw_iters = int(raw_steps.max())
                add(AS.format(logn, dict(AS_PEERS)[kind]), dbl.value / raw_iters)
                if not (bool((bufs["mask"] == 1).all()) and int(bufs["count"].get()[0]) == 0):
                    failures.append(f"ActiveSet loop 2^{logn}: the raw peer kind {kind} left live samples")
                peer_runs[kind] = (raw_iters, raw_steps)
            for kind, (raw_iters, raw_steps) in peer_runs.items():
                if ran != raw_iters or not (eagle_steps == raw_steps).all():
                    failures.append(f"ActiveSet loop 2^{logn}: eagle ({ran} iterations) and the raw peer kind {kind} "
                                    f"({raw_iters} iterations) disagree")
            aset_iters[logn] = ran
    print(f"ActiveSet loop: WHILE iterations per launch {aset_iters} (eagle == raw peers checked every round)")

    def wall_us(fn, reps=5):  # host microseconds of one blocking call, median of reps after a warm-up
        fn()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e6)
        return med(times)

    # -- 3. compaction, 50 % kept --------------------------------------------------------------
    # Two ways of calling it. With stream=s the call returns at once and the stream holds the
    # arrays until the work has run (a release marker behind it): timed by events around it.
    # Eager, with no stream=, eagle runs it on a stream of its own and waits (no marker): timed on
    # the host, against the same seam call made raw (prepared desc, cffi) and waited for the same way.
    raw_sync = b._f.stream_synchronize
    for logn in (26, 20):
        n = 1 << logn
        rng = cp.random.default_rng(1)
        mask = (rng.random(n) < 0.5).astype(cp.uint8)
        idx = cp.zeros(n, cp.int32)
        count = cp.zeros(1, cp.uint32)
        scratch = cp.zeros(b.compact_scratch_bytes(n, stream=s), cp.uint8)
        data = cp.arange(n, dtype=cp.int32)
        out = cp.zeros(n, cp.int32)
        num = cp.zeros(1, cp.int32)
        cp.cuda.Device().synchronize()  # the arrays were made on CuPy's stream; s does not wait for it
        b.compact(mask, idx, count, scratch, stream=s)
        s.synchronize()
        expect = cp.flatnonzero(mask).astype(cp.int32)
        assert int(count.get()[0]) == expect.size and bool((idx[:expect.size] == expect).all()), \
            "eagle compaction differs from cupy.flatnonzero"
        mask_t = torch.as_tensor(mask, device="cuda").bool() if torch is not None else None
        # The seam call itself with a prepared desc, as the CUB peer is a prepared C call.
        desc = ffi.new("struct eagle_backend_compact_desc*")
        desc.struct_size, desc.device, desc.n, desc.stream = ffi.sizeof(desc[0]), -1, n, s.handle
        desc.mask, desc.index_map, desc.count = mask.data.ptr, idx.data.ptr, count.data.ptr
        desc.scratch, desc.scratch_bytes = scratch.data.ptr, scratch.nbytes
        raw_compact = b._f.compact_device
        # eager calls on eagle's own device arrays (no protocol to read) and on CuPy arrays (their
        # __cuda_array_interface__, read on every call); each set has its own scratch
        e_mask, e_idx, e_count = b.empty(n, "uint8"), b.empty(n, "int32"), b.zeros(1, "uint32")
        e_scratch = b.zeros(scratch.nbytes, "uint8")
        cp.asarray(e_mask)[...] = mask
        c_idx, c_count, c_scratch = cp.zeros(n, cp.int32), cp.zeros(1, cp.uint32), cp.zeros_like(scratch)
        cp.cuda.Device().synchronize()
        eagle.compact(e_mask, e_idx, e_count, e_scratch)
        eagle.compact(mask, c_idx, c_count, c_scratch)
        assert int(e_count.numpy()[0]) == expect.size and int(c_count.get()[0]) == expect.size, \
            "eager eagle.compact() counted wrong"
        assert bool((cp.asarray(e_idx)[:expect.size] == expect).all()), "eager eagle.compact() differs from flatnonzero"

        def raw_blocking():
            ok(raw_compact(desc), "compact_device")
            ok(raw_sync(s._h), "stream_synchronize")

        for _ in range(args.rounds):
            for name, fn in ((f"compact 2^{logn}: raw compact_device + stream_synchronize, wall (us)", raw_blocking),
                             (f"compact 2^{logn}: eager eagle.compact(), eagle arrays, wall (us)",
                              lambda: eagle.compact(e_mask, e_idx, e_count, e_scratch)),
                             (f"compact 2^{logn}: eager eagle.compact(), CuPy arrays, wall (us)",
                              lambda: eagle.compact(mask, c_idx, c_count, c_scratch))):
                add(name, wall_us(fn))
            times, wrapped = [], []
            for _ in range(5):
                ev0.record(cs)
                ok(raw_compact(desc), "compact_device")
                ev1.record(cs)
                ev1.synchronize()
                times.append(cp.cuda.get_elapsed_time(ev0, ev1) * 1000.0)
                ev0.record(cs)
                b.compact(mask, idx, count, scratch, stream=s)
                ev1.record(cs)
                ev1.synchronize()
                wrapped.append(cp.cuda.get_elapsed_time(ev0, ev1) * 1000.0)
            add(f"compact 2^{logn}: eagle compact_device (us)", med(times))
            add(f"compact 2^{logn}: Backend.compact(stream=s), same events (us)", med(wrapped))
            ok(peers.peer_cub_flagged(ctypes.c_void_p(data.data.ptr), ctypes.c_void_p(mask.data.ptr),
                                      ctypes.c_void_p(out.data.ptr), ctypes.c_void_p(num.data.ptr), n,
                                      ctypes.c_uint64(s.handle), 5, ctypes.byref(dbl)), "cub")
            add(f"compact 2^{logn}: cub::DeviceSelect::Flagged (us)", dbl.value)
            ok(peers.peer_cub_flagged_counting(ctypes.c_void_p(mask.data.ptr), ctypes.c_void_p(out.data.ptr),
                                               ctypes.c_void_p(num.data.ptr), n, ctypes.c_uint64(s.handle), 5,
                                               ctypes.byref(dbl)), "cub counting")
            add(f"compact 2^{logn}: cub::DeviceSelect::Flagged, counting iterator (us)", dbl.value)
            if torch is not None:
                times = []
                for _ in range(5):
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    torch.nonzero(mask_t)
                    torch.cuda.synchronize()
                    times.append((time.perf_counter() - t0) * 1e6)
                add(f"compact 2^{logn}: torch.nonzero, wall incl. its sync (us)", med(times))

    # -- 4. pinned copies, 256 MiB --------------------------------------------------------------
    nbytes = 256 << 20
    host = b.pinned(nbytes, "uint8")
    host[:] = 7
    dev = cp.zeros(nbytes, cp.uint8)
    hptr = host.__array_interface__["data"][0]
    cp.cuda.Device().synchronize()
    for _ in range(args.rounds):
        for kind, (dst, src) in (("H2D", (dev, host)), ("D2H", (host, dev))):
            times = []
            for _ in range(5):
                ev0.record(cs)
                b.copy(dst, src, stream=s)
                ev1.record(cs)
                ev1.synchronize()
                times.append(cp.cuda.get_elapsed_time(ev0, ev1) * 1000.0)
            add(f"copy 256 MiB {kind}: eagle.copy (GB/s)", nbytes / med(times) / 1e3)
            d, sp = (dev.data.ptr, hptr) if kind == "H2D" else (hptr, dev.data.ptr)
            ok(peers.peer_memcpy(ctypes.c_void_p(d), ctypes.c_void_p(sp), ctypes.c_size_t(nbytes),
                                 1 if kind == "H2D" else 2, ctypes.c_uint64(s.handle), 5, ctypes.byref(dbl)),
               "peer_memcpy")
            add(f"copy 256 MiB {kind}: cudaMemcpyAsync (GB/s)", nbytes / dbl.value / 1e3)
            # blocking: eager eagle.copy() (eagle's own stream, waits, no marker) against
            # cudaMemcpyAsync + cudaStreamSynchronize, both timed on the host
            add(f"copy 256 MiB {kind}: eager eagle.copy(), wall (GB/s)",
                nbytes / wall_us(lambda: eagle.copy(dst, src)) / 1e3)
            ok(peers.peer_memcpy_wall(ctypes.c_void_p(d), ctypes.c_void_p(sp), ctypes.c_size_t(nbytes),
                                      1 if kind == "H2D" else 2, ctypes.c_uint64(s.handle), 5, ctypes.byref(dbl)),
               "peer_memcpy_wall")
            add(f"copy 256 MiB {kind}: cudaMemcpyAsync + cudaStreamSynchronize, wall (GB/s)",
                nbytes / dbl.value / 1e3)
    assert bool((dev[:1024] == 7).all())

    # -- 5. the oscillator card with and without reorder (issue 17) --------------------------------
    # The graph alone (launch + sync); restore() (host-driven, through the host) timed apart: it is
    # not part of the loop, and the card's own timing in oscillators.py includes it.
    card_rows = {}
    if not args.no_card:
        sys.path.insert(0, HERE)
        import numpy as np
        import oscillators
        cards = {name: oscillators.Card("cuda", args.card_n, args.card_k, theta, mode="while")
                 for name, theta in (("reorder off", None), ("reorder 0.5", 0.5))}
        results = {}
        for name, card in cards.items():
            card.run_graph()
            results[name] = card.result()
        same = all(np.array_equal(a, b) for a, b in zip(results["reorder off"], results["reorder 0.5"]))
        for _ in range(args.rounds):
            for name, card in cards.items():
                t0 = time.perf_counter()
                card.run_graph()
                t1 = time.perf_counter()
                card_rows.setdefault(f"card N={args.card_n} K={args.card_k}, {name}: graph (ms)", []).append((t1 - t0) * 1e3)
                if card.aset.theta is not None:
                    t0 = time.perf_counter()
                    card.aset.restore()
                    card_rows.setdefault(f"card N={args.card_n} K={args.card_k}, {name}: restore() (ms)", []).append(
                        (time.perf_counter() - t0) * 1e3)
        iters = {name: card.graph.ran(card.loop) for name, card in cards.items()}
        for name, vals in card_rows.items():
            rows[name] = vals
        card_note = (f"card: results with and without reorder bit-identical: {'PASS' if same else 'FAIL'}; "
                     f"WHILE iterations {iters}")
        print(card_note)
        if not same:
            failures.append("card results differ with reorder on")
    else:
        card_note = "card: skipped (--no-card)"

    # -- 6. the compaction variant sweep and the reorder kernels (benchmarks/cuda/compact_sweep.cu) --
    sweep_text = ""
    if not args.no_sweep:
        exe = "/tmp/eagle_compact_sweep"
        src = os.path.join(HERE, "cuda", "compact_sweep.cu")
        inc = os.path.join(HERE, "..", "backends", "gpu")
        subprocess.run(["nvcc", "-O3", "-std=c++17", "-arch=sm_90", "--expt-relaxed-constexpr", "-I", inc, src,
                        "-o", exe], check=True)
        r = subprocess.run([exe, str(args.rounds), "15"], capture_output=True, text=True)
        sweep_text = r.stdout + (f"\nstderr: {r.stderr}" if r.stderr else "")
        print(sweep_text)
        if r.returncode:
            failures.append(f"compact_sweep exited {r.returncode} (a MISMATCH line above, or a CUDA error)")

    # -- report -----------------------------------------------------------------------------------
    lines = [f"machine: {props.name}, {props.sm_count} SMs, driver via eagle {b.build_info.get('eagle_version')}"
             f" (cudart {b.build_info.get('cudart_version')}); host {platform.node()}",
             f"date: {datetime.datetime.now().isoformat(timespec='seconds')}",
             f"command: python benchmarks/bench_cuda.py --rounds {args.rounds} --launches {args.launches}",
             "", "| figure | median | min | max |", "|---|---|---|---|"]
    for name, vals in rows.items():
        lines.append(f"| {name} | {med(vals):.3f} | {min(vals):.3f} | {max(vals):.3f} |")
    print("\n".join(lines), flush=True)  # the measured rows first: a fault in the summary below loses none
    if args.out:
        with open(args.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    table_lines = len(lines)
    m = {k: med(v) for k, v in rows.items()}

    def ratio(a, c):
        return m[a] / m[c] if a in m and c in m else float("nan")

    def per_round(a, c):  # the median of the ratios taken within each round
        return med([x / y for x, y in zip(rows[a], rows[c])]) if a in rows and c in rows else float("nan")

    def extra(a, c):  # a's excess over c and the median of the per-round excesses
        if a not in rows or c not in rows:
            return "n/a"
        return f"{m[a] - m[c]:+.3f} ({med([x - y for x, y in zip(rows[a], rows[c])]):+.3f})"
    C = 'replay: C loop of cudaGraphLaunch'
    AS_R2, AS_R3, AS_A, AS_B, AS_C, AS_A1, AS_A2, AS_A0 = (what for _, what in AS_PEERS[:8])
    c20 = "compact 2^20: "
    lines += ["", "issue 17 (host-side overheads), same run:",
              f"- eager eagle.compact() 2^20, eagle arrays, wall / raw compact_device + sync, wall: "
              f"{ratio(c20 + 'eager eagle.compact(), eagle arrays, wall (us)', c20 + 'raw compact_device + stream_synchronize, wall (us)'):.2f}x (<= 1.3)",
              f"- eager eagle.compact() 2^20, CuPy arrays, wall / raw compact_device + sync, wall: "
              f"{ratio(c20 + 'eager eagle.compact(), CuPy arrays, wall (us)', c20 + 'raw compact_device + stream_synchronize, wall (us)'):.2f}x",
              f"- eager eagle.compact() 2^20, eagle arrays, wall / its kernel (events): "
              f"{ratio(c20 + 'eager eagle.compact(), eagle arrays, wall (us)', c20 + 'eagle compact_device (us)'):.2f}x "
              "(a blocking call also pays the launch and the wake-up)",
              f"- Backend.compact(stream=s) 2^20, events / its kernel (events), session 3's 5.6x row: "
              f"{ratio(c20 + 'Backend.compact(stream=s), same events (us)', c20 + 'eagle compact_device (us)'):.2f}x "
              "(the stream path keeps its release marker)",
              f"- replay enqueue, Launcher.launch() / C cudaGraphLaunch loop: "
              f"{ratio('replay: eagle Launcher.launch()', C):.2f}x (<= 1.1); per-round median "
              f"{per_round('replay: eagle Launcher.launch()', C):.2f}x",
              f"- copy 256 MiB H2D, eager eagle.copy() / cudaMemcpyAsync + sync, wall: "
              f"{ratio('copy 256 MiB H2D: eager eagle.copy(), wall (GB/s)', 'copy 256 MiB H2D: cudaMemcpyAsync + cudaStreamSynchronize, wall (GB/s)'):.3f}x (>= 0.95)",
              f"- copy 256 MiB D2H, eager eagle.copy() / cudaMemcpyAsync + sync, wall: "
              f"{ratio('copy 256 MiB D2H: eager eagle.copy(), wall (GB/s)', 'copy 256 MiB D2H: cudaMemcpyAsync + cudaStreamSynchronize, wall (GB/s)'):.3f}x (>= 0.95)",
              f"- copy 256 MiB H2D / D2H, Backend.copy(stream=s) / cudaMemcpyAsync, events: "
              f"{ratio('copy 256 MiB H2D: eagle.copy (GB/s)', 'copy 256 MiB H2D: cudaMemcpyAsync (GB/s)'):.3f}x / "
              f"{ratio('copy 256 MiB D2H: eagle.copy (GB/s)', 'copy 256 MiB D2H: cudaMemcpyAsync (GB/s)'):.3f}x "
              "(session 3's 0.93x rows; the stream path keeps its release marker)",
              "", "ratios (goal):",
              f"- replay enqueue, Launcher.launch() / C cudaGraphLaunch loop: "
              f"{ratio('replay: eagle Launcher.launch()', C):.2f}x (<= 1.1); "
              f"per-round median {per_round('replay: eagle Launcher.launch()', C):.2f}x",
              f"- replay enqueue, Launcher.launch() with the GIL released each call / C loop: "
              f"{ratio('replay: eagle Launcher.launch(), GIL released each call', C):.2f}x",
              f"- replay enqueue, Launcher.launch() on the cffi fallback / C loop: "
              f"{ratio('replay: eagle Launcher.launch(), cffi fallback', C):.2f}x",
              f"- replay enqueue, C loop of eagle_backend_launcher_launch / C loop of cudaGraphLaunch: "
              f"{ratio('replay: C loop of eagle_backend_launcher_launch', C):.2f}x (the seam's own cost)",
              f"- replay enqueue, raw cffi seam call / C loop: "
              f"{ratio('replay: raw cffi eagle_backend_launcher_launch', C):.2f}x",
              f"- replay enqueue, cupy Graph.launch / C loop: {ratio('replay: cupy Graph.launch', C):.2f}x",
              f"- replay enqueue, Launcher.launch(n) / C loop: "
              f"{ratio('replay: eagle Launcher.launch(n)', 'replay: C loop of cudaGraphLaunch'):.2f}x",
              f"- WHILE per iteration at 10000, eagle / raw WHILE node: "
              f"{ratio('WHILE 10000 it: eagle (us/iter)', 'WHILE 10000 it: raw CUDA WHILE node (us/iter)'):.2f}x (<= 1.1)",
              f"- WHILE per iteration at 1000, eagle / raw WHILE node: "
              f"{ratio('WHILE 1000 it: eagle (us/iter)', 'WHILE 1000 it: raw CUDA WHILE node (us/iter)'):.2f}x",
              f"- WHILE per iteration, eagle with an EAGLE_KERNEL body (setter folded) / raw WHILE node: "
              f"{ratio('WHILE 10000 it: eagle, EAGLE_KERNEL body, setter folded (us/iter)', 'WHILE 10000 it: raw CUDA WHILE node (us/iter)'):.2f}x"
              f" at 10000, {ratio('WHILE 1000 it: eagle, EAGLE_KERNEL body, setter folded (us/iter)', 'WHILE 1000 it: raw CUDA WHILE node (us/iter)'):.2f}x at 1000 (<= 1.1)",
              f"- WHILE per iteration, eagle with one launcher for all rounds / raw WHILE node (a fresh graph "
              f"each call): {ratio('WHILE 10000 it: eagle, one launcher for all rounds (us/iter)', 'WHILE 10000 it: raw CUDA WHILE node (us/iter)'):.2f}x"
              f" at 10000, {ratio('WHILE 1000 it: eagle, one launcher for all rounds (us/iter)', 'WHILE 1000 it: raw CUDA WHILE node (us/iter)'):.2f}x at 1000",
              f"- WHILE per iteration at 10000, eagle / raw WHILE with the same 2-kernel body, plain edge: "
              f"{ratio('WHILE 10000 it: eagle (us/iter)', 'WHILE 10000 it: raw WHILE, 2-kernel body (step, decide) (us/iter)'):.2f}x",
              f"- WHILE per iteration at 10000, eagle / raw WHILE with the same 2-kernel body, programmatic edge: "
              f"{ratio('WHILE 10000 it: eagle (us/iter)', 'WHILE 10000 it: raw WHILE, 2-kernel body, programmatic edge (us/iter)'):.2f}x",
              f"- ActiveSet loop per iteration, eagle / raw 2-kernel WHILE: "
              f"{ratio(AS.format(20, AS_E), AS.format(20, AS_R2)):.3f} (goal <= 1.0), n = 2^20; per-round median "
              f"{per_round(AS.format(20, AS_E), AS.format(20, AS_R2)):.3f}",
              f"- ActiveSet loop per iteration, eagle / raw 2-kernel WHILE: "
              f"{ratio(AS.format(10, AS_E), AS.format(10, AS_R2)):.3f} (goal <= 1.0), n = 2^10; per-round median "
              f"{per_round(AS.format(10, AS_E), AS.format(10, AS_R2)):.3f}",
              *[f"- ActiveSet loop 2^{logn} per iteration, eagle with one graph for all rounds / raw 2-kernel WHILE: "
                f"{ratio(AS.format(logn, AS_E + ', one graph for all rounds'), AS.format(logn, AS_R2)):.3f}"
                for logn in (20, 10)],
              f"- ActiveSet loop per iteration, eagle / raw 3-kernel WHILE (eagle's body before the fold): "
              f"{ratio(AS.format(20, AS_E), AS.format(20, AS_R3)):.3f} at n = 2^20, "
              f"{ratio(AS.format(10, AS_E), AS.format(10, AS_R3)):.3f} at n = 2^10",
              *[f"- ActiveSet loop 2^{logn} per iteration over the raw 2-kernel WHILE (us; per-round median): "
                f"eagle {extra(AS.format(logn, AS_E), AS.format(logn, AS_R2))}, (a) cell "
                f"{extra(AS.format(logn, AS_A), AS.format(logn, AS_R2))}, (b) capture "
                f"{extra(AS.format(logn, AS_B), AS.format(logn, AS_R2))}, (c) both "
                f"{extra(AS.format(logn, AS_C), AS.format(logn, AS_R2))}; the cell's parts: (a1) read early "
                f"{extra(AS.format(logn, AS_A1), AS.format(logn, AS_R2))}, (a2) stored only "
                f"{extra(AS.format(logn, AS_A2), AS.format(logn, AS_R2))}, control (as (a)) "
                f"{extra(AS.format(logn, AS_A0), AS.format(logn, AS_R2))}" for logn in (20, 10)],
              *[f"- ActiveSet loop 2^{logn} per iteration, eagle / (a) / (b) / (c): "
                f"{ratio(AS.format(logn, AS_E), AS.format(logn, AS_A)):.3f} / "
                f"{ratio(AS.format(logn, AS_E), AS.format(logn, AS_B)):.3f} / "
                f"{ratio(AS.format(logn, AS_E), AS.format(logn, AS_C)):.3f} "
                "(eagle / (c) near 1.000: the differences (a) and (b) account for eagle's gap)" for logn in (20, 10)],
              *[f"- ActiveSet loop 2^{logn} per iteration on eagle's own buffers, eagle / (a) / (c): "
                f"{ratio(AS.format(logn, AS_E), AS.format(logn, dict(AS_PEERS)[102])):.3f} / "
                f"{ratio(AS.format(logn, AS_E), AS.format(logn, dict(AS_PEERS)[104])):.3f} "
                "(near 1.000: eagle's graph costs what the same graph by hand costs on the same memory)"
                for logn in (20, 10)],
              f"- WHILE per iteration at 1000, eagle / host-driven loop: "
              f"{ratio('WHILE 1000 it: eagle (us/iter)', 'WHILE 1000 it: host-driven loop (us/iter)'):.2f}x",
              f"- compact 2^26, eagle / CUB Flagged: "
              f"{ratio('compact 2^26: eagle compact_device (us)', 'compact 2^26: cub::DeviceSelect::Flagged (us)'):.2f}x (<= 1.0)",
              f"- compact 2^20, eagle / CUB Flagged: "
              f"{ratio('compact 2^20: eagle compact_device (us)', 'compact 2^20: cub::DeviceSelect::Flagged (us)'):.2f}x (<= 1.0)",
              f"- compact 2^26, eagle / CUB Flagged over a counting iterator (eagle's output): "
              f"{ratio('compact 2^26: eagle compact_device (us)', 'compact 2^26: cub::DeviceSelect::Flagged, counting iterator (us)'):.2f}x (<= 0.8)",
              f"- compact 2^20, eagle / CUB Flagged over a counting iterator: "
              f"{ratio('compact 2^20: eagle compact_device (us)', 'compact 2^20: cub::DeviceSelect::Flagged, counting iterator (us)'):.2f}x (<= 1.0)",
              f"- copy H2D, eagle / cudaMemcpyAsync bandwidth: "
              f"{ratio('copy 256 MiB H2D: eagle.copy (GB/s)', 'copy 256 MiB H2D: cudaMemcpyAsync (GB/s)'):.3f}x (>= 0.95)",
              f"- copy D2H, eagle / cudaMemcpyAsync bandwidth: "
              f"{ratio('copy 256 MiB D2H: eagle.copy (GB/s)', 'copy 256 MiB D2H: cudaMemcpyAsync (GB/s)'):.3f}x (>= 0.95)"]
    on, off = (f"card N={args.card_n} K={args.card_k}, reorder 0.5: graph (ms)",
               f"card N={args.card_n} K={args.card_k}, reorder off: graph (ms)")
    lines += [f"- card graph, reorder 0.5 / reorder off: {ratio(on, off):.2f}x (< 1.0); per-round median "
              f"{per_round(on, off):.2f}x", f"- {card_note}"]
    if sweep_text:
        lines += ["", sweep_text]
    if failures:
        lines += ["", "FAILURES:"] + [f"- {f}" for f in failures]
    text = "\n".join(lines[table_lines:])
    print(text)
    if args.out:
        with open(args.out, "a") as fh:
            fh.write(text + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
