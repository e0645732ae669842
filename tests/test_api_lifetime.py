"""Lifetime of eagle's handle owners on the cpu backend: finalizers that keep the library loaded,
idempotent close, use after close or after a consuming call, thread affinity, context managers."""
import gc
import os
import shutil
import threading
import weakref

import numpy as np
import pytest

import eagle
from eagle._backend import Backend
from test_api_kernels import kaddr


def _in_thread(fn):
    """Run fn() on another thread; return the exception it raised (or None)."""
    box = []

    def target():
        try:
            fn()
        except BaseException as e:  # noqa: BLE001
            box.append(e)
        else:
            box.append(None)
    t = threading.Thread(target=target)
    t.start()
    t.join(10)
    assert not t.is_alive()
    return box[0]


def _private_backend(cpu, tmp_path):
    """A Backend opened from a private copy of the cpu library (its own dlopen), not cached."""
    path = os.path.join(str(tmp_path), "libeagle_cpu_private.so")
    shutil.copy(cpu.path, path)
    return Backend(path, "cpu", f"'{path}'")


def test_stream_outlives_every_other_reference_to_its_backend(cpu, tmp_path):
    b = _private_backend(cpu, tmp_path)
    s = b.stream()
    wb = weakref.ref(b)
    del b
    gc.collect()
    x = np.zeros(1000)
    ran = []
    s.run(kaddr("add1"), [x], 1000)
    s.host_func(lambda: ran.append(1))
    s.synchronize()
    assert (x == 1).all() and ran == [1]
    assert wb() is not None  # the stream keeps its backend (and the library) alive
    del s
    gc.collect()
    assert wb() is None  # ... and nothing else does


def test_finalizer_releases_the_handle(cpu):
    s = cpu.stream()
    raw = s.handle
    fin = s._finalizer
    del s
    gc.collect()
    assert not fin.alive
    with pytest.raises(ValueError, match="not a live stream"):
        cpu.run(kaddr("add1"), [np.zeros(1)], 1, stream=raw)


def _owners(cpu):
    """One live owner of every kind, with the call that uses it."""
    s = cpu.stream()
    t = cpu.stream()
    cap = cpu.capture(t)
    cap.begin()
    cnt = np.ones(1, np.uint32)
    cond = cpu.if_(t, cnt)
    cond.begin()
    cond.end()
    captured = cap.end()
    with cpu.capture(s) as c2:
        s.host_func(lambda: None)
    g = cpu.graph_from_captured(c2.captured)
    launcher = g.launcher()
    fork = cpu.fork(s, 2)
    return [
        (s, s.synchronize), (cpu.capture(s), lambda c=None: None), (captured, lambda: captured.is_valid),
        (fork, lambda: fork.forked), (cond, lambda: cond.is_loop), (g, lambda: g.last_node),
        (launcher, launcher.synchronize),
    ], cnt


def test_close_is_idempotent_and_use_after_close_raises(cpu):
    owners, _keep = _owners(cpu)
    uses = {
        "Stream": lambda o: o.synchronize(), "Capture": lambda o: o.begin(),
        "Captured": lambda o: o.is_valid, "Fork": lambda o: o.fork(),
        "Conditional": lambda o: o.is_loop, "GraphBuilder": lambda o: o.launcher(),
        "Launcher": lambda o: o.launch(),
    }
    for owner, use in owners:
        use()
        assert not owner.closed
        owner.close()
        owner.close()
        assert owner.closed
        with pytest.raises(eagle.HandleError, match="is closed"):
            uses[type(owner).__name__](owner)
    assert set(uses) == {type(o).__name__ for o, _ in owners}


def test_use_from_another_thread_raises(cpu):
    s = cpu.stream()
    x = np.zeros(1)
    calls = [s.synchronize, lambda: s.handle, s.close, lambda: s.run(kaddr("add1"), [x], 1),
             lambda: cpu.run(kaddr("add1"), [x], 1, stream=s), lambda: cpu.capture(s),
             lambda: cpu.host_func(lambda: None, stream=s)]
    for call in calls:
        e = _in_thread(call)
        assert isinstance(e, eagle.HandleError), (call, e)
        assert "thread" in str(e)
    with cpu.capture(s) as cap:
        cpu.run(kaddr("add1"), [x], 1, stream=s)
        assert isinstance(_in_thread(cap.end), eagle.HandleError)
    launcher = cpu.graph_from_captured(cap.captured).launcher()
    fork = cpu.fork(s, 1)
    for call in (launcher.launch, launcher.synchronize, fork.fork, lambda: fork.branches,
                 lambda: launcher.set_logical_size(1)):
        assert isinstance(_in_thread(call), eagle.HandleError)
    s.synchronize()  # still fine on its own thread
    assert x[0] == 0


def test_handles_made_on_another_thread_belong_to_it(cpu):
    box = []
    assert _in_thread(lambda: box.append(cpu.stream())) is None
    with pytest.raises(eagle.HandleError, match="thread"):
        box[0].synchronize()


def test_consumed_captured_names_the_consuming_call(cpu):
    s = cpu.stream()
    with cpu.capture(s) as cap:
        s.host_func(lambda: None)
    cpu.graph_from_captured(cap.captured)
    with pytest.raises(eagle.HandleError, match="consumed by graph_from_captured"):
        cap.captured.is_valid
    with pytest.raises(eagle.HandleError, match="consumed by graph_from_captured"):
        cpu.graph_from_captured(cap.captured)
    cap.captured.close()  # closing a consumed handle is a no-op


def test_a_refused_consuming_call_leaves_the_handle_owned(cpu):
    s = cpu.stream()
    with cpu.capture(s) as cap:
        pass
    with pytest.raises(ValueError):
        cpu.graph_from_captured(cap.captured)
    assert not cap.captured.closed and cap.captured.is_valid is False
    cap.captured.close()


def test_context_managers_close(cpu):
    with cpu.stream() as s:
        with cpu.capture(s) as cap:
            s.host_func(lambda: None)
        assert cap.closed and cap.captured is not None
        with cpu.graph_from_captured(cap.captured) as g:
            with g.launcher() as launcher:
                launcher.set_stream(s)
                launcher.launch()
                launcher.synchronize()
            assert launcher.closed
        assert g.closed
        with cpu.fork(s, 2) as f:
            assert f.forked
        assert f.closed
    assert s.closed
    with pytest.raises(eagle.HandleError):
        with s:
            pass


def test_capture_context_abandons_on_exception(cpu):
    s = cpu.stream()
    with pytest.raises(KeyError):
        with cpu.capture(s) as cap:
            s.host_func(lambda: None)
            raise KeyError("inside")
    assert cap.closed and cap.captured is None
    x = np.zeros(1)
    s.run(kaddr("add1"), [x], 1)  # the stream runs eagerly again
    s.synchronize()
    assert x[0] == 1


def test_a_capture_that_raises_releases_the_conditionals_opened_in_it_at_once(cpu):
    """A body left open by an exception does not wait for the garbage collector: on the GPU a
    capturing stream blocks device-wide work in every library until it is released."""
    s = cpu.stream()
    count = np.ones(1, np.uint32)
    gc.disable()
    try:
        with pytest.raises(KeyError):
            with cpu.capture(s):
                outer = cpu.if_(s, count)
                body = outer.begin()
                inner = cpu.while_(body, count, np.zeros(2, np.uint32), loop_cap=4)
                inner.begin()
                raise KeyError("inside a body")
        assert outer.closed and inner.closed  # released now, innermost first, with no gc pass
    finally:
        gc.enable()
    x = np.zeros(1)
    s.run(kaddr("add1"), [x], 1)  # the origin runs eagerly again
    s.synchronize()
    assert x[0] == 1


def test_a_capture_ended_with_a_body_open_raises_and_leaves_nothing_capturing(cpu):
    s = cpu.stream()
    count = np.ones(1, np.uint32)
    with pytest.raises(eagle.EagleError):
        with cpu.capture(s):
            c = cpu.if_(s, count)
            c.begin()  # never ended: end() of the capture refuses it
    assert c.closed
    x = np.zeros(1)
    s.run(kaddr("add1"), [x], 1)
    s.synchronize()
    assert x[0] == 1


def test_borrowed_stream_ref_does_not_release(cpu):
    s = cpu.stream()
    ref = eagle.StreamRef.from_handle(cpu, s.handle)
    ref.close()
    ref.close()
    with pytest.raises(eagle.HandleError):
        ref.handle
    s.synchronize()
    x = np.zeros(1)
    s.run(kaddr("add1"), [x], 1)
    s.synchronize()
    assert x[0] == 1


def test_launcher_outlives_graph_and_captured_keepalive(cpu):
    s = cpu.stream()
    hits = []
    with cpu.capture(s) as cap:
        s.host_func(lambda: hits.append(1))  # the Python callable lives with the launcher
    g = cpu.graph_from_captured(cap.captured)
    launcher = g.launcher()
    launcher.set_stream(s)
    del g, cap
    gc.collect()
    launcher.launch(2)
    launcher.synchronize()
    assert hits == [1, 1]


def test_stream_of_another_backend_is_refused(cpu, tmp_path):
    other = _private_backend(cpu, tmp_path)
    s = other.stream()
    with pytest.raises(ValueError, match="belongs to"):
        cpu.run(kaddr("add1"), [np.zeros(1)], 1, stream=s)
    s.close()


def test_a_launcher_released_while_its_stream_is_captured_leaves_the_capture_intact():
    """A launcher released (as by the garbage collector) in the middle of another recording on
    its own stream must not break that recording (on cuda its release waited for the capturing
    stream, which invalidated the capture)."""
    cpu = eagle.backend("cpu")
    s = cpu.stream()
    out = np.zeros(4)
    src = np.arange(4.0)
    with cpu.capture(s) as cap:
        cpu.copy(out, src, src.nbytes, stream=s)
    g = cpu.graph_from_captured(cap.captured)
    g.set_stream(s)
    old = g.launcher()
    old.launch(2)
    other = np.zeros(4)
    with cpu.capture(s) as cap2:
        cpu.copy(other, src, src.nbytes, stream=s)
        old.close()
        cpu.copy(other[2:], src[:2], 2 * src.itemsize, stream=s)
    g2 = cpu.graph_from_captured(cap2.captured)
    g2.set_stream(s)
    new = g2.launcher()
    new.launch()
    new.synchronize()
    assert list(out) == [0.0, 1.0, 2.0, 3.0] and list(other) == [0.0, 1.0, 0.0, 1.0]
