// Device memory (mem_alloc, mem_free), copies (memcpy) and host memory (host_alloc, host_free) of
// the opencl backend. Device memory is coarse-grained SVM (see common.h for why). clSVMAlloc
// refuses alignments above the device's largest data type on some platforms (PoCL: 128 bytes), so
// each allocation asks for 256 bytes more and hands out the first 256-byte boundary in it.
#include <atomic>
#include <cstdlib>
#include <map>

#include "common.h"

namespace eagle_opencl {
namespace {
constexpr uint64_t kAlign = 256;
std::mutex g_mu;
std::map<uint64_t, void*> g_allocs;  // the address eagle got -> what clSVMAlloc returned
std::atomic<uint64_t> g_generation{0};
}  // namespace

uint64_t allocation_generation() { return g_generation.load(); }

std::vector<void*> live_allocations() {
    std::lock_guard<std::mutex> lock(g_mu);
    std::vector<void*> out;
    out.reserve(g_allocs.size());
    for (const auto& a : g_allocs) out.push_back(a.second);
    return out;
}
}  // namespace eagle_opencl

using namespace eagle_opencl;

EAGLE_EXPORT eagle_backend_status eagle_backend_mem_alloc(int32_t device, uint64_t bytes, uint32_t flags,
                                                          uint64_t* address) {
    return eagle::guarded("eagle_backend_mem_alloc", [&] {
        eagle::require(address, "address");
        eagle::check_flags(flags, 0, "flags");
        check_device(device, "device");
        if (bytes == 0) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "bytes is 0; mem_alloc needs bytes > 0");
        Runtime& rt = runtime();
        cl_ulong max_alloc = 0;
        clGetDeviceInfo(rt.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, nullptr);
        if (bytes > UINT64_MAX - kAlign || (max_alloc && bytes + kAlign > max_alloc))
            eagle::fail(EAGLE_BACKEND_UNAVAILABLE, "mem_alloc of " + std::to_string(bytes) +
                                                       " bytes: more than the device's largest allocation (" +
                                                       std::to_string(max_alloc) + " bytes)");
        void* raw = clSVMAlloc(rt.context, CL_MEM_READ_WRITE, static_cast<size_t>(bytes + kAlign), 0);
        if (!raw)
            eagle::fail(EAGLE_BACKEND_UNAVAILABLE, "clSVMAlloc of " + std::to_string(bytes) + " bytes failed");
        const uint64_t addr = (reinterpret_cast<uint64_t>(raw) + kAlign - 1) & ~(kAlign - 1);
        std::lock_guard<std::mutex> lock(g_mu);
        g_allocs.emplace(addr, raw);
        ++g_generation;
        *address = addr;
    });
}

EAGLE_EXPORT void eagle_backend_mem_free(uint64_t address) {
    eagle::guarded_void([&] {
        if (address == 0) return;
        void* raw = nullptr;
        {
            std::lock_guard<std::mutex> lock(g_mu);
            auto it = g_allocs.find(address);
            if (it == g_allocs.end()) return;  // not ours: ignored, never freed
            raw = it->second;
            g_allocs.erase(it);
            ++g_generation;
        }
        clSVMFree(runtime().context, raw);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_memcpy(uint64_t dst, uint64_t src, uint64_t bytes, int32_t direction,
                                                       uint64_t stream) {
    return eagle::guarded("eagle_backend_memcpy", [&] {
        if (direction < EAGLE_BACKEND_MEMCPY_H2D || direction > EAGLE_BACKEND_MEMCPY_H2H)
            eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT,
                        "direction is " + std::to_string(direction) + "; it must be 1 (H2D), 2 (D2H), 3 (D2D) or 4 (H2H)");
        Target t(stream, "stream", Node::Kind::Copy);
        if (bytes == 0) return;
        if (!dst || !src) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, dst ? "src is 0" : "dst is 0");
        // clEnqueueSVMMemcpy takes SVM and host pointers alike, in any direction, in queue order;
        // under capture the copy is recorded and enqueued so at every replay (recording.h).
        t.copy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), static_cast<size_t>(bytes));
        t.commit();
    });
}

// Host memory: OpenCL has no page-locked allocation of host memory that is not a cl_mem buffer, and
// every copy here is clEnqueueSVMMemcpy from a plain pointer; so host_alloc is aligned malloc.
EAGLE_EXPORT eagle_backend_status eagle_backend_host_alloc(uint64_t bytes, uint32_t flags, void** out) {
    return eagle::guarded("eagle_backend_host_alloc", [&] {
        eagle::require(out, "out");
        eagle::check_flags(flags, 0, "flags");
        if (bytes == 0) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "bytes is 0; host_alloc needs bytes > 0");
        void* p = nullptr;
        if (bytes > (uint64_t{1} << 47) || posix_memalign(&p, 4096, static_cast<size_t>(bytes)) != 0 || !p)
            eagle::fail(EAGLE_BACKEND_UNAVAILABLE, "host_alloc of " + std::to_string(bytes) + " bytes failed");
        *out = p;
    });
}

EAGLE_EXPORT void eagle_backend_host_free(void* ptr) { std::free(ptr); }
