"""eagle.distributed: the oscillator card over 1 and P ranks (one GPU each), and dynamic load
balance on a workload whose cost per sample spreads 100x. All figures come from one mpiexec job:
the one-rank runs use rank 0 alone (a sub-communicator) while the other ranks wait.

    mpiexec -n 2 python benchmarks/bench_distributed.py --backend cuda --json $OUT/bench_distributed.json
    mpiexec -n 2 python benchmarks/bench_distributed.py --backend cpu --small     # a quick look on cpu

Figures (P = number of ranks; the goals are those of issue 16 for P = 2):
- weak scaling: the card with P x N_w samples on P ranks vs N_w on one rank; efficiency
  t1(N_w) / tP(P N_w), goal >= 0.95;
- strong scaling: the card with N_s samples, speedup t1(N_s) / tP(N_s), goal >= 0.95 P (1.9x);
- the gathered P-rank results equal the one-rank results bit for bit (card and dynamic run);
- dynamic balance: per-sample cost = s_i RK4 steps with s_i rising geometrically from s_lo to
  100 s_lo along the sample index (the static split gives the last rank the expensive samples);
  ideal = t1 / P; static and dynamic (chunks from a shared counter, MPI fetch-and-op) reported as
  time / ideal, goal for dynamic <= 1.10. Also at the spreads of --spreads (1 = uniform cost), to
  show when the dynamic mode pays.
Times are medians over --reps replays, barrier to barrier (the slowest rank sets the time)."""
import argparse
import json
import math
import os
import platform
import socket
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "examples"))


def log(comm, *a):
    if comm.Get_rank() == 0:
        print(*a, flush=True)


def preflight(kind):
    """Load and probe the backend, and what the kind's card needs; a clear error otherwise."""

    import eagle
    try:
        b = eagle.backend(kind)
    except eagle.EagleError as e:
        hint = (" (build it: cmake -S backends -B build -DEAGLE_BACKENDS=cuda && cmake --build build; "
                "then export EAGLE_BACKEND_CUDA=$PWD/build/cuda/libeagle_cuda.so)" if kind == "cuda" else "")
        raise RuntimeError(f"no usable {kind} backend: {e}{hint}") from None
    b.probe()
    return b


def timed(comm, fn, reps, warmup=1):
    """Median over reps of the barrier-to-barrier time of fn() on every rank of comm."""
    for _ in range(warmup):
        fn()
    comm.Barrier()
    ts = []
    for _ in range(reps):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        comm.Barrier()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), ts


class Sub:
    """Rank 0 alone (the one-rank runs) or every rank, as a communicator (None off it)."""

    def __init__(self, world, ranks):
        from mpi4py import MPI
        self.world = world
        color = 0 if world.Get_rank() < ranks else MPI.UNDEFINED
        self.comm = world.Split(color, world.Get_rank())

    def __enter__(self):
        return self.comm if self.comm != self._null() else None

    def __exit__(self, *exc):
        if exc[0] is None:
            self.world.Barrier()  # ranks off the communicator wait here for the ones on it
        return False

    @staticmethod
    def _null():
        from mpi4py import MPI
        return MPI.COMM_NULL


def card_run(world, kind, device, n, ranks, K, reps, keep=False):
    """(median seconds, [x, v] gathered on rank 0 if keep) of the card with n samples on the first
    `ranks` ranks."""
    from card_mpi import RankCard

    from eagle import distributed as ed
    out = (None, None)
    with Sub(world, ranks) as comm:
        if comm is not None:
            job = ed.Job(n, comm=comm, backend=kind, device=device)
            card = RankCard(job, kind, K)
            med, _ = timed(comm, card.run, reps)
            res = None
            if keep:
                x, v = card.result()
                res = (job.gather(x), job.gather(v))
            out = (med, res)
    return out


def geometric_steps(n, lo, spread=100.0):
    """s_i = lo * spread^(i / (n - 1)), rounded: cost rising 100x along the sample index."""
    def steps(ids):
        t = ids.astype(np.float64) / max(n - 1, 1)
        return np.round(lo * spread ** t).astype(np.int32)
    return steps


class Single:
    """The card's single kernel (each sample integrated to its own s_i steps) over planes that
    hold every sample, on one rank; run over any partition with the global index."""

    def __init__(self, job, kind, steps, in_flight=2):
        from card_mpi import load_kernels

        import oscillators
        self.job = job
        b = job.backend
        dev = max(job.device, 0)
        self.k = load_kernels(b, dev)
        n = job.n_samples
        omega, zeta, _ = oscillators.workload(n)
        target = steps(np.arange(n, dtype=np.int64))
        self.work = float(target.astype(np.float64).sum())
        # planes through the seam (eagle arrays) on this rank's device
        self.omega, self.zeta, self.target = (b.asarray(a, device=dev) for a in (omega, zeta, target))
        self.x, self.v = b.zeros(n, device=dev), b.zeros(n, device=dev)
        self.streams = [b.stream(device=job.device, non_blocking=True) for _ in range(max(1, in_flight))]
        # one counter for every dynamic run (reset by each): its window and progress thread are
        # set up once, outside the timed region
        from eagle import distributed as ed
        self.counter = ed.SharedCounter(job.comm)

    def launch(self, part, stream):
        # the planes hold every sample: indexed by the global sample as they are (no bias)
        self.job.run(stream, self.k.osc_single, [self.x, self.v, self.omega, self.zeta, self.target], part=part)

    def static(self):
        self.launch(self.job.part, self.streams[0])
        self.streams[0].synchronize()

    def dynamic(self, chunk_kw, record=None):
        """Chunks from the shared counter, one per stream, len(streams) in flight: the next chunk
        is taken and launched as soon as the oldest in flight is done, while the others run."""
        ss = self.streams
        for i, part in enumerate(self.job.chunks(counter=self.counter, **chunk_kw)):
            s = ss[i % len(ss)]
            s.synchronize()  # the chunk launched on this stream len(ss) takes ago is done
            self.launch(part, s)
            if record is not None:
                record.append(part)
        for s in ss:
            s.synchronize()

    def host(self, part):
        sl = part.slice()
        return self.x.numpy()[sl], self.v.numpy()[sl]

    def clear(self):
        import eagle
        zeros = np.zeros(self.job.n_samples)
        eagle.copy(self.x, zeros)
        eagle.copy(self.v, zeros)


def dynamic_run(world, kind, device, n, lo, reps, chunk_kw, spread=100.0, in_flight=2):
    from eagle import distributed as ed
    steps = geometric_steps(n, lo, spread)
    res = {}
    P = world.Get_size()
    with Sub(world, 1) as comm:
        if comm is not None:
            job = ed.Job(n, comm=comm, backend=kind, device=device)
            one = Single(job, kind, steps)
            res["t1"], _ = timed(comm, one.static, reps)
            res["ref"] = one.host(job.part)
            one.counter.close()
    job = ed.Job(n, comm=world, backend=kind, device=device)
    run = Single(job, kind, steps, in_flight)
    res["static"], _ = timed(world, run.static, reps)
    busy = []

    def static_busy():
        t0 = time.perf_counter()
        run.static()
        busy.append(time.perf_counter() - t0)
    static_busy()
    res["static_busy"] = world.allgather(busy[-1])
    res["dynamic"], _ = timed(world, lambda: run.dynamic(chunk_kw), reps)
    # CPU seconds each rank's process spent (its backend threads included): on the cpu backend
    # this is the work a rank did, whatever else shares the machine; max / mean = 1 is balanced
    for mode, fn in (("static", run.static), ("dynamic", lambda: run.dynamic(chunk_kw))):
        world.Barrier()
        c0 = time.process_time()
        fn()
        cpu = world.allgather(time.process_time() - c0)
        res[f"{mode}_cpu_s"] = cpu
        res[f"{mode}_cpu_imbalance"] = max(cpu) / (sum(cpu) / len(cpu)) if sum(cpu) else float("nan")
    parts = []
    run.clear()
    run.dynamic(chunk_kw, parts)
    col = job.collector()
    for p in parts:
        x, v = run.host(p)
        col.add(p, x=x, v=v)
    out = col.gather()
    run.counter.close()
    res["chunks_per_rank"] = world.allgather(len(parts))
    res["chunks"] = len(ed.chunk_table(n, P, **chunk_kw))
    if world.Get_rank() == 0:
        rx, rv = res["ref"]
        res["identical"] = bool(np.array_equal(out["x"], rx) and np.array_equal(out["v"], rv))
    res.pop("ref", None)
    return res


def main(argv=None):
    from eagle import distributed as ed
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cuda", help="eagle kind: cuda (one GPU per rank) or cpu")
    ap.add_argument("--small", action="store_true", help="sizes for a quick cpu run")
    ap.add_argument("--weak-n", type=float, default=None, help="samples per rank, weak scaling (1e6)")
    ap.add_argument("--strong-n", type=float, default=None, help="total samples, strong scaling (1e7)")
    ap.add_argument("--dyn-n", type=float, default=None, help="samples of the dynamic workload (1e7)")
    ap.add_argument("--dyn-lo", type=int, default=None, help="cheapest sample's RK4 steps (100x for the dearest)")
    ap.add_argument("--min-chunk", type=int, default=None, help="smallest dynamic chunk (2**15 on a GPU)")
    ap.add_argument("--in-flight", type=int, default=None, help="dynamic chunks in flight per rank (4 on a GPU)")
    ap.add_argument("--spreads", default="1,10,100",
                    help="cost spreads to compare static and dynamic at (100 is the goal's)")
    ap.add_argument("--k", type=int, default=32, help="card: RK4 steps per body call of the drained step kernel")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--json", help="write the figures here (rank 0)")
    args = ap.parse_args(argv)
    small = args.small
    weak_n = int(args.weak_n or (2e4 if small else 1e6))
    strong_n = int(args.strong_n or (1e5 if small else 1e7))
    dyn_n = int(args.dyn_n or (1e5 if small else 1e7))
    dyn_lo = args.dyn_lo or (10 if small else 100)
    on_cpu = small or args.backend == "cpu"
    min_chunk = args.min_chunk or (1000 if on_cpu else 1 << 15)
    in_flight = args.in_flight or (2 if on_cpu else 4)
    reps = args.reps or (3 if small or args.backend == "cpu" else 7)

    world = ed.mpi().COMM_WORLD
    P = world.Get_size()
    try:
        ed.agree(world, preflight, args.backend, what=f"loading the {args.backend} backend")
    except ed.RankFailed as e:
        log(world, f"bench_distributed: {e}")
        return 2
    with ed.fail_fast(world):
        job = ed.Job(1, comm=world, backend=args.backend)  # the device of each rank, checked once
        dev = job.device
        where = world.gather(f"{socket.gethostname()}:{args.backend}:{dev}")
        log(world, f"bench_distributed: {P} rank(s) on {where}; weak N={weak_n}/rank, strong N={strong_n}, "
                   f"dynamic N={dyn_n} (steps {dyn_lo}..{100 * dyn_lo}), reps {reps}")

        t1w, _ = card_run(world, args.backend, dev, weak_n, 1, args.k, reps)
        tPw, _ = card_run(world, args.backend, dev, P * weak_n, P, args.k, reps)
        t1s, r1 = card_run(world, args.backend, dev, strong_n, 1, args.k, reps, keep=True)
        tPs, rP = card_run(world, args.backend, dev, strong_n, P, args.k, reps, keep=True)
        card_identical = None
        if world.Get_rank() == 0:
            card_identical = bool(all(np.array_equal(a, b) for a, b in zip(r1, rP)))
        chunk_kw = {"min_chunk": min_chunk}
        spreads = sorted({float(x) for x in args.spreads.split(",")} | {100.0})
        dyns = {sp: dynamic_run(world, args.backend, dev, dyn_n, dyn_lo, reps, chunk_kw, sp, in_flight)
                for sp in spreads}
        dyn = dyns[100.0]

    if world.Get_rank() != 0:
        return 0
    ideal = dyn["t1"] / P
    fig = {
        "ranks": P, "backend": args.backend, "devices": where, "reps": reps,
        "weak": {"n_per_rank": weak_n, "t1_s": t1w, "tP_s": tPw, "efficiency": t1w / tPw, "goal": 0.95},
        "strong": {"n": strong_n, "t1_s": t1s, "tP_s": tPs, "speedup": t1s / tPs, "goal": 0.95 * P},
        "card_bit_identical": card_identical,
        "dynamic": {"n": dyn_n, "steps": [dyn_lo, 100 * dyn_lo], "t1_s": dyn["t1"], "ideal_s": ideal,
                    "static_s": dyn["static"], "static_vs_ideal": dyn["static"] / ideal,
                    "static_busy_s": dyn["static_busy"], "dynamic_s": dyn["dynamic"],
                    "dynamic_vs_ideal": dyn["dynamic"] / ideal, "goal": 1.10, "min_chunk": min_chunk,
                    "in_flight": in_flight, "chunks": dyn["chunks"], "chunks_per_rank": dyn["chunks_per_rank"],
                    "bit_identical": dyn["identical"]},
        "dynamic_by_spread": [{"spread": sp, "t1_s": d["t1"], "ideal_s": d["t1"] / P, "static_s": d["static"],
                               "dynamic_s": d["dynamic"], "static_vs_ideal": d["static"] * P / d["t1"],
                               "dynamic_vs_ideal": d["dynamic"] * P / d["t1"], "bit_identical": d["identical"],
                               "chunks_per_rank": d["chunks_per_rank"], "static_cpu_s": d["static_cpu_s"],
                               "dynamic_cpu_s": d["dynamic_cpu_s"],
                               "static_cpu_imbalance": d["static_cpu_imbalance"],
                               "dynamic_cpu_imbalance": d["dynamic_cpu_imbalance"]} for sp, d in dyns.items()],
        "host": platform.node(), "python": platform.python_version(),
    }
    ok_w = fig["weak"]["efficiency"] >= 0.95
    ok_s = fig["strong"]["speedup"] >= 0.95 * P
    ok_d = fig["dynamic"]["dynamic_vs_ideal"] <= 1.10
    mark = {True: "met", False: "NOT met"}
    print(f"\n| figure ({P} ranks vs 1, {args.backend}) | 1 rank | {P} ranks | result | goal |")
    print("|---|---|---|---|---|")
    print(f"| weak: card, {weak_n:g} samples per rank | {t1w * 1e3:.2f} ms | {tPw * 1e3:.2f} ms | "
          f"efficiency {fig['weak']['efficiency']:.3f} | >= 0.95: {mark[ok_w]} |")
    print(f"| strong: card, {strong_n:g} samples | {t1s * 1e3:.2f} ms | {tPs * 1e3:.2f} ms | "
          f"speedup {fig['strong']['speedup']:.2f}x | >= {0.95 * P:.2f}x: {mark[ok_s]} |")
    print(f"| dynamic balance, {dyn_n:g} samples, cost {dyn_lo}..{100 * dyn_lo} steps | {dyn['t1'] * 1e3:.2f} ms "
          f"(ideal /{P}: {ideal * 1e3:.2f} ms) | static {dyn['static'] * 1e3:.2f} ms, dynamic "
          f"{dyn['dynamic'] * 1e3:.2f} ms | static {fig['dynamic']['static_vs_ideal']:.2f}x ideal, dynamic "
          f"{fig['dynamic']['dynamic_vs_ideal']:.2f}x ideal | <= 1.10x: {mark[ok_d]} |")
    print(f"\n| cost spread (steps {dyn_lo}..spread x {dyn_lo}) | 1 rank | static, {P} ranks | dynamic, {P} ranks | "
          "static / ideal | dynamic / ideal | CPU-time max/mean, static | dynamic |\n|---|---|---|---|---|---|---|---|")
    for row in fig["dynamic_by_spread"]:
        print(f"| {row['spread']:g}x | {row['t1_s'] * 1e3:.2f} ms | {row['static_s'] * 1e3:.2f} ms | "
              f"{row['dynamic_s'] * 1e3:.2f} ms | {row['static_vs_ideal']:.2f} | {row['dynamic_vs_ideal']:.2f} | "
              f"{row['static_cpu_imbalance']:.2f} | {row['dynamic_cpu_imbalance']:.2f} |")
    print(f"\nbit-identical to one rank: card {card_identical}, dynamic {dyn['identical']}; "
          f"chunks taken per rank {dyn['chunks_per_rank']} of {dyn['chunks']} (min chunk {min_chunk}, "
          f"{in_flight} in flight); "
          f"static busy time per rank {[round(t * 1e3, 2) for t in dyn['static_busy']]} ms")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(fig, f, indent=2)
        print(f"wrote {args.json}")
    return 0 if (card_identical and all(d["identical"] for d in dyns.values())) else 1


if __name__ == "__main__":
    sys.exit(main())
