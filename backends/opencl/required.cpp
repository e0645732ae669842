// The seven required symbols of the opencl backend.
#include <string>
#include <cstdlib>

#include "common.h"

namespace {
// Why each group and per-symbol entry this backend leaves out is missing: one `name: reason`
// line each, left in last_error by capabilities() on OK (eagle shows them to users and
// eagle.check compares them with what is left out). Remove a line when you add its group.
constexpr const char* kLeftOut =
    "capturer: OpenCL has no stream capture; cl_khr_command_buffer (optional, 0.9 on PoCL 3.1) is not used yet\n"
    "captured: no capture (see capturer)\n"
    "conditional: OpenCL has no device-decided graph nodes; eagle decides conditionals on the host\n"
    "attribution: no capture (see capturer)\n"
    "graph: no capture to build graphs from (see capturer)\n"
    "launcher: no graphs (see graph)\n"
    "conditional_begin_case: no conditional group (see conditional)";
}  // namespace

EAGLE_EXPORT uint32_t eagle_backend_version(void) { return EAGLE_BACKEND_VERSION; }

EAGLE_EXPORT const char* eagle_backend_last_error(void) { return eagle::last_error(); }

EAGLE_EXPORT eagle_backend_status eagle_backend_build_info(struct eagle_backend_build_info* info) {
    return eagle::guarded("eagle_backend_build_info", [&] {
        // C++: `struct eagle_backend_build_info` names the struct; the function of the same name
        // hides it, so the struct keyword is needed wherever the type is named.
        struct eagle_backend_build_info v;
        std::memset(&v, 0, sizeof v);
        v.abi_version = EAGLE_BACKEND_VERSION;
        eagle::copy_string(v.eagle_version, EAGLE_RELEASE);
        eagle::copy_string(v.archs, "");
        eagle::copy_string(v.backend_kind, "opencl");
        eagle::write_out(info, v, "info");
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_probe(void) {
    return eagle::guarded("eagle_backend_probe", [&] {
        std::string why;
        if (!eagle_opencl::runtime_usable(&why)) eagle::fail(EAGLE_BACKEND_UNAVAILABLE, why);
    });
}

EAGLE_EXPORT void eagle_backend_free(void* buffer) { std::free(buffer); }

EAGLE_EXPORT eagle_backend_status eagle_backend_capabilities(uint64_t* groups) {
    return eagle::guarded("eagle_backend_capabilities", [&] {
        eagle::require(groups, "groups");
        *groups = EAGLE_BACKEND_CAP_STREAM | EAGLE_BACKEND_CAP_EXEC | EAGLE_BACKEND_CAP_DEVICE |
                  EAGLE_BACKEND_CAP_INTEROP | EAGLE_BACKEND_CAP_FILTERING | EAGLE_BACKEND_CAP_FORK;
        eagle::set_last_error(kLeftOut);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_device_types(int32_t* types, int32_t cap, int32_t* count) {
    return eagle::guarded("eagle_backend_device_types", [&] {
        eagle::require(count, "count");
        if (cap < 0) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "cap is negative");
        if (cap > 0) eagle::require(types, "types");
        // 4 is kDLOpenCL: eagle's arrays of this kind are SVM addresses on the OpenCL device.
        const int32_t served[] = {4};
        const int32_t n = static_cast<int32_t>(sizeof served / sizeof served[0]);
        for (int32_t i = 0; i < n && i < cap; ++i) types[i] = served[i];
        *count = n;
    });
}
