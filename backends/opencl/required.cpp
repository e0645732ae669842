// The seven required symbols of the opencl backend.
#include <string>
#include <cstdlib>

#include "common.h"

namespace {
// Why each group and per-symbol entry this backend leaves out is missing: one `name: reason`
// line each, left in last_error by capabilities() on OK (eagle shows them to users and
// eagle.check compares them with what is left out). The capture groups are left out where
// cl_khr_command_buffer is not used (runtime.cpp says when it is: $EAGLE_OPENCL_COMMAND_BUFFER,
// the device's extensions), with the reason.
constexpr const char* kConditional =
    "conditional: OpenCL has no device-decided graph nodes; eagle decides conditionals on the host\n"
    "conditional_begin_case: no conditional group (see conditional)";
std::string capture_left_out(const std::string& why) {
    return "capturer: OpenCL has no stream capture, and the backend records one only on cl_khr_command_buffer: " +
           why + "\n"
           "captured: no capture (see capturer)\n"
           "attribution: no capture (see capturer)\n"
           "graph: no capture to build graphs from (see capturer)\n"
           "launcher: no graphs (see graph)\n";
}
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
        uint64_t caps = EAGLE_BACKEND_CAP_STREAM | EAGLE_BACKEND_CAP_EXEC | EAGLE_BACKEND_CAP_DEVICE |
                        EAGLE_BACKEND_CAP_INTEROP | EAGLE_BACKEND_CAP_FILTERING | EAGLE_BACKEND_CAP_FORK;
        // decided from the device (a platform is looked for now, once): truthful per platform
        std::string why;
        std::string left;
        if (!eagle_opencl::runtime_usable(&why)) {
            left = capture_left_out("no usable OpenCL device (" + why + ")");
        } else if (const auto& cb = eagle_opencl::runtime().command_buffer; !cb.used) {
            left = capture_left_out(cb.why_not);
        } else {
            caps |= EAGLE_BACKEND_CAP_CAPTURER | EAGLE_BACKEND_CAP_CAPTURED | EAGLE_BACKEND_CAP_ATTRIBUTION |
                    EAGLE_BACKEND_CAP_GRAPH | EAGLE_BACKEND_CAP_LAUNCHER;
        }
        *groups = caps;
        eagle::set_last_error(left + kConditional);
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
