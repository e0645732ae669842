"""Checks of the library file, read without calling it (group ``static``): it loads, exports the seam
symbols it promises and no others (the pin), and needs only what its kind may need."""
import fnmatch
import functools
import os

from ... import _seam_meta as meta
from ..._device_kind import NEEDED_FORBIDDEN_HINT, NEEDED_OF_KIND
from .._registry import CheckFailure, Skip, check
from .._seam import PREFIX


# Defined by the static linker in every shared object; not the author's exports.
LINKER_SYMBOLS = frozenset({"_init", "_fini", "_edata", "_end", "__bss_start"})

NEEDED_BASE = ("libc.so*", "libm.so*", "libstdc++.so*", "libgcc_s.so*", "libpthread.so*",
               "libdl.so*", "librt.so*", "ld-linux*")


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
