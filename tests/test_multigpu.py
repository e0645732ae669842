"""Multi-GPU: every handle stays on the device it names, whatever device is current later (issue 9).

Needs the cuda backend and two GPUs; skipped naming the device count otherwise. The device a
stream belongs to is read back from the driver (cuStreamGetCtx + cuCtxGetDevice), so the test
does not trust eagle's own bookkeeping."""
import ctypes

import numpy as np
import pytest

import eagle
from conftest import kernel_ptr

pytestmark = [pytest.mark.gpu, pytest.mark.multigpu]

cp = pytest.importorskip("cupy", reason="the multi-GPU tests take device memory and kernels from CuPy")

KERNELS = r"""
extern "C" __global__ void add_one(double* x, long long base, long long count, long long n) {
    long long i = base + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < base + count) x[i] += 1.0;
}
extern "C" __global__ void spin_then_set(double* x, long long base, long long count, long long n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        long long t0 = clock64();
        while (clock64() - t0 < 200000000LL) {}
        x[0] = 42.0;
    }
}
extern "C" __global__ void copy_first(double* dst, const double* src, long long base, long long count, long long n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) dst[0] = src[0];
}
"""


def _device_count():
    try:
        return cp.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - no driver
        return 0


@pytest.fixture(scope="module")
def two(cuda):
    n = _device_count()
    if n < 2:
        pytest.skip(f"needs two GPUs, this machine has {n}")
    return cuda


@pytest.fixture(scope="module")
def kern(two):
    out, mods = {}, []
    for dev in (0, 1):
        with cp.cuda.Device(dev):
            mod = cp.RawModule(code=KERNELS)
            mods.append(mod)  # the CUfunctions live as long as their module
            out[dev] = {name: kernel_ptr(mod.get_function(name)) for name in ("add_one", "spin_then_set", "copy_first")}
    yield out
    del mods


def settle(*devices):
    """Wait for what CuPy enqueued on its (legacy default) streams: eagle's non-blocking streams
    are not ordered after it."""
    for dev in devices:
        cp.cuda.Device(dev).synchronize()


def peer_access(dev, peer):
    """Let kernels on ``dev`` read ``peer``'s memory; False where the two cannot."""
    if not cp.cuda.runtime.deviceCanAccessPeer(dev, peer):
        return False
    with cp.cuda.Device(dev):
        try:
            cp.cuda.runtime.deviceEnablePeerAccess(peer)
        except cp.cuda.runtime.CUDARuntimeError as e:  # already enabled
            if "PeerAccessAlreadyEnabled" not in str(e):
                raise
    return True


_libcuda = None


def stream_device(raw):
    """The device ordinal of a raw CUstream, asked of the driver."""
    global _libcuda
    if _libcuda is None:
        _libcuda = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    dev = ctypes.c_int(-1)
    assert _libcuda.cuStreamGetCtx(ctypes.c_void_p(raw), ctypes.byref(ctx)) == 0
    assert _libcuda.cuCtxPushCurrent_v2(ctx) == 0
    try:
        assert _libcuda.cuCtxGetDevice(ctypes.byref(dev)) == 0
    finally:
        _libcuda.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
    return dev.value


def test_handles_created_with_device_1_land_there_while_0_is_current(two, kern):
    cuda = two
    with cp.cuda.Device(0):
        s1 = cuda.stream(device=1, non_blocking=True)
        assert stream_device(s1.handle) == 1
        assert cp.cuda.Device().id == 0, "creating on device 1 changed the current device"
    with cp.cuda.Device(1):
        x = cp.zeros(4096, cp.float64)
    settle(1)
    with cp.cuda.Device(0):
        # a launch, a replayed graph and a copy on the device-1 stream, device 0 current
        cuda.run(kern[1]["add_one"], [x], x.size, stream=s1)
        with cuda.capture(s1) as cap:
            cuda.run(kern[1]["add_one"], [x], x.size, stream=s1)
        L = cuda.graph_from_captured(cap.captured).launcher()
        L.set_stream(s1)
        L.launch(2)
        L.synchronize()
        host = np.zeros(4096)
        cuda.copy(host, x, stream=s1)
        s1.synchronize()
        assert np.all(host == 3.0)
        # compaction of device-1 memory on the device-1 stream
        with cp.cuda.Device(1):
            mask = cp.asarray((np.arange(4096) % 3 == 0).astype(np.uint8))
            idx = cp.zeros(4096, cp.int32)
            count = cp.zeros(1, cp.uint32)
            scratch = cp.zeros(max(cuda.compact_scratch_bytes(4096, stream=s1, device=1), 1), cp.uint8)
        settle(1)
        cuda.compact(mask, idx, count, scratch, stream=s1, device=1)
        s1.synchronize()
        with cp.cuda.Device(1):
            kept = np.flatnonzero(np.arange(4096) % 3 == 0)
            assert int(count.get()[0]) == kept.size and np.array_equal(idx.get()[:kept.size], kept)
        assert cp.cuda.Device().id == 0


def test_a_stream_keeps_its_device_after_the_current_device_changes(two, kern):
    cuda = two
    with cp.cuda.Device(1):
        s = cuda.stream(non_blocking=True)   # -1: the current device, 1
    with cp.cuda.Device(0):
        assert stream_device(s.handle) == 1
        f = cuda.fork(s, 2)
        assert all(stream_device(b.handle) == 1 for b in f.branches)
        f.close()


def test_fence_orders_device_0_after_device_1(two, kern):
    cuda = two
    s1 = cuda.stream(device=1, non_blocking=True)
    s0 = cuda.stream(device=0, non_blocking=True)
    with cp.cuda.Device(1):
        a = cp.zeros(1, cp.float64)
    with cp.cuda.Device(0):
        b = cp.zeros(1, cp.float64)
    settle(0, 1)
    peer = peer_access(0, 1)
    cuda.run(kern[1]["spin_then_set"], [a], 1, stream=s1, block=1)   # ~0.1 s, then a[0] = 42
    cuda.fence(s1.handle, s0.handle, device_type=2, device_id=1)
    if peer:
        cuda.run(kern[0]["copy_first"], [b, a], 1, stream=s0, block=1)   # peer read of a
    else:
        cuda.copy(b, a, stream=s0)   # no peer access between the two: a copy on s0 instead
    s0.synchronize()
    with cp.cuda.Device(0):
        assert float(b.get()[0]) == 42.0


def test_copies_between_the_two_devices(two):
    cuda = two
    with cp.cuda.Device(0):
        src = cp.arange(1 << 20, dtype=cp.float64)
    with cp.cuda.Device(1):
        dst = cp.zeros(1 << 20, cp.float64)
    settle(0, 1)
    s = cuda.stream(device=1, non_blocking=True)
    cuda.copy(dst, src, stream=s)
    s.synchronize()
    with cp.cuda.Device(1):
        assert np.array_equal(dst.get(), np.arange(1 << 20, dtype=np.float64))
    # and back, on a device-0 stream while device 1 is current
    with cp.cuda.Device(0):
        back = cp.zeros(1 << 20, cp.float64)
    settle(0)
    with cp.cuda.Device(1):
        s0 = cuda.stream(device=0, non_blocking=True)
        assert stream_device(s0.handle) == 0
        cuda.copy(back, dst, stream=s0)
        s0.synchronize()
    with cp.cuda.Device(0):
        assert np.array_equal(back.get(), np.arange(1 << 20, dtype=np.float64))


def test_graph_build_with_planes_on_device_1_records_and_replays_there(two, kern):
    cuda = two
    with cp.cuda.Device(1):
        x = cp.zeros(1000, cp.float64)
    settle(1)

    def step(stream):
        cuda.run(kern[1]["add_one"], [x], x.size, stream=stream)

    with cp.cuda.Device(0):
        g = eagle.Graph.build([step], planes=[x])
        assert g.backend.kind == "cuda"
        g.launch(3)
        g.synchronize()
    with cp.cuda.Device(1):
        assert np.all(x.get() == 3.0)
