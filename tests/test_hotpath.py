"""eagle's hot call path (eagle/_hotpath.py): Stream.synchronize and Launcher.launch/.synchronize
make their seam call through eagle._hotcall (compiled) or, without it, through cffi. Both call
functions keep one contract; every test here runs against each of them."""
import os
import threading

import numpy as np
import pytest

import eagle
from eagle import _hotpath
from eagle._loader import TRACE_COUNTS
from eagle._seam_ffi import ffi

CALLS = [pytest.param("python", id="python_call"),
         pytest.param("compiled", id="compiled_call")]


@pytest.fixture(params=CALLS)
def call_kind(request, monkeypatch):
    """Objects made inside the test use this call function."""
    if request.param == "compiled":
        if _hotpath.compiled_call is None:
            pytest.skip("eagle._hotcall was not built (no CPython headers at build time)")
        monkeypatch.setattr(_hotpath, "caller", lambda b: _hotpath.compiled_call)
        return _hotpath.compiled_call
    monkeypatch.setattr(_hotpath, "caller", lambda b: _hotpath.python_call)
    return _hotpath.python_call


def _counting_launcher(cpu, s, ran):
    with cpu.capture(s) as cap:
        s.host_func(lambda: ran.append(1))
    g = cpu.graph_from_captured(cap.captured)
    g.set_stream(s)
    return g.launcher()


def test_objects_use_the_chosen_call(cpu, call_kind):
    s = cpu.stream()
    assert s._call is call_kind
    launcher = _counting_launcher(cpu, s, [])
    assert launcher._call is call_kind


def test_launch_n_replays_then_synchronize(cpu, call_kind):
    s = cpu.stream()
    ran = []
    launcher = _counting_launcher(cpu, s, ran)
    launcher.launch()
    launcher.launch(4)
    launcher.launch(0)
    launcher.synchronize()
    assert len(ran) == 5
    s.synchronize()
    with pytest.raises(ValueError, match="n must be >= 0, got -1"):
        launcher.launch(-1)
    with pytest.raises(TypeError):
        launcher.launch(2.5)


def test_closed_and_foreign_thread_are_refused_without_calling(cpu, call_kind):
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
    launcher.close()
    s.close()
    for f in (s.synchronize, launcher.launch, lambda: launcher.launch(2), launcher.synchronize):
        with pytest.raises(eagle.HandleError, match="is closed"):
            f()


def test_host_function_errors_still_surface(cpu, call_kind):
    s = cpu.stream()

    def bad():
        raise KeyError("from the host function")
    s.host_func(bad)
    with pytest.raises(KeyError, match="from the host function"):
        s.synchronize()


def test_synchronize_releases_the_gil_for_host_functions(cpu, call_kind):
    """A host function needs the GIL on the backend's thread while the caller waits in synchronize."""
    s = cpu.stream()
    out = np.zeros(1)
    s.host_func(lambda: out.__setitem__(0, threading.get_ident()))
    s.synchronize()
    assert out[0] != 0 and out[0] != threading.get_ident()


def test_call_contract_on_a_raw_seam_function(cpu, call_kind):
    """A failing status comes back unchanged and stops `times`; the wrong owner calls nothing."""
    fn = _hotpath.fn_arg(call_kind, cpu._f.stream_synchronize)
    bogus = _hotpath.handle_arg(call_kind, ffi.cast("eagle_backend_stream", 0x10))  # not a live stream
    me = threading.get_ident()
    status = call_kind(fn, me, bogus)
    assert status not in (0, _hotpath.NOT_CALLED)
    assert call_kind(fn, me, bogus, 3) == status
    s = cpu.stream()
    h = _hotpath.handle_arg(call_kind, s._h)
    assert call_kind(fn, me, h) == 0
    assert call_kind(fn, me, h, 5) == 0
    assert call_kind(fn, me + 1, h) == _hotpath.NOT_CALLED
    assert call_kind(fn, None, h) == _hotpath.NOT_CALLED
    assert call_kind(fn, me, h, 0) == _hotpath.NOT_CALLED


def test_compiled_call_refuses_bad_arguments():
    call = _hotpath.compiled_call
    if call is None:
        pytest.skip("eagle._hotcall was not built (no CPython headers at build time)")
    me = threading.get_ident()
    with pytest.raises(TypeError, match="fn, owner, handle"):
        call(1, me)
    with pytest.raises(ValueError, match="fn is 0"):
        call(0, me, 0)
    with pytest.raises(TypeError):
        call("not an address", me, 0)
    with pytest.raises(TypeError):
        call(1, me, 0, "three")


def test_a_traced_backend_counts_hot_calls(cpu):
    traced = eagle.backend(cpu.path, trace=True)
    s = traced.stream()
    assert s._call is _hotpath.python_call
    before = TRACE_COUNTS["eagle_backend_stream_synchronize"]
    s.synchronize()
    assert TRACE_COUNTS["eagle_backend_stream_synchronize"] == before + 1


@pytest.mark.skipif(os.environ.get("EAGLE_EXPECT_HOTCALL") != "1",
                    reason="EAGLE_EXPECT_HOTCALL=1 is set where the build must include eagle._hotcall (CI)")
def test_the_installed_build_has_the_compiled_call():
    assert _hotpath.compiled_call is not None
    assert eagle.backend("cpu").stream()._call is _hotpath.compiled_call
