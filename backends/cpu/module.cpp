// Minor 7 on the cpu kind: a C source compiled by the system C compiler into a shared object that is
// dlopen'ed (kernels are found with dlsym), a shared object loaded from bytes, and device memory,
// which on this kind is aligned host memory.
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_set>

#include "elf_check.h"
#include "module_common.h"
#include "runtime.h"

extern char** environ;

using namespace eagle;

namespace {

constexpr uint32_t kModuleMagic = 0x4d4f4455u;  // "MODU"

struct Module {
    uint32_t magic = kModuleMagic;
    void* handle = nullptr;
    std::string name;
    ~Module() { magic = 0; }
};

Module* module_of(eagle_backend_module m) {
    auto* p = reinterpret_cast<Module*>(m);
    if (!p) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "module is NULL");
    if (p->magic != kModuleMagic) fail(EAGLE_BACKEND_BAD_HANDLE, "module is not a live handle");
    return p;
}

void check_device(int32_t device) {
    if (device != -1 && device != 0)
        fail(EAGLE_BACKEND_INDEX, "device " + std::to_string(device) + " does not exist (the cpu kind has device 0)");
}

bool is_file(const std::string& p, bool executable) {
    struct stat st{};
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (!executable || access(p.c_str(), X_OK) == 0);
}

bool is_dir(const std::string& p) {
    struct stat st{};
    return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The C compiler: the caller's search list, then $CC (its first word), then cc, gcc, clang on PATH.
std::string find_compiler(const ModuleInputs& in, std::string& tried) {
    const char* names[] = {"cc", "gcc", "clang"};
    for (const auto& entry : in.compiler_paths) {
        tried += " " + entry;
        if (is_file(entry, true)) return entry;
        if (is_dir(entry))
            for (const char* n : names)
                if (is_file(entry + "/" + n, true)) return entry + "/" + n;
    }
    std::vector<std::string> candidates;
    if (const char* cc = std::getenv("CC"); cc && *cc) {
        std::string first(cc);
        first = first.substr(0, first.find(' '));
        tried += " $CC=" + first;
        if (first.find('/') != std::string::npos) {
            if (is_file(first, true)) return first;
        } else {
            candidates.push_back(first);
        }
    }
    for (const char* n : names) candidates.emplace_back(n);
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    for (const auto& n : candidates) {
        tried += " " + n;
        size_t start = 0;
        while (start <= dirs.size()) {
            size_t end = dirs.find(':', start);
            if (end == std::string::npos) end = dirs.size();
            std::string dir = end > start ? dirs.substr(start, end - start) : ".";
            if (is_file(dir + "/" + n, true)) return dir + "/" + n;
            start = end + 1;
        }
    }
    return {};
}

// A private temporary directory, removed with everything in it when the object goes.
struct TempDir {
    std::string path;
    std::vector<std::string> files;
    TempDir() {
        const char* t = std::getenv("TMPDIR");
        std::string tmpl = std::string(t && *t ? t : "/tmp") + "/eagle-module-XXXXXX";
        std::vector<char> buf(tmpl.begin(), tmpl.end());
        buf.push_back('\0');
        if (!mkdtemp(buf.data()))
            fail(EAGLE_BACKEND_ERROR, std::string("cannot create a temporary directory: ") + std::strerror(errno));
        path = buf.data();
    }
    std::string file(const std::string& name) {
        files.push_back(path + "/" + name);
        return files.back();
    }
    ~TempDir() {
        for (const auto& f : files) unlink(f.c_str());
        rmdir(path.c_str());
    }
};

void write_file(const std::string& path, const void* data, uint64_t bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
    if (!f) fail(EAGLE_BACKEND_ERROR, "cannot write " + path);
}

// The compiler's log, at most kLogCap bytes of it (a source of garbage can make a compiler write
// hundreds of megabytes; the first errors are what the caller needs).
constexpr size_t kLogCap = size_t(1) << 20;

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::string text(kLogCap, '\0');
    f.read(&text[0], static_cast<std::streamsize>(kLogCap));
    text.resize(static_cast<size_t>(f.gcount()));
    if (text.size() == kLogCap && f.peek() != std::char_traits<char>::eof()) {
        const size_t last = text.rfind('\n');  // whole lines only: a path cut in two is not rewritten
        text.resize(last == std::string::npos ? 0 : last + 1);
        text += "[eagle: the compiler's log was cut at 1 MiB]\n";
    }
    return text;
}

// `text` with every `from` replaced by `to`, in one pass.
std::string replace_all(const std::string& text, const std::string& from, const std::string& to) {
    if (from.empty()) return text;
    std::string out;
    out.reserve(text.size());
    size_t at = 0;
    for (size_t hit; (hit = text.find(from, at)) != std::string::npos; at = hit + from.size()) {
        out.append(text, at, hit - at);
        out += to;
    }
    out.append(text, at, std::string::npos);
    return out;
}

constexpr int kCancelled = -2;

#ifdef __linux__
// ---- the compiler's guardian (Linux). The compiler must die with this process: killed by
// SIGTERM or SIGKILL, or by SIGKILL to its whole process group, a compile must leave no cc/cc1
// running and (but for SIGKILL) no temporary directory behind. So the compiler runs in this
// process's group (a killpg reaches it), under a guardian process forked here that
//   - gets SIGTERM when the thread that forked it dies (PR_SET_PDEATHSIG: the process's end),
//   - is the subreaper of the compiler's process tree (PR_SET_CHILD_SUBREAPER: the driver's
//     children, cc1, as, ld, become its own when the driver dies), and
//   - on that SIGTERM (or a cancel: this process sends it SIGUSR1) kills the whole tree with
//     SIGKILL and, when this process is gone, removes the temporary directory.
// Everything the guardian and the compiler's child do between fork and exec is async-signal-safe
// (this process has other threads): raw system calls on memory prepared before the fork.
namespace guard {

constexpr int kNoRun = 126;     // the guardian could not start the compiler
constexpr int kNoExec = 127;    // exec of the compiler failed
constexpr int kStopped = 125;   // the guardian stopped the compiler (cancel or this process's end)

void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, nullptr);
}

// "/proc/self/task/<pid>/children" into buf (no allocation).
void children_path(char* buf, size_t cap) {
    const char head[] = "/proc/self/task/";
    size_t at = 0;
    for (const char* p = head; *p && at + 1 < cap; ++p) buf[at++] = *p;
    char digits[24];
    int nd = 0;
    for (long v = static_cast<long>(getpid()); v > 0 && nd < 23; v /= 10) digits[nd++] = static_cast<char>('0' + v % 10);
    while (nd > 0 && at + 1 < cap) buf[at++] = digits[--nd];
    const char tail[] = "/children";
    for (const char* p = tail; *p && at + 1 < cap; ++p) buf[at++] = *p;
    buf[at] = '\0';
}

// SIGKILL to every process of the tree under the guardian, rounds until none is left (the
// driver's children become the guardian's when the driver dies), each reaped.
void kill_tree() {
    char path[96];
    children_path(path, sizeof path);
    for (int round = 0; round < 200; ++round) {
        while (waitpid(-1, nullptr, WNOHANG) > 0) {
        }
        const int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return;
        char buf[4096];
        const ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        bool any = false;
        long v = -1;
        for (ssize_t k = 0; k <= n; ++k) {
            const char c = k < n ? buf[k] : ' ';
            if (c >= '0' && c <= '9') {
                v = (v < 0 ? 0 : v * 10) + (c - '0');
            } else if (v > 0) {
                kill(static_cast<pid_t>(v), SIGKILL);
                any = true;
                v = -1;
            }
        }
        if (!any) return;
        sleep_ms(2);
    }
}

// Removes the files of the flat directory `dir` and then the directory (getdents64: no malloc).
void remove_dir(const char* dir) {
    const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        alignas(8) char buf[4096];
        for (;;) {
            const long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
            if (n <= 0) break;
            for (long at = 0; at < n;) {
                const unsigned short reclen = *reinterpret_cast<unsigned short*>(buf + at + 16);
                const char* name = buf + at + 19;
                if (!(name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))))
                    unlinkat(fd, name, 0);
                at += reclen;
            }
        }
        close(fd);
    }
    rmdir(dir);
}

}  // namespace guard
#endif

// Runs argv with stdout and stderr into log_path; returns the exit status (-1: could not run;
// kCancelled: *cancel became nonzero, and the compiler was killed). On Linux the compiler runs
// under a guardian (see guard above), with TMPDIR set to `tmp_dir`, so that it dies with this
// process and leaves nothing behind; elsewhere it runs in a process group of its own, which a
// cancel kills. The wait polls (waitpid WNOHANG, sleeps of 1 to 10 ms) so a cancel is seen within
// 20 ms; without a cancel word it blocks in waitpid.
int run_compiler(const std::vector<std::string>& argv, const std::string& log_path,
                 const volatile uint32_t* cancel, const std::string& tmp_dir) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
#ifdef __linux__
    // the compiler's environment: this one with TMPDIR set to the compile's own directory (the
    // driver's temporary files land there, and go with it)
    std::vector<std::string> env_store;
    for (char** e = environ; e && *e; ++e)
        if (std::strncmp(*e, "TMPDIR=", 7) != 0) env_store.emplace_back(*e);
    env_store.push_back("TMPDIR=" + tmp_dir);
    std::vector<char*> envp;
    for (auto& e : env_store) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const char* log_c = log_path.c_str();
    const char* dir_c = tmp_dir.c_str();
    const pid_t parent = getpid();
    sigset_t waited, none;
    sigemptyset(&waited);
    sigaddset(&waited, SIGTERM);
    sigaddset(&waited, SIGUSR1);
    sigaddset(&waited, SIGCHLD);
    sigemptyset(&none);
    const pid_t g = fork();
    if (g < 0) return -1;
    if (g == 0) {  // the guardian: async-signal-safe calls only
        sigprocmask(SIG_BLOCK, &waited, nullptr);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        prctl(PR_SET_CHILD_SUBREAPER, 1);
        if (getppid() != parent) {  // this process ended before the prctl
            guard::remove_dir(dir_c);
            _exit(guard::kStopped);
        }
        const pid_t c = vfork();
        if (c == 0) {
            sigprocmask(SIG_SETMASK, &none, nullptr);
            const int out = open(log_c, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            const int in = open("/dev/null", O_RDONLY);
            if (out < 0 || in < 0) _exit(guard::kNoExec);
            dup2(out, 1);
            dup2(out, 2);
            dup2(in, 0);
            execve(args[0], args.data(), envp.data());
            _exit(guard::kNoExec);
        }
        if (c < 0) _exit(guard::kNoRun);
        for (;;) {
            siginfo_t info;
            struct timespec ts = {0, 50 * 1000000L};
            const int sig = sigtimedwait(&waited, &info, &ts);
            int st = 0;
            if (waitpid(c, &st, WNOHANG) == c) {
                guard::kill_tree();  // anything the driver left running
                _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0));
            }
            // SIGUSR1: this process cancels the compile; SIGTERM: this process ended (the
            // parent-death signal), so nobody else will remove the directory
            const bool orphaned = sig == SIGTERM || getppid() != parent;
            if (sig == SIGUSR1 || orphaned) {
                kill(c, SIGKILL);
                guard::kill_tree();
                if (orphaned) guard::remove_dir(dir_c);
                _exit(guard::kStopped);
            }
        }
    }
    int status = 0;
    bool stopped = false;
    if (!cancel) {
        while (waitpid(g, &status, 0) < 0) {
            if (errno != EINTR) return -1;
        }
    } else {
        long nap_us = 1000;
        for (;;) {
            const pid_t got = waitpid(g, &status, WNOHANG);
            if (got == g) break;
            if (got < 0 && errno != EINTR) return -1;
            if (*cancel && !stopped) {
                kill(g, SIGUSR1);  // the guardian kills the compiler's whole tree and exits
                stopped = true;
            }
            usleep(static_cast<useconds_t>(nap_us));
            if (nap_us < 10000) nap_us += 1000;
        }
    }
    if (stopped) return kCancelled;
    if (!WIFEXITED(status)) return -1;
    const int code = WEXITSTATUS(status);
    if (code == guard::kNoRun || (code == guard::kNoExec && read_file(log_path).empty())) return -1;
    return code;
#else
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    if (cancel) {  // its own group, so that a cancel kills the driver's children (cc1, as, ld) too
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
        posix_spawnattr_setpgroup(&attr, 0);
    }
    (void)tmp_dir;
    pid_t pid = 0;
    int rc = posix_spawn(&pid, args[0], &fa, &attr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) return -1;
    int status = 0;
    if (!cancel) {
        while (waitpid(pid, &status, 0) < 0) {
            if (errno != EINTR) return -1;
        }
    } else {
        long nap_us = 1000;
        for (;;) {
            const pid_t got = waitpid(pid, &status, WNOHANG);
            if (got == pid) break;
            if (got < 0 && errno != EINTR) return -1;
            if (*cancel) {
                kill(-pid, SIGKILL);
                while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
                }
                return kCancelled;
            }
            usleep(static_cast<useconds_t>(nap_us));
            if (nap_us < 10000) nap_us += 1000;
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
#endif
}

// Whether the compile should add -mfma: on x86 the baseline ISA has no fused multiply-add, so a
// contracting compile (the default mode, and fast math) asks for it where this host's CPU has it
// (the module runs on this host, so the instructions are there).
// Other architectures the backend builds for (aarch64, ppc64le, riscv64 with D) have FMA in their
// baseline and contract at -ffp-contract=fast with no flag.
bool host_has_fma_flag() {
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

// The option that caps the errors a compiler reports: clang's spelling or gcc's (cc is gcc-like).
std::string error_limit_option(const std::string& cc) {
    const std::string base = cc.substr(cc.find_last_of('/') + 1);
    return base.find("clang") != std::string::npos ? "-ferror-limit=100" : "-fmax-errors=100";
}

// Opens a shared object as a module; the file may be removed once this returns. `what` says where
// the file came from in messages ("the image", "the compiler's output '<path>'"). Its ELF structure
// is checked first (elf_check.h): a truncated file would kill the process with SIGBUS in dlopen.
Module* open_module(const std::string& so, const std::string& name, const std::string& what, char** log) {
    if (const std::string why = elf_defect(so); !why.empty()) {
        const std::string msg = "'" + name + "' could not be loaded: " + what + " is no usable shared object: " + why;
        hand_log(log, msg + "\n");
        fail(EAGLE_BACKEND_COMPILE_FAILED, msg);
    }
    void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char* e = dlerror();
        std::string why = std::string("'") + name + "' could not be loaded: " + (e ? e : "dlopen failed");
        hand_log(log, why + "\n");
        fail(EAGLE_BACKEND_COMPILE_FAILED, why);
    }
    auto* m = new (std::nothrow) Module();
    if (!m) {
        dlclose(h);
        fail(EAGLE_BACKEND_ERROR, "out of memory");
    }
    m->handle = h;
    m->name = name;
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
        ModuleInputs in = read_module_desc(desc, "source.c");
        check_device(in.device);
        if (source_bytes > 0 && !source) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "source is NULL");
        std::string tried;
        const std::string cc = find_compiler(in, tried);
        if (cc.empty())
            fail(EAGLE_BACKEND_UNAVAILABLE,
                 "no C compiler was found (tried" + tried +
                     "); install one (Debian/Ubuntu: apt-get install gcc; Fedora: dnf install gcc; macOS: "
                     "xcode-select --install) or set $CC");
        TempDir dir;
        std::string base = in.name.substr(in.name.find_last_of('/') + 1);
        if (base.size() < 2 || base.compare(base.size() - 2, 2, ".c") != 0) base += ".c";
        const std::string src = dir.file(base), so = dir.file("module.so"), log_path = dir.file("log.txt");
        write_file(src, source, source_bytes);
        std::vector<std::string> argv = {cc, "-shared", "-fPIC", "-std=gnu11"};
        switch (in.fp) {
            case FpMode::fast:
                argv.insert(argv.end(), {"-O3", "-ffast-math", "-ffp-contract=fast"});
                if (host_has_fma_flag()) argv.push_back("-mfma");
                break;
            case FpMode::contract:
                argv.insert(argv.end(), {"-O3", "-fno-fast-math", "-ffp-contract=fast"});
                if (host_has_fma_flag()) argv.push_back("-mfma");
                break;
            case FpMode::exact:
                argv.insert(argv.end(), {"-O3", "-fno-fast-math", "-ffp-contract=off"});
#if defined(__x86_64__) || defined(__i386__)
                argv.push_back("-mfpmath=sse");
#endif
                break;
        }
        argv.push_back(error_limit_option(cc));
        for (const auto& d : in.include_dirs) argv.push_back("-I" + d);
        for (const auto& o : in.options) argv.push_back(o);
        argv.insert(argv.end(), {"-o", so, src, "-lm"});
        const int rc = run_compiler(argv, log_path, in.cancel, dir.path);
        if (rc == kCancelled) fail(EAGLE_BACKEND_ERROR, in.name + ": the compile was cancelled (the compiler was killed)");
        // The log names the source by the caller's name, not the temporary path.
        std::string text = replace_all(read_file(log_path), src, in.name);
        if (rc == -1) {
            hand_log(log, text);
            fail(EAGLE_BACKEND_UNAVAILABLE, "the C compiler '" + cc + "' could not be run");
        }
        if (rc != 0) {
            hand_log(log, text);
            fail(EAGLE_BACKEND_COMPILE_FAILED, in.name + " did not compile: " + first_error_line(text));
        }
        Module* m = open_module(so, in.name, "the compiler's output '" + so + "' (by '" + cc + "')", log);
        hand_log(log, text);
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
        check_device(in.device);
        if (!image || bytes == 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "image is NULL or empty");
        TempDir dir;
        const std::string so = dir.file("image.so");
        write_file(so, image, bytes);
        *out = reinterpret_cast<eagle_backend_module>(open_module(so, in.name, "the image", log));
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_module_function(eagle_backend_module module, const char* name,
                                                                uint64_t* function) {
    return guarded("eagle_backend_module_function", [&] {
        Module* m = module_of(module);
        require(name, "name");
        require(function, "function");
        *function = 0;
        dlerror();
        void* fn = dlsym(m->handle, name);
        if (!fn)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT,
                 "module '" + m->name + "' has no kernel named '" + name + "'");
        *function = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(fn));
    });
}

EAGLE_EXPORT void eagle_backend_module_release(eagle_backend_module module) {
    guarded_void([&] {
        auto* m = reinterpret_cast<Module*>(module);
        if (!m || m->magic != kModuleMagic) return;
        if (m->handle) dlclose(m->handle);
        delete m;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_mem_alloc(int32_t device, uint64_t bytes, uint32_t flags,
                                                          uint64_t* address) {
    return guarded("eagle_backend_mem_alloc", [&] {
        require(address, "address");
        *address = 0;
        check_flags(flags, 0, "flags");
        check_device(device);
        if (bytes == 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "bytes is 0");
        constexpr uint64_t kAlign = 256;
        if (bytes > uint64_t(INT64_MAX) - kAlign)
            fail(EAGLE_BACKEND_UNAVAILABLE, "bytes " + std::to_string(bytes) + " cannot be allocated");
        const uint64_t size = (bytes + kAlign - 1) / kAlign * kAlign;
        void* p = std::aligned_alloc(kAlign, size);
        if (!p) fail(EAGLE_BACKEND_UNAVAILABLE, "mem_alloc of " + std::to_string(bytes) + " bytes failed");
        const uint64_t a = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
        try {
            allocations().add(p, true);
        } catch (...) {
            std::free(p);
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
        std::free(p);
    });
}
