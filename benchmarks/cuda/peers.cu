// Raw CUDA peers for benchmarks/bench_cuda.py: the same work eagle does, written directly against
// the CUDA runtime, so that eagle's cost is measured against its anchor in one process.
// Built on the device by bench_cuda.py:  nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC peers.cu
//   -o libeagle_peers.so
// Every function returns 0 on success or the cudaError_t, and writes its timing to *out.
#include <cuda_runtime.h>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

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

extern "C" int peer_function(const char* name, uint64_t* out) {
    cudaFunction_t f = nullptr;
    if (std::string(name) == "peer_empty") TRY(cudaGetFuncBySymbol(&f, (const void*)peer_empty));
    else if (std::string(name) == "peer_decrement") TRY(cudaGetFuncBySymbol(&f, (const void*)peer_decrement));
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

// cub::DeviceSelect::Flagged over n int32 with a char mask; median GPU time over reps (events).
extern "C" int peer_cub_flagged(const int* d_in, const char* d_flags, int* d_out, int* d_num, int n,
                                uint64_t stream, int reps, double* us) {
    cudaStream_t s = (cudaStream_t)(uintptr_t)stream;
    size_t temp = 0;
    TRY(cub::DeviceSelect::Flagged(nullptr, temp, d_in, d_flags, d_out, d_num, n, s));
    void* d_temp = nullptr;
    TRY(cudaMalloc(&d_temp, temp));
    cudaEvent_t a, b;
    TRY(cudaEventCreate(&a)); TRY(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int r = 0; r < reps + 1; ++r) {
        TRY(cudaEventRecord(a, s));
        TRY(cub::DeviceSelect::Flagged(d_temp, temp, d_in, d_flags, d_out, d_num, n, s));
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

// cub::DeviceSelect::Flagged over a counting iterator with the uint8 mask as flags: int32 indices of
// the kept samples + the count, the output eagle's compaction writes; median GPU time over reps.
extern "C" int peer_cub_flagged_counting(const char* d_flags, int* d_out, int* d_num, int n, uint64_t stream, int reps,
                                         double* us) {
    cudaStream_t s = (cudaStream_t)(uintptr_t)stream;
    thrust::counting_iterator<int> first(0);
    size_t temp = 0;
    TRY(cub::DeviceSelect::Flagged(nullptr, temp, first, d_flags, d_out, d_num, n, s));
    void* d_temp = nullptr;
    TRY(cudaMalloc(&d_temp, temp));
    cudaEvent_t a, b;
    TRY(cudaEventCreate(&a)); TRY(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int r = 0; r < reps + 1; ++r) {
        TRY(cudaEventRecord(a, s));
        TRY(cub::DeviceSelect::Flagged(d_temp, temp, first, d_flags, d_out, d_num, n, s));
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
