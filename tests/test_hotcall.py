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
    before = TRACE_COUNTS["eagle_backend_stream_synchronize"]
    s.synchronize()
    assert TRACE_COUNTS["eagle_backend_stream_synchronize"] == before + 1


@pytest.mark.skipif(os.environ.get("EAGLE_EXPECT_HOTCALL") != "1",
                    reason="EAGLE_EXPECT_HOTCALL=1 is set where the build must include eagle._hotcall (CI)")
def test_the_installed_build_has_the_compiled_call():
    assert _hotcall.CompiledBoundCall is not None
    assert _hotcall.is_compiled(eagle.backend("cpu").stream().synchronize)
