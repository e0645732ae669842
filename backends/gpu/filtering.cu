// filtering.cu -- compact_device (bit 12) and reorder_device (per-symbol, minor 2) with eagle's own
// kernels: a single-pass scan with decoupled look-back (one pass over the mask, tiles ordered by a
// ticket so every tile's predecessors are already running), then stable scatters.
// Enqueue only: no allocation, no synchronisation, no host read of device memory; capturable.
#if defined(EAGLE_GPU_HIP)
#include <hip/hip_runtime.h>
#endif

#include <cstring>

#include "device_intrinsics.h"
#include "gpu.h"

using namespace eagle;
using namespace eagle::gpu;

namespace {

constexpr int kThreads = 256;
constexpr int kItems = 16;
constexpr int kTile = kThreads * kItems;  // 4096 samples a tile
// A tile's status word: [epoch:30 | flag:2 | value:32]. A word of another epoch reads as "not
// published", so the status array needs no clearing between compactions (see ScanArgs::epoch).
constexpr unsigned long long kAggregate = 1ull << 32;
constexpr unsigned long long kPrefix = 2ull << 32;
constexpr unsigned long long kFlagBits = 3ull << 32;
__device__ __forceinline__ unsigned long long epoch_tag(uint32_t epoch) {
    return static_cast<unsigned long long>(epoch & 0x3fffffffu) << 34;
}

enum ScanMode : int { kCompact = 0, kReorder = 1 };

struct ScanArgs {
    const uint8_t* mask;
    int32_t* out;                    // compact: index_map; reorder: new position code per position
    uint32_t n;
    uint32_t drop;                   // MASK_IS_DROP
    const uint32_t* limit;           // reorder: span (positions >= *limit take no part)
    const uint32_t* gate;            // reorder: fire (nothing when *gate == 0)
    unsigned long long* status;      // per-tile status words (see epoch_tag)
    uint32_t* ticket;                // tile ticket: 0 at the launch
    // With `epoch` set, the scratch keeps its own state between launches: the last block to finish
    // resets ticket and done and advances the epoch, so no memset precedes the next launch (the
    // scratch must be zero-filled before its first use). Without it, status is zeroed before the
    // launch and the epoch is 0.
    uint32_t* epoch;
    uint32_t* done;
    uint32_t* total;                 // receives the number kept
    uint32_t* live32;
    const uint32_t* span;
    uint32_t* fire;
    float theta;
    uint32_t tiles;
};

__device__ __forceinline__ unsigned long long load_status(const unsigned long long* p) {
    return *reinterpret_cast<const volatile unsigned long long*>(p);
}

__device__ __forceinline__ void store_status(unsigned long long* p, unsigned long long v) {
    __threadfence();
    atomicExch(p, v);
}

__device__ void write_trigger(const ScanArgs& a, uint32_t kept) {
    *a.total = kept;
    if (a.live32) *a.live32 = kept;
    if (a.fire && a.span) {
        const uint32_t span = *a.span;
        *a.fire = (kept < span && static_cast<float>(kept) <= a.theta * static_cast<float>(span)) ? 1u : 0u;
    }
}

template <int Mode>
__global__ void __launch_bounds__(kThreads) scan_kernel(ScanArgs a) {
    constexpr int kWarps = kThreads / 32;
    __shared__ uint32_t s_tile;
    __shared__ uint32_t s_epoch;
    __shared__ uint32_t s_warp[kWarps];
    __shared__ uint32_t s_base;
    __shared__ int32_t s_out[Mode == kCompact ? kTile : 1];  // the tile's kept indices, staged
    if (Mode == kReorder && a.gate && *a.gate == 0) return;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    if (tid == 0) {
        s_tile = atomicAdd(a.ticket, 1u);
        s_epoch = a.epoch ? *reinterpret_cast<volatile uint32_t*>(a.epoch) : 0u;
    }
    __syncthreads();
    const uint32_t tile = s_tile;
    // A ticket past the last tile means a scratch that was not zero-filled before its first use
    // (the header's rule): touch nothing outside the caller's buffers.
    if (tile >= a.tiles) return;
    const unsigned long long tag = epoch_tag(s_epoch);
    uint32_t lim = a.n;
    if (Mode == kReorder) lim = min(a.n, *a.limit);
    const uint64_t first = static_cast<uint64_t>(tile) * kTile + static_cast<uint64_t>(tid) * kItems;

    // This thread's kItems consecutive samples.
    uint8_t m[kItems];
    if (first + kItems <= a.n && (reinterpret_cast<uintptr_t>(a.mask + first) & 15) == 0) {
        uint4 v = *reinterpret_cast<const uint4*>(a.mask + first);
        memcpy(m, &v, 16);
    } else {
#pragma unroll
        for (int k = 0; k < kItems; ++k) m[k] = (first + k < a.n) ? a.mask[first + k] : 0;
    }
    uint32_t bits = 0;
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
        const bool set = m[k] != 0;
        const bool keep = (first + k < lim) && (a.drop ? !set : set);
        bits |= (keep ? 1u : 0u) << k;
    }
    const uint32_t mine = __popc(bits);

    // Block-wide scan of the per-thread counts: warp shuffles, then one warp over the warp totals.
    uint32_t incl = mine;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const uint32_t up = gpu_shfl_up32(incl, d);
        if (lane >= d) incl += up;
    }
    if (lane == 31) s_warp[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        uint32_t w = lane < kWarps ? s_warp[lane] : 0;
#pragma unroll
        for (int d = 1; d < kWarps; d <<= 1) {
            const uint32_t up = gpu_shfl_up32(w, d);
            if (lane >= d) w += up;
        }
        if (lane < kWarps) s_warp[lane] = w;
    }
    __syncthreads();
    const uint32_t local = (warp ? s_warp[warp - 1] : 0u) + incl - mine;  // kept before this thread, in the tile
    const uint32_t aggregate = s_warp[kWarps - 1];

    // Decoupled look-back by warp 0: publish the aggregate, then read 32 predecessors at a time
    // until one of them carries its inclusive prefix.
    if (warp == 0) {
        uint32_t exclusive = 0;
        if (tile == 0) {
            if (lane == 0) store_status(&a.status[0], tag | kPrefix | aggregate);
        } else {
            if (lane == 0) store_status(&a.status[tile], tag | kAggregate | aggregate);
            int64_t top = static_cast<int64_t>(tile) - 1;
            while (true) {
                const int64_t j = top - lane;
                const unsigned long long w = j >= 0 ? load_status(&a.status[j]) : tag | kPrefix;
                const unsigned long long flag = (w & ~(kFlagBits | 0xffffffffull)) == tag ? (w & kFlagBits) : 0ull;
                if (gpu_ballot32(flag == 0)) continue;  // a predecessor not published yet: read again
                const unsigned prefixes = gpu_ballot32(flag == kPrefix);
                const int stop = prefixes ? __ffs(prefixes) - 1 : 31;  // nearest predecessor with a prefix
                uint32_t v = lane <= stop ? static_cast<uint32_t>(w) : 0u;
#pragma unroll
                for (int d = 16; d > 0; d >>= 1) v += gpu_shfl_down32(v, d);
                exclusive += gpu_shfl32(v, 0);
                if (prefixes) break;
                top -= 32;
            }
            if (lane == 0) store_status(&a.status[tile], tag | kPrefix | (exclusive + aggregate));
        }
        if (lane == 0) {
            s_base = exclusive;
            if (tile == a.tiles - 1) {
                if (Mode == kCompact)
                    write_trigger(a, exclusive + aggregate);
                else
                    *a.total = exclusive + aggregate;
            }
        }
    }
    __syncthreads();
    if (Mode == kCompact) {
        // Stage the tile's kept indices in shared memory, then write them out coalesced.
        uint32_t pos = local;
#pragma unroll
        for (int k = 0; k < kItems; ++k)
            if (bits & (1u << k)) s_out[pos++] = static_cast<int32_t>(first + k);
        __syncthreads();
        int32_t* out = a.out + s_base;
        for (uint32_t i = tid; i < aggregate; i += kThreads) out[i] = s_out[i];
    } else {
        uint32_t pos = s_base + local;  // kept before this thread's first sample
#pragma unroll
        for (int k = 0; k < kItems; ++k) {
            const uint64_t p = first + k;
            if (p >= lim) break;
            if (bits & (1u << k)) {
                a.out[p] = static_cast<int32_t>(pos++);
            } else {
                // dropped: its rank among the dropped, encoded negative (the kept total is not known yet)
                a.out[p] = -1 - static_cast<int32_t>(p - pos);
            }
        }
    }
    if (a.epoch) {
        // The last block to finish leaves the scratch ready for the next launch.
        __syncthreads();
        if (tid == 0) {
            __threadfence();
            if (atomicAdd(a.done, 1u) == a.tiles - 1) {
                *a.ticket = 0u;
                *a.done = 0u;
                *a.epoch = s_epoch + 1u;
                __threadfence();
            }
        }
    }
}

__global__ void empty_compact_kernel(ScanArgs a) { write_trigger(a, 0); }

__device__ __forceinline__ int32_t destination(int32_t code, uint32_t total) {
    return code >= 0 ? code : static_cast<int32_t>(total) + (-1 - code);
}

struct alignas(16) Elem16 {
    unsigned long long lo, hi;
};

// Gathers rows of a plane into tmp (row r at tmp + r * n), positions < *span.
template <class T>
__global__ void gather_kernel(const uint32_t* gate, const uint32_t* span, uint32_t n, char* data, int64_t pitch,
                              uint32_t width, T* tmp) {
    if (gate && *gate == 0) return;
    const uint32_t lim = min(n, *span);
    for (uint32_t r = blockIdx.y; r < width; r += gridDim.y) {
        const T* row = reinterpret_cast<const T*>(data + static_cast<int64_t>(r) * pitch);
        for (uint64_t p = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; p < lim;
             p += static_cast<uint64_t>(gridDim.x) * blockDim.x)
            tmp[static_cast<uint64_t>(r) * n + p] = row[p];
    }
}

template <class T>
__global__ void scatter_kernel(const uint32_t* gate, const uint32_t* span, const uint32_t* total, const int32_t* code,
                               uint32_t n, char* data, int64_t pitch, uint32_t width, const T* tmp) {
    if (gate && *gate == 0) return;
    const uint32_t lim = min(n, *span);
    const uint32_t kept = *total;
    for (uint32_t r = blockIdx.y; r < width; r += gridDim.y) {
        T* row = reinterpret_cast<T*>(data + static_cast<int64_t>(r) * pitch);
        for (uint64_t p = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; p < lim;
             p += static_cast<uint64_t>(gridDim.x) * blockDim.x)
            row[destination(code[p], kept)] = tmp[static_cast<uint64_t>(r) * n + p];
    }
}

// perm: position -> sample; inv: sample -> position. tmp holds the old perm.
__global__ void perm_kernel(const uint32_t* gate, const uint32_t* span, const uint32_t* total, const int32_t* code,
                            uint32_t n, int32_t* perm, int32_t* inv, const int32_t* tmp) {
    if (gate && *gate == 0) return;
    const uint32_t lim = min(n, *span);
    const uint32_t kept = *total;
    for (uint64_t p = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; p < lim;
         p += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
        const int32_t q = destination(code[p], kept);
        const int32_t sample = tmp[p];
        if (perm) perm[q] = sample;
        if (inv && sample >= 0 && static_cast<uint32_t>(sample) < n) inv[sample] = q;
    }
}

__global__ void reorder_finish_kernel(uint32_t* gate, uint32_t* span, const uint32_t* total) {
    if (gate) {
        if (*gate == 0) return;
        *gate = 0;
    }
    *span = *total;
}

inline size_t align256(size_t v) { return (v + 255) / 256 * 256; }

uint32_t grid_for(uint64_t n, uint32_t block) {
    uint64_t g = (n + block - 1) / block;
    if (g == 0) g = 1;
    if (g > 65535u * 16u) g = 65535u * 16u;
    return static_cast<uint32_t>(g);
}

template <class T>
void move_plane(gpuStream_t s, const uint32_t* gate, const uint32_t* span, const uint32_t* total, const int32_t* code,
                uint32_t n, char* data, int64_t pitch, uint32_t width, void* tmp) {
    dim3 grid(grid_for(n, kThreads), width < 65535u ? width : 65535u);
    EAGLE_GPU_LAUNCH(gather_kernel<T>, grid, kThreads, s, gate, span, n, data, pitch, width, static_cast<T*>(tmp));
    EAGLE_GPU_LAUNCH(scatter_kernel<T>, grid, kThreads, s, gate, span, total, code, n, data, pitch, width,
                     static_cast<const T*>(tmp));
}

void check_launch(const char* what) { check(gpuGetLastError(), what); }

}  // namespace

EAGLE_EXPORT eagle_backend_status eagle_backend_compact_device(struct eagle_backend_compact_desc* desc) {
    return guarded("eagle_backend_compact_device", [&] {
        auto d = read_desc(desc, "desc");
        check_flags(d.flags, EAGLE_BACKEND_COMPACT_MASK_IS_DROP, "compact desc->flags");
        check_sample_count(d.n, "desc->n");
        const uint32_t tiles = static_cast<uint32_t>((d.n + kTile - 1) / kTile);
        const size_t need = 256 + align256(static_cast<size_t>(tiles) * 8);
        if (scratch_query_or_check(desc, d, static_cast<int64_t>(need), "compaction")) return;
        if (!d.count || (d.n > 0 && (!d.mask || !d.index_map)))
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "a NULL mask, index_map or count address");
        if (d.fire && d.span && !(d.theta > 0.0f && d.theta <= 1.0f))
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "theta must be in (0, 1] when fire is given");
        const int dev = resolve_device(d.device, d.stream, true);
        DeviceGuard guard(dev);
        gpuStream_t s = as_stream(d.stream);
        char* scratch = reinterpret_cast<char*>(d.scratch);
        ScanArgs a{};
        a.mask = reinterpret_cast<const uint8_t*>(d.mask);
        a.out = reinterpret_cast<int32_t*>(d.index_map);
        a.n = static_cast<uint32_t>(d.n);
        a.drop = d.flags & EAGLE_BACKEND_COMPACT_MASK_IS_DROP;
        a.ticket = reinterpret_cast<uint32_t*>(scratch);
        a.epoch = reinterpret_cast<uint32_t*>(scratch + 4);
        a.done = reinterpret_cast<uint32_t*>(scratch + 8);
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
            return;
        }
        EAGLE_GPU_LAUNCH(scan_kernel<kCompact>, tiles, kThreads, s, a);
        check_launch("compact scan");
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_reorder_device(struct eagle_backend_reorder_desc* desc) {
    return guarded("eagle_backend_reorder_device", [&] {
        auto d = read_desc(desc, "desc");
        check_flags(d.flags, EAGLE_BACKEND_COMPACT_MASK_IS_DROP, "reorder desc->flags");
        check_sample_count(d.n, "desc->n");
        if (d.plane_count > 64) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "plane_count > 64");
        if (d.plane_count > 0) require(d.planes, "planes");
        const uint64_t n = static_cast<uint64_t>(d.n);
        size_t plane_tmp = 0;
        for (uint32_t i = 0; i < d.plane_count; ++i) {
            const auto& p = d.planes[i];
            const uint32_t es = p.elem_size;
            if (es != 1 && es != 2 && es != 4 && es != 8 && es != 16)
                fail(EAGLE_BACKEND_UNSUPPORTED, "planes[" + std::to_string(i) + "].elem_size " + std::to_string(es) +
                                                    " is not 1, 2, 4, 8 or 16");
            const uint64_t width = p.width ? p.width : 1;
            plane_tmp = std::max<size_t>(plane_tmp, width * n * es);
        }
        const uint32_t tiles = static_cast<uint32_t>((n + kTile - 1) / kTile);
        const size_t off_status = 256;
        const size_t off_code = off_status + align256(static_cast<size_t>(tiles) * 8);
        const size_t off_perm = off_code + align256(n * 4);
        const size_t off_plane = off_perm + align256(n * 4);
        const size_t need = off_plane + align256(plane_tmp);
        if (scratch_query_or_check(desc, d, static_cast<int64_t>(need), "reorder")) return;
        if (!d.span) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "span is NULL");
        if (n > 0 && !d.mask) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "mask is NULL with n > 0");
        for (uint32_t i = 0; i < d.plane_count; ++i) {
            const auto& p = d.planes[i];
            const int64_t pitch = p.pitch_bytes ? p.pitch_bytes : static_cast<int64_t>(n * p.elem_size);
            if (n > 0 && (!p.data || p.data % p.elem_size || pitch % p.elem_size || pitch < static_cast<int64_t>(n * p.elem_size)))
                fail(EAGLE_BACKEND_INVALID_ARGUMENT, "planes[" + std::to_string(i) +
                                                         "]: NULL, misaligned, or pitch shorter than a row");
        }
        const int dev = resolve_device(d.device, d.stream, true);
        DeviceGuard guard(dev);
        gpuStream_t s = as_stream(d.stream);
        char* scratch = reinterpret_cast<char*>(d.scratch);
        auto* gate = reinterpret_cast<uint32_t*>(d.fire);
        auto* span = reinterpret_cast<uint32_t*>(d.span);
        auto* total = reinterpret_cast<uint32_t*>(scratch + 128);
        auto* code = reinterpret_cast<int32_t*>(scratch + off_code);
        if (tiles > 0) {
            ScanArgs a{};
            a.mask = reinterpret_cast<const uint8_t*>(d.mask);
            a.out = code;
            a.n = static_cast<uint32_t>(n);
            a.drop = d.flags & EAGLE_BACKEND_COMPACT_MASK_IS_DROP;
            a.limit = span;
            a.gate = gate;
            a.ticket = reinterpret_cast<uint32_t*>(scratch);
            a.status = reinterpret_cast<unsigned long long*>(scratch + off_status);
            a.total = total;
            a.tiles = tiles;
            check(gpuMemsetAsync(scratch, 0, off_code, s), "memsetAsync(scratch)");
            EAGLE_GPU_LAUNCH(scan_kernel<kReorder>, tiles, kThreads, s, a);
            check_launch("reorder scan");
            void* tmp = scratch + off_plane;
            for (uint32_t i = 0; i < d.plane_count; ++i) {
                const auto& p = d.planes[i];
                const uint32_t width = p.width ? p.width : 1;
                const int64_t pitch = p.pitch_bytes ? p.pitch_bytes : static_cast<int64_t>(n * p.elem_size);
                char* data = reinterpret_cast<char*>(p.data);
                const uint32_t nn = static_cast<uint32_t>(n);
                switch (p.elem_size) {
                    case 1: move_plane<uint8_t>(s, gate, span, total, code, nn, data, pitch, width, tmp); break;
                    case 2: move_plane<uint16_t>(s, gate, span, total, code, nn, data, pitch, width, tmp); break;
                    case 4: move_plane<uint32_t>(s, gate, span, total, code, nn, data, pitch, width, tmp); break;
                    case 8: move_plane<unsigned long long>(s, gate, span, total, code, nn, data, pitch, width, tmp); break;
                    default: move_plane<Elem16>(s, gate, span, total, code, nn, data, pitch, width, tmp); break;
                }
                check_launch("reorder plane");
            }
            if (d.perm || d.inv) {
                auto* perm = reinterpret_cast<int32_t*>(d.perm);
                auto* inv = reinterpret_cast<int32_t*>(d.inv);
                auto* old = reinterpret_cast<int32_t*>(scratch + off_perm);
                const uint32_t nn = static_cast<uint32_t>(n);
                if (perm) {
                    char* pd = reinterpret_cast<char*>(perm);
                    dim3 grid(grid_for(n, kThreads), 1);
                    EAGLE_GPU_LAUNCH(gather_kernel<uint32_t>, grid, kThreads, s, gate, span, nn, pd,
                                     static_cast<int64_t>(n * 4), 1u, reinterpret_cast<uint32_t*>(old));
                    EAGLE_GPU_LAUNCH(perm_kernel, grid_for(n, kThreads), kThreads, s, gate, span, total, code, nn, perm,
                                     inv, old);
                }
                check_launch("reorder perm");
            }
        } else {
            check(gpuMemsetAsync(total, 0, 4, s), "memsetAsync(total)");
        }
        EAGLE_GPU_LAUNCH(reorder_finish_kernel, 1, 1, s, gate, span, total);
        check_launch("reorder finish");
    });
}
