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


@pytest.mark.parametrize("extra", [[], ["--reorder", "0.5", "--k", "8"], ["--k", "1"], ["--loop", "while"],
                                   ["--mode", "default"], ["--mode", "fast"]])
def test_the_oscillator_card_passes_its_checks_on_cpu(cpu, capsys, extra):
    rc = _main().main(["--backend", "cpu", "--n", "3000", "--reps", "1", *extra])
    out = capsys.readouterr().out
    assert "check graph == eager step-by-step (bit for bit): PASS" in out
    assert "check graph vs numpy reference" in out and "FAIL" not in out
    assert rc == 0 and out.rstrip().endswith("oscillator card: PASS")


def test_the_block_method_and_the_breakdown_run_on_cpu_in_smoke_form(cpu, capsys):
    """--smoke: every implementation of every mode in its own block, the pieces of the card alone;
    the card and the sorted limit agree with the exact card (bit for bit in exact mode)."""
    rc = _main().main(["--backend", "cpu", "--smoke", "--n", "800", "--k", "16"])
    out = capsys.readouterr().out
    assert rc == 0 and out.rstrip().endswith("oscillator card, block method: PASS"), out
    for mode in ("exact", "default", "fast"):
        assert f"| {mode} | card |" in out and f"| {mode} | sorted limit |" in out
        assert f"{mode}: card / sorted limit = " in out and f"{mode} breakdown" in out
    assert "| exact | card | " in out and "| exact | [reset, compact, drain, compact] |" in out
    assert "the drain alone ([reset, drain_all] - [reset])" in out and "FAIL" not in out


def test_the_workload_is_the_anchor_card():
    omega, zeta, steps = _main().workload(10**6)
    assert steps.max() == 999 and steps.min() == 1
    assert abs(steps.mean() - 144.1) < 0.05
    assert omega[96] == 1 + 96 / 97 and zeta[1] == 0.01 + 0.2 * 7 / 101
