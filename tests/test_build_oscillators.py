"""The oscillator card end to end on cpu: graph == eager bit for bit, == numpy to 1e-12."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _main():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import oscillators
    finally:
        sys.path.pop(0)
    return oscillators


@pytest.mark.parametrize("extra", [[], ["--reorder", "0.5", "--k", "8"], ["--k", "1"], ["--mode", "while"]])
def test_the_oscillator_card_passes_its_checks_on_cpu(cpu, capsys, extra):
    rc = _main().main(["--backend", "cpu", "--n", "3000", "--reps", "1", *extra])
    out = capsys.readouterr().out
    assert "check graph == eager step-by-step (bit for bit): PASS" in out
    assert "check graph vs numpy reference" in out and "FAIL" not in out
    assert rc == 0 and out.rstrip().endswith("oscillator card: PASS")


def test_the_workload_is_the_anchor_card():
    omega, zeta, steps = _main().workload(10**6)
    assert steps.max() == 999 and steps.min() == 1
    assert abs(steps.mean() - 144.1) < 0.05
    assert omega[96] == 1 + 96 / 97 and zeta[1] == 0.01 + 0.2 * 7 / 101
