"""The opencl backend's reorder_device finds bad input on the device, where its plan runs on many
work-items: a perm entry outside [0, n) (the first such position named) or a *span past n moves
nothing, and the stream's next synchronize reports it. Runs on the `opencl` fixture
(tests/conftest.py), skipped naming why without one."""
import numpy as np
import pytest

import eagle
from eagle._seam_ffi import ffi

pytestmark = pytest.mark.opencl


def _reorder(b, s, perm_host, span_value, n):
    plane0 = np.arange(n, dtype=np.int32) * 7
    mask_host = (np.arange(n) % 3 == 0).astype(np.uint8)
    plane, mask = b.asarray(plane0), b.asarray(mask_host)
    perm, inv = b.asarray(perm_host.astype(np.int32)), b.asarray(np.arange(n, dtype=np.int32))
    span = b.asarray(np.array([span_value], np.uint32))
    planes = ffi.new("struct eagle_backend_reorder_plane[1]")
    planes[0].data, planes[0].elem_size, planes[0].width = plane.address, 4, 1
    d = ffi.new("struct eagle_backend_reorder_desc*")
    d.struct_size, d.device, d.plane_count, d.planes = ffi.sizeof(d[0]), -1, 1, planes
    d.mask, d.perm, d.inv, d.span, d.n, d.stream = mask.address, perm.address, inv.address, span.address, n, s.handle
    d.flags = 1  # MASK_IS_DROP
    b.call.reorder_device(d)  # the query
    scratch = b.zeros(max(int(d.scratch_bytes), 1), "uint8")
    d.scratch, d.scratch_bytes = scratch.address, max(int(d.scratch_bytes), 1)
    b.call.reorder_device(d)
    return plane0, plane, perm, span, (scratch, planes, d, mask, inv)


@pytest.mark.parametrize("n", [10, 5000])
def test_a_perm_entry_out_of_range_moves_nothing_and_names_the_first_bad_position(opencl, n):
    s = opencl.stream()
    perm_host = np.arange(n)
    perm_host[[n // 2, n - 1]] = [n + 3, -1]
    plane0, plane, perm, span, keep = _reorder(opencl, s, perm_host, n, n)
    with pytest.raises(eagle.EagleError, match=rf"perm\[{n // 2}\] is outside \[0, n\); nothing was moved"):
        s.synchronize()
    assert np.array_equal(plane.numpy(), plane0) and np.array_equal(perm.numpy(), perm_host)
    assert int(span.numpy()[0]) == n


def test_a_span_past_n_moves_nothing(opencl):
    n = 3000
    s = opencl.stream()
    plane0, plane, perm, span, keep = _reorder(opencl, s, np.arange(n), n + 1, n)
    with pytest.raises(eagle.EagleError, match=rf"\*span \({n + 1}\) exceeds n \({n}\); nothing was moved"):
        s.synchronize()
    assert np.array_equal(plane.numpy(), plane0) and int(span.numpy()[0]) == n + 1


def test_a_bad_entry_past_span_is_not_looked_at(opencl):
    """Positions from *span on are untouched and unchecked: the partition of [0, span) goes on."""
    n, span_value = 4000, 2500
    s = opencl.stream()
    perm_host = np.arange(n)
    perm_host[3000] = n + 10
    plane0, plane, perm, span, keep = _reorder(opencl, s, perm_host, span_value, n)
    s.synchronize()
    pos = np.arange(span_value)
    kept = pos[pos % 3 != 0]
    order = np.concatenate([kept, pos[pos % 3 == 0]])
    assert np.array_equal(plane.numpy()[:span_value], plane0[order])
    assert np.array_equal(plane.numpy()[span_value:], plane0[span_value:])
    assert np.array_equal(perm.numpy()[:span_value], perm_host[order]) and int(span.numpy()[0]) == kept.size
