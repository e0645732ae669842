// Group filtering (bit 12) of the opencl backend: compact_device as one OpenCL C kernel enqueued on
// the stream (no host read, no allocation). It runs as a single work-item that walks the mask in
// order, which is exactly numpy.flatnonzero's order; a parallel two-pass scan is future work.
// The kernel is built once, on the first compaction. reorder_device is not provided.
#include "common.h"

namespace {
const char* kSource = R"CL(
__kernel void eagle_opencl_compact(ulong mask_a, ulong map_a, ulong count_a, long n, uint drop,
                                   ulong live_a, ulong span_a, ulong fire_a, float theta) {
    const __global uchar* mask = (const __global uchar*)mask_a;
    __global int* map = (__global int*)map_a;
    uint k = 0;
    for (long i = 0; i < n; ++i)
        if ((mask[i] != 0) != (drop != 0)) map[k++] = (int)i;
    *(__global uint*)count_a = k;
    if (live_a) *(__global uint*)live_a = k;
    if (fire_a && span_a) {
        const uint span = *(__global const uint*)span_a;
        *(__global uint*)fire_a = (k < span && (float)k <= theta * (float)span) ? 1u : 0u;
    }
}
)CL";

std::mutex g_mu;
cl_kernel g_kernel = nullptr;  // built once; lives as long as the process

cl_kernel compact_kernel() {
    if (g_kernel) return g_kernel;
    auto& rt = eagle_opencl::runtime();
    cl_int err = CL_SUCCESS;
    cl_program prog = clCreateProgramWithSource(rt.context, 1, &kSource, nullptr, &err);
    eagle_opencl::cl_check(err, "clCreateProgramWithSource (compaction)");
    err = clBuildProgram(prog, 1, &rt.device, "", nullptr, nullptr);
    if (err != CL_SUCCESS) {
        clReleaseProgram(prog);
        eagle_opencl::cl_check(err, "clBuildProgram (compaction)", EAGLE_BACKEND_UNAVAILABLE);
    }
    g_kernel = clCreateKernel(prog, "eagle_opencl_compact", &err);
    clReleaseProgram(prog);  // the kernel keeps it
    eagle_opencl::cl_check(err, "clCreateKernel (compaction)");
    return g_kernel;
}
}  // namespace

using namespace eagle_opencl;

EAGLE_EXPORT eagle_backend_status eagle_backend_compact_device(struct eagle_backend_compact_desc* desc) {
    return eagle::guarded("eagle_backend_compact_device", [&] {
        auto d = eagle::read_desc(desc, "desc");
        eagle::check_flags(d.flags, EAGLE_BACKEND_COMPACT_MASK_IS_DROP, "desc->flags");
        check_device(d.device, "desc->device");
        eagle::check_sample_count(d.n, "desc->n");
        Stream& s = stream_of_raw(d.stream, "desc->stream");
        if (eagle::scratch_query_or_check(desc, d, 16, "compaction")) return;  // the scratch is not used
        if (!d.count) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->count is 0");
        if (d.n > 0 && !d.mask) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->mask is 0");
        if (d.n > 0 && !d.index_map) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->index_map is 0");
        if (d.fire && d.span && !(d.theta > 0.0f && d.theta <= 1.0f))
            eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->theta must be in (0, 1] when fire is given");
        const std::vector<void*> svm = live_allocations();
        std::lock_guard<std::mutex> lock(g_mu);
        cl_kernel k = compact_kernel();
        const cl_ulong addrs[3] = {d.mask, d.index_map, d.count};
        const cl_ulong trig[3] = {d.live32, d.span, d.fire};
        const cl_long n = d.n;
        const cl_uint drop = (d.flags & EAGLE_BACKEND_COMPACT_MASK_IS_DROP) ? 1u : 0u;
        const cl_float theta = d.theta;
        cl_int err = CL_SUCCESS;
        for (cl_uint a = 0; a < 3; ++a) err |= clSetKernelArg(k, a, 8, &addrs[a]);
        err |= clSetKernelArg(k, 3, 8, &n);
        err |= clSetKernelArg(k, 4, 4, &drop);
        for (cl_uint a = 0; a < 3; ++a) err |= clSetKernelArg(k, 5 + a, 8, &trig[a]);
        err |= clSetKernelArg(k, 8, 4, &theta);
        cl_check(err, "clSetKernelArg (compaction)");
        cl_check(clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_SVM_PTRS, svm.size() * sizeof(void*),
                                     svm.empty() ? nullptr : svm.data()),
                 "clSetKernelExecInfo(SVM_PTRS)");
        const size_t one = 1;
        cl_check(clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &one, &one, 0, nullptr, nullptr),
                 "clEnqueueNDRangeKernel (compaction)");
    });
}
