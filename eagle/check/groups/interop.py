"""Checks of the ``interop`` group: a fence makes a consumer stream wait for a producer's work, and its
status codes."""
import time

import numpy as np

from ..._seam_ffi import ffi
from .._registry import CheckFailure
from ._helpers import Objects, SLOW_US, bcheck, enqueue_work, expect_equal


@bcheck("interop.fence_orders", needs=("stream", "exec"))
def interop_fence_orders(s):
    """fence(producer, consumer) makes work enqueued later on the consumer wait for the
    producer's work so far, without blocking the host."""
    mem = s.device()
    dl = _device_type(s)
    with Objects(s) as o:
        ha, rawa = o.stream()
        hb, rawb = o.stream()
        x, y = mem.zeros(1, np.int64), mem.array([1], np.int64)
        s.launch("affine", rawa, [x.addr, 0, 7, SLOW_US * 2], 1)
        t0 = time.monotonic()
        s.ok("fence", dl, 0, rawa, rawb)
        blocked = time.monotonic() - t0
        s.launch("accum", rawb, [y.addr, x.addr, 0], 1)
        s.sync(hb)
        expect_equal("consumer's result (it must see the producer's write)", y.get(), [1 * 3 + 7])
        s.sync(ha)
        if blocked > SLOW_US * 2 / 1e6 * 0.8:
            raise CheckFailure(f"fence blocked the host for {blocked:.3f} s (it must only order streams)")


def _device_type(s):
    count = ffi.new("int32_t*")
    types = ffi.new("int32_t[16]")
    s.ok("device_types", types, 16, count)
    return int(types[0])


@bcheck("interop.fence_codes", needs=("stream",))
def interop_fence_codes(s):
    """fence with no stream given (STREAM_NONE) is OK; a device type the kind does not serve is
    INTEROP; event_pool_created is a count >= 0."""
    s.need_device()
    dl = _device_type(s)
    none = -2**63
    s.ok("fence", dl, 0, none, none)
    with Objects(s) as o:
        h, raw = o.stream()
        s.ok("fence", dl, 0, raw, none)
        s.ok("fence", dl, 0, none, raw)
    s.expect("fence", "INTEROP", 0x7FFF, 0, none, none, why="device type 32767 is served by no kind")
    created = ffi.new("int64_t*", -1)
    s.ok("event_pool_created", created)
    if created[0] < 0:
        raise CheckFailure(f"event_pool_created = {created[0]}")
    return f"event pool: {created[0]} created"


@bcheck("interop.event_pool_counts", needs=("stream",))
def interop_event_pool_counts(s):
    """event_pool_created counts the events (or fence objects) the pool has created so far: it
    never goes down, and after fences that ordered one stream's pending work before another's it
    is at least 1 (the pool has made an object to order them)."""
    s.need_device()
    dl = _device_type(s)
    created = ffi.new("int64_t*", -1)
    s.ok("event_pool_created", created)
    before = int(created[0])
    keep = []
    with Objects(s) as o:
        ha, rawa = o.stream()
        hb, rawb = o.stream()
        for _ in range(3):
            enqueue_work(s, rawa, keep)
            s.ok("fence", dl, 0, rawa, rawb)
            enqueue_work(s, rawb, keep)
        s.sync(hb)
        s.sync(ha)
    s.ok("event_pool_created", created)
    after = int(created[0])
    if after < before:
        raise CheckFailure(f"event_pool_created went down: {before} -> {after} (a count of objects created so far)")
    if after < 1:
        raise CheckFailure(f"event_pool_created = {after} after 3 fences that ordered pending work between two "
                           "streams: the pool has created no event or fence object?")
    return f"event pool: {before} -> {after}"
