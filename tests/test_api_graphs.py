"""Capture, replay, fork, conditionals (IF / WHILE / SWITCH), attribution, graph builder and
launcher settings on the cpu backend, through eagle's Python API."""
import threading

import numpy as np
import pytest

import eagle
from test_api_kernels import kaddr

TIMEOUT = 10.0


def _pipeline(b, s, x, y, log):
    b.run(kaddr("add1"), [x], x.size, stream=s)
    b.run(kaddr("mul2"), [x], x.size, stream=s)
    b.run(kaddr("addv"), [x, 0.5], x.size, base=3, count=x.size - 3, stream=s)
    s.copy(y, x)
    s.host_func(lambda: log.append(float(y.sum())))


def _replayable(b, s, record):
    """Capture record(stream) on s and return a launcher on s."""
    with b.capture(s) as cap:
        record(s)
    g = b.graph_from_captured(cap.captured)
    g.set_stream(s)
    return g.launcher()


def test_capture_records_instead_of_running_and_replay_equals_eager(cpu):
    n = 50_000
    s = cpu.stream()
    xe, ye, loge = np.zeros(n), np.zeros(n), []
    xc, yc, logc = np.zeros(n), np.zeros(n), []
    for _ in range(3):
        _pipeline(cpu, s, xe, ye, loge)
    s.synchronize()
    launcher = _replayable(cpu, s, lambda st: _pipeline(cpu, st, xc, yc, logc))
    s.synchronize()
    assert (xc == 0).all() and logc == []  # recorded, not run
    launcher.launch(3)
    launcher.synchronize()
    np.testing.assert_array_equal(xc, xe)
    np.testing.assert_array_equal(yc, ye)
    assert logc == loge


def test_host_node_runs_at_every_replay(cpu):
    s = cpu.stream()
    hits = []
    launcher = _replayable(cpu, s, lambda st: st.host_func(lambda: hits.append(1)))
    assert hits == []
    for k in range(1, 6):
        launcher.launch()
        launcher.synchronize()
        assert len(hits) == k


def test_host_node_exception_is_reraised_at_launcher_synchronize(cpu):
    s = cpu.stream()

    def bad():
        raise RuntimeError("host node failed")
    launcher = _replayable(cpu, s, lambda st: st.host_func(bad))
    launcher.launch()
    with pytest.raises(RuntimeError, match="host node failed"):
        launcher.synchronize()


def test_captured_validity_and_empty_capture(cpu):
    s = cpu.stream()
    with cpu.capture(s) as cap:
        pass
    assert cap.captured.is_valid is False
    with pytest.raises(ValueError, match="empty"):
        cpu.graph_from_captured(cap.captured)
    with cpu.capture(s) as cap2:
        s.host_func(lambda: None)
    assert cap2.captured.is_valid is True


def test_capture_misuse_is_refused(cpu):
    s = cpu.stream()
    c = cpu.capture(s)
    with pytest.raises(ValueError, match="not begun"):
        c.end()
    c.begin()
    with pytest.raises(ValueError, match="already"):
        c.begin()
    with pytest.raises(ValueError, match="already being captured"):
        cpu.capture(s).begin()
    with pytest.raises(ValueError, match="being captured"):
        s.synchronize()
    with pytest.raises(ValueError, match="broken"):
        c.end()  # synchronising the capturing stream broke the capture
    c.close()
    s.synchronize()  # the stream works again


# -- fork ---------------------------------------------------------------------------------------

def test_fork_branches_really_run_concurrently_in_a_replay(cpu):
    s = cpu.stream()
    ev = [threading.Event(), threading.Event()]
    met = []

    def reset():
        for e in ev:
            e.clear()

    def branch(i):
        def fn():
            ev[i].set()
            met.append(ev[1 - i].wait(TIMEOUT))  # only true when the other branch runs meanwhile
        return fn

    def record(st):
        st.host_func(reset)
        with cpu.fork(st, 2) as f:
            assert f.forked and len(f) == 2
            for i, br in enumerate(f.branches):
                br.host_func(branch(i))
        st.host_func(lambda: met.append("joined"))

    launcher = _replayable(cpu, s, record)
    for k in range(3):
        launcher.launch()
        launcher.synchronize()
        assert met[-3:] == [True, True, "joined"], met
    assert len(met) == 9


def test_fork_eagerly_orders_branches_between_origin_work_and_join(cpu):
    s = cpu.stream(non_blocking=True)
    x = np.zeros(1)
    seen = []
    s.run(kaddr("add1"), [x], 1)
    f = cpu.fork(s, 3)
    f.fork()
    assert f.forked
    for br in f.branches:
        br.host_func(lambda: seen.append(float(x[0])))
        br.run(kaddr("inc_u32"), [np.zeros(1, np.uint32)], 1)
    f.join()
    assert not f.forked
    s.host_func(lambda: seen.append(len(seen)))
    s.synchronize()
    assert seen == [1.0, 1.0, 1.0, 3]
    assert f.origin.handle == s.handle
    f.close()


def test_fork_misuse(cpu):
    s = cpu.stream()
    f = cpu.fork(s, 2)
    with pytest.raises(ValueError, match="not forked"):
        f.join()
    f.fork()
    with pytest.raises(ValueError, match="already forked"):
        f.fork()
    with pytest.raises(IndexError):
        f.branch(2)
    f.join()
    f.close()
    with pytest.raises(ValueError):
        cpu.fork(s, 0)


# -- conditionals ----------------------------------------------------------------------------------

def test_if_decided_at_every_replay_without_rebuild(cpu):
    s = cpu.stream()
    count, baseline = np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    x = np.zeros(4)

    def record(st):
        c = cpu.if_(st, count, baseline)
        assert c.is_loop is False
        body = c.begin()
        assert c.body_stream.handle == body.handle
        cpu.run(kaddr("add1"), [x], 4, stream=body)
        c.end()
        c.close()
    launcher = _replayable(cpu, s, record)
    expect = 0
    for cnt, base in [(0, 0), (1, 0), (5, 5), (7, 2), (0, 3), (0, 0)]:
        count[0], baseline[0] = cnt, base
        launcher.launch()
        launcher.synchronize()
        expect += cnt != base
        assert (x == expect).all(), (cnt, base)


def test_while_cell_and_loop_cap(cpu):
    s = cpu.stream()
    count = np.zeros(1, np.uint32)
    cell = np.array([123, 456], np.uint32)
    x = np.zeros(1)

    def record(st):
        w = cpu.while_(st, count, cell, loop_cap=4)
        assert w.is_loop is True
        with w as body:
            cpu.run(kaddr("dec_u32"), [count], 1, stream=body)
            cpu.run(kaddr("add1"), [x], 1, stream=body)
    launcher = _replayable(cpu, s, record)
    for start, ran, left in [(3, 3, 0), (10, 4, 6), (0, 0, 0), (4, 4, 0)]:
        count[0] = start
        launcher.launch()
        launcher.synchronize()
        assert cell.tolist() == [4 - ran, ran] and count[0] == left
    assert x[0] == 3 + 4 + 0 + 4
    count[0] = 6  # loop_cap bounds each replay; the guard carries over
    launcher.launch(2)
    launcher.synchronize()
    assert count[0] == 0 and cell.tolist() == [2, 2]


def test_while_with_baseline(cpu):
    s = cpu.stream()
    count, baseline, cell = np.array([9], np.uint32), np.array([4], np.uint32), np.zeros(2, np.uint32)

    def record(st):
        with cpu.while_(st, count, cell, loop_cap=100, baseline=baseline) as body:
            cpu.run(kaddr("dec_u32"), [count], 1, stream=body)
    launcher = _replayable(cpu, s, record)
    launcher.launch()
    launcher.synchronize()
    assert count[0] == 4 and cell.tolist() == [95, 5]


def test_while_needs_loop_cap(cpu):
    s = cpu.stream()
    with cpu.capture(s):
        with pytest.raises(ValueError, match="loop_cap"):
            cpu.while_(s, np.zeros(1, np.uint32), np.zeros(2, np.uint32), loop_cap=0)
        s.host_func(lambda: None)


def test_switch_decided_at_every_replay(cpu):
    s = cpu.stream()
    sel = np.zeros(1, np.uint32)
    x = np.zeros(2)

    def record(st):
        sw = cpu.switch(st, sel, 3)
        for case in range(3):
            body = sw.begin() if case == 0 else sw.begin_case(case)
            cpu.run(kaddr("addv"), [x, 10.0 ** case], 2, stream=body)
        with pytest.raises(ValueError, match="already opened"):
            sw.begin_case(1)
        with pytest.raises(IndexError):
            sw.begin_case(3)
        sw.end()
        sw.close()
    launcher = _replayable(cpu, s, record)
    total = 0.0
    for v in [2, 0, 7, 1, 1, 3]:
        sel[0] = v
        launcher.launch()
        launcher.synchronize()
        total += 10.0 ** v if v < 3 else 0.0
        assert (x == total).all(), v


def test_switch_case_never_opened_is_empty(cpu):
    s = cpu.stream()
    sel = np.array([1], np.uint32)
    x = np.zeros(1)

    def record(st):
        sw = cpu.switch(st, sel, 4)
        body = sw.begin_case(2)
        cpu.run(kaddr("add1"), [x], 1, stream=body)
        sw.end()
        sw.close()
    launcher = _replayable(cpu, s, record)
    for v, expect in [(1, 0), (2, 1), (0, 1), (3, 1), (2, 2)]:
        sel[0] = v
        launcher.launch()
        launcher.synchronize()
        assert x[0] == expect


def test_nested_conditionals(cpu):
    """WHILE { count -= 1; IF (count != 2) { x += 1 }; SWITCH (sel) { 0: y += 1, 1: y += 100 } }"""
    s = cpu.stream()
    count, two, cell = np.zeros(1, np.uint32), np.array([2], np.uint32), np.zeros(2, np.uint32)
    sel = np.zeros(1, np.uint32)
    x, y = np.zeros(1), np.zeros(1)

    def record(st):
        with cpu.while_(st, count, cell, loop_cap=50) as body:
            cpu.run(kaddr("dec_u32"), [count], 1, stream=body)
            with cpu.if_(body, count, two) as inner:
                cpu.run(kaddr("add1"), [x], 1, stream=inner)
            sw = cpu.switch(body, sel, 2)
            cpu.run(kaddr("add1"), [y], 1, stream=sw.begin())
            cpu.run(kaddr("addv"), [y, 100.0], 1, stream=sw.begin_case(1))
            sw.end()
            sw.close()
    launcher = _replayable(cpu, s, record)
    assert launcher.kernel_node_count == 4
    count[0] = 4  # count 3, 2, 1, 0 inside: IF runs at 3, 1, 0
    launcher.launch()
    launcher.synchronize()
    assert x[0] == 3 and y[0] == 4 and cell.tolist() == [46, 4]
    count[0], sel[0] = 2, 1  # count 1, 0: IF runs twice; case 1 twice
    launcher.launch()
    launcher.synchronize()
    assert x[0] == 5 and y[0] == 204 and cell[1] == 2


def test_conditional_outside_capture_is_refused(cpu):
    s = cpu.stream()
    with pytest.raises(ValueError, match="not being captured"):
        cpu.if_(s, np.zeros(1, np.uint32))
    with pytest.raises(ValueError, match="bytes"):
        cpu.if_(s, np.zeros(1, np.uint8))


# -- attribution, toggling, logical size ------------------------------------------------------------

def test_snapshot_nodes_and_toggling(cpu):
    s = cpu.stream()
    x = np.zeros(1)
    cnt = np.ones(1, np.uint32)
    with cpu.capture(s) as cap:
        assert cpu.snapshot_nodes(s) == []
        cpu.run(kaddr("add1"), [x], 1, stream=s)
        cpu.run(kaddr("addv"), [x, 10.0], 1, stream=s)
        first = cpu.snapshot_nodes(s)
        with cpu.if_(s, cnt) as body:
            cpu.run(kaddr("addv"), [x, 100.0], 1, stream=body)
            inner = cpu.snapshot_nodes(body)
        nodes = cpu.snapshot_nodes(s)
    assert len(first) == 2 and nodes[:2] == first and len(nodes) == 3 and len(inner) == 1
    assert [cpu.is_node_toggleable(n) for n in nodes] == [True, True, False]
    assert cpu.is_node_toggleable(inner[0]) is True
    g = cpu.graph_from_captured(cap.captured)
    g.set_stream(s)
    launcher = g.launcher()
    launcher.launch()
    launcher.synchronize()
    assert x[0] == 111
    launcher.set_node_enabled(nodes[1], False)
    launcher.set_node_enabled(inner[0], False)
    launcher.launch()
    launcher.synchronize()
    assert x[0] == 112
    launcher.set_node_enabled(nodes[1], True)
    launcher.launch()
    launcher.synchronize()
    assert x[0] == 123
    with pytest.raises(eagle.Unsupported):
        launcher.set_node_enabled(nodes[2], False)
    with pytest.raises(ValueError, match="not a node"):
        launcher.set_node_enabled(12345, False)
    with pytest.raises(ValueError):
        cpu.is_node_toggleable(12345)
    with pytest.raises(ValueError, match="not being captured"):
        cpu.snapshot_nodes(s)


def test_set_logical_size_and_kernel_node_count(cpu):
    s = cpu.stream()
    n = 100
    x = np.zeros(n)
    part = np.zeros(n)

    def record(st):
        cpu.run(kaddr("add1"), [x], n, stream=st)                              # a whole run
        cpu.run(kaddr("add1"), [part], n, base=10, count=20, stream=st)        # a partition
    launcher = _replayable(cpu, s, record)
    assert launcher.kernel_node_count == 2
    launcher.set_logical_size(7)
    launcher.launch()
    launcher.synchronize()
    assert (x[:7] == 1).all() and (x[7:] == 0).all()
    assert (part[10:30] == 1).all() and part.sum() == 20  # partitions keep their recorded size
    launcher.set_logical_size(-1)
    launcher.launch()
    launcher.synchronize()
    assert (x[:7] == 2).all() and (x[7:] == 1).all()
    with pytest.raises(ValueError):
        launcher.set_logical_size(2 ** 31)


def test_graph_builder_node_by_node(cpu):
    s = cpu.stream()
    x = np.zeros(3)
    g = cpu.graph()
    assert g.last_node == -1
    with pytest.raises(ValueError, match="empty"):
        g.launcher()
    for kernel in ("add1", "mul2"):
        with cpu.capture(s) as cap:
            cpu.run(kaddr(kernel), [x], 3, stream=s)
        g.add(cap.captured)
        with pytest.raises(eagle.HandleError, match="consumed by GraphBuilder.add"):
            g.add(cap.captured)
    assert g.last_node == 1
    g.set_stream(s)
    launcher = g.launcher()
    g.close()  # launchers outlive their graph
    launcher.launch(2)
    launcher.synchronize()
    assert (x == 6).all()  # ((0 + 1) * 2 + 1) * 2: nodes in order


def test_launcher_stream_and_launch_into_a_capture(cpu):
    s, t = cpu.stream(), cpu.stream()
    x = np.zeros(1)
    inner = _replayable(cpu, s, lambda st: cpu.run(kaddr("add1"), [x], 1, stream=st))
    inner.set_stream(t)
    with cpu.capture(t) as cap:
        inner.launch(2)  # two child-graph nodes
    outer = cpu.graph_from_captured(cap.captured).launcher()
    outer.set_stream(t)
    assert outer.kernel_node_count == 2
    outer.launch()
    outer.synchronize()
    assert x[0] == 2
    inner.set_stream(None)  # the default stream
    inner.launch()
    inner.synchronize()
    assert x[0] == 3
