// elf_check.h -- a shared object's ELF structure, checked before dlopen maps it.
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

#include <string>

namespace eagle {

// What is wrong with the shared object at `path` ("it is truncated: ..."), or "" when nothing the
// check covers is. A file that cannot be opened or read is a defect too (named with errno's text).
std::string elf_defect(const std::string& path);

}  // namespace eagle
