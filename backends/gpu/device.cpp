// device.cpp -- device properties (bit 10) from device attributes.
#include <cstring>

#include "gpu.h"

using namespace eagle;
using namespace eagle::gpu;

namespace {
int attr(int device, int which) {
    int v = 0;
    if (gpuDeviceGetAttribute(&v, static_cast<gpuDeviceAttr>(which), device) != gpuSuccess) {
        (void)gpuGetLastError();
        return 0;
    }
    return v;
}

// FP32 and FP64 lanes per multiprocessor by architecture (0 when unknown).
void lanes_per_sm(int major, int minor, int* sp, int* dp) {
#if defined(EAGLE_GPU_HIP)
    (void)minor;
    // CDNA (gfx90a, gfx94x): 64 lanes x 2 (packed FP32) and full-rate FP64; others: 64 / 1:16.
    if (major == 9) { *sp = 128; *dp = 128; } else { *sp = 64; *dp = 4; }
#else
    if (major == 9 || major == 10) { *sp = 128; *dp = 64; }
    else if (major == 8 && minor == 0) { *sp = 64; *dp = 32; }
    else if (major == 8 || major == 12) { *sp = 128; *dp = 2; }
    else if (major == 7 && minor == 0) { *sp = 64; *dp = 32; }
    else if (major == 7) { *sp = 64; *dp = 2; }
    else if (major == 6 && minor == 0) { *sp = 64; *dp = 32; }
    else { *sp = 128; *dp = 4; }
#endif
}
}  // namespace

EAGLE_EXPORT eagle_backend_status eagle_backend_device_props(int32_t device, struct eagle_backend_device_props* props) {
    return guarded("eagle_backend_device_props", [&] {
        require(props, "props");
        const int n = device_count();
        if (device < 0 || device >= n)
            fail(EAGLE_BACKEND_INDEX, "device " + std::to_string(device) + " does not exist (" + std::to_string(n) + " devices)");
        struct eagle_backend_device_props p{};
        p.device = device;
#if defined(EAGLE_GPU_HIP)
        char name[256] = {0};
        check(hipDeviceGetName(name, sizeof name - 1, device), "deviceGetName");
        copy_string(p.name, name);
        p.cc_major = attr(device, hipDeviceAttributeComputeCapabilityMajor);
        p.cc_minor = attr(device, hipDeviceAttributeComputeCapabilityMinor);
        p.sm_count = attr(device, hipDeviceAttributeMultiprocessorCount);
        p.clock_rate_khz = attr(device, hipDeviceAttributeClockRate);
        p.memory_clock_rate_khz = attr(device, hipDeviceAttributeMemoryClockRate);
        p.memory_bus_width_bits = attr(device, hipDeviceAttributeMemoryBusWidth);
        p.regs_per_block = attr(device, hipDeviceAttributeMaxRegistersPerBlock);
        p.regs_per_sm = attr(device, hipDeviceAttributeMaxRegistersPerMultiprocessor);
        p.warp_size = attr(device, hipDeviceAttributeWarpSize);
        p.shared_mem_per_block = attr(device, hipDeviceAttributeMaxSharedMemoryPerBlock);
        p.shared_mem_per_sm = attr(device, hipDeviceAttributeMaxSharedMemoryPerMultiprocessor);
#else
        char name[256] = {0};
        cudaDeviceProp dp{};
        check(cudaGetDeviceProperties(&dp, device), "getDeviceProperties");
        std::memcpy(name, dp.name, sizeof dp.name < sizeof name ? sizeof dp.name : sizeof name - 1);
        copy_string(p.name, name);
        p.cc_major = attr(device, cudaDevAttrComputeCapabilityMajor);
        p.cc_minor = attr(device, cudaDevAttrComputeCapabilityMinor);
        p.sm_count = attr(device, cudaDevAttrMultiProcessorCount);
        p.clock_rate_khz = attr(device, cudaDevAttrClockRate);
        p.memory_clock_rate_khz = attr(device, cudaDevAttrMemoryClockRate);
        p.memory_bus_width_bits = attr(device, cudaDevAttrGlobalMemoryBusWidth);
        p.regs_per_block = attr(device, cudaDevAttrMaxRegistersPerBlock);
        p.regs_per_sm = attr(device, cudaDevAttrMaxRegistersPerMultiprocessor);
        p.warp_size = attr(device, cudaDevAttrWarpSize);
        p.shared_mem_per_block = attr(device, cudaDevAttrMaxSharedMemoryPerBlockOptin);
        p.shared_mem_per_sm = attr(device, cudaDevAttrMaxSharedMemoryPerMultiprocessor);
#endif
        // Double data rate: two transfers per memory clock over the bus.
        p.peak_bytes_per_s = 2.0 * p.memory_clock_rate_khz * 1e3 * (p.memory_bus_width_bits / 8.0);
        int sp = 0, dpl = 0;
        lanes_per_sm(p.cc_major, p.cc_minor, &sp, &dpl);
        const double hz = p.clock_rate_khz * 1e3;
        p.peak_flops_sp = 2.0 * sp * p.sm_count * hz;  // one FMA = 2 flops
        p.peak_flops_dp = 2.0 * dpl * p.sm_count * hz;
        p.fp64_ratio = p.peak_flops_sp > 0 ? p.peak_flops_dp / p.peak_flops_sp : 0;
        p.ridge_flops_per_byte_sp = p.peak_bytes_per_s > 0 ? p.peak_flops_sp / p.peak_bytes_per_s : 0;
        p.ridge_flops_per_byte_dp = p.peak_bytes_per_s > 0 ? p.peak_flops_dp / p.peak_bytes_per_s : 0;
        write_out(props, p, "props");
    });
}
