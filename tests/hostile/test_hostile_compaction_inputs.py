"""Careless and hostile inputs to compaction and reorder (eagle.compact, Backend.reorder,
eagle.ActiveSet) on the cpu backend: each case runs in a fresh interpreter (a crash or a hang is a
failing test), must be refused with the named EagleError, and must leave untouched every byte it
was not offered: the tail behind a short word, and the whole of a read-only buffer."""
import textwrap

import pytest

from _subproc import run_snippet

SETUP = """
import numpy as np
import eagle
cpu = eagle.backend("cpu")
s = cpu.stream()
n = 64
mask = np.zeros(n, np.uint8); mask[::2] = 1
im, cnt = np.zeros(n, np.int32), np.zeros(1, np.uint32)
sc = np.zeros(cpu.compact_scratch_bytes(n), np.uint8)
perm, inv = np.arange(n, dtype=np.int32), np.arange(n, dtype=np.int32)
span, fire = np.array([n], np.uint32), np.array([1], np.uint32)
rsc = np.zeros(cpu.reorder_scratch_bytes(n), np.uint8)
x = np.arange(n, dtype=np.float64)
_guarded = []  # (bytes eagle must not write, as a uint8 view; what they hold)

def short(values, dtype):
    # `values` at the start of a larger buffer: the 64 bytes behind them are not offered
    v = np.asarray(values, dtype)
    buf = np.full(v.nbytes + 64, 0xAA, np.uint8)
    out = buf[:v.nbytes].view(dtype).reshape(v.shape)
    out[...] = v
    _guarded.append((buf[v.nbytes:], buf[v.nbytes:].tobytes()))
    return out

def readonly(values, dtype):
    # `values` in an immutable bytes object (writeable=False): none of it is offered
    out = np.frombuffer(np.asarray(values, dtype).tobytes(), dtype).reshape(np.shape(values))
    _guarded.append((out.reshape(-1).view(np.uint8), out.tobytes()))  # tobytes(): a copy
    return out

def _check_untouched():
    s.synchronize()  # anything the call enqueued has run
    bad = [i for i, (view, was) in enumerate(_guarded) if view.tobytes() != was]
    assert not bad, f"eagle wrote bytes it was not offered (guarded buffers {bad})"
"""

VALUE, TYPE = "EagleValueError", "EagleTypeError"

# (id, code, expected exception class name, strings its message must hold)
REFUSED = [
    # -- eagle.compact's reorder trigger: live32 and fire are written, span is read --------------
    ("compact: a 1-byte live32", "eagle.compact(mask, im, cnt, sc, drop=True, live32=short([0], np.uint8))",
     VALUE, "eagle.compact: live32 holds 1 bytes, 4 are needed"),
    ("compact: a read-only live32", "eagle.compact(mask, im, cnt, sc, drop=True, live32=readonly([7], np.uint32))",
     VALUE, "eagle.compact: live32 is read-only"),
    ("compact on a stream: a 1-byte live32",
     "cpu.compact(mask, im, cnt, sc, drop=True, live32=short([0], np.uint8), stream=s)",
     VALUE, "eagle.compact: live32 holds 1 bytes, 4 are needed"),
    ("compact: a 2-byte fire", "eagle.compact(mask, im, cnt, sc, drop=True, span=span, fire=short([0], np.uint16),"
     " theta=0.5)", VALUE, "eagle.compact: fire holds 2 bytes, 4 are needed"),
    ("compact: a read-only fire", "eagle.compact(mask, im, cnt, sc, drop=True, span=span,"
     " fire=readonly([7], np.uint32), theta=0.5)", VALUE, "eagle.compact: fire is read-only"),
    ("compact: a 2-byte span", "eagle.compact(mask, im, cnt, sc, drop=True, span=short([n], np.uint16), fire=fire,"
     " theta=0.5)", VALUE, "eagle.compact: span holds 2 bytes, 4 are needed"),
    # -- Backend.reorder: the planes, perm, inv, span, fire and scratch are written, the mask read ----
    ("reorder: a short perm", "cpu.reorder([x], mask, short(np.arange(n - 1), np.int32), inv, span, rsc, stream=s)",
     VALUE, "eagle.reorder: perm holds 252 bytes, 256 are needed"),
    ("reorder: a read-only inv", "cpu.reorder([x], mask, perm, readonly(np.arange(n), np.int32), span, rsc, stream=s)",
     VALUE, "eagle.reorder: inv is read-only"),
    ("reorder: a read-only span", "cpu.reorder([x], mask, perm, inv, readonly([n], np.uint32), rsc, stream=s)",
     VALUE, "eagle.reorder: span is read-only"),
    ("reorder: a 1-byte fire", "cpu.reorder([x], mask, perm, inv, span, rsc, fire=short([1], np.uint8), stream=s)",
     VALUE, "eagle.reorder: fire holds 1 bytes, 4 are needed"),
    ("reorder: a read-only scratch",
     "cpu.reorder([x], mask, perm, inv, span, readonly(np.zeros(rsc.size), np.uint8), stream=s)",
     VALUE, "eagle.reorder: scratch is read-only"),
    ("reorder: a short mask", "cpu.reorder([x], short(mask[:-1], np.uint8), perm, inv, span, rsc, n=n, stream=s)",
     VALUE, "eagle.reorder: mask holds 63 bytes, 64 are needed"),
    ("reorder: a read-only plane", "cpu.reorder([x, readonly(np.arange(n), np.float64)], mask, perm, inv, span, rsc,"
     " stream=s)", VALUE, ["eagle.reorder: planes[1] is read-only"]),
    ("reorder: a plane one sample short", "cpu.reorder([short(np.arange(n - 1), np.float64)], mask, perm, inv, span,"
     " rsc, drop=True, stream=s)", VALUE, "eagle.reorder: planes[0] must have shape (64,) or (w, 64), got (63,)"),
    ("reorder: a (0, n) plane", "cpu.reorder([short(np.zeros((0, n)), np.float64)], mask, perm, inv, span, rsc,"
     " stream=s)", VALUE, "eagle.reorder: planes[0] holds 0 bytes, 512 are needed"),
    ("reorder: a (data, elem_size) plane too short", "cpu.reorder([(short(np.arange(n - 1), np.float64), 8)], mask,"
     " perm, inv, span, rsc, drop=True, stream=s)", VALUE, "eagle.reorder: planes[0] holds 504 bytes, 512 are needed"),
    ("reorder: a plane tuple of 1", "cpu.reorder([(x,)], mask, perm, inv, span, rsc, stream=s)",
     VALUE, "planes[0] must be an array or a tuple (address, elem_size"),
    ("reorder: a string elem_size", "cpu.reorder([(x, 'x')], mask, perm, inv, span, rsc, stream=s)",
     TYPE, "eagle.reorder: planes[0]: elem_size must be an integer"),
    ("reorder: an int as a plane", "cpu.reorder([5], mask, perm, inv, span, rsc, stream=s)",
     TYPE, "eagle.reorder: planes[0] must be an array or a tuple"),
    ("reorder: flags=-1", "cpu.reorder([x], mask, perm, inv, span, rsc, flags=-1, stream=s)",
     VALUE, "eagle.reorder: flags must be >= 0"),
    ("reorder_scratch_bytes('a')", "cpu.reorder_scratch_bytes('a')",
     TYPE, "eagle.reorder_scratch_bytes: n must be an integer"),
    # -- ActiveSet(reorder=...) rewrites its mask and planes in place ------------------------------
    ("ActiveSet: a read-only plane", "p = readonly(np.arange(n), np.float64)\n"
     "m = np.zeros(n, np.uint8)\n"
     "a = eagle.ActiveSet(m, reorder=0.5, planes=[p])\n"
     "m[::2] = 1\n"
     "for _ in range(3): a.compact(s)", VALUE, "eagle.ActiveSet: plane 0 is read-only"),
    ("ActiveSet: a read-only second plane", "m = np.zeros(n, np.uint8)\n"
     "a = eagle.ActiveSet(m, reorder=0.5, planes=[x, readonly(np.arange(2 * n).reshape(2, n), np.int32)])\n"
     "m[::2] = 1\n"
     "for _ in range(3): a.compact(s)", VALUE, "eagle.ActiveSet: plane 1 is read-only"),
    ("ActiveSet.own: a read-only plane", "m = np.zeros(n, np.uint8)\n"
     "a = eagle.ActiveSet(m, reorder=0.5)\n"
     "a.own(readonly(np.arange(n), np.float64))\n"
     "m[::2] = 1\n"
     "for _ in range(3): a.compact(s)", VALUE, "eagle.ActiveSet: plane 0 is read-only"),
    ("ActiveSet: a read-only mask", "a = eagle.ActiveSet(readonly(mask, np.uint8), reorder=0.5)\n"
     "for _ in range(3): a.compact(s)", VALUE, ["eagle.ActiveSet: the mask", "is read-only"]),
    ("ActiveSet: a plane made read-only after it was owned", "m = np.zeros(n, np.uint8)\n"
     "p = np.arange(n, dtype=np.float64)\n"
     "a = eagle.ActiveSet(m, reorder=0.5, planes=[p])\n"
     "p.setflags(write=False)\n"
     "_guarded.append((p.view(np.uint8), p.tobytes()))\n"
     "m[::2] = 1\n"
     "for _ in range(3): a.compact(s)", VALUE, ["planes[1] is read-only"]),
    # -- bare Python exceptions where an EagleError names the argument --------------------------
    ("ActiveSet: reorder='x'", "eagle.ActiveSet(mask, reorder='x')",
     TYPE, "eagle.ActiveSet: reorder (theta) must be a real number, got a str"),
    ("ActiveSet: reorder=[1]", "eagle.ActiveSet(mask, reorder=[1])",
     TYPE, "eagle.ActiveSet: reorder (theta) must be a real number, got a list"),
    ("ActiveSet: reorder=0.5j", "eagle.ActiveSet(mask, reorder=0.5j)",
     TYPE, "eagle.ActiveSet: reorder (theta) must be a real number, got a complex"),
    ("ActiveSet: a 0-d plane", "eagle.ActiveSet(mask, reorder=0.5, planes=[np.zeros(())])",
     VALUE, "eagle.ActiveSet: a plane must have shape (64,) or (w, 64), got ()"),
    ("ActiveSet.drain: None as the stream", "eagle.ActiveSet(mask).drain(None, 0, [], 1)",
     TYPE, "eagle.ActiveSet.drain: stream must be an eagle stream"),
    ("compact: flags=-1", "eagle.compact(mask, im, cnt, sc, flags=-1)", VALUE, "eagle.compact: flags must be >= 0"),
    ("compact: flags=2**32", "eagle.compact(mask, im, cnt, sc, flags=1 << 32)",
     VALUE, "eagle.compact: flags must be <= 4294967295"),
    ("compact: theta='x'", "eagle.compact(mask, im, cnt, sc, theta='x')",
     TYPE, "eagle.compact: theta must be a real number, got a str"),
    ("compact: device='x'", "eagle.compact(mask, im, cnt, sc, device='x')",
     TYPE, "eagle.compact: device must be an integer"),
    ("compact_scratch_bytes(2**64)", "cpu.compact_scratch_bytes(2 ** 64)",
     VALUE, "eagle.compact_scratch_bytes: n must be <= 9223372036854775807"),
    ("compact_scratch_bytes('a')", "cpu.compact_scratch_bytes('a')",
     TYPE, "eagle.compact_scratch_bytes: n must be an integer"),
]


def _snippet(code):
    """SETUP, then ``code``, then the check that no guarded byte changed (run however it ended)."""
    return SETUP + "try:\n" + textwrap.indent(code, "    ") + "\nfinally:\n    _check_untouched()\n"


@pytest.mark.parametrize("code,expected,match", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_hostile_compaction_input_is_refused_and_writes_nothing(code, expected, match):
    out = run_snippet(_snippet(code), timeout=60)
    out.expect_no_crash()
    out.expect_raises(expected, match=match)


def test_the_words_right_sized_still_work():
    """The checks refuse nothing they should take: 4-byte trigger words, and a plane given as a
    (data, elem_size, width) tuple (its pitch is then n * elem_size, as documented)."""
    out = run_snippet(_snippet("""
l32, sp, fi = short([0], np.uint32), short([n], np.uint32), short([0], np.uint32)
eagle.compact(mask, im, cnt, sc, drop=True, live32=l32, span=sp, fire=fi, theta=0.5)
two = np.arange(2 * n, dtype=np.float64).reshape(2, n)
kept_first = np.concatenate([two[:, 1::2], two[:, 0::2]], axis=1)  # drop=True: the odd samples live
cpu.reorder([(two, 8, 2)], mask, perm, inv, span, rsc, drop=True, stream=s)
s.synchronize()
result = [int(cnt[0]), int(l32[0]), int(fi[0]), bool((two == kept_first).all()), int(span[0])]
"""))
    assert out.expect_ok() == [32, 32, 1, True, 32]


def test_a_reorder_keeps_its_temporaries_until_it_has_run():
    """Backend.reorder on a stream that has not reached it: the planes and words handed over as
    temporaries stay alive until the reorder has run (as compact's do), and it moves them right."""
    out = run_snippet(SETUP + textwrap.dedent("""
        import gc, threading, weakref
        gate = threading.Event()
        s.host_func(gate.wait)  # the stream waits here until the temporaries are gone from Python
        plane = np.arange(n, dtype=np.float64)
        words = [np.array(w) for w in (mask, perm, inv, span, fire, rsc)]
        refs = [weakref.ref(a) for a in [plane] + words]
        seen = []
        cpu.reorder([plane], *words[:4], words[5], fire=words[4], drop=True, stream=s)
        s.host_func(lambda: seen.append(np.array(refs[0]())))  # the plane, as the reorder left it
        del plane, words
        gc.collect()
        held = [r() is not None for r in refs]
        gate.set()
        s.synchronize()
        assert all(held), held
        assert (seen[0] == np.r_[np.arange(1, n, 2), np.arange(0, n, 2)]).all(), seen[0]
        result = "ok"
    """), timeout=60)
    out.expect_ok()
