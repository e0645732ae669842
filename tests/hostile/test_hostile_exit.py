"""Exit with work pending (issue 28): a script whose last line enqueues kernels on the default
stream and returns (``[b.run(m.a, [x], len(x)) for _ in range(20)]``) used to die at exit 9 runs
out of 10: finalization freed the arrays (and the kernel's module) the queued work still used,
because the exit drain waited only for Python host functions. Now the exit drain waits (bounded,
$EAGLE_EXIT_WAIT_S) for the work of every stream that holds arrays, and for every live stream and
launcher, before anything is freed.

Each run is a fresh interpreter (tests/_subproc.py): 10 runs in the normal suite, 100 marked slow."""
import pytest

from _subproc import run_snippet

SCRIPT = r'''
import numpy as np, eagle
b = eagle.backend("cpu")
m = eagle.compile("""
#include <eagle/kernel.h>
EAGLE_KERNEL(a, (double*, x)) { (void)n; for (int k = 0; k < 400; ++k) x[i] = x[i] * 0.999 + 1.0; }
""", backend=b, name="exit.c")
x = np.zeros(1 << 16)
''' + "{last_line}\n"

LAST_LINES = {
    "Backend.run": "[b.run(m.a, [x], len(x)) for _ in range(20)]",
    "Kernel.run": "[m.a.run([x], len(x)) for _ in range(20)]",
    "user stream": "s = b.stream(); [s.run(m.a, [x], len(x)) for _ in range(20)]",
}


def _runs_clean(last_line, times):
    bad = []
    for i in range(times):
        out = run_snippet(SCRIPT.replace("{last_line}", last_line), timeout=120)
        if out.status != "ok":
            bad.append(f"run {i}: {out.describe()}")
    assert not bad, f"{len(bad)} of {times} runs did not exit cleanly; the first:\n{bad[0]}"


@pytest.mark.parametrize("how", list(LAST_LINES))
def test_exit_with_kernels_queued_is_clean_10_of_10(how):
    _runs_clean(LAST_LINES[how], 10 if how == "Backend.run" else 3)


@pytest.mark.slow
@pytest.mark.parametrize("how", list(LAST_LINES))
def test_exit_with_kernels_queued_is_clean_100_of_100(how):
    _runs_clean(LAST_LINES[how], 100)


def test_the_exit_drain_ends_work_that_never_finishes_after_its_bound():
    # a kernel that never ends, left running on a user stream: the exit waits EAGLE_EXIT_WAIT_S,
    # says so, releases nothing and keeps the kernel's arrays; the process ends with status 0
    out = run_snippet(r'''
        import eagle
        b = eagle.backend("cpu")
        m = eagle.compile("""
        #include <eagle/kernel.h>
        EAGLE_KERNEL(forever, (double*, x)) { (void)n; volatile double* v = x; while (v[i] >= 0.0) {} }
        """, backend=b, name="forever.c")
        x = eagle.zeros(4, backend=b)
        s = b.stream()
        s.run(m.forever, [x], 4)
        g = eagle.Graph.build([lambda st: st.run(m.forever, [x], 4)], planes=[x])
        g.launch()
    ''', env={"EAGLE_EXIT_WAIT_S": "1"}, timeout=60)
    out.expect_ok()
    assert "had not finished" in out.stderr and out.seconds < 30, out.describe()
