"""A tour of the whole API through a traced cpu backend calls every pinned seam symbol."""
import gc
import threading

import numpy as np

import eagle
from eagle import _loader
from conftest import pinned_symbols
from test_api_kernels import c_kernels, kaddr


def _tour(b):
    b.probe()
    b.device_props(0)
    s = b.stream()
    t = b.stream(non_blocking=True)
    x = np.zeros(64)
    sel, cnt, cell = np.zeros(1, np.uint32), np.array([3], np.uint32), np.zeros(2, np.uint32)
    # eager work of every kind
    b.run(kaddr("add1"), [x], 64, stream=s)
    y = np.zeros(64)
    b.copy(y, x, stream=s)
    p = b.pinned(64)
    b.copy(p, x, stream=s)
    b.host_func(lambda: None, stream=s)
    b.fence(s, t)
    assert b.event_pool_created >= 0
    m = (np.arange(64) % 3 == 0).astype(np.uint8)
    idx, count = np.zeros(64, np.int32), np.zeros(1, np.uint32)
    scratch = np.zeros(b.compact_scratch_bytes(64), np.uint8)
    b.compact(m, idx, count, scratch, stream=s)
    perm, inv, span = np.arange(64, dtype=np.int32), np.arange(64, dtype=np.int32), np.array([64], np.uint32)
    rscratch = np.zeros(b.reorder_scratch_bytes(64), np.uint8)
    b.reorder([y], m, perm, inv, span, rscratch, stream=s)
    s.synchronize()
    # fork eagerly
    f = b.fork(s, 2)
    assert len(f) == 2 and f.origin.handle == s.handle
    f.fork()
    assert f.forked
    b.run(kaddr("add1"), [x], 64, stream=f.branch(0))
    f.join()
    f.close()
    # capture with conditionals, attribution
    cap = b.capture(s)
    cap.begin()
    b.run(kaddr("add1"), [x], 64, stream=s)
    nodes = b.snapshot_nodes(s)
    assert b.is_node_toggleable(nodes[0])
    w = b.while_(s, cnt, cell, loop_cap=10)
    assert w.is_loop
    body = w.begin()
    assert w.body_stream.handle == body.handle
    b.run(kaddr("dec_u32"), [cnt], 1, stream=body)
    w.end()
    w.close()
    sw = b.switch(s, sel, 2)
    sw.begin()
    b.run(kaddr("add1"), [x], 1, stream=sw.begin_case(1))
    sw.end()
    sw.close()
    captured = cap.end()
    cap.close()
    assert captured.is_valid
    g = b.graph_from_captured(captured)
    g.set_stream(s)
    assert g.last_node >= 0
    launcher = g.launcher()
    launcher.set_stream(s)
    launcher.set_logical_size(32)
    launcher.set_node_enabled(nodes[0], False)
    assert launcher.kernel_node_count == 3
    launcher.launch()
    launcher.synchronize()
    # node by node, and a captured left unconsumed
    g2 = b.graph()
    with b.capture(s) as c2:
        b.run(kaddr("add1"), [x], 64, stream=s)
    g2.add(c2.captured)
    with b.capture(s) as c3:
        b.host_func(lambda: None, stream=s)
    c3.captured.close()
    # minor 7: a module from source and from an image, device memory
    mod = b.compile("#include <eagle/kernel.h>\nEAGLE_KERNEL(inc, (double*, v)) { (void)n; v[i] += 1.0; }\n",
                    kernels=["inc"], cache=False)
    dev = b.zeros(8)
    mod.inc.run([dev], 8, stream=s)
    s.synchronize()
    assert dev.numpy().tolist() == [1.0] * 8
    mod.close()
    b.load_image(c_kernels()._name, kernels=["add1"]).close()
    del dev
    # an error, so last_error is read
    try:
        b.stream(device=7)
    except IndexError:
        pass
    for o in (launcher, g, g2, s, t):
        o.close()
    del p
    gc.collect()
    _waits_off_the_main_thread(b)


def _waits_off_the_main_thread(b):
    """On the main thread a wait polls stream_query / launcher_query (signals are handled between
    polls); on any other thread it is the blocking synchronize: both kinds are called."""
    errors = []

    def work():
        try:
            s = b.stream()
            x = np.zeros(8)
            with b.capture(s) as cap:
                b.run(kaddr("add1"), [x], 8, stream=s)
            g = b.graph_from_captured(cap.captured)
            launcher = g.launcher()
            launcher.set_stream(s)
            launcher.launch()
            launcher.synchronize()
            s.synchronize()
            assert x.tolist() == [1.0] * 8
            for o in (launcher, g, s):
                o.close()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert not errors, errors


def test_tour_calls_every_pinned_symbol():
    cpu = eagle.backend("cpu")
    traced = eagle.backend(cpu.path, trace=True)
    assert traced is not cpu and traced._traced
    _tour(traced)
    counts = _loader.TRACE_COUNTS
    missing = [sym for sym in pinned_symbols() if counts[sym] < 1]
    assert not missing, f"never called through the traced backend: {missing}"
    assert len(pinned_symbols()) >= 58
