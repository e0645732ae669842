// The required seven: version, last_error, build_info, probe, free, capabilities, device_types.
#include <cstdlib>

#include "runtime.h"

using namespace eagle;
using namespace eagle::cpu;

EAGLE_EXPORT uint32_t eagle_backend_version(void) { return EAGLE_BACKEND_VERSION; }

EAGLE_EXPORT const char* eagle_backend_last_error(void) { return eagle::last_error(); }

EAGLE_EXPORT eagle_backend_status eagle_backend_build_info(struct eagle_backend_build_info* info) {
    return guarded("eagle_backend_build_info", [&] {
        struct eagle_backend_build_info b;
        std::memset(&b, 0, sizeof b);
        b.abi_version = EAGLE_BACKEND_VERSION;
        b.cudart_version = 0;
        copy_string(b.eagle_version, EAGLE_RELEASE);
        copy_string(b.archs, "");
        copy_string(b.backend_kind, "cpu");
        write_out(info, b, "info");
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_probe(void) {
    return guarded("eagle_backend_probe", [&] {});
}

EAGLE_EXPORT void eagle_backend_free(void* buffer) { std::free(buffer); }

EAGLE_EXPORT eagle_backend_status eagle_backend_capabilities(uint64_t* groups) {
    return guarded("eagle_backend_capabilities", [&] {
        require(groups, "groups");
        *groups = EAGLE_BACKEND_CAP_STREAM | EAGLE_BACKEND_CAP_CAPTURER | EAGLE_BACKEND_CAP_CAPTURED |
                  EAGLE_BACKEND_CAP_FORK | EAGLE_BACKEND_CAP_CONDITIONAL | EAGLE_BACKEND_CAP_ATTRIBUTION |
                  EAGLE_BACKEND_CAP_GRAPH | EAGLE_BACKEND_CAP_LAUNCHER | EAGLE_BACKEND_CAP_EXEC |
                  EAGLE_BACKEND_CAP_DEVICE | EAGLE_BACKEND_CAP_INTEROP | EAGLE_BACKEND_CAP_FILTERING;
        set_last_error("");  // the reference leaves nothing out
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_device_types(int32_t* types, int32_t cap, int32_t* count) {
    return guarded("eagle_backend_device_types", [&] {
        require(count, "count");
        if (cap < 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "cap is negative");
        if (cap > 0) require(types, "types");
        static const int32_t served[] = {1};  // kDLCPU
        for (int32_t i = 0; i < cap && i < 1; ++i) types[i] = served[i];
        *count = 1;
    });
}
