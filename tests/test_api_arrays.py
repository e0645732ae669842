"""eagle.empty / zeros / asarray: memory from the seam's mem_alloc, exported by DLPack without a copy."""
import gc
import weakref

import numpy as np
import pytest

import eagle
from eagle.array import DeviceArray


def test_arrays_are_allocated_through_the_seam_aligned_and_shaped(cpu):
    a = eagle.empty((3, 5), "float32", backend=cpu)
    assert isinstance(a, DeviceArray) and a.shape == (3, 5) and a.nbytes == 60 and a.address % 256 == 0
    assert a.__dlpack_device__() == (1, 0)
    z = eagle.zeros(7, "int64", backend=cpu)
    assert np.array_equal(z.numpy(), np.zeros(7, np.int64))
    h = np.arange(12, dtype=np.uint16).reshape(3, 4)
    c = eagle.asarray(h, backend=cpu)
    assert c.dtype == np.uint16 and np.array_equal(c.numpy(), h)
    assert eagle.empty(0, backend=cpu).numpy().shape == (0,)


def test_numpy_takes_them_without_a_copy_both_dlpack_versions(cpu):
    a = eagle.asarray(np.arange(6.0), backend=cpu)
    v = np.from_dlpack(a)                       # numpy asks for the versioned capsule where it can
    assert v.ctypes.data == a.address
    legacy = a.__dlpack__()                     # no max_version: the legacy capsule
    versioned = a.__dlpack__(max_version=(1, 0))
    assert "dltensor" in repr(legacy) and "dltensor_versioned" in repr(versioned)
    del legacy, versioned                       # unconsumed capsules free their tensors
    assert np.asarray(a).ctypes.data == a.address  # __array_interface__ (host memory)
    assert not hasattr(a, "__cuda_array_interface__")
    v[:] = 7
    assert np.all(a.numpy() == 7)


def test_an_exported_view_keeps_the_memory_alive(cpu):
    a = eagle.asarray(np.arange(1000.0), backend=cpu)
    ref = weakref.ref(a)
    v = np.from_dlpack(a)
    del a
    gc.collect()
    assert ref() is not None                    # the consumer still holds it
    assert v[999] == 999.0
    del v
    gc.collect()
    assert ref() is None                        # the consumer's deleter let it go


def test_refusals_name_the_problem(cpu):
    with pytest.raises(eagle.EagleError, match="give backend="):
        eagle.empty(4)
    with pytest.raises(ValueError, match="negative dimension"):
        eagle.empty((2, -1), backend=cpu)
    with pytest.raises(TypeError, match="no DLPack code"):
        eagle.empty(3, "U4", backend=cpu)
    a = eagle.empty(3, backend=cpu)
    with pytest.raises(BufferError, match="not \\(2, 0\\)"):
        a.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="copy=True"):
        a.__dlpack__(copy=True)
    with pytest.raises(eagle.EagleError, match="device"):
        eagle.empty(3, backend=cpu, device=5)


def test_kernels_take_device_arrays_and_graphs_allocate_beside_them(cpu):
    mod = eagle.compile("#include <eagle/kernel.h>\n"
                        "EAGLE_KERNEL(countdown, (uint32_t*, w)) { (void)n; if (i == 0) w[0] -= 1u; }\n"
                        "EAGLE_KERNEL(bump, (double*, x)) { (void)n; x[i] += 1.0; }\n", backend=cpu)
    x = eagle.zeros(100, backend=cpu)
    w = eagle.asarray(np.array([5], np.uint32), backend=cpu)
    loop = eagle.repeat_while([lambda s: s.run(mod.bump, [x], 100), lambda s: s.run(mod.countdown, [w], 1)],
                              w, max_iters=50)
    g = eagle.Graph.build([loop], planes=[x, w])
    assert g.backend is cpu
    g.launch()
    g.synchronize()
    assert np.all(x.numpy() == 5.0) and w.numpy()[0] == 0


def test_mem_free_ignores_addresses_it_did_not_give(cpu):
    host = np.ones(16)
    cpu._f.mem_free(host.ctypes.data)           # not from mem_alloc: ignored, never freed
    cpu._f.mem_free(0)
    assert host.sum() == 16


def test_kernels_take_host_device_arrays_without_reading_the_process_mappings(cpu, monkeypatch):
    # eagle's own host allocations are known to be there: eagle.run skips /proc/self/maps for them
    # (about a millisecond per array), while a claim beyond such an allocation is still checked.
    from eagle import _hostmem
    mod = eagle.compile("#include <eagle/kernel.h>\nEAGLE_KERNEL(bump, (double*, x)) { (void)n; x[i] += 1.0; }\n",
                        backend=cpu)
    x = eagle.zeros(1000, backend=cpu)
    reads = []
    real = _hostmem._mappings
    monkeypatch.setattr(_hostmem, "_mappings", lambda: reads.append(1) or real())
    s = cpu.stream()
    s.run(mod.bump, [x], 1000)
    s.synchronize()
    assert np.all(x.numpy() == 1.0) and reads == []

    class Foreign:  # claims more than eagle allocated there: checked against the mappings
        __array_interface__ = {"data": (x.address, False), "shape": (1001,), "typestr": "<f8", "version": 3}
    from eagle._arrays import address_of
    assert address_of(Foreign()).nbytes == 8008 and reads
    address, nbytes = x.address, x.nbytes
    assert _hostmem.owned(address, nbytes) and not _hostmem.owned(address, nbytes + 1)
    del x
    gc.collect()
    assert not _hostmem.owned(address, nbytes)  # freed: a later claim on it is checked again
