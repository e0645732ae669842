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


# -- misuse: every rank raises RankFailed together, none hangs -------------------------------------

HANG_S = 60


@pytest.fixture
def no_hang(capfd):
    """A test whose ranks could wait for each other forever: a rank still in it after HANG_S
    seconds dumps its threads' stacks to the terminal and exits, and mpiexec ends the job,
    instead of hanging until CI's timeout."""
    import faulthandler
    with capfd.disabled():
        terminal = os.dup(2)  # stderr itself, not pytest's capture of it
    faulthandler.dump_traceback_later(HANG_S, exit=True, file=terminal)
    yield
    faulthandler.cancel_dump_traceback_later()
    os.close(terminal)


RANK = COMM.Get_rank()


def _own_share(n):
    return np.arange(ed.split(n, SIZE, RANK).base, ed.split(n, SIZE, RANK).stop, dtype=np.float64)


# (the call, every rank's, or None: the ranks disagree on the argument; the failing ranks, or None: all)
MISUSE = {
    "gather, n_samples differs": (lambda: ed.gather(_own_share(10 if RANK == 0 else 12), 10 if RANK == 0 else 12),
                                  "the ranks disagree on n_samples", "rank 0: n_samples = 10", None),
    "allgather, n_samples differs": (lambda: ed.gather(_own_share(10 if RANK == 0 else 12), 10 if RANK == 0 else 12,
                                                       root=None),
                                     "the ranks disagree on n_samples", "n_samples = 12", None),
    "Job, n_samples differs": (lambda: ed.Job(10 if RANK == 0 else 12), "Job: the ranks disagree on n_samples",
                               "rank 0: n_samples = 10", None),
    "gather, n_samples < 0 on rank 0": (lambda: ed.gather(_own_share(10), -1 if RANK == 0 else 10),
                                        "gather failed on 1 of", "n_samples must be >= 0, got -1", [0]),
    "Job, n_samples < 0 on rank 0": (lambda: ed.Job(-1 if RANK == 0 else 10), "Job failed on 1 of",
                                     "n_samples must be >= 0, got -1", [0]),
    "Job, backend on rank 0 only": (lambda: ed.Job(10, backend="cpu" if RANK == 0 else None).gather(np.zeros(5)),
                                    "the ranks disagree on backend", "rank 0: backend = 'cpu'", None),
    "chunks, min_chunk 0 on rank 0": (lambda: list(ed.Job(10).chunks(min_chunk=0 if RANK == 0 else 1)),
                                      "chunks failed on 1 of", "min_chunk must be >= 1, got 0", [0]),
    "chunks, min_chunk differs": (lambda: list(ed.Job(10).chunks(min_chunk=1 if RANK == 0 else 2)),
                                  "chunks: the ranks disagree on min_chunk", "rank 0: min_chunk = 1", None),
    "gather, root differs": (lambda: ed.gather(_own_share(6), 6, root=RANK), "the ranks disagree on root",
                             "rank 1: root = 1", None),
}


@pytest.mark.skipif(SIZE < 2, reason="ranks that disagree need at least two ranks")
@pytest.mark.parametrize("case", sorted(MISUSE))
def test_ranks_that_disagree_on_an_argument_raise_rank_failed_on_every_rank_naming_it(no_hang, case):
    call, head, value, failing = MISUSE[case]
    with pytest.raises(ed.RankFailed) as ei:
        call()
    assert head in str(ei.value) and value in str(ei.value), str(ei.value)
    assert list(ei.value.failures) == (list(range(SIZE)) if failing is None else failing)
    assert COMM.allreduce(1) == SIZE  # the job goes on: the next collective works on every rank


@pytest.mark.parametrize("call,message", [
    (lambda: ed.gather(np.zeros(1), SIZE, root=SIZE + 2), f"root must be <= {SIZE - 1}, got {SIZE + 2}"),
    (lambda: ed.SharedCounter(root=SIZE + 5), f"SharedCounter: root must be <= {SIZE - 1}, got {SIZE + 5}"),
    (lambda: ed.Job(10**30), "n_samples must be <= 9223372036854775807"),
    (lambda: ed.gather(np.array([None] * ed.split(SIZE, SIZE, RANK).count, object), SIZE),
     "its share has dtype object, which holds Python objects"),
], ids=["gather root", "counter root", "n_samples > int64", "object dtype"])
def test_a_bad_argument_of_a_collective_raises_rank_failed_on_every_rank(no_hang, call, message):
    with pytest.raises(ed.RankFailed) as ei:
        call()
    assert message in str(ei.value) and list(ei.value.failures) == list(range(SIZE)), str(ei.value)
    assert COMM.allreduce(1) == SIZE


def test_a_host_backend_ignores_the_device_choice_but_refuses_a_malformed_one_on_every_rank(no_hang):
    assert ed.select_device("cpu", device=-1) == -1 and ed.Job(10, backend="cpu", device=-1).device == -1
    with pytest.raises(ed.RankFailed) as ei:
        ed.select_device("cpu", device="abc")
    assert "device= must hold device ordinals, got 'abc'" in str(ei.value)
    assert list(ei.value.failures) == list(range(SIZE))


def test_a_comm_that_is_no_communicator_and_a_closed_counter_are_refused_naming_them():
    with pytest.raises(eagle.EagleError, match="comm must be an mpi4py intracommunicator"):
        ed.Job(4, comm=object())
    c = ed.SharedCounter()
    c.close()
    with pytest.raises(eagle.HandleError, match="SharedCounter.take: the counter is closed"):
        c.take()


@pytest.mark.skipif(SIZE < 2, reason="shares of different dtypes need at least two ranks")
def test_structured_shares_of_one_size_but_different_fields_are_refused(no_hang):
    mine = np.dtype([("a", "<f8"), ("b", "<i8")] if RANK % 2 == 0 else [("a", "<i8"), ("b", "<f8")])
    assert mine.itemsize == 16 and mine.str == "|V16"  # the same size and dtype.str on every rank
    with pytest.raises(ed.RankFailed) as ei:
        ed.gather(np.zeros(ed.split(2 * SIZE, SIZE, RANK).count, mine), 2 * SIZE, root=None)
    assert "the ranks disagree on dtype" in str(ei.value)
    assert "rank 1: dtype = [('a', '<i8'), ('b', '<f8')]" in str(ei.value)


@pytest.mark.parametrize("change", ["dtype", "leading shape"])
def test_collector_chunks_of_one_plane_that_change_dtype_or_shape_raise_on_every_rank(no_hang, change):
    n = 4 * SIZE
    job = ed.Job(n)
    col = job.collector()
    first, second = ed.Partition(job.base, 2, n), ed.Partition(job.base + 2, 2, n)
    col.add(first, x=np.zeros((2, 2), np.float32))
    late = (np.zeros((2, 2), np.float64) if change == "dtype" else np.zeros((3, 2), np.float32))
    col.add(second, x=late if RANK == 0 else np.zeros((2, 2), np.float32))
    with pytest.raises(ed.RankFailed) as ei:
        col.gather()
    expect = "different dtypes: float32, float64" if change == "dtype" else "different leading shapes: (2,), (3,)"
    assert list(ei.value.failures) == [0] and f"the chunks of plane 'x' have {expect}" in str(ei.value)
    assert COMM.allreduce(1) == SIZE


def test_collector_add_refuses_a_chunk_outside_the_run_and_takes_a_plain_tuple():
    col = ed.Collector(10)
    with pytest.raises(eagle.EagleValueError, match=r"the chunk \(5, 10, 10\) .* is not inside this run's samples"):
        col.add(ed.Partition(5, 10, 10), x=np.zeros(10))
    with pytest.raises(eagle.EagleValueError, match="must hold the chunk's 5 samples"):
        col.add((0, 5, 10), x=np.zeros(4))
    col.add((0, 5, 10), x=np.zeros(5))
    assert col.parts == [(0, 5)]


def test_a_chunk_table_reaching_past_the_samples_is_refused_on_every_rank(no_hang):
    with pytest.raises(ed.RankFailed) as ei:
        list(ed.chunks(10, table=[(0, 100)]))
    assert "table[0] = (0, 100) reaches past the 10 samples" in str(ei.value)
    assert list(ei.value.failures) == list(range(SIZE))


@pytest.mark.parametrize("stream", ["None", "0", "raw int", "foreign"])
def test_job_run_on_the_default_stream_a_raw_stream_or_a_foreign_stream(kern, stream):
    n = 1001
    job = ed.Job(n, backend="cpu")
    x, ids = np.zeros(job.count), np.zeros(job.count, np.int64)
    s = job.backend.stream()
    given = {"None": None, "0": 0, "raw int": s.handle, "foreign": type("Foreign", (), {"ptr": s.handle})()}[stream]
    launched = job.run(given, kern.mix, [job.plane(x), job.plane(ids)])
    s.host_func(lambda: None)  # a blocking stream's work waits for the default stream's
    s.synchronize()
    gx, gids = job.gather(x, root=None), job.gather(ids, root=None)
    assert launched == (job.count > 0)
    assert gx.tobytes() == one_process(kern, n)[0].tobytes() and np.array_equal(gids, np.arange(n))


def test_save_writes_planes_of_any_name_and_leaves_no_temporary_file(shared_dir):
    n = 2 * SIZE + 1
    job = ed.Job(n)
    theirs = os.path.join(shared_dir, "c.tmp.npz")
    if RANK == 0:
        with open(theirs, "w") as fh:
            fh.write("the user's own file")
    COMM.Barrier()
    written = job.save(os.path.join(shared_dir, "c"), file=job.samples(), allow_pickle=-job.samples(),
                       path=job.samples().astype(np.float32))
    COMM.Barrier()
    with np.load(os.path.join(shared_dir, "c.npz")) as f:
        assert sorted(f.files) == ["allow_pickle", "file", "path"]
        assert np.array_equal(f["file"], np.arange(n)) and np.array_equal(f["allow_pickle"], -np.arange(n))
        assert f["path"].dtype == np.float32
    assert (written is None) == (RANK != 0)
    with open(theirs) as fh:
        assert fh.read() == "the user's own file"
    assert sorted(os.listdir(shared_dir)) == ["c.npz", "c.tmp.npz"]


@pytest.mark.parametrize("case", ["root=None", "no folder", "a folder in the way", "empty path"])
def test_save_that_cannot_write_raises_on_every_rank_and_leaves_nothing(no_hang, shared_dir, monkeypatch, case):
    job = ed.Job(SIZE)
    monkeypatch.chdir(shared_dir)
    if case == "a folder in the way" and RANK == 0:
        os.mkdir(os.path.join(shared_dir, "taken.npz"))
    COMM.Barrier()
    path, root, message = {
        "root=None": ("a.npz", None, "root must be the rank that writes the file, not None"),
        "no folder": (os.path.join(shared_dir, "no", "such", "b.npz"), 0, "b.npz' does not exist"),
        "a folder in the way": (os.path.join(shared_dir, "taken.npz"), 0, "IsADirectoryError"),
        "empty path": ("", 0, "path '' names no file"),
    }[case]
    with pytest.raises(ed.RankFailed) as ei:
        job.save(path, root=root, x=np.zeros(job.count))
    COMM.Barrier()
    assert message in str(ei.value), str(ei.value)
    assert sorted(os.listdir(shared_dir)) == (["taken.npz"] if case == "a folder in the way" else [])


@pytest.mark.parametrize("n", [1, 5, 64])
def test_an_ode_solve_over_the_ranks_equals_the_one_process_solve_bit_for_bit(n):
    """eagle.ode.solve_ivp(distributed=True): every rank passes all the inputs, solves its share and
    gets the whole solution gathered in sample order; it equals the one-process solve bit for bit
    (t_eval, a terminal event and per-sample arguments included)."""
    import eagle.ode as eo

    def lorenz(t, y, rho):
        return [10.0 * (y[1] - y[0]), y[0] * (rho - y[2]) - y[1], y[0] * y[1] - 8.0 / 3.0 * y[2]]

    def high(t, y, rho):
        return y[2] - 25.0
    high.terminal = True

    rho = np.linspace(0.0, 40.0, n)
    y0 = np.tile([1.0, 0.0, 0.0], (n, 1))
    kw = dict(method="Tsit5", rtol=1e-7, atol=1e-9, t_eval=np.linspace(0.0, 2.0, 5), events=[high], backend="cpu")
    one = eo.solve_ivp(lorenz, (0.0, 2.0), y0, args=(rho,), **kw)
    many = eo.solve_ivp(lorenz, (0.0, 2.0), y0, args=(rho,), distributed=True, **kw)
    for name in ("t", "y", "status", "failure", "nfev", "n_accepted", "n_rejected", "ys", "n_events"):
        np.testing.assert_array_equal(getattr(many, name), getattr(one, name), err_msg=name)
    np.testing.assert_array_equal(many.t_events[0], one.t_events[0])
    np.testing.assert_array_equal(many.y_events[0], one.y_events[0])
