// Raw CUDA peers for benchmarks/bench_cuda.py: the same work eagle does, written directly against
// the CUDA runtime, so that eagle's cost is measured against its anchor in one process.
// Built on the device by bench_cuda.py:  nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr
//   -I backends/gpu -shared -Xcompiler -fPIC peers.cu -o libeagle_peers.so
// (backends/gpu for eagle's compaction kernels, filtering_kernels.cuh, used by the ActiveSet peer.)
// Every function returns 0 on success or the cudaError_t, and writes its timing to *out.
#include <cuda.h>
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

// ------------------------------------------------------------------ the ActiveSet loop (issue 17)
// The ActiveSet loop as a raw-CUDA user would build it by hand, with eagle's compaction kernel:
// a compaction node (the first index map and count), an entry kernel (the first decision), then a
// WHILE node whose body is peer_drop_step over n lanes (block 256, grid (n + 255) / 256, the
// partition triple (0, n, n): exactly what eagle's run_device launches for bench_cuda's step,
// backends/gpu/exec.cpp) and eagle's compaction, joined by a plain edge. body_kind:
//   0  the folded 2-kernel body, nodes added to the graph directly: the compaction's last block
//      sets the condition to count != 0 itself (CompactArgs::loop_set, no cell).
//   1  the body eagle recorded before the fold, three kernels: the compaction does not decide, a
//      decide kernel (raw_while_decide) follows it by a programmatic edge from its
//      launch-completion port.
//   2  (a) as 0, and the compaction steps a [remaining, ran] cell as eagle's does
//      (CompactArgs::loop_cell: go = remaining > 0 && count != 0, a go steps the cell); the entry
//      kernel is a copy of eagle's while_entry_setter (cell := [cap - 1, 1] on a go), the cap
//      bench_cuda's max_iters, 2^31 (backends/cuda/conditional.cu).
//   3  (b) as 0, recorded the way eagle's cuda backend records it: by stream capture (relaxed) on
//      `stream`, the conditional node added to the capture graph after the entry kernel, the body
//      captured on a second stream into the node's body graph (cudaStreamBeginCaptureToGraph), the
//      step launched by cuLaunchKernel with the CUfunction of peer_drop_step (eagle's exec path,
//      backends/cuda/native.cpp), the compaction launched unfolded and then rewritten with the
//      fold's arguments by cudaGraphKernelNodeSetParams before the body capture ends
//      (backends/gpu/filtering.cu CompactFold, backends/cuda/conditional.cu fold_body).
//   4  (c) 2 and 3 together: eagle's graph for repeat_while([step, aset], aset), built by hand.
//   5-7  as 2, with the body's compaction peer_compact_cell_kernel below (compact_kernel's body,
//      its tail changed), to tell which part of the cell's work costs:
//   5  (a1) the cell read as one 8-byte word when the last tile's block starts (off the path to
//      the decision), and stored as one 8-byte word;
//   6  (a2) the cell only stored, as one 8-byte word, never read (timing only: the words stored
//      are not eagle's, and the cap is not applied; the 2^31 cap is never reached here);
//   7  the control: the copy with eagle's own tail (write_trigger), which must time as kind 2.
// The iterations a launch runs are max(steps) (the last sample to drop is stepped every iteration).
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
// A copy of eagle's while_entry_setter (backends/cuda/conditional.cu): the first decision, and the
// cell := [loop_cap - 1, 1] on a go, [loop_cap, 0] otherwise.
__global__ void peer_while_entry_cell(cudaGraphConditionalHandle h, const unsigned* count, const unsigned* baseline,
                                      unsigned* cell, unsigned loop_cap) {
    const bool go = loop_cap > 0 && *count != (baseline ? *baseline : 0u);
    cell[0] = go ? loop_cap - 1u : loop_cap;
    cell[1] = go ? 1u : 0u;
    cudaGraphSetConditional(h, go ? 1u : 0u);
}

// compact_kernel (filtering_kernels.cuh) with the tail of kinds 5-7: Mode 0 eagle's write_trigger
// (kind 7), 1 the cell read early and stored packed (kind 5), 2 the cell stored only (kind 6).
// Modes 1 and 2 write the count and decide as set_loop does; the reorder trigger (live32, fire)
// is left out (NULL in the ActiveSet loop). The cell must be 8-byte aligned (cudaMalloc'd here).
template <int Mode>
__device__ __forceinline__ void peer_cell_tail(const fk::CompactArgs& a, uint32_t kept, unsigned long long early) {
    if (Mode == 0) {
        fk::write_trigger(a, kept);
        return;
    }
    *a.total = kept;
    bool go = kept != 0u;
    auto* word = reinterpret_cast<unsigned long long*>(a.loop_cell);
    if (Mode == 1) {
        const uint32_t remaining = static_cast<uint32_t>(early), ran = static_cast<uint32_t>(early >> 32);
        go = go && remaining > 0u;
        if (go) *word = (static_cast<unsigned long long>(ran + 1u) << 32) | (remaining - 1u);
    } else if (go) {
        *word = (static_cast<unsigned long long>(kept) << 32) | kept;
    }
    cudaGraphSetConditional(static_cast<cudaGraphConditionalHandle>(a.loop_handle), go ? 1u : 0u);
}

template <int T, int I, int Mode>
__global__ void __launch_bounds__(T) peer_compact_cell_kernel(fk::CompactArgs a) {
    using namespace fk;
    constexpr int V = I / 16;
    constexpr int TILE = T * I;
    __shared__ uint32_t s_tile, s_epoch, s_base;
    __shared__ uint32_t s_warp[T / 32];
    __shared__ uint16_t s_out[TILE];
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    if (tid == 0) take_ticket(a.ticket, a.tiles, &s_tile, &s_epoch);
    __syncthreads();
    const uint32_t tile = s_tile;
    if (tile >= a.tiles) return;
    unsigned long long early = 0;
    if (Mode == 1 && tid == 0 && tile == a.tiles - 1) early = *reinterpret_cast<const unsigned long long*>(a.loop_cell);
    const uint32_t start = tile * static_cast<uint32_t>(TILE);
    const bool aligned = (reinterpret_cast<uintptr_t>(a.mask) & 15u) == 0;
    uint32_t bits[V], rank[V], aggregate;
    tile_counts<T, I>(a.mask, start, a.n, a.flip, aligned, s_warp, bits, rank, &aggregate);
#pragma unroll
    for (int v = 0; v < V; ++v) {
        uint32_t b = bits[v];
        uint32_t r = rank[v];
        const uint32_t off = static_cast<uint32_t>(warp) * (32u * I) + (v * 32 + lane) * 16u;
        while (b) {
            const int k = __ffs(b) - 1;
            b &= b - 1;
            s_out[r++] = static_cast<uint16_t>(off + k);
        }
    }
    if (warp == 0) {
        const uint32_t exclusive = look_back(a.status, tile, epoch_tag(s_epoch), aggregate, lane);
        if (lane == 0) {
            s_base = exclusive;
            if (tile == a.tiles - 1) peer_cell_tail<Mode>(a, exclusive + aggregate, early);
        }
    }
    __syncthreads();
    int32_t* out = a.out + s_base;
    for (uint32_t i = tid; i < aggregate; i += T) out[i] = static_cast<int32_t>(start + s_out[i]);
}

template <int T, int I>
static const void* peer_cell_entry(int mode) {
    switch (mode) {
        case 0: return (const void*)&peer_compact_cell_kernel<T, I, 0>;
        case 1: return (const void*)&peer_compact_cell_kernel<T, I, 1>;
        case 2: return (const void*)&peer_compact_cell_kernel<T, I, 2>;
    }
    return nullptr;
}
// The variants select_compact_variant picks (0 up to 2^21 samples, 6 above); nullptr for others.
static const void* peer_cell_entry(int variant, int mode) {
    if (variant == 0) return peer_cell_entry<fk::kCompactThreads[0], fk::kCompactItems[0]>(mode);
    if (variant == 6) return peer_cell_entry<fk::kCompactThreads[6], fk::kCompactItems[6]>(mode);
    return nullptr;
}

constexpr int kAsetKinds = 8;
constexpr unsigned kAsetCap = 1u << 31;  // bench_cuda's max_iters

// One built ActiveSet-loop graph and what it owns.
struct AsetPeer {
    cudaGraph_t graph = nullptr;  // the top level
    cudaGraph_t body = nullptr;   // the WHILE's body (owned by the graph's conditional node)
    char* scratch = nullptr;      // the compactions' state
    unsigned* cell = nullptr;     // [remaining, ran] (kinds 2 and 4-7)
    cudaStream_t capture = nullptr;  // the body's capture stream (kinds 3 and 4), gone once built
    bool borrowed = false;        // scratch and cell are the caller's (peer_activeset_while_on): not freed
};

static void aset_free(AsetPeer& p) {
    if (p.graph) cudaGraphDestroy(p.graph);
    if (p.capture) cudaStreamDestroy(p.capture);
    if (p.scratch && !p.borrowed) cudaFree(p.scratch);
    if (p.cell && !p.borrowed) cudaFree(p.cell);
    (void)cudaGetLastError();
    p = AsetPeer{};
}

// The launch arguments every kind shares (pointers into it are given to the runtime, which copies
// the values when it records a node).
struct AsetArgs {
    int variant = 0;
    uint32_t tiles = 0, threads = 0;
    fk::CompactArgs first{};  // the unfolded compaction (the top level's, and kind 1's body)
    fk::CompactArgs fold{};   // the body's compaction, folded
    const int* idx = nullptr;
    const unsigned* count = nullptr;
    unsigned* steps = nullptr;
    unsigned char* mask = nullptr;
    long long base = 0, cnt = 0, total = 0;
    unsigned* cell = nullptr;
    const unsigned* no_baseline = nullptr;
    unsigned cap = kAsetCap;
    cudaGraphConditionalHandle h{};
    void* first_args[1] = {nullptr};
    void* fold_args[1] = {nullptr};
    void* step_args[7] = {};
    void* entry_args[2] = {};       // peer_while_entry
    void* entry_cell_args[5] = {};  // peer_while_entry_cell
    void set_pointers() {
        first_args[0] = &first;
        fold_args[0] = &fold;
        void* s[] = {&idx, &count, &steps, &mask, &base, &cnt, &total};
        std::copy(s, s + 7, step_args);
        entry_args[0] = &count;
        entry_args[1] = &h;
        void* e[] = {&h, &count, &no_baseline, &cell, &cap};
        std::copy(e, e + 5, entry_cell_args);
    }
    AsetArgs() = default;
    AsetArgs(const AsetArgs&) = delete;  // the arrays above point into the object
};

// The nodes added to graphs directly (kinds 0, 1, 2, 5, 6, 7).
static int aset_build_direct(AsetArgs& A, bool with_cell, int body_kind, AsetPeer* p) {
    TRY(cudaGraphCreate(&p->graph, 0));
    TRY(cudaGraphConditionalHandleCreate(&A.h, p->graph, 0, 0));
    A.fold.loop_handle = A.h;
    cudaKernelNodeParams kp = {};
    kp.func = const_cast<void*>(peer_compact_entry(A.variant));
    kp.gridDim = dim3(A.tiles);
    kp.blockDim = dim3(A.threads);
    kp.kernelParams = A.first_args;
    cudaGraphNode_t first, entry, cond, step, compact;
    TRY(cudaGraphAddKernelNode(&first, p->graph, nullptr, 0, &kp));
    cudaKernelNodeParams ep = {};
    ep.func = with_cell ? (void*)peer_while_entry_cell : (void*)peer_while_entry;
    ep.gridDim = dim3(1);
    ep.blockDim = dim3(1);
    ep.kernelParams = with_cell ? A.entry_cell_args : A.entry_args;
    TRY(cudaGraphAddKernelNode(&entry, p->graph, &first, 1, &ep));
    cudaGraphNodeParams cp = {};
    cp.type = cudaGraphNodeTypeConditional;
    cp.conditional.handle = A.h;
    cp.conditional.type = cudaGraphCondTypeWhile;
    cp.conditional.size = 1;
    TRY(cudaGraphAddNode(&cond, p->graph, &entry, nullptr, 1, &cp));
    p->body = cp.conditional.phGraph_out[0];
    cudaKernelNodeParams sp = {};
    sp.func = (void*)peer_drop_step;
    sp.gridDim = dim3((unsigned)((A.cnt + 255) / 256));
    sp.blockDim = dim3(256);
    sp.kernelParams = A.step_args;
    TRY(cudaGraphAddKernelNode(&step, p->body, nullptr, 0, &sp));
    kp.kernelParams = body_kind == 1 ? A.first_args : A.fold_args;
    if (body_kind >= 5) {  // the cell forms: peer_compact_cell_kernel, same grid and block
        const void* f = peer_cell_entry(A.variant, body_kind == 5 ? 1 : body_kind == 6 ? 2 : 0);
        if (!f) return (int)cudaErrorInvalidValue;
        kp.func = const_cast<void*>(f);
    }
    TRY(cudaGraphAddKernelNode(&compact, p->body, &step, 1, &kp));
    if (body_kind == 1) {
        cudaKernelNodeParams dp = {};
        dp.func = (void*)raw_while_decide;
        dp.gridDim = dim3(1);
        dp.blockDim = dim3(1);
        void* decide_args[] = {&A.count, &A.h};
        dp.kernelParams = decide_args;
        cudaGraphNode_t decide;
        TRY(cudaGraphAddKernelNode(&decide, p->body, nullptr, 0, &dp));
        cudaGraphEdgeData edge = {};
        edge.type = cudaGraphDependencyTypeProgrammatic;
        edge.from_port = cudaGraphKernelNodePortLaunchCompletion;
        TRY(cudaGraphAddDependencies(p->body, &compact, &decide, &edge, 1));
    }
    return 0;
}

// cuLaunchKernel, as eagle's exec path calls it (through the runtime's driver entry point, so
// nothing links libcuda).
using PeerCuLaunch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  CUstream, void**, void**);
static PeerCuLaunch peer_cu_launch() {
    static PeerCuLaunch fn = [] {
        void* f = nullptr;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        if (cudaGetDriverEntryPointByVersion("cuLaunchKernel", &f, 4000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess) {
            (void)cudaGetLastError();
            return (PeerCuLaunch) nullptr;
        }
        return reinterpret_cast<PeerCuLaunch>(f);
    }();
    return fn;
}

// The capture graph and dependencies of `s` (capturing), as eagle's capture_info reads them.
static int aset_capture_info(cudaStream_t s, cudaGraph_t* g, std::vector<cudaGraphNode_t>* deps) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const cudaGraphNode_t* d = nullptr;
    size_t nd = 0;
    TRY(cudaStreamGetCaptureInfo(s, &status, nullptr, g, &d, nullptr, &nd));
    if (status != cudaStreamCaptureStatusActive) return (int)cudaErrorStreamCaptureInvalidated;
    deps->assign(d, d + nd);
    return 0;
}

// Kinds 3 and 4: the sequence eagle's cuda backend runs for Graph.build([aset, loop]).
static int aset_record(AsetArgs& A, bool with_cell, cudaStream_t s, AsetPeer* p) {
    PeerCuLaunch launch = peer_cu_launch();
    if (!launch) return (int)cudaErrorSymbolNotFound;
    cudaFunction_t step_fn = nullptr;
    TRY(cudaGetFuncBySymbol(&step_fn, (const void*)peer_drop_step));
    const void* compact_fn = peer_compact_entry(A.variant);
    TRY(cudaStreamCreateWithFlags(&p->capture, cudaStreamNonBlocking));
    cudaStream_t bs = p->capture;
    TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));  // eagle's capturer_begin
    // the ActiveSet member: its compaction (compact_device)
    TRY(cudaLaunchKernel(compact_fn, dim3(A.tiles), dim3(A.threads), A.first_args, 0, s));
    // conditional_create: the handle on the capture graph, the entry setter, the node after it
    cudaGraph_t cg = nullptr;
    std::vector<cudaGraphNode_t> deps;
    if (int rc = aset_capture_info(s, &cg, &deps)) return rc;
    TRY(cudaGraphConditionalHandleCreate(&A.h, cg, 0, 0));
    A.fold.loop_handle = A.h;
    if (with_cell) peer_while_entry_cell<<<1, 1, 0, s>>>(A.h, A.count, nullptr, A.cell, A.cap);
    else peer_while_entry<<<1, 1, 0, s>>>(A.count, A.h);
    TRY(cudaGetLastError());
    if (int rc = aset_capture_info(s, &cg, &deps)) return rc;
    cudaGraphNodeParams cp = {};
    cp.type = cudaGraphNodeTypeConditional;
    cp.conditional.handle = A.h;
    cp.conditional.type = cudaGraphCondTypeWhile;
    cp.conditional.size = 1;
    cudaGraphNode_t cond = nullptr;
    TRY(cudaGraphAddNode(&cond, cg, deps.data(), nullptr, deps.size(), &cp));
    p->body = cp.conditional.phGraph_out[0];
    TRY(cudaStreamUpdateCaptureDependencies(s, &cond, nullptr, 1, cudaStreamSetCaptureDependencies));
    // conditional_begin: the body captured into the node's body graph
    TRY(cudaStreamBeginCaptureToGraph(bs, p->body, nullptr, nullptr, 0, cudaStreamCaptureModeRelaxed));
    // the step (run_device: cuLaunchKernel over ceil(n / 256) blocks of 256, the triple appended)
    const CUresult r = launch(reinterpret_cast<CUfunction>(step_fn), (unsigned)((A.cnt + 255) / 256), 1, 1, 256, 1, 1,
                              0, reinterpret_cast<CUstream>(bs), A.step_args, nullptr);
    if (r != CUDA_SUCCESS) return (int)r;  // a CUresult (its codes match cudaError_t's where both exist)
    // the compaction (compact_device: launched with loop_set = 0, offered to the fold)
    TRY(cudaLaunchKernel(compact_fn, dim3(A.tiles), dim3(A.threads), A.first_args, 0, bs));
    cudaGraph_t bg = nullptr;
    if (int rc = aset_capture_info(bs, &bg, &deps)) return rc;
    if (deps.size() != 1) return (int)cudaErrorInvalidValue;
    // conditional_end: the fold rewrites the compaction node while the body capture is open
    cudaKernelNodeParams kp = {};
    kp.func = const_cast<void*>(compact_fn);
    kp.gridDim = dim3(A.tiles);
    kp.blockDim = dim3(A.threads);
    kp.sharedMemBytes = 0;
    kp.kernelParams = A.fold_args;
    kp.extra = nullptr;
    TRY(cudaGraphKernelNodeSetParams(deps[0], &kp));
    TRY(cudaStreamEndCapture(bs, &bg));
    TRY(cudaStreamEndCapture(s, &p->graph));  // capturer_end
    return 0;
}

// Ends the captures a failed aset_record left open (the graph so far is dropped).
static void aset_abandon_capture(cudaStream_t s, cudaStream_t bs) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaGraph_t g = nullptr;
    if (bs && cudaStreamIsCapturing(bs, &st) == cudaSuccess && st != cudaStreamCaptureStatusNone)
        (void)cudaStreamEndCapture(bs, &g);
    st = cudaStreamCaptureStatusNone;
    g = nullptr;
    if (cudaStreamIsCapturing(s, &st) == cudaSuccess && st != cudaStreamCaptureStatusNone) {
        (void)cudaStreamEndCapture(s, &g);
        if (g) (void)cudaGraphDestroy(g);
    }
    (void)cudaGetLastError();
}

// Builds the graph of `body_kind` over the given buffers into *p (empty on failure). The scratch
// and the cell are zeroed on `stream` before the graph can run there.
static int aset_build(cudaStream_t s, unsigned char* mask, unsigned* steps, int* idx, unsigned* count, int n,
                      int body_kind, AsetPeer* p, char* own_scratch = nullptr, unsigned* own_cell = nullptr) {
    *p = AsetPeer{};
    if (body_kind < 0 || body_kind >= kAsetKinds || n <= 0) return (int)cudaErrorInvalidValue;
    const bool with_cell = body_kind == 2 || body_kind >= 4;
    const bool recorded = body_kind == 3 || body_kind == 4;
    AsetArgs A;
    A.variant = fk::select_compact_variant(n);
    A.tiles = (uint32_t)((n + fk::compact_tile(A.variant) - 1) / fk::compact_tile(A.variant));
    A.threads = (uint32_t)fk::kCompactThreads[A.variant];
    const size_t scratch_bytes = 256 + ((size_t)A.tiles * 8 + 255) / 256 * 256;
    int rc = 0;
    auto fail = [&](int code) { aset_free(*p); return code; };
    if (own_scratch) {  // the caller's (eagle's own) buffers: same kernels, so the same state rules
        if (!with_cell || !own_cell) return (int)cudaErrorInvalidValue;
        p->borrowed = true;
        p->scratch = own_scratch;
        p->cell = own_cell;
    } else {
        if ((rc = (int)cudaMalloc(&p->scratch, scratch_bytes))) return fail(rc);
        if (with_cell && (rc = (int)cudaMalloc(&p->cell, 2 * sizeof(unsigned)))) return fail(rc);
    }
    if ((rc = (int)cudaMemsetAsync(p->scratch, 0, scratch_bytes, s))) return fail(rc);  // zero before first use
    if (with_cell && (rc = (int)cudaMemsetAsync(p->cell, 0, 2 * sizeof(unsigned), s))) return fail(rc);
    fk::CompactArgs& a = A.first;
    a.mask = mask;
    a.out = idx;
    a.n = (uint32_t)n;
    a.flip = 0xffffu;  // MASK_IS_DROP: the index map lists mask == 0
    a.ticket = reinterpret_cast<unsigned long long*>(p->scratch);
    a.status = reinterpret_cast<unsigned long long*>(p->scratch + 256);
    a.total = count;
    a.tiles = A.tiles;
    A.fold = a;
    A.fold.loop_cell = p->cell;  // nullptr for kinds 0, 1 and 3
    A.fold.loop_set = 1;
    A.idx = idx;
    A.count = count;
    A.steps = steps;
    A.mask = mask;
    A.cnt = A.total = n;
    A.cell = p->cell;
    A.set_pointers();
    if (!recorded) {
        rc = aset_build_direct(A, with_cell, body_kind, p);
    } else {
        rc = aset_record(A, with_cell, s, p);
        if (rc) aset_abandon_capture(s, p->capture);
        if (p->capture) {
            cudaStreamDestroy(p->capture);
            p->capture = nullptr;
        }
    }
    return rc ? fail(rc) : 0;
}

// Before each timed launch the mask and steps are zeroed; returns the median GPU time of one launch
// (events), in us, of `reps` launches after an untimed one.
static int aset_time(const AsetPeer& p, cudaStream_t s, unsigned char* mask, unsigned* steps, int n, int reps,
                     double* us_per_launch) {
    cudaGraphExec_t ex = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    std::vector<float> ms;
    auto run = [&]() -> int {
        TRY(cudaGraphInstantiate(&ex, p.graph, 0));
        TRY(cudaEventCreate(&e0));
        TRY(cudaEventCreate(&e1));
        for (int r = 0; r < reps + 1; ++r) {  // the first launch warms up, untimed
            TRY(cudaMemsetAsync(mask, 0, (size_t)n, s));
            TRY(cudaMemsetAsync(steps, 0, (size_t)n * sizeof(unsigned), s));
            TRY(cudaEventRecord(e0, s));
            TRY(cudaGraphLaunch(ex, s));
            TRY(cudaEventRecord(e1, s));
            TRY(cudaEventSynchronize(e1));
            float m;
            TRY(cudaEventElapsedTime(&m, e0, e1));
            if (r) ms.push_back(m);
        }
        return 0;
    };
    const int rc = run();
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (ex) cudaGraphExecDestroy(ex);
    if (rc) return rc;
    if (ms.empty()) return (int)cudaErrorInvalidValue;
    std::sort(ms.begin(), ms.end());
    *us_per_launch = ms[ms.size() / 2] * 1000.0;
    return 0;
}

// The ActiveSet loop of `body_kind` (above) on `stream`: the median GPU time of one launch, in us.
extern "C" int peer_activeset_while(uint64_t stream, unsigned char* mask, unsigned* steps, int* idx, unsigned* count,
                                    int n, int body_kind, int reps, double* us_per_launch) {
    cudaStream_t s = (cudaStream_t)(uintptr_t)stream;
    AsetPeer p;
    int rc = aset_build(s, mask, steps, idx, count, n, body_kind, &p);
    if (rc) return rc;
    rc = aset_time(p, s, mask, steps, n, reps, us_per_launch);
    aset_free(p);
    return rc;
}

// The same, on buffers the caller gives for the compactions' state and the loop cell (eagle's own
// ActiveSet scratch and [remaining, ran] cell): separates where the memory lies from what the graph
// does. Kinds with a cell only (2, 4-7); the scratch is zeroed first, as a new one is.
extern "C" int peer_activeset_while_on(uint64_t stream, unsigned char* mask, unsigned* steps, int* idx,
                                       unsigned* count, char* scratch, unsigned* cell, int n, int body_kind,
                                       int reps, double* us_per_launch) {
    cudaStream_t s = (cudaStream_t)(uintptr_t)stream;
    if (!scratch || !cell) return (int)cudaErrorInvalidValue;
    AsetPeer p;
    int rc = aset_build(s, mask, steps, idx, count, n, body_kind, &p, scratch, cell);
    if (rc) return rc;
    rc = aset_time(p, s, mask, steps, n, reps, us_per_launch);
    aset_free(p);
    return rc;
}

// The same graph, built and kept for inspection (benchmarks/diag/aset_body_diff.py): *graph gets the
// top-level cudaGraph_t, *body the WHILE's body graph (owned by it). Release it with
// peer_activeset_graph_release(*graph). Nothing is launched.
static std::vector<AsetPeer> g_aset_kept;
extern "C" int peer_activeset_graph(uint64_t stream, unsigned char* mask, unsigned* steps, int* idx, unsigned* count,
                                    int n, int body_kind, uint64_t* graph, uint64_t* body) {
    if (!graph || !body) return (int)cudaErrorInvalidValue;
    AsetPeer p;
    if (int rc = aset_build((cudaStream_t)(uintptr_t)stream, mask, steps, idx, count, n, body_kind, &p)) return rc;
    *graph = (uint64_t)(uintptr_t)p.graph;
    *body = (uint64_t)(uintptr_t)p.body;
    g_aset_kept.push_back(p);
    return 0;
}

extern "C" int peer_activeset_graph_release(uint64_t graph) {
    for (size_t i = 0; i < g_aset_kept.size(); ++i) {
        if ((uint64_t)(uintptr_t)g_aset_kept[i].graph == graph) {
            aset_free(g_aset_kept[i]);
            g_aset_kept.erase(g_aset_kept.begin() + (long)i);
            return 0;
        }
    }
    return (int)cudaErrorInvalidValue;
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
