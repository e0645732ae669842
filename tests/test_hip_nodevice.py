"""The hip backend on its no-device path (there is no AMD GPU on these machines).

Runs where a hip backend is built ($EAGLE_BACKEND_HIP, as .ci/run does); skipped naming why
otherwise. Nothing here claims the device path works: only loading, what is left out and why,
and that one process holds cpu and hip side by side with each call going to its own kind."""
import numpy as np
import pytest

import eagle


@pytest.fixture(scope="module")
def hip():
    try:
        return eagle.backend("hip")
    except eagle.EagleError as e:
        pytest.skip(f"no hip backend is built here: {e}")


def test_hip_loads_and_says_what_it_leaves_out_and_why(hip):
    from eagle import _seam_meta  # the header this eagle was built from
    assert hip.kind == "hip" and hip.version == (_seam_meta.VERSION_MAJOR, _seam_meta.VERSION_MINOR)
    assert hip.device_types == (10, 11)
    assert "conditional" not in hip.groups
    assert {"stream", "capturer", "captured", "fork", "attribution", "graph", "launcher", "exec", "device",
            "interop", "filtering"} <= hip.groups
    assert "no conditional graph nodes" in hip.unavailable["conditional"]
    assert hip.unavailable["eagle_backend_conditional_begin_case"]
    assert "ROCm 5.5" in hip.unavailable["launcher_set_node_enabled"]
    for sym in ("eagle_backend_memcpy", "eagle_backend_host_alloc", "eagle_backend_host_free",
                "eagle_backend_host_func", "eagle_backend_reorder_device"):
        assert hip.unavailable[sym] == "", sym


def test_hip_probe_gives_the_backends_own_reason(hip):
    with pytest.raises(eagle.BackendUnavailable, match="hip runtime found no usable device"):
        hip.probe()


def test_cpu_and_hip_in_one_process_each_call_to_its_own_kind(hip, cpu):
    assert cpu.build_info["backend_kind"] == "cpu" and hip.build_info["backend_kind"] == "hip"
    s = cpu.stream()
    x = np.zeros(4)
    cpu.copy(x, np.ones(4), stream=s)
    s.synchronize()
    assert x.tolist() == [1.0] * 4
    with pytest.raises(eagle.BackendUnavailable, match="hip"):
        hip.stream()                         # no device: hip's own refusal, cpu unaffected
    with pytest.raises(eagle.BackendUnavailable, match="does not provide conditional"):
        hip.if_(0, np.zeros(1, np.uint32))
    with pytest.raises(ValueError, match="belongs to the cpu backend"):
        hip.host_func(lambda: None, stream=s)
    assert cpu.device_props(0).warp_size == 1


def test_gpu_is_ambiguous_with_cuda_and_hip_installed(hip):
    kinds = eagle.backends()
    if "cuda" not in kinds:
        pytest.skip("no cuda backend is built here, so 'gpu' is not ambiguous")
    with pytest.raises(eagle.BackendUnavailable) as e:
        eagle.backend("gpu")
    assert str(e.value) == ("eagle: backend='gpu' is ambiguous, cuda, hip are installed; "
                            "name one of them as the backend")


def test_cpu_cuda_and_hip_open_at_once(hip):
    try:
        cuda = eagle.backend("cuda")
    except eagle.EagleError as e:
        pytest.skip(f"no cuda backend here: {e}")
    cpu = eagle.backend("cpu")
    assert {cpu.kind, cuda.kind, hip.kind} == {"cpu", "cuda", "hip"}
    assert len({cpu.path, cuda.path, hip.path}) == 3
