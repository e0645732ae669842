"""`import eagle` alone gives eagle.ode, eagle.distributed and eagle.check on first use (a lazy
submodule, as numpy and scipy do), and imports none of them, nor mpi4py, until then. Each case
runs in a fresh interpreter: the test process has long imported them all."""
from _subproc import run_snippet


def test_eagle_ode_solve_ivp_works_after_a_bare_import_eagle():
    out = run_snippet('''
        import sys
        import numpy as np
        import eagle
        before = "eagle.ode" in sys.modules
        sol = eagle.ode.solve_ivp(lambda t, y: -y, (0.0, 1.0), np.ones((4, 1)), backend="cpu",
                                  rtol=1e-8, atol=1e-10)
        result = [before, float(np.max(np.abs(sol.y[:, 0] - np.exp(-1.0))))]
    ''', timeout=120)
    before, err = out.expect_ok()
    assert before is False, "import eagle imported eagle.ode eagerly"
    assert err < 1e-6, f"y(1) of y' = -y is off by {err}"


def test_import_eagle_imports_no_subpackage_and_no_mpi4py():
    out = run_snippet('''
        import sys
        import eagle
        result = sorted(m for m in ("eagle.ode", "eagle.distributed", "eagle.check", "mpi4py")
                        if m in sys.modules)
    ''')
    assert out.expect_ok() == []


def test_distributed_and_check_load_on_first_attribute_access_without_mpi4py():
    out = run_snippet('''
        import sys
        import eagle
        parts = [eagle.distributed.partition.__module__, eagle.check.run.__module__]
        result = [parts, "mpi4py" in sys.modules, "ode" in dir(eagle)]
    ''')
    parts, mpi, listed = out.expect_ok()
    assert parts == ["eagle.distributed.partition", "eagle.check"]
    assert mpi is False, "eagle.distributed imported mpi4py at import time"
    assert listed


def test_an_unknown_attribute_still_raises_attribute_error_naming_it():
    out = run_snippet('''
        import eagle
        eagle.odee
    ''')
    out.expect_raises("AttributeError", match="odee")
