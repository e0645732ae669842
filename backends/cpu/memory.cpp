// Minor 6: memcpy in stream order, page-locked host memory, host functions (host nodes under capture).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "at_fork.h"
#include "runtime.h"

using namespace eagle;
using namespace eagle::cpu;

namespace eagle::cpu {

void CopyNode::run(const RunSettings*) const {
    if (bytes_) std::memmove(reinterpret_cast<void*>(dst_), reinterpret_cast<const void*>(src_), bytes_);
}

void HostNode::run(const RunSettings*) const { fn_(user_); }

namespace {
struct HostAllocations {
    std::mutex mu;
    std::unordered_map<void*, std::pair<size_t, bool>> live;  // ptr -> (bytes, locked)
};
HostAllocations& host_allocations() {
    static HostAllocations* h = new HostAllocations();
    return *h;
}
}  // namespace

void host_allocations_at_fork(ForkPhase phase) noexcept {
    if (phase == ForkPhase::Prepare)
        host_allocations().mu.lock();
    else
        host_allocations().mu.unlock();
}

}  // namespace eagle::cpu

EAGLE_EXPORT eagle_backend_status eagle_backend_memcpy(uint64_t dst, uint64_t src, uint64_t bytes, int32_t direction,
                                                       uint64_t stream) {
    return guarded("eagle_backend_memcpy", [&] {
        if (direction < EAGLE_BACKEND_MEMCPY_H2D || direction > EAGLE_BACKEND_MEMCPY_H2H)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "direction is " + std::to_string(direction) + " (1..4)");
        if (bytes > 0 && !dst) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "dst is 0");
        if (bytes > 0 && !src) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "src is 0");
        if (bytes > uint64_t(INT64_MAX)) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "bytes is too large");
        auto s = resolve_stream(stream, "stream");
        submit(*s, std::make_shared<CopyNode>(dst, src, bytes));
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_host_alloc(uint64_t bytes, uint32_t flags, void** out) {
    return guarded("eagle_backend_host_alloc", [&] {
        require(out, "out");
        check_flags(flags, 0, "flags");
        if (bytes == 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "bytes is 0");
        long page = sysconf(_SC_PAGESIZE);
        if (page <= 0) page = 4096;
        if (bytes > uint64_t(INT64_MAX) - uint64_t(page))
            fail(EAGLE_BACKEND_UNAVAILABLE, "bytes " + std::to_string(bytes) + " cannot be allocated");
        const size_t size = (bytes + page - 1) / page * page;
        void* p = nullptr;
        if (posix_memalign(&p, static_cast<size_t>(page), size) != 0 || !p)
            fail(EAGLE_BACKEND_UNAVAILABLE, "host_alloc of " + std::to_string(bytes) + " bytes failed");
        const bool locked = mlock(p, size) == 0;  // best effort: RLIMIT_MEMLOCK may refuse
        auto& h = host_allocations();
        try {
            std::lock_guard<std::mutex> lock(h.mu);
            h.live[p] = {size, locked};
        } catch (...) {
            if (locked) munlock(p, size);
            std::free(p);
            throw;
        }
        *out = p;
    });
}

EAGLE_EXPORT void eagle_backend_host_free(void* ptr) {
    guarded_void([&] {
        if (!ptr) return;
        auto& h = host_allocations();
        std::pair<size_t, bool> info;
        {
            std::lock_guard<std::mutex> lock(h.mu);
            auto it = h.live.find(ptr);
            if (it == h.live.end()) return;  // not ours: never free a foreign pointer
            info = it->second;
            h.live.erase(it);
        }
        if (info.second) munlock(ptr, info.first);
        std::free(ptr);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_host_func(uint64_t stream, eagle_backend_host_fn fn, void* user_data) {
    return guarded("eagle_backend_host_func", [&] {
        if (!fn) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "fn is NULL");
        auto s = resolve_stream(stream, "stream");
        submit(*s, std::make_shared<HostNode>(fn, user_data));
    });
}
