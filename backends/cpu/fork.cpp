// Group fork (bit 3): branch streams that start after the origin and join back into it. Eagerly
// they are real streams ordered by fence objects; under capture they record into the origin's
// capture, so a replay runs the branches concurrently.
#include "runtime.h"

using namespace eagle;
using namespace eagle::cpu;

namespace eagle::cpu {

class Fork : public Object {
public:
    static constexpr Kind kKind = Kind::Fork;
    Fork() : Object(kKind) {}
    std::shared_ptr<Stream> origin;
    std::vector<std::shared_ptr<Stream>> branches;
    bool forked = false;
    std::shared_ptr<CaptureState> cap;  // the capture the fork happened in, if any

    void join() {
        if (!forked) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the fork is not forked");
        std::lock_guard<std::recursive_mutex> lock(capture_mutex());
        if (cap) {
            const bool live = !cap->ended && origin->capture == cap;
            if (live) {
                for (auto& b : branches) {
                    if (b->capture == cap)
                        origin->tail.insert(origin->tail.end(), b->tail.begin(), b->tail.end());
                }
            }
            for (auto& b : branches) {
                if (b->capture == cap) {
                    b->capture.reset();
                    b->tail.clear();
                }
            }
            --cap->attached_branches;
            cap.reset();
            forked = false;
            if (!live)
                fail(EAGLE_BACKEND_INVALID_ARGUMENT,
                     "the capture the fork was forked in has ended; the branches were detached");
            return;
        }
        if (origin->capture && !origin->capture->ended)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT,
                 "the fork was forked outside a capture and its origin is being captured now");
        for (auto& b : branches) enqueue_wait(*origin, b);
        forked = false;
    }
};

}  // namespace eagle::cpu

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_create(const eagle_backend_fork_desc* desc,
                                                            eagle_backend_fork* out) {
    return guarded("eagle_backend_fork_create", [&] {
        const auto d = read_desc(desc, "desc");
        require(out, "out");
        check_flags(d.flags, 0, "desc->flags");
        check_device(d.device, "desc->device");
        if (d.branch_count < 1) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->branch_count is 0 (needs >= 1)");
        if (d.branch_count > 1024)
            fail(EAGLE_BACKEND_UNSUPPORTED, "desc->branch_count " + std::to_string(d.branch_count) +
                                                " exceeds the cpu backend's limit of 1024");
        auto f = make_object<Fork>();
        f->origin = resolve_stream(d.origin, "desc->origin");
        try {
            for (uint64_t i = 0; i < d.branch_count; ++i)
                f->branches.push_back(make_stream(Stream::Role::Branch, false));
        } catch (...) {
            for (auto& b : f->branches) retire_stream(b);
            throw;
        }
        register_object(f);
        *out = reinterpret_cast<eagle_backend_fork>(f.get());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_fork(eagle_backend_fork fork) {
    return guarded("eagle_backend_fork_fork", [&] {
        auto f = lookup<Fork>(fork, "fork");
        if (f->forked) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the fork is already forked");
        std::lock_guard<std::recursive_mutex> lock(capture_mutex());
        if (auto cap = active_capture(*f->origin)) {
            for (auto& b : f->branches) {
                b->capture = cap;
                b->tail = f->origin->tail;
            }
            ++cap->attached_branches;
            f->cap = std::move(cap);
        } else {
            for (auto& b : f->branches) enqueue_wait(*b, f->origin);
        }
        f->forked = true;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_join(eagle_backend_fork fork) {
    return guarded("eagle_backend_fork_join", [&] { lookup<Fork>(fork, "fork")->join(); });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_branch(eagle_backend_fork fork, uint64_t i, uint64_t* stream) {
    return guarded("eagle_backend_fork_branch", [&] {
        require(stream, "stream");
        auto f = lookup<Fork>(fork, "fork");
        if (i >= f->branches.size())
            fail(EAGLE_BACKEND_INDEX, "branch " + std::to_string(i) + " of a fork of " +
                                          std::to_string(f->branches.size()));
        *stream = f->branches[i]->raw();
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_origin(eagle_backend_fork fork, uint64_t* origin) {
    return guarded("eagle_backend_fork_origin", [&] {
        require(origin, "origin");
        auto f = lookup<Fork>(fork, "fork");
        *origin = f->origin->role == Stream::Role::Default ? 0 : f->origin->raw();
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_forked(eagle_backend_fork fork, int32_t* forked) {
    return guarded("eagle_backend_fork_forked", [&] {
        require(forked, "forked");
        *forked = lookup<Fork>(fork, "fork")->forked ? 1 : 0;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_fork_size(eagle_backend_fork fork, uint64_t* size) {
    return guarded("eagle_backend_fork_size", [&] {
        require(size, "size");
        *size = lookup<Fork>(fork, "fork")->branches.size();
    });
}

EAGLE_EXPORT void eagle_backend_fork_release(eagle_backend_fork fork) {
    guarded_void([&] {
        auto f = take<Fork>(fork);
        if (!f) return;
        if (f->forked) {
            try {
                f->join();
            } catch (...) {
            }
        }
        for (auto& b : f->branches) retire_stream(b);
    });
}
