"""Issue 28: eager eagle.run of a declared kernel, checked against its declared types (its
signature) vs the same kernel handle with no declaration (the unchecked path every launch took
before), in one process, rounds interleaved. Run: python benchmarks/diag/typed_launch_ab.py"""
import statistics, time, numpy as np, eagle
m = eagle.compile(r'''
#include <eagle/kernel.h>
EAGLE_KERNEL(axpy, (double*, y), (const double*, x), (double, a), (int64_t, k)) { y[i] = a * x[i] + (double)k; }
''', backend="cpu")
checked = m.axpy
from eagle.module import Kernel
twin = Kernel(m, "axpy_twin", checked._handle, None, checked.loaded)  # the same code, no declaration
n = 1024
for name, (y, x) in {"numpy": (np.zeros(n), np.arange(float(n))), "eagle": (eagle.zeros(n, backend="cpu"), eagle.asarray(np.arange(float(n)), backend="cpu"))}.items():
    res = {"checked": [], "undeclared": []}
    def loop(k, calls=300):
        t0 = time.perf_counter()
        for _ in range(calls):
            eagle.run(k, [y, x, 0.5, 3], n)
        return (time.perf_counter() - t0) / calls * 1e6
    loop(checked); loop(twin)
    for r in range(41):
        for label, k in (("checked", checked), ("undeclared", twin)) if r % 2 else (("undeclared", twin), ("checked", checked)):
            res[label].append(loop(k))
    for label, v in res.items():
        print(f"{name} arrays, {label:<10}: median {statistics.median(v):6.2f} us, best {min(v):6.2f} us")
