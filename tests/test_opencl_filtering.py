"""The opencl backend's reorder_device finds bad input on the device, where its plan runs on many
work-items: a perm entry outside [0, n) (the first such position named) or a *span past n moves
nothing, and the stream's next synchronize reports it. Runs on the `opencl` fixture
(tests/conftest.py), skipped naming why without one."""
import numpy as np
import pytest

import eagle
from eagle._seam_ffi import ffi
from _subproc import run_snippet

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


@pytest.mark.parametrize("how", ["tiles", "chunks"])
def test_both_compaction_strategies_equal_numpy_in_compact_and_reorder(opencl, how):
    """$EAGLE_OPENCL_COMPACT forces the GPU's tiles (work-groups of 256 and a scan) or the CPU's
    serially walked chunks; each gives numpy.flatnonzero's map and count for either mask sense and
    leaves the map past the count alone, and the reorder's plan (the same strategy) the stable
    partition of [0, span)."""
    out = run_snippet("""
        import numpy as np
        import eagle
        b = eagle.backend("opencl")
        s = b.stream(non_blocking=True)
        bad = []
        for n in (0, 1, 1023, 1024, 1025, 70001, 300007):
            mask_h = (np.random.default_rng(n).random(n) < 0.3).astype(np.uint8)
            mask, idx = b.asarray(mask_h), b.asarray(np.full(n + 4, -7, np.int32))
            count = b.zeros(1, "uint32")
            scratch = b.zeros(max(b.compact_scratch_bytes(n, stream=s), 1), "uint8")
            for drop in (False, True):
                b.compact(mask, idx, count, scratch, n=n, stream=s, drop=drop)
                s.synchronize()
                want = np.flatnonzero(mask_h == 0 if drop else mask_h)
                got = idx.numpy()
                if int(count.numpy()[0]) != want.size or not np.array_equal(got[:want.size], want) \\
                        or not np.all(got[n:] == -7):
                    bad.append(("compact", n, drop))
            # the reorder's plan takes the same strategy: a stable partition of [0, span), kept first
            span_v = n - n // 7
            a_h = np.random.default_rng(n + 1).random(n)
            a, perm = b.asarray(a_h), b.asarray(np.arange(n, dtype=np.int32))
            inv, span = b.asarray(np.arange(n, dtype=np.int32)), b.asarray(np.array([span_v], np.uint32))
            rs = b.zeros(max(b.reorder_scratch_bytes(n, planes=[a], stream=s), 1), "uint8")
            b.reorder([a], mask, perm, inv, span, rs, n=n, stream=s, drop=True)
            s.synchronize()
            pos = np.arange(span_v)
            order = np.concatenate([pos[mask_h[:span_v] == 0], pos[mask_h[:span_v] != 0], np.arange(span_v, n)])
            if not (np.array_equal(a.numpy(), a_h[order]) and np.array_equal(perm.numpy(), order)
                    and int(span.numpy()[0]) == int((mask_h[:span_v] == 0).sum())):
                bad.append(("reorder", n))
        result = bad
    """, env={"EAGLE_OPENCL_COMPACT": how, "EAGLE_BACKEND_OPENCL": opencl.path}, timeout=180)
    out.expect_ok()
    assert out.result == []


def test_a_wrong_compaction_strategy_is_unavailable_naming_the_variable(opencl):
    out = run_snippet("""
        import eagle
        eagle.backend("opencl").stream()
    """, env={"EAGLE_OPENCL_COMPACT": "fast", "EAGLE_BACKEND_OPENCL": opencl.path}, timeout=60)
    out.expect_raises("BackendUnavailable", match="EAGLE_OPENCL_COMPACT='fast'")
