"""Behavioural checks of seam minor 7: modules (compile, load, look up, release) and device memory.

Kind-free: every kind compiles the same source through <eagle/kernel.h> with its own compiler, the
result is read back with memcpy from memory mem_alloc gave, so nothing here names a kind."""
import os
import re

import numpy as np

from .._compilers import wheel_library_dirs
from .._seam_ffi import ffi
from ._registry import CheckFailure, Skip, check
from .behaviour import COND, Objects, _conditional, captured_of, launcher_of, replay

_INCLUDE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include")

# A line of its own for each piece, so a compiler's line numbers can be checked.
_SOURCE = b"""#include <eagle/kernel.h>
EAGLE_KERNEL(eagle_check_axpb, (int64_t*, x), (int64_t, a), (int64_t, b))
{
    (void)n;
    x[i] = a * x[i] + b + i;
}
"""
_BROKEN = b"""#include <eagle/kernel.h>
EAGLE_KERNEL(eagle_check_broken, (double*, x))
{
    x[i] = = 1.0;
}
"""
_BROKEN_LINE = 4
# A WHILE body's kernel: every lane counts its own call and takes one off the guard word (atomically:
# the lanes of a launch run at once on every kind).
_COUNTDOWN = b"""#include <eagle/kernel.h>
EAGLE_KERNEL(eagle_check_countdown, (uint32_t*, count), (int64_t*, hits))
{
    (void)n;
    hits[i] += 1;
#if EAGLE_KIND_GPU
    atomicSub(count, 1u);
#else
    __atomic_fetch_sub(count, 1u, __ATOMIC_RELAXED);
#endif
}
"""


def bcheck(check_id, needs=()):
    return check(check_id, kind="behaviour", needs=needs)


def _desc(flags=0):
    keep = [ffi.new("char[]", _INCLUDE.encode()), ffi.new("char[]", b"eagle_check.c"),
            ffi.new("char[]", ":".join(wheel_library_dirs()).encode())]
    dirs = ffi.new("const char*[]", [keep[0]])
    keep.append(dirs)
    d = ffi.new("struct eagle_backend_module_desc*")
    d.struct_size, d.flags, d.device = ffi.sizeof(d[0]), flags, -1
    d.name, d.include_dirs, d.include_dir_count = keep[1], dirs, 1
    d.compiler = keep[2]  # where pip wheels put runtime compilers (eagle's cuda extra), as eagle.compile does
    return d, keep


def _take_log(s, logp):
    if logp[0] == ffi.NULL:
        return ""
    text = ffi.string(logp[0]).decode("utf-8", "replace")
    s.raw("free", logp[0])
    return text


def _compile(s, source=_SOURCE, flags=0):
    """(status, module, log) of module_from_source."""
    d, keep = _desc(flags)
    out = ffi.new("eagle_backend_module*")
    logp = ffi.new("char**")
    st = s.raw("module_from_source", d, source, len(source), out, logp)
    log = _take_log(s, logp)
    if st == 5:  # UNAVAILABLE: the kind's compiler is not installed here, which is not a defect
        raise Skip(f"module_from_source is unavailable here (no compiler or no device): {s.last_error()}")
    return st, out[0], log


class _Memory:
    """mem_alloc'd words freed at exit."""

    def __init__(self, s):
        self.s, self.addrs = s, []

    def alloc(self, nbytes):
        out = ffi.new("uint64_t*")
        self.s.ok("mem_alloc", -1, nbytes, 0, out)
        self.addrs.append(int(out[0]))
        return int(out[0])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for a in self.addrs:
            self.s.raw("mem_free", a)


def _stream(s):
    desc = ffi.new("struct eagle_backend_stream_desc*")
    desc.struct_size, desc.device = ffi.sizeof(desc[0]), -1
    out = ffi.new("eagle_backend_stream*")
    s.ok("stream_create", desc, out)
    raw = ffi.new("uint64_t*")
    s.ok("stream_ptr", out[0], raw)
    return out[0], int(raw[0])


def _launch(s, fn, raw, args, n):
    storage = [ffi.new("int64_t*", a) for a in args]
    params = ffi.new("uint64_t[]", [int(ffi.cast("uintptr_t", p)) for p in storage])
    sizes = ffi.new("uint64_t[]", [8] * len(args))
    d = ffi.new("struct eagle_backend_launch_desc*")
    d.struct_size, d.device, d.function = ffi.sizeof(d[0]), -1, fn
    d.params, d.param_sizes, d.nparams = params, sizes, len(args)
    d.base, d.count, d.n_samples, d.stream = 0, n, n, raw
    launched = ffi.new("int32_t*")
    s.ok("run_device", d, launched)


@bcheck("module_from_source.compile_and_launch",
        needs=("stream", "exec", "module_function", "module_release", "mem_alloc", "mem_free", "memcpy"))
def compile_and_launch(s):
    """A source compiled through the seam gives kernel handles run_device launches, over memory
    from mem_alloc, with the result read back by memcpy; the ActiveSet variant follows the index map."""
    s.need_device()
    st, mod, log = _compile(s)
    if st != 0:
        raise CheckFailure(f"module_from_source of a correct source failed with status {st}: "
                           f"{s.last_error()!r}\n{log}")
    n = 1000
    try:
        fn, fn_active = ffi.new("uint64_t*"), ffi.new("uint64_t*")
        s.ok("module_function", mod, b"eagle_check_axpb", fn)
        s.ok("module_function", mod, b"eagle_check_axpb_active", fn_active)
        if not fn[0] or fn[0] == fn_active[0]:
            raise CheckFailure("module_function gave 0 or one handle for two kernels")
        with _Memory(s) as mem:
            x, idx, live = mem.alloc(n * 8), mem.alloc(n * 4), mem.alloc(4)
            if x % 256 or idx % 256:
                raise CheckFailure(f"mem_alloc returned 0x{x:x} / 0x{idx:x}, not 256-byte aligned")
            host = np.arange(n, dtype=np.int64)
            imap = np.arange(0, n, 2, dtype=np.int32)
            count = np.array([imap.size], np.uint32)
            h, raw = _stream(s)
            try:
                s.ok("memcpy", x, host.ctypes.data, host.nbytes, 1, raw)
                s.ok("memcpy", idx, imap.ctypes.data, imap.nbytes, 1, raw)
                s.ok("memcpy", live, count.ctypes.data, 4, 1, raw)
                _launch(s, fn[0], raw, [x, 3, 5], n)
                _launch(s, fn_active[0], raw, [x, 2, 0, idx, live], n)
                back = np.zeros(n, np.int64)
                s.ok("memcpy", back.ctypes.data, x, back.nbytes, 2, raw)
                s.ok("stream_synchronize", h)
            finally:
                s.raw("stream_release", h)
        want = 3 * np.arange(n) + 5 + np.arange(n)
        want[::2] = 2 * want[::2] + np.arange(0, n, 2)
        if not np.array_equal(back, want):
            bad = np.flatnonzero(back != want)[:4]
            raise CheckFailure("compiled kernels computed wrong values: " +
                               ", ".join(f"[{i}] {back[i]} != {want[i]}" for i in bad))
    finally:
        s.raw("module_release", mod)


@bcheck("module_from_source.syntax_error")
def syntax_error(s):
    """A source that does not compile is COMPILE_FAILED with a log that names the line, never a crash."""
    st, mod, log = _compile(s, _BROKEN)
    if st == 0:
        s.raw("module_release", mod)
        raise CheckFailure("a source with a syntax error compiled (status OK)")
    if st != 9:
        raise CheckFailure(f"a syntax error gave status {st}, expected COMPILE_FAILED: {s.last_error()!r}")
    if not re.search(rf"[:(]{_BROKEN_LINE}[:)]", log):
        raise CheckFailure(f"the compile log does not name line {_BROKEN_LINE}: {log!r}")
    if mod != ffi.NULL:
        raise CheckFailure("module_from_source wrote a module on failure")


@bcheck("module_from_source.refusals")
def source_refusals(s):
    """An unknown flag is UNSUPPORTED; a NULL desc or output is INVALID_ARGUMENT."""
    d, keep = _desc(0x80)
    out = ffi.new("eagle_backend_module*")
    s.expect("module_from_source", "UNSUPPORTED", d, _SOURCE, len(_SOURCE), out, ffi.NULL, why="flag 0x80")
    d, keep = _desc()
    s.expect("module_from_source", "INVALID_ARGUMENT", ffi.NULL, _SOURCE, len(_SOURCE), out, ffi.NULL,
             why="NULL desc")
    s.expect("module_from_source", "INVALID_ARGUMENT", d, _SOURCE, len(_SOURCE), ffi.NULL, ffi.NULL,
             why="NULL out")


_CONTRACT, _FAST_MATH = 2, 1  # EAGLE_BACKEND_MODULE_CONTRACT (minor 8), EAGLE_BACKEND_MODULE_FAST_MATH


@bcheck("module_from_source.fp_modes", needs=("module_release",))
def source_fp_modes(s):
    """Since minor 8: CONTRACT compiles a module whose kernels run and compute what the exact one
    does (integer arithmetic: no rounding to differ); CONTRACT together with FAST_MATH is
    INVALID_ARGUMENT (one floating-point mode per module)."""
    minor = int(s.raw("version")) & 0xFFFF
    if minor < 8:
        raise Skip(f"the backend is minor {minor}; CONTRACT is since minor 8 (flags 0 mean bit-exact for it)")
    d, keep = _desc(_CONTRACT | _FAST_MATH)
    out = ffi.new("eagle_backend_module*")
    s.expect("module_from_source", "INVALID_ARGUMENT", d, _SOURCE, len(_SOURCE), out, ffi.NULL,
             why="FAST_MATH | CONTRACT")
    s.need_device()
    for flags in (_CONTRACT, _FAST_MATH):
        st, mod, log = _compile(s, flags=flags)
        if st != 0:
            raise CheckFailure(f"module_from_source with flags {flags} failed: {s.last_error()!r}\n{log}")
        try:
            fn = ffi.new("uint64_t*")
            s.ok("module_function", mod, b"eagle_check_axpb", fn)
            n = 64
            with _Memory(s) as mem:
                x = mem.alloc(n * 8)
                host = np.arange(n, dtype=np.int64)
                stream, raw = _stream(s)
                try:
                    s.ok("memcpy", x, host.ctypes.data, n * 8, 1, raw)  # H2D
                    _launch(s, int(fn[0]), raw, [x, 3, 5], n)
                    s.ok("memcpy", host.ctypes.data, x, n * 8, 2, raw)  # D2H
                    s.ok("stream_synchronize", stream)
                finally:
                    s.raw("stream_release", stream)
            want = 3 * np.arange(n) + 5 + np.arange(n)
            if not np.array_equal(host, want):
                raise CheckFailure(f"the kernel compiled with flags {flags} computed wrong values: {host[:4]}...")
        finally:
            s.raw("module_release", mod)


@bcheck("module_from_image.garbage")
def image_garbage(s):
    """Bytes that are no image are COMPILE_FAILED (not a crash); an empty image is INVALID_ARGUMENT."""
    s.need_device()
    d, keep = _desc()
    out = ffi.new("eagle_backend_module*")
    logp = ffi.new("char**")
    junk = b"this is no module image; " * 40 + b"\0"  # not ELF, not fatbin, not PTX
    st = s.raw("module_from_image", d, junk, len(junk), out, logp)
    _take_log(s, logp)
    if st == 0:
        s.raw("module_release", out[0])
        raise CheckFailure("module_from_image loaded 1 KiB of junk")
    if st != 9:
        raise CheckFailure(f"junk gave status {st}, expected COMPILE_FAILED: {s.last_error()!r}")
    s.expect("module_from_image", "INVALID_ARGUMENT", d, ffi.NULL, 0, out, ffi.NULL, why="empty image")


@bcheck("module_function.unknown_name", needs=("module_from_source", "module_release"))
def unknown_name(s):
    """A name the module does not hold is INVALID_ARGUMENT naming it; a NULL module too."""
    s.need_device()
    st, mod, _ = _compile(s)
    if st != 0:
        raise CheckFailure(f"module_from_source failed: {s.last_error()!r}")
    try:
        fn = ffi.new("uint64_t*")
        msg = s.expect("module_function", "INVALID_ARGUMENT", mod, b"no_such_kernel", fn)
        if "no_such_kernel" not in msg:
            raise CheckFailure(f"the message does not name the kernel: {msg!r}")
        s.expect("module_function", "INVALID_ARGUMENT", ffi.NULL, b"x", fn, why="NULL module")
    finally:
        s.raw("module_release", mod)


@bcheck("module_release.null_safe")
def release_null(s):
    """module_release(NULL) returns."""
    s.raw("module_release", ffi.NULL)


@bcheck("mem_alloc.refusals", needs=("mem_free",))
def alloc_refusals(s):
    """0 bytes is INVALID_ARGUMENT, an unknown flag UNSUPPORTED, a NULL out INVALID_ARGUMENT."""
    s.need_device()
    out = ffi.new("uint64_t*")
    s.expect("mem_alloc", "INVALID_ARGUMENT", -1, 0, 0, out, why="0 bytes")
    s.expect("mem_alloc", "UNSUPPORTED", -1, 64, 0x80, out, why="flag 0x80")
    s.expect("mem_alloc", "INVALID_ARGUMENT", -1, 64, 0, ffi.NULL, why="NULL address")


@bcheck("mem_free.zero_and_foreign", needs=("mem_alloc",))
def free_zero_and_foreign(s):
    """mem_free(0) and of an address mem_alloc did not return are no-ops; a real one frees."""
    s.need_device()
    s.raw("mem_free", 0)
    host = np.zeros(64, np.uint8)
    s.raw("mem_free", host.ctypes.data)  # never freed by the backend: numpy still owns it
    host[:] = 1
    out = ffi.new("uint64_t*")
    for _ in range(3):
        s.ok("mem_alloc", -1, 1 << 20, 0, out)
        s.raw("mem_free", int(out[0]))


@bcheck("module_from_source.while_body",
        needs=COND + ("exec", "module_function", "module_release", "mem_alloc", "mem_free", "memcpy"))
def while_compiled_body(s):
    """A WHILE whose body ends with a kernel compiled from EAGLE_KERNEL, over several thousand lanes
    (a backend may end each iteration from such a kernel instead of a setter of its own): the guard
    is re-read after every lane of the body has run, with and without a baseline, up to loop_cap,
    and the cell is [remaining, ran], replay after replay."""
    s.need_device()
    st, mod, log = _compile(s, _COUNTDOWN)
    if st != 0:
        raise CheckFailure(f"module_from_source failed: {s.last_error()!r}\n{log}")
    n, cap = 3000, 10
    try:
        fn = ffi.new("uint64_t*")
        s.ok("module_function", mod, b"eagle_check_countdown", fn)
        mem = s.device()
        hits = mem.zeros(n, np.int64)
        count, base, cell = mem.zeros(1, np.uint32), mem.zeros(1, np.uint32), mem.array([77, 77], np.uint32)
        with Objects(s) as o:
            h, raw = o.stream()
            for with_base, cases in ((False, ((3, 0, 3), (0, 0, 0), (25, 0, 10), (10, 0, 10), (1, 0, 1))),
                                     (True, ((5, 2, 3), (4, 4, 0), (30, 5, 10)))):
                def record():
                    c = _conditional(s, o, raw, count, base if with_base else None, cell, loop_cap=cap)
                    body = ffi.new("uint64_t*")
                    s.ok("conditional_begin", c, body)
                    _launch(s, fn[0], int(body[0]), [count.addr, hits.addr], n)
                    s.ok("conditional_end", c)

                lau = o.add("launcher_release", launcher_of(s, captured_of(s, raw, record), raw))
                total = 0
                hits.set(np.zeros(n, np.int64))
                for start, floor, runs in cases:
                    count.set([start * n])
                    base.set([floor * n])
                    replay(s, lau)
                    total += runs
                    got_cell, got_count, got = cell.get().tolist(), int(count.get()[0]), hits.get()
                    if (got_cell != [cap - runs, runs] or got_count != (start - runs) * n
                            or got.min() != total or got.max() != total):
                        raise CheckFailure(
                            f"WHILE (*count = {start}*{n}{f', *baseline = {floor}*{n}' if with_base else ''}, "
                            f"loop_cap {cap}) over a compiled kernel of {n} lanes that takes {n} off *count: "
                            f"expected {runs} iterations, cell [{cap - runs}, {runs}], *count {(start - runs) * n}, "
                            f"every lane called {total} times; got cell {got_cell}, *count {got_count}, "
                            f"lanes called {got.min()}..{got.max()} times")
    finally:
        s.raw("module_release", mod)
    return "8 replays decided as the guard said, baseline or not"
