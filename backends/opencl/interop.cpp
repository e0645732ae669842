// Group interop (bit 11) of the opencl backend. DLPack defines no stream codes for kDLOpenCL
// (device type 4); this backend takes its own raw stream values (0: its default stream), so the
// fence orders two of its queues: a marker on the producer, a barrier waiting for it on the consumer.
#include <atomic>

#include "common.h"

namespace {
std::atomic<int64_t> g_events{0};
}

namespace eagle_opencl {
void order_after(Stream& waiter, Stream& producer) {
    if (&waiter == &producer) return;  // one in-order queue: already ordered
    cl_event ev = nullptr;
    cl_check(clEnqueueMarkerWithWaitList(producer.queue, 0, nullptr, &ev), "clEnqueueMarkerWithWaitList");
    ++g_events;
    const cl_int err = clEnqueueBarrierWithWaitList(waiter.queue, 1, &ev, nullptr);
    ++waiter.submitted;  // the waiter now has something to finish (stream_query)
    clReleaseEvent(ev);
    cl_check(err, "clEnqueueBarrierWithWaitList");
}
}  // namespace eagle_opencl

using namespace eagle_opencl;

EAGLE_EXPORT eagle_backend_status eagle_backend_fence(int32_t dl_device_type, int32_t device_id, int64_t producer,
                                                      int64_t consumer) {
    return eagle::guarded("eagle_backend_fence", [&] {
        if (dl_device_type != 4)
            eagle::fail(EAGLE_BACKEND_INTEROP, "dl_device_type is " + std::to_string(dl_device_type) +
                                                   "; the opencl backend serves DLPack device type 4 (kDLOpenCL) only");
        if (device_id != 0)
            eagle::fail(EAGLE_BACKEND_INTEROP, "device_id is " + std::to_string(device_id) + "; the opencl backend has device 0 only");
        if (producer == EAGLE_BACKEND_STREAM_NONE || consumer == EAGLE_BACKEND_STREAM_NONE) return;
        Stream* p = nullptr;
        Stream* c = nullptr;
        try {
            p = &stream_of_raw(static_cast<uint64_t>(producer), "producer");
            c = &stream_of_raw(static_cast<uint64_t>(consumer), "consumer");
        } catch (const eagle::Error& e) {
            eagle::fail(EAGLE_BACKEND_INTEROP, e.what());
        }
        {
            // Under capture (as the cpu kind): two streams recording into one capture are in
            // order already (one list, recording.h); a consumer captured after an eager producer
            // needs nothing (the producer's work is enqueued before any replay); the rest cannot be.
            std::lock_guard<std::recursive_mutex> lock(capture_mutex());
            if (p->capture || c->capture) {
                if (c->capture && (!p->capture || p->capture == c->capture)) return;
                eagle::fail(EAGLE_BACKEND_INTEROP, c->capture ? "producer and consumer are being captured into different graphs"
                                                             : "the producer is being captured and the consumer is not");
            }
        }
        try {
            c = &enqueue_stream(static_cast<uint64_t>(consumer), "consumer");
        } catch (const eagle::Error& e) {
            eagle::fail(EAGLE_BACKEND_INTEROP, e.what());
        }
        order_after(*c, *p);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_event_pool_created(int64_t* created) {
    return eagle::guarded("eagle_backend_event_pool_created", [&] {
        eagle::require(created, "created");
        *created = g_events.load();
    });
}
