"""Does the WHILE fold apply on eagle's own path? Records the ActiveSet loop of bench_cuda's
section 2b with eagle.Graph.build and with the seam objects (as tests/test_gpu_cuda.py does), and
prints, for the WHILE body's nodes, how many nodes depend on each (the last must have none when
the compaction ends the body)."""
import ctypes
import numpy as np
import cupy as cp
import eagle
from eagle import constructs as C

SRC = r"""
#include <eagle/kernel.h>
EAGLE_KERNEL(drop, (uint32_t*, steps), (uint8_t*, mask))
{
    (void)n;
    const uint32_t s = steps[i] + 1u;
    steps[i] = s;
    mask[i] = ((uint32_t)(i * 2654435761u) ^ (s * 40503u)) % 32u == 0u;
}
"""


def dependents(node):
    drv = ctypes.CDLL("libcuda.so.1")
    f = drv.cuGraphNodeGetDependentNodes_v2
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
    k = ctypes.c_size_t(0)
    assert f(ctypes.c_void_p(node), None, None, ctypes.byref(k)) == 0
    return k.value


seen = {}
orig = C.RepeatWhile.record


def record(self, rec, stream):
    g = self.guard
    w = rec.backend.while_(stream, g.count, rec.cell(self), self.max_iters, g.baseline)
    body = w.begin()
    rec.record_all(self.body, body)
    seen["nodes"] = rec.backend.snapshot_nodes(body)
    w.end()
    w.close()


C.RepeatWhile.record = record
b = eagle.backend("cuda")
mod = eagle.compile(SRC, backend=b, kernels=["drop_active"])
n = 1 << 20
mask, steps = cp.zeros(n, cp.uint8), cp.zeros(n, cp.uint32)
cp.cuda.Device().synchronize()
s = b.stream()
aset = eagle.ActiveSet(mask, backend=b, stream=s)


def step(st):
    st.run(mod.drop_active, [steps, mask, aset.index_map, aset.count], n)


loop = eagle.repeat_while([step, aset], aset, 100000, name="step + compact")
g = eagle.Graph.build([aset, loop], planes=[mask, steps], stream=s, toggle=False)
nodes = seen["nodes"]
print("eagle Graph.build: body nodes", len(nodes), "dependents", [dependents(x) for x in nodes])
g.launch()
g.synchronize()
print("iterations", g.ran(loop), "live", aset.live, "max steps", int(steps.max().get()))
