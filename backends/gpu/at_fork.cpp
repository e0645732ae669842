// at_fork.cpp -- the GPU backends (cuda, hip) across fork().
//
// A CUDA or HIP context does not survive fork(): in a child forked after the parent initialised
// the runtime, the driver refuses every call (an initialisation error), and the objects the parent
// made -- streams, graphs, launchers, modules, device memory -- name nothing there. So, in a child:
// - every handle made before the fork is refused with UNAVAILABLE, naming the cause and what to do
//   (from_handle), and releasing one does nothing (retire finds no live handle: it is leaked; the
//   child's memory is its own and no runtime call is made for it);
// - when the parent had initialised the runtime (probe_reason ran), the probe and every creator
//   say UNAVAILABLE for the same reason instead of reaching the driver;
// - a parent that never touched the runtime forks children that may use it: new objects work.
// The handlers take the registry's and the stream table's locks around fork(), so the child never
// finds one held by a thread it does not have. The parent is not affected.
#include "gpu.h"

#include <pthread.h>
#include <unistd.h>

#include <utility>
#include <vector>

namespace eagle::gpu {

namespace {
std::atomic<bool> g_runtime_used{false};      // probe_reason has run in this process (or its parent)
std::atomic<bool> g_forked_after_use{false};  // this process is a child forked after that
std::atomic<int32_t> g_parent_pid{0};         // the process the pre-fork handles were made in
std::atomic<int32_t> g_pid{0};

void prepare_fork() noexcept {
    streams_at_fork(true);
    handles().prepare_fork();
    made_before_fork().prepare_fork();
}

void after_fork_in_parent() noexcept {
    made_before_fork().after_fork();
    handles().after_fork();
    streams_at_fork(false);
}

void after_fork_in_child() noexcept {
    made_before_fork().after_fork();
    handles().after_fork();
    streams_at_fork(false);
    g_parent_pid.store(g_pid.load(std::memory_order_relaxed), std::memory_order_relaxed);
    g_pid.store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
    if (g_runtime_used.load(std::memory_order_relaxed)) g_forked_after_use.store(true, std::memory_order_relaxed);
    // every live handle is the parent's now: moved to the table of handles made before the fork
    try {
        std::vector<std::pair<const void*, uint32_t>> live;
        handles().for_each([&](const void* h, uint32_t tag) { live.emplace_back(h, tag); });
        for (auto& [h, tag] : live) {
            (void)handles().take(h, [](uint32_t) { return true; });
            made_before_fork().add(h, tag);
        }
    } catch (...) {
        // out of memory in a child: the handles stay in the live table (as before this file)
    }
}

struct AtForkRegistration {
    AtForkRegistration() noexcept {
        g_pid.store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
        pthread_atfork(prepare_fork, after_fork_in_parent, after_fork_in_child);
    }
} g_at_fork_registration;
}  // namespace

HandleRegistry<uint32_t>& made_before_fork() {
    static HandleRegistry<uint32_t>* r = new HandleRegistry<uint32_t>();  // leaked: valid during exit
    return *r;
}

void note_runtime_used() noexcept { g_runtime_used.store(true, std::memory_order_relaxed); }

std::string forked_reason() {
    if (!g_forked_after_use.load(std::memory_order_relaxed)) return {};
    return "this process was forked from process " + std::to_string(g_parent_pid.load()) + " after it had "
           "initialised the " EAGLE_GPU_KIND " runtime, and " EAGLE_GPU_KIND " contexts do not survive fork(): "
           "use the " EAGLE_GPU_KIND " backend in the parent only, or start workers with the multiprocessing "
           "'spawn' (or 'forkserver') method";
}

void fail_made_before_fork(const char* name) {
    fail(EAGLE_BACKEND_UNAVAILABLE,
         std::string("this ") + name + " was created before fork() in process " + std::to_string(g_parent_pid.load()) +
             "; " EAGLE_GPU_KIND " objects (and contexts) do not survive fork: use them in the parent, or start "
             "workers with the multiprocessing 'spawn' method");
}

}  // namespace eagle::gpu
