// Group stream (bit 0): in-order queues drained by a worker thread.
#include "runtime.h"

using namespace eagle;
using namespace eagle::cpu;

EAGLE_EXPORT eagle_backend_status eagle_backend_stream_create(const eagle_backend_stream_desc* desc,
                                                              eagle_backend_stream* out) {
    return guarded("eagle_backend_stream_create", [&] {
        const auto d = read_desc(desc, "desc");
        require(out, "out");
        check_flags(d.flags, EAGLE_BACKEND_STREAM_NON_BLOCKING, "desc->flags");
        check_device(d.device, "desc->device");
        auto s = make_stream(Stream::Role::User, (d.flags & EAGLE_BACKEND_STREAM_NON_BLOCKING) == 0);
        *out = reinterpret_cast<eagle_backend_stream>(s.get());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_stream_ptr(eagle_backend_stream stream, uint64_t* raw) {
    return guarded("eagle_backend_stream_ptr", [&] {
        require(raw, "raw");
        auto s = lookup<Stream>(stream, "stream");
        *raw = s->raw();
    });
}

namespace {
// As on CUDA, synchronising (or querying) a capturing stream is refused and breaks the capture.
void refuse_while_captured(Stream& s, const char* call) {
    std::lock_guard<std::recursive_mutex> lock(capture_mutex());
    if (s.capture && !s.capture->ended) {
        s.capture->brk(std::string(call) + " was called on the stream during the capture");
        fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the stream is being captured");
    }
}
}  // namespace

EAGLE_EXPORT eagle_backend_status eagle_backend_stream_synchronize(eagle_backend_stream stream) {
    return guarded("eagle_backend_stream_synchronize", [&] {
        auto s = lookup<Stream>(stream, "stream");
        refuse_while_captured(*s, "stream_synchronize");
        s->drain_and_check();
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_stream_query(eagle_backend_stream stream, int32_t* done) {
    return guarded("eagle_backend_stream_query", [&] {
        require(done, "done");
        *done = 0;
        auto s = lookup<Stream>(stream, "stream");
        refuse_while_captured(*s, "stream_query");
        s->query_and_check(done);
    });
}

EAGLE_EXPORT void eagle_backend_stream_release(eagle_backend_stream stream) {
    guarded_void([&] {
        if (!stream) return;
        auto s = std::static_pointer_cast<Stream>(find_object(stream, Kind::Stream));
        if (!s || s->role != Stream::Role::User) return;  // foreign, released, or not caller-owned
        if (s->made_before_fork()) {  // its worker is not in this process: leaked, never waited for
            unregister_object(s.get());
            return;
        }
        {
            std::lock_guard<std::recursive_mutex> lock(capture_mutex());
            if (s->capture && !s->capture->ended) {
                s->capture->brk("the captured stream was released");
                s->capture.reset();
            }
        }
        retire_stream(s);
    });
}
