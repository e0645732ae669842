"""eagle.distributed on GPUs: the oscillator card over 2 ranks, one GPU each, equals the card in
one process bit for bit (issue 16). Launched with mpiexec in a subprocess (a hang fails the test
at its timeout instead of hanging pytest).

Needs the cuda backend (its kernels compile with NVRTC), two GPUs, CuPy (to count them and for the
device-share test), mpi4py and an mpiexec; skipped
naming what is missing otherwise. On the H200 x2: ``bash benchmarks/device_run.sh setup distributed``."""
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.multigpu]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def two_gpus(cuda):
    cp = pytest.importorskip("cupy", reason="the cuda card allocates its planes with CuPy")
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - no driver
        pytest.skip(f"CuPy sees no GPU: {e}")
    if n < 2:
        pytest.skip(f"needs two GPUs, this machine has {n}")
    return n


@pytest.mark.parametrize("n", [1_000_000, 3])
def test_the_card_over_two_ranks_one_gpu_each_equals_one_process_bit_for_bit(two_gpus, tmp_path, n):
    from distributed_support import mpiexec_or_skip
    launch = mpiexec_or_skip(2)
    out = tmp_path / "card.npz"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("EAGLE_DEVICE", None)
    cmd = [*launch, sys.executable, os.path.join(ROOT, "examples", "card_mpi.py"), "--backend", "cuda",
           "--n", str(n), "--check", "--out", str(out)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240, cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the 2-rank card hung (killed after 240 s): {e.stdout!r} {e.stderr!r}")
    text = r.stdout + r.stderr
    assert r.returncode == 0, text
    assert "card over 2 rank(s), backend cuda, devices [0, 1]" in text, text  # one GPU per rank
    assert "check gathered == one process (bit for bit): PASS" in text, text
    import numpy as np
    with np.load(out) as f:
        assert f["x"].shape == (n,) and f["v"].shape == (n,)


def test_a_device_share_is_gathered_and_saved_through_the_host(two_gpus, tmp_path):
    from distributed_support import mpi_or_skip
    mpi_or_skip()
    import cupy as cp
    import numpy as np

    from eagle import distributed as ed
    job = ed.Job(1000, comm=ed.mpi().COMM_SELF, backend="cuda", device=1)
    with cp.cuda.Device(1):
        x = cp.arange(1000, dtype=cp.float64) * 0.5
        rows = cp.stack([x, -x]).astype(cp.float32)
        cp.cuda.Device(1).synchronize()
    assert job.device == 1
    assert np.array_equal(job.gather(x), np.arange(1000) * 0.5)
    assert np.array_equal(job.gather(rows), np.stack([np.arange(1000) * 0.5, -np.arange(1000) * 0.5]))
    path = job.save(str(tmp_path / "dev"), x=x)
    with np.load(path) as f:
        assert np.array_equal(f["x"], np.arange(1000) * 0.5)
