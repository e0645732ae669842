"""eagle.Graph.build on a backend that cannot record (no capturer/captured/graph/launcher, as the
opencl kind without cl_khr_command_buffer): the host-decided path enqueues each piece's steps again at every launch instead of
replaying a launcher. Here the cpu backend is made to look so (its capture groups reported
missing), and the oscillator card, both loops, must give the bits of the normal recorded run."""
import os

from _subproc import run_snippet

CARD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "oscillator")


def test_card_with_eager_pieces_matches_the_recorded_run():
    out = run_snippet("""
        import sys
        import numpy as np
        import eagle
        sys.path.insert(0, CARD)
        import oscillator as o
        n = 300
        recorded = {loop: o.run("cpu", n, loop=loop) for loop in ("drain", "while")}
        b = eagle.backend("cpu")
        for g in ("capturer", "captured", "graph", "launcher", "conditional"):
            b.unavailable[g] = f"{g}: hidden by this test"
        assert not b.provides("capturer")
        same = {}
        for loop in ("drain", "while"):
            x, v = o.run("cpu", n, loop=loop)
            rx, rv = recorded[loop]
            same[loop] = bool(np.array_equal(x, rx) and np.array_equal(v, rv))
        # twice in a row: each launch enqueues the pieces again (the reset step is one of them)
        launches = []
        g = eagle.Graph.build([lambda s: launches.append(1)], backend=b)
        g.launch(3)
        g.synchronize()
        result = [same, g.decides_on_device, len(launches)]
    """, globals={"CARD": CARD}, timeout=240)
    same, on_device, launches = out.result
    assert same == {"drain": True, "while": True}
    assert on_device is False
    assert launches == 3  # a plain step runs at every launch, not once at build time
