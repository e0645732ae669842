// stream.cpp -- streams (bit 0).
#include "gpu.h"

using namespace eagle;
using namespace eagle::gpu;

EAGLE_EXPORT eagle_backend_status eagle_backend_stream_create(const struct eagle_backend_stream_desc* desc,
                                                              eagle_backend_stream* out) {
    return guarded("eagle_backend_stream_create", [&] {
        auto d = read_desc(desc, "desc");
        require(out, "out");
        check_flags(d.flags, EAGLE_BACKEND_STREAM_NON_BLOCKING, "stream desc->flags");
        const int dev = resolve_device(d.device, 0, false);
        DeviceGuard guard(dev);
        auto st = std::make_unique<Stream>();
        st->device = dev;
        check(gpuStreamCreateWithFlags(&st->s, (d.flags & EAGLE_BACKEND_STREAM_NON_BLOCKING) ? gpuStreamNonBlocking
                                                                                               : gpuStreamDefault),
              "streamCreateWithFlags");
        stream_register(st->s, dev);
        try {
            *out = publish<eagle_backend_stream>(st);
        } catch (...) {
            stream_unregister(st->s);
            (void)gpuStreamDestroy(st->s);
            throw;
        }
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_stream_ptr(eagle_backend_stream stream, uint64_t* raw) {
    return guarded("eagle_backend_stream_ptr", [&] {
        auto* st = from_handle<Stream>(stream, "stream");
        *require(raw, "raw") = as_raw(st->s);
    });
}

namespace eagle::gpu {
bool query_stream(gpuStream_t s, const char* failed, int32_t* done) {
    const gpuError_t e = gpuStreamQuery(s);
    if (e == gpuSuccess) return true;
    if (e == gpuErrorNotReady) {
        (void)gpuGetLastError();  // not-ready is no error: it must not stay for the next call to see
        return false;
    }
    (void)gpuGetLastError();
    // the work has ended, in failure: a query says done (*done = 1) and returns synchronize's ERROR
    if (done) *done = 1;
    fail(EAGLE_BACKEND_ERROR, std::string(failed) + gpuGetErrorName(e) + ": " + gpuGetErrorString(e));
}
}  // namespace eagle::gpu

EAGLE_EXPORT eagle_backend_status eagle_backend_stream_synchronize(eagle_backend_stream stream) {
    return guarded("eagle_backend_stream_synchronize", [&] {
        auto* st = from_handle<Stream>(stream, "stream");
        if (is_capturing(st->s)) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the stream is being captured");
        DeviceGuard guard(st->device);
        gpuError_t e = gpuStreamSynchronize(st->s);
        if (e != gpuSuccess) {
            (void)gpuGetLastError();
            fail(EAGLE_BACKEND_ERROR, std::string("work on the stream failed: ") + gpuGetErrorName(e) + ": " +
                                          gpuGetErrorString(e));
        }
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_stream_query(eagle_backend_stream stream, int32_t* done) {
    return guarded("eagle_backend_stream_query", [&] {
        *require(done, "done") = 0;
        auto* st = from_handle<Stream>(stream, "stream");
        if (is_capturing(st->s)) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the stream is being captured");
        DeviceGuard guard(st->device);
        *done = query_stream(st->s, "work on the stream failed: ", done) ? 1 : 0;
    });
}

EAGLE_EXPORT void eagle_backend_stream_release(eagle_backend_stream stream) {
    guarded_void([&] {
        std::unique_ptr<Stream> st(retire<Stream>(stream));
        if (!st) return;  // NULL, released or foreign
        {
            DeviceGuard guard(st->device);
            if (!is_capturing(st->s)) (void)gpuStreamSynchronize(st->s);
            stream_unregister(st->s);
            (void)gpuStreamDestroy(st->s);
        }
    });
}
