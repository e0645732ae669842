// Raw CUDA peers for benchmarks/bench_cuda.py: the same work eagle does, written directly against
// the CUDA runtime, so that eagle's cost is measured against its anchor in one process.
// Built on the device by bench_cuda.py:  nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr
//   -I backends/gpu -shared -Xcompiler -fPIC peers.cu -o libeagle_peers.so
// (backends/gpu for eagle's compaction kernels, filtering_kernels.cuh, used by the ActiveSet peer.)
// Every function returns 0 on success or the cudaError_t, and writes its timing to *out.
#include <cuda_runtime.h>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "filtering_kernels.cuh"

#include <algorithm>
#include <string>
#include <chrono>
#include <cstdint>
#include <vector>

#define TRY(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) return (int)e_; } while (0)

// Kernels eagle launches through run_device (they take the partition triple last).
extern "C" __global__ void peer_empty(long long, long long, long long) {}
extern "C" __global__ void peer_decrement(unsigned* c, long long, long long, long long) {
    if (blockIdx.x == 0 && threadIdx.x == 0) c[0] -= 1u;
}
// The raw WHILE body: decrement and decide in one kernel.
__global__ void raw_while_body(unsigned* c, cudaGraphConditionalHandle h) {
    unsigned v = c[0] - 1u;
    c[0] = v;
    cudaGraphSetConditional(h, v != 0u ? 1u : 0u);
}
__global__ void raw_while_init(unsigned* c, unsigned n, cudaGraphConditionalHandle h) {
    c[0] = n;
    cudaGraphSetConditional(h, n != 0u ? 1u : 0u);
}
__global__ void host_loop_body(unsigned* c) { c[0] -= 1u; }
// A two-kernel raw WHILE body, as a raw-CUDA user whose step kernel does not know the handle would
// write it: the step (host_loop_body) and then this decide kernel.
__global__ void raw_while_decide(const unsigned* c, cudaGraphConditionalHandle h) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
#endif
    cudaGraphSetConditional(h, c[0] != 0u ? 1u : 0u);
}

static double now_us() {
    using namespace std::chrono;
    return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

// The ActiveSet loop's step (eagle launches it through run_device over n lanes; the raw peer
// launches the same kernel with the same grid): lane j < *count steps live sample idx[j] and drops
// it (mask 1) with probability kDropPer1024 / 1024 per step, by a hash of (sample, step): the same
// samples drop at the same steps in every run, so eagle and the peer must end bit-identical.
constexpr unsigned kDropPer1024 = 32;  // 1/32 of the live samples a step
extern "C" __global__ void peer_drop_step(const int* idx, const unsigned* count, unsigned* steps, unsigned char* mask,
                                          long long base, long long cnt, long long) {
    const long long j = base + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= base + cnt || j >= (long long)count[0]) return;
    const int i = idx[j];
    const unsigned t = steps[i] + 1u;
    steps[i] = t;
    unsigned h = (unsigned)i * 0x9E3779B1u ^ t * 0x85EBCA6Bu;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    if ((h & 1023u) < kDropPer1024) mask[i] = 1;
}

extern "C" int peer_function(const char* name, uint64_t* out) {
    cudaFunction_t f = nullptr;
    if (std::string(name) == "peer_empty") TRY(cudaGetFuncBySymbol(&f, (const void*)peer_empty));
    else if (std::string(name) == "peer_decrement") TRY(cudaGetFuncBySymbol(&f, (const void*)peer_decrement));
    else if (std::string(name) == "peer_drop_step") TRY(cudaGetFuncBySymbol(&f, (const void*)peer_drop_step));
    else return (int)cudaErrorInvalidSymbol;
    *out = (uint64_t)(uintptr_t)f;
    return 0;
}

// A one-empty-kernel graph on `stream`, instantiated; kept for the process.
static cudaGraphExec_t g_exec = nullptr;
extern "C" int peer_graph_make(uint64_t stream) {
    cudaStream_t s = (cudaStream_t)(uintptr_t)stream;
    cudaGraph_t g;
    TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    peer_empty<<<1, 1, 0, s>>>(0, 1, 1);
    TRY(cudaStreamEndCapture(s, &g));
    TRY(cudaGraphInstantiate(&g_exec, g, 0));
    TRY(cudaGraphDestroy(g));
    return 0;
}
// Enqueue cost: host time of n cudaGraphLaunch calls in a C loop (not including the sync).
extern "C" int peer_graph_launch_loop(uint64_t stream, int n, double* us_per_launch) {
    cudaStream_t s = (cudaStream_t)(uintptr_t)stream;
    double t0 = now_us();
    for (int i = 0; i < n; ++i) TRY(cudaGraphLaunch(g_exec, s));
    double t1 = now_us();
    TRY(cudaStreamSynchronize(s));
    *us_per_launch = (t1 - t0) / n;
    return 0;
}

// The seam's own cost: host time of n calls of eagle_backend_launcher_launch (its address `fn`,
// taken from eagle's cffi library object) on `launcher`, in a C loop -- no Python binding at all.
extern "C" int peer_seam_launch_loop(uint64_t fn, uint64_t launcher, uint64_t stream, int n, double* us_per_launch) {
    auto launch = reinterpret_cast<int32_t (*)(void*)>((uintptr_t)fn);
    void* l = reinterpret_cast<void*>((uintptr_t)launcher);
    double t0 = now_us();
    for (int i = 0; i < n; ++i)
        if (int32_t st = launch(l)) return 1000 + st;
    double t1 = now_us();
    TRY(cudaStreamSynchronize((cudaStream_t)(uintptr_t)stream));
    *us_per_launch = (t1 - t0) / n;
    return 0;
}

// The decide kernel doing exactly the work of eagle's WHILE setter (its parameters, its cell read
// before the wait, two stores), to tell the cost of that work from the cost of the second node.
__global__ void raw_while_decide_like_eagle(cudaGraphConditionalHandle h, const unsigned* count,
                                            const unsigned* baseline, unsigned* cell, unsigned loop_cap, int init) {
    unsigned remaining = init ? loop_cap : cell[0];
    unsigned ran = init ? 0u : cell[1];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
#endif
    const bool go = remaining > 0 && *count != (baseline ? *baseline : 0u);
    if (go) {
        remaining -= 1;
        ran += 1;
    }
    cell[0] = remaining;
    cell[1] = ran;
    cudaGraphSetConditional(h, go ? 1u : 0u);
}
// The step kernel with eagle's partition triple appended (as run_device launches it).
__global__ void host_loop_body_triple(unsigned* c, long long, long long, long long) { c[0] -= 1u; }

// A raw conditional WHILE node running `iters` iterations; returns the GPU time of one launch
// (events) divided by iters. body_kind 0: one kernel that decrements and decides; 1: a decrement
// kernel then a decide kernel (plain edge); 2: the same two kernels joined by a programmatic edge
// from the decrement's launch-completion port (what eagle's cuda backend records); 3: as 2 with the
// decide kernel doing eagle's setter work; 4: as 3 with the step kernel taking eagle's partition
// triple too (the same body as eagle's, built by hand).
extern "C" int peer_while(uint64_t stream, unsigned* d_counter, unsigned iters, int reps, int body_kind,
                          double* us_per_iter) {
    cudaStream_t s = (cudaStream_t)(uintptr_t)stream;
    cudaGraph_t g;
    TRY(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle h;
    TRY(cudaGraphConditionalHandleCreate(&h, g, 0, 0));
    // init kernel node
    cudaKernelNodeParams kp = {};
    void* init_args[] = {&d_counter, &iters, &h};
    kp.func = (void*)raw_while_init; kp.gridDim = dim3(1); kp.blockDim = dim3(1); kp.kernelParams = init_args;
    cudaGraphNode_t init;
    TRY(cudaGraphAddKernelNode(&init, g, nullptr, 0, &kp));
    cudaGraphNodeParams cp = {};
    cp.type = cudaGraphNodeTypeConditional;
    cp.conditional.handle = h;
    cp.conditional.type = cudaGraphCondTypeWhile;
    cp.conditional.size = 1;
    cudaGraphNode_t cond;
    TRY(cudaGraphAddNode(&cond, g, &init, nullptr, 1, &cp));
    cudaGraph_t body = cp.conditional.phGraph_out[0];
    void* body_args[] = {&d_counter, &h};
    void* step_args[] = {&d_counter};
    long long t0 = 0, t1 = 1, t2 = 1;
    void* step_triple_args[] = {&d_counter, &t0, &t1, &t2};
    unsigned* cell = nullptr;
    TRY(cudaMalloc(&cell, 2 * sizeof(unsigned)));
    TRY(cudaMemset(cell, 0x7f, 2 * sizeof(unsigned)));  // remaining stays > 0 for every run here
    const unsigned* no_baseline = nullptr;
    unsigned cap = 0x7f7f7f7fu;
    int not_init = 0;
    void* like_eagle_args[] = {&h, &d_counter, &no_baseline, &cell, &cap, &not_init};
    cudaGraphNode_t bn, dn;
    if (body_kind == 0) {
        kp.func = (void*)raw_while_body; kp.kernelParams = body_args;
        TRY(cudaGraphAddKernelNode(&bn, body, nullptr, 0, &kp));
    } else {
        kp.func = body_kind == 4 ? (void*)host_loop_body_triple : (void*)host_loop_body;
        kp.kernelParams = body_kind == 4 ? step_triple_args : step_args;
        TRY(cudaGraphAddKernelNode(&bn, body, nullptr, 0, &kp));
        kp.func = body_kind >= 3 ? (void*)raw_while_decide_like_eagle : (void*)raw_while_decide;
        kp.kernelParams = body_kind >= 3 ? like_eagle_args : body_args;
        TRY(cudaGraphAddKernelNode(&dn, body, nullptr, 0, &kp));
        cudaGraphEdgeData edge = {};
        if (body_kind >= 2) {
            edge.type = cudaGraphDependencyTypeProgrammatic;
            edge.from_port = cudaGraphKernelNodePortLaunchCompletion;
        }
        TRY(cudaGraphAddDependencies(body, &bn, &dn, &edge, 1));
    }
    cudaGraphExec_t ex;
    TRY(cudaGraphInstantiate(&ex, g, 0));
    cudaEvent_t a, b;
    TRY(cudaEventCreate(&a)); TRY(cudaEventCreate(&b));
    TRY(cudaGraphLaunch(ex, s));
    TRY(cudaStreamSynchronize(s));
    std::vector<float> ms;
    for (int r = 0; r < reps; ++r) {
        TRY(cudaEventRecord(a, s));
        TRY(cudaGraphLaunch(ex, s));
        TRY(cudaEventRecord(b, s));
        TRY(cudaEventSynchronize(b));
        float m; TRY(cudaEventElapsedTime(&m, a, b)); ms.push_back(m);
    }
    std::sort(ms.begin(), ms.end());
    *us_per_iter = ms[ms.size() / 2] * 1000.0 / iters;
    cudaEventDestroy(a); cudaEventDestroy(b);
    cudaGraphExecDestroy(ex); cudaGraphDestroy(g);
    cudaFree(cell);
    return 0;
}

// The ActiveSet loop as a raw-CUDA user would build it by hand, with eagle's compaction kernel:
// a compaction node (the first index map and count), an entry kernel (condition := count != 0),
// then a WHILE node whose body is two kernel nodes joined by a plain edge: peer_drop_step over n
// lanes (block 256, the grid eagle's run_device uses) and the compaction, whose last block sets the
// condition to count != 0 itself (CompactArgs::loop_set with no cell). body_kind 1: the body eagle
// recorded before the fold, three kernels: the compaction does not decide, a decide kernel
// (raw_while_decide) follows it by a programmatic edge from its launch-completion port. Before each
// timed launch the mask and steps are zeroed; returns the median GPU time of one launch (events),
// in us. The iterations a launch ran are max(steps) (the last sample to drop is stepped every
// iteration).
namespace fk = eagle::gpu::filtering;
template <int T, int I>
static const void* peer_compact_entry() { return (const void*)&fk::compact_kernel<T, I>; }
static const void* peer_compact_entry(int variant) {
    switch (variant) {
#define EAGLE_X(i, t, it) \
    case i: return peer_compact_entry<t, it>();
        EAGLE_COMPACT_VARIANTS(EAGLE_X)
#undef EAGLE_X
    }
    return nullptr;
}
__global__ void peer_while_entry(const unsigned* count, cudaGraphConditionalHandle h) {
    cudaGraphSetConditional(h, *count != 0u ? 1u : 0u);
}

extern "C" int peer_activeset_while(uint64_t stream, unsigned char* mask, unsigned* steps, int* idx, unsigned* count,
                                    int n, int body_kind, int reps, double* us_per_launch) {
    cudaStream_t s = (cudaStream_t)(uintptr_t)stream;
    const int variant = fk::select_compact_variant(n);
    const uint32_t tiles = (uint32_t)((n + fk::compact_tile(variant) - 1) / fk::compact_tile(variant));
    if (tiles == 0) return (int)cudaErrorInvalidValue;
    const size_t scratch_bytes = 256 + ((size_t)tiles * 8 + 255) / 256 * 256;
    char* scratch = nullptr;
    TRY(cudaMalloc(&scratch, scratch_bytes));
    TRY(cudaMemsetAsync(scratch, 0, scratch_bytes, s));  // the kernels' state, zero before first use
    cudaGraph_t g;
    TRY(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle h;
    TRY(cudaGraphConditionalHandleCreate(&h, g, 0, 0));
    fk::CompactArgs a{};
    a.mask = mask;
    a.out = idx;
    a.n = (uint32_t)n;
    a.flip = 0xffffu;  // MASK_IS_DROP: the index map lists mask == 0
    a.ticket = reinterpret_cast<unsigned long long*>(scratch);
    a.status = reinterpret_cast<unsigned long long*>(scratch + 256);
    a.total = count;
    a.tiles = tiles;
    fk::CompactArgs fold = a;
    fold.loop_handle = h;
    fold.loop_cell = nullptr;
    fold.loop_set = 1;
    cudaKernelNodeParams kp = {};
    void* first_args[] = {&a};
    kp.func = const_cast<void*>(peer_compact_entry(variant));
    kp.gridDim = dim3(tiles);
    kp.blockDim = dim3(fk::kCompactThreads[variant]);
    kp.kernelParams = first_args;
    cudaGraphNode_t first, entry, cond, step, compact;
    TRY(cudaGraphAddKernelNode(&first, g, nullptr, 0, &kp));
    const unsigned* cnt_c = count;
    void* entry_args[] = {&cnt_c, &h};
    cudaKernelNodeParams ep = {};
    ep.func = (void*)peer_while_entry; ep.gridDim = dim3(1); ep.blockDim = dim3(1); ep.kernelParams = entry_args;
    TRY(cudaGraphAddKernelNode(&entry, g, &first, 1, &ep));
    cudaGraphNodeParams cp = {};
    cp.type = cudaGraphNodeTypeConditional;
    cp.conditional.handle = h;
    cp.conditional.type = cudaGraphCondTypeWhile;
    cp.conditional.size = 1;
    TRY(cudaGraphAddNode(&cond, g, &entry, nullptr, 1, &cp));
    cudaGraph_t body = cp.conditional.phGraph_out[0];
    const int* idx_c = idx;
    long long base = 0, cnt = n, total = n;
    void* step_args[] = {&idx_c, &cnt_c, &steps, &mask, &base, &cnt, &total};
    cudaKernelNodeParams sp = {};
    sp.func = (void*)peer_drop_step; sp.gridDim = dim3((unsigned)((n + 255) / 256)); sp.blockDim = dim3(256);
    sp.kernelParams = step_args;
    TRY(cudaGraphAddKernelNode(&step, body, nullptr, 0, &sp));
    void* fold_args[] = {&fold};
    kp.kernelParams = body_kind == 1 ? first_args : fold_args;
    TRY(cudaGraphAddKernelNode(&compact, body, &step, 1, &kp));
    if (body_kind == 1) {
        void* decide_args[] = {&cnt_c, &h};
        cudaKernelNodeParams dp = {};
        dp.func = (void*)raw_while_decide; dp.gridDim = dim3(1); dp.blockDim = dim3(1); dp.kernelParams = decide_args;
        cudaGraphNode_t decide;
        TRY(cudaGraphAddKernelNode(&decide, body, nullptr, 0, &dp));
        cudaGraphEdgeData edge = {};
        edge.type = cudaGraphDependencyTypeProgrammatic;
        edge.from_port = cudaGraphKernelNodePortLaunchCompletion;
        TRY(cudaGraphAddDependencies(body, &compact, &decide, &edge, 1));
    }
    cudaGraphExec_t ex;
    TRY(cudaGraphInstantiate(&ex, g, 0));
    cudaEvent_t e0, e1;
    TRY(cudaEventCreate(&e0)); TRY(cudaEventCreate(&e1));
    std::vector<float> ms;
    for (int r = 0; r < reps + 1; ++r) {  // the first launch warms up, untimed
        TRY(cudaMemsetAsync(mask, 0, (size_t)n, s));
        TRY(cudaMemsetAsync(steps, 0, (size_t)n * sizeof(unsigned), s));
        TRY(cudaEventRecord(e0, s));
        TRY(cudaGraphLaunch(ex, s));
        TRY(cudaEventRecord(e1, s));
        TRY(cudaEventSynchronize(e1));
        float m; TRY(cudaEventElapsedTime(&m, e0, e1));
        if (r) ms.push_back(m);
    }
    std::sort(ms.begin(), ms.end());
    *us_per_launch = ms[ms.size() / 2] * 1000.0;
    cudaEventDestroy(e0); cudaEventDestroy(e1);
    cudaGraphExecDestroy(ex); cudaGraphDestroy(g);
    cudaFree(scratch);
    return 0;
}

// The host-driven loop: each iteration launches the body, copies the counter to pinned memory,
// synchronises and tests it. Wall time per iteration.
extern "C" int peer_host_loop(uint64_t stream, unsigned* d_counter, unsigned iters, double* us_per_iter) {
    cudaStream_t s = (cudaStream_t)(uintptr_t)stream;
    unsigned* h = nullptr;
    TRY(cudaHostAlloc((void**)&h, sizeof(unsigned), 0));
    TRY(cudaMemcpyAsync(d_counter, &iters, sizeof iters, cudaMemcpyHostToDevice, s));
    TRY(cudaStreamSynchronize(s));
    double t0 = now_us();
    unsigned done = 0;
    do {
        host_loop_body<<<1, 1, 0, s>>>(d_counter);
        TRY(cudaMemcpyAsync(h, d_counter, sizeof(unsigned), cudaMemcpyDeviceToHost, s));
        TRY(cudaStreamSynchronize(s));
        ++done;
    } while (*h != 0u);
    double t1 = now_us();
    cudaFreeHost(h);
    *us_per_iter = (t1 - t0) / done;
    return 0;
}

// cub::DeviceSelect::Flagged of the inputs `in` (int32 values, or a counting iterator) with a
// char/uint8 mask as flags into d_out + the count; median GPU time over reps (events).
template <class In>
int cub_flagged_median(In in, const char* d_flags, int* d_out, int* d_num, int n, uint64_t stream, int reps,
                       double* us) {
    cudaStream_t s = (cudaStream_t)(uintptr_t)stream;
    size_t temp = 0;
    TRY(cub::DeviceSelect::Flagged(nullptr, temp, in, d_flags, d_out, d_num, n, s));
    void* d_temp = nullptr;
    TRY(cudaMalloc(&d_temp, temp));
    cudaEvent_t a, b;
    TRY(cudaEventCreate(&a)); TRY(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int r = 0; r < reps + 1; ++r) {
        TRY(cudaEventRecord(a, s));
        TRY(cub::DeviceSelect::Flagged(d_temp, temp, in, d_flags, d_out, d_num, n, s));
        TRY(cudaEventRecord(b, s));
        TRY(cudaEventSynchronize(b));
        float m; TRY(cudaEventElapsedTime(&m, a, b));
        if (r) ms.push_back(m);
    }
    std::sort(ms.begin(), ms.end());
    *us = ms[ms.size() / 2] * 1000.0;
    cudaFree(d_temp); cudaEventDestroy(a); cudaEventDestroy(b);
    return 0;
}

// Over n int32 values.
extern "C" int peer_cub_flagged(const int* d_in, const char* d_flags, int* d_out, int* d_num, int n,
                                uint64_t stream, int reps, double* us) {
    return cub_flagged_median(d_in, d_flags, d_out, d_num, n, stream, reps, us);
}

// Over a counting iterator: int32 indices of the kept samples + the count, the output eagle's
// compaction writes.
extern "C" int peer_cub_flagged_counting(const char* d_flags, int* d_out, int* d_num, int n, uint64_t stream, int reps,
                                         double* us) {
    return cub_flagged_median(thrust::counting_iterator<int>(0), d_flags, d_out, d_num, n, stream, reps, us);
}

// cudaMemcpyAsync of `bytes` (kind: 1 H2D, 2 D2H); median GPU time over reps (events).
extern "C" int peer_memcpy(void* dst, const void* src, size_t bytes, int kind, uint64_t stream, int reps,
                           double* us) {
    cudaStream_t s = (cudaStream_t)(uintptr_t)stream;
    cudaMemcpyKind k = kind == 1 ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    cudaEvent_t a, b;
    TRY(cudaEventCreate(&a)); TRY(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int r = 0; r < reps + 1; ++r) {
        TRY(cudaEventRecord(a, s));
        TRY(cudaMemcpyAsync(dst, src, bytes, k, s));
        TRY(cudaEventRecord(b, s));
        TRY(cudaEventSynchronize(b));
        float m; TRY(cudaEventElapsedTime(&m, a, b));
        if (r) ms.push_back(m);
    }
    std::sort(ms.begin(), ms.end());
    *us = ms[ms.size() / 2] * 1000.0;
    cudaEventDestroy(a); cudaEventDestroy(b);
    return 0;
}

// The blocking copy eager eagle.copy() makes: cudaMemcpyAsync then cudaStreamSynchronize, timed on
// the host (wall clock, median of `reps` after one warm-up), as eagle.copy() with no stream= is.
extern "C" int peer_memcpy_wall(void* dst, const void* src, size_t bytes, int kind, uint64_t stream, int reps,
                                double* us) {
    cudaStream_t s = (cudaStream_t)(uintptr_t)stream;
    cudaMemcpyKind k = kind == 1 ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    std::vector<double> t;
    for (int r = 0; r < reps + 1; ++r) {
        TRY(cudaStreamSynchronize(s));
        auto t0 = std::chrono::steady_clock::now();
        TRY(cudaMemcpyAsync(dst, src, bytes, k, s));
        TRY(cudaStreamSynchronize(s));
        auto t1 = std::chrono::steady_clock::now();
        if (r) t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(t.begin(), t.end());
    *us = t[t.size() / 2];
    return 0;
}
