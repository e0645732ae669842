// Group device (bit 10) of the opencl backend: device_props from clGetDeviceInfo. OpenCL does not
// report memory bandwidth or peak rates: those figures are 0.
#include "common.h"

using namespace eagle_opencl;

EAGLE_EXPORT eagle_backend_status eagle_backend_device_props(int32_t device, struct eagle_backend_device_props* props) {
    return eagle::guarded("eagle_backend_device_props", [&] {
        eagle::require(props, "props");
        if (props->struct_size < 4) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "props->struct_size is below 4");
        check_device(device, "device");
        Runtime& rt = runtime();
        struct eagle_backend_device_props p;
        std::memset(&p, 0, sizeof p);
        p.device = 0;
        eagle::copy_string(p.name, rt.device_name + " (" + rt.platform_name + ")");
        cl_uint units = 0, clock = 0;
        cl_ulong local = 0, cache = 0;
        clGetDeviceInfo(rt.device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr);
        clGetDeviceInfo(rt.device, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof clock, &clock, nullptr);  // MHz
        clGetDeviceInfo(rt.device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, nullptr);
        clGetDeviceInfo(rt.device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof cache, &cache, nullptr);
        p.sm_count = static_cast<int32_t>(units);
        // Lanes that step together: NVIDIA's and AMD's extensions say; 1 elsewhere (PoCL on a CPU runs
        // a work-group's items as loops, as the cpu kind does).
        cl_uint warp = 0;
        if (clGetDeviceInfo(rt.device, 0x4003 /* CL_DEVICE_WARP_SIZE_NV */, sizeof warp, &warp, nullptr) != CL_SUCCESS &&
            clGetDeviceInfo(rt.device, 0x4043 /* CL_DEVICE_WAVEFRONT_WIDTH_AMD */, sizeof warp, &warp, nullptr) != CL_SUCCESS)
            warp = 1;
        p.warp_size = warp ? static_cast<int32_t>(warp) : 1;
        p.clock_rate_khz = static_cast<int32_t>(clock) * 1000;
        p.shared_mem_per_block = static_cast<int64_t>(local);
        p.shared_mem_per_sm = units ? static_cast<int64_t>(cache / units) : 0;
        eagle::write_out(props, p, "props");
    });
}
