"""eagle.distributed in one process: the partition and chunk arithmetic, the optional import,
the skip without MPI, and (under mpiexec, in a subprocess with a timeout) that a failing rank
ends the job with its message instead of hanging.

The results over 2 and 3 ranks are checked by tests/test_distributed_mpi.py, which CI runs under
``mpiexec -n 2`` and ``mpiexec -n 3``."""
import os
import subprocess
import sys
import time

import pytest

from eagle import distributed as ed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))


def test_split_is_contiguous_balanced_and_covers_every_sample_once_for_every_size():
    for size in range(1, 10):
        for n in list(range(0, 40)) + [10**8 + 7]:
            parts = [ed.split(n, size, r) for r in range(size)]
            assert parts[0].base == 0 and parts[-1].stop == n
            assert all(a.stop == b.base for a, b in zip(parts, parts[1:]))
            assert max(p.count for p in parts) - min(p.count for p in parts) <= 1
            assert [p.count for p in parts] == sorted((p.count for p in parts), reverse=True)
            assert all(p.n_samples == n for p in parts) and ed.counts(n, size) == [p.count for p in parts]
    assert ed.split(2, 3, 2) == (2, 0, 2)  # more ranks than samples: the last ones are empty
    assert tuple(ed.split(10, 3, 1)) == (4, 3, 10)


@pytest.mark.parametrize("bad", [(-1, 2, 0), (5, 0, 0), (5, 2, 2), (5, 2, -1), (2.5, 2, 0), (True, 2, 0)])
def test_split_refuses_bad_arguments_naming_them(bad):
    with pytest.raises(eagle_errors().EagleError, match="n_samples|size|rank"):
        ed.split(*bad)


def eagle_errors():
    import eagle.errors
    return eagle.errors


@pytest.mark.parametrize("n,size,mn,mx", [(0, 2, 1, None), (1, 3, 1, None), (10**6, 2, 1000, None),
                                          (12345, 3, 100, 2000), (99, 4, 7, 7)])
def test_the_chunk_table_covers_the_samples_in_order_largest_chunks_first(n, size, mn, mx):
    table = ed.chunk_table(n, size, min_chunk=mn, max_chunk=mx)
    assert sum(c for _, c in table) == n
    assert all(b0 + c0 == b1 for (b0, c0), (b1, _) in zip(table, table[1:]))
    sizes = [c for _, c in table]
    assert sizes == sorted(sizes, reverse=True)
    assert all(c >= mn for c in sizes[:-1]) and all(mx is None or c <= mx for c in sizes)
    if n >= 2 * size * mn and mx is None:
        assert sizes[0] == -(-n // (2 * size)) and len(table) > size  # guided: more chunks than ranks


def _python(code, env=None):
    e = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {}))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120)


def test_importing_eagle_and_eagle_distributed_does_not_import_mpi4py():
    r = _python("import sys, eagle, eagle.distributed as d; eagle.Graph; d.split(5, 2, 1); "
                "print('mpi4py' in sys.modules)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


BLOCK_MPI4PY = "import sys; sys.modules['mpi4py'] = None\n"


def test_without_mpi4py_the_error_names_what_is_missing_and_how_to_get_it():
    r = _python(BLOCK_MPI4PY + "import eagle.distributed as d\ntry:\n d.partition(10)\n"
                "except d.MPIUnavailable as e:\n print('MPIUnavailable:', e)")
    assert r.returncode == 0, r.stderr
    assert "MPIUnavailable: eagle.distributed needs mpi4py, which is not installed" in r.stdout
    assert "pip install mpi4py" in r.stdout


@pytest.mark.slow  # about 6 s: a pytest run in a subprocess
def test_without_mpi4py_the_mpi_tests_skip_naming_it(tmp_path):
    boot = tmp_path / "sitecustomize.py"
    boot.write_text(BLOCK_MPI4PY)
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist",
                        os.path.join(HERE, "test_distributed_mpi.py")], capture_output=True, text=True,
                       env=e, timeout=300, cwd=ROOT)
    assert r.returncode in (0, 5), r.stdout + r.stderr  # 5: pytest collected no test (all skipped)
    assert "1 skipped" in r.stdout and "eagle.distributed needs mpi4py, which is not installed" in r.stdout


@pytest.mark.parametrize("mode,size,failing,message", [
    ("bad-plane", 2, 1, "EagleValueError: eagle.distributed: rank 1: a plane of samples [500, 1000) must have "
                        "shape (500,) or (w, 500), got (503,)"),
    ("kernel-error", 3, 2, "EagleValueError: eagle_backend_run_device: desc->function is 0"),
    ("raise", 2, 0, "RuntimeError: planted failure"),
])
def test_a_failing_rank_ends_the_job_with_its_message_instead_of_a_hang(mode, size, failing, message):
    from distributed_support import mpiexec_or_skip
    cmd = mpiexec_or_skip(size) + [sys.executable, os.path.join(HERE, "mpi_worker_fail.py"), mode, str(failing)]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the job hung (killed after 120 s): {e.stdout!r} {e.stderr!r}")
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert f"eagle.distributed: rank {failing} of {size} (host " in out, out
    assert message in out, out
    assert "finished" not in out  # the others were waiting for the failing rank: none got past it
    others = [r_ for r_ in range(size) if r_ != failing]
    assert not any(f"eagle.distributed: rank {o} of" in out for o in others), out
    assert time.monotonic() - t0 < 120


@pytest.mark.parametrize("bad", [(5, "x", 0), (5, 2.0, 0), (5, 2, "1"), (1 << 63, 2, 0)])
def test_split_refuses_sizes_and_ranks_that_are_no_integers_and_totals_past_int64(bad):
    with pytest.raises(eagle_errors().EagleError, match="n_samples|size|rank"):
        ed.split(*bad)


@pytest.mark.parametrize("kw", [dict(min_chunk="16"), dict(factor=1.5), dict(max_chunk="8")])
def test_the_chunk_table_refuses_settings_that_are_no_integers_naming_them(kw):
    with pytest.raises(eagle_errors().EagleError, match="min_chunk|factor|max_chunk"):
        ed.chunk_table(100, 2, **kw)


@pytest.mark.parametrize("mode,size,failing,rc_zero,message", [
    # an error outside any collective: the rank's exit ends the job instead of a hang in gather
    ("collector-add", 2, 1, False, "Collector.add raised EagleValueError: eagle.distributed.Collector.add: x has "
                                   "shape (5,); its last axis must hold the chunk's 6 samples"),
    ("collector-add", 3, 0, False, "this rank is exiting with it unsettled"),
    # the same error, caught and the chunk given again: the job succeeds
    ("collector-recovered", 2, 1, True, None),
    # SystemExit(0) inside fail_fast on one rank while the others wait for it: the job ends
    ("exit0-one", 2, 0, False, "left the fail_fast block with SystemExit(0) and after 2 s other ranks were "
                               "still inside it"),
    ("exit0-one", 3, 2, False, "left the fail_fast block with SystemExit(0)"),
    # every rank leaving by SystemExit(0) together is a normal end
    ("exit0-all", 3, 0, True, None),
])
def test_a_rank_that_leaves_early_ends_the_job_instead_of_a_hang(mode, size, failing, rc_zero, message):
    from distributed_support import mpiexec_or_skip
    cmd = mpiexec_or_skip(size) + [sys.executable, os.path.join(HERE, "mpi_worker_exit.py"), mode, str(failing)]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the job hung (killed after 120 s): {e.stdout!r} {e.stderr!r}")
    out = r.stdout + r.stderr
    if rc_zero:
        assert r.returncode == 0, out
        assert "failed" not in out, out
        if mode == "collector-recovered":
            assert all(f"rank {k}: finished" in out for k in range(size)), out
        return
    assert r.returncode != 0, out
    assert f"eagle.distributed: rank {failing} of {size} (host " in out, out
    assert message in out, out
    assert "finished" not in out, out  # the others were waiting for the one that left
