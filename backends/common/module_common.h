// module_common.h -- pieces every kind's minor-7 module code shares: reading a module desc's strings,
// handing a compiler log back (malloc'd, freed with eagle_backend_free), the search list.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "eagle/backend_kit.h"
#include "handle_registry.h"

namespace eagle {

// The floating-point mode module_desc.flags asks for: 0 bit-exact, FAST_MATH, or (minor 8)
// CONTRACT -- multiply-adds fused as the kind's compiler does by default, IEEE division and square
// root, denormals kept.
enum class FpMode { exact, contract, fast };

// A module desc's inputs as owned strings. Counts outside 0..256 or a NULL entry are INVALID_ARGUMENT.
struct ModuleInputs {
    uint32_t flags = 0;
    FpMode fp = FpMode::exact;
    int32_t device = -1;
    std::string name;
    std::vector<std::string> include_dirs;
    std::vector<std::string> options;
    std::vector<std::string> compiler_paths;  // the ':'-separated desc->compiler, split
    const volatile uint32_t* cancel = nullptr;  // desc->cancel (minor 8): nonzero asks the compile to stop
};

inline std::vector<std::string> read_string_list(const char* const* items, int64_t count, const char* what) {
    if (count < 0 || count > 256)
        fail(EAGLE_BACKEND_INVALID_ARGUMENT, std::string(what) + " count is " + std::to_string(count) + " (0..256)");
    if (count > 0 && !items) fail(EAGLE_BACKEND_INVALID_ARGUMENT, std::string(what) + " is NULL with a nonzero count");
    std::vector<std::string> out;
    for (int64_t i = 0; i < count; ++i) {
        if (!items[i]) fail(EAGLE_BACKEND_INVALID_ARGUMENT, std::string(what) + "[" + std::to_string(i) + "] is NULL");
        out.emplace_back(items[i]);
    }
    return out;
}

inline ModuleInputs read_module_desc(const struct eagle_backend_module_desc* desc, const char* default_name) {
    auto d = read_desc(desc, "desc");
    check_flags(d.flags, EAGLE_BACKEND_MODULE_FAST_MATH | EAGLE_BACKEND_MODULE_CONTRACT, "desc->flags");
    if ((d.flags & EAGLE_BACKEND_MODULE_FAST_MATH) && (d.flags & EAGLE_BACKEND_MODULE_CONTRACT))
        fail(EAGLE_BACKEND_INVALID_ARGUMENT,
             "desc->flags sets both FAST_MATH and CONTRACT; a module has one floating-point mode");
    ModuleInputs in;
    in.flags = d.flags;
    in.fp = (d.flags & EAGLE_BACKEND_MODULE_FAST_MATH) ? FpMode::fast
            : (d.flags & EAGLE_BACKEND_MODULE_CONTRACT) ? FpMode::contract
                                                        : FpMode::exact;
    in.device = d.device;
    in.cancel = reinterpret_cast<const volatile uint32_t*>(static_cast<uintptr_t>(d.cancel));
    in.name = d.name && *d.name ? d.name : default_name;
    in.include_dirs = read_string_list(d.include_dirs, d.include_dir_count, "desc->include_dirs");
    in.options = read_string_list(d.options, d.option_count, "desc->options");
    if (d.compiler && *d.compiler) {
        std::string all(d.compiler);
        size_t start = 0;
        while (start <= all.size()) {
            size_t end = all.find(':', start);
            if (end == std::string::npos) end = all.size();
            if (end > start) in.compiler_paths.push_back(all.substr(start, end - start));
            start = end + 1;
        }
    }
    return in;
}

// Hands `text` to *log (NULL for empty text or a NULL log): malloc'd, freed with eagle_backend_free.
inline void hand_log(char** log, const std::string& text) {
    if (!log) return;
    *log = nullptr;
    if (text.empty()) return;
    char* p = static_cast<char*>(std::malloc(text.size() + 1));
    if (!p) return;  // the log is best effort; the status still says what happened
    std::memcpy(p, text.data(), text.size());
    p[text.size()] = '\0';
    *log = p;
}

// The first line of a compiler log that says "error" (else its first line), for last_error.
inline std::string first_error_line(const std::string& log) {
    size_t start = 0;
    std::string first;
    while (start < log.size()) {
        size_t end = log.find('\n', start);
        if (end == std::string::npos) end = log.size();
        std::string line = log.substr(start, end - start);
        if (first.empty() && !line.empty()) first = line;
        if (line.find("error") != std::string::npos) return line;
        start = end + 1;
    }
    return first.empty() ? std::string("(the compiler gave no message)") : first;
}

// Device addresses mem_alloc handed out and mem_free has not taken back: mem_free frees only these
// (a foreign or already freed address is never passed to the allocator). One per backend library,
// in the same registry the handles use.
inline HandleRegistry<bool>& allocations() {
    static auto* a = new HandleRegistry<bool>();  // never destroyed: frees may run at exit
    return *a;
}

inline bool any_entry(bool) { return true; }

}  // namespace eagle
