"""benchmarks/bench_mc.py's cpu smoke path runs here (the H200 runs the rest): its eagle kernels
compile from the one source, every check it makes passes (E[S_T] and the European call against
closed forms, half the barrier's paths knocked out, the drained and plain barrier equal bit for
bit, the price against numpy's own Monte Carlo), and it writes its figures."""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_bench_mc_smoke_on_cpu(cpu, tmp_path, capsys):
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import bench_mc
    out = tmp_path / "mc.json"
    rc = bench_mc.main(["--smoke", "--backend", "cpu", "--paths", "4096", "--reps", "1", "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    res = json.loads(out.read_text())
    assert {"eagle_gbm", "eagle_fill", "eagle_barrier_drain", "eagle_barrier_plain"} <= set(res["rows"])
    assert res["checks"] and all(c["ok"] for c in res["checks"]), res["checks"]
    assert 0.3 < res["knocked_out"] < 0.7
    assert "FAIL" not in text


# exact (no contraction, IEEE division): about 6 s of NVRTC, with -m slow; the default mode compiles the
# same kernels in the default run
@pytest.mark.parametrize("mode", [pytest.param("exact", marks=pytest.mark.slow), "default"])
def test_bench_mc_kernels_compile_with_nvrtc_and_no_gpu(mode):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _nvrtc import MODES, nvrtc_compile
    src = open(os.path.join(ROOT, "benchmarks", "kernels", "mc_paths.c"), "rb").read()
    res, log, cubin = nvrtc_compile(src, "mc_paths.c", MODES[mode])
    assert res == 0, log
    for k in (b"mc_gbm", b"mc_fill_normals", b"ko_reset", b"ko_steps_drain"):
        assert k in cubin
