// Group exec (bit 9): run_device calls a C function pointer once per chunk of lanes over the thread pool.
#include <algorithm>
#include <cstring>

#include "runtime.h"
#include "thread_pool.h"

using namespace eagle;
using namespace eagle::cpu;

namespace eagle::cpu {

namespace {
constexpr size_t kArgAlign = 16;
constexpr int64_t kMaxArgBytes = int64_t(1) << 20;
// Lanes are handed out in chunks from an atomic counter (the pool's parallel_for), so lanes of very
// uneven cost (samples that stop after 1 or 999 steps, the dead lanes past an ActiveSet's live
// count) balance over the threads. A launch has about kChunksPerLaunch chunks of at least kMinChunk
// lanes: small enough to balance on many cores, large enough that the counter and the call cost
// little next to a chunk. Chunk boundaries depend on count (and block) only, never on the thread
// count or the timing, so a kernel's calls are the same on every host. The stream's thread runs
// chunks alone for the first ~20 us (ThreadPool::parallel_for); a short launch wakes no worker.
constexpr int64_t kChunksPerLaunch = 1024;
constexpr int64_t kMinChunk = 128;
}  // namespace

KernelNode::KernelNode(Fn fn, const uint64_t* params, const uint64_t* sizes, int64_t nparams, int64_t base,
                       int64_t count, int64_t n_samples, uint32_t block)
    : Node(Type::Kernel), fn_(fn), base_(base), count_(count), n_samples_(n_samples), block_(block) {
    std::vector<size_t> offsets;
    size_t total = 0;
    for (int64_t i = 0; i < nparams; ++i) {
        const size_t sz = sizes ? static_cast<size_t>(sizes[i]) : 8u;
        offsets.push_back(total);
        total += (sz + kArgAlign - 1) / kArgAlign * kArgAlign;
    }
    storage_.resize(total ? total : 1);
    for (int64_t i = 0; i < nparams; ++i) {
        const size_t sz = sizes ? static_cast<size_t>(sizes[i]) : 8u;
        std::memcpy(storage_.data() + offsets[i], reinterpret_cast<const void*>(params[i]), sz);
        args_.push_back(storage_.data() + offsets[i]);
    }
    if (args_.empty()) args_.push_back(nullptr);
}

void KernelNode::run(const RunSettings* rs) const {
    int64_t base = base_, count = count_, n = n_samples_;
    if (rs && rs->logical_size >= 0 && base_ == 0 && count_ == n_samples_) count = n = rs->logical_size;
    if (count <= 0) return;
    const int64_t chunk = block_ ? int64_t(block_)
                                 : std::max(kMinChunk, (count + kChunksPerLaunch - 1) / kChunksPerLaunch);
    const int64_t nchunks = (count + chunk - 1) / chunk;
    void* const* args = args_.data();
    const Fn fn = fn_;
    auto run_chunk = [&](int64_t c) {
        const int64_t b = c * chunk;
        fn(args, base + b, std::min(chunk, count - b), n);
    };
    if (nchunks == 1) {
        run_chunk(0);
        return;
    }
    ThreadPool::instance().parallel_for(nchunks, run_chunk);
}

}  // namespace eagle::cpu

EAGLE_EXPORT eagle_backend_status eagle_backend_run_device(const eagle_backend_launch_desc* desc, int32_t* launched) {
    return guarded("eagle_backend_run_device", [&] {
        const auto d = read_desc(desc, "desc");
        require(launched, "launched");
        check_flags(d.flags, 0, "desc->flags");
        check_device(d.device, "desc->device");
        if (d.nparams < 0 || d.nparams > 64)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->nparams is " + std::to_string(d.nparams) + " (0..64)");
        if (d.nparams > 0 && !d.params) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->params is NULL");
        for (int64_t i = 0; i < d.nparams; ++i) {
            const uint64_t sz = d.param_sizes ? d.param_sizes[i] : 8u;
            if (sz == 0 || sz > uint64_t(kMaxArgBytes))
                fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->param_sizes[" + std::to_string(i) + "] is " +
                                                         std::to_string(sz) + " (1..2^20)");
            if (!d.params[i])
                fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->params[" + std::to_string(i) + "] is 0");
        }
        check_partition(d.base, d.count, d.n_samples, "desc");
        if (d.count > 0 && !d.function) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->function is 0");
        auto s = resolve_stream(d.stream, "desc->stream");
        if (d.count == 0) {
            *launched = 0;
            return;
        }
        auto node = std::make_shared<KernelNode>(reinterpret_cast<KernelNode::Fn>(d.function), d.params,
                                                 d.param_sizes, d.nparams, d.base, d.count, d.n_samples, d.block);
        submit(*s, std::move(node));
        *launched = 1;
    });
}
