"""Issue 17's host path on the cpu backend: an eager call with no ``stream=`` waits for its work,
so it enqueues no release marker and holds nothing afterwards; with ``stream=`` the stream still
holds a temporary until its work has run (issue 14). Also the fast paths that replaced per-call
work: numpy's and eagle's arrays read without their interface dicts, the kind cache of the
loader, and the compiled bound call stored as a vectorcall method."""
import gc
import threading
import weakref

import numpy as np
import pytest

import eagle
from eagle import _arrays, _hotcall, api
from eagle._inflight import holds
from eagle._inflight.attention import attention_list
from eagle._loader import TRACE_COUNTS
from test_api_kernels import kaddr

HOST_FUNC = "eagle_backend_host_func"


@pytest.fixture
def traced():
    return eagle.backend("cpu", trace=True)


def _compact_args(n=64):
    mask = (np.arange(n) % 3 == 0).astype(np.uint8)
    return mask, np.zeros(n, np.int32), np.zeros(1, np.uint32), np.zeros(
        eagle.backend("cpu").compact_scratch_bytes(n), np.uint8)


def _held(b):
    return [refs for h in holds.streams_of(b).values() for refs in h.waiting]


def test_eager_calls_with_no_stream_enqueue_no_marker_and_hold_nothing(traced):
    before = TRACE_COUNTS[HOST_FUNC]
    x = np.zeros(64)
    eagle.copy(x, np.arange(64.0), backend=traced)
    assert (x == np.arange(64.0)).all()  # done when it returns
    mask, idx, count, scratch = _compact_args()
    eagle.compact(mask, idx, count, scratch, backend=traced)
    assert int(count[0]) == 22 and (idx[:22] == np.flatnonzero(mask)).all()
    assert eagle.run(kaddr("add1"), [x], 64, backend=traced)
    assert (x == np.arange(64.0) + 1).all()
    assert TRACE_COUNTS[HOST_FUNC] == before, "an eager call with no stream enqueued a host function"
    assert _held(traced) == []


def test_the_stream_path_still_enqueues_a_marker(traced):
    s = traced.stream()
    before = TRACE_COUNTS[HOST_FUNC]
    eagle.copy(np.zeros(8), np.ones(8), stream=s)
    s.synchronize()
    assert TRACE_COUNTS[HOST_FUNC] == before + 1


def _gate(b, s):
    """Holds the stream ``s`` until the returned event is set (its work cannot run before)."""
    ev = threading.Event()
    b.host_func(ev.wait, stream=s)
    return ev


@pytest.mark.parametrize("call", ["copy", "compact", "run"])
def test_with_a_stream_a_temporary_stays_alive_until_its_work_has_run(cpu, call):
    s = cpu.stream()
    gate = _gate(cpu, s)
    out = np.zeros(64)
    if call == "copy":
        tmp = np.arange(64.0)
        eagle.copy(out, tmp, stream=s)
    elif call == "compact":
        tmp, idx, count, scratch = _compact_args()
        eagle.compact(tmp, idx, count, scratch, stream=s)
    else:
        tmp = np.zeros(64)
        eagle.run(kaddr("add1"), [tmp], 64, stream=s)
    ref = weakref.ref(tmp)
    del tmp
    gc.collect()
    assert ref() is not None, "the stream let go of a temporary its queued work reads"
    gate.set()
    s.synchronize()
    if call == "copy":
        assert (out == np.arange(64.0)).all()
    elif call == "compact":
        assert int(count[0]) == 22
    for _ in range(100):  # the marker hands the refs back to this thread; a later call drops them
        s.synchronize()
        gc.collect()
        if ref() is None:
            break
    assert ref() is None, "the temporary was never released after its work ran"


def test_a_failed_wait_keeps_the_arguments_until_a_later_wait(cpu):
    """The eager wait raises a pending host-function error (the work has run, but eagle cannot
    tell a failed wait from that): the arguments stay with eagle's stream until its next wait."""
    s = cpu.stream()
    s.host_func(lambda: 1 / 0)
    mine = attention_list(cpu, threading.get_ident())
    while not any(isinstance(e, BaseException) for e in mine):  # let the failing host function run
        threading.Event().wait(0.001)
    x = np.zeros(16)
    tmp = np.arange(16.0)
    ref = weakref.ref(tmp)
    raised = False
    try:
        eagle.copy(x, tmp)
    except ZeroDivisionError as e:  # its traceback holds the call's frame (and tmp): drop it
        e.__traceback__ = None
        raised = True
    assert raised
    del tmp
    gc.collect()
    assert ref() is not None and (x == np.arange(16.0)).all()
    eagle.copy(np.zeros(1), np.ones(1))  # its wait succeeds: eagle's stream lets go
    gc.collect()
    kept = holds.streams_of(cpu).get(api.own_stream(cpu).handle)
    assert ref() is None and (kept is None or not kept.waiting)


@pytest.mark.parametrize("make", [
    lambda: np.arange(10.0),
    lambda: np.arange(20.0)[5:15],
    lambda: np.zeros((3, 4), np.int32),
    lambda: np.zeros(0),
    lambda: np.zeros((2, 1, 3))[:, :, :],
])
def test_the_ndarray_fast_path_says_what_the_array_interface_says(make):
    a = make()
    info = _arrays.address_of(a)
    assert info.ptr == a.__array_interface__["data"][0] and info.nbytes == a.nbytes
    assert (info.device_type, info.device_id, info.readonly, info.keepalive) == (1, 0, False, a)
    a.setflags(write=False)
    assert _arrays.address_of(a).readonly


def test_the_ndarray_fast_path_leaves_strided_arrays_to_the_general_path():
    with pytest.raises(eagle.EagleValueError, match="C-contiguous"):
        _arrays.address_of(np.arange(10.0)[::2])
    with pytest.raises(eagle.EagleValueError, match="C-contiguous"):
        _arrays.address_of(np.zeros((4, 4)).T)


def test_a_0d_array_is_still_a_kernel_argument_by_value(cpu):
    from eagle.exec import _arg_bytes
    assert _arg_bytes(np.array(2.5)) == np.float64(2.5).tobytes()
    a = np.zeros(3)
    assert _arg_bytes(a) == a.__array_interface__["data"][0].to_bytes(8, "little")


def test_a_device_array_needs_no_protocol(cpu):
    a = cpu.zeros(8, "float64")
    info = _arrays.address_of(a)
    assert (info.ptr, info.nbytes, info.device_type, info.keepalive) == (a.address, 64, a.device_type, a)
    assert _arrays.dlpack_device(a) == a.__dlpack_device__()


def test_the_kind_cache_follows_the_environment(cpu, monkeypatch, tmp_path):
    assert eagle.backend("cpu") is cpu
    monkeypatch.setenv("EAGLE_BACKEND_CPU", str(tmp_path / "libeagle_none.so"))
    with pytest.raises(eagle.BackendLoadError, match="does not exist"):
        eagle.backend("cpu")
    with pytest.raises(eagle.BackendLoadError):
        eagle.copy(np.zeros(1), np.ones(1))  # the resolver opens the kind the same way
    monkeypatch.delenv("EAGLE_BACKEND_CPU")
    assert eagle.backend("cpu") is cpu
    monkeypatch.setenv("EAGLE_TRACE_CALLS", "1")
    assert eagle.backend("cpu") is not cpu and eagle.backend("cpu")._traced


def test_the_compiled_call_is_stored_as_its_vectorcall_method(cpu):
    if _hotcall.CompiledBoundCall is None:
        pytest.skip("eagle._hotcall was not built")
    s = cpu.stream()
    assert isinstance(s.synchronize.__self__, _hotcall.CompiledBoundCall)
    with pytest.raises(eagle.EagleTypeError, match="take no keyword arguments"):
        s.synchronize(n=1)
    s.close()
    with pytest.raises(eagle.HandleError, match="is closed"):
        s.synchronize()


def test_own_stream_is_per_thread_and_per_backend(cpu):
    mine = api.own_stream(cpu)
    assert api.own_stream(cpu) is mine
    box = []
    t = threading.Thread(target=lambda: box.append(api.own_stream(cpu)))
    t.start()
    t.join()
    assert box[0] is not mine
