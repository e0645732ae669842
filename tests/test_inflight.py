"""eagle/_inflight/, the one home of work in flight: its state is kept per backend and goes with
the backend; several enqueues submitted as one (``in_turn``) keep what the enqueued ones use when a
later one fails; calls built on several enqueues (``eagle.mean_var``) go through the one
``stream=`` policy (no stream: waited for, no release marker, nothing held)."""
import gc
import threading
import weakref

import numpy as np
import pytest

import eagle
from eagle import exec as _exec
from eagle import memory as _memory
from eagle._inflight import attention_list, holds, in_turn, submit
from eagle._inflight.per_backend import by_id, flight_of, flights
from eagle._loader import TRACE_COUNTS
from test_api_kernels import kaddr

HOST_FUNC = "eagle_backend_host_func"


class _Thing:
    """Something a weakref can point at (a stand-in for a backend opened by path, which may go)."""


def test_a_backends_work_in_flight_goes_with_the_backend():
    a, b = _Thing(), _Thing()
    flight_of(a).streams[1] = "a's"
    flight_of(b).streams[2] = "b's"
    assert flight_of(a) is by_id[id(a)] and flight_of(a).backend() is a
    assert {id(x): f.streams for x, f in flights() if x in (a, b)} == {id(a): {1: "a's"}, id(b): {2: "b's"}}
    key = id(a)
    del a
    gc.collect()
    assert key not in by_id and id(b) in by_id
    del b


def test_a_failed_step_leaves_the_steps_before_it_held_by_the_stream(cpu):
    s = cpu.stream()
    gate = threading.Event()
    cpu.host_func(gate.wait, stream=s)  # nothing on s runs before the gate opens
    out, src = np.zeros(64), np.arange(64.0)
    ref = weakref.ref(src)

    def refuse(backend, *, stream):
        raise eagle.EagleValueError("refused")

    with pytest.raises(eagle.EagleValueError, match="refused"):
        submit(cpu, s, in_turn, (_memory.enqueue_copy, (out, src), {}), (refuse, (), {}))
    del src
    gc.collect()
    assert ref() is not None, "the enqueued copy's source went while its stream had not run it"
    gate.set()
    s.synchronize()
    assert (out == np.arange(64.0)).all()
    for _ in range(100):  # the marker hands the refs back to this thread; its next call drops them
        s.synchronize()
        gc.collect()
        if ref() is None:
            break
    assert ref() is None


def test_steps_in_turn_run_in_order_and_return_every_result(cpu):
    x = np.zeros(32)
    results = submit(cpu, None, in_turn, (_exec.enqueue_run, (kaddr("add1"), [x], 32), {}),
                     (_memory.enqueue_copy, (x[:16], x[16:]), {}))
    assert results == [True, None]
    assert (x == 1).all()  # the copy ran after the launch, and both before submit returned


def test_mean_var_with_no_stream_is_waited_for_and_holds_nothing():
    traced = eagle.backend("cpu", trace=True)
    values = np.linspace(0.0, 1.0, 1001)
    before = TRACE_COUNTS[HOST_FUNC]
    got = eagle.mean_var(values, backend=traced)
    assert TRACE_COUNTS[HOST_FUNC] == before, "eagle.mean_var with no stream enqueued a release marker"
    assert [r for h in holds.streams_of(traced).values() for r in h.waiting] == []
    assert got.mean == pytest.approx(values.mean(), rel=1e-14)
    assert got.var == pytest.approx(values.var(ddof=1), rel=1e-12)


def test_a_host_function_error_reaches_the_enqueuing_thread_only(cpu):
    s = cpu.stream()
    s.host_func(lambda: 1 / 0)
    mine = attention_list(cpu, threading.get_ident())
    with pytest.raises(ZeroDivisionError):
        s.synchronize()
    assert not any(isinstance(e, BaseException) for e in mine)
    seen = []

    def other():
        t = cpu.stream()
        t.synchronize()  # this thread enqueued nothing that failed: no error here
        seen.append("ok")
    th = threading.Thread(target=other)
    th.start()
    th.join()
    assert seen == ["ok"]
