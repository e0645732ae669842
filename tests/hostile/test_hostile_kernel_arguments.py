"""A kernel compiled from an EAGLE_KERNEL source launched with the wrong number of arguments: the
kernel would read argument slots that are not there (on cpu a segfault in the lane loop, seen
before this check). eagle counts the declared parameters and refuses the launch, naming them.
Each case runs in a fresh interpreter."""
import pytest

from _subproc import run_snippet

SRC = ("#include <eagle/kernel.h>\n"
       "EAGLE_KERNEL(k3, (double*, x), (const double*, y), (double, a)) { (void)n; x[i] = y[i] * a; }\n")


@pytest.mark.parametrize("entry,args,want", [
    ("k3", "[x]", "kernel k3 takes 3 arguments (x, y, a), got 1"),
    ("k3", "[x, x, 2.0, 7]", "kernel k3 takes 3 arguments (x, y, a), got 4"),
    ("k3_active", "[x, x, 2.0]", "kernel k3_active takes 5 arguments (x, y, a, index_map, live_count), got 3"),
    ("k3_drain", "[x, x, 2.0]", "kernel k3_drain takes 9 arguments"),
])
def test_a_kernel_given_the_wrong_number_of_arguments_is_refused(cpu_backend_path, entry, args, want):
    out = run_snippet(f"""
        import numpy as np, eagle
        cpu = eagle.backend(PATH)
        m = eagle.compile(SRC, backend=cpu)
        x = np.zeros(4)
        s = cpu.stream()
        s.run(m.{entry}, {args}, 4)
        s.synchronize()
    """, globals={"PATH": cpu_backend_path, "SRC": SRC})
    out.expect_no_crash()
    out.expect_raises("EagleValueError", match=want)


def test_the_right_number_still_runs(cpu_backend_path):
    out = run_snippet("""
        import numpy as np, eagle
        cpu = eagle.backend(PATH)
        m = eagle.compile(SRC, backend=cpu)
        x, y = np.zeros(4), np.arange(4.0)
        s = cpu.stream()
        s.run(m.k3, [x, y, 2.0], 4)
        s.synchronize()
        result = x.tolist()
    """, globals={"PATH": cpu_backend_path, "SRC": SRC})
    assert out.expect_ok() == [0.0, 2.0, 4.0, 6.0]
