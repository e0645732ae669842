"""Static checks: what the library file and its handshake promise, with no device needed
(the unknown-flag checks create objects, so they run where probe() says a device is usable)."""
import fnmatch
import functools
import os
import threading

from .. import _seam_meta as meta
from .._device_kind import NEEDED_FORBIDDEN_HINT, NEEDED_OF_KIND
from .._seam_ffi import ffi
from ._registry import CheckFailure, NotSupported, Skip, check
from ._seam import PREFIX, STATUS, status_name

# Defined by the static linker in every shared object; not the author's exports.
LINKER_SYMBOLS = frozenset({"_init", "_fini", "_edata", "_end", "__bss_start"})

NEEDED_BASE = ("libc.so*", "libm.so*", "libstdc++.so*", "libgcc_s.so*", "libpthread.so*",
               "libdl.so*", "librt.so*", "ld-linux*")

UNKNOWN_FLAG = 0x80000000  # a flag bit no minor defines (bit 31)
MASK_IS_DROP = meta.CONSTANTS["EAGLE_BACKEND_COMPACT_MASK_IS_DROP"]
GUARD = 0xA5


# ------------------------------------------------------------------------------ ELF
def _elf(path):
    """(exports, needed) of the ELF file at ``path``, parsed once per version of the file (keyed by
    its modification time and size; a Skip is not cached). Callers must not mutate the result."""
    try:
        st = os.stat(path)
    except OSError:
        return _parse_elf(path, None, None)  # let the parser report the path's problem
    return _parse_elf(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=16)
def _parse_elf(path, _mtime_ns, _size):
    try:
        from elftools.elf.elffile import ELFFile
        from elftools.common.exceptions import ELFError
    except ImportError:
        raise Skip("pyelftools is not installed (pip install pyelftools: eagle's check extra)") from None
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            exports, needed = {}, []
            verdef = elf.get_section_by_name(".gnu.version_d")
            version_nodes = ({a.name for _v, auxes in verdef.iter_versions() for a in auxes}
                             if verdef is not None else set())
            dynsym = elf.get_section_by_name(".dynsym")
            if dynsym is not None:
                for sym in dynsym.iter_symbols():
                    if not sym.name or sym["st_shndx"] == "SHN_UNDEF":
                        continue
                    if sym["st_shndx"] == "SHN_ABS" and sym.name in version_nodes:
                        continue  # the version node's own symbol (EAGLE_BACKEND_1), not an export
                    exports[sym.name] = (sym["st_info"]["bind"], sym["st_other"]["visibility"],
                                         sym["st_info"]["type"])
            dynamic = elf.get_section_by_name(".dynamic")
            if dynamic is not None:
                needed = [t.needed for t in dynamic.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
            return exports, needed
    except (ELFError, OSError) as e:
        raise Skip(f"cannot read '{path}' as ELF ({e}); the export checks need an ELF library") from None


def _proper(entry):
    """'' when an ELF .dynsym entry is a proper export, else what is wrong with it."""
    bind, vis, typ = entry
    if bind not in ("STB_GLOBAL", "STB_WEAK", "STB_GNU_UNIQUE"):
        return f"binding {bind}"
    if vis != "STV_DEFAULT":
        return f"visibility {vis}"
    if typ not in ("STT_FUNC", "STT_GNU_IFUNC"):
        return f"type {typ} (not a function)"
    return ""


def _exported(entry):
    bind, vis, _ = entry
    return bind in ("STB_GLOBAL", "STB_WEAK", "STB_GNU_UNIQUE") and vis in ("STV_DEFAULT", "STV_PROTECTED")


@check("static.loadable", kind="static")
def loadable(s):
    """The library opens with dlopen (by absolute path, RTLD_NOW through cffi)."""
    if not os.path.isfile(s.path):
        raise CheckFailure(f"no file at '{s.path}'")
    return f"dlopen('{s.path}') succeeded"


def _hidden_seam_definitions(path):
    """Seam functions defined in the file's .symtab but not exported (hidden or local), or None
    when the file has no .symtab (stripped) or pyelftools is missing."""
    try:
        from elftools.elf.elffile import ELFFile
        with open(path, "rb") as f:
            symtab = ELFFile(f).get_section_by_name(".symtab")
            if symtab is None:
                return None
            return sorted({sym.name for sym in symtab.iter_symbols()
                           if sym.name in meta.SYMBOLS and sym["st_shndx"] != "SHN_UNDEF"})
    except Exception:  # noqa: BLE001 - only a hint for the message
        return None


EXPORT_FIX = ("mark every seam function for export: define it with EAGLE_EXPORT from "
              "eagle/backend_kit.h (extern \"C\" __attribute__((visibility(\"default\")))), or build with "
              "eagle_add_backend (find_package(eagle CONFIG), docs/add_a_backend.md), which links the "
              "version script generated from eagle_backend.h")


@check("static.exports_seam", kind="static")
def exports_seam(s):
    """The library exports at least one seam symbol. When it exports none (the usual cause: hidden
    visibility without an export macro, or C++ name mangling), this is the one failure reported
    and every other check is skipped, naming this one."""
    if s.exports_any_seam_symbol():
        return "seam symbols are exported"
    hidden = _hidden_seam_definitions(s.path)
    detail = ""
    if hidden:
        detail = (f" It defines {len(hidden)} seam function(s) ({', '.join(hidden[:3])}"
                  + (", ..." if len(hidden) > 3 else "") + ") that are not exported: hidden or local.")
    raise CheckFailure("the library exports no eagle_backend_* symbol at all, so eagle cannot load it."
                       + detail + " Fix: " + EXPORT_FIX)


@check("static.exports_promised", kind="static")
def exports_promised(s):
    """Every symbol the capability bits and the per-symbol entries promise is a proper export
    (defined, global or weak, default visibility, a function) in the ELF .dynsym."""
    exports, _ = _elf(s.path)
    promised = list(meta.REQUIRED)
    for group, bit in meta.GROUP_BITS.items():
        if s.caps >> bit & 1:
            promised += meta.GROUP_SYMBOLS[group]
    for sym in meta.PER_SYMBOL:
        if s.has(sym[len(PREFIX):]):
            promised.append(sym)
    problems = []
    for sym in promised:
        entry = exports.get(sym)
        if entry is None:
            problems.append(f"{sym} missing")
        elif _proper(entry):
            problems.append(f"{sym} has {_proper(entry)}")
    pairs = [("eagle_backend_host_alloc", "eagle_backend_host_free")]
    for a, b in pairs:
        if (a in exports) != (b in exports):
            have, lack = (a, b) if a in exports else (b, a)
            problems.append(f"{have} is exported without {lack}")
    if problems:
        raise CheckFailure("promised but not properly exported: " + "; ".join(problems))
    return f"{len(promised)} promised symbols exported"


@check("static.exports_pinned", kind="static", advice=True)
def exports_pinned(s):
    """Nothing outside the pinned seam (eagle._seam_meta.SYMBOLS, i.e.
    tests/expected_backend_symbols.txt) is exported; experimental eagle_backend_x_* names aside.
    Advice: the header does not forbid other exports (linking with the generated version script
    is how eagle's own backends avoid them)."""
    exports, _ = _elf(s.path)
    extra = sorted(name for name, entry in exports.items()
                   if _exported(entry) and name not in meta.SYMBOLS and name not in LINKER_SYMBOLS
                   and not name.startswith(PREFIX + "x_"))
    if extra:
        shown = ", ".join(extra[:12]) + (f" and {len(extra) - 12} more" if len(extra) > 12 else "")
        raise CheckFailure(f"exports outside the pinned seam: {shown} (link with the version script "
                           "from `python -m build_tools version-script`)")
    return f"{sum(1 for e in exports.values() if _exported(e))} exports, all in the pin"


@check("static.needed", kind="static", advice=True)
def needed(s):
    """Every DT_NEEDED entry is on the allow-list of the library's kind. Advice: the header asks
    only that the library load and probe() say why when the driver is absent; depending on the
    driver alone (never a toolkit's runtime library) is what makes that hold."""
    _, libs = _elf(s.path)
    kind = s.kind
    allowed = NEEDED_BASE + NEEDED_OF_KIND.get(kind, ())
    bad = [lib for lib in libs if not any(fnmatch.fnmatch(lib, pat) for pat in allowed)]
    if bad:
        hints = [h for key, h in NEEDED_FORBIDDEN_HINT.items() if any(b.startswith(key) for b in bad)]
        raise CheckFailure(f"NEEDED entries not allowed for the kind '{kind}': {', '.join(bad)} "
                           f"(allowed: {', '.join(allowed)})" + (f"; {hints[0]}" if hints else ""))
    return f"NEEDED: {', '.join(libs) or 'none'}"


# ------------------------------------------------------------------------------ required
@check("required.symbols", kind="static")
def required_symbols(s):
    """The seven required symbols resolve with dlsym."""
    missing = [sym for sym in meta.REQUIRED if not s.has(sym[len(PREFIX):])]
    if missing:
        raise CheckFailure("required symbols missing: " + ", ".join(missing))
    return ", ".join(sym[len(PREFIX):] for sym in meta.REQUIRED)


@check("required.version_major", kind="static")
def version_major(s):
    """eagle_backend_version() returns (1 << 16) | minor."""
    s.require("version")
    v = int(s.raw("version"))
    major, minor = v >> 16, v & 0xFFFF
    if major != meta.VERSION_MAJOR:
        raise CheckFailure(f"eagle_backend_version() = {v:#x}: major {major}, eagle speaks major "
                           f"{meta.VERSION_MAJOR} only")
    return f"eagle-backend/{major}.{minor}"


@check("required.reserved_bits", kind="static")
def reserved_bits(s):
    """No reserved capability bit (8, 13..63) is set."""
    bad = s.caps & meta.RESERVED_BITS_MASK
    if bad:
        bits = [str(i) for i in range(64) if bad >> i & 1]
        raise CheckFailure(f"capabilities {s.caps:#x} set reserved bit(s) {', '.join(bits)}")
    return f"capabilities {s.caps:#x}"


@check("required.groups_whole", kind="static")
def groups_whole(s):
    """Each set capability bit's group resolves whole with dlsym."""
    missing = []
    for group, bit in meta.GROUP_BITS.items():
        if s.caps >> bit & 1:
            missing += [f"{sym} (bit {bit}, {group})" for sym in meta.GROUP_SYMBOLS[group]
                        if not s.has(sym[len(PREFIX):])]
    if missing:
        raise CheckFailure("set bits promise symbols that do not resolve: " + ", ".join(missing))
    return "groups: " + ", ".join(g for g, b in meta.GROUP_BITS.items() if s.caps >> b & 1)


def _output_struct(s, fn_name, tag, call, short_sizes):
    """The output-struct rule, both ways, for one struct. Returns a summary."""
    full = meta.STRUCT_SIZES[tag]
    ver = int(s.raw("version")) if s.has("version") else 0
    same_header = (ver >> 16) == meta.VERSION_MAJOR and (ver & 0xFFFF) <= meta.VERSION_MINOR
    notes = []
    for caller in short_sizes + [full + 64]:
        total = full + 128
        buf = ffi.new("unsigned char[]", total)
        ffi.memmove(buf, bytes([GUARD]) * total, total)
        ffi.cast("uint32_t*", buf)[0] = caller
        st = call(ffi.cast(f"struct {tag}*", buf))
        if st != 0:
            raise CheckFailure(f"{PREFIX}{fn_name} with struct_size {caller} returned "
                               f"{status_name(st)}: {s.last_error()!r}")
        written = int(ffi.cast("uint32_t*", buf)[0])
        data = bytes(ffi.buffer(buf, total))
        if written > caller:
            raise CheckFailure(f"{PREFIX}{fn_name}: caller's struct_size {caller}, the backend wrote back "
                               f"{written} (must be min(caller, callee) <= {caller})")
        if caller < full and written != caller:
            raise CheckFailure(f"{PREFIX}{fn_name}: caller's struct_size {caller} (short), the backend "
                               f"wrote back {written}; it must write min(caller, callee) = {caller}")
        if caller > full and same_header and written != full:
            raise CheckFailure(f"{PREFIX}{fn_name}: caller's struct_size {caller} (long), the backend "
                               f"(eagle-backend/{ver >> 16}.{ver & 0xFFFF}, a {full}-byte struct) wrote "
                               f"back {written}; it must write back its own size {full}")
        touched = [i for i in range(max(written, 4), total) if data[i] != GUARD]
        if touched:
            raise CheckFailure(f"{PREFIX}{fn_name}: caller's struct_size {caller}, wrote back {written}, "
                               f"but changed bytes beyond it (first at offset {touched[0]}; "
                               f"{len(touched)} bytes)")
        notes.append(f"{caller}->{written}")
    return "struct_size in->out: " + ", ".join(notes)


@check("required.build_info_struct_size", kind="static")
def build_info_struct_size(s):
    """build_info honours a short caller struct_size (guard bytes untouched, size written back)
    and a long one (writes its own size, nothing beyond)."""
    return _output_struct(s, "build_info", "eagle_backend_build_info",
                          lambda p: s.raw("build_info", p), [4, 8, 20, 44, 100])


@check("required.build_info_null", kind="static")
def build_info_null(s):
    """build_info(NULL) and struct_size < 4 are INVALID_ARGUMENT."""
    s.expect("build_info", "INVALID_ARGUMENT", ffi.NULL, why="NULL info")
    p = ffi.new("struct eagle_backend_build_info*")
    p.struct_size = 3
    s.expect("build_info", "INVALID_ARGUMENT", p, why="struct_size 3")


@check("required.build_info_fields", kind="static")
def build_info_fields(s):
    """build_info's strings are NUL-terminated, abi_version is a major-1 version and the kind is named."""
    p = ffi.new("struct eagle_backend_build_info*")
    p.struct_size = ffi.sizeof(p[0])
    s.ok("build_info", p)
    if p.abi_version >> 16 != meta.VERSION_MAJOR:
        raise CheckFailure(f"build_info.abi_version = {p.abi_version:#x}, not a major-1 version")
    for name, n in (("eagle_version", 32), ("archs", 128), ("backend_kind", 16)):
        if 0 not in bytes(ffi.buffer(getattr(p, name), n)):
            raise CheckFailure(f"build_info.{name} is not NUL-terminated")
    kind = ffi.string(p.backend_kind).decode("ascii", "replace")
    if not kind:
        raise CheckFailure("build_info.backend_kind is empty")
    return f"kind {kind}, abi {p.abi_version >> 16}.{p.abi_version & 0xFFFF}"


@check("required.device_types_cap", kind="static")
def device_types_cap(s):
    """device_types writes at most cap entries (guard after cap untouched) and always the total count."""
    count = ffi.new("int32_t*", -1)
    s.ok("device_types", ffi.NULL, 0, count)
    total = int(count[0])
    if total < 0:
        raise CheckFailure(f"device_types reports {total} device types (a count is never negative)")
    GUARD32 = 0x5A5A5A5A
    for cap in range(0, total + 2):
        buf = ffi.new("int32_t[]", [GUARD32] * (total + 8))
        count[0] = -1
        s.ok("device_types", buf, cap, count)
        if int(count[0]) != total:
            raise CheckFailure(f"device_types with cap {cap} wrote count {int(count[0])}, the total is {total}")
        over = [i for i in range(cap, total + 8) if buf[i] != GUARD32]
        if over:
            raise CheckFailure(f"device_types with cap {cap} wrote types[{over[0]}] (beyond cap)")
    s.expect("device_types", "INVALID_ARGUMENT", ffi.NULL, -1, count, why="negative cap")
    s.expect("device_types", "INVALID_ARGUMENT", ffi.NULL, 0, ffi.NULL, why="NULL count")
    return f"{total} device type(s)"


@check("required.capabilities_null", kind="static")
def capabilities_null(s):
    """capabilities(NULL) is INVALID_ARGUMENT."""
    s.expect("capabilities", "INVALID_ARGUMENT", ffi.NULL, why="NULL groups")


@check("required.last_error_after_failure", kind="static")
def last_error_after_failure(s):
    """After a failed call last_error is a non-empty string."""
    for name, args in (("capabilities", (ffi.NULL,)), ("build_info", (ffi.NULL,))):
        st = s.raw(name, *args)
        if st == 0:
            raise CheckFailure(f"{PREFIX}{name}(NULL) returned OK")
        msg = s.last_error()
        if not msg.strip():
            raise CheckFailure(f"last_error is empty after {PREFIX}{name}(NULL) failed with "
                               f"{status_name(st)}")
    return f"e.g. {msg!r}"


@check("required.last_error_thread_local", kind="static")
def last_error_thread_local(s):
    """Two threads fail with different messages at once; each reads its own."""
    count = ffi.new("int32_t*")

    def fail_a():
        s.raw("capabilities", ffi.NULL)

    def fail_b():
        s.raw("device_types", ffi.NULL, -1, count)

    fail_a()
    msg_a = s.last_error()
    fail_b()
    msg_b = s.last_error()
    if not msg_a or not msg_b:
        raise CheckFailure("last_error is empty after a failure")
    if msg_a == msg_b:
        raise Skip(f"the two provoked failures leave the same message ({msg_a!r}); cannot tell threads apart")
    barrier = threading.Barrier(2, timeout=10)
    seen = {}

    def worker(name, fail, rounds=25):
        got = []
        try:
            for _ in range(rounds):
                if name == "a":
                    fail()
                    barrier.wait()
                    barrier.wait()
                else:
                    barrier.wait()
                    fail()
                    barrier.wait()
                got.append(s.last_error())
                barrier.wait()
        except threading.BrokenBarrierError:
            got.append("<barrier broken>")
        seen[name] = got

    threads = [threading.Thread(target=worker, args=("a", fail_a)),
               threading.Thread(target=worker, args=("b", fail_b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    wrong_a = [m for m in seen.get("a", ["<no result>"]) if m != msg_a]
    wrong_b = [m for m in seen.get("b", ["<no result>"]) if m != msg_b]
    if wrong_a or wrong_b:
        example = (wrong_a or wrong_b)[0]
        who, own = ("A", msg_a) if wrong_a else ("B", msg_b)
        raise CheckFailure(f"last_error is not thread-local: thread {who} failed with {own!r} but read "
                           f"{example!r} after the other thread failed")
    return "each thread read its own message in 25 interleaved rounds"


@check("required.free_null", kind="static")
def free_null(s):
    """eagle_backend_free(NULL) is a no-op."""
    s.raw("free", ffi.NULL)


def _release_null(group, release):
    @check(f"{group}.release_null", kind="static")
    def fn(s):
        if not s.has(release):
            raise NotSupported(f"{PREFIX}{release} is not exported")
        s.raw(release, ffi.NULL)
        return f"{PREFIX}{release}(NULL) returned"
    fn.__doc__ = f"{PREFIX}{release}(NULL) is a no-op."
    return fn


for _g in ("stream", "capturer", "captured", "fork", "conditional", "graph", "launcher"):
    _release_null(_g, f"{_g}_release")
_release_null("host_free", "host_free")


# ------------------------------------------------------------------------------ unknown flags
def _flag_check(entry, what):
    def register(body):
        @check(f"{entry}.unknown_flags", kind="static")
        def fn(s):
            s.require(entry, own=True)
            s.need_device()
            return body(s)
        fn.__doc__ = f"An unknown flag bit ({UNKNOWN_FLAG:#x}) in {what} is refused with UNSUPPORTED."
        return fn
    return register


def _refused(s, name, st, cleanup=None):
    if st == STATUS["UNSUPPORTED"]:
        return f"{PREFIX}{name}: UNSUPPORTED ({s.last_error()!r})"
    if st == 0 and cleanup:
        cleanup()
    raise CheckFailure(f"{PREFIX}{name} with unknown flag bit {UNKNOWN_FLAG:#x} returned "
                       f"{status_name(st)}; an unknown flag must be refused with UNSUPPORTED, never ignored")


@_flag_check("stream", "stream_desc.flags")
def _stream_flags(s):
    d = ffi.new("struct eagle_backend_stream_desc*", {"struct_size": 16, "flags": UNKNOWN_FLAG, "device": -1})
    out = ffi.new("eagle_backend_stream*")
    return _refused(s, "stream_create", s.raw("stream_create", d, out),
                    lambda: s.raw("stream_release", out[0]))


@_flag_check("graph", "graph_desc.flags")
def _graph_flags(s):
    d = ffi.new("struct eagle_backend_graph_desc*", {"struct_size": 16, "flags": UNKNOWN_FLAG, "device": -1})
    out = ffi.new("eagle_backend_graph*")
    return _refused(s, "graph_create", s.raw("graph_create", d, out),
                    lambda: s.raw("graph_release", out[0]))


@_flag_check("capturer", "capturer_desc.flags")
def _capturer_flags(s):
    s.require("stream")
    h, raw = s.new_stream()
    try:
        d = ffi.new("struct eagle_backend_capturer_desc*")
        d.struct_size, d.flags, d.device, d.stream = ffi.sizeof(d[0]), UNKNOWN_FLAG, -1, raw
        out = ffi.new("eagle_backend_capturer*")
        return _refused(s, "capturer_create", s.raw("capturer_create", d, out),
                        lambda: s.raw("capturer_release", out[0]))
    finally:
        s.raw("stream_release", h)


@_flag_check("fork", "fork_desc.flags")
def _fork_flags(s):
    s.require("stream")
    h, raw = s.new_stream()
    try:
        d = ffi.new("struct eagle_backend_fork_desc*")
        d.struct_size, d.flags, d.device, d.origin, d.branch_count = ffi.sizeof(d[0]), UNKNOWN_FLAG, -1, raw, 2
        out = ffi.new("eagle_backend_fork*")
        return _refused(s, "fork_create", s.raw("fork_create", d, out),
                        lambda: s.raw("fork_release", out[0]))
    finally:
        s.raw("stream_release", h)


@_flag_check("conditional", "conditional_desc.flags")
def _conditional_flags(s):
    for g in ("stream", "capturer", "captured"):
        s.require(g)
    mem = s.device()
    words = mem.zeros(4, "uint32")
    h, raw = s.new_stream()
    cap = ffi.new("eagle_backend_capturer*")
    captured = ffi.new("eagle_backend_captured*")
    try:
        d = ffi.new("struct eagle_backend_capturer_desc*")
        d.struct_size, d.device, d.stream = ffi.sizeof(d[0]), -1, raw
        s.ok("capturer_create", d, cap)
        s.ok("capturer_begin", cap[0])
        c = ffi.new("struct eagle_backend_conditional_desc*")
        c.struct_size, c.flags, c.device, c.origin, c.count_ptr = ffi.sizeof(c[0]), UNKNOWN_FLAG, -1, raw, words.addr
        out = ffi.new("eagle_backend_conditional*")
        st = s.raw("conditional_create", c, out)
        if st == 0:
            s.raw("conditional_release", out[0])
        if s.raw("capturer_end", cap[0], captured) == 0:
            s.raw("captured_release", captured[0])
        return _refused(s, "conditional_create", st)
    finally:
        s.raw("capturer_release", cap[0])
        s.raw("stream_release", h)


@_flag_check("exec", "launch_desc.flags")
def _exec_flags(s):
    s.require("stream")
    mem = s.device()
    x = mem.zeros(4, "int64")
    h, raw = s.new_stream()
    try:
        st = _launch_raw(s, raw, x, UNKNOWN_FLAG)
        s.raw("stream_synchronize", h)
        return _refused(s, "run_device", st)
    finally:
        s.raw("stream_release", h)


def _launch_raw(s, raw, x, flags):
    storage = ffi.new("int64_t[4]", [x.addr, 1, 1, 0])
    params = ffi.new("uint64_t[4]", [int(ffi.cast("uintptr_t", storage + i)) for i in range(4)])
    d = ffi.new("struct eagle_backend_launch_desc*")
    d.struct_size, d.flags, d.device = ffi.sizeof(d[0]), flags, -1
    d.function = s.kernels.handle("affine")
    d.params, d.param_sizes, d.nparams = params, ffi.NULL, 4
    d.base, d.count, d.n_samples, d.stream = 0, 4, 4, raw
    launched = ffi.new("int32_t*")
    return s.raw("run_device", d, launched)


@_flag_check("filtering", "compact_desc.flags")
def _compact_flags(s):
    mem = s.device()
    n = 16
    mask, imap, cnt = mem.zeros(n, "uint8"), mem.zeros(n, "int32"), mem.zeros(1, "uint32")
    d = ffi.new("struct eagle_backend_compact_desc*")
    d.struct_size, d.flags, d.device = ffi.sizeof(d[0]), MASK_IS_DROP | UNKNOWN_FLAG, -1
    d.mask, d.index_map, d.count, d.scratch, d.n, d.stream = mask.addr, imap.addr, cnt.addr, 0, n, 0
    return _refused(s, "compact_device (query)", s.raw("compact_device", d))


@_flag_check("reorder_device", "reorder_desc.flags")
def _reorder_flags(s):
    mem = s.device()
    n = 16
    plane = mem.zeros(n, "int32")
    mask, perm, inv, span = mem.zeros(n, "uint8"), mem.zeros(n, "int32"), mem.zeros(n, "int32"), mem.zeros(1, "uint32")
    planes = ffi.new("struct eagle_backend_reorder_plane[1]")
    planes[0].data, planes[0].elem_size, planes[0].width = plane.addr, 4, 1
    d = ffi.new("struct eagle_backend_reorder_desc*")
    d.struct_size, d.flags, d.device, d.plane_count, d.planes = ffi.sizeof(d[0]), MASK_IS_DROP | UNKNOWN_FLAG, -1, 1, planes
    d.mask, d.perm, d.inv, d.span, d.scratch, d.n, d.stream = mask.addr, perm.addr, inv.addr, span.addr, 0, n, 0
    return _refused(s, "reorder_device (query)", s.raw("reorder_device", d))


@_flag_check("host_alloc", "host_alloc's flags")
def _host_alloc_flags(s):
    out = ffi.new("void**")
    return _refused(s, "host_alloc", s.raw("host_alloc", 64, UNKNOWN_FLAG, out),
                    lambda: s.raw("host_free", out[0]) if s.has("host_free") else None)


# ------------------------------------------------------------------------------ why lines
@check("required.left_out_reasons", kind="static")
def left_out_reasons(s):
    """On OK, capabilities() leaves one `name: reason` line in last_error for every group whose bit
    is clear and every per-symbol entry (of the backend's minor or older) it does not export, and
    no line for a group it provides. Names are group names or seam symbols, with or without the
    eagle_backend_ prefix; a reason is never empty. A line naming an exported per-symbol entry says
    it is unavailable at run time; one naming a symbol of a provided group, an option left out."""
    groups = ffi.new("uint64_t*")
    s.ok("capabilities", groups)
    caps = int(groups[0])
    note = s.last_error()
    minor = int(s.raw("version")) & 0xFFFF
    problems, named = [], {}
    for n, line in enumerate(note.splitlines(), 1):
        if not line.strip():
            continue
        name, sep, reason = line.partition(":")
        name = name.strip()
        full = name if name.startswith(PREFIX) else PREFIX + name
        if not sep:
            problems.append(f"line {n} {line!r} is not `name: reason`")
            continue
        if not reason.strip():
            problems.append(f"line {n} names {name!r} with an empty reason")
        if name in meta.GROUP_BITS:
            if caps >> meta.GROUP_BITS[name] & 1:
                problems.append(f"line {n} says why {name!r} is left out, but its bit "
                                f"{meta.GROUP_BITS[name]} is set (a stale line)")
            named[name] = reason.strip()
        elif full in meta.SYMBOLS:
            named[full] = reason.strip()
        else:
            problems.append(f"line {n} names {name!r}, which is neither a group nor a seam symbol "
                            "(eagle cannot show its reason)")
    from .._loader import EXTENDS
    for group, bit in meta.GROUP_BITS.items():
        if not caps >> bit & 1 and group not in named:
            problems.append(f"no line says why the group {group!r} (bit {bit}) is left out")
    for sym in meta.PER_SYMBOL:
        short = sym[len(PREFIX):]
        if meta.SYMBOLS[sym][1] > minor:
            continue   # newer than the seam the backend was built against
        host = EXTENDS.get(short)
        if host is not None and not caps >> meta.GROUP_BITS[host] & 1:
            continue   # its group's line covers it
        if not s.has(short) and sym not in named:
            problems.append(f"no line says why {short} (since minor {meta.SYMBOLS[sym][1]}) is left out")
    if problems:
        raise CheckFailure("capabilities()'s why lines (last_error on OK, one `name: reason` line "
                           "per left-out group or entry): " + "; ".join(problems))
    return f"{len(named)} left-out group(s)/entries, each with a reason" if named else "nothing left out"


# ------------------------------------------------------------------------------ issue 29: last_error
@check("required.last_error_pointer_kept", kind="static")
def last_error_pointer_kept(s):
    """The string last_error returns stays as it is until the next seam call on the same thread:
    another thread failing and reading its own message meanwhile does not change it (a backend
    that returns one process-wide copy does)."""
    count = ffi.new("int32_t*")
    for _ in range(5):
        if s.raw("capabilities", ffi.NULL) == 0:
            raise CheckFailure(f"{PREFIX}capabilities(NULL) returned OK")
        s.calls[PREFIX + "last_error"] += 1
        p = s.lib.eagle_backend_last_error()   # held, not copied: no seam call on this thread now
        if p == ffi.NULL:
            raise CheckFailure("eagle_backend_last_error returned NULL (it must never be NULL)")
        mine = ffi.string(p)
        seen = {}

        def other():
            s.raw("device_types", ffi.NULL, -1, count)
            seen["theirs"] = s.last_error()

        t = threading.Thread(target=other)
        t.start()
        t.join(30)
        after = ffi.string(p)
        if not mine:
            raise CheckFailure("last_error is empty after capabilities(NULL) failed")
        if seen.get("theirs", "").encode() == mine:
            raise Skip("the two provoked failures leave the same message; cannot tell threads apart")
        if after != mine:
            raise CheckFailure(f"the string last_error returned to this thread ({mine.decode(errors='replace')!r}) "
                               f"changed to {after.decode(errors='replace')!r} when another thread failed and "
                               "read its own message, with no seam call on this thread in between; it must "
                               "stay valid until the next seam call on this thread (one copy per thread)")
    return "5 rounds: the held string kept this thread's message"


@check("required.capabilities_note_on_ok", kind="static")
def capabilities_note_on_ok(s):
    """capabilities() on OK sets last_error to its note (the why lines, or ""), whatever a failed
    call left there before: the note read after a failure is the note read before it."""
    groups = ffi.new("uint64_t*")
    s.ok("capabilities", groups)
    before = s.last_error()
    for name, args in (("build_info", (ffi.NULL,)), ("capabilities", (ffi.NULL,))):
        st = s.raw(name, *args)
        if st == 0:
            raise CheckFailure(f"{PREFIX}{name}(NULL) returned OK")
        failed = s.last_error()
        s.ok("capabilities", groups)
        after = s.last_error()
        if after != before:
            raise CheckFailure(f"after {PREFIX}{name}(NULL) failed with {failed!r}, capabilities() returned OK "
                               f"but left last_error {after!r}; its note is {before!r} (on OK it sets "
                               "last_error to the note, or to \"\" when nothing is left out)")
    return "the note is set on every OK" + (f": {before.splitlines()[0]!r}..." if before else " (\"\")")
