// memory.cpp -- minor 6: memcpy, page-locked host memory and host functions in stream order.
#include "gpu.h"

using namespace eagle;
using namespace eagle::gpu;

EAGLE_EXPORT eagle_backend_status eagle_backend_memcpy(uint64_t dst, uint64_t src, uint64_t bytes, int32_t direction,
                                                       uint64_t stream) {
    return guarded("eagle_backend_memcpy", [&] {
        gpuMemcpyKind kind;
        switch (direction) {
            case EAGLE_BACKEND_MEMCPY_H2D: kind = gpuMemcpyHostToDevice; break;
            case EAGLE_BACKEND_MEMCPY_D2H: kind = gpuMemcpyDeviceToHost; break;
            case EAGLE_BACKEND_MEMCPY_D2D: kind = gpuMemcpyDeviceToDevice; break;
            case EAGLE_BACKEND_MEMCPY_H2H: kind = gpuMemcpyHostToHost; break;
            default: fail(EAGLE_BACKEND_INVALID_ARGUMENT, "direction " + std::to_string(direction) + " (1..4)");
        }
        if (bytes == 0) return;
        if (!dst || !src) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "NULL address with bytes > 0");
        // On the stream's device (a stream this backend created, or one the runtime can place), else
        // on the current device: the copy is issued where its stream lives whatever is current.
        DeviceGuard guard(resolve_device(-1, stream, true));
        check(gpuMemcpyAsync(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes, kind,
                             as_stream(stream)),
              "memcpyAsync");
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_host_alloc(uint64_t bytes, uint32_t flags, void** out) {
    return guarded("eagle_backend_host_alloc", [&] {
        require(out, "out");
        *out = nullptr;
        check_flags(flags, 0, "host_alloc flags");
        if (bytes == 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "bytes is 0");
        require_device();
        void* p = nullptr;
        gpuError_t e = gpuHostAlloc(&p, bytes, gpuHostAllocDefault);
        if (e != gpuSuccess || !p) {
            (void)gpuGetLastError();
            fail(EAGLE_BACKEND_UNAVAILABLE, "page-locked allocation of " + std::to_string(bytes) +
                                                " bytes failed: " + gpuGetErrorString(e));
        }
        *out = p;
    });
}

EAGLE_EXPORT void eagle_backend_host_free(void* ptr) {
    if (ptr) (void)gpuFreeHost(ptr);
}

EAGLE_EXPORT eagle_backend_status eagle_backend_host_func(uint64_t stream, eagle_backend_host_fn fn, void* user_data) {
    return guarded("eagle_backend_host_func", [&] {
        if (!fn) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "fn is NULL");
        DeviceGuard guard(resolve_device(-1, stream, true));  // resolve_device checks for a device
        gpuStream_t s = as_stream(stream);
        if (s) {
            CaptureInfo ci = capture_info(s);
            if (ci.status == gpuStreamCaptureStatusActive && body_graph_contains(ci.graph))
                fail(EAGLE_BACKEND_INVALID_ARGUMENT,
                     "a host function cannot run inside a conditional body (CUDA conditional bodies hold no host "
                     "nodes); enqueue it before or after the conditional");
        }
#if defined(EAGLE_GPU_HIP)
        // HIP 5.2 exports no hipLaunchHostFunc: a host node by hand under capture, a callback otherwise.
        if (s && is_capturing(s)) {
            CaptureInfo ci = capture_info(s);
            if (ci.status != gpuStreamCaptureStatusActive)
                fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the stream's capture was invalidated");
            hipHostNodeParams p{};
            p.fn = fn;
            p.userData = user_data;
            hipGraphNode_t node = nullptr;
            check(hipGraphAddHostNode(&node, ci.graph, ci.deps.data(), ci.deps.size(), &p), "hipGraphAddHostNode");
            check(hipStreamUpdateCaptureDependencies(s, &node, 1, hipStreamSetCaptureDependencies),
                  "hipStreamUpdateCaptureDependencies");
            return;
        }
        struct Call {
            eagle_backend_host_fn fn;
            void* user_data;
        };
        auto* call = new Call{fn, user_data};
        gpuError_t e = hipStreamAddCallback(
            s,
            [](hipStream_t, hipError_t, void* p) {
                auto* c = static_cast<Call*>(p);
                c->fn(c->user_data);
                delete c;
            },
            call, 0);
        if (e != gpuSuccess) delete call;
        check(e, "hipStreamAddCallback");
#else
        check(gpuLaunchHostFunc(s, reinterpret_cast<gpuHostFn_t>(fn), user_data), "launchHostFunc");
#endif
    });
}
