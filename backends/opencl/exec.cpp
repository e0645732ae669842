// Group exec (bit 9) of the opencl backend: run_device is one clEnqueueNDRangeKernel of
// desc->count work-items (rounded up to whole work-groups of desc->block when one is asked for;
// kernel.h's entries guard their lane). The kernel receives its nparams arguments, then
// (long base, long count, long n_samples). An argument is set as its bytes (param_sizes, 8 when
// NULL; a narrower value for an 8-byte argument is zero-extended), or with clSetKernelArgSVMPointer where the kernel declares it a __global or __constant
// pointer. Device addresses that arrive as integers are made known to the kernel through
// CL_KERNEL_EXEC_INFO_SVM_PTRS (every live allocation). Under capture the launch is recorded, its
// arguments as they are now (Target, recording.h), and runs at every replay.
#include "common.h"

using namespace eagle_opencl;

EAGLE_EXPORT eagle_backend_status eagle_backend_run_device(const struct eagle_backend_launch_desc* desc,
                                                           int32_t* launched) {
    return eagle::guarded("eagle_backend_run_device", [&] {
        const auto d = eagle::read_desc(desc, "desc");
        eagle::require(launched, "launched");
        eagle::check_flags(d.flags, 0, "desc->flags");
        check_device(d.device, "desc->device");
        if (d.nparams < 0 || d.nparams > 64)
            eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->nparams is " + std::to_string(d.nparams) + "; it must be 0..64");
        if (d.nparams > 0) eagle::require(d.params, "desc->params");
        eagle::check_partition(d.base, d.count, d.n_samples, "desc");
        stream_of_raw(d.stream, "desc->stream");  // checked now, ordered (enqueue_stream) once there is work
        Kernel& k = kernel_of(d.function, "desc->function");
        if (static_cast<int64_t>(k.nargs) != d.nparams + 3)
            eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT,
                        "desc->nparams is " + std::to_string(d.nparams) + " but the kernel takes " +
                            std::to_string(k.nargs) + " arguments (nparams + 3: base, count, n_samples)");
        for (int64_t a = 0; a < d.nparams; ++a) {
            if (!d.params[a]) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->params[" + std::to_string(a) + "] is 0");
            if (d.param_sizes && (d.param_sizes[a] == 0 || d.param_sizes[a] > 4096))
                eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->param_sizes[" + std::to_string(a) + "] is " +
                                                                std::to_string(d.param_sizes[a]));
        }
        *launched = 0;
        if (d.count == 0) return;
        Target t(d.stream, "desc->stream", Node::Kind::Kernel);  // enqueued, or recorded under capture
        size_t global = static_cast<size_t>(d.count), local = d.block;
        if (local) global = (global + local - 1) / local * local;
        std::lock_guard<std::mutex> lock(k.mu);
        for (int64_t a = 0; a < d.nparams; ++a) {
            const void* storage = reinterpret_cast<const void*>(d.params[a]);
            cl_int err;
            if (k.svm_arg[a]) {
                uint64_t addr = 0;
                std::memcpy(&addr, storage, 8);
                err = clSetKernelArgSVMPointer(k.kernel, static_cast<cl_uint>(a), reinterpret_cast<void*>(addr));
            } else {
                const size_t size = d.param_sizes ? d.param_sizes[a] : 8;
                err = clSetKernelArg(k.kernel, static_cast<cl_uint>(a), size, storage);
                if (err == CL_INVALID_ARG_SIZE && size < 8) {
                    // a narrower value (a numpy scalar) for an 8-byte argument (kernel.h takes every
                    // argument as ulong): zero-extended, as the cpu kind reads it from its slot
                    uint64_t wide = 0;
                    std::memcpy(&wide, storage, size);
                    err = clSetKernelArg(k.kernel, static_cast<cl_uint>(a), 8, &wide);
                }
            }
            if (err != CL_SUCCESS)
                eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT,
                            cl_error(err, ("clSetKernelArg " + std::to_string(a) + " (" +
                                           std::to_string(d.param_sizes ? d.param_sizes[a] : 8) + " bytes)").c_str()));
        }
        const cl_long triple[3] = {d.base, d.count, d.n_samples};
        for (int t = 0; t < 3; ++t)
            cl_check(clSetKernelArg(k.kernel, static_cast<cl_uint>(d.nparams + t), 8, &triple[t]), "clSetKernelArg",
                     EAGLE_BACKEND_INVALID_ARGUMENT);
        t.kernel(k.kernel, global, local, d.base == 0 && d.count == d.n_samples, static_cast<cl_uint>(d.nparams));
        t.commit();
        *launched = 1;
    });
}
