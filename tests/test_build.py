"""eagle.Graph.build and its constructs on the cpu backend: every construct, their nesting,
toggling members, the host-decided fall-back, backend inference and printing."""
import warnings

import numpy as np
import pytest

import eagle
from eagle import kernels

N = 64

SRC = r"""
#include <stdint.h>
#define ARG(T, i) (*(T const*)p[i])
/* x[i] += a over the partition */
void addc(void* const* p, int64_t base, int64_t count, int64_t n) {
    double* x = ARG(double*, 0); const double a = ARG(double, 1);
    for (int64_t i = base; i < base + count; ++i) x[i] += a;
}
/* x[i] *= a */
void mulc(void* const* p, int64_t base, int64_t count, int64_t n) {
    double* x = ARG(double*, 0); const double a = ARG(double, 1);
    for (int64_t i = base; i < base + count; ++i) x[i] *= a;
}
/* w[0] += d (uint32 word), once per launch */
void word_add(void* const* p, int64_t base, int64_t count, int64_t n) {
    uint32_t* w = ARG(uint32_t*, 0); const int64_t d = ARG(int64_t, 1);
    if (base == 0) w[0] = (uint32_t)((int64_t)w[0] + d);
}
/* dst[i] = src[i] (for ordering checks) */
void copyp(void* const* p, int64_t base, int64_t count, int64_t n) {
    double* d = ARG(double*, 0); const double* s = ARG(const double*, 1);
    for (int64_t i = base; i < base + count; ++i) d[i] = s[i];
}
"""


@pytest.fixture(scope="module")
def K():
    return kernels.load("cpu", SRC, ["addc", "mulc", "word_add", "copyp"])


def add(K, x, a):
    def step(s):
        s.run(K.addc, [x, float(a)], x.size)
    step.__name__ = f"add{a:g}"
    return step


def mul(K, x, a):
    def step(s):
        s.run(K.mulc, [x, float(a)], x.size)
    step.__name__ = f"mul{a:g}"
    return step


def word_add(K, w, d):
    def step(s):
        s.run(K.word_add, [w, int(d)], 1)
    step.__name__ = f"word{d:+d}"
    return step


def u32(v):
    return np.array([v], np.uint32)


@pytest.fixture(params=["device", "host"])
def mode(request, cpu):
    """Every program runs both decided on the device and on the host (forced)."""
    return request.param


def build(steps, planes, mode, **kw):
    g = eagle.Graph.build(steps, planes=planes, on_device=(mode == "device") or False, **kw)
    assert g.decides_on_device is (mode == "device")
    return g


# ------------------------------------------------------------------------------------- constructs

def test_plain_steps_replay_n_times(K, mode):
    x = np.zeros(N)
    g = build([add(K, x, 1), mul(K, x, 2)], [x], mode)
    g.launch(3)
    g.synchronize()
    assert np.all(x == 14)  # (0+1)*2 = 2, (2+1)*2 = 6, (6+1)*2 = 14


def test_repeat_while_runs_until_the_guard_fails_and_reports_iterations(K, mode):
    x, cnt = np.zeros(N), u32(0)
    loop = eagle.repeat_while([add(K, x, 1), word_add(K, cnt, -1)], cnt, max_iters=100)
    g = build([loop], [x], mode)
    cnt[0] = 7
    g()
    assert np.all(x == 7) and cnt[0] == 0 and g.ran(loop) == 7
    cnt[0] = 0
    g()  # guard false at entry: no iteration
    assert np.all(x == 7) and g.ran(loop) == 0


def test_repeat_while_stops_at_max_iters(K, mode):
    x, cnt = np.zeros(N), u32(50)
    loop = eagle.repeat_while(add(K, x, 1), cnt, max_iters=4)
    g = build([loop], [x], mode)
    with pytest.warns(eagle.RanOutWarning, match=r"ran out of its max_iters=4 iterations with 50 samples still live"):
        g()
    assert np.all(x == 4) and g.ran(loop) == 4 and cnt[0] == 50
    cnt[0] = 0  # the guard no longer holds: a loop that ends by its guard says nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error", eagle.RanOutWarning)
        g()


def test_repeat_while_guard_with_baseline(K, mode):
    x, cnt, base = np.zeros(N), u32(0), u32(5)
    loop = eagle.repeat_while([add(K, x, 1), word_add(K, cnt, +1)], (cnt, base), max_iters=100)
    g = build([loop], [x], mode)
    g()
    assert np.all(x == 5) and cnt[0] == 5


def test_skippable_runs_iff_count_differs_from_baseline(K, mode):
    x, cnt, base = np.zeros(N), u32(3), u32(3)
    g = build([eagle.skippable(add(K, x, 1), (cnt, base))], [x], mode)
    g()
    assert np.all(x == 0)
    cnt[0] = 4
    g()
    assert np.all(x == 1)
    base[0] = 4
    g()
    assert np.all(x == 1)


def test_switch_runs_the_selected_case_and_none_out_of_range(K, mode):
    x, sel = np.zeros(N), u32(0)
    g = build([eagle.switch(sel, [add(K, x, 1), add(K, x, 10), [add(K, x, 100), mul(K, x, 2)]])], [x], mode)
    for s, expect in ((0, 1), (1, 11), (2, 222), (3, 222), (7, 222)):
        sel[0] = s
        g()
        assert np.all(x == expect), (s, x[0])


def test_concurrent_members_all_run_before_what_follows(K, mode):
    a, b, c, out = np.zeros(N), np.zeros(N), np.zeros(N), np.zeros(N)

    def total(s):
        s.run(K.copyp, [out, a], N)
        s.run(K.addc, [out, 0.0], N)
    prog = [eagle.concurrent(add(K, a, 1), [add(K, b, 2), mul(K, b, 3)], add(K, c, 5)), total]
    g = build(prog, [a, b, c, out], mode)
    g()
    assert np.all(a == 1) and np.all(b == 6) and np.all(c == 5) and np.all(out == 1)


# ----------------------------------------------------------------------------------------- nesting

def test_skippable_inside_a_loop_body(K, mode):
    x, y, cnt, flag = np.zeros(N), np.zeros(N), u32(0), u32(0)
    body = [add(K, x, 1), eagle.skippable(add(K, y, 1), flag), word_add(K, cnt, -1)]
    g = build([eagle.repeat_while(body, cnt, 100)], [x, y], mode)
    cnt[0] = 3
    g()
    assert np.all(x == 3) and np.all(y == 0)
    cnt[0], flag[0] = 2, 1
    g()
    assert np.all(x == 5) and np.all(y == 2)


def test_concurrent_and_switch_inside_a_loop(K, mode):
    a, b, cnt, sel = np.zeros(N), np.zeros(N), u32(4), u32(1)
    body = [eagle.concurrent(add(K, a, 1), add(K, b, 2)),
            eagle.switch(sel, [mul(K, a, 0), add(K, b, 10)]),
            word_add(K, cnt, -1)]
    g = build([eagle.repeat_while(body, cnt, 100)], [a, b], mode)
    g()
    assert np.all(a == 4) and np.all(b == 48)


def test_loop_inside_a_loop(K, mode):
    x, outer, inner = np.zeros(N), u32(3), u32(0)

    def reset_inner(s):
        s.run(K.word_add, [inner, 3], 1)  # inner is 0 after each inner loop: set it to 3
    inner_loop = eagle.repeat_while([add(K, x, 1), word_add(K, inner, -1)], inner, 10)
    g = build([eagle.repeat_while([reset_inner, inner_loop, word_add(K, outer, -1)], outer, 10)], [x], mode)
    g()
    assert np.all(x == 9) and outer[0] == 0


# ---------------------------------------------------------------------------------------- toggling

def test_members_switch_off_and_on_without_rebuild(K, mode):
    x, cnt = np.zeros(N), u32(0)
    plain, loop = add(K, x, 1), eagle.repeat_while([add(K, x, 10), word_add(K, cnt, -1)], cnt, 5, name="tens")
    g = build([plain, loop, mul(K, x, 2)], [x], mode)
    if mode == "device":
        assert [m.how for m in g.members] == ["node", "guard", "node"]
    else:
        assert {m.how for m in g.members} == {"host"}
    cnt[0] = 1
    g()
    assert np.all(x == 22)
    g.disable(plain)
    cnt[0] = 1
    g()
    assert np.all(x == 64)
    g.disable("tens")
    cnt[0] = 1
    g()
    assert np.all(x == 128) and cnt[0] == 1
    g.enable(0)
    g.member("tens").enabled = True
    x[:] = 0
    g()
    assert np.all(x == 22)
    assert "off" not in g.to_text()


def test_toggle_false_refuses_to_switch_a_construct(K):
    x, cnt = np.zeros(N), u32(0)
    g = eagle.Graph.build([eagle.skippable(add(K, x, 1), cnt), add(K, x, 1)], planes=[x], toggle=False)
    assert g.members[0].how is None and g.members[1].how == "node"
    with pytest.raises(eagle.Unsupported, match="toggle=False"):
        g.disable(0)
    g.disable(1)
    cnt[0] = 1
    g()
    assert np.all(x == 1)


# ------------------------------------------------------------------------- host-decided fall-back

@pytest.fixture
def no_conditional(cpu, monkeypatch):
    """A distinct Backend object on the cpu library that does not provide conditional."""
    b = eagle.backend(cpu.path, trace=True)
    assert b is not cpu
    reason = f"the cpu backend '{cpu.path}' does not provide conditional"
    unavailable = dict(b.unavailable, conditional=reason)
    unavailable["eagle_backend_conditional_begin_case"] = reason
    monkeypatch.setattr(b, "unavailable", unavailable)
    monkeypatch.setattr(b, "groups", b.groups - {"conditional"})
    return b


def test_without_conditional_the_same_program_runs_decided_on_the_host(K, cpu, no_conditional):
    results = []
    for b in (cpu, no_conditional):
        x, y, cnt, flag, sel = np.zeros(N), np.zeros(N), u32(6), u32(1), u32(1)
        body = [add(K, x, 1), eagle.skippable(mul(K, y, 3), flag), eagle.switch(sel, [add(K, y, 5), add(K, y, 1)]),
                word_add(K, cnt, -1)]
        loop = eagle.repeat_while(body, cnt, 100)
        g = eagle.Graph.build([add(K, y, 1), loop], planes=[x, y], backend=b)
        g()
        results.append((x.copy(), y.copy(), g.decides_on_device, g.ran(loop), "on the host" in str(g)))
    (dx, dy, d_dev, d_ran, _), (hx, hy, h_dev, h_ran, h_text) = results
    assert d_dev is True and h_dev is False and h_text
    assert np.array_equal(dx, hx) and np.array_equal(dy, hy) and d_ran == h_ran == 6


def test_without_conditional_on_device_true_is_refused(K, no_conditional):
    x, cnt = np.zeros(N), u32(0)
    with pytest.raises(eagle.Unsupported, match="does not provide conditional"):
        eagle.Graph.build([eagle.skippable(add(K, x, 1), cnt)], planes=[x], backend=no_conditional, on_device=True)


def test_a_switch_without_begin_case_falls_back_to_the_host(K, cpu, monkeypatch):
    b = eagle.backend(cpu.path, trace=True)
    unavailable = dict(b.unavailable)
    unavailable["eagle_backend_conditional_begin_case"] = "no begin_case here"
    monkeypatch.setattr(b, "unavailable", unavailable)
    x, sel, cnt = np.zeros(N), u32(1), u32(1)
    g = eagle.Graph.build([eagle.switch(sel, [add(K, x, 1), add(K, x, 2)])], planes=[x], backend=b)
    assert not g.decides_on_device
    g()
    assert np.all(x == 2)
    g2 = eagle.Graph.build([eagle.skippable(add(K, x, 1), cnt)], planes=[x], backend=b)
    assert g2.decides_on_device  # IF/WHILE alone still decide on the device


# ------------------------------------------------------------------------------- backend inference

class FakeDeviceArray:
    def __init__(self, device_type, device_id=0):
        self._dev = (device_type, device_id)

    def __dlpack_device__(self):
        return self._dev


def test_backend_is_inferred_from_where_the_planes_live(K, cpu):
    x = np.zeros(N)
    g = eagle.Graph.build([add(K, x, 1)], planes=[x])
    assert g.backend is cpu


def test_planes_on_two_devices_are_refused_naming_both(K):
    x = np.zeros(N)
    with pytest.raises(ValueError, match=r"plane 0 on cpu:0.*plane 1 on cuda:1"):
        eagle.Graph.build([add(K, x, 1)], planes=[x, FakeDeviceArray(2, 1)])


def test_planes_on_a_device_no_kind_serves_are_refused(K):
    with pytest.raises(ValueError, match="device type 99"):
        eagle.Graph.build([lambda s: None], planes=[FakeDeviceArray(99)])


def test_an_explicit_backend_that_does_not_serve_the_planes_is_refused(K):
    with pytest.raises(ValueError, match="does not serve"):
        eagle.Graph.build([lambda s: None], planes=[FakeDeviceArray(2, 0)], backend="cpu")


def test_no_planes_and_no_backend_is_refused():
    with pytest.raises(ValueError, match="give planes= .* or backend="):
        eagle.Graph.build([lambda s: None])


def test_the_guard_words_locate_the_device_when_no_planes_are_given(K, cpu):
    x, cnt = np.zeros(N), u32(1)
    g = eagle.Graph.build([eagle.skippable(add(K, x, 1), cnt)])
    assert g.backend is cpu
    g()
    assert np.all(x == 1)


def test_backend_gpu_without_a_gpu_backend_is_refused():
    if any(k in ("cuda", "hip", "metal") for k in eagle.backends()):
        pytest.skip("a GPU backend is installed")
    with pytest.raises(eagle.BackendUnavailable, match="no GPU backend"):
        eagle.Graph.build([lambda s: None], planes=[np.zeros(1)], backend="gpu")


# ------------------------------------------------------------------------------ printing, errors

def test_the_graph_prints_as_text_and_dot(K):
    x, cnt, sel = np.zeros(N), u32(0), u32(0)
    loop = eagle.repeat_while([add(K, x, 1), eagle.concurrent(add(K, x, 2), add(K, x, 3))], cnt, 9, name="main loop")
    g = eagle.Graph.build([add(K, x, 1), loop, eagle.switch(sel, [add(K, x, 4)])], planes=[x])
    text = g.to_text()
    assert "decisions on the device" in text and "main loop" in text and "branch 1:" in text
    assert "add2" in text and "case 0:" in text
    dot = g.to_dot()
    assert dot.startswith("digraph eagle {") and dot.rstrip().endswith("}")
    assert 'label="again"' in dot and "fork" in dot and "join" in dot and 'label="case 0"' in dot
    g.disable(0)
    assert "[0] off" in g.to_text() and "style=dotted" in g.to_dot()


def test_bad_steps_and_arguments_are_refused(K):
    x = np.zeros(N)
    with pytest.raises(TypeError, match="step must be callable"):
        eagle.Graph.build([42], planes=[x])
    with pytest.raises(ValueError, match="max_iters must be in 1 .. 2"):
        eagle.repeat_while(add(K, x, 1), u32(1), 0)
    with pytest.raises(ValueError, match="at least one case"):
        eagle.switch(u32(0), [])
    with pytest.raises(ValueError, match="recorded no work"):
        eagle.Graph.build([lambda s: None], planes=[x])
    with pytest.raises(KeyError, match="no member"):
        eagle.Graph.build([add(K, x, 1)], planes=[x]).disable("nope")
    with pytest.raises(TypeError, match="Graph.build"):
        eagle.Graph()
