// fork.cpp -- fork/join (bit 3): branch streams ordered by pooled events, eagerly and under capture.
#include "gpu.h"

using namespace eagle;
using namespace eagle::gpu;

namespace {
struct Fork : Handle<0x464f524bu> {
    gpuStream_t origin = nullptr;
    int device = 0;
    std::vector<gpuStream_t> branches;
    gpuEvent_t event = nullptr;
    bool forked = false;
};

void join(Fork* f) {
    DeviceGuard guard(f->device);
    for (gpuStream_t b : f->branches) {
        check(gpuEventRecord(f->event, b), "eventRecord(branch)");
        check(gpuStreamWaitEvent(f->origin, f->event, 0), "streamWaitEvent(origin)");
    }
    f->forked = false;
}
}  // namespace

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_create(const struct eagle_backend_fork_desc* desc,
                                                            eagle_backend_fork* out) {
    return guarded("eagle_backend_fork_create", [&] {
        auto d = read_desc(desc, "desc");
        require(out, "out");
        check_flags(d.flags, 0, "fork desc->flags");
        if (d.branch_count < 1 || d.branch_count > 4096)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "branch_count " + std::to_string(d.branch_count) + " (1..4096)");
        auto f = std::make_unique<Fork>();
        f->device = resolve_device(d.device, d.origin, true);
        f->origin = as_stream(d.origin);
        DeviceGuard guard(f->device);
        f->event = event_acquire(f->device);
        try {
            for (uint64_t i = 0; i < d.branch_count; ++i) {
                gpuStream_t s = nullptr;
                check(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking), "streamCreateWithFlags(branch)");
                f->branches.push_back(s);
                stream_register(s, f->device);
            }
            *out = publish<eagle_backend_fork>(f);
        } catch (...) {
            for (gpuStream_t s : f->branches) {
                stream_unregister(s);
                (void)gpuStreamDestroy(s);
            }
            event_release(f->device, f->event);
            throw;
        }
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_fork(eagle_backend_fork fork) {
    return guarded("eagle_backend_fork_fork", [&] {
        auto* f = from_handle<Fork>(fork, "fork");
        if (f->forked) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "already forked");
        DeviceGuard guard(f->device);
        check(gpuEventRecord(f->event, f->origin), "eventRecord(origin)");
        for (gpuStream_t b : f->branches) check(gpuStreamWaitEvent(b, f->event, 0), "streamWaitEvent(branch)");
        f->forked = true;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_join(eagle_backend_fork fork) {
    return guarded("eagle_backend_fork_join", [&] {
        auto* f = from_handle<Fork>(fork, "fork");
        if (!f->forked) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "not forked");
        join(f);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_branch(eagle_backend_fork fork, uint64_t i, uint64_t* stream) {
    return guarded("eagle_backend_fork_branch", [&] {
        auto* f = from_handle<Fork>(fork, "fork");
        require(stream, "stream");
        if (i >= f->branches.size())
            fail(EAGLE_BACKEND_INDEX,
                 "branch " + std::to_string(i) + " of a fork of " + std::to_string(f->branches.size()));
        *stream = as_raw(f->branches[i]);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_origin(eagle_backend_fork fork, uint64_t* origin) {
    return guarded("eagle_backend_fork_origin", [&] { *require(origin, "origin") = as_raw(from_handle<Fork>(fork, "fork")->origin); });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_forked(eagle_backend_fork fork, int32_t* forked) {
    return guarded("eagle_backend_fork_forked", [&] { *require(forked, "forked") = from_handle<Fork>(fork, "fork")->forked ? 1 : 0; });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_size(eagle_backend_fork fork, uint64_t* size) {
    return guarded("eagle_backend_fork_size", [&] { *require(size, "size") = from_handle<Fork>(fork, "fork")->branches.size(); });
}

EAGLE_EXPORT void eagle_backend_fork_release(eagle_backend_fork fork) {
    guarded_void([&] {
        std::unique_ptr<Fork> f(retire<Fork>(fork));
        if (!f) return;  // NULL, released or foreign
        try {
            if (f->forked) join(f.get());
        } catch (...) {
        }
        {
            DeviceGuard guard(f->device);
            for (gpuStream_t s : f->branches) {
                stream_unregister(s);
                (void)gpuStreamDestroy(s);
            }
        }
        event_release(f->device, f->event);
    });
}
