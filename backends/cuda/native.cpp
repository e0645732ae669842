// native.cpp -- the cuda kind's native layer: the driver entry points (through
// cudaGetDriverEntryPointByVersion, so nothing links libcuda), kernel-handle launches, exec-graph
// kernel rewrites and node enabling, and which groups the installed driver can serve.
#include <dlfcn.h>

#include <mutex>

#include "gpu.h"

#ifndef EAGLE_GPU_ARCHS
#define EAGLE_GPU_ARCHS ""
#endif

namespace eagle::gpu::native {
namespace {

using PFN_launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                CUstream, void**, void**);
using PFN_exec_set = CUresult (*)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*);
using PFN_graph_set = CUresult (*)(CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*);
using PFN_param_info = CUresult (*)(CUfunction, size_t, size_t*, size_t*);
using PFN_error_string = CUresult (*)(CUresult, const char**);

struct Driver {
    std::string reason;  // "" when the driver can be used
    PFN_launch launch = nullptr;
    PFN_exec_set exec_set = nullptr;
    PFN_graph_set graph_set = nullptr;
    PFN_param_info param_info = nullptr;
    PFN_error_string error_string = nullptr;
    bool has_conditional = false;
    bool has_switch = false;
    bool has_capture_to_graph = false;
    bool has_node_enable = false;
};

template <class F>
F entry(const char* name, unsigned version) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();
        return nullptr;
    }
    return reinterpret_cast<F>(fn);
}

const Driver& driver() {
    static Driver d;
    static std::once_flag once;
    std::call_once(once, [] {
        void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char* e = dlerror();
            d.reason = std::string("the NVIDIA driver (libcuda.so.1) could not be loaded: ") + (e ? e : "not found");
            return;
        }
        int drv = 0;
        if (cudaDriverGetVersion(&drv) != cudaSuccess || drv == 0) {
            (void)cudaGetLastError();
            d.reason = "the NVIDIA driver loaded but reports no version";
            return;
        }
        if (drv / 1000 < CUDART_VERSION / 1000) {
            d.reason = "the NVIDIA driver supports CUDA " + std::to_string(drv / 1000) + "." +
                       std::to_string(drv % 1000 / 10) + ", older than the CUDA " + std::to_string(CUDART_VERSION / 1000) +
                       " runtime this backend was built with";
            return;
        }
        d.launch = entry<PFN_launch>("cuLaunchKernel", 4000);
        d.exec_set = entry<PFN_exec_set>("cuGraphExecKernelNodeSetParams", 12000);
        d.graph_set = entry<PFN_graph_set>("cuGraphKernelNodeSetParams", 12000);
        d.param_info = entry<PFN_param_info>("cuFuncGetParamInfo", 12040);
        d.error_string = entry<PFN_error_string>("cuGetErrorString", 6000);
        d.has_conditional = entry<void*>("cuGraphConditionalHandleCreate", 12030) != nullptr &&
                            entry<void*>("cuGraphAddNode", 12030) != nullptr;
        d.has_switch = d.has_conditional && drv >= 12080;
        d.has_capture_to_graph = entry<void*>("cuStreamBeginCaptureToGraph", 12030) != nullptr;
        d.has_node_enable = entry<void*>("cuGraphNodeSetEnabled", 11060) != nullptr;
    });
    return d;
}

void check_cu(CUresult r, const char* what) {
    if (r == CUDA_SUCCESS) return;
    const char* msg = nullptr;
    if (driver().error_string) driver().error_string(r, &msg);
    eagle_backend_status st = EAGLE_BACKEND_ERROR;
    if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_INVALID_HANDLE) st = EAGLE_BACKEND_INVALID_ARGUMENT;
    if (r == CUDA_ERROR_NOT_SUPPORTED) st = EAGLE_BACKEND_UNSUPPORTED;
    fail(st, std::string(what) + ": CUresult " + std::to_string(static_cast<int>(r)) + ": " + (msg ? msg : "unknown"));
}

}  // namespace

std::string driver_reason() { return driver().reason; }

void launch(uint64_t function, uint32_t grid, uint32_t block, gpuStream_t s, void** args) {
    if (!driver().launch) fail(EAGLE_BACKEND_UNAVAILABLE, "the driver has no cuLaunchKernel");
    check_cu(driver().launch(reinterpret_cast<CUfunction>(static_cast<uintptr_t>(function)), grid, 1, 1, block, 1, 1, 0,
                             reinterpret_cast<CUstream>(s), args, nullptr),
             "cuLaunchKernel");
}

size_t param_size(uint64_t function, int64_t i) {
    if (!driver().param_info) return 0;
    size_t off = 0, size = 0;
    if (driver().param_info(reinterpret_cast<CUfunction>(static_cast<uintptr_t>(function)), static_cast<size_t>(i), &off,
                            &size) != CUDA_SUCCESS)
        return 0;
    return size;
}

namespace {
CUDA_KERNEL_NODE_PARAMS kernel_params(uint64_t function, uint32_t grid, uint32_t block, void** args) {
    CUDA_KERNEL_NODE_PARAMS p{};
    p.func = reinterpret_cast<CUfunction>(static_cast<uintptr_t>(function));
    p.gridDimX = grid;
    p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = block;
    p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = args;
    return p;
}
}  // namespace

void exec_set_kernel(gpuGraphExec_t exec, gpuGraphNode_t node, uint64_t function, uint32_t grid, uint32_t block,
                     void** args) {
    if (!driver().exec_set) fail(EAGLE_BACKEND_UNSUPPORTED, "the driver has no cuGraphExecKernelNodeSetParams");
    const CUDA_KERNEL_NODE_PARAMS p = kernel_params(function, grid, block, args);
    check_cu(driver().exec_set(reinterpret_cast<CUgraphExec>(exec), reinterpret_cast<CUgraphNode>(node), &p),
             "cuGraphExecKernelNodeSetParams");
}

int graph_set_kernel(gpuGraphNode_t node, uint64_t function, uint32_t grid, uint32_t block, void** args) noexcept {
    if (!driver().graph_set) return static_cast<int>(CUDA_ERROR_NOT_SUPPORTED);
    const CUDA_KERNEL_NODE_PARAMS p = kernel_params(function, grid, block, args);
    return static_cast<int>(driver().graph_set(reinterpret_cast<CUgraphNode>(node), &p));
}

void exec_set_enabled(gpuGraphExec_t exec, gpuGraphNode_t node, bool enabled) {
    if (!driver().has_node_enable) fail(EAGLE_BACKEND_UNSUPPORTED, "the driver cannot enable or disable graph nodes");
    check(cudaGraphNodeSetEnabled(exec, node, enabled ? 1u : 0u), "graphNodeSetEnabled");
}

bool keep_context(int device) noexcept {
    using PFN_device_get = CUresult (*)(CUdevice*, int);
    using PFN_retain = CUresult (*)(CUcontext*, CUdevice);
    const auto device_get = entry<PFN_device_get>("cuDeviceGet", 2000);
    const auto retain = entry<PFN_retain>("cuDevicePrimaryCtxRetain", 7000);
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    return device_get && retain && device_get(&dev, device) == CUDA_SUCCESS && retain(&ctx, dev) == CUDA_SUCCESS;
}

uint64_t capabilities() {
    uint64_t bits = EAGLE_BACKEND_CAP_STREAM | EAGLE_BACKEND_CAP_CAPTURER | EAGLE_BACKEND_CAP_CAPTURED |
                    EAGLE_BACKEND_CAP_FORK | EAGLE_BACKEND_CAP_CONDITIONAL | EAGLE_BACKEND_CAP_ATTRIBUTION |
                    EAGLE_BACKEND_CAP_GRAPH | EAGLE_BACKEND_CAP_LAUNCHER | EAGLE_BACKEND_CAP_EXEC |
                    EAGLE_BACKEND_CAP_DEVICE | EAGLE_BACKEND_CAP_INTEROP | EAGLE_BACKEND_CAP_FILTERING;
    const Driver& d = driver();
    if (!d.reason.empty()) return bits;  // nothing to judge: probe says why nothing runs
    if (!d.has_conditional || !d.has_capture_to_graph) bits &= ~EAGLE_BACKEND_CAP_CONDITIONAL;
    if (!d.launch) bits &= ~EAGLE_BACKEND_CAP_EXEC;
    if (!d.exec_set) bits &= ~EAGLE_BACKEND_CAP_LAUNCHER;
    return bits;
}

bool has_switch() { return driver().has_switch; }

std::string left_out() {
    const Driver& d = driver();
    if (!d.reason.empty()) return {};
    std::string note;
    if (!d.has_conditional || !d.has_capture_to_graph)
        note += "conditional: the installed driver lacks conditional graph nodes (CUDA >= 12.3 needed)\n";
    if (!d.has_switch) note += "eagle_backend_conditional_begin_case: the installed driver lacks SWITCH nodes (CUDA >= 12.8)\n";
    if (!d.launch) note += "exec: the driver has no cuLaunchKernel entry point\n";
    if (!d.exec_set) note += "launcher: the driver cannot update exec-graph kernel nodes\n";
    return note;
}

// ---------------------------------------------------------------- minor 7: NVRTC and modules

const RtcNames& rtc() {
    static const char* const libraries[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", nullptr};
    static const char* const directories[] = {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
                                              "/usr/local/cuda/targets/sbsa-linux/lib", nullptr};
    static const RtcNames n{"NVRTC (libnvrtc.so.13 or libnvrtc.so.12)",
                            "install the CUDA toolkit, or `pip install nvidia-cuda-nvrtc` (eagle's cuda extra); "
                            "nvcc is not needed",
                            libraries, directories, "nvrtc", "GetCUBINSize", "GetCUBIN"};
    return n;
}

std::vector<std::string> rtc_options(int device, FpMode mode) {
    int major = 0, minor = 0;
    check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "deviceGetAttribute");
    check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "deviceGetAttribute");
    std::vector<std::string> o = {"--gpu-architecture=sm_" + std::to_string(major) + std::to_string(minor),
                                  "-std=c++17"};
    switch (mode) {
        case FpMode::fast: o.emplace_back("--use_fast_math"); break;
        case FpMode::contract:  // NVRTC's own default, spelled out
            o.insert(o.end(), {"--fmad=true", "--prec-div=true", "--prec-sqrt=true", "--ftz=false"});
            break;
        case FpMode::exact:
            o.insert(o.end(), {"--fmad=false", "--prec-div=true", "--prec-sqrt=true", "--ftz=false"});
            break;
    }
    return o;
}

namespace {
struct ModuleDriver {
    CUresult (*load)(CUmodule*, const void*, unsigned, CUjit_option*, void**) = nullptr;
    CUresult (*function)(CUfunction*, CUmodule, const char*) = nullptr;
    CUresult (*unload)(CUmodule) = nullptr;
    CUresult (*count)(unsigned*, CUmodule) = nullptr;                  // CUDA >= 12.4
    CUresult (*enumerate)(CUfunction*, unsigned, CUmodule) = nullptr;  // CUDA >= 12.4
    CUresult (*name)(const char**, CUfunction) = nullptr;              // CUDA >= 12.3
    CUresult (*func_load)(CUfunction) = nullptr;                       // CUDA >= 12.4
};
const ModuleDriver& module_driver() {
    static ModuleDriver m;
    static std::once_flag once;
    std::call_once(once, [] {
        if (!driver().reason.empty()) return;
        m.load = entry<decltype(m.load)>("cuModuleLoadDataEx", 2010);
        m.function = entry<decltype(m.function)>("cuModuleGetFunction", 2000);
        m.unload = entry<decltype(m.unload)>("cuModuleUnload", 2000);
        m.count = entry<decltype(m.count)>("cuModuleGetFunctionCount", 12040);
        m.enumerate = entry<decltype(m.enumerate)>("cuModuleEnumerateFunctions", 12040);
        m.name = entry<decltype(m.name)>("cuFuncGetName", 12030);
        m.func_load = entry<decltype(m.func_load)>("cuFuncLoad", 12040);
    });
    return m;
}
}  // namespace

// Every kernel of `mod` (none where the driver cannot enumerate them: before CUDA 12.4).
static std::vector<CUfunction> functions_of(const ModuleDriver& m, CUmodule mod) {
    unsigned n = 0;
    if (!m.count || !m.enumerate || m.count(&n, mod) != CUDA_SUCCESS || n == 0) return {};
    std::vector<CUfunction> fs(n);
    if (m.enumerate(fs.data(), n, mod) != CUDA_SUCCESS) return {};
    return fs;
}

// Loads every kernel of `mod` onto the device now. Under lazy loading (CUDA_MODULE_LOADING=LAZY,
// the driver's default since 12.2) a kernel is loaded at its first launch, and that load waits
// behind work already running on the device: after Ctrl-C of a kernel that never ends, the first
// launch of another kernel of an earlier module never ran (H200, benchmarks/diag/cuda_interrupt.py).
// Loaded here, a launch needs nothing but its stream. Drivers before 12.4 load as they do.
static void load_every_function(const ModuleDriver& m, CUmodule mod) {
    if (!m.func_load) return;
    for (CUfunction f : functions_of(m, mod)) (void)m.func_load(f);  // a failed load shows at the launch
}

void* module_load(const void* image, size_t, std::string& log) {
    const ModuleDriver& m = module_driver();
    if (!m.load || !m.function || !m.unload)
        fail(EAGLE_BACKEND_UNAVAILABLE, driver().reason.empty() ? std::string("the driver has no cuModuleLoadDataEx")
                                                                : driver().reason);
    (void)cudaFree(nullptr);  // the runtime makes the device's primary context current on this thread
    char error_log[8192] = {0};
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {error_log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof error_log - 1))};
    CUmodule mod = nullptr;
    CUresult r = m.load(&mod, image, 2, opts, values);
    if (r != CUDA_SUCCESS) {
        const char* msg = nullptr;
        if (driver().error_string) driver().error_string(r, &msg);
        log = std::string("cuModuleLoadDataEx: CUresult ") + std::to_string(static_cast<int>(r)) + ": " +
              (msg ? msg : "unknown") + "\n" + error_log;
        return nullptr;
    }
    load_every_function(m, mod);
    return mod;
}

uint64_t module_function(void* module, const char* name) {
    CUfunction f = nullptr;
    if (module_driver().function(&f, static_cast<CUmodule>(module), name) != CUDA_SUCCESS) return 0;
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(f));
}

std::vector<std::pair<std::string, uint64_t>> module_functions(void* module) {
    std::vector<std::pair<std::string, uint64_t>> out;
    const ModuleDriver& m = module_driver();
    if (!m.name) return out;
    for (CUfunction f : functions_of(m, static_cast<CUmodule>(module))) {
        const char* name = nullptr;
        if (m.name(&name, f) == CUDA_SUCCESS && name)
            out.emplace_back(name, static_cast<uint64_t>(reinterpret_cast<uintptr_t>(f)));
    }
    return out;
}

void module_unload(void* module) {
    if (module && module_driver().unload) module_driver().unload(static_cast<CUmodule>(module));
}

const char* archs() { return EAGLE_GPU_ARCHS; }

int runtime_version() { return CUDART_VERSION; }

}  // namespace eagle::gpu::native
