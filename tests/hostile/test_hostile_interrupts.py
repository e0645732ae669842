"""Ctrl-C landing right after a call has enqueued its work, before it returns (issue 28; found by
the stateful fuzz, tests/test_fuzz_stateful.py's interrupt_a_call).

Python runs a signal handler at the next instruction of the main thread, so a KeyboardInterrupt
can leave ``eagle.copy``/``eagle.run`` after the seam call has enqueued the work and before eagle
has noted what keeps the work's arrays alive. The work then runs on memory freed meanwhile: a copy
from a temporary writes whatever reused it (AddressSanitizer: heap-use-after-free in the cpu
backend's stream thread). The moment is made exact here: a profile hook calls
``_thread.interrupt_main()`` as eagle/_loader.py's ``call`` returns the enqueue's status to the
enqueue function; the stream is busy with slow work, so the interrupted work runs after the
temporary is gone. Whatever the interrupt, the work must read what it was given.

Each case runs in its own interpreter (tests/_subproc.py)."""
import pytest

from _subproc import run_snippet

SNIPPET = r'''
import _thread, sys
import numpy as np
import eagle
from eagle._inflight import own_stream

b = eagle.backend("cpu")
mod = b.compile("""
#include <eagle/kernel.h>
EAGLE_KERNEL(slow, (double*, y), (int64_t, steps))
{ (void)n; volatile double v = y[i]; for (int64_t k = 0; k < steps; ++k) v = v + 1.0; y[i] = v; }
EAGLE_KERNEL(plus1, (double*, y), (const double*, src)) { (void)n; y[i] = src[i] + 1.0; }
""", name="interrupt_after_enqueue.c")
n = 256
dst = np.zeros(n)
s = own_stream(b) if WHERE == "eager" else b.stream()
s.run(mod.slow, [np.zeros(2), 30_000_000], 2)   # the stream is busy for a while
stream = None if WHERE == "eager" else s
target = {"copy": "enqueue_copy", "run": "enqueue_run"}[WHAT]
fired = []

def hook(frame, event, arg):
    # eagle/_loader.py's call() (the seam call made) returns to the enqueue function
    if (not fired and event == "return" and frame.f_code.co_name == "call"
            and frame.f_back is not None and frame.f_back.f_code.co_name == target):
        fired.append(frame.f_back.f_code.co_filename)
        _thread.interrupt_main()

sys.setprofile(hook)
try:
    if WHAT == "copy":
        b.copy(dst, np.arange(1.0, n + 1.0), stream=stream)           # from a temporary
    else:
        b.run(mod.plus1, [dst, np.arange(0.0, n)], n, stream=stream)  # reads a temporary
    interrupted = False
except KeyboardInterrupt:
    interrupted = True
finally:
    sys.setprofile(None)
junk = [np.full(n, -1.0) for _ in range(16)]   # allocations that reuse freed memory
s.synchronize()
result = {"fired": bool(fired), "interrupted": interrupted,
          "right": bool((dst == np.arange(1.0, n + 1.0)).all()), "head": dst[:4].tolist()}
'''


@pytest.mark.parametrize("where", ["eager", "stream"])
@pytest.mark.parametrize("what", ["copy", "run"])
def test_an_interrupt_right_after_the_enqueue_leaves_the_work_its_arrays(what, where):
    out = run_snippet(SNIPPET, globals={"WHAT": what, "WHERE": where}, env={"EAGLE_EXIT_WAIT_S": "5"}, timeout=120)
    res = out.expect_ok()
    # the hook must have found the seam call (else this test checks nothing: update its names)
    assert res["fired"] and res["interrupted"], out.describe()
    assert res["right"], f"the interrupted {what} ({where}) ran on freed memory: dst[:4] = {res['head']}"
