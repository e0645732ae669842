"""benchmarks/bench_grad.py runs on the cpu backend at a small size (eagle alone: the peers are
optional), checks its gradients against the reference and exits 0."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow  # about 15 s: four solvers compiled
def test_bench_grad_smoke_on_cpu():
    pytest.importorskip("scipy", reason="the benchmark's reference is scipy's DOP853")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_grad.py"), "--backend", "cpu",
                          "--sizes", "2^6", "--reps", "1", "--impls", "eagle", "--check", "8"],
                         capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "eagle-adjoint" in out.stdout and "eagle-forward" in out.stdout and "x plain" in out.stdout
