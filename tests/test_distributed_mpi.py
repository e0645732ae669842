"""eagle.distributed under MPI: run these with ``mpiexec -n K python -m pytest -q -p no:cacheprovider
tests/test_distributed_mpi.py`` (CI runs K = 2 and 3, cpu backend). Under plain pytest they run
as one rank.

Every rank runs every test. A test makes all its collective calls first and asserts afterwards
on data every rank holds (gathered to all), so ranks pass or fail together and a failing
assertion cannot leave another rank waiting in a collective. The reference result is computed
in this process the one-process way (one launch over all samples), and the gathered result
must equal it bit for bit, whatever the number of ranks."""
import os
import sys

import numpy as np
import pytest

from distributed_support import KERNEL_SOURCE, mpi_or_skip

MPI = mpi_or_skip()

import eagle  # noqa: E402
from eagle import distributed as ed  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMM = MPI.COMM_WORLD
SIZE = COMM.Get_size()
SIZES = sorted({0, 1, 2, SIZE - 1, SIZE + 1, 7, 1000, 4099})


@pytest.fixture(scope="module")
def kern():
    import eagle.kernels as ek
    return ek.load("cpu", KERNEL_SOURCE, ["mix", "mix_rows"])


def one_process(kern, n):
    """x, ids and the two-row plane of the simple kernel, in one launch over all n samples."""
    x, ids, rows = np.zeros(n), np.zeros(n, np.int64), np.zeros((2, n))
    if n:
        s = eagle.backend("cpu").stream()
        s.run(kern.mix, [x, ids], n)
        s.run(kern.mix_rows, [rows, n], n)
        s.synchronize()
    return x, ids, rows


def test_every_rank_computes_the_same_partition_and_it_covers_the_samples_once():
    for n in SIZES:
        mine = ed.partition(n)
        table = [ed.split(n, SIZE, r) for r in range(SIZE)]
        everyone = COMM.allgather(tuple(mine))
        assert everyone == [tuple(p) for p in table]
        assert [p.base for p in table] == [sum(p.count for p in table[:r]) for r in range(SIZE)]
        assert sum(p.count for p in table) == n
        assert max(p.count for p in table) - min(p.count for p in table) <= 1


@pytest.mark.parametrize("n", SIZES)
def test_the_global_index_kernel_gathered_equals_the_one_process_result(kern, n):
    job = ed.Job(n, backend="cpu")
    x, ids, rows = np.zeros(job.count), np.zeros(job.count, np.int64), np.zeros((2, job.count))
    if not job.empty:
        s = job.backend.stream()
        # recorded once with Graph.build, replayed twice: kernels see the global sample index
        g = eagle.Graph.build([lambda s: job.run(s, kern.mix, [job.plane(x), job.plane(ids)]),
                               lambda s: job.run(s, kern.mix_rows, [job.plane(rows), job.count])],
                              planes=[x, ids, rows], stream=s)
        g.launch(2)
        g.synchronize()
    gx, gids, grows = job.gather(x, root=None), job.gather(ids, root=None), job.gather(rows, root=None)
    at0 = job.gather(x, root=0)
    rx, rids, rrows = one_process(kern, n)
    assert np.array_equal(gids, np.arange(n))
    assert gx.tobytes() == rx.tobytes() and grows.tobytes() == rrows.tobytes()
    assert (at0 is None) == (job.rank != 0)
    if at0 is not None:
        assert at0.tobytes() == rx.tobytes()


def test_eager_runs_over_the_share_equal_the_one_process_result(kern):
    n = 5003
    job = ed.Job(n)  # no backend named: no device chosen, the stream says which backend
    x, ids = np.zeros(job.count), np.zeros(job.count, np.int64)
    s = eagle.backend("cpu").stream()
    launched = job.run(s, kern.mix, [job.plane(x), job.plane(ids)])
    s.synchronize()
    gx = job.gather(x, root=None)
    assert launched == (job.count > 0) and job.device == -1
    assert gx.tobytes() == one_process(kern, n)[0].tobytes()


@pytest.fixture(scope="module")
def card_module():
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        import card_mpi
    finally:
        sys.path.pop(0)
    return card_mpi


@pytest.mark.parametrize("n,k", [(3000, 32), (1001, 8)])
def test_the_card_over_the_ranks_equals_the_one_process_card_bit_for_bit(card_module, n, k):
    job = ed.Job(n, backend="cpu")
    card = card_module.RankCard(job, "cpu", k)
    card.run()
    x, v = card.result()
    gx, gv = job.gather(x, root=None), job.gather(v, root=None)
    rx, rv = card_module.one_process("cpu", n, k)
    assert gx.tobytes() == rx.tobytes() and gv.tobytes() == rv.tobytes()
    assert card.graph.decides_on_device and card.aset.live == 0  # the drained launch left nothing live


@pytest.fixture
def shared_dir():
    """A folder rank 0 makes and every rank names (pytest's tmp_path is per process, and its
    clean-up races between ranks)."""
    import shutil
    import tempfile
    d = COMM.bcast(tempfile.mkdtemp(prefix="eagle-mpi-") if COMM.Get_rank() == 0 else None, root=0)
    yield d
    COMM.Barrier()
    if COMM.Get_rank() == 0:
        shutil.rmtree(d, ignore_errors=True)


def test_save_writes_one_npz_file_from_rank_0_that_numpy_opens(kern, shared_dir):
    n = 2 * SIZE + 1
    job = ed.Job(n, backend="cpu")
    path = os.path.join(shared_dir, "run")
    x, ids = np.zeros(job.count), np.zeros(job.count, np.int64)
    rows = np.stack([job.samples(), -job.samples()]).astype(np.float32)
    s = job.backend.stream()
    job.run(s, kern.mix, [job.plane(x), job.plane(ids)])
    s.synchronize()
    written = job.save(path, x=x, ids=ids, rows=rows)
    COMM.Barrier()
    names = COMM.bcast(written, root=0)
    assert (written is None) == (job.rank != 0)
    assert names == path + ".npz"
    with np.load(names) as f:
        assert sorted(f.files) == ["ids", "rows", "x"]
        assert f["x"].tobytes() == one_process(kern, n)[0].tobytes()
        assert np.array_equal(f["ids"], np.arange(n))
        assert f["rows"].dtype == np.float32 and np.array_equal(f["rows"], np.stack([np.arange(n), -np.arange(n)]))
    assert not [p for p in os.listdir(os.path.dirname(path)) if "tmp" in p]


def test_the_shared_counter_hands_out_every_value_exactly_once():
    with ed.SharedCounter() as c:
        taken = [c.take(3) for _ in range(200)]
        everyone = sorted(v for vals in COMM.allgather(taken) for v in vals)
        c.reset(7)
        again = c.take()
        firsts = COMM.allgather(again)
    assert everyone == list(range(0, 3 * 200 * SIZE, 3))
    assert sorted(firsts) == list(range(7, 7 + SIZE))


@pytest.mark.parametrize("n,min_chunk", [(4099, 16), (3, 1), (0, 1)])
def test_dynamic_chunks_gathered_equal_the_one_process_result(kern, n, min_chunk):
    job = ed.Job(n, backend="cpu")
    s = job.backend.stream()
    col = job.collector()
    for part in job.chunks(min_chunk=min_chunk):
        x, ids = np.zeros(part.count), np.zeros(part.count, np.int64)
        job.run(s, kern.mix, [job.plane(x, part), job.plane(ids, part)], part=part)
        s.synchronize()
        col.add(part, x=x, ids=ids)
    out = col.gather(root=None)
    table = ed.chunk_table(n, SIZE, min_chunk=min_chunk)
    taken = sorted(p for parts in COMM.allgather(col.parts) for p in parts)
    assert taken == table
    if n:
        assert out["x"].tobytes() == one_process(kern, n)[0].tobytes()
        assert np.array_equal(out["ids"], np.arange(n))
    else:
        assert out == {}


def test_a_bad_share_on_one_rank_raises_on_every_rank_naming_it():
    n = 4 * SIZE
    job = ed.Job(n, backend="cpu")
    bad = SIZE - 1
    share = np.zeros(job.count + (1 if job.rank == bad else 0))
    with pytest.raises(ed.RankFailed) as ei:
        job.gather(share)
    assert list(ei.value.failures) == [bad]
    assert f"rank {bad}: " in str(ei.value) and "the last axis holds this rank's" in str(ei.value)
    # the job goes on: the next collective works on every rank
    assert COMM.allreduce(1) == SIZE


def test_a_plane_of_the_wrong_length_is_refused_naming_the_rank():
    job = ed.Job(10 * SIZE)
    with pytest.raises(ed.RankFailed) as ei:
        job.agree(lambda: job.plane(np.zeros(job.count + (job.rank == 0))), what="planes")
    assert list(ei.value.failures) == [0]
    assert "rank 0: EagleValueError" in str(ei.value) and "planes failed on 1 of" in str(ei.value)


class FakeGPU:
    """A GPU kind with ``n`` devices, as select_device sees a backend."""
    kind, device_types = "cuda", (2,)

    def __init__(self, n):
        self.n = n

    def provides(self, what):
        return what == "device"

    def device_props(self, i):
        if i >= self.n:
            raise eagle.EagleError(f"device {i} does not exist")
        return i


def test_one_device_per_rank_from_the_node_local_rank(monkeypatch):
    monkeypatch.delenv("EAGLE_DEVICE", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    local = COMM.Split_type(MPI.COMM_TYPE_SHARED)
    lrank, lsize = local.Get_rank(), local.Get_size()
    local.Free()
    assert ed.select_device("cpu") == -1
    assert ed.select_device(FakeGPU(lsize)) == lrank
    assert ed.select_device(FakeGPU(2 * lsize), device=list(range(lsize, 2 * lsize))) == lsize + lrank
    # each rank given its own single device by the launcher (srun --gpus-per-task=1)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", str(10 + lrank))
    assert ed.select_device(FakeGPU(1)) == 0


@pytest.mark.skipif(SIZE < 2, reason="two ranks on one device needs at least two ranks")
def test_two_ranks_on_one_device_are_refused_on_every_rank_or_warned(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("EAGLE_DEVICE", "0")
    with pytest.raises(ed.SharedDeviceError, match="would all use cuda device 0"):
        ed.select_device(FakeGPU(4))
    with pytest.warns(RuntimeWarning, match="would all use cuda device 0"):
        assert ed.select_device(FakeGPU(4), allow_shared=True) == 0
    monkeypatch.delenv("EAGLE_DEVICE")
    with pytest.raises(ed.SharedDeviceError, match="two ranks on one device is refused"):
        ed.select_device(FakeGPU(1))  # every rank sees the same single device


def test_a_device_that_does_not_exist_is_refused_on_every_rank():
    with pytest.raises(ed.RankFailed, match="device 5 does not exist"):
        ed.select_device(FakeGPU(2), device=5)


@pytest.mark.skipif(SIZE < 2, reason="a take from another rank needs at least two ranks")
def test_a_take_completes_while_the_holder_of_the_counter_is_busy_outside_mpi():
    import time
    with ed.SharedCounter() as c:
        COMM.Barrier()
        if COMM.Get_rank() == 0:
            time.sleep(2.0)  # busy outside MPI, the GIL released (as in a backend's synchronize)
            waited = 0.0
        else:
            time.sleep(0.1)
            t0 = time.perf_counter()
            c.take()
            waited = time.perf_counter() - t0
        waits = COMM.allgather(waited)
    assert max(waits) < 1.0, f"takes waited {waits} s for the holder (no progress while it was busy)"
