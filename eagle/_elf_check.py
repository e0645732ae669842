"""A shared library's ELF structure, checked before the dynamic loader maps it.

glibc's ``dlopen`` maps every loadable segment of a library by its file range and then reads
it; a file cut short (a partial download or copy) maps pages past its end, and the first read
of one kills the process with SIGBUS (ctypes does the same). :func:`defect` reads the ELF
header and program headers with :mod:`struct` alone and names the first defect that would make
the loader read outside the file or load a library this interpreter cannot use:

- not a regular file, or shorter than an ELF header; no ELF magic;
- an ELF class (32/64-bit), byte order or machine other than this interpreter's own;
- not a shared object (``e_type`` other than ``ET_DYN``), an unknown ``e_version``;
- a program header table or section header table (with the sizes it declares) not inside the file,
  entry sizes other than the ELF class's;
- a segment whose file range (``p_offset + p_filesz``) ends past the end of the file, or a
  ``PT_LOAD`` segment whose memory size is smaller than its file size.

It is a structural check, not a validation of the contents: a library whose bytes are all there
but hostile (a constructor that aborts, a corrupt dynamic section) still runs in-process when it
is loaded; ``python -m eagle.check`` loads a library in a child process to isolate that. The file
can also change between this check and the load; the check guards against files that are broken,
not against a concurrent writer."""
import os
import stat
import struct
import sys

#: Platforms whose shared libraries are ELF files (the check is skipped on the others).
IS_ELF_PLATFORM = sys.platform not in ("darwin", "win32", "cygwin")

_MAGIC = b"\x7fELF"
_CLASS_NAMES = {1: "32-bit (ELFCLASS32)", 2: "64-bit (ELFCLASS64)"}
_DATA_NAMES = {1: "little-endian (ELFDATA2LSB)", 2: "big-endian (ELFDATA2MSB)"}
_ET_DYN = 3
_PT_LOAD = 1
_PN_XNUM = 0xFFFF
_SHN_UNDEF = 0
_PT_NAMES = {0: "PT_NULL", 1: "PT_LOAD", 2: "PT_DYNAMIC", 3: "PT_INTERP", 4: "PT_NOTE", 5: "PT_SHLIB",
             6: "PT_PHDR", 7: "PT_TLS", 0x6474E550: "PT_GNU_EH_FRAME", 0x6474E551: "PT_GNU_STACK",
             0x6474E552: "PT_GNU_RELRO", 0x6474E553: "PT_GNU_PROPERTY"}
_MACHINE_NAMES = {3: "x86 (EM_386)", 8: "MIPS (EM_MIPS)", 20: "PowerPC (EM_PPC)", 21: "PowerPC64 (EM_PPC64)",
                  22: "S/390 (EM_S390)", 40: "ARM (EM_ARM)", 62: "x86-64 (EM_X86_64)",
                  183: "AArch64 (EM_AARCH64)", 243: "RISC-V (EM_RISCV)", 258: "LoongArch (EM_LOONGARCH)"}

# Per ELF class: (header layout after e_ident, header size, phdr layout, phdr size, shdr size).
# Field order of the header: e_type, e_machine, e_version, e_entry, e_phoff, e_shoff, e_flags,
# e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx.
_LAYOUT = {
    1: ("HHIIIIIHHHHHH", 52, "IIIIIIII", 32, 40),
    2: ("HHIQQQIHHHHHH", 64, "IIQQQQQQ", 56, 64),
}


def _name(table, value):
    return table.get(value, f"unknown ({value})")


def _header(data, byteorder):
    """The header fields (after e_ident) of an ELF file of this class and byte order."""
    fmt, size = _LAYOUT[data[4]][:2]
    return struct.unpack_from(byteorder + fmt, data, 16)


def _host_identity():
    """(class, data, machine) of this interpreter's own executable, or None when it cannot be read
    as ELF (then only the class and byte order are compared, from the interpreter's own build)."""
    for exe in ("/proc/self/exe", sys.executable):
        try:
            with open(exe, "rb") as fh:
                head = fh.read(64)
        except OSError:
            continue
        if len(head) >= 20 and head[:4] == _MAGIC and head[4] in _LAYOUT and head[5] in _DATA_NAMES:
            order = "<" if head[5] == 1 else ">"
            return head[4], head[5], struct.unpack_from(order + "H", head, 18)[0]
    return None


_HOST = None


def _host():
    global _HOST
    if _HOST is None:
        found = _host_identity()
        if found is None:
            cls = 2 if sys.maxsize > 2**32 else 1
            found = (cls, 1 if sys.byteorder == "little" else 2, None)
        _HOST = found
    return _HOST


def _range_ends_inside(start, length, size):
    return start <= size and length <= size - start


def defect(path):
    """What is wrong with the ELF shared library at ``path``, or ``''`` when nothing the check
    covers is (see the module docstring). Never maps or executes the file.

    Raises OSError when the file cannot be opened or read."""
    if not stat.S_ISREG(os.stat(path).st_mode):  # before open(): opening a FIFO would block
        return "it is not a regular file"
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        ident = fh.read(64)
        if size == 0:
            return "it is empty (0 bytes)"
        if ident[:4] != _MAGIC:
            return f"it is not an ELF file (no ELF magic in its first bytes; {size} bytes)"
        if len(ident) < 16:
            return f"it is truncated: {size} bytes, shorter than the 16-byte ELF identification"
        cls, data, version = ident[4], ident[5], ident[6]
        host_cls, host_data, host_machine = _host()
        if cls not in _LAYOUT:
            return f"its ELF class byte is {cls} (neither 32- nor 64-bit)"
        if cls != host_cls:
            return f"it is a {_name(_CLASS_NAMES, cls)} ELF file; this interpreter is {_CLASS_NAMES[host_cls]}"
        if data not in _DATA_NAMES:
            return f"its ELF byte-order byte is {data} (neither little- nor big-endian)"
        if data != host_data:
            return f"it is a {_DATA_NAMES[data]} ELF file; this interpreter is {_DATA_NAMES[host_data]}"
        if version != 1:
            return f"its ELF identification version is {version} (EV_CURRENT is 1)"
        fmt, ehsize, ph_fmt, phsize, shsize = _LAYOUT[cls]
        if size < ehsize or len(ident) < ehsize:
            return f"it is truncated: {size} bytes, shorter than the {ehsize}-byte ELF header"
        order = "<" if data == 1 else ">"
        (e_type, machine, e_version, _entry, phoff, shoff, _flags, e_ehsize, phentsize, phnum,
         shentsize, shnum, _shstrndx) = _header(ident, order)
        if host_machine is not None and machine != host_machine:
            return (f"it is built for {_name(_MACHINE_NAMES, machine)}; this machine is "
                    f"{_name(_MACHINE_NAMES, host_machine)}")
        if e_type != _ET_DYN:
            return f"it is not a shared library (ELF e_type {e_type}, ET_DYN is {_ET_DYN})"
        if e_version != 1:
            return f"its ELF e_version is {e_version} (EV_CURRENT is 1)"
        if e_ehsize < ehsize:
            return f"its ELF header claims {e_ehsize} bytes (a {cls * 32}-bit header has {ehsize})"

        # Section 0 holds the true counts when they do not fit the header (PN_XNUM, shnum 0).
        section0 = None
        if shoff:
            if shentsize != shsize:
                return f"its section header entries are {shentsize} bytes (a {cls * 32}-bit one has {shsize})"
            if not _range_ends_inside(shoff, shsize, size):
                return (f"it is truncated: the section header table starts at byte {shoff}, "
                        f"but the file has {size} bytes")
            fh.seek(shoff)
            section0 = fh.read(shsize)
            if len(section0) < shsize:
                return f"it is truncated: the section header table at byte {shoff} cannot be read"
        if phnum == _PN_XNUM:
            if section0 is None:
                return "its program header count is PN_XNUM but it has no section header 0 to hold the count"
            phnum = struct.unpack_from(order + "I", section0, 44 if cls == 2 else 28)[0]  # sh_info
        if shoff and shnum == 0:
            shnum = struct.unpack_from(order + ("Q" if cls == 2 else "I"), section0, 32 if cls == 2 else 20)[0]
        if shoff and not _range_ends_inside(shoff, shnum * shsize, size):
            return (f"it is truncated: the section header table ({shnum} entries of {shsize} bytes at byte "
                    f"{shoff}) ends at byte {shoff + shnum * shsize}, but the file has {size} bytes")

        if phnum == 0:
            return "it has no program headers (nothing the dynamic loader could map)"
        if phentsize != phsize:
            return f"its program header entries are {phentsize} bytes (a {cls * 32}-bit one has {phsize})"
        table = phnum * phsize
        if not _range_ends_inside(phoff, table, size):
            return (f"it is truncated: the program header table ({phnum} entries of {phsize} bytes at byte "
                    f"{phoff}) ends at byte {phoff + table}, but the file has {size} bytes")
        fh.seek(phoff)
        phdrs = fh.read(table)
        if len(phdrs) < table:
            return f"it is truncated: the program header table at byte {phoff} cannot be read"

    loads = 0
    for i in range(phnum):
        fields = struct.unpack_from(order + ph_fmt, phdrs, i * phsize)
        if cls == 2:
            p_type, _pflags, p_offset, _vaddr, _paddr, p_filesz, p_memsz, _align = fields
        else:
            p_type, p_offset, _vaddr, _paddr, p_filesz, p_memsz, _pflags, _align = fields
        what = f"program header {i} ({_name(_PT_NAMES, p_type)})"
        if p_filesz and not _range_ends_inside(p_offset, p_filesz, size):
            return (f"it is truncated: {what} covers bytes {p_offset}..{p_offset + p_filesz} of the file, "
                    f"but the file has {size} bytes")
        if p_type == _PT_LOAD:
            loads += 1
            if p_memsz < p_filesz:
                return f"{what} has a memory size ({p_memsz}) smaller than its file size ({p_filesz})"
    if loads == 0:
        return "it has no loadable (PT_LOAD) segment"
    return ""


def refuse_if_broken(path, how):
    """Raise :class:`eagle.BackendLoadError` naming ``how`` (the path and how it was found) and the
    defect when the library at ``path`` would make the dynamic loader read outside the file or
    cannot be loaded by this interpreter. Does nothing on platforms whose libraries are not ELF."""
    if not IS_ELF_PLATFORM:
        return
    from .errors import BackendLoadError
    try:
        why = defect(path)
    except OSError as e:
        raise BackendLoadError(f"eagle: cannot read the backend library {how}: {e}") from None
    if why:
        raise BackendLoadError(f"eagle: cannot load the backend library {how}: {why}")
