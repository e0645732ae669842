// The platform, the device and the context of the opencl backend, made once on first use.
#include <cstdlib>
#include <cstring>

#include "common.h"

namespace eagle_opencl {

std::string cl_error(cl_int err, const char* what) {
    const char* name = "CL error";
    switch (err) {
        case CL_DEVICE_NOT_FOUND: name = "CL_DEVICE_NOT_FOUND"; break;
        case CL_OUT_OF_RESOURCES: name = "CL_OUT_OF_RESOURCES"; break;
        case CL_OUT_OF_HOST_MEMORY: name = "CL_OUT_OF_HOST_MEMORY"; break;
        case CL_MEM_OBJECT_ALLOCATION_FAILURE: name = "CL_MEM_OBJECT_ALLOCATION_FAILURE"; break;
        case CL_BUILD_PROGRAM_FAILURE: name = "CL_BUILD_PROGRAM_FAILURE"; break;
        case CL_INVALID_VALUE: name = "CL_INVALID_VALUE"; break;
        case CL_INVALID_KERNEL_ARGS: name = "CL_INVALID_KERNEL_ARGS"; break;
        case CL_INVALID_ARG_SIZE: name = "CL_INVALID_ARG_SIZE"; break;
        case CL_INVALID_ARG_INDEX: name = "CL_INVALID_ARG_INDEX"; break;
        case CL_INVALID_WORK_GROUP_SIZE: name = "CL_INVALID_WORK_GROUP_SIZE"; break;
        case CL_INVALID_KERNEL_NAME: name = "CL_INVALID_KERNEL_NAME"; break;
        case CL_INVALID_BUILD_OPTIONS: name = "CL_INVALID_BUILD_OPTIONS"; break;
        case CL_INVALID_BINARY: name = "CL_INVALID_BINARY"; break;
        case -1001:  /* CL_PLATFORM_NOT_FOUND_KHR */ name = "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL platform: install an ICD)"; break;
        case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST: name = "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"; break;
        default: break;
    }
    return std::string(what) + ": " + name + " (" + std::to_string(err) + ")";
}

void cl_check(cl_int err, const char* what, eagle_backend_status status) {
    if (err != CL_SUCCESS) eagle::fail(status, cl_error(err, what));
}

namespace {
std::string info_string(cl_platform_id p, cl_platform_info what) {
    size_t n = 0;
    if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
    std::string s(n, '\0');
    clGetPlatformInfo(p, what, n, s.data(), nullptr);
    s.resize(std::strlen(s.c_str()));
    return s;
}

// The runtime, or the reason there is none; made once.
struct Made {
    Runtime rt;
    std::string why;  // non-empty: unusable
};

// Whether CL_DEVICE_OPENCL_C_ALL_VERSIONS (OpenCL 3.0) names OpenCL C major.minor.
bool lists_c_version(cl_device_id d, unsigned major, unsigned minor) {
    size_t nv = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_OPENCL_C_ALL_VERSIONS, 0, nullptr, &nv) != CL_SUCCESS || nv == 0) return false;
    std::vector<cl_name_version> versions(nv / sizeof(cl_name_version));
    if (clGetDeviceInfo(d, CL_DEVICE_OPENCL_C_ALL_VERSIONS, nv, versions.data(), nullptr) != CL_SUCCESS) return false;
    for (const auto& v : versions)
        if (CL_VERSION_MAJOR(v.version) == major && CL_VERSION_MINOR(v.version) == minor) return true;
    return false;
}

// Fills rt.command_buffer: used where the device offers cl_khr_command_buffer 0.9.x (the
// provisional versions, whose entry points this backend calls with the 0.9.0 signatures, as
// Debian's headers of 2023 declare them; a later major or minor may change them), the entry
// points resolve and the extension needs no queue properties this backend's in-order queues
// lack; $EAGLE_OPENCL_COMMAND_BUFFER=0 turns it off (1 or unset: use it where offered). False,
// with *why, only for a bad value of the variable.
bool probe_command_buffer(Runtime& rt, std::string* why) {
    auto& cb = rt.command_buffer;
    bool off = false;
    if (const char* v = std::getenv("EAGLE_OPENCL_COMMAND_BUFFER"); v && *v) {
        const std::string s = v;
        if (s != "0" && s != "1") {
            *why = "$EAGLE_OPENCL_COMMAND_BUFFER='" + s + "' is not 0 or 1";
            return false;
        }
        off = s == "0";
    }
    cl_version version = 0;
    bool offered = false;
    size_t n = 0;
    if (clGetDeviceInfo(rt.device, CL_DEVICE_EXTENSIONS_WITH_VERSION, 0, nullptr, &n) == CL_SUCCESS && n > 0) {
        std::vector<cl_name_version> exts(n / sizeof(cl_name_version));
        clGetDeviceInfo(rt.device, CL_DEVICE_EXTENSIONS_WITH_VERSION, n, exts.data(), nullptr);
        for (const auto& e : exts)
            if (std::strcmp(e.name, "cl_khr_command_buffer") == 0) {
                offered = true;
                version = e.version;
            }
    }
    cb.version = std::to_string(CL_VERSION_MAJOR(version)) + "." + std::to_string(CL_VERSION_MINOR(version)) + "." +
                 std::to_string(CL_VERSION_PATCH(version));
    const std::string device = "the device '" + rt.device_name + "' of '" + rt.platform_name + "'";
    if (off) {
        cb.why_not = offered ? "$EAGLE_OPENCL_COMMAND_BUFFER=0 turns off cl_khr_command_buffer " + cb.version + " of " + device
                             : "$EAGLE_OPENCL_COMMAND_BUFFER=0 (and " + device + " does not offer cl_khr_command_buffer)";
        return true;
    }
    if (!offered) {
        cb.why_not = device + " does not offer cl_khr_command_buffer";
        return true;
    }
    if (CL_VERSION_MAJOR(version) != 0 || CL_VERSION_MINOR(version) != 9) {
        cb.why_not = device + " offers cl_khr_command_buffer " + cb.version +
                     "; this backend calls the provisional 0.9.x entry points";
        return true;
    }
    cl_command_queue_properties needs = 0;
    clGetDeviceInfo(rt.device, CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR, sizeof needs, &needs, nullptr);
    if (needs != 0) {
        cb.why_not = device + "'s cl_khr_command_buffer needs queue properties " + std::to_string(needs) +
                     " that this backend's in-order queues do not have";
        return true;
    }
    cl_device_command_buffer_capabilities_khr caps = 0;
    clGetDeviceInfo(rt.device, CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR, sizeof caps, &caps, nullptr);
    cb.simultaneous = (caps & CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR) != 0;
    auto get = [&](const char* name) { return clGetExtensionFunctionAddressForPlatform(rt.platform, name); };
    cb.create = reinterpret_cast<clCreateCommandBufferKHR_fn>(get("clCreateCommandBufferKHR"));
    cb.finalize = reinterpret_cast<clFinalizeCommandBufferKHR_fn>(get("clFinalizeCommandBufferKHR"));
    cb.release = reinterpret_cast<clReleaseCommandBufferKHR_fn>(get("clReleaseCommandBufferKHR"));
    cb.enqueue = reinterpret_cast<clEnqueueCommandBufferKHR_fn>(get("clEnqueueCommandBufferKHR"));
    cb.ndrange = reinterpret_cast<clCommandNDRangeKernelKHR_fn>(get("clCommandNDRangeKernelKHR"));
    cb.info = reinterpret_cast<clGetCommandBufferInfoKHR_fn>(get("clGetCommandBufferInfoKHR"));
    if (!cb.create || !cb.finalize || !cb.release || !cb.enqueue || !cb.ndrange || !cb.info) {
        cb.why_not = device + " offers cl_khr_command_buffer " + cb.version +
                     " but clGetExtensionFunctionAddressForPlatform does not give its entry points";
        return true;
    }
    cb.used = true;
    return true;
}

Made make() {
    Made m;
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, nullptr, &np);
    if (err != CL_SUCCESS || np == 0) {
        m.why = "no OpenCL platform (" + cl_error(err, "clGetPlatformIDs") +
                "); install an ICD, e.g. Debian's pocl-opencl-icd, or name a vendor's in /etc/OpenCL/vendors";
        return m;
    }
    std::vector<cl_platform_id> ps(np);
    clGetPlatformIDs(np, ps.data(), nullptr);
    const char* want = std::getenv("EAGLE_OPENCL_PLATFORM");
    for (cl_platform_id p : ps) {
        const std::string name = info_string(p, CL_PLATFORM_NAME);
        if (want && *want && name.find(want) == std::string::npos) continue;
        cl_device_id d = nullptr;
        if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, nullptr) != CL_SUCCESS || !d) continue;
        m.rt.platform = p;
        m.rt.device = d;
        m.rt.platform_name = name;
        break;
    }
    if (!m.rt.device) {
        m.why = want && *want ? std::string("no OpenCL platform named like $EAGLE_OPENCL_PLATFORM='") + want +
                                    "' has a device"
                              : "no OpenCL platform has a device";
        return m;
    }
    char dn[256] = {0};
    clGetDeviceInfo(m.rt.device, CL_DEVICE_NAME, sizeof dn - 1, dn, nullptr);
    m.rt.device_name = dn;
    cl_device_svm_capabilities svm = 0;
    if (clGetDeviceInfo(m.rt.device, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, nullptr) == CL_SUCCESS)
        m.rt.svm_coarse = (svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0;
    if (!m.rt.svm_coarse) {
        m.why = "the OpenCL device '" + m.rt.device_name + "' of '" + m.rt.platform_name +
                "' has no coarse-grained SVM (CL_DEVICE_SVM_CAPABILITIES), which the opencl backend's device "
                "memory is";
        return m;
    }
    cl_device_fp_config fp = 0;
    clGetDeviceInfo(m.rt.device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, nullptr);
    m.rt.fp32_correct_div = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
    cl_device_type type = 0;
    clGetDeviceInfo(m.rt.device, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
    m.rt.compact_chunks = (type & CL_DEVICE_TYPE_CPU) != 0;
    if (const char* how = std::getenv("EAGLE_OPENCL_COMPACT"); how && *how) {
        const std::string h = how;
        if (h != "chunks" && h != "tiles") {
            m.why = "$EAGLE_OPENCL_COMPACT='" + h + "' is not chunks or tiles";
            return m;
        }
        m.rt.compact_chunks = h == "chunks";
    }
    cl_uint units = 1;
    clGetDeviceInfo(m.rt.device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr);
    m.rt.compute_units = units ? units : 1;
    // The OpenCL C kernels are built as: CL3.0 where the device lists OpenCL C 3.0 with the
    // generic address space; else CL2.0 where it lists OpenCL C 2.0 (which has it); else CL3.0
    // where it lists 3.0 without it (NVIDIA's OpenCL on the H200, PoCL 3.1; measured with
    // benchmarks/diag/opencl_probe.py), whose preprocessor takes kernel.h's variadic macros
    // (NVIDIA's refuses them under CL2.0); else as CL_DEVICE_OPENCL_C_VERSION says (a platform
    // older than 3.0). Without the generic space an unqualified pointer is private: kernel.h then
    // qualifies the declared pointers __global (module.cpp), unless $EAGLE_OPENCL_QUALIFY=0 (both
    // NVIDIA's and PoCL's compilers also run unqualified pointers as flat addresses: NVIDIA's PTX
    // generic addressing, PoCL's one address space). $EAGLE_OPENCL_STD (CL1.2, CL2.0 or CL3.0)
    // overrides the version (CL2.0 counts as generic).
    bool generic = false;
    size_t nf = 0;
    if (clGetDeviceInfo(m.rt.device, CL_DEVICE_OPENCL_C_FEATURES, 0, nullptr, &nf) == CL_SUCCESS && nf > 0) {
        std::vector<cl_name_version> feats(nf / sizeof(cl_name_version));
        clGetDeviceInfo(m.rt.device, CL_DEVICE_OPENCL_C_FEATURES, nf, feats.data(), nullptr);
        for (const auto& f : feats)
            if (std::strcmp(f.name, "__opencl_c_generic_address_space") == 0) generic = true;
    }
    const bool c20 = lists_c_version(m.rt.device, 2, 0), c30 = lists_c_version(m.rt.device, 3, 0);
    m.rt.context = clCreateContext(nullptr, 1, &m.rt.device, nullptr, nullptr, &err);
    if (err != CL_SUCCESS) {
        m.why = cl_error(err, "clCreateContext");
        return m;
    }
    if (const char* forced = std::getenv("EAGLE_OPENCL_STD"); forced && *forced) {
        const std::string f = forced;
        if (f != "CL1.2" && f != "CL2.0" && f != "CL3.0") {
            m.why = "$EAGLE_OPENCL_STD='" + f + "' is not CL1.2, CL2.0 or CL3.0";
            return m;
        }
        m.rt.cl_std = "-cl-std=" + f;
        m.rt.qualify = !(f == "CL2.0" || (f == "CL3.0" && generic));
    } else if (c30 && generic) {
        m.rt.cl_std = "-cl-std=CL3.0";
    } else if (c20) {
        m.rt.cl_std = "-cl-std=CL2.0";
    } else if (c30) {
        m.rt.cl_std = "-cl-std=CL3.0";
        m.rt.qualify = true;
    } else {
        char cv[128] = {0};
        clGetDeviceInfo(m.rt.device, CL_DEVICE_OPENCL_C_VERSION, sizeof cv - 1, cv, nullptr);
        const bool two = std::strncmp(cv, "OpenCL C 2.", 11) == 0;
        m.rt.cl_std = two ? "-cl-std=CL2.0" : "-cl-std=CL1.2";
        m.rt.qualify = !two;
    }
    if (!probe_command_buffer(m.rt, &m.why)) return m;
    if (const char* q = std::getenv("EAGLE_OPENCL_QUALIFY"); q && *q) {
        const std::string v = q;
        if (v != "0" && v != "1") {
            m.why = "$EAGLE_OPENCL_QUALIFY='" + v + "' is not 0 or 1";
            return m;
        }
        m.rt.qualify = v == "1";
    }
    return m;
}

Made& made() {
    static Made m = make();  // thread-safe, once; the context lives as long as the process
    return m;
}
}  // namespace

Runtime& runtime() {
    Made& m = made();
    if (!m.why.empty()) eagle::fail(EAGLE_BACKEND_UNAVAILABLE, m.why);
    return m.rt;
}

bool runtime_usable(std::string* why) noexcept {
    try {
        Made& m = made();
        if (why) *why = m.why;
        return m.why.empty();
    } catch (...) {
        if (why) *why = "out of memory";
        return false;
    }
}

void check_device(int32_t device, const char* name) {
    if (device != -1 && device != 0)
        eagle::fail(EAGLE_BACKEND_INDEX, std::string(name) + " is " + std::to_string(device) +
                                             "; the opencl backend has only device 0 (or -1)");
}

}  // namespace eagle_opencl
