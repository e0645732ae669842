// Group interop (bit 11): fence one cpu stream after another without blocking the host.
#include "runtime.h"

using namespace eagle;
using namespace eagle::cpu;

namespace {
std::shared_ptr<Stream> dl_stream(int64_t code, const char* name) {
    auto s = find_stream(static_cast<uint64_t>(code));
    if (!s)
        fail(EAGLE_BACKEND_INTEROP, std::string(name) + " " + std::to_string(code) +
                                        " is not a live cpu stream (raw stream value, 0 = default)");
    usable_here(*s);
    return s;
}
}  // namespace

EAGLE_EXPORT eagle_backend_status eagle_backend_fence(int32_t dl_device_type, int32_t device_id, int64_t producer,
                                                      int64_t consumer) {
    return guarded("eagle_backend_fence", [&] {
        if (dl_device_type != 1)
            fail(EAGLE_BACKEND_INTEROP, "DLPack device type " + std::to_string(dl_device_type) +
                                            " is not served by the cpu backend (it serves 1, kDLCPU)");
        if (device_id != 0 && device_id != -1)
            fail(EAGLE_BACKEND_INTEROP, "DLPack device id " + std::to_string(device_id) +
                                            " does not exist (the cpu backend has device 0)");
        if (producer == EAGLE_BACKEND_STREAM_NONE || consumer == EAGLE_BACKEND_STREAM_NONE) return;
        auto p = dl_stream(producer, "producer");
        auto c = dl_stream(consumer, "consumer");
        if (p == c) return;
        if (c->role == Stream::Role::Body)
            fail(EAGLE_BACKEND_INTEROP, "the consumer is a conditional body stream");
        std::lock_guard<std::recursive_mutex> lock(capture_mutex());
        auto pcap = p->capture && !p->capture->ended ? p->capture : nullptr;
        auto ccap = c->capture && !c->capture->ended ? c->capture : nullptr;
        if (ccap) {
            if (pcap && pcap->graph == ccap->graph) {  // both record into one capture: a graph edge
                c->tail.insert(c->tail.end(), p->tail.begin(), p->tail.end());
                return;
            }
            if (pcap)
                fail(EAGLE_BACKEND_INTEROP, "producer and consumer are being captured into different graphs");
            // The producer's eager work happens before the capture is ever replayed: nothing to record.
            return;
        }
        if (pcap)
            fail(EAGLE_BACKEND_INTEROP, "the producer is being captured and the consumer is not");
        enqueue_wait(*c, p);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_event_pool_created(int64_t* created) {
    return guarded("eagle_backend_event_pool_created", [&] {
        require(created, "created");
        *created = fence_objects_created();
    });
}
