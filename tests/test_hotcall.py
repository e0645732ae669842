"""eagle's hot call path (eagle/_hotcall/__init__.py): Stream.synchronize and Launcher.launch/.synchronize
are bound calls, compiled (eagle._hotcall.BoundCall) or, without the extension, a closure calling
through cffi (eagle._hotcall.py_bound_call). Both keep one contract; every test here runs against each of them."""
import gc
import os
import threading
import weakref

import pytest

import eagle
from eagle import _hotcall
from eagle._loader import TRACE_COUNTS


@pytest.fixture(params=["python", "compiled"], ids=["py_bound_call", "compiled_BoundCall"])
def kind(request, monkeypatch):
    """Objects made inside the test get this kind of bound call."""
    if request.param == "compiled":
        if _hotcall.CompiledBoundCall is None:
            pytest.skip("eagle._hotcall was not built (no CPython headers at build time)")
    else:
        monkeypatch.setattr(_hotcall, "CompiledBoundCall", None)
    return request.param


def _counting_launcher(cpu, s, ran):
    with cpu.capture(s) as cap:
        s.host_func(lambda: ran.append(1))
    g = cpu.graph_from_captured(cap.captured)
    g.set_stream(s)
    return g.launcher()


def test_objects_get_the_chosen_kind(cpu, kind):
    s = cpu.stream()
    launcher = _counting_launcher(cpu, s, [])
    for bound in (s.synchronize, launcher.launch, launcher.synchronize):
        assert _hotcall.is_compiled(bound) == (kind == "compiled")


def test_launch_n_replays_then_synchronize(cpu, kind):
    s = cpu.stream()
    ran = []
    launcher = _counting_launcher(cpu, s, ran)
    assert launcher.launch() is None
    launcher.launch(4)
    launcher.launch(0)
    assert launcher.synchronize() is None
    assert len(ran) == 5
    assert s.synchronize() is None


def test_bad_arguments_raise_eagle_errors_naming_them(cpu, kind):
    s = cpu.stream()
    launcher = _counting_launcher(cpu, s, [])
    with pytest.raises(eagle.EagleError, match=r"launch\(n\): n must be >= 0, got -1") as e:
        launcher.launch(-1)
    assert isinstance(e.value, ValueError)
    with pytest.raises(eagle.EagleError, match="n must be an int, got float") as e:
        launcher.launch(2.5)
    assert isinstance(e.value, TypeError)
    with pytest.raises(TypeError):
        launcher.launch(n=2)
    with pytest.raises(TypeError, match="takes no arguments"):
        launcher.launch(1, 2)
    with pytest.raises(TypeError, match="takes no arguments"):
        s.synchronize(1)
    with pytest.raises(TypeError, match="takes no arguments"):
        launcher.synchronize(1)
    launcher.launch(1)  # still usable
    launcher.synchronize()


def test_closed_and_foreign_thread_are_refused_without_calling(cpu, kind):
    s = cpu.stream()
    ran = []
    launcher = _counting_launcher(cpu, s, ran)
    errors = []

    def other():
        for f in (s.synchronize, launcher.launch, lambda: launcher.launch(3), launcher.synchronize):
            try:
                f()
            except eagle.HandleError as e:
                errors.append(str(e))
    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert len(errors) == 4 and all("thread-affine" in e for e in errors)
    s.synchronize()
    assert ran == []  # nothing reached the backend
    launch = launcher.launch
    launcher.close()
    s.close()
    for f in (s.synchronize, launcher.launch, lambda: launcher.launch(2), launcher.synchronize, launch):
        with pytest.raises(eagle.HandleError, match="is closed"):
            f()


def test_a_bound_call_kept_after_its_object_was_collected_still_works(cpu, kind):
    """``b.stream().synchronize()``: the Stream object goes at once, but its bound call keeps the
    handle alive (through the handle's keeper), so the call works instead of failing."""
    cpu.stream().synchronize()
    s = cpu.stream()
    sync = s.synchronize
    del s
    gc.collect()
    sync()
    sync()


def test_the_handle_is_released_when_the_last_holder_goes(kind):
    """The handle goes with the last of the object and its bound calls, not before, not never."""
    b = eagle.backend("cpu", trace=True)
    before = TRACE_COUNTS["eagle_backend_stream_release"]
    s = b.stream()
    alive = weakref.ref(s)
    sync = s.synchronize
    del s
    gc.collect()
    assert alive() is None
    assert TRACE_COUNTS["eagle_backend_stream_release"] == before  # held by `sync`
    sync()
    del sync
    gc.collect()
    assert TRACE_COUNTS["eagle_backend_stream_release"] == before + 1


def test_the_handle_is_held_while_its_bound_call_runs(cpu, kind):
    """The last reference to a stream goes (in a host function) while its synchronize waits: the
    handle stays alive under the call (the bound call holds it); the stream object may go."""
    s = cpu.stream()
    holder = [s]
    sync = s.synchronize
    del s
    seen = []

    def drop():
        holder.clear()
        gc.collect()
        seen.append(True)
    holder[0].host_func(drop)
    sync()
    assert seen == [True]
    sync()  # still a live handle: the bound call holds it


def test_a_closed_objects_bound_call_is_refused(cpu, kind):
    s = cpu.stream()
    sync = s.synchronize
    s.close()
    with pytest.raises(eagle.HandleError, match="closed"):
        sync()


def test_host_function_errors_still_surface(cpu, kind):
    s = cpu.stream()

    def bad():
        raise KeyError("from the host function")
    s.host_func(bad)
    with pytest.raises(KeyError, match="from the host function"):
        s.synchronize()
    s.synchronize()  # raised once


def test_synchronize_releases_the_gil_for_host_functions(cpu, kind):
    """A host function needs the GIL on the backend's thread while the caller waits in synchronize."""
    s = cpu.stream()
    who = []
    for _ in range(3):
        s.host_func(lambda: who.append(threading.get_ident()))
    s.synchronize()
    assert len(who) == 3 and threading.get_ident() not in who


def test_a_failing_status_is_raised_with_the_backends_message(cpu, kind):
    """A launcher whose stream was released: the backend refuses the launch, eagle raises its words."""
    s = cpu.stream()
    other = cpu.stream()
    launcher = _counting_launcher(cpu, s, [])
    launcher.set_stream(other)
    other.close()
    with pytest.raises(eagle.EagleError, match="eagle_backend_launcher_launch"):
        launcher.launch()
    with pytest.raises(eagle.EagleError, match="eagle_backend_launcher_launch"):
        launcher.launch(3)


def test_a_traced_backend_counts_hot_calls(cpu):
    traced = eagle.backend(cpu.path, trace=True)
    s = traced.stream()
    assert not _hotcall.is_compiled(s.synchronize)
    # on the main thread a wait on an idle stream is one completion query (seam minor 8)
    before = TRACE_COUNTS["eagle_backend_stream_query"]
    s.synchronize()
    assert TRACE_COUNTS["eagle_backend_stream_query"] == before + 1


@pytest.mark.skipif(os.environ.get("EAGLE_EXPECT_HOTCALL") != "1",
                    reason="EAGLE_EXPECT_HOTCALL=1 is set where the build must include eagle._hotcall (CI)")
def test_the_installed_build_has_the_compiled_call():
    assert _hotcall.CompiledBoundCall is not None
    assert _hotcall.is_compiled(eagle.backend("cpu").stream().synchronize)


# -- the GIL around launches (backends/python/hotcall.c: gil=, partner=, the host-call count) ------

def _gil_probe(gil, partner=None, counted=False):
    """A compiled BoundCall over CPython's PyGILState_Check: its "status" is 1 exactly when the
    call was made with the GIL kept, which the BoundCall reports to _hot_failed(symbol, 1)."""
    import ctypes

    class Reporter:
        def __init__(self):
            self.seen = []

        def __call__(self):
            return self

        def _hot_failed(self, symbol, status):
            self.seen.append(status)

        def _hot_bad_args(self, symbol, args):
            raise AssertionError(args)

    rep = Reporter()
    fn = ctypes.cast(ctypes.pythonapi.PyGILState_Check, ctypes.c_void_p).value
    bc = _hotcall.CompiledBoundCall(fn, 1, threading.get_ident(), rep, "probe", None, counted,
                                    gil=gil, partner=partner)
    return bc, rep


compiled_only = pytest.mark.skipif(_hotcall.CompiledBoundCall is None,
                                   reason="eagle._hotcall was not built (no CPython headers at build time)")


@pytest.fixture
def quiet():
    """The host-call count at 0 for the test (earlier tests may leave launches counted that
    were never waited for: the count only ever overestimates), restored after."""
    base = _hotcall.host_calls_pending()
    _hotcall.host_calls_add(-base)
    yield
    _hotcall.host_calls_add(base)


@compiled_only
def test_a_quiet_launch_keeps_the_gil_and_a_release_call_does_not(quiet):
    assert _hotcall.host_calls_pending() == 0
    held, rep = _gil_probe(_hotcall.GIL_WHEN_QUIET)
    held.call()
    assert rep.seen == [1]  # made with the GIL kept
    released, rep2 = _gil_probe(_hotcall.GIL_RELEASE)
    assert released.call() is None and rep2.seen == []


@compiled_only
def test_a_pending_python_host_call_makes_quiet_launches_release_the_gil(quiet):
    held, rep = _gil_probe(_hotcall.GIL_WHEN_QUIET)
    _hotcall.host_calls_add(1)
    try:
        assert held.call() is None and rep.seen == []
    finally:
        _hotcall.host_calls_add(-1)
    held.call()
    assert rep.seen == [1]


@compiled_only
def test_a_run_of_kept_calls_is_broken_by_one_release(quiet):
    held, rep = _gil_probe(_hotcall.GIL_WHEN_QUIET)
    n = _hotcall._compiled.HOLD_RUN_MAX
    for _ in range(n):
        held.call()
    assert rep.seen == [1] * n
    assert held.call() is None  # the (n+1)th lets a waiting thread in
    held.call()
    assert rep.seen == [1] * (n + 1)


@compiled_only
def test_counted_launches_stay_pending_until_their_partner_waits():
    base = _hotcall.host_calls_pending()
    launch, rep = _gil_probe(_hotcall.GIL_COUNTED, counted=True)
    wait, rep2 = _gil_probe(_hotcall.GIL_RELEASE, partner=launch)
    launch.call(3)
    assert rep.seen == [] and launch.outstanding == 3
    assert _hotcall.host_calls_pending() == base + 3
    assert wait.call() is None
    assert launch.outstanding == 0 and _hotcall.host_calls_pending() == base


def test_a_failed_counted_launch_is_not_left_pending(cpu, kind):
    """A launch the backend refused enqueued nothing: it does not stay in the count."""
    s, other = cpu.stream(), cpu.stream()
    launcher = _counting_launcher(cpu, s, [])
    launcher.set_stream(other)
    other.close()
    base = _hotcall.host_calls_pending()
    with pytest.raises(eagle.EagleError, match="eagle_backend_launcher_launch"):
        launcher.launch(3)
    assert _hotcall.host_calls_pending() == base


@compiled_only
def test_bad_gil_settings_are_refused():
    with pytest.raises(ValueError, match="gil must be"):
        _gil_probe(7)
    plain, _ = _gil_probe(_hotcall.GIL_WHEN_QUIET)
    with pytest.raises(TypeError, match="partner must be None or a BoundCall made with gil=GIL_COUNTED"):
        _gil_probe(_hotcall.GIL_RELEASE, partner=plain)
    with pytest.raises(TypeError, match="partner must be"):
        _gil_probe(_hotcall.GIL_RELEASE, partner="launcher")


def _plain_launcher(cpu, s, out):
    import numpy as np
    src = np.arange(4.0)
    with cpu.capture(s) as cap:
        cpu.copy(out, src, src.nbytes, stream=s)
    g = cpu.graph_from_captured(cap.captured)
    g.set_stream(s)
    return g.launcher()


def test_launchers_say_whether_their_graph_runs_python(cpu, kind):
    import numpy as np
    s = cpu.stream()
    out = np.zeros(4)
    plain = _plain_launcher(cpu, s, out)
    python = _counting_launcher(cpu, s, [])
    assert plain.runs_python is False and python.runs_python is True
    base = _hotcall.host_calls_pending()
    python.launch(2)
    plain.launch(5)
    if kind == "compiled":  # without the compiled calls nothing keeps the GIL, nothing is counted
        assert _hotcall.host_calls_pending() == base + 2
    python.synchronize()
    plain.synchronize()
    assert _hotcall.host_calls_pending() == base
    assert list(out) == [0.0, 1.0, 2.0, 3.0]


def test_an_eager_host_function_is_pending_until_it_has_run(cpu):
    s = cpu.stream()
    gate = threading.Event()
    base = _hotcall.host_calls_pending()
    s.host_func(lambda: gate.wait(10))
    if _hotcall.CompiledBoundCall is not None:
        assert _hotcall.host_calls_pending() == base + 1
    gate.set()
    s.synchronize()
    assert _hotcall.host_calls_pending() == base


def test_replays_and_python_host_functions_together_do_not_deadlock(tmp_path):
    """Quiet launches in a tight loop while host functions that need the GIL run on the backend's
    threads, from another Python thread too; in a subprocess, so a deadlock fails the test."""
    import subprocess
    import sys
    code = r'''
import threading, numpy as np, eagle
cpu = eagle.backend("cpu")
s, s2 = cpu.stream(), cpu.stream()
out = np.zeros(4)
src = np.arange(4.0)
with cpu.capture(s) as cap:
    cpu.copy(out, src, src.nbytes, stream=s)
g = cpu.graph_from_captured(cap.captured); g.set_stream(s)
plain = g.launcher()
ran = []
def other():
    t = cpu.stream()
    for i in range(300):
        t.host_func(lambda: ran.append(1))
    t.synchronize()
th = threading.Thread(target=other); th.start()
for i in range(3000):
    plain.launch()
    if i % 100 == 0:
        s2.host_func(lambda: ran.append(2))
plain.synchronize(); s2.synchronize(); th.join()
assert ran.count(1) == 300 and ran.count(2) == 30, (ran.count(1), ran.count(2))
print("ok")
'''
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-2000:]
