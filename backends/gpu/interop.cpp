// interop.cpp -- fence (bit 11) over DLPack stream codes, and the event pool it draws from.
#include "gpu.h"

using namespace eagle;
using namespace eagle::gpu;

namespace eagle::gpu {
namespace {
std::mutex g_pool_mu;
std::unordered_map<int, std::vector<gpuEvent_t>> g_pool;
std::atomic<int64_t> g_created{0};
}  // namespace

gpuEvent_t event_acquire(int device) {
    {
        std::lock_guard<std::mutex> lk(g_pool_mu);
        auto& free = g_pool[device];
        if (!free.empty()) {
            gpuEvent_t e = free.back();
            free.pop_back();
            return e;
        }
    }
    DeviceGuard guard(device);
    gpuEvent_t e = nullptr;
    check(gpuEventCreateWithFlags(&e, gpuEventDisableTiming), "eventCreateWithFlags");
    g_created.fetch_add(1, std::memory_order_relaxed);
    return e;
}

void event_release(int device, gpuEvent_t e) {
    if (!e) return;
    std::lock_guard<std::mutex> lk(g_pool_mu);
    g_pool[device].push_back(e);
}

int64_t event_created() { return g_created.load(std::memory_order_relaxed); }
}  // namespace eagle::gpu

namespace {
// The native stream for a DLPack stream code; false for "no stream given".
bool dlpack_stream(int64_t code, gpuStream_t* out, const char* which) {
    if (code == EAGLE_BACKEND_STREAM_NONE || code == -1) return false;
    if (code < -1) fail(EAGLE_BACKEND_INTEROP, std::string(which) + " stream code " + std::to_string(code) + " is negative");
#if defined(EAGLE_GPU_HIP)
    if (code == 1 || code == 2)
        fail(EAGLE_BACKEND_INTEROP, std::string(which) + " stream code " + std::to_string(code) +
                                        " is not used by ROCm DLPack (0 is the default stream)");
    *out = code == 0 ? gpuStreamLegacy : as_stream(static_cast<uint64_t>(code));
#else
    if (code == 0)
        fail(EAGLE_BACKEND_INTEROP, std::string(which) +
                                        " stream code 0 is disallowed for CUDA by DLPack (1 = legacy default, "
                                        "2 = per-thread default)");
    if (code == 1)
        *out = gpuStreamLegacy;
    else if (code == 2)
        *out = gpuStreamPerThread;
    else
        *out = as_stream(static_cast<uint64_t>(code));
#endif
    return true;
}
}  // namespace

EAGLE_EXPORT eagle_backend_status eagle_backend_fence(int32_t dl_device_type, int32_t device_id, int64_t producer,
                                                      int64_t consumer) {
    return guarded("eagle_backend_fence", [&] {
#if defined(EAGLE_GPU_HIP)
        const bool served = dl_device_type == 10 || dl_device_type == 11;
#else
        const bool served = dl_device_type == 2 || dl_device_type == 3 || dl_device_type == 13;
#endif
        if (!served)
            fail(EAGLE_BACKEND_INTEROP, "DLPack device type " + std::to_string(dl_device_type) +
                                            " is not served by the " EAGLE_GPU_KIND " kind");
        gpuStream_t p = nullptr, c = nullptr;
        const bool hp = dlpack_stream(producer, &p, "producer");
        const bool hc = dlpack_stream(consumer, &c, "consumer");
        if (!hp || !hc || p == c) return;
        // The event is recorded on the producer, so it is made on the producer's device: that of a
        // stream this backend created (or one the runtime can place), else device_id (-1: current).
        // The consumer may be on another device: a wait on another device's event is allowed.
        int dev = resolve_device(device_id < 0 ? -1 : device_id, 0, false);
        if (p != gpuStreamLegacy && p != gpuStreamPerThread) {
            const int pd = device_of_stream(as_raw(p));
            if (pd >= 0) dev = pd;
        }
        DeviceGuard guard(dev);
        gpuEvent_t e = event_acquire(dev);
        try {
            check(gpuEventRecord(e, p), "eventRecord(producer)");
            check(gpuStreamWaitEvent(c, e, 0), "streamWaitEvent(consumer)");
        } catch (...) {
            event_release(dev, e);
            throw;
        }
        // A wait takes the event's state when it is enqueued, so the event is free for reuse now.
        event_release(dev, e);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_event_pool_created(int64_t* created) {
    return guarded("eagle_backend_event_pool_created", [&] { *require(created, "created") = event_created(); });
}
