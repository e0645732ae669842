"""Diagnostic (session 7): four threads doing CuPy reductions at once, no eagle (run it under
compute-sanitizer to see whether the four-thread fold test's stall is CuPy's)."""
import threading
import cupy as cp

errors = []


def work(k):
    try:
        h = cp.zeros(20_000, cp.uint32)
        for r in range(3):
            h.fill(r + k)
            cp.cuda.Stream.null.synchronize()
            assert int(h.min()) == r + k == int(h.max())
    except BaseException as e:  # noqa: BLE001
        errors.append(repr(e))


ts = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join(100)
print("alive:", sum(t.is_alive() for t in ts), "errors:", errors, flush=True)
