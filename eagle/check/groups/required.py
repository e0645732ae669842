"""Checks of the ``required`` group: the handshake every backend exports (version, last_error,
build_info, probe, free, capabilities, device_types). All but ``required.handshake`` are of kind
static: they need no device."""
import threading

from ... import _seam_meta as meta
from ..._seam_ffi import ffi
from .._registry import CheckFailure, Skip, check
from .._seam import PREFIX, status_name
from ._helpers import bcheck, output_struct


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


@check("required.build_info_struct_size", kind="static")
def build_info_struct_size(s):
    """build_info honours a short caller struct_size (guard bytes untouched, size written back)
    and a long one (writes its own size, nothing beyond)."""
    return output_struct(s, "build_info", "eagle_backend_build_info",
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
    from ..._loader import EXTENDS
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


@bcheck("required.handshake")
def required_handshake(s):
    """The handshake eagle's loader runs: version, capabilities, device_types, build_info, probe."""
    v = int(s.raw("version"))
    caps, count = ffi.new("uint64_t*"), ffi.new("int32_t*")
    s.ok("capabilities", caps)
    s.ok("device_types", ffi.NULL, 0, count)
    info = ffi.new("struct eagle_backend_build_info*")
    info.struct_size = ffi.sizeof(info[0])
    s.ok("build_info", info)
    usable, why = s.probe()
    s.raw("free", ffi.NULL)
    s.last_error()
    return (f"eagle-backend/{v >> 16}.{v & 0xFFFF}, {ffi.string(info.backend_kind).decode()}, "
            f"caps {int(caps[0]):#x}, " + ("device usable" if usable else f"no device: {why}"))


@check("required.abi_version_is_version", kind="static")
def abi_version_is_version(s):
    """build_info.abi_version is the EAGLE_BACKEND_VERSION the backend was built against: the value
    version() returns, minor included."""
    p = ffi.new("struct eagle_backend_build_info*")
    p.struct_size = ffi.sizeof(p[0])
    s.ok("build_info", p)
    ver = int(s.raw("version"))
    if int(p.abi_version) != ver:
        raise CheckFailure(f"build_info.abi_version = {int(p.abi_version) >> 16}.{int(p.abi_version) & 0xFFFF}, "
                           f"version() = {ver >> 16}.{ver & 0xFFFF}; both are the EAGLE_BACKEND_VERSION the "
                           "backend was built against")
    return f"abi_version = version() = {ver >> 16}.{ver & 0xFFFF}"


@check("required.last_error_never_null", kind="static")
def last_error_never_null(s):
    """last_error is never NULL: on a thread that has made no seam call yet, after an OK call and
    after a failed one (then not empty)."""
    seen = {}

    def on_thread():
        fn = s.lib.eagle_backend_last_error
        seen["fresh"] = fn() != ffi.NULL
        p = ffi.new("struct eagle_backend_build_info*")
        p.struct_size = ffi.sizeof(p[0])
        seen["ok_status"] = int(s.lib.eagle_backend_build_info(p))
        seen["after_ok"] = fn() != ffi.NULL
        seen["fail_status"] = int(s.lib.eagle_backend_build_info(ffi.NULL))
        q = fn()
        seen["after_fail"] = q != ffi.NULL and bool(ffi.string(q).strip())

    t = threading.Thread(target=on_thread)
    t.start()
    t.join(30)
    if t.is_alive():
        raise CheckFailure("last_error / build_info did not return within 30 s on a new thread")
    if not seen.get("fresh"):
        raise CheckFailure("last_error returned NULL on a thread that had made no seam call (never NULL: \"\")")
    if seen["ok_status"] == 0 and not seen["after_ok"]:
        raise CheckFailure("last_error returned NULL after an OK build_info (never NULL)")
    if seen["fail_status"] != 0 and not seen["after_fail"]:
        raise CheckFailure("last_error returned NULL or \"\" after build_info(NULL) failed")
    return "a string on a fresh thread, after OK and after a failure"
