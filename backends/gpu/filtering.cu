// filtering.cu -- compact_device (bit 12) and reorder_device (per-symbol, minor 2) with eagle's own
// kernels (filtering_kernels.cuh: a single-pass scan with decoupled look-back, one pass over the
// mask; the reorder in two launches whatever the number of planes).
// Enqueue only: no allocation, no synchronisation, no host read of device memory; capturable.
#if defined(EAGLE_GPU_HIP)
#include <hip/hip_runtime.h>
#endif

#include <cstring>

#include "filtering_kernels.cuh"
#include "gpu.h"

using namespace eagle;
using namespace eagle::gpu;
using namespace eagle::gpu::filtering;

namespace {

inline size_t align256(size_t v) { return (v + 255) / 256 * 256; }

void check_launch(const char* what) { check(gpuGetLastError(), what); }

template <int T, int I>
void launch_compact_variant(uint32_t tiles, gpuStream_t s, const CompactArgs& a) {
    compact_kernel<T, I><<<tiles, T, 0, s>>>(a);
}

void launch_compact(int variant, uint32_t tiles, gpuStream_t s, const CompactArgs& a) {
    switch (variant) {
#define EAGLE_X(i, t, it) \
    case i: launch_compact_variant<t, it>(tiles, s, a); break;
        EAGLE_COMPACT_VARIANTS(EAGLE_X)
#undef EAGLE_X
        default: fail(EAGLE_BACKEND_ERROR, "compaction variant out of range");
    }
}

#if !defined(EAGLE_GPU_HIP)
// The kernel entry of a variant (the WHILE fold rewrites its node with the same entry).
template <int T, int I>
const void* compact_entry_variant() {
    return reinterpret_cast<const void*>(&compact_kernel<T, I>);
}

const void* compact_entry(int variant) {
    switch (variant) {
#define EAGLE_X(i, t, it) \
    case i: return compact_entry_variant<t, it>();
        EAGLE_COMPACT_VARIANTS(EAGLE_X)
#undef EAGLE_X
        default: fail(EAGLE_BACKEND_ERROR, "compaction variant out of range");
    }
}

// Rewrites a captured compaction node with the fold's arguments (same entry, grid and block).
struct CompactFold final : FoldEnabler {
    CompactFold(gpuGraphNode_t n, const CompactArgs& args, const void* e, uint32_t g, uint32_t b)
        : node(n), a(args), entry(e), grid(g), block(b) {}
    gpuError_t enable() noexcept override {
        cudaKernelNodeParams p{};
        void* args[] = {&a};
        p.func = const_cast<void*>(entry);
        p.gridDim = dim3(grid);
        p.blockDim = dim3(block);
        p.sharedMemBytes = 0;  // the compaction kernels use static shared memory only
        p.kernelParams = args;
        p.extra = nullptr;
        return cudaGraphKernelNodeSetParams(node, &p);
    }
    gpuGraphNode_t node;
    CompactArgs a;
    const void* entry;
    uint32_t grid, block;
};

// The WHILE fold (gpu.h): when s is capturing the body of a WHILE whose guard is this compaction's
// count, offers the kernel node just captured (launched with loop_set = 0) to end the body's
// iterations; the offer, if taken at the body's end, rewrites the node with loop_set = 1.
void offer_while_fold(gpuStream_t s, const CompactArgs& launched, const void* entry, uint32_t grid, uint32_t block) {
    WhileFold f;
    if (!while_fold_target(s, launched.total, &f)) return;
    gpuStreamCaptureStatus status{};
    const gpuGraphNode_t* deps = nullptr;
    size_t n = 0;
    gpuGraphNodeType type{};
    if (gpuStreamGetCaptureInfo(s, &status, nullptr, nullptr, &deps, &n) != gpuSuccess ||
        status != gpuStreamCaptureStatusActive || n != 1 || gpuGraphNodeGetType(deps[0], &type) != gpuSuccess ||
        type != gpuGraphNodeTypeKernel) {
        (void)gpuGetLastError();  // no fold: the body ends with the setter
        return;
    }
    gpuGraphNode_t node = deps[0];
    CompactArgs a = launched;
    a.loop_handle = f.handle;
    a.loop_cell = f.cell;
    a.loop_set = 1;
    while_fold_offer(f.body, node, std::make_unique<CompactFold>(node, a, entry, grid, block));
}
#endif

// Scratch of a compaction of n samples: the ticket word, then one status word per tile of the
// smallest variant (so any variant fits in it).
size_t compact_scratch(uint64_t n) {
    const uint64_t tiles = (n + kMinCompactTile - 1) / kMinCompactTile;
    return 256 + align256(static_cast<size_t>(tiles) * 8);
}

}  // namespace

EAGLE_EXPORT eagle_backend_status eagle_backend_compact_device(struct eagle_backend_compact_desc* desc) {
    return guarded("eagle_backend_compact_device", [&] {
        auto d = read_desc(desc, "desc");
        check_flags(d.flags, EAGLE_BACKEND_COMPACT_MASK_IS_DROP, "compact desc->flags");
        check_sample_count(d.n, "desc->n");
        const size_t need = compact_scratch(static_cast<uint64_t>(d.n));
        if (scratch_query_or_check(desc, d, static_cast<int64_t>(need), "compaction")) return;
        if (!d.count || (d.n > 0 && (!d.mask || !d.index_map)))
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "a NULL mask, index_map or count address");
        if (d.fire && d.span && !(d.theta > 0.0f && d.theta <= 1.0f))
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "theta must be in (0, 1] when fire is given");
        const int dev = resolve_device(d.device, d.stream, true);
        DeviceGuard guard(dev);
        gpuStream_t s = as_stream(d.stream);
        char* scratch = reinterpret_cast<char*>(d.scratch);
        const int variant = select_compact_variant(d.n);
        const int tile = compact_tile(variant);
        const uint32_t tiles = static_cast<uint32_t>((d.n + tile - 1) / tile);
        CompactArgs a{};
        a.mask = reinterpret_cast<const uint8_t*>(d.mask);
        a.out = reinterpret_cast<int32_t*>(d.index_map);
        a.n = static_cast<uint32_t>(d.n);
        a.flip = (d.flags & EAGLE_BACKEND_COMPACT_MASK_IS_DROP) ? 0xffffu : 0u;
        a.ticket = reinterpret_cast<unsigned long long*>(scratch);
        a.status = reinterpret_cast<unsigned long long*>(scratch + 256);
        a.total = reinterpret_cast<uint32_t*>(d.count);
        a.live32 = reinterpret_cast<uint32_t*>(d.live32);
        a.span = reinterpret_cast<const uint32_t*>(d.span);
        a.fire = reinterpret_cast<uint32_t*>(d.fire);
        a.theta = d.theta;
        a.tiles = tiles;
        if (tiles == 0) {
            EAGLE_GPU_LAUNCH(empty_compact_kernel, 1, 1, s, a);
            check_launch("compact (empty)");
#if !defined(EAGLE_GPU_HIP)
            offer_while_fold(s, a, reinterpret_cast<const void*>(&empty_compact_kernel), 1, 1);
#endif
            return;
        }
        launch_compact(variant, tiles, s, a);
        check_launch("compact scan");
#if !defined(EAGLE_GPU_HIP)
        offer_while_fold(s, a, compact_entry(variant), tiles, static_cast<uint32_t>(kCompactThreads[variant]));
#endif
    });
}

// Reorder: the scratch layout and the kernels' arguments come from reorder_setup
// (filtering_kernels.cuh), shared with the sweep. Like the compaction's, the scratch is zero-filled
// by the caller before its first use and keeps the kernels' state.
EAGLE_EXPORT eagle_backend_status eagle_backend_reorder_device(struct eagle_backend_reorder_desc* desc) {
    return guarded("eagle_backend_reorder_device", [&] {
        auto d = read_desc(desc, "desc");
        check_flags(d.flags, EAGLE_BACKEND_COMPACT_MASK_IS_DROP, "reorder desc->flags");
        check_sample_count(d.n, "desc->n");
        if (d.plane_count > 64) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "plane_count > 64");
        if (d.plane_count > 0) require(d.planes, "planes");
        const uint64_t n = static_cast<uint64_t>(d.n);
        ReorderPlane planes[64];
        for (uint32_t i = 0; i < d.plane_count; ++i) {
            const auto& p = d.planes[i];
            const uint32_t es = p.elem_size;
            if (es != 1 && es != 2 && es != 4 && es != 8 && es != 16)
                fail(EAGLE_BACKEND_UNSUPPORTED, "planes[" + std::to_string(i) + "].elem_size " + std::to_string(es) +
                                                    " is not 1, 2, 4, 8 or 16");
            const int64_t pitch = p.pitch_bytes ? p.pitch_bytes : static_cast<int64_t>(n * es);
            planes[i] = ReorderPlane{reinterpret_cast<char*>(p.data), pitch, p.width ? p.width : 1u, es};
        }
        const size_t need = reorder_scratch_bytes(n, planes, d.plane_count);
        if (scratch_query_or_check(desc, d, static_cast<int64_t>(need), "reorder")) return;
        if (!d.span) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "span is NULL");
        if (n > 0 && !d.mask) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "mask is NULL with n > 0");
        for (uint32_t i = 0; i < d.plane_count; ++i) {
            const auto& p = d.planes[i];
            const int64_t pitch = planes[i].pitch;
            if (n > 0 && (!p.data || p.data % p.elem_size || pitch % p.elem_size || pitch < static_cast<int64_t>(n * p.elem_size)))
                fail(EAGLE_BACKEND_INVALID_ARGUMENT, "planes[" + std::to_string(i) +
                                                         "]: NULL, misaligned, or pitch shorter than a row");
        }
        const int dev = resolve_device(d.device, d.stream, true);
        DeviceGuard guard(dev);
        gpuStream_t s = as_stream(d.stream);
        auto* gate = reinterpret_cast<uint32_t*>(d.fire);
        auto* span = reinterpret_cast<uint32_t*>(d.span);
        const uint32_t tiles = reorder_tiles(n);
        if (tiles == 0) {
            EAGLE_GPU_LAUNCH(reorder_empty_kernel, 1, 1, s, gate, span);
            check_launch("reorder (empty)");
            return;
        }
        ReorderArgs a;
        PlaneSet ps;
        reorder_setup(reinterpret_cast<char*>(d.scratch), static_cast<uint32_t>(n),
                      reinterpret_cast<const uint8_t*>(d.mask), (d.flags & EAGLE_BACKEND_COMPACT_MASK_IS_DROP) != 0,
                      gate, span, reinterpret_cast<int32_t*>(d.perm), reinterpret_cast<int32_t*>(d.inv), planes,
                      d.plane_count, &a, &ps);
        EAGLE_GPU_LAUNCH(reorder_scan_kernel, tiles, kReorderThreads, s, a, ps);
        check_launch("reorder scan");
        EAGLE_GPU_LAUNCH(reorder_move_kernel, tiles, kReorderThreads, s, a, ps);
        check_launch("reorder move");
    });
}
