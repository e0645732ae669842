// Group stream (bit 0) of the opencl backend: a stream is one in-order cl_command_queue; its raw
// value is the Stream's address (0: the default stream, made on first use), so that a raw value
// is checked against the registry before it is used. OpenCL has no default queue that other
// queues synchronise with; the backend gives its default stream CUDA's legacy semantics with
// events (enqueue_stream): a stream made without NON_BLOCKING and the default stream each wait
// for the other's earlier work.
#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>

#include "common.h"

namespace eagle_opencl {
namespace {
std::mutex g_mu;
// Never destroyed (as the default stream): at process exit a stream may still have work running
// (an interrupted kernel that never ends, left by the exit drain) and its host thread waiting on
// it; destroying the stream there would destroy a joinable std::thread (std::terminate, SIGABRT)
// or free what that thread still reads. The process's end takes them.
std::unordered_map<Stream*, std::unique_ptr<Stream>>& g_streams = *new std::unordered_map<Stream*, std::unique_ptr<Stream>>();

// Released queues, drained, kept for the next stream_create (at most kSpare): creating and
// releasing a cl_command_queue costs far more than a stream handle, and PoCL keeps a little memory
// per queue it ever made.
constexpr size_t kSpare = 64;
std::vector<cl_command_queue> g_spare;

std::unique_ptr<Stream> make_stream() {
    auto s = std::make_unique<Stream>();
    {
        std::lock_guard<std::mutex> lock(g_mu);
        if (!g_spare.empty()) {
            s->queue = g_spare.back();
            g_spare.pop_back();
            return s;
        }
    }
    Runtime& rt = runtime();
    cl_int err = CL_SUCCESS;
    s->queue = clCreateCommandQueueWithProperties(rt.context, rt.device, nullptr, &err);  // in order
    cl_check(err, "clCreateCommandQueueWithProperties", EAGLE_BACKEND_UNAVAILABLE);
    return s;
}

void destroy_stream(Stream* s) noexcept {
    if (!s || !s->queue) return;
    clFinish(s->queue);  // every host call has been posted and run (the barriers waited for them)
    s->stop_host();
    if (s->query_event) clReleaseEvent(s->query_event);
    s->query_event = nullptr;
    {
        std::lock_guard<std::mutex> lock(g_mu);
        if (g_spare.size() < kSpare) {
            g_spare.push_back(s->queue);
            s->queue = nullptr;
            return;
        }
    }
    clReleaseCommandQueue(s->queue);
    s->queue = nullptr;
}
}  // namespace

Stream* register_stream(bool blocking) {
    auto s = make_stream();
    s->blocking = blocking;
    std::lock_guard<std::mutex> lock(g_mu);
    Stream* p = s.get();
    g_streams.emplace(p, std::move(s));
    return p;
}

Stream* lookup_stream(eagle_backend_stream handle, const char* name) {
    if (!handle) eagle::fail(EAGLE_BACKEND_BAD_HANDLE, std::string(name) + " is NULL");
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_streams.find(reinterpret_cast<Stream*>(handle));
    if (it == g_streams.end())
        eagle::fail(EAGLE_BACKEND_BAD_HANDLE,
                    std::string(name) + " is not a live stream of the opencl backend (released or foreign)");
    return it->first;
}

namespace {
Stream& default_stream() {
    static Stream* def = make_stream().release();  // the default stream lives as long as the process
    return *def;
}
std::mutex g_order_mu;                            // the epochs and the default stream's view of them
std::unordered_map<Stream*, uint64_t> g_default_seen;  // blocking stream -> its epoch the default waits for
}  // namespace

Stream& stream_of_raw(uint64_t raw, const char* name) {
    if (raw == 0) return default_stream();
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_streams.find(reinterpret_cast<Stream*>(raw));
    if (it == g_streams.end())
        eagle::fail(EAGLE_BACKEND_BAD_HANDLE, std::string(name) + " (" + std::to_string(raw) +
                                                  ") is not a raw stream of the opencl backend, nor 0");
    return *it->first;
}

Stream& enqueue_stream(uint64_t raw, const char* name) {
    Stream& s = stream_of_raw(raw, name);
    Stream& def = default_stream();
    std::lock_guard<std::mutex> order(g_order_mu);
    if (&s == &def) {
        std::vector<Stream*> blocking;
        {
            std::lock_guard<std::mutex> lock(g_mu);
            for (auto& kv : g_streams)
                if (kv.first->blocking) blocking.push_back(kv.first);
        }
        for (Stream* b : blocking) {
            uint64_t& seen = g_default_seen[b];
            if (seen != b->epoch) {
                order_after(def, *b);
                seen = b->epoch;
            }
        }
    } else if (s.blocking && s.seen_default != def.epoch) {
        order_after(s, def);
        s.seen_default = def.epoch;
    }
    ++s.epoch;
    ++s.submitted;
    return s;
}

bool unregister_stream(eagle_backend_stream handle) noexcept {
    std::unique_ptr<Stream> gone;  // waited for and destroyed outside the lock
    {
        std::lock_guard<std::mutex> lock(g_mu);
        auto it = g_streams.find(reinterpret_cast<Stream*>(handle));
        if (it == g_streams.end()) return false;
        gone = std::move(it->second);
        g_streams.erase(it);
    }
    {
        std::lock_guard<std::mutex> order(g_order_mu);
        g_default_seen.erase(gone.get());
    }
    destroy_stream(gone.get());
    return true;
}

void finish(Stream& s, const char* what) {
    const uint64_t now = s.submitted.load();
    const cl_int err = clFinish(s.queue);
    std::string failure;
    {
        std::lock_guard<std::mutex> lock(s.mu);
        failure.swap(s.failure);
        s.done_through = std::max(s.done_through, now);
    }
    if (!failure.empty()) eagle::fail(EAGLE_BACKEND_ERROR, std::string(what) + ": enqueued work failed: " + failure);
    cl_check(err, what);
}

bool query(Stream& s) {
        const uint64_t now = s.submitted.load();
        bool finished;
        {
            std::lock_guard<std::mutex> lock(s.mu);
            if (s.done_through < now && s.query_event) {  // the marker of an earlier query
                cl_int status = CL_QUEUED;
                clGetEventInfo(s.query_event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
                if (status == CL_COMPLETE || status < 0) {
                    s.done_through = std::max(s.done_through, s.query_through);
                    clReleaseEvent(s.query_event);
                    s.query_event = nullptr;
                }
            }
            if (s.done_through < now && !s.query_event) {  // a marker completes after everything before it
                cl_check(clEnqueueMarkerWithWaitList(s.queue, 0, nullptr, &s.query_event), "clEnqueueMarkerWithWaitList");
                s.query_through = now;
                clFlush(s.queue);
            }
            finished = s.done_through >= now;
        }
        return finished;
}

void query_into(Stream& s, int32_t* done, const char* what) {
    *done = 0;
    if (!query(s)) return;
    // done: *done is 1 whatever the work's status, then synchronize's status and effects (an
    // ERROR for failed work, reported once; the queue is idle)
    *done = 1;
    finish(s, what);
}

namespace {
// As on CUDA, synchronising (or querying) a stream being captured is refused and breaks the capture.
void refuse_while_captured(Stream& s, const char* call) {
    std::lock_guard<std::recursive_mutex> lock(capture_mutex());
    if (!s.capture) return;
    s.capture->brk(std::string(call) + " was called on the stream during the capture");
    eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the stream is being captured");
}
}  // namespace

}  // namespace eagle_opencl

using namespace eagle_opencl;

EAGLE_EXPORT eagle_backend_status eagle_backend_stream_create(const struct eagle_backend_stream_desc* desc,
                                                              eagle_backend_stream* out) {
    return eagle::guarded("eagle_backend_stream_create", [&] {
        const auto d = eagle::read_desc(desc, "desc");
        eagle::require(out, "out");
        eagle::check_flags(d.flags, EAGLE_BACKEND_STREAM_NON_BLOCKING, "desc->flags");
        check_device(d.device, "desc->device");
        *out = reinterpret_cast<eagle_backend_stream>(
            register_stream((d.flags & EAGLE_BACKEND_STREAM_NON_BLOCKING) == 0));
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_stream_ptr(eagle_backend_stream stream, uint64_t* raw) {
    return eagle::guarded("eagle_backend_stream_ptr", [&] {
        eagle::require(raw, "raw");
        *raw = reinterpret_cast<uint64_t>(lookup_stream(stream, "stream"));
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_stream_synchronize(eagle_backend_stream stream) {
    return eagle::guarded("eagle_backend_stream_synchronize", [&] {
        Stream& s = *lookup_stream(stream, "stream");
        refuse_while_captured(s, "stream_synchronize");
        finish(s, "clFinish");
    });
}


EAGLE_EXPORT eagle_backend_status eagle_backend_stream_query(eagle_backend_stream stream, int32_t* done) {
    return eagle::guarded("eagle_backend_stream_query", [&] {
        eagle::require(done, "done");
        Stream& s = *lookup_stream(stream, "stream");
        refuse_while_captured(s, "stream_query");
        query_into(s, done, "stream_query");
    });
}

EAGLE_EXPORT void eagle_backend_stream_release(eagle_backend_stream stream) {
    eagle::guarded_void([&] {
        if (!stream) return;
        {
            std::lock_guard<std::recursive_mutex> lock(capture_mutex());
            Stream* s = reinterpret_cast<Stream*>(stream);
            try {
                s = lookup_stream(stream, "stream");
                if (s->capture) {
                    s->capture->brk("the captured stream was released");
                    s->capture.reset();
                }
            } catch (const eagle::Error&) {
                return;  // released or foreign: no-op
            }
        }
        unregister_stream(stream);
    });
}
