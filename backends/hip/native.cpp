// native.cpp -- the hip kind's native layer (HIP 5.2): hipFunction_t launches, exec-graph kernel
// rewrites; no conditional nodes (the bit stays clear) and no node enabling (arrived in ROCm 5.5).
#include "gpu.h"

#ifndef EAGLE_GPU_ARCHS
#define EAGLE_GPU_ARCHS ""
#endif

namespace eagle::gpu::native {

std::string driver_reason() { return {}; }  // hipGetDeviceCount gives HIP's own reason

void launch(uint64_t function, uint32_t grid, uint32_t block, gpuStream_t s, void** args) {
    check(hipModuleLaunchKernel(reinterpret_cast<hipFunction_t>(static_cast<uintptr_t>(function)), grid, 1, 1, block, 1,
                                1, 0, s, args, nullptr),
          "hipModuleLaunchKernel");
}

size_t param_size(uint64_t, int64_t) { return 0; }  // HIP 5.2 cannot tell: 8 bytes are assumed

void exec_set_kernel(gpuGraphExec_t exec, gpuGraphNode_t node, uint64_t function, uint32_t grid, uint32_t block,
                     void** args) {
    hipKernelNodeParams p{};
    p.func = reinterpret_cast<void*>(static_cast<uintptr_t>(function));
    p.gridDim = dim3(grid, 1, 1);
    p.blockDim = dim3(block, 1, 1);
    p.kernelParams = args;
    check(hipGraphExecKernelNodeSetParams(exec, node, &p), "hipGraphExecKernelNodeSetParams");
}

void exec_set_enabled(gpuGraphExec_t, gpuGraphNode_t, bool) {
    fail(EAGLE_BACKEND_UNSUPPORTED,
         "graph node enabling arrived in ROCm 5.5; this hip backend is built against HIP 5.2, which cannot toggle nodes");
}

// Not done on hip: HIP's teardown with a replay still running has never been observed (no AMD GPU
// here), and hipDevicePrimaryCtxRetain is deprecated. The process may then wait at exit for work
// that never ends.
bool keep_context(int) noexcept { return false; }

uint64_t capabilities() {
    return EAGLE_BACKEND_CAP_STREAM | EAGLE_BACKEND_CAP_CAPTURER | EAGLE_BACKEND_CAP_CAPTURED | EAGLE_BACKEND_CAP_FORK |
           EAGLE_BACKEND_CAP_ATTRIBUTION | EAGLE_BACKEND_CAP_GRAPH | EAGLE_BACKEND_CAP_LAUNCHER |
           EAGLE_BACKEND_CAP_EXEC | EAGLE_BACKEND_CAP_DEVICE | EAGLE_BACKEND_CAP_INTEROP | EAGLE_BACKEND_CAP_FILTERING;
}

std::string left_out() {
    return "conditional: HIP 5.2 has no conditional graph nodes (IF/WHILE/SWITCH); eagle decides on the host\n"
           "eagle_backend_conditional_begin_case: HIP 5.2 has no conditional graph nodes, so no SWITCH\n"
           "launcher_set_node_enabled: node enabling arrived in ROCm 5.5; on HIP 5.2 it answers UNSUPPORTED";
}

void conditional_bodies(gpuGraphNode_t, std::vector<gpuGraph_t>&) {}
void forget_node(gpuGraphNode_t) {}

// ---------------------------------------------------------------- minor 7: hiprtc and modules

const RtcNames& rtc() {
    static const char* const libraries[] = {"libhiprtc.so.6", "libhiprtc.so.5", "libhiprtc.so", nullptr};
    static const char* const directories[] = {"/opt/rocm/lib", "/usr/lib/x86_64-linux-gnu", nullptr};
    static const RtcNames n{"hiprtc (libhiprtc.so)",
                            "install ROCm's hiprtc (Debian: apt-get install libhiprtc-dev; ROCm: the rocm-hip-runtime "
                            "package)",
                            libraries, directories, "hiprtc", "GetCodeSize", "GetCode"};
    return n;
}

std::vector<std::string> rtc_options(int device, FpMode mode) {
    hipDeviceProp_t p{};
    check(hipGetDeviceProperties(&p, device), "hipGetDeviceProperties");
    std::string arch = p.gcnArchName;
    std::vector<std::string> o = {"--offload-arch=" + arch.substr(0, arch.find(':')), "-std=c++17", "-O3"};
    switch (mode) {
        case FpMode::fast: o.emplace_back("-ffast-math"); break;
        case FpMode::contract:  // hipcc's default for device code
            o.insert(o.end(), {"-ffp-contract=fast", "-fno-fast-math"});
            break;
        case FpMode::exact: o.insert(o.end(), {"-ffp-contract=off", "-fno-fast-math"}); break;
    }
    return o;
}

void* module_load(const void* image, size_t, std::string& log) {
    hipModule_t mod = nullptr;
    hipError_t e = hipModuleLoadData(&mod, image);
    if (e != hipSuccess) {
        (void)hipGetLastError();
        log = std::string("hipModuleLoadData: ") + hipGetErrorName(e) + ": " + hipGetErrorString(e);
        return nullptr;
    }
    return mod;
}

uint64_t module_function(void* module, const char* name) {
    hipFunction_t f = nullptr;
    if (hipModuleGetFunction(&f, static_cast<hipModule_t>(module), name) != hipSuccess) {
        (void)hipGetLastError();
        return 0;
    }
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(f));
}

void module_unload(void* module) {
    if (module) (void)hipModuleUnload(static_cast<hipModule_t>(module));
}

const char* archs() { return EAGLE_GPU_ARCHS; }

int runtime_version() { return HIP_VERSION; }

}  // namespace eagle::gpu::native
