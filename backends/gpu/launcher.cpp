// launcher.cpp -- an instantiated graph (bit 7): replay, stream, node enabling, logical size.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "graph.h"

using namespace eagle;
using namespace eagle::gpu;

namespace {
// The launcher's stream, refused once that stream (one this backend created) has been released.
gpuStream_t live_stream(Launcher* l) {
    const uint64_t generation = stream_release_generation();
    if (generation != l->stream_checked_at) {  // some stream was released since the last look
        if (stream_released(l->stream, l->stream_serial))
            fail(EAGLE_BACKEND_INVALID_ARGUMENT,
                 "the launcher's stream has been released; set a live stream with launcher_stream first");
        l->stream_checked_at = generation;
    }
    return l->stream;
}
}  // namespace

// Exit with a replay still running: a graph whose kernel never ends, left behind by an interrupted
// wait (eagle's exit drain then gives up on it and releases nothing). The runtime's own teardown
// (the static runtime's destructor releases the primary context) destroys the context's exec
// graphs, and destroying one that runs waits for it: exit() would hang there (H200, session 12,
// native stack: exit -> the runtime's destructor -> cuDevicePrimaryCtxRelease). So the first
// launch registers an exit handler, which runs before the libraries' destructors, and which keeps
// the primary context of every device where a launched, unreleased launcher's stream still runs
// (native::keep_context): the teardown then destroys nothing, and the driver reclaims the device
// when the process has ended, as for any process that ends.
namespace {
std::mutex g_launched_mu;
std::unordered_set<const Launcher*>& launched() {
    static auto* s = new std::unordered_set<const Launcher*>();  // leaked: valid during exit
    return *s;
}

void keep_contexts_of_running_replays() noexcept {
    std::lock_guard<std::mutex> lock(g_launched_mu);
    std::unordered_set<int> kept;
    for (const Launcher* l : launched()) {
        if (kept.count(l->device) || stream_released(l->stream, l->stream_serial)) continue;
        int current = 0;
        if (gpuGetDevice(&current) != gpuSuccess) current = -1;
        if (gpuSetDevice(l->device) != gpuSuccess) continue;
        const gpuError_t e = gpuStreamQuery(l->stream);
        (void)gpuGetLastError();
        if (e == gpuErrorNotReady && native::keep_context(l->device)) kept.insert(l->device);
        if (current >= 0) (void)gpuSetDevice(current);
    }
}

// Once per launcher (its first launch): a replay's hot path pays one branch, not a lock.
void note_launched(Launcher* l) {
    if (l->noted) return;
    static std::once_flag once;
    std::call_once(once, [] { std::atexit(keep_contexts_of_running_replays); });
    std::lock_guard<std::mutex> lock(g_launched_mu);
    launched().insert(l);
    l->noted = true;
}

void forget_launched(const Launcher* l) noexcept {
    if (!l->noted) return;
    std::lock_guard<std::mutex> lock(g_launched_mu);
    launched().erase(l);
}
}  // namespace

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_launch(eagle_backend_launcher launcher) {
    return guarded("eagle_backend_launcher_launch", [&] {
        auto* l = from_handle<Launcher>(launcher, "launcher");
        gpuStream_t s = live_stream(l);
        DeviceGuard guard(l->device);
        note_launched(l);
        check(gpuGraphLaunch(l->exec, s), "graphLaunch");
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_synchronize(eagle_backend_launcher launcher) {
    return guarded("eagle_backend_launcher_synchronize", [&] {
        auto* l = from_handle<Launcher>(launcher, "launcher");
        live_stream(l);
        DeviceGuard guard(l->device);
        gpuError_t e = gpuStreamSynchronize(l->stream);
        if (e != gpuSuccess) {
            (void)gpuGetLastError();
            fail(EAGLE_BACKEND_ERROR, std::string("a replay failed: ") + gpuGetErrorName(e) + ": " + gpuGetErrorString(e));
        }
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_query(eagle_backend_launcher launcher, int32_t* done) {
    return guarded("eagle_backend_launcher_query", [&] {
        *require(done, "done") = 0;
        auto* l = from_handle<Launcher>(launcher, "launcher");
        gpuStream_t s = live_stream(l);
        if (is_capturing(s)) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the launcher's stream is being captured");
        DeviceGuard guard(l->device);
        *done = query_stream(s, "a replay failed: ", done) ? 1 : 0;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_stream(eagle_backend_launcher launcher, uint64_t stream) {
    return guarded("eagle_backend_launcher_stream", [&] {
        auto* l = from_handle<Launcher>(launcher, "launcher");
        bind_stream(l->device, stream, &l->stream, &l->stream_serial, "launcher");
        l->stream_checked_at = ~0ull;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_set_logical_size(eagle_backend_launcher launcher, int64_t size) {
    return guarded("eagle_backend_launcher_set_logical_size", [&] {
        auto* l = from_handle<Launcher>(launcher, "launcher");
        if (size > INT32_MAX) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "size " + std::to_string(size) + " > 2^31-1");
        DeviceGuard guard(l->device);
        for (const LaunchedKernel& k : l->kernels) {
            const KernelRecord& r = *k.rec;
            if (r.base != 0 || r.count != r.n_samples) continue;
            const int64_t lanes = size < 0 ? r.count : size;
            std::vector<uint8_t> storage = r.storage;
            const size_t np = r.offsets.size();
            const size_t t = np - r.hidden - 3;  // the partition triple
            const int64_t triple[3] = {0, lanes, lanes};
            std::memcpy(storage.data() + r.offsets[t + 1], &triple[1], 8);
            std::memcpy(storage.data() + r.offsets[t + 2], &triple[2], 8);
            std::vector<void*> args(np);
            for (size_t i = 0; i < np; ++i) args[i] = storage.data() + r.offsets[i];
            const int64_t blocks = lanes > 0 ? (lanes + r.block - 1) / r.block : 1;  // count 0: one idle block
            native::exec_set_kernel(l->exec, k.node, r.function, static_cast<uint32_t>(blocks), r.block, args.data());
        }
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_kernel_node_count(eagle_backend_launcher launcher,
                                                                           int64_t* count) {
    return guarded("eagle_backend_launcher_kernel_node_count", [&] {
        *require(count, "count") = static_cast<int64_t>(from_handle<Launcher>(launcher, "launcher")->kernels.size());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_set_node_enabled(eagle_backend_launcher launcher, uint64_t node,
                                                                          int32_t enabled) {
    return guarded("eagle_backend_launcher_set_node_enabled", [&] {
        auto* l = from_handle<Launcher>(launcher, "launcher");
        auto n = reinterpret_cast<gpuGraphNode_t>(static_cast<uintptr_t>(node));
        auto it = l->alias.find(n);
        if (it != l->alias.end()) n = it->second;
        if (!n || !l->members.count(n))
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "node " + std::to_string(node) + " is not in this launcher");
        DeviceGuard guard(l->device);
        native::exec_set_enabled(l->exec, n, enabled != 0);
    });
}

namespace {
// Waits for a retired launcher's replays and frees it. The stream is borrowed and may be gone
// already: a stream this backend created and has released waited for its work when it was
// released, so there is nothing left to wait for (synchronizing the destroyed stream is what
// crashed). Any other stream is waited for.
void finish_launcher(std::unique_ptr<Launcher> l) noexcept {
    forget_launched(l.get());
    DeviceGuard guard(l->device);
    if (!stream_released(l->stream, l->stream_serial)) {
        if (gpuStreamSynchronize(l->stream) != gpuSuccess) (void)gpuGetLastError();
    }
    l->exec = nullptr;
    l.reset();  // its executor graph: the exec, then the native graph when no graph handle shares it (under the guard)
}

// Launchers released while their stream was being captured: waiting for that stream then would
// break the capture (a capturing stream cannot be synchronized; the runtime invalidates the
// capture), which is what a launcher collected by Python's garbage collector in the middle of
// another recording on the same stream did. They are finished once the stream is no longer
// captured: at the next launcher release, capture end or capturer release.
std::mutex g_deferred_mu;
std::vector<std::unique_ptr<Launcher>>& deferred_launchers() {
    static auto* v = new std::vector<std::unique_ptr<Launcher>>();  // leaked: valid during exit
    return *v;
}

bool stream_is_captured(const Launcher& l) {
    return !stream_released(l.stream, l.stream_serial) && is_capturing(l.stream);
}
}  // namespace

void eagle::gpu::finish_deferred_launchers() noexcept {
    std::vector<std::unique_ptr<Launcher>> ready;
    {
        std::lock_guard<std::mutex> lock(g_deferred_mu);
        auto& v = deferred_launchers();
        for (auto it = v.begin(); it != v.end();) {
            bool captured = true;
            try {
                captured = stream_is_captured(**it);
            } catch (...) {
                captured = false;  // the stream cannot be asked: finish it as any other
            }
            if (captured) {
                ++it;
            } else {
                ready.push_back(std::move(*it));
                it = v.erase(it);
            }
        }
    }
    for (auto& l : ready) finish_launcher(std::move(l));
}

EAGLE_EXPORT void eagle_backend_launcher_release(eagle_backend_launcher launcher) {
    guarded_void([&] {
        finish_deferred_launchers();
        std::unique_ptr<Launcher> l(retire<Launcher>(launcher));
        if (!l) return;  // NULL, released or foreign
        bool captured = false;
        {
            DeviceGuard guard(l->device);
            captured = stream_is_captured(*l);
        }
        if (captured) {
            std::lock_guard<std::mutex> lock(g_deferred_mu);
            deferred_launchers().push_back(std::move(l));
            return;
        }
        finish_launcher(std::move(l));
    });
}
