"""The loader: discovery, the handshake's refusals, clear groups, 'gpu', errors per thread."""
import os
import threading

import numpy as np
import pytest

import eagle
from eagle import _loader
from eagle._seam_meta import GROUP_BITS, GROUP_SYMBOLS

ALL_GROUPS = sum(1 << b for b in GROUP_BITS.values())


def test_refuses_a_file_that_is_not_a_library(tmp_path):
    bad = tmp_path / "libeagle_junk.so"
    bad.write_bytes(b"not an ELF file")
    with pytest.raises(eagle.BackendLoadError, match=r"cannot load the backend library .*libeagle_junk\.so"):
        eagle.backend(str(bad))


def test_refuses_major_2_naming_both_versions(make_stub):
    path = make_stub(major=2, minor=3)
    with pytest.raises(eagle.BackendLoadError, match=r"eagle-backend/2\.3.*eagle-backend/1\.9"):
        eagle.backend(path)


@pytest.mark.parametrize("symbol", ["eagle_backend_probe", "eagle_backend_last_error",
                                    "eagle_backend_device_types", "eagle_backend_version"])
def test_refuses_a_missing_required_symbol_by_name(make_stub, symbol):
    path = make_stub(omit=[symbol])
    with pytest.raises(eagle.BackendLoadError, match=symbol):
        eagle.backend(path)


@pytest.mark.parametrize("group", sorted(GROUP_BITS))
def test_refuses_a_set_bit_whose_group_lacks_a_symbol(make_stub, group):
    missing = GROUP_SYMBOLS[group][-1]
    path = make_stub(caps=1 << GROUP_BITS[group], omit=[missing])
    with pytest.raises(eagle.BackendLoadError, match=rf"does not export {missing}, which its capability bit"):
        eagle.backend(path)


@pytest.mark.parametrize("bit", [8, 13, 40, 62, 63])
def test_refuses_a_reserved_capability_bit(make_stub, bit):
    path = make_stub(caps=(1 << bit) | 1)
    with pytest.raises(eagle.BackendLoadError, match=rf"reserved capability bit\(s\) {bit}\b"):
        eagle.backend(path)


def test_a_clear_bit_makes_every_call_of_the_group_unavailable(make_stub):
    path = make_stub(caps=1 << GROUP_BITS["stream"], kind="stubkind")
    b = eagle.backend(path)
    assert b.groups == frozenset({"stream"})
    expect = f"the stubkind backend '{path}' does not provide fork"
    assert b.unavailable["fork"] == expect
    s = b.stream()
    with pytest.raises(eagle.BackendUnavailable) as e:
        b.fork(s, 2)
    assert str(e.value) == expect
    for group, call in [("capturer", lambda: b.capture(s)), ("graph", lambda: b.graph()),
                        ("device", lambda: b.device_props(0)), ("exec", lambda: b.run(0, [], 4, stream=s)),
                        ("interop", lambda: b.fence(None, None)),
                        ("conditional", lambda: b.if_(s, 0))]:
        with pytest.raises(eagle.BackendUnavailable, match=f"does not provide {group}$"):
            call()


@pytest.mark.parametrize("symbol,call", [
    ("eagle_backend_memcpy", lambda b, s: b.copy(np.zeros(2), np.ones(2), stream=s)),
    ("eagle_backend_host_alloc", lambda b, s: b.pinned(4)),
    ("eagle_backend_host_func", lambda b, s: b.host_func(lambda: None, stream=s)),
])
def test_a_missing_per_symbol_entry_is_unavailable_by_name(make_stub, symbol, call):
    path = make_stub(caps=1, omit=[symbol], kind="stubkind")
    b = eagle.backend(path)
    assert b.unavailable[symbol] == f"the stubkind backend '{path}' does not provide {symbol}"
    with pytest.raises(eagle.BackendUnavailable, match=f"does not provide {symbol}$"):
        call(b, b.stream())


def test_missing_switch_and_reorder_entries_are_reported(make_stub):
    path = make_stub(caps=ALL_GROUPS, omit=["eagle_backend_conditional_begin_case",
                                             "eagle_backend_reorder_device"])
    b = eagle.backend(path)
    assert "does not provide eagle_backend_conditional_begin_case" in b.unavailable[
        "eagle_backend_conditional_begin_case"]
    assert "does not provide eagle_backend_reorder_device" in b.unavailable["eagle_backend_reorder_device"]
    with pytest.raises(eagle.BackendUnavailable, match="eagle_backend_conditional_begin_case"):
        b.switch(b.stream(), np.zeros(1, np.uint32), 3)


def test_probe_raises_with_the_backends_own_message(make_stub):
    b = eagle.backend(make_stub(kind="nodev"))
    with pytest.raises(eagle.BackendUnavailable, match=r"stub: no device here \(nodev\)"):
        b.probe()
    assert not b.is_usable()


def test_env_override_to_a_missing_file_names_the_variable(monkeypatch, tmp_path):
    missing = tmp_path / "nowhere" / "libeagle_cuda.so"
    monkeypatch.setenv("EAGLE_BACKEND_CUDA", str(missing))
    with pytest.raises(eagle.BackendLoadError, match=r"\$EAGLE_BACKEND_CUDA names '.*nowhere/libeagle_cuda\.so'"):
        eagle.backend("cuda")


def test_env_override_to_a_broken_file_never_falls_back(monkeypatch, tmp_path):
    bad = tmp_path / "libeagle_cpu.so"
    bad.write_bytes(b"junk")
    monkeypatch.setenv("EAGLE_BACKEND_CPU", str(bad))
    with pytest.raises(eagle.BackendLoadError, match=r"\$EAGLE_BACKEND_CPU="):
        eagle.backend("cpu")


def test_backends_lists_installed_and_env_kinds_without_opening(monkeypatch, tmp_path):
    fake = tmp_path / "libeagle_hip.so"
    fake.write_bytes(b"never opened")
    monkeypatch.setenv("EAGLE_BACKEND_HIP", str(fake))
    found = eagle.backends()
    assert found["hip"] == str(fake)
    assert os.path.isabs(found["cpu"]) and found["cpu"].endswith("libeagle_cpu.so")


def test_gpu_with_two_gpu_kinds_is_ambiguous_exactly(monkeypatch, make_stub):
    monkeypatch.setenv("EAGLE_BACKEND_CUDA", make_stub("c"))
    monkeypatch.setenv("EAGLE_BACKEND_HIP", make_stub("h"))
    with pytest.raises(eagle.BackendUnavailable) as e:
        eagle.backend("gpu")
    assert str(e.value) == ("eagle: backend='gpu' is ambiguous, cuda, hip are installed; "
                            "name one of them as the backend")


def test_gpu_with_one_gpu_kind_picks_it(monkeypatch, make_stub):
    for k in ("CUDA", "HIP", "METAL"):
        monkeypatch.delenv(f"EAGLE_BACKEND_{k}", raising=False)
    monkeypatch.setattr(_loader, "_package_dirs", lambda: [])
    with pytest.raises(eagle.BackendUnavailable, match="no GPU backend"):
        eagle.backend("gpu")
    path = make_stub("h", kind="hip", device_type=10)
    monkeypatch.setenv("EAGLE_BACKEND_HIP", path)
    b = eagle.backend("gpu")
    assert b.kind == "hip" and b.path == path and b.device_types == (10,)


def test_device_kind_table():
    from eagle._device_kind import kind_of_device_type
    assert [kind_of_device_type(t) for t in (1, 2, 3, 13, 8, 10, 11)] == \
        ["cpu", "cuda", "cuda", "cuda", "metal", "hip", "hip"]
    with pytest.raises(ValueError, match="device type 99"):
        kind_of_device_type(99)


def test_numpy_arrays_pick_cpu():
    assert eagle.kind_of_array(np.zeros(3)) == "cpu"


def test_several_kinds_open_at_once_each_call_to_its_own(cpu, make_stub):
    stub = eagle.backend(make_stub(caps=1, kind="other"))
    s1, s2 = cpu.stream(), stub.stream()
    assert cpu.kind == "cpu" and stub.kind == "other"
    with pytest.raises(ValueError, match="belongs to the other backend"):
        cpu.host_func(lambda: None, stream=s2)
    s1.synchronize()
    s2.synchronize()


def test_eight_threads_each_read_their_own_error(cpu):
    results, barrier = {}, threading.Barrier(8)

    def worker(i):
        s = cpu.stream()
        f = cpu.fork(s, i + 1)
        barrier.wait()
        for _ in range(200):
            try:
                f.branch(100 + i)
            except IndexError as e:
                msg = str(e)
                if str(100 + i) not in msg:
                    results[i] = msg
                    return
        results[i] = "ok"
        f.close()
        s.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: "ok" for i in range(8)}


def test_status_mapping_is_in_one_place():
    from eagle._status import exception_for
    assert isinstance(exception_for("s", 2, "m"), ValueError)
    assert isinstance(exception_for("s", 3, "m"), IndexError)
    assert isinstance(exception_for("s", 4, "m"), eagle.InteropError)
    assert isinstance(exception_for("s", 5, "m"), eagle.BackendUnavailable)
    assert isinstance(exception_for("s", 8, "m"), eagle.Unsupported)
    for status in (1, 7, 42):
        e = exception_for("eagle_backend_x", status, "boom")
        assert type(e) is eagle.EagleError and "eagle_backend_x" in str(e) and f"status {status}" in str(e)
    assert all(issubclass(c, eagle.EagleError) for c in (eagle.BackendLoadError, eagle.BackendUnavailable,
                                                         eagle.InteropError, eagle.Unsupported))


def test_callback_failed_reraises_the_callbacks_exception():
    from eagle._status import exception_for, remember_callback_exception
    err = KeyError("from the callback")
    remember_callback_exception(err)
    assert exception_for("eagle_backend_x", 6, "callback failed") is err
