// Kernels of the opencl backend: module_from_source (clBuildProgram of OpenCL C 2.0, the build log
// handed back), module_from_image (a SPIR-V module through clCreateProgramWithIL, or a program
// binary of this platform), module_function and module_release.
//
// Floating point: bit-exact (flags 0) prepends `#pragma OPENCL FP_CONTRACT OFF` and asks for
// correctly rounded float division and square root (-cl-fp32-correctly-rounded-divide-sqrt, where
// the device has it; double's are always correctly rounded); CONTRACT sets FP_CONTRACT ON (OpenCL
// C's own default) with the same division; FAST_MATH is -cl-fast-relaxed-math.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "common.h"

namespace eagle_opencl {
struct Module {
    cl_program program = nullptr;
    std::string name;
    std::map<std::string, std::unique_ptr<Kernel>> kernels;
};

namespace {
std::mutex g_mu;
std::set<Module*> g_modules;
std::set<Kernel*> g_kernels;

char* dup_log(const std::string& s) {
    if (s.empty()) return nullptr;
    char* p = static_cast<char*>(std::malloc(s.size() + 1));
    if (!p) throw std::bad_alloc();
    std::memcpy(p, s.c_str(), s.size() + 1);
    return p;
}

std::string build_log(cl_program prog, cl_device_id dev) {
    size_t n = 0;
    if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
    std::string s(n, '\0');
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, s.data(), nullptr);
    s.resize(std::strlen(s.c_str()));
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

std::string first_error_line(const std::string& log) {
    size_t pos = 0;
    while (pos < log.size()) {
        size_t end = log.find('\n', pos);
        if (end == std::string::npos) end = log.size();
        const std::string line = log.substr(pos, end - pos);
        if (line.find("error") != std::string::npos) return line;
        pos = end + 1;
    }
    return log.substr(0, log.find('\n'));
}

// The source without its comments (each one space), so declarations inside comments are not read.
std::string without_comments(const std::string& src) {
    std::string out;
    out.reserve(src.size());
    for (size_t i = 0; i < src.size();) {
        if (src.compare(i, 2, "//") == 0) {
            i = src.find('\n', i);
            if (i == std::string::npos) break;
        } else if (src.compare(i, 2, "/*") == 0) {
            const size_t end = src.find("*/", i + 2);
            if (end == std::string::npos) break;
            out += ' ';
            i = end + 2;
        } else {
            out += src[i++];
        }
    }
    return out;
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// s without the blanks (and line continuations, in a macro that declares kernels) around it.
std::string trimmed(const std::string& s) {
    const size_t a = s.find_first_not_of(" \t\r\n\\"), b = s.find_last_not_of(" \t\r\n\\");
    return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// kernel.h's address-space lines for a device without the generic address space, from the
// source's EAGLE_KERNEL(name, (T, p), ...) declarations (T is a pointer where it holds a '*'):
// EAGLE_OCL_SPACES, per kernel and parameter `#define EAGLE_OCL_SPACE_name__p ~, __global` (a
// scalar: `~,`), and per parameter name declared the same way everywhere
// `#define EAGLE_OCL_SPACE__p __global` (a scalar: empty); see kernel.h. Each also under PoCL's
// name for a parameter named as one of its built-ins (its headers #define step _cl_step).
std::string address_space_lines(const std::string& source) {
    const std::string text = without_comments(source);
    std::map<std::string, int> by_param;                   // param -> 1 pointer, 2 scalar, 3 both
    std::map<std::pair<std::string, std::string>, int> by_kernel;
    const std::string key = "EAGLE_KERNEL";
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + key.size())) {
        if ((at > 0 && ident_char(text[at - 1])) || ident_char(text[at + key.size()])) continue;
        size_t i = text.find_first_not_of(" \t\r\n", at + key.size());
        if (i == std::string::npos || text[i] != '(') continue;
        size_t j = i + 1;
        while (j < text.size() && (ident_char(text[j]) || std::isspace(static_cast<unsigned char>(text[j])))) ++j;
        const std::string name = trimmed(text.substr(i + 1, j - i - 1));
        while (j < text.size()) {  // the (T, p) pairs up to the declaration's closing parenthesis
            j = text.find_first_not_of(" \t\r\n\\", j);
            if (j == std::string::npos || text[j] != ',') break;
            j = text.find_first_not_of(" \t\r\n\\", j + 1);
            if (j == std::string::npos || text[j] != '(') break;
            const size_t close = text.find(')', j);
            if (close == std::string::npos) break;
            const std::string pair = text.substr(j + 1, close - j - 1);
            const size_t comma = pair.rfind(',');
            if (comma == std::string::npos || pair.find('(') != std::string::npos) break;
            const std::string param = trimmed(pair.substr(comma + 1));
            const int k = pair.substr(0, comma).find('*') != std::string::npos ? 1 : 2;
            by_param[param] |= k;
            if (!name.empty()) by_kernel[{name, param}] |= k;
            j = close + 1;
        }
    }
    std::string out = "#define EAGLE_OCL_SPACES 1\n";
    for (const char* prefix : {"", "_cl_"}) {
        for (const auto& [kp, k] : by_kernel)
            if (k != 3)
                out += "#define EAGLE_OCL_SPACE_" + kp.first + "__" + prefix + kp.second +
                       (k == 1 ? " ~, __global\n" : " ~,\n");
        for (const auto& [param, k] : by_param)
            if (k != 3) out += "#define EAGLE_OCL_SPACE__" + std::string(prefix) + param + (k == 1 ? " __global\n" : "\n");
    }
    return out;
}

// An option as one token for the platform's option parser: quoted when it holds a space.
std::string quoted(const std::string& s) {
    if (s.find_first_of(" \t\"") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') q += '\\';
        q += c;
    }
    return q + "\"";
}

// Builds `prog`, registers the module, hands the log back; COMPILE_FAILED with the first error.
// The build log with the source's own name and line numbers where the compiler ignored the
// `#line 1 "name"` in front of it (NVIDIA's writes `<kernel>:LINE:COL:`, LINE counting the
// `prelude` lines eagle put before the source).
std::string named_log(const std::string& text, const std::string& name, int prelude) {
    static const std::string tag = "<kernel>:";
    std::string out;
    size_t at = 0;
    for (size_t k; (k = text.find(tag, at)) != std::string::npos;) {
        out.append(text, at, k - at);
        size_t e = k + tag.size();
        long line = 0;
        while (e < text.size() && text[e] >= '0' && text[e] <= '9' && line < 100000000) line = line * 10 + (text[e++] - '0');
        if (e > k + tag.size() && e < text.size() && text[e] == ':') {
            out += name + ":" + std::to_string(line > prelude ? line - prelude : line);
            at = e;
        } else {
            out += tag;
            at = k + tag.size();
        }
    }
    out.append(text, at, std::string::npos);
    return out;
}

// $EAGLE_OPENCL_DUMP_DIR (a directory that exists): each program built from source or image leaves
// <dir>/<n>.cl (the text handed to the compiler: the mode's pragma, the address-space lines, the
// source), <n>.options and <n>.bin (CL_PROGRAM_BINARIES: PTX on NVIDIA's OpenCL), n counting the
// process's builds, so that a backend author can read what the platform's compiler made of a
// kernel. A dump that cannot be written is skipped; it never fails the build.
void dump_program(cl_program prog, const std::string& name, const std::string& options, const std::string& text) {
    const char* dir = std::getenv("EAGLE_OPENCL_DUMP_DIR");
    if (!dir || !*dir) return;
    static std::atomic<int> builds{0};
    const std::string stem = std::string(dir) + "/" + std::to_string(builds++);
    auto write = [](const std::string& path, const void* data, size_t bytes) {
        if (FILE* f = std::fopen(path.c_str(), "wb")) {
            std::fwrite(data, 1, bytes, f);
            std::fclose(f);
        }
    };
    const std::string opts = name + "\n" + options + "\n";
    write(stem + ".options", opts.data(), opts.size());
    write(stem + ".cl", text.data(), text.size());
    size_t bytes = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof bytes, &bytes, nullptr) != CL_SUCCESS || !bytes) return;
    std::vector<unsigned char> bin(bytes);
    unsigned char* ptr = bin.data();
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) == CL_SUCCESS)
        write(stem + ".bin", bin.data(), bytes);
}

eagle_backend_module finish_module(cl_program prog, const std::string& name, const std::string& options,
                                   char** log, int prelude = 0, const std::string& source = std::string()) {
    Runtime& rt = runtime();
    const cl_int err = clBuildProgram(prog, 1, &rt.device, options.c_str(), nullptr, nullptr);
    const std::string text = named_log(build_log(prog, rt.device), name, prelude);
    if (log) *log = dup_log(text);
    if (err != CL_SUCCESS) {
        clReleaseProgram(prog);
        if (err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BINARY || err == CL_INVALID_BUILD_OPTIONS)
            eagle::fail(EAGLE_BACKEND_COMPILE_FAILED,
                        name + ": " + (text.empty() ? cl_error(err, "clBuildProgram") : first_error_line(text)));
        cl_check(err, "clBuildProgram");
    }
    dump_program(prog, name, options, source);
    auto m = std::make_unique<Module>();
    m->program = prog;
    m->name = name;
    std::lock_guard<std::mutex> lock(g_mu);
    Module* p = m.release();
    g_modules.insert(p);
    return reinterpret_cast<eagle_backend_module>(p);
}

Module& lookup_module(eagle_backend_module handle) {
    Module* m = reinterpret_cast<Module*>(handle);
    if (!m) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "module is NULL");
    if (!g_modules.count(m))
        eagle::fail(EAGLE_BACKEND_BAD_HANDLE, "module is not a live module of the opencl backend (released or foreign)");
    return *m;
}

std::vector<std::string> c_strings(const char* const* items, int64_t count, const char* name) {
    if (count < 0 || count > 256)
        eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, std::string(name) + " count is " + std::to_string(count) +
                                                        "; it must be 0..256");
    if (count > 0) eagle::require(items, name);
    std::vector<std::string> out;
    for (int64_t k = 0; k < count; ++k) {
        if (!items[k]) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, std::string(name) + "[" + std::to_string(k) + "] is NULL");
        out.emplace_back(items[k]);
    }
    return out;
}
}  // namespace

Kernel& kernel_of(uint64_t function, const char* name) {
    Kernel* k = reinterpret_cast<Kernel*>(function);
    std::lock_guard<std::mutex> lock(g_mu);
    if (!k || !g_kernels.count(k))
        eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, std::string(name) + " (" + std::to_string(function) +
                                                        ") is not a kernel of a live opencl module");
    return *k;
}
}  // namespace eagle_opencl

using namespace eagle_opencl;

EAGLE_EXPORT eagle_backend_status eagle_backend_module_from_source(const struct eagle_backend_module_desc* desc,
                                                                   const char* source, uint64_t source_bytes,
                                                                   eagle_backend_module* out, char** log) {
    if (log) *log = nullptr;
    return eagle::guarded("eagle_backend_module_from_source", [&] {
        const auto d = eagle::read_desc(desc, "desc");
        eagle::require(out, "out");
        if (source_bytes > 0) eagle::require(source, "source");
        eagle::check_flags(d.flags, EAGLE_BACKEND_MODULE_FAST_MATH | EAGLE_BACKEND_MODULE_CONTRACT, "desc->flags");
        if ((d.flags & EAGLE_BACKEND_MODULE_FAST_MATH) && (d.flags & EAGLE_BACKEND_MODULE_CONTRACT))
            eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->flags: FAST_MATH and CONTRACT together");
        check_device(d.device, "desc->device");
        const auto dirs = c_strings(d.include_dirs, d.include_dir_count, "desc->include_dirs");
        const auto opts = c_strings(d.options, d.option_count, "desc->options");
        Runtime& rt = runtime();
        cl_bool compiler = CL_FALSE;
        clGetDeviceInfo(rt.device, CL_DEVICE_COMPILER_AVAILABLE, sizeof compiler, &compiler, nullptr);
        if (!compiler)
            eagle::fail(EAGLE_BACKEND_UNAVAILABLE, "the OpenCL platform '" + rt.platform_name +
                                                       "' has no compiler for its device (CL_DEVICE_COMPILER_AVAILABLE)");
        const std::string name = d.name ? d.name : "<source>";
        const bool fast = d.flags & EAGLE_BACKEND_MODULE_FAST_MATH;
        const bool contract = d.flags & EAGLE_BACKEND_MODULE_CONTRACT;
        // The mode's pragma, then the source under its own name and line numbers.
        std::string text = fast ? "" : contract ? "#pragma OPENCL FP_CONTRACT ON\n" : "#pragma OPENCL FP_CONTRACT OFF\n";
        if (rt.qualify) text += address_space_lines(std::string(source ? source : "", static_cast<size_t>(source_bytes)));
        std::string line_name;
        for (char c : name) line_name += (c == '"' || c == '\\') ? '_' : c;
        text += "#line 1 \"" + line_name + "\"\n";
        const size_t start = text.size();
        // the lines before the source (the pragma, the address-space lines, #line)
        const int prelude = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
        text.append(source ? source : "", static_cast<size_t>(source_bytes));
        // OpenCL compilers read a source as a C string: a NUL byte (in a comment, say) would end it
        // early, so each becomes a space; the source is still source_bytes long, line numbers kept.
        for (size_t c = start; c < text.size(); ++c)
            if (text[c] == '\0') text[c] = ' ';
        // OpenCL C 2.0, or 3.0 (see runtime.cpp): kernel.h's declared pointers are __global
        // either way; pointers the user writes without an address space are generic where the
        // device has the generic address space, private where it has not.
        std::string options = rt.cl_std + " -cl-kernel-arg-info";
        if (fast)
            options += " -cl-fast-relaxed-math";
        else if (rt.fp32_correct_div)
            options += " -cl-fp32-correctly-rounded-divide-sqrt";
        for (const auto& dir : dirs) options += " -I " + quoted(dir);
        for (const auto& o : opts) options += " " + o;
        const char* src = text.c_str();
        const size_t len = text.size();
        cl_int err = CL_SUCCESS;
        cl_program prog = clCreateProgramWithSource(rt.context, 1, &src, &len, &err);
        cl_check(err, "clCreateProgramWithSource");
        *out = finish_module(prog, name, options, log, prelude, text);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_module_from_image(const struct eagle_backend_module_desc* desc,
                                                                  const void* image, uint64_t bytes,
                                                                  eagle_backend_module* out, char** log) {
    if (log) *log = nullptr;
    return eagle::guarded("eagle_backend_module_from_image", [&] {
        const auto d = eagle::read_desc(desc, "desc");
        eagle::require(out, "out");
        eagle::require(image, "image");
        if (bytes == 0) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "bytes is 0");
        eagle::check_flags(d.flags, EAGLE_BACKEND_MODULE_FAST_MATH | EAGLE_BACKEND_MODULE_CONTRACT, "desc->flags");
        check_device(d.device, "desc->device");
        Runtime& rt = runtime();
        const std::string name = d.name ? d.name : "<image>";
        cl_int err = CL_SUCCESS;
        cl_program prog = nullptr;
        uint32_t magic = 0;
        if (bytes >= 4) std::memcpy(&magic, image, 4);
        if (magic == 0x07230203u) {  // SPIR-V
            prog = clCreateProgramWithIL(rt.context, image, static_cast<size_t>(bytes), &err);
            if (err != CL_SUCCESS)
                eagle::fail(EAGLE_BACKEND_COMPILE_FAILED, name + ": " + cl_error(err, "clCreateProgramWithIL"));
        } else {  // a program binary of this platform (clGetProgramInfo CL_PROGRAM_BINARIES)
            const size_t len = static_cast<size_t>(bytes);
            const unsigned char* bin = static_cast<const unsigned char*>(image);
            cl_int bin_status = CL_SUCCESS;
            prog = clCreateProgramWithBinary(rt.context, 1, &rt.device, &len, &bin, &bin_status, &err);
            if (err != CL_SUCCESS || bin_status != CL_SUCCESS)
                eagle::fail(EAGLE_BACKEND_COMPILE_FAILED,
                            name + ": not a SPIR-V module nor a program binary of '" + rt.platform_name + "' (" +
                                cl_error(err != CL_SUCCESS ? err : bin_status, "clCreateProgramWithBinary") + ")");
        }
        *out = finish_module(prog, name, "", log);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_module_function(eagle_backend_module module, const char* name,
                                                                uint64_t* function) {
    return eagle::guarded("eagle_backend_module_function", [&] {
        eagle::require(name, "name");
        eagle::require(function, "function");
        std::lock_guard<std::mutex> lock(g_mu);
        Module& m = lookup_module(module);
        auto it = m.kernels.find(name);
        if (it == m.kernels.end()) {
            cl_int err = CL_SUCCESS;
            cl_kernel k = clCreateKernel(m.program, name, &err);
            if (err == CL_INVALID_KERNEL_NAME || (err == CL_SUCCESS && !k))
                eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "module " + m.name + " holds no kernel named '" + name + "'");
            cl_check(err, "clCreateKernel");
            auto kern = std::make_unique<Kernel>();
            kern->kernel = k;
            kern->module = &m;
            clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof kern->nargs, &kern->nargs, nullptr);
            kern->svm_arg.assign(kern->nargs, 0);
            for (cl_uint a = 0; a < kern->nargs; ++a) {
                cl_kernel_arg_address_qualifier q = CL_KERNEL_ARG_ADDRESS_PRIVATE;
                if (clGetKernelArgInfo(k, a, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof q, &q, nullptr) == CL_SUCCESS)
                    kern->svm_arg[a] = q == CL_KERNEL_ARG_ADDRESS_GLOBAL || q == CL_KERNEL_ARG_ADDRESS_CONSTANT;
            }
            g_kernels.insert(kern.get());
            it = m.kernels.emplace(name, std::move(kern)).first;
        }
        *function = reinterpret_cast<uint64_t>(it->second.get());
    });
}

EAGLE_EXPORT void eagle_backend_module_release(eagle_backend_module module) {
    eagle::guarded_void([&] {
        std::unique_ptr<Module> gone;
        {
            std::lock_guard<std::mutex> lock(g_mu);
            Module* m = reinterpret_cast<Module*>(module);
            if (!m || !g_modules.erase(m)) return;
            for (auto& k : m->kernels) g_kernels.erase(k.second.get());
            gone.reset(m);
        }
        for (auto& k : gone->kernels) clReleaseKernel(k.second->kernel);
        clReleaseProgram(gone->program);
    });
}
