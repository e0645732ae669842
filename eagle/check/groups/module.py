"""Checks of kernels and device memory (minor 7, per-symbol entries): modules are compiled (or
loaded), looked up and released; mem_alloc / mem_free.

Kind-free: every kind compiles the same source through <eagle/kernel.h> with its own compiler, the
result is read back with memcpy from memory mem_alloc gave, so nothing here names a kind."""
import os
import time
import re

import numpy as np

from ..._compilers import wheel_library_dirs
from ..._seam_ffi import ffi
from ..._seam_meta import CONSTANTS
from .._registry import CheckFailure, Skip
from .._seam import STATUS, status_name
from ._helpers import (COND, Objects, bcheck, captured_of, conditional_of, launcher_of, measured_release,
                       replay)


_INCLUDE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "include")

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
    if st == STATUS["UNAVAILABLE"]:  # the kind's compiler is not installed here, which is not a defect
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


_CONTRACT = CONSTANTS["EAGLE_BACKEND_MODULE_CONTRACT"]  # since minor 8
_FAST_MATH = CONSTANTS["EAGLE_BACKEND_MODULE_FAST_MATH"]


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
    """A name the module does not hold is INVALID_ARGUMENT naming it; a NULL module is refused
    (INVALID_ARGUMENT or BAD_HANDLE) with a message."""
    s.need_device()
    st, mod, _ = _compile(s)
    if st != 0:
        raise CheckFailure(f"module_from_source failed: {s.last_error()!r}")
    try:
        fn = ffi.new("uint64_t*")
        msg = s.expect("module_function", "INVALID_ARGUMENT", mod, b"no_such_kernel", fn)
        if "no_such_kernel" not in msg:
            raise CheckFailure(f"the message does not name the kernel: {msg!r}")
        # a NULL module: INVALID_ARGUMENT (a bad value) or BAD_HANDLE (not a module this backend
        # made); the header names neither for it, and both carry a message
        s.expect("module_function", ("INVALID_ARGUMENT", "BAD_HANDLE"), ffi.NULL, b"x", fn, why="NULL module")
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
                    c = conditional_of(s, o, raw, count, base if with_base else None, cell, loop_cap=cap)
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


def _compile_as(s, source, name=b"eagle_check.c", options=(), flags=0, nbytes=None):
    """(status, module, log, last_error) of module_from_source with desc->name `name` and the
    compiler options `options`; source_bytes is `nbytes` (default: all of `source`)."""
    d, keep = _desc(flags)
    keep.append(ffi.new("char[]", name))
    d.name = keep[-1]
    opts = [ffi.new("char[]", o) for o in options]
    keep += opts
    if opts:
        arr = ffi.new("const char*[]", opts)
        keep.append(arr)
        d.options, d.option_count = arr, len(opts)
    out = ffi.new("eagle_backend_module*")
    logp = ffi.new("char**")
    st = s.raw("module_from_source", d, source, len(source) if nbytes is None else nbytes, out, logp)
    log = _take_log(s, logp)
    msg = s.last_error() if st else ""
    if st == 5:
        raise Skip(f"module_from_source is unavailable here (no compiler or no device): {msg}")
    return st, out[0], log, msg


# A warning before the error, so that the log's first line is not its first error line.
_WARN_THEN_BROKEN = b"""#include <eagle/kernel.h>
#warning "eagle check: a warning comes first"
EAGLE_KERNEL(eagle_check_broken2, (double*, x))
{
    x[i] = = 1.0;
}
"""


def _first_error_line(log):
    for line in log.splitlines():
        if "error" in line.lower() and "warning" not in line.lower():
            return line.strip()
    return ""


@bcheck("module_from_source.first_error_line")
def first_error_line(s):
    """COMPILE_FAILED's last_error gives the log's first error line (not merely its first line)."""
    s.need_device()
    st, mod, log, msg = _compile_as(s, _WARN_THEN_BROKEN)
    if st == 0:
        s.raw("module_release", mod)
        raise CheckFailure("a source with a syntax error compiled (status OK)")
    if st != 9:
        raise CheckFailure(f"a syntax error gave status {st}, expected COMPILE_FAILED: {msg!r}")
    first = _first_error_line(log)
    if not first:
        raise Skip(f"the compiler's log has no line that says 'error': {log!r}")
    if first not in msg:
        raise CheckFailure(f"last_error after COMPILE_FAILED is {msg!r}; it must give the log's first error "
                           f"line, {first!r}")
    return f"last_error: {msg!r}"


@bcheck("module_from_source.log_names_source")
def log_names_source(s):
    """The compile log names the source by desc->name, never by a path the backend made (a
    temporary file)."""
    s.need_device()
    name = "eagle_check_named_source.c"
    st, mod, log, msg = _compile_as(s, _BROKEN, name=name.encode())
    if st == 0:
        s.raw("module_release", mod)
        raise CheckFailure("a source with a syntax error compiled (status OK)")
    if name not in log:
        raise CheckFailure(f"the compile log does not name the source {name!r} (desc->name): {log[:500]!r}")
    m = re.search(r"(\S*[/\\])" + re.escape(name), log)
    if m:
        raise CheckFailure(f"the compile log names the source as {m.group(0)!r}, a path the backend made; it "
                           f"names it by desc->name, {name!r}")
    return f"the log names {name}"


_NEEDS_OPTION = b"""#include <eagle/kernel.h>
#ifndef EAGLE_CHECK_OPTION
#error "EAGLE_CHECK_OPTION is not defined: desc->options were not passed to the compiler"
#endif
EAGLE_KERNEL(eagle_check_opt, (int64_t*, x))
{
    (void)n;
    x[i] = EAGLE_CHECK_OPTION;
}
"""


@bcheck("module_from_source.options")
def options_passed(s):
    """desc->options reach the compiler as they are: a source that needs -DEAGLE_CHECK_OPTION=3
    compiles with it (and does not without it)."""
    s.need_device()
    st, mod, log, msg = _compile_as(s, _NEEDS_OPTION, options=(b"-DEAGLE_CHECK_OPTION=3",))
    if st:
        raise CheckFailure(f"a source that needs the option -DEAGLE_CHECK_OPTION=3, passed in desc->options, "
                           f"did not compile ({msg!r}): the options were not passed as they are\n{log[:500]}")
    s.raw("module_release", mod)
    st, mod, log, msg = _compile_as(s, _NEEDS_OPTION)
    if st == 0:
        s.raw("module_release", mod)
        raise Skip("the source compiled without the option too; the compiler ignores #error")
    return "-DEAGLE_CHECK_OPTION=3 reached the compiler"


@bcheck("module_from_source.source_bytes", needs=("module_function", "module_release"))
def source_bytes_honoured(s):
    """module_from_source reads source_bytes bytes, which need not be NUL-terminated: what
    follows them in the caller's buffer (here, bytes that are not C) is not compiled."""
    s.need_device()
    tail = b"\n@@@ these bytes follow source_bytes and are not C @@@"
    st, mod, log, msg = _compile_as(s, _SOURCE + tail, nbytes=len(_SOURCE))
    if st:
        raise CheckFailure(f"a correct source of source_bytes = {len(_SOURCE)} bytes, followed in the buffer by "
                           f"bytes that are not C, did not compile ({msg!r}): the backend read past "
                           f"source_bytes\n{log[:500]}")
    try:
        fn = ffi.new("uint64_t*")
        s.ok("module_function", mod, b"eagle_check_axpb", fn)
    finally:
        s.raw("module_release", mod)


_NUL_INSIDE = b"""#include <eagle/kernel.h>
/* a NUL byte follows: \0 and the source goes on past it */
EAGLE_KERNEL(eagle_check_after_nul, (int64_t*, x))
{
    (void)n;
    x[i] = 1;
}
"""


@bcheck("module_from_source.embedded_nul", needs=("module_function", "module_release"), advice=True)
def source_embedded_nul(s):
    """Advice: a NUL byte inside source_bytes (in a comment) does not end the source. The header
    says only that the source need not be NUL-terminated; runtime compilers that take a C string
    (NVRTC, hiprtc) stop at the first NUL, so this is not required."""
    s.need_device()
    st, mod, log, msg = _compile_as(s, _NUL_INSIDE)
    if st:
        raise CheckFailure(f"a source with a NUL byte inside a comment did not compile ({msg!r}): the source "
                           "was cut at its first NUL instead of source_bytes")
    try:
        fn = ffi.new("uint64_t*")
        s.ok("module_function", mod, b"eagle_check_after_nul", fn)
    finally:
        s.raw("module_release", mod)


# Results IEEE 754 double arithmetic gives bit for bit (numpy computes the same, unfused):
#   a * b + c with a = 1 + 2^-30, b = 1 - 2^-30, c = -1: 0 unfused (a*b rounds to 1), -2^-60 fused;
#   (x + big) - big with x = 1, big = 2^53: 0 (x + big rounds to big); 1 when reassociated;
#   tiny * 0.5 with tiny the least normal double: a subnormal, 0 when denormals are flushed;
#   (q != q) with q a NaN: 1; 0 when NaNs are assumed away.
_IEEE = b"""#include <eagle/kernel.h>
EAGLE_KERNEL(eagle_check_ieee, (const double*, in), (double*, out))
{
    (void)n;
    out[4 * i + 0] = in[0] * in[1] + in[2];
    out[4 * i + 1] = (in[3] + in[4]) - in[4];
    out[4 * i + 2] = in[5] * in[6];
    out[4 * i + 3] = (in[7] != in[7]) ? 1.0 : 0.0;
}
"""


@bcheck("module_from_source.bit_exact",
        needs=("stream", "exec", "module_function", "module_release", "mem_alloc", "mem_free", "memcpy"))
def bit_exact(s):
    """Without FAST_MATH a module computes IEEE double arithmetic bit-exact: no contraction of
    a*b+c, no reassociation of (x+big)-big, subnormals kept, NaN compares unequal: the same bits
    numpy gives."""
    s.need_device()
    st, mod, log, msg = _compile_as(s, _IEEE)
    if st:
        raise CheckFailure(f"module_from_source of a correct source failed with status {st}: {msg!r}\n{log}")
    lanes = 4
    inputs = np.array([1 + 2.0**-30, 1 - 2.0**-30, -1.0, 1.0, 2.0**53, np.finfo(np.float64).tiny, 0.5, np.nan])
    with np.errstate(invalid="ignore"):
        want = np.array([inputs[0] * inputs[1] + inputs[2], (inputs[3] + inputs[4]) - inputs[4],
                         inputs[5] * inputs[6], 1.0 if inputs[7] != inputs[7] else 0.0])
    try:
        fn = ffi.new("uint64_t*")
        s.ok("module_function", mod, b"eagle_check_ieee", fn)
        with _Memory(s) as mem:
            din, dout = mem.alloc(inputs.nbytes), mem.alloc(8 * 4 * lanes)
            h, raw = _stream(s)
            back = np.zeros(4 * lanes, np.float64)
            try:
                s.ok("memcpy", din, inputs.ctypes.data, inputs.nbytes, 1, raw)
                _launch(s, fn[0], raw, [din, dout], lanes)
                s.ok("memcpy", back.ctypes.data, dout, back.nbytes, 2, raw)
                s.ok("stream_synchronize", h)
            finally:
                s.raw("stream_release", h)
    finally:
        s.raw("module_release", mod)
    names = ("a*b+c (contraction)", "(x+big)-big (reassociation)", "tiny*0.5 (subnormal)", "NaN != NaN")
    for lane in range(lanes):
        got = back[4 * lane:4 * lane + 4]
        bad = [f"{names[k]}: {got[k]!r}, IEEE gives {want[k]!r}" for k in range(4)
               if got[k].tobytes() != want[k].tobytes()]
        if bad:
            raise CheckFailure("a module compiled without FAST_MATH is not bit-exact: " + "; ".join(bad))
    return "contraction, reassociation, subnormals and NaN as IEEE gives them"


_IMAGE_SOURCE = b"""void eagle_check_image_kernel(void* const* p, long long base, long long count, long long n)
{ (void)p; (void)base; (void)count; (void)n; }
"""


def _host_image(s):
    """A shared object for this host, for a kind whose device memory is host memory (DLPack device
    type 1, kDLCPU: "cpu a shared object for this host"), built with the system C compiler; Skip
    for other kinds (the checker carries no image of theirs) or without a C compiler."""
    import shutil
    import subprocess
    import tempfile
    count = ffi.new("int32_t*")
    types = ffi.new("int32_t[16]")
    s.ok("device_types", types, 16, count)
    if 1 not in [int(types[i]) for i in range(min(int(count[0]), 16))]:
        raise Skip("the checker carries a loadable image only for kinds that serve host memory (DLPack 1)")
    cc = shutil.which(os.environ.get("CC", "cc").split()[0] if os.environ.get("CC") else "cc") or shutil.which("gcc")
    if not cc:
        raise Skip("no C compiler here to build a shared object for module_from_image")
    with tempfile.TemporaryDirectory(prefix="eagle-check-image-") as tmp:
        src, so = os.path.join(tmp, "image.c"), os.path.join(tmp, "image.so")
        with open(src, "wb") as f:
            f.write(_IMAGE_SOURCE)
        p = subprocess.run([cc, "-shared", "-fPIC", src, "-o", so], capture_output=True, text=True)
        if p.returncode:
            raise Skip(f"the system C compiler could not build a shared object: {p.stderr[-300:]}")
        with open(so, "rb") as f:
            return f.read()


@bcheck("module_from_image.log_on_ok", needs=("module_release", "module_function"))
def image_log_on_ok(s):
    """module_from_image writes *log on OK too, as module_from_source does: the loader's messages,
    or NULL when it said nothing; the caller's old pointer is never left there."""
    s.need_device()
    image = _host_image(s)
    d, keep = _desc()
    out = ffi.new("eagle_backend_module*")
    stale = ffi.new("char[]", b"the caller's stale pointer")
    logp = ffi.new("char**", stale)
    st = s.raw("module_from_image", d, image, len(image), out, logp)
    left = logp[0]
    if left != ffi.NULL and left != stale:
        s.raw("free", left)
    if st:
        raise CheckFailure(f"module_from_image of a shared object for this host failed: {s.last_error()!r}")
    try:
        fn = ffi.new("uint64_t*")
        s.ok("module_function", out[0], b"eagle_check_image_kernel", fn)
    finally:
        s.raw("module_release", out[0])
    if left == stale:
        raise CheckFailure("module_from_image returned OK and left *log as the caller had it (a stale pointer "
                           "the caller would free); *log receives the messages, or NULL when there are none")
    return "*log written on OK"


def _mappings():
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


@bcheck("module_release.unloads", needs=("module_function",))
def release_unloads(s):
    """module_release unloads the module: compiling, looking up and releasing modules over and over
    does not grow the process's memory mappings (measured where /proc/self/maps exists)."""
    s.need_device()
    if not os.path.exists("/proc/self/maps"):
        raise Skip("needs /proc/self/maps to see what stays loaded")

    def cycle(k):
        src = _SOURCE.replace(b"eagle_check_axpb", b"eagle_check_axpb_%d" % k)
        st, mod, log, msg = _compile_as(s, src)
        if st:
            raise CheckFailure(f"module_from_source failed: {msg!r}")
        fn = ffi.new("uint64_t*")
        try:
            s.ok("module_function", mod, b"eagle_check_axpb_%d" % k, fn)
        finally:
            s.raw("module_release", mod)

    cycle(0)
    cycle(1)
    before = _mappings()
    cycles = 6
    for k in range(2, 2 + cycles):
        cycle(k)
    grown = _mappings() - before
    if grown >= cycles:
        raise CheckFailure(f"{cycles} modules compiled and released left {grown} more memory mappings in the "
                           "process: module_release does not unload them")
    return f"{cycles} compile + release cycles: mappings {grown:+d}"


@bcheck("mem_free.frees", needs=("mem_alloc", "memcpy", "stream"))
def mem_free_frees(s):
    """mem_free frees at once: 40 cycles of mem_alloc(4 MiB), a copy into all of it, mem_free do
    not grow the process's resident memory (device memory of a kind whose device memory is host
    memory shows there; other kinds' does not, and then nothing is measured that could fail)."""
    s.need_device()
    block = np.full(1 << 19, 0x5A5A5A5A5A5A5A5A, np.uint64)   # 4 MiB
    out = ffi.new("uint64_t*")
    h, raw = _stream(s)

    def cycle():
        s.ok("mem_alloc", -1, block.nbytes, 0, out)
        a = int(out[0])
        s.ok("memcpy", a, block.ctypes.data, block.nbytes, 1, raw)
        s.ok("stream_synchronize", h)
        s.raw("mem_free", a)

    try:
        # 1 MiB a cycle of slack: an allocator may keep a few freed blocks (glibc raises its mmap
        # threshold after a free, so later blocks come from a heap that does not shrink); memory
        # that is never freed grows 4 MiB a cycle, 160 MiB in all
        return measured_release(s, "mem_alloc(4 MiB) + copy + mem_free", cycle, 40, per_cycle_bytes=1 << 20, warm=5)
    finally:
        s.raw("stream_release", h)


@bcheck("mem_free.not_ours_kept", needs=("mem_alloc", "memcpy", "stream"))
def mem_free_not_ours_kept(s):
    """An address mem_alloc did not return is ignored, never freed: one inside a live allocation
    (the allocation stays whole and usable), and a block of this process's C heap (the heap does
    not hand the same block out again while its owner still holds it)."""
    import ctypes
    import ctypes.util
    s.need_device()
    out = ffi.new("uint64_t*")
    s.ok("mem_alloc", -1, 4096, 0, out)
    a = int(out[0])
    h, raw = _stream(s)
    try:
        s.raw("mem_free", a + 256)   # inside the allocation: not an address mem_alloc returned
        pattern = np.arange(512, dtype=np.int64) * 7 + 3
        back = np.zeros_like(pattern)
        s.ok("memcpy", a, pattern.ctypes.data, pattern.nbytes, 1, raw)
        s.ok("memcpy", back.ctypes.data, a, back.nbytes, 2, raw)
        s.ok("stream_synchronize", h)
        if not np.array_equal(back, pattern):
            raise CheckFailure("after mem_free(address + 256), the allocation at address no longer keeps what "
                               "is written to it: an address mem_alloc did not return was freed")
    finally:
        s.raw("stream_release", h)
        s.raw("mem_free", a)
    # a block of this process's C heap: numpy's default allocator takes array memory straight from
    # malloc (64 KiB: above numpy's small-block cache, below glibc's mmap threshold)
    for _ in range(4):
        held = np.empty(1 << 16, np.uint8)
        p = held.ctypes.data
        s.raw("mem_free", p)          # this process's heap block, not the backend's
        again = np.empty(1 << 16, np.uint8)
        q = again.ctypes.data
        del again
        if q == p:
            raise CheckFailure(f"mem_free(0x{p:x}) of a C heap block mem_alloc never returned freed it (the heap "
                               "handed the same block out again while its owner still held it)")
        del held
    return "an inner address and a heap block of the caller were left alone"


# ------------------------------------------------------------------ round 4: limits and exact outputs
#: Sizes no device has: 2^62, both sides of INT64_MAX, 2^64 - 1.
_HUGE = (1 << 62, (1 << 63) - 1, 1 << 63, (1 << 64) - 1)


def _first_missing_device(s, limit=64):
    """The smallest device index >= 0 mem_alloc refuses (all below it allocate), or None when
    mem_alloc allocates on every index below `limit`."""
    out = ffi.new("uint64_t*")
    for d in range(limit):
        out[0] = 0
        st = int(s.raw("mem_alloc", d, 256, 0, out))
        if st == 0:
            s.raw("mem_free", out[0])
            continue
        if st != STATUS["INDEX"]:
            raise CheckFailure(f"mem_alloc of 256 bytes on device {d} returned {status_name(st)}: "
                               f"{s.last_error()!r}; a device that does not exist is INDEX")
        return d
    return None


def _first_missing_elsewhere(s, limit=64):
    """The smallest device index device_props (or, without it, stream_create) calls missing (INDEX),
    or None."""
    for d in range(limit):
        if s.provides("device"):
            props = ffi.new("struct eagle_backend_device_props*")
            props.struct_size = ffi.sizeof(props[0])
            st = int(s.raw("device_props", d, props))
        elif s.provides("stream"):
            desc = ffi.new("struct eagle_backend_stream_desc*")
            desc.struct_size, desc.device = ffi.sizeof(desc[0]), d
            h = ffi.new("eagle_backend_stream*")
            st = int(s.raw("stream_create", desc, h))
            if st == 0:
                s.raw("stream_release", h[0])
        else:
            return None
        if st == STATUS["INDEX"]:
            return d
    return None


@bcheck("mem_alloc.devices_and_sizes", needs=("mem_free",))
def alloc_devices_and_sizes(s):
    """mem_alloc: devices 0 .. n-1 allocate and n (the first that does not) is INDEX, as are 2^20,
    INT32_MAX (large indices) and, with INDEX or INVALID_ARGUMENT, negatives other than -1;
    device_props and stream_create, where provided, agree about which devices exist. 1 byte is
    OK; sizes no device has (2^62, 2^63 - 1, 2^63, 2^64 - 1) are UNAVAILABLE with a message."""
    s.need_device()
    out = ffi.new("uint64_t*")
    for d in (1 << 20, 2**31 - 1):   # no host has these: asked even where mem_alloc takes every small index
        s.expect("mem_alloc", "INDEX", d, 256, 0, out, why=f"device {d} does not exist")
    n = _first_missing_device(s)
    if n is None:
        n = _first_missing_elsewhere(s)
        if n is None:
            raise Skip("mem_alloc, device_props and stream_create take 64 device indices: no missing device "
                       "below them to ask about")
        s.expect("mem_alloc", "INDEX", n, 256, 0, out,
                 why=f"device {n} does not exist (device_props or stream_create say so)")
    if n == 0:
        raise CheckFailure("mem_alloc refuses device 0 with INDEX while probe says a device is usable")
    for d in (n, n + 1, 1 << 20, 2**31 - 1):
        s.expect("mem_alloc", "INDEX", d, 256, 0, out, why=f"device {d} does not exist (devices 0..{n - 1} do)")
    for d in (-2, -2**31):
        s.expect("mem_alloc", ("INDEX", "INVALID_ARGUMENT"), d, 256, 0, out, why=f"device {d}")
    if s.provides("device"):
        props = ffi.new("struct eagle_backend_device_props*")
        props.struct_size = ffi.sizeof(props[0])
        s.ok("device_props", n - 1, props)
        props.struct_size = ffi.sizeof(props[0])
        s.expect("device_props", "INDEX", n, props, why=f"mem_alloc says device {n} does not exist")
    if s.provides("stream"):
        desc = ffi.new("struct eagle_backend_stream_desc*")
        desc.struct_size, desc.device = ffi.sizeof(desc[0]), n
        h = ffi.new("eagle_backend_stream*")
        st = int(s.raw("stream_create", desc, h))
        if st == 0:
            s.raw("stream_release", h[0])
        if st != STATUS["INDEX"]:
            raise CheckFailure(f"stream_create on device {n}, which mem_alloc says does not exist, returned "
                               f"{status_name(st)}; INDEX for a device that does not exist")
    s.ok("mem_alloc", -1, 1, 0, out)
    s.raw("mem_free", out[0])
    for nbytes in _HUGE:
        out[0] = 0
        st = int(s.raw("mem_alloc", -1, nbytes, 0, out))
        if st == 0:
            s.raw("mem_free", out[0])
        if st != STATUS["UNAVAILABLE"]:
            raise CheckFailure(f"mem_alloc of {nbytes} bytes returned {status_name(st)}; memory that cannot be "
                               "had is UNAVAILABLE")
        if not s.last_error().strip():
            raise CheckFailure(f"mem_alloc of {nbytes} bytes returned UNAVAILABLE with an empty last_error")
    return f"devices 0..{n - 1}; {n} and beyond INDEX; 1 byte OK; huge sizes UNAVAILABLE"


@bcheck("module_from_source.log_null_when_silent", needs=("module_release",))
def log_null_when_silent(s):
    """*log is NULL when the compiler said nothing, never an empty string: a clean source's log is
    NULL or holds a message; so is a broken source's (then never NULL: it has the errors)."""
    s.need_device()
    for source, what in ((_SOURCE, "a clean source"), (_BROKEN, "a broken source")):
        d, keep = _desc()
        out = ffi.new("eagle_backend_module*")
        logp = ffi.new("char**")
        st = s.raw("module_from_source", d, source, len(source), out, logp)
        raw_log = None if logp[0] == ffi.NULL else ffi.string(logp[0])
        if logp[0] != ffi.NULL:
            s.raw("free", logp[0])
        if st == STATUS["UNAVAILABLE"]:
            raise Skip(f"module_from_source is unavailable here: {s.last_error()}")
        if st == 0:
            s.raw("module_release", out[0])
        if raw_log is not None and not raw_log.strip():
            raise CheckFailure(f"module_from_source of {what} wrote a log of {len(raw_log)} blank bytes; "
                               "*log is NULL when the compiler said nothing")
        if source is _BROKEN and raw_log is None:
            raise CheckFailure("module_from_source of a broken source returned a NULL log; it is written on "
                               "COMPILE_FAILED")
    return "NULL or a message"


# A fake compiler (since minor 8's cancel): it records its pid and its child's, then waits on the
# child, a long sleep, as a compiler waits on cc1. Run by a kind whose compiler is a process of its
# own; an in-process compiler never runs it.
_FAKE_CC = """#!/bin/sh
sleep 30 &
echo "$$ $!" > "{pids}"
wait
exit 1
"""


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@bcheck("module_from_source.cancel", needs=("module_release",))
def compile_cancel(s):
    """Since minor 8: with desc->cancel set nonzero while module_from_source runs, a kind whose
    compiler is a process of its own (here a fake compiler that starts a child and waits), set
    0.6 s into the compile, returns ERROR with "cancelled" in the message within 0.5 s (it polls
    at least every 20 ms; the rest is slack for a loaded machine), and the
    compiler and its children are gone. A cancel word of 0 changes nothing."""
    import signal
    import tempfile
    import threading
    s.need_device()
    if not os.path.isdir("/proc/self"):
        raise Skip("needs /proc to see the compiler's processes")
    with tempfile.TemporaryDirectory(prefix="eagle-check-cc-") as tmp:
        pids_path = os.path.join(tmp, "pids")
        cc = os.path.join(tmp, "cc")
        with open(cc, "w") as f:
            f.write(_FAKE_CC.format(pids=pids_path))
        os.chmod(cc, 0o755)
        d, keep = _desc()
        keep.append(ffi.new("char[]", cc.encode()))
        d.compiler = keep[-1]
        word = ffi.new("uint32_t*", 0)
        d.cancel = int(ffi.cast("uintptr_t", word))
        out = ffi.new("eagle_backend_module*")
        logp = ffi.new("char**")
        box = {}

        def compile_():
            box["st"] = int(s.lib.eagle_backend_module_from_source(d, _SOURCE, len(_SOURCE), out, logp))
            box["msg"] = ffi.string(s.lib.eagle_backend_last_error()).decode("utf-8", "replace")
            box["t"] = time.monotonic()
        th = threading.Thread(target=compile_, daemon=True)
        th.start()
        end = time.monotonic() + 10
        pids = None
        while time.monotonic() < end and th.is_alive():
            try:
                with open(pids_path) as f:
                    parts = f.read().split()
                if len(parts) == 2:
                    pids = [int(p) for p in parts]
                    break
            except OSError:
                pass
            time.sleep(0.01)
        try:
            if pids is None:
                th.join(60)
                if logp[0] != ffi.NULL:
                    s.raw("free", logp[0])
                if box.get("st") == 0:
                    s.raw("module_release", out[0])
                raise Skip("the kind's compiler is not a process of its own (the fake compiler named by "
                           "desc->compiler never ran): it may finish first, nothing to cancel")
            time.sleep(0.6)   # the compile has run a while (a poll that backs off has slowed); cancel it
            t_cancel = time.monotonic()
            word[0] = 1
            th.join(10)
            if th.is_alive():
                raise CheckFailure("module_from_source did not return within 10 s of the cancel word being set "
                                   "(it polls it at least every 20 ms)")
            if logp[0] != ffi.NULL:
                s.raw("free", logp[0])
            took = box["t"] - t_cancel
            if box["st"] == 0:
                s.raw("module_release", out[0])
            if box["st"] != STATUS["ERROR"]:
                raise CheckFailure(f"a cancelled compile returned {status_name(box['st'])} ({box['msg']!r}); "
                                   "expected ERROR with \"cancelled\" in the message")
            if "cancelled" not in box["msg"]:
                raise CheckFailure(f"a cancelled compile's message does not say \"cancelled\": {box['msg']!r}")
            if took > 0.5:
                raise CheckFailure(f"a cancelled compile returned {took:.2f} s after the cancel word was set; it "
                                   "is polled at least every 20 ms")
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline and any(_alive(p) for p in pids):
                time.sleep(0.02)
            left = [p for p in pids if _alive(p)]
            if left:
                names = {pids[0]: "the compiler", pids[1]: "the compiler's child"}
                raise CheckFailure("after a cancelled compile " + " and ".join(f"{names[p]} (pid {p})" for p in left)
                                   + " still ran 2 s later; the compiler and its children are killed")
        finally:
            for p in pids or ():
                if _alive(p):
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
    return f"ERROR {box['msg'][:60]!r} {took * 1e3:.0f} ms after the cancel; the compiler and its child gone"


# CONTRACT keeps IEEE division, square root and denormals. Each lane computes, in double and
# float: x / d with d read at run time (three divisions by one d: a compiler allowed reciprocals
# makes them x * (1/d)), x / 10 (a constant: x * 0.1 when reciprocals are allowed), sqrt(x), and
# tiny * 0.5 (a subnormal: 0 when denormals are flushed).
_DIVSQRT = b"""#include <eagle/kernel.h>
EAGLE_KERNEL(eagle_check_divsqrt, (const double*, in), (double*, out), (const float*, inf), (float*, outf))
{
    (void)n;
    const double d = in[3];
    out[8 * i + 0] = in[0] / d;
    out[8 * i + 1] = in[1] / d;
    out[8 * i + 2] = in[2] / d;
    out[8 * i + 3] = in[0] / 10.0;
    out[8 * i + 4] = sqrt(in[4]);
    out[8 * i + 5] = in[5] * 0.5;
    const float df = inf[3];
    outf[8 * i + 0] = inf[0] / df;
    outf[8 * i + 1] = inf[1] / df;
    outf[8 * i + 2] = inf[2] / df;
    outf[8 * i + 3] = inf[0] / 10.0f;
    outf[8 * i + 4] = sqrtf(inf[4]);
    outf[8 * i + 5] = inf[5] * 0.5f;
}
"""


def _reciprocal_differs(dtype):
    """Three x with x / 3 != x * (1 / 3) in `dtype`, and one with x / 10 != x * 0.1."""
    one = dtype(1)
    r3, r10 = one / dtype(3), one / dtype(10)
    xs = [dtype(k) for k in range(1, 400) if dtype(k) / dtype(3) != dtype(k) * r3][:3]
    x10 = next(dtype(k) for k in range(1, 400) if dtype(k) / dtype(10) != dtype(k) * r10)
    return xs, x10


def _divsqrt_inputs(dtype):
    xs, x10 = _reciprocal_differs(dtype)
    # x10 leads (it is divided by 3 and by 10); a square root that is not correctly rounded for
    # 2 is caught by comparing bits; tiny is the least normal number
    return np.array([x10, xs[1], xs[2], 3, 2, np.finfo(dtype).tiny, 0, 0], dtype)


@bcheck("module_from_source.contract_keeps_ieee",
        needs=("stream", "exec", "module_function", "module_release", "mem_alloc", "mem_free", "memcpy"))
def contract_keeps_ieee(s):
    """Since minor 8: a module compiled with CONTRACT keeps IEEE division (x / d and x / 10 are the
    correctly rounded quotients, not x times a reciprocal), square root and denormals, in double and
    float: the bits numpy gives."""
    minor = int(s.raw("version")) & 0xFFFF
    if minor < 8:
        raise Skip(f"the backend is minor {minor}; CONTRACT is since minor 8 (it refuses the flag as unknown)")
    s.need_device()
    st, mod, log, msg = _compile_as(s, _DIVSQRT, flags=_CONTRACT)
    if st:
        raise CheckFailure(f"module_from_source of a correct source with CONTRACT failed with status {st}: "
                           f"{msg!r}\n{log}")
    lanes = 2
    ind, inf = _divsqrt_inputs(np.float64), _divsqrt_inputs(np.float32)
    with np.errstate(all="ignore"):
        want_d = np.array([ind[0] / ind[3], ind[1] / ind[3], ind[2] / ind[3], ind[0] / 10.0, np.sqrt(ind[4]),
                           ind[5] * 0.5], np.float64)
        want_f = np.array([inf[0] / inf[3], inf[1] / inf[3], inf[2] / inf[3], inf[0] / np.float32(10),
                           np.sqrt(inf[4]), inf[5] * np.float32(0.5)], np.float32)
    try:
        fn = ffi.new("uint64_t*")
        s.ok("module_function", mod, b"eagle_check_divsqrt", fn)
        with _Memory(s) as mem:
            din, dout = mem.alloc(ind.nbytes), mem.alloc(8 * 8 * lanes)
            fin, fout = mem.alloc(inf.nbytes), mem.alloc(4 * 8 * lanes)
            h, raw = _stream(s)
            back_d, back_f = np.zeros(8 * lanes, np.float64), np.zeros(8 * lanes, np.float32)
            try:
                s.ok("memcpy", din, ind.ctypes.data, ind.nbytes, 1, raw)
                s.ok("memcpy", fin, inf.ctypes.data, inf.nbytes, 1, raw)
                _launch(s, fn[0], raw, [din, dout, fin, fout], lanes)
                s.ok("memcpy", back_d.ctypes.data, dout, back_d.nbytes, 2, raw)
                s.ok("memcpy", back_f.ctypes.data, fout, back_f.nbytes, 2, raw)
                s.ok("stream_synchronize", h)
            finally:
                s.raw("stream_release", h)
    finally:
        s.raw("module_release", mod)
    names = ("x/d", "x/d", "x/d", "x/10", "sqrt", "tiny*0.5 (subnormal)")
    bad = []
    for lane in range(lanes):
        for k in range(6):
            for typ, got, want in (("double", back_d[8 * lane + k], want_d[k]), ("float", back_f[8 * lane + k],
                                                                                  want_f[k])):
                if got.tobytes() != want.tobytes():
                    bad.append(f"{typ} {names[k]}: {got!r}, IEEE gives {want!r}")
    if bad:
        raise CheckFailure("a module compiled with CONTRACT does not keep IEEE division, square root and "
                           "denormals: " + "; ".join(dict.fromkeys(bad)))
    return "division, square root and subnormals as IEEE gives them, double and float"


# a * b + c with a = 1 + 2^-30, b = 1 - 2^-30, c = -1: 0 unfused (a*b rounds to 1), -2^-60 fused.
_FMA = b"""#include <eagle/kernel.h>
EAGLE_KERNEL(eagle_check_fma, (const double*, in), (double*, out))
{
    (void)n;
    out[i] = in[0] * in[1] + in[2];
}
"""


def _host_has_fma():
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " fma" in line for line in f)
    except OSError:
        return False


@bcheck("module_from_source.contract_contracts",
        needs=("stream", "exec", "module_function", "module_release", "mem_alloc", "mem_free", "memcpy"))
def contract_contracts(s):
    """Since minor 8, on the cpu kind (the header spells its compiler's flags: -ffp-contract=fast
    where the host CPU has FMA instructions): a module compiled with CONTRACT fuses a * b + c, so it
    gives the fused result where the unfused one differs. Other kinds contract as their compilers do
    by default, which the checker cannot know: skipped there."""
    minor = int(s.raw("version")) & 0xFFFF
    if minor < 8:
        raise Skip(f"the backend is minor {minor}; CONTRACT is since minor 8")
    s.need_device()
    if s.kind != "cpu":
        raise Skip(f"the {s.kind} kind contracts as its compiler does by default; the header names the flags "
                   "for the cpu kind only")
    if not _host_has_fma():
        raise Skip("this host CPU has no FMA instructions (/proc/cpuinfo): nothing to contract into")
    st, mod, log, msg = _compile_as(s, _FMA, flags=_CONTRACT)
    if st:
        raise CheckFailure(f"module_from_source with CONTRACT failed with status {st}: {msg!r}\n{log}")
    inputs = np.array([1 + 2.0**-30, 1 - 2.0**-30, -1.0])
    back = np.zeros(2, np.float64)
    try:
        fn = ffi.new("uint64_t*")
        s.ok("module_function", mod, b"eagle_check_fma", fn)
        with _Memory(s) as mem:
            din, dout = mem.alloc(inputs.nbytes), mem.alloc(back.nbytes)
            h, raw = _stream(s)
            try:
                s.ok("memcpy", din, inputs.ctypes.data, inputs.nbytes, 1, raw)
                _launch(s, fn[0], raw, [din, dout], 2)
                s.ok("memcpy", back.ctypes.data, dout, back.nbytes, 2, raw)
                s.ok("stream_synchronize", h)
            finally:
                s.raw("stream_release", h)
    finally:
        s.raw("module_release", mod)
    fused = -(2.0**-60)
    if not np.all(back == fused):
        raise CheckFailure(f"a * b + c compiled with CONTRACT on a host with FMA gave {back[0]!r} (unfused: 0.0, "
                           f"fused: {fused!r}); CONTRACT contracts multiply-adds (cpu: -ffp-contract=fast)")
    return "a * b + c fused"


@bcheck("module_from_source.compiler_missing", needs=("module_release",))
def compiler_missing(s):
    """With no compiler to be found (desc->compiler unset, $CC unset, $PATH an empty folder),
    module_from_source returns UNAVAILABLE with a message (naming what to install), never another
    failure; a kind whose compiler is in-process (found without $PATH) still compiles (OK)."""
    import tempfile
    s.need_device()
    saved = {k: os.environ.get(k) for k in ("PATH", "CC")}
    with tempfile.TemporaryDirectory(prefix="eagle-check-nocc-") as empty:
        try:
            os.environ["PATH"] = empty
            os.environ.pop("CC", None)
            d, keep = _desc()
            d.compiler = ffi.NULL
            out = ffi.new("eagle_backend_module*")
            logp = ffi.new("char**")
            st = int(s.raw("module_from_source", d, _SOURCE, len(_SOURCE), out, logp))
            msg = s.last_error() if st else ""
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    if logp[0] != ffi.NULL:
        s.raw("free", logp[0])
    if st == 0:
        s.raw("module_release", out[0])
        return "compiled without $PATH (the kind's compiler is in-process or found without it)"
    if st != STATUS["UNAVAILABLE"]:
        raise CheckFailure(f"module_from_source with no compiler to be found returned {status_name(st)} ({msg!r}); "
                           "UNAVAILABLE when the kind's compiler cannot be found or loaded")
    if not msg.strip():
        raise CheckFailure("module_from_source returned UNAVAILABLE with an empty last_error")
    return f"UNAVAILABLE ({msg[:80]!r})"
