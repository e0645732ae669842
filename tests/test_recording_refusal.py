"""Every door that does work given no ``stream=`` refuses while ``Graph.build`` records a step on
this thread, and while the backend's default stream is being captured: such work would run once,
now, and be missing from every replay. The refusal lives in one place (eagle._inflight's
``own_stream``, where every call given no stream gets eagle's stream), so each door below is
refused by the same check; a test per door keeps any new path from going around it.

Each case also checks the work did not run: the refusal comes before anything is enqueued."""
import numpy as np
import pytest

import eagle

N = 16
SOURCE = """
#include <eagle/kernel.h>
EAGLE_KERNEL(bump, (double*, x)) { (void)n; x[i] += 1.0; }
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return eagle.compile(SOURCE, backend=cpu)


def _compact_args(b):
    mask = (np.arange(N) % 2).astype(np.uint8)
    return mask, np.full(N, -1, np.int32), np.zeros(1, np.uint32), np.zeros(b.compact_scratch_bytes(N), np.uint8)


def _reorder_args(b):
    x = np.arange(N, dtype=np.float64)
    mask = (np.arange(N) % 2).astype(np.uint8)
    perm, inv = np.arange(N, dtype=np.int32), np.arange(N, dtype=np.int32)
    span = np.array([N], np.uint32)
    return [x], mask, perm, inv, span, np.zeros(b.reorder_scratch_bytes(N), np.uint8)


# door -> (call made with no stream, given the backend, the module and a fresh state; what must
# stay untouched) -- the state is made outside the step so the check sees the same arrays.
def _door_cases():
    def copy_case(call):
        def make(b, m):
            x, y = np.ones(N), np.zeros(N)
            return (lambda: call(b, y, x)), (lambda: not y.any())
        return make

    def run_case(call):
        def make(b, m):
            x = np.zeros(N)
            return (lambda: call(b, m, x)), (lambda: not x.any())
        return make

    def compact_case(call):
        def make(b, m):
            args = _compact_args(b)
            return (lambda: call(b, *args)), (lambda: args[2][0] == 0 and (args[1] == -1).all())
        return make

    def reorder_case(b, m):
        planes, mask, perm, inv, span, scratch = _reorder_args(b)
        before = planes[0].copy()
        return ((lambda: b.reorder(planes, mask, perm, inv, span, scratch)),
                (lambda: (planes[0] == before).all() and (perm == np.arange(N)).all()))

    def activeset_case(b, m):
        mask = (np.arange(N) % 2).astype(np.uint8)
        aset = eagle.ActiveSet(mask, backend=b)
        aset.compact(b.stream())  # on a stream: allowed; its result is read back below
        return (lambda: aset.compact()), (lambda: True)

    def mean_var_case(b, m):
        x = np.arange(N, dtype=np.float64)
        return (lambda: eagle.mean_var(x)), (lambda: True)

    return {
        "eagle.copy": (copy_case(lambda b, y, x: eagle.copy(y, x)), "eagle.copy"),
        "Backend.copy": (copy_case(lambda b, y, x: b.copy(y, x)), "eagle.copy"),
        "eagle.run": (run_case(lambda b, m, x: eagle.run(m.bump, [x], N)), "eagle.run"),
        "Backend.run": (run_case(lambda b, m, x: b.run(m.bump, [x], N)), "eagle.run"),
        "Kernel.run": (run_case(lambda b, m, x: m.bump.run([x], N)), "eagle.run"),
        "eagle.compact": (compact_case(lambda b, *a: eagle.compact(*a)), "eagle.compact"),
        "Backend.compact": (compact_case(lambda b, *a: b.compact(*a)), "eagle.compact"),
        "Backend.reorder": (reorder_case, "eagle.reorder"),
        "ActiveSet.compact": (activeset_case, "ActiveSet.compact"),
        "eagle.mean_var": (mean_var_case, "eagle.run"),
    }


DOORS = _door_cases()


@pytest.mark.parametrize("door", list(DOORS))
def test_a_call_with_no_stream_inside_a_recorded_step_is_refused(cpu, mod, door):
    make, named = DOORS[door]
    call, untouched = make(cpu, mod)

    def careless(s):
        call()
    with pytest.raises(eagle.EagleValueError, match="Graph.build records step 'careless'") as e:
        eagle.Graph.build([careless], planes=[np.zeros(N)], backend=cpu)
    assert named in str(e.value) and "stream=" in str(e.value)
    assert untouched(), f"{door} ran once while the graph was built"
    call()  # the same call once the build is over runs eagerly


@pytest.mark.parametrize("door", ["eagle.copy", "Backend.copy", "Backend.run", "Backend.compact",
                                  "Backend.reorder"])
def test_a_call_with_no_stream_while_the_default_stream_is_captured_is_refused(cpu, mod, door):
    """Issue 42: Backend.copy with no stream ran on eagle's own stream, outside the capture of the
    default stream, and nothing was said."""
    make, named = DOORS[door]
    call, untouched = make(cpu, mod)
    with pytest.raises(eagle.EagleValueError, match="default stream is being captured") as e:
        with cpu.capture(None):
            call()
    assert named in str(e.value)
    assert untouched(), f"{door} ran outside the capture"
    call()  # no capture any more: eager again


def test_a_capture_of_another_stream_leaves_eager_calls_alone(cpu):
    x, y = np.ones(N), np.zeros(N)
    s = cpu.stream()
    with cpu.capture(s) as cap:
        cpu.copy(y, x)  # eagle's own stream, not the captured one: runs now
        cpu.copy(x, y, stream=s)
    assert (y == 1).all()
    cap.captured.close()
