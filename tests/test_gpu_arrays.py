"""The resolver on the GPU (issue 13): every public call that takes arrays, with no backend=, on
CuPy, torch and JAX arrays reaches the cuda backend and gives the right result; host and device
arrays together are refused where a kernel would read both; CuPy and torch streams passed as
``stream=`` order eagle's work after theirs. Skipped (naming why) without a usable cuda backend
or without the array library."""
import os

import numpy as np
import pytest

import eagle
from conftest import kernel_ptr

pytestmark = pytest.mark.gpu
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX: allocate as needed
cp = pytest.importorskip("cupy", reason="the GPU array tests compile their kernels with CuPy")

ADD_ONE = r"""
extern "C" __global__ void add_one(double* x, long long base, long long count, long long n) {
    long long i = base + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < base + count) x[i] += 1.0;
}
extern "C" __global__ void spin_then_set(double* x, long long base, long long count, long long n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        long long t0 = clock64(); while (clock64() - t0 < 200000000LL) {}
        x[0] = 42.0;
    }
}
"""


@pytest.fixture(scope="module")
def kern(cuda):
    mod = cp.RawModule(code=ADD_ONE)
    return {n: kernel_ptr(mod.get_function(n)) for n in ("add_one", "spin_then_set")}


class Lib:
    """One array library: make device arrays from numpy, and read them back."""

    def __init__(self, name):
        self.name = name
        if name == "cupy":
            self.mod = cp
        elif name == "torch":
            self.mod = pytest.importorskip("torch", reason="torch is not installed")
            if not self.mod.cuda.is_available():
                pytest.skip("torch has no CUDA device")
        else:
            self.mod = pytest.importorskip("jax", reason="jax is not installed")
            if not any(d.platform == "gpu" for d in self.mod.devices()):
                pytest.skip("jax has no GPU device")

    def array(self, host):
        if self.name == "cupy":
            return cp.asarray(host)
        if self.name == "torch":
            return self.mod.as_tensor(host, device="cuda")
        arr = self.mod.device_put(host, self.mod.devices("gpu")[0])
        arr.block_until_ready()
        return arr

    def numpy(self, arr):
        if self.name == "cupy":
            return cp.asnumpy(arr)
        if self.name == "torch":
            return arr.cpu().numpy()
        return np.asarray(arr)

    def sync(self):
        if self.name == "cupy":
            cp.cuda.runtime.deviceSynchronize()
        elif self.name == "torch":
            self.mod.cuda.synchronize()


LIBS = ["cupy", "torch", "jax"]


@pytest.fixture(params=LIBS)
def lib(request, cuda):
    return Lib(request.param)


def test_copy_device_to_device_host_and_back(lib):
    src = lib.array(np.arange(1000.0))  # float32 under JAX's default (no x64)
    mid = cp.zeros(1000, dtype=str(src.dtype).split(".")[-1])  # writable (JAX arrays are immutable)
    lib.sync()
    eagle.copy(mid, src)
    assert cp.asnumpy(mid).tolist() == list(range(1000))
    host = np.zeros(1000, mid.dtype)
    eagle.copy(host, src)  # D2H: numpy beside a device array is allowed for copies
    assert host.tolist() == list(range(1000))
    eagle.copy(mid, np.full(1000, 7.0, mid.dtype))  # H2D
    assert float(cp.asnumpy(mid).sum()) == 7000.0


@pytest.mark.parametrize("name", ["cupy", "torch"])
def test_run_reaches_cuda_and_gives_the_right_result(cuda, kern, name):
    lib = Lib(name)
    x = lib.array(np.zeros(4096))
    lib.sync()
    assert eagle.run(kern["add_one"], [x], 4096, block=256)
    assert lib.numpy(x).tolist() == [1.0] * 4096


def test_compact_reaches_cuda(lib, cuda):
    rng = np.random.default_rng(1)
    m = (rng.random(10000) < 0.4).astype(np.uint8)
    mask = lib.array(m)
    index_map, count = cp.zeros(10000, cp.int32), cp.zeros(1, cp.uint32)
    scratch = cp.zeros(max(cuda.compact_scratch_bytes(10000), 1), cp.uint8)
    lib.sync()
    eagle.compact(mask, index_map, count, scratch)
    k = int(cp.asnumpy(count)[0])
    assert cp.asnumpy(index_map)[:k].tolist() == np.flatnonzero(m).tolist()


@pytest.mark.parametrize("name", ["cupy", "torch"])
def test_graph_build_and_activeset_reach_cuda(cuda, kern, name):
    lib = Lib(name)
    x = lib.array(np.zeros(512))
    lib.sync()
    g = eagle.Graph.build([lambda s: s.run(kern["add_one"], [x], 512, block=128)], planes=[x])
    assert g.backend is cuda and g.decides_on_device
    g.launch(3)
    g.synchronize()
    assert lib.numpy(x).tolist() == [3.0] * 512
    aset = eagle.ActiveSet(lib.array(np.zeros(512, np.uint8)))
    assert aset.backend is cuda


def test_host_and_device_arrays_together_are_refused_naming_both(cuda, kern):
    with pytest.raises(eagle.EagleValueError, match=r"cpu:0 .*cuda:0|cuda:0 .*cpu:0"):
        eagle.run(kern["add_one"], [np.zeros(4), cp.zeros(4)], 4)
    with pytest.raises(eagle.EagleValueError, match=r"cpu:0 .*cuda:0|cuda:0 .*cpu:0"):
        eagle.Graph.build([lambda s: None], planes=[np.zeros(4), cp.zeros(4)])


def test_eagle_streams_speak_the_cuda_stream_protocol(cuda):
    s = cuda.stream(non_blocking=True)
    version, handle = s.__cuda_stream__()
    assert handle == s.handle and handle != 0
    ext = cp.cuda.ExternalStream(handle)
    with ext:
        y = cp.arange(10.0) * 2
    ext.synchronize()
    assert float(y.sum()) == 90.0


@pytest.mark.parametrize("name", ["cupy", "torch"])
def test_a_foreign_stream_orders_eagles_work_after_its_own(cuda, kern, name):
    """A kernel that spins ~0.1 s then writes x[0] = 42 is enqueued on the library's stream; eagle's
    copy of x, passed that stream, must see 42."""
    x = cp.zeros(1)
    if name == "cupy":
        stream = cp.cuda.Stream(non_blocking=True)
    else:
        torch = pytest.importorskip("torch", reason="torch is not installed")
        stream = torch.cuda.Stream()
    raw = stream.ptr if name == "cupy" else stream.cuda_stream
    with cp.cuda.ExternalStream(raw):
        cp.RawModule(code=ADD_ONE).get_function("spin_then_set")(
            (1,), (1,), (x, np.int64(0), np.int64(1), np.int64(1)))
    host = np.zeros(1)
    eagle.copy(host, x, stream=stream)  # enqueued after the spinning kernel, on its stream
    stream.synchronize()
    assert host[0] == 42.0



def _temporary(name, n):
    """A fresh device array of 0..n-1 from `name`'s allocator, made on its current stream and
    finished there; the caller passes it on without keeping a reference."""
    if name == "cupy":
        t = cp.arange(n, dtype=cp.float64)
        cp.cuda.get_current_stream().synchronize()
    else:
        torch = pytest.importorskip("torch", reason="torch is the second array library")
        t = torch.arange(n, dtype=torch.float64, device="cuda")
        torch.cuda.current_stream().synchronize()  # not torch.cuda.synchronize(): s is held shut
    return t


def _reuse(name, n):
    """What a program does next: a new array of the same size, filled, on the library's stream.
    The library's caching allocator hands back the block of a temporary freed just before."""
    if name == "cupy":
        j = cp.full(n, -1.0)
        cp.cuda.get_current_stream().synchronize()
    else:
        import torch
        j = torch.full((n,), -1.0, dtype=torch.float64, device="cuda")
        torch.cuda.current_stream().synchronize()
    return j


@pytest.mark.parametrize("keepalive", [True, False], ids=["kept", "keepalive_off"])
@pytest.mark.parametrize("name", ["cupy", "torch"])
def test_a_temporary_freed_while_its_copy_waits_is_kept_alive(cuda, name, keepalive, monkeypatch):
    """The README's taste on the GPU, with the stream held shut by a host function until the
    library has reused the temporary's memory: the copy must still read 0..n-1. With the keepalive
    switched off the same test must see the reused block (-1s): that run shows it can fail."""
    import threading
    if not keepalive:
        from eagle._inflight import holds
        monkeypatch.setattr(holds, "hold_until_done", lambda *a, **k: None)
    n = 1 << 20
    s = cuda.stream(non_blocking=True)
    gate = threading.Event()
    s.host_func(lambda: gate.wait(30))  # the copy below waits behind this
    dst = cp.zeros(n)
    eagle.copy(dst, _temporary(name, n), stream=s)  # no reference to the source stays here
    junk = _reuse(name, n)
    gate.set()
    s.synchronize()
    got = dst.get()
    if keepalive:
        assert np.array_equal(got, np.arange(n, dtype=np.float64))
    else:
        assert not np.array_equal(got, np.arange(n, dtype=np.float64)), \
            "with no keepalive the library did not reuse the block: this test could not fail"
    del junk


def test_the_cupy_reader_says_what_cupys_interface_says(cuda):
    """eagle._arrays reads CuPy's ndarray by its attributes once it has seen one: the same
    address, size, device and writability as the general path through __cuda_array_interface__,
    for whole arrays, offset views and empty ones; a strided view keeps the general path's error."""
    from eagle import _arrays
    base = cp.arange(64, dtype=cp.float64)
    _arrays.address_of(base)  # seen once: the reader is registered
    assert type(base) in _arrays._EXACT
    for a in (base, base[5:], base.reshape(8, 8)[2:], cp.zeros(0, cp.int32), cp.ones((3, 4), cp.uint8)):
        iface = a.__cuda_array_interface__
        info = _arrays.address_of(a)
        assert (info.ptr, info.nbytes, info.readonly) == (iface["data"][0] or 0, a.nbytes, False)
        assert (info.device_type, info.device_id) == tuple(int(x) for x in a.__dlpack_device__())
    with pytest.raises(eagle.EagleValueError, match="C-contiguous"):
        _arrays.address_of(base[::2])


def test_eager_compact_on_cupy_arrays_takes_the_fast_path_and_is_right(cuda):
    """The first call learns CuPy's reader, the second keeps its desc in this thread's memo (CuPy's
    ndarray is a stable type), the next ones hit it: every call compacts the mask as it is then."""
    from eagle import _arrays, _eager_memo
    n = 1 << 12
    mask = (cp.arange(n) % 3 == 0).astype(cp.uint8)
    im, cnt = cp.zeros(n, cp.int32), cp.zeros(1, cp.uint32)
    sc = cp.zeros(max(cuda.compact_scratch_bytes(n), 1), cp.uint8)
    for step in (3, 3, 3, 5, 7, 1):
        mask[:] = (cp.arange(n) % step == 0).astype(cp.uint8)
        im.fill(-1)
        eagle.compact(mask, im, cnt, sc)
        k = int(cnt.get()[0])
        assert k == len(range(0, n, step)) and (im[:k].get() == np.arange(0, n, step)).all()
    assert type(mask) in _arrays.STABLE
    assert _eager_memo.table()[(id(mask), id(im), id(cnt), id(sc), None, False)].holds4(mask, im, cnt, sc)
    mask.shape = (64, 64)  # CuPy lets the shape change in place: the bytes stay where they are
    eagle.compact(mask, im, cnt, sc)
    assert int(cnt.get()[0]) == n


def test_the_torch_reader_says_what_torchs_interface_says(cuda):
    """eagle._arrays reads torch's CUDA tensors by their methods once it has seen one: the same
    address, size, device and writability as the general path through __cuda_array_interface__,
    read afresh each call (set_ moves a tensor's memory); what the interface refuses (a tensor
    that requires grad) or what is not dense C-contiguous memory still goes the general path."""
    torch = pytest.importorskip("torch", reason="torch is not installed here")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    from eagle import _arrays
    base = torch.arange(64, dtype=torch.float64, device="cuda")
    _arrays.address_of(base)  # seen once: the reader is registered
    assert torch.Tensor in _arrays._EXACT
    for t in (base, base[5:], base.view(8, 8)[2:], torch.zeros(0, dtype=torch.int32, device="cuda"),
              torch.ones(3, 4, dtype=torch.uint8, device="cuda")):
        iface = t.__cuda_array_interface__
        info = _arrays.address_of(t)
        assert (info.ptr, info.nbytes, info.readonly) == (iface["data"][0] or 0, t.numel() * t.element_size(), False)
        assert (info.device_type, info.device_id) == (2, base.device.index or 0)
    moved = torch.zeros(16, dtype=torch.float64, device="cuda")
    before = _arrays.address_of(moved).ptr
    moved.set_(torch.zeros(16, dtype=torch.float64, device="cuda"))
    assert _arrays.address_of(moved).ptr == moved.data_ptr() != before
    grad = torch.zeros(4, device="cuda", requires_grad=True)
    assert _arrays._EXACT[torch.Tensor](grad) is None
    with pytest.raises(RuntimeError, match="requires grad"):
        _arrays.address_of(grad)  # as before: torch's interface refuses it
    with pytest.raises(eagle.EagleValueError, match="C-contiguous"):
        _arrays.address_of(base[::2])
    host = torch.arange(4, dtype=torch.float64)
    assert _arrays.address_of(host).device_type == 1  # the host tensor: the general path (DLPack)


def test_eager_compact_on_torch_tensors_is_right(cuda):
    torch = pytest.importorskip("torch", reason="torch is not installed here")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    n = 1 << 12
    mask = (torch.arange(n, device="cuda") % 3 == 0).to(torch.uint8)
    im, cnt = torch.zeros(n, dtype=torch.int32, device="cuda"), torch.zeros(1, dtype=torch.int32, device="cuda")
    sc = torch.zeros(max(cuda.compact_scratch_bytes(n), 1), dtype=torch.uint8, device="cuda")
    for _ in range(3):
        im.fill_(-1)
        eagle.compact(mask, im, cnt, sc)
        k = int(cnt.cpu()[0])
        assert k == len(range(0, n, 3)) and (im[:k].cpu().numpy() == np.arange(0, n, 3)).all()
