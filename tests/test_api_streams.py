"""Streams, fences, copies, pinned memory, host functions and device properties on the cpu
backend, through eagle's Python API."""
import gc
import os
import threading
import time
import weakref

import numpy as np
import pytest

import eagle
from test_api_kernels import kaddr

TIMEOUT = 10.0


def test_stream_runs_work_in_enqueue_order(cpu):
    s = cpu.stream()
    x = np.zeros(1)
    seen = []
    for k in range(40):
        s.run(kaddr("add1"), [x], 1)
        s.host_func(lambda: seen.append(float(x[0])))
    s.synchronize()
    assert seen == [float(k) for k in range(1, 41)]


def test_stream_is_asynchronous_until_synchronize(cpu):
    s = cpu.stream()
    gate = threading.Event()
    done = []
    s.host_func(lambda: gate.wait(TIMEOUT))
    s.host_func(lambda: done.append(1))
    time.sleep(0.05)
    assert done == []  # the enqueue returned while the stream's worker is held
    gate.set()
    s.synchronize()
    assert done == [1]


def test_stream_handle_and_flags(cpu):
    s = cpu.stream(non_blocking=True)
    assert isinstance(s.handle, int) and s.handle != 0 and int(s) == s.handle
    assert "cpu" in repr(s)
    with pytest.raises(IndexError) as ei:
        cpu.stream(device=1)
    assert isinstance(ei.value, eagle.EagleError)
    from eagle.stream import Stream
    with pytest.raises(eagle.Unsupported, match="flags"):
        Stream(cpu, flags=0x80)


def test_two_streams_run_independently(cpu):
    a, b = cpu.stream(non_blocking=True), cpu.stream(non_blocking=True)
    gate = threading.Event()
    a.host_func(lambda: gate.wait(TIMEOUT))
    ran = []
    b.host_func(lambda: ran.append(1))
    b.synchronize()  # b does not wait for a's blocked work
    assert ran == [1] and not gate.is_set()
    gate.set()
    a.synchronize()


# -- fence ---------------------------------------------------------------------------------------

def test_fence_orders_consumer_after_producer_without_blocking(cpu):
    p, c = cpu.stream(non_blocking=True), cpu.stream(non_blocking=True)
    gate = threading.Event()
    order = []
    p.host_func(lambda: gate.wait(TIMEOUT))
    p.host_func(lambda: order.append("producer"))
    before = cpu.event_pool_created
    t0 = time.perf_counter()
    cpu.fence(p, c)
    eagle.fence(p.handle, c.handle, backend=cpu)  # the module-level form, with raw codes
    assert time.perf_counter() - t0 < 1.0  # returned while the producer is held
    c.host_func(lambda: order.append("consumer"))
    time.sleep(0.05)
    assert order == []  # the consumer waits in its queue, not the host
    gate.set()
    c.synchronize()
    assert order == ["producer", "consumer"]
    assert cpu.event_pool_created >= max(before, 1)


def test_fence_pool_reuses_fence_objects(cpu):
    p, c = cpu.stream(non_blocking=True), cpu.stream(non_blocking=True)
    gate = threading.Event()
    for _ in range(3):  # warm the pool
        p.host_func(lambda: gate.wait(TIMEOUT))
        cpu.fence(p, c)
        gate.set()
        c.synchronize()
        p.synchronize()
        gate.clear()
    created = cpu.event_pool_created
    for _ in range(20):
        p.host_func(lambda: None)
        cpu.fence(p, c)
        c.synchronize()
    assert cpu.event_pool_created - created <= 2


def test_fence_edge_cases(cpu):
    s = cpu.stream()
    cpu.fence(None, s)  # no producer given: nothing to order
    cpu.fence(s, None)
    cpu.fence(s, s)
    cpu.fence(0, s)  # the default stream is code 0
    with pytest.raises(eagle.InteropError, match="device type"):
        cpu.fence(s, s, device_type=2)
    with pytest.raises(eagle.InteropError):
        cpu.fence(12345678, s)
    assert eagle.STREAM_NONE == -(1 << 63)


# -- copies ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("direction", ["h2d", "d2h", "d2d", "h2h", None])
def test_copy_every_direction(cpu, direction):
    src = np.arange(1000, dtype=np.float64)
    dst = np.zeros(1002)
    s = cpu.stream()
    if direction is None:
        cpu.copy(dst[:1000], src, stream=s)
    else:
        eagle.copy(dst.ctypes.data, src.ctypes.data, src.nbytes, stream=s, backend=cpu,
                   direction=direction)
    s.synchronize()
    np.testing.assert_array_equal(dst[:1000], src)
    assert (dst[1000:] == 0).all()  # nothing past the copy


def test_copy_is_stream_ordered(cpu):
    s = cpu.stream()
    x, y = np.zeros(10), np.zeros(10)
    s.run(kaddr("add1"), [x], 10)
    s.copy(y, x)
    s.run(kaddr("add1"), [x], 10)
    s.synchronize()
    assert (y == 1).all() and (x == 2).all()


def test_copy_size_mismatch_is_refused(cpu):
    with pytest.raises(ValueError, match="dst holds 80 bytes"):
        cpu.copy(np.zeros(10), np.zeros(11))
    with pytest.raises(ValueError, match="src holds"):
        cpu.copy(np.zeros(10), np.zeros(5), 80)
    with pytest.raises(ValueError):
        cpu.copy(np.zeros(10), np.zeros(10), -1)
    with pytest.raises(ValueError, match="direction"):
        cpu.copy(np.zeros(1).ctypes.data, np.zeros(1).ctypes.data, 8)
    with pytest.raises(ValueError, match="direction"):
        cpu.copy(np.zeros(1).ctypes.data, np.zeros(1).ctypes.data, 8, direction="sideways")
    with pytest.raises(ValueError, match="dst is 0"):
        cpu.copy(0, np.zeros(1).ctypes.data, 8, direction="h2h")


# -- pinned memory -----------------------------------------------------------------------------------

def _pinned_owner(arr):
    from eagle.memory import PinnedMemory
    base = arr
    while not isinstance(base, PinnedMemory):
        base = base.base
    return base


def test_pinned_is_usable_and_frees_itself(cpu):
    p = cpu.pinned((4, 8), "float32")
    assert p.shape == (4, 8) and p.dtype == np.float32
    p[:] = 7
    out = np.zeros((4, 8), np.float32)
    s = cpu.stream()
    s.copy(out, p)
    s.synchronize()
    assert (out == 7).all()
    owner = weakref.ref(_pinned_owner(p))
    fin = owner()._finalizer
    assert fin.alive
    view = p[1:]
    del p
    gc.collect()
    assert owner() is not None  # a view still holds it
    del view
    gc.collect()
    assert owner() is None and not fin.alive


def test_pinned_shapes(cpu):
    assert eagle.pinned(0, backend=cpu).shape == (0,)
    assert eagle.pinned(3, "uint8", backend=cpu).nbytes == 3
    with pytest.raises(ValueError):
        cpu.pinned((-1,))


# -- host functions ---------------------------------------------------------------------------------

def test_host_func_exception_is_reraised_at_synchronize(cpu):
    s = cpu.stream()
    ran = []

    def bad():
        raise KeyError("boom")
    s.host_func(bad)
    s.host_func(lambda: ran.append(1))  # later work still runs
    with pytest.raises(KeyError, match="boom"):
        s.synchronize()
    assert ran == [1]
    s.synchronize()  # raised once


def test_host_func_refuses_non_callables(cpu):
    with pytest.raises(TypeError):
        cpu.host_func(42)


def test_host_func_runs_on_a_backend_thread(cpu):
    s = cpu.stream()
    who = []
    eagle.host_func(lambda: who.append(threading.get_ident()), stream=s, backend=cpu)
    s.synchronize()
    assert who and who[0] != threading.get_ident()


# -- device -------------------------------------------------------------------------------------------

def test_device_props_are_sane(cpu):
    p = cpu.device_props(0)
    assert isinstance(p, eagle.DeviceProps) and p.device == 0
    assert p.name and p.warp_size == 1
    ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert 1 <= p.sm_count <= max(os.cpu_count(), ncpu)
    assert p.shared_mem_per_block >= 0 and p.shared_mem_per_sm >= 0 and p.clock_rate_khz >= 0
    with pytest.raises(AttributeError):
        p.name = "x"  # frozen
    assert cpu.device_props(-1) == cpu.device_props(0) or cpu.device_props(-1).device in (-1, 0)
    with pytest.raises(IndexError):
        cpu.device_props(1)


def test_backend_reports_itself(cpu):
    assert cpu.kind == "cpu" and cpu.version[0] == 1
    assert cpu.device_types == (1,)
    assert cpu.build_info["backend_kind"] == "cpu"
    cpu.probe()
    assert cpu.is_usable()
    assert all(v == "" for v in cpu.unavailable.values())
    assert cpu.groups == {"stream", "capturer", "captured", "fork", "conditional", "attribution",
                          "graph", "launcher", "exec", "device", "interop", "filtering"}
