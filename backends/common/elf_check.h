// elf_check.h -- a shared object's ELF structure, checked before dlopen maps it (header-only: the
// cpu kind checks its modules, the GPU kinds a runtime-compiler library named by path).
//
// glibc's dlopen maps every loadable segment by its file range and then reads it: a file cut short
// (a partial copy, a compiler killed while writing) maps pages past its end, and the first read of
// one kills the process with SIGBUS. elf_defect() reads the ELF header and program headers with
// pread alone and names the first defect that would make the loader read outside the file or load
// an object this process cannot use: not a regular file; shorter than an ELF header; no ELF magic;
// another ELF class, byte order or machine than this process's; not a shared object (ET_DYN); a
// program or section header table, or a segment's file range, that ends past the end of the file;
// a PT_LOAD segment whose memory size is below its file size. The same checks as the core's
// eagle/_elf_check.py, which guards the backends themselves. A structural check: it never maps or
// runs the file, and a file whose bytes are all there but hostile still runs when loaded.
#pragma once

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace eagle {

namespace elf_detail {

#if defined(__x86_64__)
constexpr int kMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr int kMachine = EM_AARCH64;
#elif defined(__powerpc64__)
constexpr int kMachine = EM_PPC64;
#elif defined(__riscv)
constexpr int kMachine = EM_RISCV;
#else
constexpr int kMachine = -1;  // not compared
#endif
constexpr unsigned char kClass = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
constexpr unsigned char kData = ELFDATA2LSB;
#else
constexpr unsigned char kData = ELFDATA2MSB;
#endif

// Whether [start, start + length) lies within a file of `size` bytes (no overflow).
inline bool inside(uint64_t start, uint64_t length, uint64_t size) { return start <= size && length <= size - start; }

struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0) close(fd);
    }
};

inline bool read_at(int fd, void* buf, size_t bytes, uint64_t at) {
    auto* p = static_cast<char*>(buf);
    while (bytes) {
        const ssize_t got = pread(fd, p, bytes, static_cast<off_t>(at));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        p += got;
        bytes -= static_cast<size_t>(got);
        at += static_cast<uint64_t>(got);
    }
    return true;
}

inline std::string n(uint64_t v) { return std::to_string(v); }

}  // namespace elf_detail

// What is wrong with the shared object at `path` ("it is truncated: ..."), or "" when nothing the
// check covers is. A file that cannot be opened or read is a defect too (named with errno's text).
inline std::string elf_defect(const std::string& path) {
    using namespace elf_detail;
    Fd f{open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
    if (f.fd < 0) return std::string("it cannot be opened: ") + std::strerror(errno);
    struct stat st{};
    if (fstat(f.fd, &st) != 0) return std::string("it cannot be read: ") + std::strerror(errno);
    if (!S_ISREG(st.st_mode)) return "it is not a regular file";
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    if (size == 0) return "it is empty (0 bytes)";
    ElfW(Ehdr) eh{};
    const uint64_t head = size < sizeof eh ? size : sizeof eh;
    if (!read_at(f.fd, &eh, head, 0)) return "it cannot be read";
    if (head < SELFMAG || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
        return "it is not an ELF file (no ELF magic in its first bytes; " + n(size) + " bytes)";
    if (head < EI_NIDENT) return "it is truncated: " + n(size) + " bytes, shorter than the 16-byte ELF identification";
    if (eh.e_ident[EI_CLASS] != kClass)
        return std::string("it is a ") + (eh.e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : "non-native-class") +
               " ELF file; this process is " + (kClass == ELFCLASS64 ? "64-bit" : "32-bit");
    if (eh.e_ident[EI_DATA] != kData) return "its byte order is not this machine's";
    if (head < sizeof eh)
        return "it is truncated: " + n(size) + " bytes, shorter than the " + n(sizeof eh) + "-byte ELF header";
    if (kMachine >= 0 && eh.e_machine != kMachine)
        return "it is built for another machine (ELF e_machine " + n(eh.e_machine) + ", this one is " + n(kMachine) + ")";
    if (eh.e_type != ET_DYN) return "it is not a shared object (ELF e_type " + n(eh.e_type) + ", ET_DYN is 3)";
    if (eh.e_shoff) {
        if (eh.e_shentsize != sizeof(ElfW(Shdr)))
            return "its section header entries are " + n(eh.e_shentsize) + " bytes, not " + n(sizeof(ElfW(Shdr)));
        const uint64_t shnum = eh.e_shnum ? eh.e_shnum : 1;  // 0: the count is in section 0, at least 1 entry
        if (!inside(eh.e_shoff, shnum * sizeof(ElfW(Shdr)), size))
            return "it is truncated: the section header table at byte " + n(eh.e_shoff) + " (" + n(shnum) +
                   " entries) ends past the end of the file (" + n(size) + " bytes)";
    }
    uint64_t phnum = eh.e_phnum;
    if (phnum == PN_XNUM) {
        ElfW(Shdr) s0{};
        if (!eh.e_shoff || !read_at(f.fd, &s0, sizeof s0, eh.e_shoff))
            return "its program header count is PN_XNUM with no section 0 to hold it";
        phnum = s0.sh_info;
    }
    if (phnum == 0) return "it has no program headers (nothing the dynamic loader could map)";
    if (eh.e_phentsize != sizeof(ElfW(Phdr)))
        return "its program header entries are " + n(eh.e_phentsize) + " bytes, not " + n(sizeof(ElfW(Phdr)));
    if (!inside(eh.e_phoff, phnum * sizeof(ElfW(Phdr)), size))
        return "it is truncated: the program header table (" + n(phnum) + " entries at byte " + n(eh.e_phoff) +
               ") ends past the end of the file (" + n(size) + " bytes)";
    std::vector<ElfW(Phdr)> ph(phnum);
    if (!read_at(f.fd, ph.data(), phnum * sizeof(ElfW(Phdr)), eh.e_phoff))
        return "it is truncated: its program header table cannot be read";
    int loads = 0;
    for (uint64_t i = 0; i < phnum; ++i) {
        const auto& p = ph[i];
        if (p.p_filesz && !inside(p.p_offset, p.p_filesz, size))
            return "it is truncated: program header " + n(i) + " covers bytes " + n(p.p_offset) + ".." +
                   n(p.p_offset + p.p_filesz) + " of the file, but the file has " + n(size) + " bytes";
        if (p.p_type == PT_LOAD) {
            ++loads;
            if (p.p_memsz < p.p_filesz)
                return "program header " + n(i) + " (PT_LOAD) has a memory size (" + n(p.p_memsz) +
                       ") below its file size (" + n(p.p_filesz) + ")";
        }
    }
    if (!loads) return "it has no loadable (PT_LOAD) segment";
    return {};
}

}  // namespace eagle
