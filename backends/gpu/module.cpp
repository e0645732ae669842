// module.cpp -- minor 7 on GPU kinds: kernel sources compiled by the kind's runtime compiler (NVRTC on
// cuda, hiprtc on hip), loaded with dlopen at run time so the backend links neither; images loaded
// into the device's context through the native layer; device memory from the runtime's allocator.
//
// NVRTC and hiprtc have the same shape (create, compile, log, code, destroy); the names differ by
// prefix and the code getter, which native::rtc() gives. Only the functions used are declared here,
// with the signatures both libraries document, so no compiler header is needed at build time.
#include <dlfcn.h>

#include <algorithm>
#include <sys/stat.h>

#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "gpu.h"
#include "elf_check.h"
#include "module_common.h"

using namespace eagle;
using namespace eagle::gpu;

namespace {

constexpr uint32_t kModuleMagic = 0x4d4f4455u;  // "MODU"

struct Module {
    uint32_t magic = kModuleMagic;
    void* native = nullptr;
    int device = 0;
    std::string name;
    // cuda: the WHILE-end entries of EAGLE_KERNEL kernels (eagle/kernel.h), by kernel name:
    // (declared arguments, entry handle); and the handles told to the kernel fold, forgotten at unload.
    std::unordered_map<std::string, std::pair<int64_t, uint64_t>> while_ends;
    std::vector<uint64_t> folds;
    ~Module() { magic = 0; }
};

Module* module_of(eagle_backend_module m) {
    auto* p = reinterpret_cast<Module*>(m);
    if (!p) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "module is NULL");
    if (p->magic != kModuleMagic) fail(EAGLE_BACKEND_BAD_HANDLE, "module is not a live handle");
    return p;
}

// The runtime compiler's entry points (nvrtcX or hiprtcX; results are ints, 0 success).
using Program = void*;
struct Rtc {
    std::string path;
    int (*create)(Program*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
    int (*compile)(Program, int, const char* const*) = nullptr;
    int (*log_size)(Program, size_t*) = nullptr;
    int (*log)(Program, char*) = nullptr;
    int (*code_size)(Program, size_t*) = nullptr;
    int (*code)(Program, char*) = nullptr;
    int (*destroy)(Program*) = nullptr;
    const char* (*error_string)(int) = nullptr;
};

bool is_dir(const std::string& p) {
    struct stat st{};
    return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

template <class F>
bool bind(void* h, const std::string& name, F& out) {
    out = reinterpret_cast<F>(dlsym(h, name.c_str()));
    return out != nullptr;
}

// Opens the first candidate that loads and has every entry point; `tried` collects what failed.
const Rtc* open_rtc(const std::string& candidate, std::string& tried) {
    static std::mutex mu;
    static std::unordered_map<std::string, Rtc*> opened;  // path -> entry points (never closed)
    std::lock_guard<std::mutex> lock(mu);
    auto it = opened.find(candidate);
    if (it != opened.end()) return it->second;
    if (candidate.find('/') != std::string::npos) {  // a file: a truncated one would SIGBUS in dlopen
        if (const std::string why = elf_defect(candidate); !why.empty()) {
            tried += "\n  " + candidate + ": " + why;
            return nullptr;
        }
    }
    void* h = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char* e = dlerror();
        tried += "\n  " + candidate + ": " + (e ? e : "not loadable");
        return nullptr;
    }
    const auto& n = native::rtc();
    const std::string p = n.prefix;
    auto* r = new Rtc();
    r->path = candidate;
    bool ok = bind(h, p + "CreateProgram", r->create) && bind(h, p + "CompileProgram", r->compile) &&
              bind(h, p + "GetProgramLogSize", r->log_size) && bind(h, p + "GetProgramLog", r->log) &&
              bind(h, p + n.code_size, r->code_size) && bind(h, p + n.code, r->code) &&
              bind(h, p + "DestroyProgram", r->destroy) && bind(h, p + "GetErrorString", r->error_string);
    if (!ok) {
        tried += "\n  " + candidate + ": lacks the " + p + "* entry points";
        delete r;
        dlclose(h);
        return nullptr;
    }
    opened[candidate] = r;
    return r;
}

// The caller's search list (files, or directories holding one of the library names), then the
// names through the system loader, then the toolkit's directories.
const Rtc& find_rtc(const ModuleInputs& in) {
    const auto& n = native::rtc();
    std::string tried;
    auto try_dir = [&](const std::string& dir) -> const Rtc* {
        for (const char* const* lib = n.libraries; *lib; ++lib) {
            std::string f = dir + "/" + *lib;
            struct stat st{};
            if (stat(f.c_str(), &st) == 0)
                if (const Rtc* r = open_rtc(f, tried)) return r;
        }
        return nullptr;
    };
    for (const auto& entry : in.compiler_paths) {
        if (is_dir(entry)) {
            if (const Rtc* r = try_dir(entry)) return *r;
        } else if (const Rtc* r = open_rtc(entry, tried)) {
            return *r;
        }
    }
    for (const char* const* lib = n.libraries; *lib; ++lib)
        if (const Rtc* r = open_rtc(*lib, tried)) return *r;
    for (const char* const* dir = n.directories; *dir; ++dir)
        if (const Rtc* r = try_dir(*dir)) return *r;
    fail(EAGLE_BACKEND_UNAVAILABLE, std::string(n.what) + " was not found; " + n.install + ". Tried:" + tried);
}

Module* load(const void* image, size_t bytes, int device, const std::string& name, char** log) {
    std::string text;
    void* native_module = native::module_load(image, bytes, text);
    if (!native_module) {
        hand_log(log, text);
        fail(EAGLE_BACKEND_COMPILE_FAILED, "'" + name + "' could not be loaded: " + first_error_line(text));
    }
    auto* m = new Module();
    m->native = native_module;
    m->device = device;
    m->name = name;
#if !defined(EAGLE_GPU_HIP)
    // "eagle_while_end_<N>_<name>": listed rather than looked up, so a kernel without one costs no
    // failed driver call.
    static const std::string prefix = "eagle_while_end_";
    try {
        for (const auto& [fname, handle] : native::module_functions(native_module)) {
            if (fname.compare(0, prefix.size(), prefix) != 0) continue;
            const size_t sep = fname.find('_', prefix.size());
            if (sep == std::string::npos || sep == prefix.size() || sep - prefix.size() > 2) continue;
            const std::string digits = fname.substr(prefix.size(), sep - prefix.size());
            if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
            m->while_ends[fname.substr(sep + 1)] = {std::stoll(digits), handle};
        }
    } catch (...) {  // no fold for this module's kernels
        m->while_ends.clear();
    }
#endif
    return m;
}

}  // namespace

EAGLE_EXPORT eagle_backend_status eagle_backend_module_from_source(const struct eagle_backend_module_desc* desc,
                                                                   const char* source, uint64_t source_bytes,
                                                                   eagle_backend_module* out, char** log) {
    if (log) *log = nullptr;
    return guarded("eagle_backend_module_from_source", [&] {
        require(out, "out");
        *out = nullptr;
        ModuleInputs in = read_module_desc(desc, "source.cu");
        if (source_bytes > 0 && !source) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "source is NULL");
        const Rtc& rtc = find_rtc(in);
        const int dev = resolve_device(in.device, 0, false);  // checks for a device
        DeviceGuard guard(dev);
        std::vector<std::string> opts = native::rtc_options(dev, in.fp);
        for (const auto& d : in.include_dirs) opts.push_back("-I" + d);
        for (const auto& o : in.options) opts.push_back(o);
        std::vector<const char*> argv;
        for (const auto& o : opts) argv.push_back(o.c_str());
        const std::string text(source ? source : "", source ? source_bytes : 0);
        Program prog = nullptr;
        int r = rtc.create(&prog, text.c_str(), in.name.c_str(), 0, nullptr, nullptr);
        if (r != 0) fail(EAGLE_BACKEND_ERROR, std::string(native::rtc().prefix) + "CreateProgram: " + rtc.error_string(r));
        struct Destroy {
            const Rtc& rtc;
            Program* p;
            ~Destroy() { rtc.destroy(p); }
        } destroy{rtc, &prog};
        const int compiled = rtc.compile(prog, static_cast<int>(argv.size()), argv.data());
        std::string compile_log;
        size_t log_size = 0;
        if (rtc.log_size(prog, &log_size) == 0 && log_size > 1) {
            compile_log.resize(log_size);
            if (rtc.log(prog, compile_log.data()) != 0) compile_log.clear();
            while (!compile_log.empty() && compile_log.back() == '\0') compile_log.pop_back();
        }
        if (compiled != 0) {
            hand_log(log, compile_log);
            fail(EAGLE_BACKEND_COMPILE_FAILED, in.name + " did not compile (" + rtc.error_string(compiled) +
                                                   "): " + first_error_line(compile_log));
        }
        size_t code_size = 0;
        if (rtc.code_size(prog, &code_size) != 0 || code_size == 0)
            fail(EAGLE_BACKEND_ERROR, std::string(native::rtc().what) + " produced no code for " + in.name);
        std::string code(code_size, '\0');
        if (rtc.code(prog, code.data()) != 0)
            fail(EAGLE_BACKEND_ERROR, std::string(native::rtc().what) + " could not hand back the code");
        Module* m = load(code.data(), code.size(), dev, in.name, log);
        hand_log(log, compile_log);
        *out = reinterpret_cast<eagle_backend_module>(m);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_module_from_image(const struct eagle_backend_module_desc* desc,
                                                                  const void* image, uint64_t bytes,
                                                                  eagle_backend_module* out, char** log) {
    if (log) *log = nullptr;
    return guarded("eagle_backend_module_from_image", [&] {
        require(out, "out");
        *out = nullptr;
        ModuleInputs in = read_module_desc(desc, "image");
        if (!image || bytes == 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "image is NULL or empty");
        const int dev = resolve_device(in.device, 0, false);
        DeviceGuard guard(dev);
        // PTX must be NUL-terminated for the loader: a copy with one appended costs nothing here.
        std::string copy(static_cast<const char*>(image), bytes);
        copy.push_back('\0');
        *out = reinterpret_cast<eagle_backend_module>(load(copy.data(), bytes, dev, in.name, log));
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_module_function(eagle_backend_module module, const char* name,
                                                                uint64_t* function) {
    return guarded("eagle_backend_module_function", [&] {
        Module* m = module_of(module);
        require(name, "name");
        require(function, "function");
        *function = 0;
        DeviceGuard guard(m->device);
        const uint64_t f = native::module_function(m->native, name);
        if (!f) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "module '" + m->name + "' has no kernel named '" + name + "'");
#if !defined(EAGLE_GPU_HIP)
        // A kernel from EAGLE_KERNEL has a WHILE-end entry (eagle/kernel.h): the fold may use it.
        auto we = m->while_ends.find(name);
        if (we != m->while_ends.end()) {
            if (std::find(m->folds.begin(), m->folds.end(), f) == m->folds.end()) m->folds.push_back(f);
            kernel_fold_learn(f, we->second.second, we->second.first, m->device);
        }
#endif
        *function = f;
    });
}

EAGLE_EXPORT void eagle_backend_module_release(eagle_backend_module module) {
    guarded_void([&] {
        auto* m = reinterpret_cast<Module*>(module);
        if (!m || m->magic != kModuleMagic) return;
        {
            DeviceGuard guard(m->device);
#if !defined(EAGLE_GPU_HIP)
            for (uint64_t f : m->folds) kernel_fold_forget(f);
#endif
            native::module_unload(m->native);
        }
        delete m;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_mem_alloc(int32_t device, uint64_t bytes, uint32_t flags,
                                                          uint64_t* address) {
    return guarded("eagle_backend_mem_alloc", [&] {
        require(address, "address");
        *address = 0;
        check_flags(flags, 0, "flags");
        if (bytes == 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "bytes is 0");
        const int dev = resolve_device(device, 0, false);
        DeviceGuard guard(dev);
        void* p = nullptr;
        gpuError_t e = gpuMalloc(&p, bytes);  // runtime allocations are 256-byte aligned
        if (e != gpuSuccess || !p) {
            (void)gpuGetLastError();
            fail(EAGLE_BACKEND_UNAVAILABLE, "mem_alloc of " + std::to_string(bytes) + " bytes on device " +
                                                std::to_string(dev) + " failed: " + gpuGetErrorString(e));
        }
        const uint64_t a = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
        try {
            allocations().add(p, true);
        } catch (...) {
            (void)gpuFree(p);
            throw;
        }
        *address = a;
    });
}

EAGLE_EXPORT void eagle_backend_mem_free(uint64_t address) {
    guarded_void([&] {
        if (!address) return;
        void* p = reinterpret_cast<void*>(static_cast<uintptr_t>(address));
        if (!allocations().take(p, any_entry)) return;  // not ours: never freed
        (void)gpuFree(p);
    });
}
