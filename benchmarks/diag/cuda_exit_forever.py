"""Does a process whose GPU still runs a kernel that never ends exit at all, in plain CUDA (CuPy,
no eagle)? Issue 28's graph case hung after eagle's exit drain gave up; this tells the driver's
part from eagle's: --graph launches the kernel as a captured graph, else on a plain stream;
--host-node adds a host function after it (a callback queued behind the kernel).

    timeout 30 python benchmarks/diag/cuda_exit_forever.py [--graph] [--host-node]; echo rc=$?
"""
import argparse
import sys
import time

import cupy as cp

ap = argparse.ArgumentParser()
ap.add_argument("--graph", action="store_true")
ap.add_argument("--host-node", action="store_true")
args = ap.parse_args()
k = cp.RawKernel(r'''extern "C" __global__ void forever(volatile double* x) { while (x[threadIdx.x] >= 0.0) {} }''',
                 "forever")
x = cp.zeros(4)
s = cp.cuda.Stream(non_blocking=True)
if args.graph:
    s.begin_capture()
    k((1,), (4,), (x,), stream=s)
    if args.host_node:
        s.launch_host_func(lambda _: None, None)
    g = s.end_capture()
    g.launch(stream=s)
else:
    k((1,), (4,), (x,), stream=s)
    if args.host_node:
        s.launch_host_func(lambda _: None, None)
time.sleep(0.3)
print(f"launched (graph={args.graph}, host node={args.host_node}); query: {s.done}; exiting", flush=True)
sys.exit(0)
