// conditional.cu -- conditional nodes (bit 4; SWITCH per-symbol since minor 4), cuda only.
//
// The node is recorded into the capturing origin: a setter kernel (eagle's own) evaluates the guard
// and sets the node's condition handle, then the conditional node is added after it and becomes the
// origin's only capture dependency. Bodies are captured on a body stream straight into the node's
// body graphs (cudaStreamBeginCaptureToGraph). A WHILE ends every body iteration with a setter
// kernel that re-evaluates the guard and steps the [remaining, ran] cell -- except where the body's
// last word is a compaction whose count is the guard (`count != 0`, no baseline), or a kernel
// compiled from EAGLE_KERNEL (any guard): that kernel then sets the condition and steps the cell
// itself (the WHILE fold, gpu.h), one node an iteration fewer.
#include <cuda_runtime.h>

#include <vector>

#include "gpu.h"

using namespace eagle;
using namespace eagle::gpu;

namespace eagle::gpu::native {
bool has_switch();

namespace {
std::mutex g_cond_mu;
std::unordered_map<gpuGraphNode_t, std::vector<gpuGraph_t>> g_cond_bodies;
}  // namespace

void conditional_bodies(gpuGraphNode_t node, std::vector<gpuGraph_t>& out) {
    // Only a conditional node has bodies: an entry left by a graph the runtime freed on its own
    // (an invalidated capture) must not be read for a node that reuses its address.
    cudaGraphNodeType t{};
    if (cudaGraphNodeGetType(node, &t) != cudaSuccess || t != cudaGraphNodeTypeConditional) {
        (void)cudaGetLastError();
        return;
    }
    std::lock_guard<std::mutex> lk(g_cond_mu);
    auto it = g_cond_bodies.find(node);
    if (it != g_cond_bodies.end()) out.insert(out.end(), it->second.begin(), it->second.end());
}

void forget_node(gpuGraphNode_t node) {
    std::lock_guard<std::mutex> lk(g_cond_mu);
    g_cond_bodies.erase(node);
}

static void remember_bodies(gpuGraphNode_t node, const std::vector<gpuGraph_t>& bodies) {
    std::lock_guard<std::mutex> lk(g_cond_mu);
    g_cond_bodies[node] = bodies;
}
}  // namespace eagle::gpu::native

// ---------------------------------------------------------------- the WHILE fold (gpu.h)
// (A named namespace: nvcc's stubs cannot tell two unnamed namespaces apart when kernels live in one.)
namespace eagle::gpu::fold_state {
// A WHILE body being captured: what a compaction or a kernel needs to end its iterations, and the
// last node offered.
struct FoldSlot {
    WhileFold loop;
    gpuGraphNode_t node = nullptr;
    std::shared_ptr<FoldEnabler> enable;
};
std::mutex g_fold_mu;
std::unordered_map<gpuGraph_t, FoldSlot> g_fold;  // by body graph
std::atomic<int> g_fold_open{0};                  // g_fold.size(), read without the lock

void fold_open(const WhileFold& loop) {
    std::lock_guard<std::mutex> lk(g_fold_mu);
    FoldSlot& f = g_fold[loop.body];
    f = FoldSlot{};
    f.loop = loop;
    g_fold_open.store(static_cast<int>(g_fold.size()), std::memory_order_relaxed);
}

// Removes the body's slot and returns it (an empty slot when none).
FoldSlot fold_close(gpuGraph_t body) noexcept {
    FoldSlot out;
    std::lock_guard<std::mutex> lk(g_fold_mu);
    auto it = g_fold.find(body);
    if (it == g_fold.end()) return out;
    out = std::move(it->second);
    g_fold.erase(it);
    g_fold_open.store(static_cast<int>(g_fold.size()), std::memory_order_relaxed);
    return out;
}
}  // namespace eagle::gpu::fold_state

namespace eagle::gpu {
using namespace fold_state;

bool while_body_target(gpuStream_t s, WhileFold* out) noexcept {
    if (g_fold_open.load(std::memory_order_relaxed) == 0) return false;
    cudaStreamCaptureStatus status{};
    gpuGraph_t g = nullptr;
    if (gpuStreamGetCaptureInfo(s, &status, nullptr, &g, nullptr, nullptr) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    if (status != cudaStreamCaptureStatusActive || !g) return false;
    std::lock_guard<std::mutex> lk(g_fold_mu);
    auto it = g_fold.find(g);
    if (it == g_fold.end()) return false;
    *out = it->second.loop;
    return true;
}

bool while_fold_target(gpuStream_t s, const uint32_t* count, WhileFold* out) noexcept {
    if (!count || !while_body_target(s, out)) return false;
    return out->count == count && !out->baseline;
}

void while_fold_offer(gpuGraph_t body, gpuGraphNode_t node, std::unique_ptr<FoldEnabler> enable) noexcept {
    std::lock_guard<std::mutex> lk(g_fold_mu);
    auto it = g_fold.find(body);
    if (it == g_fold.end()) return;
    it->second.node = node;
    it->second.enable = std::move(enable);
}
}  // namespace eagle::gpu

namespace {

__device__ __forceinline__ bool guard_holds(const uint32_t* count, const uint32_t* baseline) {
    return *count != (baseline ? *baseline : 0u);
}

__global__ void if_setter(cudaGraphConditionalHandle h, const uint32_t* count, const uint32_t* baseline) {
    cudaGraphSetConditional(h, guard_holds(count, baseline) ? 1u : 0u);
}

// Entry of the WHILE node: cell := [loop_cap, 0], then the first decision.
__global__ void while_entry_setter(cudaGraphConditionalHandle h, const uint32_t* count, const uint32_t* baseline,
                                   uint32_t* cell, uint32_t loop_cap) {
    const bool go = loop_cap > 0 && guard_holds(count, baseline);
    cell[0] = go ? loop_cap - 1u : loop_cap;
    cell[1] = go ? 1u : 0u;
    cudaGraphSetConditional(h, go ? 1u : 0u);
}

// End of every body iteration: the next decision, stepping the cell. It is specialised (no
// baseline word; the cell stored as one 8-byte word when it is 8-byte aligned) because it runs
// once per iteration, where every instruction and parameter byte shows. It may follow the body's
// kernels through programmatic edges (see launch_body_setter): it then waits in
// cudaGridDependencySynchronize() until they have finished and their writes are visible; without
// such edges the wait returns at once. The cell is written only by these setters, all finished
// before this iteration began, so it is read before the wait: only the guard is read after it.
template <bool HasBaseline, bool Packed>
__global__ void while_body_setter(cudaGraphConditionalHandle h, const uint32_t* count, const uint32_t* baseline,
                                  uint32_t* cell) {
    uint32_t remaining, ran;
    if constexpr (Packed) {
        const uint64_t both = *reinterpret_cast<const uint64_t*>(cell);
        remaining = static_cast<uint32_t>(both);
        ran = static_cast<uint32_t>(both >> 32);
    } else {
        remaining = cell[0];
        ran = cell[1];
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
#endif
    const bool go = remaining > 0 && *count != (HasBaseline ? *baseline : 0u);
    if (go) {
        remaining -= 1;
        ran += 1;
        if constexpr (Packed) {
            *reinterpret_cast<uint64_t*>(cell) = (static_cast<uint64_t>(ran) << 32) | remaining;
        } else {
            cell[0] = remaining;
            cell[1] = ran;
        }
    }
    cudaGraphSetConditional(h, go ? 1u : 0u);
}

__global__ void switch_setter(cudaGraphConditionalHandle h, const uint32_t* count) { cudaGraphSetConditional(h, *count); }

enum Kind { kIf, kWhile, kSwitch };

struct Conditional : Handle<0x434f4e44u> {
    gpuStream_t origin = nullptr;
    gpuStream_t body = nullptr;
    int device = 0;
    Kind kind = kIf;
    cudaGraphConditionalHandle handle{};
    gpuGraphNode_t node = nullptr;
    std::vector<gpuGraph_t> bodies;
    std::vector<bool> opened;
    int open = -1;  // the case whose body is being captured, -1 when none
    bool ended = false;
    const uint32_t* count = nullptr;
    const uint32_t* baseline = nullptr;
    uint32_t* cell = nullptr;
    uint32_t loop_cap = 0;
    gpuGraph_t root = nullptr;  // the graph of the outermost capture this node is recorded in
};

void open_body(Conditional* c, int index) {
    DeviceGuard guard(c->device);
    body_graph_add(c->bodies[index], c->root);
    gpuError_t e = cudaStreamBeginCaptureToGraph(c->body, c->bodies[index], nullptr, nullptr, 0,
                                                 cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess) {
        body_graph_remove(c->bodies[index]);
        check(e, "streamBeginCaptureToGraph(body)");
    }
    c->opened[index] = true;
    c->open = index;
    if (c->kind == kWhile) {
        try {
            WhileFold loop;
            loop.body = c->bodies[index];
            loop.root = c->root;
            loop.handle = static_cast<uint64_t>(c->handle);
            loop.count = c->count;
            loop.baseline = c->baseline;
            loop.cell = c->cell;
            fold_open(loop);
        } catch (...) {  // no fold then: the body ends with the setter
        }
    }
}

// True when `node` is the last word of the body graph `body` captured on s: the stream's only
// capture dependency (the setter would follow it alone) and the graph's only node with no
// dependents (everything else in the body finishes before it starts). Throws nothing: it runs
// while the body capture is open.
bool last_word(gpuStream_t s, gpuGraph_t body, gpuGraphNode_t node) noexcept {
    cudaStreamCaptureStatus status{};
    const cudaGraphNode_t* deps = nullptr;
    size_t n = 0;
    if (gpuStreamGetCaptureInfo(s, &status, nullptr, nullptr, &deps, &n) != cudaSuccess) return false;
    if (status != cudaStreamCaptureStatusActive || n != 1 || deps[0] != node) return false;
    size_t count = 0;
    if (cudaGraphGetNodes(body, nullptr, &count) != cudaSuccess || count == 0) return false;
    std::vector<cudaGraphNode_t> nodes(count);
    if (cudaGraphGetNodes(body, nodes.data(), &count) != cudaSuccess) return false;
    bool found = false;
    for (size_t i = 0; i < count; ++i) {
        size_t after = 0;
#if CUDART_VERSION >= 13000
        if (cudaGraphNodeGetDependentNodes(nodes[i], nullptr, nullptr, &after) != cudaSuccess) return false;
#else
        if (cudaGraphNodeGetDependentNodes_v2(nodes[i], nullptr, nullptr, &after) != cudaSuccess) return false;
#endif
        if (nodes[i] == node) {
            if (after != 0) return false;
            found = true;
        } else if (after == 0) {
            return false;
        }
    }
    return found;
}

// Ends a WHILE iteration with the body's last compaction where it is the body's last word (the
// fold: its node is rewritten to set the condition); false, leaving the body as it was, otherwise.
// Clears the runtime's last error only for its own failed calls (close_body read it before).
bool fold_body(Conditional* c, int index) noexcept {
    FoldSlot f = fold_close(c->bodies[index]);
    if (!f.node || !f.enable || !last_word(c->body, c->bodies[index], f.node)) {
        (void)cudaGetLastError();
        return false;
    }
    if (f.enable->enable() != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return true;
}

// True when everything the next node captured on s depends on is a kernel node (false when that
// cannot be told). Throws nothing: it runs while a body capture is open.
bool follows_kernels_only(gpuStream_t s) noexcept {
    cudaStreamCaptureStatus status{};
    const cudaGraphNode_t* deps = nullptr;
    size_t n = 0;
    if (gpuStreamGetCaptureInfo(s, &status, nullptr, nullptr, &deps, &n) != cudaSuccess) return false;
    if (status != cudaStreamCaptureStatusActive || n == 0) return false;
    for (size_t i = 0; i < n; ++i) {
        cudaGraphNodeType type{};
        if (cudaGraphNodeGetType(deps[i], &type) != cudaSuccess || type != cudaGraphNodeTypeKernel) return false;
    }
    return true;
}

// The setter that ends every WHILE iteration, captured on the body stream. Where the device has
// programmatic dependent launch (compute capability >= 9.0) and the setter follows kernel nodes
// only, its edges from them are programmatic from their launch-completion port: the GPU may start
// the setter as soon as every block of those kernels has begun, instead of after a full
// kernel-to-kernel handoff, and cudaGridDependencySynchronize() in the setter still waits for
// them to finish and their writes to be visible before it reads the guard words. On the H200 this
// took 0.25 us off every iteration (benchmarks/RESULTS.md).
gpuError_t launch_body_setter(Conditional* c) noexcept {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, c->device) != cudaSuccess) major = 0;
    if (major >= 9 && follows_kernels_only(c->body)) {
        cudaStreamCaptureStatus status{};
        const cudaGraphNode_t* deps = nullptr;
        size_t n = 0;
        gpuError_t e = gpuStreamGetCaptureInfo(c->body, &status, nullptr, nullptr, &deps, &n);
        if (e != cudaSuccess) return e;
        std::vector<cudaGraphNode_t> nodes(deps, deps + n);
        std::vector<cudaGraphEdgeData> edges(n);
        for (cudaGraphEdgeData& edge : edges) {
            edge = cudaGraphEdgeData{};
            edge.type = cudaGraphDependencyTypeProgrammatic;
            edge.from_port = cudaGraphKernelNodePortLaunchCompletion;
        }
        e = cudaStreamUpdateCaptureDependencies(c->body, nodes.data(), edges.data(), n,
                                                cudaStreamSetCaptureDependencies);
        if (e != cudaSuccess) return e;
    }
    const bool packed = reinterpret_cast<uintptr_t>(c->cell) % 8 == 0;
    if (c->baseline) {
        if (packed) while_body_setter<true, true><<<1, 1, 0, c->body>>>(c->handle, c->count, c->baseline, c->cell);
        else while_body_setter<true, false><<<1, 1, 0, c->body>>>(c->handle, c->count, c->baseline, c->cell);
    } else {
        if (packed) while_body_setter<false, true><<<1, 1, 0, c->body>>>(c->handle, c->count, nullptr, c->cell);
        else while_body_setter<false, false><<<1, 1, 0, c->body>>>(c->handle, c->count, nullptr, c->cell);
    }
    return cudaGetLastError();
}

void close_body(Conditional* c) {
    if (c->open < 0) return;
    DeviceGuard guard(c->device);
    const int index = c->open;
    c->open = -1;
    gpuError_t le = cudaGetLastError();  // an error left by the body's own launches
    if (c->kind == kWhile && !fold_body(c, index)) {
        const gpuError_t se = launch_body_setter(c);
        if (le == cudaSuccess) le = se;
    }
    gpuGraph_t g = nullptr;
    gpuError_t e = cudaStreamEndCapture(c->body, &g);
    body_graph_remove(c->bodies[index]);
    check(le, "while setter launch");
    check(e, "streamEndCapture(body)");
}

void add_empty_where_needed(Conditional* c) {
    for (gpuGraph_t b : c->bodies) {
        size_t n = 0;
        check(cudaGraphGetNodes(b, nullptr, &n), "graphGetNodes(body)");
        if (n == 0) {
            gpuGraphNode_t e = nullptr;
            check(cudaGraphAddEmptyNode(&e, b, nullptr, 0), "graphAddEmptyNode(body)");
        }
    }
}

}  // namespace

EAGLE_EXPORT eagle_backend_status eagle_backend_conditional_create(const struct eagle_backend_conditional_desc* desc,
                                                                   eagle_backend_conditional* out) {
    return guarded("eagle_backend_conditional_create", [&] {
        auto d = read_desc(desc, "desc");
        require(out, "out");
        check_flags(d.flags, 0, "conditional desc->flags");
        if (!d.count_ptr) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "count_ptr is 0");
        if (!d.origin) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "origin 0 (the legacy stream) is never being captured");
        auto c = std::make_unique<Conditional>();
        if (d.case_count) {
            if (d.baseline_ptr || d.counter_ptr)
                fail(EAGLE_BACKEND_INVALID_ARGUMENT, "a SWITCH takes no baseline_ptr or counter_ptr");
            if (!native::has_switch())
                fail(EAGLE_BACKEND_UNSUPPORTED, "SWITCH conditional nodes need a CUDA 12.8 or newer driver");
            c->kind = kSwitch;
        } else if (d.counter_ptr) {
            if (d.loop_cap < 1) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "a WHILE needs loop_cap >= 1");
            c->kind = kWhile;
        }
        c->device = resolve_device(d.device, d.origin, true);
        c->origin = as_stream(d.origin);
        c->count = reinterpret_cast<const uint32_t*>(d.count_ptr);
        c->baseline = reinterpret_cast<const uint32_t*>(d.baseline_ptr);
        c->cell = reinterpret_cast<uint32_t*>(d.counter_ptr);
        c->loop_cap = d.loop_cap;
        DeviceGuard guard(c->device);
        CaptureInfo ci = capture_info(c->origin);
        if (ci.status != cudaStreamCaptureStatusActive)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the origin stream is not being captured");
        check(cudaGraphConditionalHandleCreate(&c->handle, ci.graph, 0, 0), "graphConditionalHandleCreate");
        // A conditional created on a body stream is recorded into that body: its root is the body's.
        c->root = body_graph_root(ci.graph);
        switch (c->kind) {
            case kIf: if_setter<<<1, 1, 0, c->origin>>>(c->handle, c->count, c->baseline); break;
            case kWhile:
                while_entry_setter<<<1, 1, 0, c->origin>>>(c->handle, c->count, c->baseline, c->cell, c->loop_cap);
                break;
            case kSwitch: switch_setter<<<1, 1, 0, c->origin>>>(c->handle, c->count); break;
        }
        check(cudaGetLastError(), "conditional setter launch");
        ci = capture_info(c->origin);
        cudaGraphNodeParams p{};
        p.type = cudaGraphNodeTypeConditional;
        p.conditional.handle = c->handle;
        p.conditional.type = c->kind == kIf ? cudaGraphCondTypeIf
                             : c->kind == kWhile ? cudaGraphCondTypeWhile
                                                 : cudaGraphCondTypeSwitch;
        p.conditional.size = c->kind == kSwitch ? d.case_count : 1;
        check(cudaGraphAddNode(&c->node, ci.graph, ci.deps.data(), nullptr, ci.deps.size(), &p), "graphAddNode(conditional)");
        c->bodies.assign(p.conditional.phGraph_out, p.conditional.phGraph_out + p.conditional.size);
        c->opened.assign(c->bodies.size(), false);
        native::remember_bodies(c->node, c->bodies);
        check(cudaStreamUpdateCaptureDependencies(c->origin, &c->node, nullptr, 1, cudaStreamSetCaptureDependencies),
              "streamUpdateCaptureDependencies");
        check(cudaStreamCreateWithFlags(&c->body, cudaStreamNonBlocking), "streamCreateWithFlags(body)");
        stream_register(c->body, c->device);
        try {
            *out = publish<eagle_backend_conditional>(c);
        } catch (...) {
            stream_unregister(c->body);
            (void)cudaStreamDestroy(c->body);
            throw;
        }
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_conditional_begin(eagle_backend_conditional conditional,
                                                                  uint64_t* body_stream) {
    return guarded("eagle_backend_conditional_begin", [&] {
        auto* c = from_handle<Conditional>(conditional, "conditional");
        require(body_stream, "body_stream");
        if (c->ended) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the conditional has ended");
        if (c->open >= 0 || c->opened[0]) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the body was already begun");
        open_body(c, 0);
        *body_stream = as_raw(c->body);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_conditional_begin_case(eagle_backend_conditional conditional,
                                                                       uint32_t index, uint64_t* body_stream) {
    return guarded("eagle_backend_conditional_begin_case", [&] {
        auto* c = from_handle<Conditional>(conditional, "conditional");
        require(body_stream, "body_stream");
        if (c->kind != kSwitch) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "begin_case is for a SWITCH only");
        if (c->ended) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the conditional has ended");
        if (index >= c->bodies.size())
            fail(EAGLE_BACKEND_INDEX, "case " + std::to_string(index) + " of " + std::to_string(c->bodies.size()));
        if (c->opened[index]) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "case " + std::to_string(index) + " was already opened");
        close_body(c);
        open_body(c, static_cast<int>(index));
        *body_stream = as_raw(c->body);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_conditional_body_stream(eagle_backend_conditional conditional,
                                                                        uint64_t* body_stream) {
    return guarded("eagle_backend_conditional_body_stream", [&] {
        auto* c = from_handle<Conditional>(conditional, "conditional");
        require(body_stream, "body_stream");
        if (c->open < 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "no body is open");
        *body_stream = as_raw(c->body);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_conditional_is_loop(eagle_backend_conditional conditional,
                                                                    int32_t* is_loop) {
    return guarded("eagle_backend_conditional_is_loop", [&] {
        *require(is_loop, "is_loop") = from_handle<Conditional>(conditional, "conditional")->kind == kWhile ? 1 : 0;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_conditional_end(eagle_backend_conditional conditional) {
    return guarded("eagle_backend_conditional_end", [&] {
        auto* c = from_handle<Conditional>(conditional, "conditional");
        if (c->ended) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the conditional has already ended");
        close_body(c);
        // A WHILE whose body was never opened still needs its step setter, or it would never stop.
        if (c->kind == kWhile && !c->opened[0]) {
            open_body(c, 0);
            close_body(c);
        }
        add_empty_where_needed(c);
        c->ended = true;
    });
}

EAGLE_EXPORT void eagle_backend_conditional_release(eagle_backend_conditional conditional) {
    guarded_void([&] {
        std::unique_ptr<Conditional> c(retire<Conditional>(conditional));
        if (!c) return;  // NULL, released or foreign
        {
            DeviceGuard guard(c->device);
            if (c->open >= 0) {
                (void)fold_close(c->bodies[c->open]);
                // Abandoning the body breaks the origin's capture, as documented, and the runtime
                // then frees what the origin recorded: forget those nodes while the capture can
                // still name its graph (their addresses will be reused by later graphs).
                forget_capture(c->origin);
                gpuGraph_t g = nullptr;
                (void)cudaStreamEndCapture(c->body, &g);
                (void)cudaGetLastError();
                body_graph_remove(c->bodies[c->open]);
                (void)cudaStreamEndCapture(c->origin, &g);
                if (g) (void)cudaGraphDestroy(g);
                (void)cudaGetLastError();
            }
            if (c->body) {
                stream_unregister(c->body);
                (void)cudaStreamDestroy(c->body);
            }
            c.reset();  // under the guard, like the rest
        }
    });
}
