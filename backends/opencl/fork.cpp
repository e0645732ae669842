// Group fork (bit 3) of the opencl backend: branch streams are queues of their own, ordered by
// events (order_after): fork puts a barrier on each branch that waits for the origin's work so far,
// join one on the origin that waits for every branch's. Forked under capture, the branches record
// into the origin's capture in call order (recording.h) until the join detaches them.
#include <memory>
#include <set>

#include "common.h"

namespace eagle_opencl {
namespace {
struct Fork {
    uint64_t origin = 0;                       // raw origin stream
    std::vector<eagle_backend_stream> branches;  // registered streams owned by the fork
    bool forked = false;
    std::shared_ptr<CaptureState> cap;         // the capture it was forked in, if any
};
std::mutex g_mu;
std::set<Fork*> g_forks;

Fork& lookup_fork(eagle_backend_fork handle) {
    Fork* f = reinterpret_cast<Fork*>(handle);
    std::lock_guard<std::mutex> lock(g_mu);
    if (!f || !g_forks.count(f))
        eagle::fail(EAGLE_BACKEND_BAD_HANDLE, "fork is not a live fork of the opencl backend (NULL, released or foreign)");
    return *f;
}

void join(Fork& f) {
    if (!f.forked) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the fork is not forked");
    {
        std::lock_guard<std::recursive_mutex> lock(capture_mutex());
        if (f.cap) {  // the branches recorded into the origin's capture in order: detach them
            auto cap = std::move(f.cap);
            f.cap.reset();
            for (auto b : f.branches) {
                Stream* bs = lookup_stream(b, "branch");
                if (bs->capture == cap) bs->capture.reset();
            }
            --cap->attached_branches;
            f.forked = false;
            Stream& origin = stream_of_raw(f.origin, "the fork's origin");
            if (cap->ended || origin.capture != cap)
                eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT,
                            "the capture the fork was forked in has ended; the branches were detached");
            return;
        }
        if (stream_of_raw(f.origin, "the fork's origin").capture)
            eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT,
                        "the fork was forked outside a capture and its origin is being captured now");
    }
    Stream& origin = enqueue_stream(f.origin, "the fork's origin");
    for (auto b : f.branches) order_after(origin, *lookup_stream(b, "branch"));
    f.forked = false;
}
}  // namespace
}  // namespace eagle_opencl

using namespace eagle_opencl;

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_create(const struct eagle_backend_fork_desc* desc,
                                                            eagle_backend_fork* out) {
    return eagle::guarded("eagle_backend_fork_create", [&] {
        const auto d = eagle::read_desc(desc, "desc");
        eagle::require(out, "out");
        eagle::check_flags(d.flags, 0, "desc->flags");
        check_device(d.device, "desc->device");
        if (d.branch_count < 1) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->branch_count is 0 (needs >= 1)");
        if (d.branch_count > 1024)
            eagle::fail(EAGLE_BACKEND_UNSUPPORTED, "desc->branch_count " + std::to_string(d.branch_count) +
                                                       " exceeds the opencl backend's limit of 1024");
        stream_of_raw(d.origin, "desc->origin");
        auto f = std::make_unique<Fork>();
        f->origin = d.origin;
        try {
            for (uint64_t i = 0; i < d.branch_count; ++i)
                f->branches.push_back(reinterpret_cast<eagle_backend_stream>(register_stream(false)));
        } catch (...) {
            for (auto b : f->branches) unregister_stream(b);
            throw;
        }
        std::lock_guard<std::mutex> lock(g_mu);
        g_forks.insert(f.get());
        *out = reinterpret_cast<eagle_backend_fork>(f.release());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_fork(eagle_backend_fork fork) {
    return eagle::guarded("eagle_backend_fork_fork", [&] {
        Fork& f = lookup_fork(fork);
        if (f.forked) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the fork is already forked");
        Stream& origin = stream_of_raw(f.origin, "the fork's origin");
        {
            std::lock_guard<std::recursive_mutex> lock(capture_mutex());
            if (auto cap = active_capture(origin)) {
                for (auto b : f.branches) lookup_stream(b, "branch")->capture = cap;
                ++cap->attached_branches;
                f.cap = std::move(cap);
                f.forked = true;
                return;
            }
        }
        for (auto b : f.branches) order_after(*lookup_stream(b, "branch"), origin);
        f.forked = true;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_join(eagle_backend_fork fork) {
    return eagle::guarded("eagle_backend_fork_join", [&] { join(lookup_fork(fork)); });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_branch(eagle_backend_fork fork, uint64_t i, uint64_t* stream) {
    return eagle::guarded("eagle_backend_fork_branch", [&] {
        eagle::require(stream, "stream");
        Fork& f = lookup_fork(fork);
        if (i >= f.branches.size())
            eagle::fail(EAGLE_BACKEND_INDEX, "branch " + std::to_string(i) + " of a fork of " +
                                                 std::to_string(f.branches.size()));
        *stream = reinterpret_cast<uint64_t>(f.branches[i]);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_origin(eagle_backend_fork fork, uint64_t* origin) {
    return eagle::guarded("eagle_backend_fork_origin", [&] {
        eagle::require(origin, "origin");
        *origin = lookup_fork(fork).origin;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_forked(eagle_backend_fork fork, int32_t* forked) {
    return eagle::guarded("eagle_backend_fork_forked", [&] {
        eagle::require(forked, "forked");
        *forked = lookup_fork(fork).forked ? 1 : 0;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_size(eagle_backend_fork fork, uint64_t* size) {
    return eagle::guarded("eagle_backend_fork_size", [&] {
        eagle::require(size, "size");
        *size = lookup_fork(fork).branches.size();
    });
}

EAGLE_EXPORT void eagle_backend_fork_release(eagle_backend_fork fork) {
    eagle::guarded_void([&] {
        Fork* f = reinterpret_cast<Fork*>(fork);
        {
            std::lock_guard<std::mutex> lock(g_mu);
            if (!f || !g_forks.erase(f)) return;
        }
        std::unique_ptr<Fork> gone(f);
        if (gone->forked) {
            try {
                join(*gone);  // a forked fork is joined first
            } catch (...) {
            }
        }
        for (auto b : gone->branches) unregister_stream(b);  // waits for each branch's work
    });
}
