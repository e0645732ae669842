// exec.cpp -- run_device (bit 9): one launch of the kind's kernel handle over one partition, with
// the partition triple (int64 base, count, n_samples) appended to the arguments.
#include <cstring>

#include "gpu.h"

using namespace eagle;
using namespace eagle::gpu;

EAGLE_EXPORT eagle_backend_status eagle_backend_run_device(const struct eagle_backend_launch_desc* desc,
                                                           int32_t* launched) {
    return guarded("eagle_backend_run_device", [&] {
        auto d = read_desc(desc, "desc");
        require(launched, "launched");
        *launched = 0;
        check_flags(d.flags, 0, "launch desc->flags");
        if (d.nparams < 0 || d.nparams > 64)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "nparams " + std::to_string(d.nparams) + " (0..64)");
        if (d.nparams > 0 && !d.params) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "params is NULL with nparams > 0");
        check_partition(d.base, d.count, d.n_samples, "desc");
        if (!d.function) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "function is 0");
        if (d.count == 0) return;
        const uint32_t block = d.block ? d.block : 256;
        const int64_t grid = (d.count + block - 1) / block;
        if (grid > INT32_MAX) fail(EAGLE_BACKEND_UNSUPPORTED, "count needs more than 2^31-1 blocks");
        const int dev = resolve_device(d.device, d.stream, true);
        DeviceGuard guard(dev);

        // Argument storage: every parameter's bytes, then the triple, each aligned to 8 (16 for 16-byte args).
        auto rec = std::make_shared<KernelRecord>();
        rec->function = d.function;
        rec->block = block;
        rec->base = d.base;
        rec->count = d.count;
        rec->n_samples = d.n_samples;
        size_t off = 0;
        std::vector<size_t> sizes(d.nparams + 3, 8);
        for (int64_t i = 0; i < d.nparams; ++i) {
            size_t sz = d.param_sizes ? d.param_sizes[i] : native::param_size(d.function, i);
            if (sz == 0) sz = 8;
            if (sz > 4096) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "param_sizes[" + std::to_string(i) + "] is too large");
            if (!d.params[i]) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "params[" + std::to_string(i) + "] is 0");
            sizes[i] = sz;
        }
        for (size_t i = 0; i < sizes.size(); ++i) {
            const size_t align = sizes[i] >= 16 ? 16 : 8;
            off = (off + align - 1) / align * align;
            rec->offsets.push_back(static_cast<uint32_t>(off));
            off += sizes[i];
        }
        rec->storage.assign(off + 16, 0);
        for (int64_t i = 0; i < d.nparams; ++i)
            std::memcpy(rec->storage.data() + rec->offsets[i], reinterpret_cast<const void*>(d.params[i]), sizes[i]);
        const int64_t triple[3] = {d.base, d.count, d.n_samples};
        for (int k = 0; k < 3; ++k) std::memcpy(rec->storage.data() + rec->offsets[d.nparams + k], &triple[k], 8);
        std::vector<void*> args(sizes.size());
        for (size_t i = 0; i < sizes.size(); ++i) args[i] = rec->storage.data() + rec->offsets[i];

        gpuStream_t s = as_stream(d.stream);
        native::launch(d.function, static_cast<uint32_t>(grid), block, s, args.data());
        *launched = 1;
        if (s) {
            CaptureInfo ci = capture_info(s);
            if (ci.status == gpuStreamCaptureStatusActive && ci.deps.size() == 1) {
                record_kernel(ci.deps[0], rec);
#if !defined(EAGLE_GPU_HIP)
                offer_kernel_fold(s, ci.deps[0], rec, dev);
#endif
            }
        }
    });
}
