// required.cpp -- the seven required symbols of the GPU backend.
#include <cstdlib>

#include "gpu.h"

using namespace eagle;
using namespace eagle::gpu;

EAGLE_EXPORT uint32_t eagle_backend_version(void) { return EAGLE_BACKEND_VERSION; }

EAGLE_EXPORT const char* eagle_backend_last_error(void) { return eagle::last_error(); }

EAGLE_EXPORT eagle_backend_status eagle_backend_build_info(struct eagle_backend_build_info* info) {
    return guarded("eagle_backend_build_info", [&] {
        struct eagle_backend_build_info v{};
        v.abi_version = EAGLE_BACKEND_VERSION;
        v.cudart_version = native::runtime_version();
        copy_string(v.eagle_version, EAGLE_RELEASE);
        copy_string(v.archs, native::archs());
        copy_string(v.backend_kind, EAGLE_GPU_KIND);
        write_out(info, v, "info");
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_probe(void) {
    return guarded("eagle_backend_probe", [&] {
        std::string why = probe_reason();
        if (!why.empty()) fail(EAGLE_BACKEND_UNAVAILABLE, why);
    });
}

EAGLE_EXPORT void eagle_backend_free(void* buffer) { std::free(buffer); }

EAGLE_EXPORT eagle_backend_status eagle_backend_capabilities(uint64_t* groups) {
    return guarded("eagle_backend_capabilities", [&] {
        *require(groups, "groups") = native::capabilities();
        set_last_error(native::left_out());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_device_types(int32_t* types, int32_t cap, int32_t* count) {
    return guarded("eagle_backend_device_types", [&] {
        require(count, "count");
        if (cap < 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "cap is negative");
        if (cap > 0) require(types, "types");
#if defined(EAGLE_GPU_HIP)
        static const int32_t served[] = {10, 11};  // kDLROCM, kDLROCMHost
#else
        static const int32_t served[] = {2, 3, 13};  // kDLCUDA, kDLCUDAHost, kDLCUDAManaged
#endif
        const int32_t n = static_cast<int32_t>(sizeof served / sizeof served[0]);
        for (int32_t i = 0; i < n && i < cap; ++i) types[i] = served[i];
        *count = n;
    });
}
