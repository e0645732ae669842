"""The one resolver (eagle/_resolve.py): every public call that takes arrays, with no backend=,
works on the backend the arrays live on; arrays on two devices are refused naming both; no
public function defaults to a kind. The cpu half (numpy arrays) runs everywhere; the GPU half is
tests/test_gpu_arrays.py."""
import inspect

import numpy as np
import pytest

import eagle
from test_api_kernels import kaddr


class DeviceArray:
    """A stand-in for a CUDA array: it says where it lives and nothing else (the resolver must
    refuse before touching its memory)."""

    def __init__(self, device_type=2, device_id=0):
        self.dev = (device_type, device_id)
        self.shape, self.dtype = (4,), np.dtype("float64")

    def __dlpack_device__(self):
        return self.dev

    @property
    def __cuda_array_interface__(self):
        raise AssertionError("the resolver must refuse before reading the array")


def test_copy_of_numpy_arrays_picks_the_host_backend():
    dst = np.zeros(5)
    eagle.copy(dst, np.arange(5.0))
    assert dst.tolist() == [0, 1, 2, 3, 4]


def test_run_of_numpy_arrays_picks_the_host_backend():
    x = np.zeros(8)
    eagle.run(kaddr("add1"), [x], 8)  # no stream: done when it returns
    assert x.tolist() == [1.0] * 8


def test_compact_of_numpy_arrays_picks_the_host_backend(cpu):
    mask = np.array([0, 1, 0, 1, 1, 0], np.uint8)
    index_map, count = np.zeros(6, np.int32), np.zeros(1, np.uint32)
    scratch = np.zeros(max(cpu.compact_scratch_bytes(6), 1), np.uint8)
    s = cpu.stream()
    eagle.compact(mask, index_map, count, scratch, stream=s)
    s.synchronize()
    assert index_map[:count[0]].tolist() == [1, 3, 4]


def test_graph_and_activeset_of_numpy_arrays_pick_the_host_backend():
    x = np.zeros(4)
    g = eagle.Graph.build([lambda s: s.run(kaddr("add1"), [x], 4)], planes=[x])
    g()
    assert g.backend is eagle.backend("cpu") and x.tolist() == [1.0] * 4
    aset = eagle.ActiveSet(np.zeros(4, np.uint8))
    assert aset.backend is eagle.backend("cpu")


@pytest.mark.parametrize("call", ["copy", "run", "compact", "graph", "activeset"])
def test_arrays_on_two_devices_are_refused_naming_both(call):
    host, dev = np.zeros(4), DeviceArray(2, 1)
    other = DeviceArray(2, 0)
    with pytest.raises(eagle.EagleValueError, match=r"cuda:1 .*cuda:0|cpu:0 .*cuda:1"):
        if call == "copy":
            eagle.copy(dev, other)
        elif call == "run":
            eagle.run(1, [host, dev], 4)
        elif call == "compact":
            eagle.compact(host, dev, host, host)
        elif call == "graph":
            eagle.Graph.build([lambda s: None], planes=[host, dev])
        else:
            eagle.ActiveSet(np.zeros(4, np.uint8), planes=[dev])


def test_a_stream_of_another_backend_is_refused(cpu):
    s = cpu.stream()
    with pytest.raises(eagle.EagleValueError, match="belongs to the cpu backend.*cuda:0"):
        eagle.copy(DeviceArray(2, 0), np.zeros(4), stream=s)


def test_no_public_function_defaults_to_a_kind():
    kinds = {"cpu", "cuda", "hip", "metal", "gpu"}
    for name in eagle.__all__:
        obj = getattr(eagle, name)
        targets = [obj]
        if inspect.isclass(obj):
            targets = [m for _, m in inspect.getmembers(obj, inspect.isfunction)]
            targets += [m.__func__ for _, m in inspect.getmembers(obj, inspect.ismethod)]
        for fn in targets:
            try:
                sig = inspect.signature(fn)
            except (TypeError, ValueError):
                continue
            for p in sig.parameters.values():
                assert p.default not in kinds, f"eagle.{name}: {fn.__qualname__}({p.name}={p.default!r})"


def test_an_eagle_stream_names_its_backend_for_host_func(cpu):
    s = cpu.stream()
    ran = []
    eagle.host_func(lambda: ran.append(1), stream=s)
    s.synchronize()
    assert ran == [1]


def test_backend_needs_a_name():
    with pytest.raises(TypeError):
        eagle.backend()
    with pytest.raises(eagle.EagleTypeError, match="named by a kind"):
        eagle.backend(3)


def test_with_no_stream_the_call_returns_when_done():
    for _ in range(200):
        dst = np.zeros(1000)
        eagle.copy(dst, np.ones(1000))
        assert dst.sum() == 1000


def test_foreign_stream_objects_give_their_raw_value(cpu):
    from eagle._stream_arg import raw_stream

    class Protocol:
        def __cuda_stream__(self):
            return (0, 1234)

    class CupyLike:
        ptr = 99

    class TorchLike:
        cuda_stream = 77

    assert raw_stream(cpu, Protocol()) == 1234
    assert raw_stream(cpu, CupyLike()) == 99
    assert raw_stream(cpu, TorchLike()) == 77
    for bad in (-1, 1 << 64, "stream", 1.5, True):
        with pytest.raises((eagle.EagleTypeError, eagle.EagleValueError)):
            raw_stream(cpu, bad)


def test_cpu_streams_do_not_claim_the_cuda_stream_protocol(cpu):
    assert not hasattr(cpu.stream(), "__cuda_stream__")
