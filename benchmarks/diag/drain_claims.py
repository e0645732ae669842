"""Where the drained card loses to the sorted limit (issue 27): the drain's claiming policy.

The card's breakdown (oscillators.py --blocks --breakdown, H200) puts 97-98 % of the card in the
drain, and the drain over samples sorted longest first at the limit: what is left is the order of
the samples at the end of the queue. This times the card (reset, drained launch, compaction; the
block method of oscillators.py: CUDA events, back to back after a warm-up) for claim chunks
(EAGLE_DRAIN_CHUNK), guided chunks (EAGLE_DRAIN_GUIDED g: positions left over g claims per warp,
EAGLE_DRAIN_GUIDED_READ: left as the queue says now) and lanes launched (workers per SM; eagle's default 512), beside
the sorted limit, in exact and default modes.

    python benchmarks/diag/drain_claims.py --n 1000000
"""
import argparse
import os
import statistics
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import oscillators as osc  # noqa: E402

VARIANTS = {
    "chunk 64 (today)": (),
    "chunk 32": ("-DEAGLE_DRAIN_CHUNK=32",),
    "chunk 16": ("-DEAGLE_DRAIN_CHUNK=16",),
    "chunk 8": ("-DEAGLE_DRAIN_CHUNK=8",),
    "guided 2": ("-DEAGLE_DRAIN_GUIDED=2",),
    "guided 4": ("-DEAGLE_DRAIN_GUIDED=4",),
    "guided-read 2": ("-DEAGLE_DRAIN_GUIDED=2", "-DEAGLE_DRAIN_GUIDED_READ=1"),
    "guided-read 4": ("-DEAGLE_DRAIN_GUIDED=4", "-DEAGLE_DRAIN_GUIDED_READ=1"),
}


def main():
    import eagle
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000000)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--modes", default="exact,default")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--workers-per-sm", default="512,1024,256")
    args = ap.parse_args()
    b = eagle.backend("cuda")
    sms = int(b.device_props(0).sm_count)
    ref = None
    for mode in args.modes.split(","):
        base = osc.load_kernels(b, mode)
        card0 = osc.Card("cuda", args.n, 32, fp=mode, module=base)
        timer = osc.BlockTimer(b, card0.stream)
        limit = osc.SortedLimit(card0)
        t_limit = statistics.median(timer.block(limit.enqueue, args.reps))
        print(f"{mode}: sorted limit {1e3 * t_limit:.4f} ms", flush=True)
        for name in args.variants.split(","):
            opts = VARIANTS[name]
            mod = eagle.compile(osc.ONE_SOURCE, backend=b, options=opts, **osc.FP_MODES[mode],
                                kernels=["osc_reset", "osc_steps_active", "osc_steps_drain", "osc_single"])
            for wps in (int(w) for w in args.workers_per_sm.split(",")):
                card = osc.Card("cuda", args.n, 32, fp=mode, module=mod, workers=min(args.n, wps * sms))
                tb = osc.BlockTimer(b, card.stream)
                t = statistics.median(tb.block(card.enqueue_graph, args.reps))
                card.stream.synchronize()
                x, v = card.result()
                same = "" if ref is None or mode != "exact" else (
                    " bits==" + str(bool(np.array_equal(x, ref[0]) and np.array_equal(v, ref[1]))))
                if ref is None and mode == "exact":
                    ref = (x, v)
                print(f"{mode:8s} {name:16s} workers/SM {wps:5d}: card {1e3 * t:.4f} ms = "
                      f"{t / t_limit:.3f}x the sorted limit{same}", flush=True)


if __name__ == "__main__":
    main()
