// filtering_kernels.cuh -- the device code of compaction and reorder, shared by filtering.cu (the
// cuda and hip backends) and by benchmarks/cuda/compact_sweep.cu (which times every variant).
//
// Compaction: one pass over the mask, a single-pass scan with decoupled look-back. A block takes a
// ticket (so every tile's predecessors are already running), loads its tile of T*I mask bytes in
// coalesced 16-byte chunks (lane l of a warp reads chunk l, then 32+l, ...: each load instruction
// covers 512 contiguous bytes), turns each chunk into 16 keep bits, scans the counts (warp
// shuffles, one barrier), stages the kept samples' tile-local offsets (uint16) in shared memory
// while warp 0 looks back, and writes them out coalesced after the second barrier. T and I are
// template parameters: the variants below are all compiled, and select_compact_variant(n) picks one.
//
// Scratch state (zero-filled by the caller before its first use, then kept by the kernels): word 0
// is [epoch:32 | ticket:32]. A block takes ticket t = atomicAdd(word, 1); the block that draws the
// last ticket of the launch (t == tiles - 1; every other block has drawn its ticket by then)
// stores (epoch + 1) << 32, so the next launch starts at ticket 0 with a new epoch. Tile status
// words are tagged with the epoch, so a word left by an earlier launch reads as "not published"
// and the status array needs no clearing. No memset node, no "done" counter.
//
// The WHILE fold (cuda): the thread that writes the count may also end an iteration of the WHILE
// whose guard that count is, setting the loop's condition itself (CompactArgs::loop_set; the
// backend's conditional.cu decides when a compaction may, gpu.h says how).
//
// Reorder: two kernels, both gated on *fire (an unfired reorder is two launches whose blocks read
// one word and exit). Kernel 1 scans the mask over positions < *span as above and moves every plane
// (all planes in one launch: descriptors in a __grid_constant__ parameter) out of place into the
// scratch: the kept sample of rank r to tmp[r], the dropped sample of rank d to tmp[span - 1 - d].
// A tile whose samples are all kept and all kept before it (it would not move) moves nothing and
// is marked "still". Kernel 2 copies tmp back for the positions < span that move (perm too, and
// writes inv for the moved samples); the block that draws its last ticket writes *span = kept and
// *fire = 0 (every block has read both before drawing its ticket).
#pragma once

#include <cstdint>

#include "device_intrinsics.h"

#if defined(EAGLE_GPU_HIP)
#define EAGLE_GRID_CONSTANT
#else
#define EAGLE_GRID_CONSTANT __grid_constant__
#endif

namespace eagle {
namespace gpu {
namespace filtering {

// ---------------------------------------------------------------------------------- variants
// X(index, threads per block, items per thread); items is a multiple of 16 (one 16-byte load each)
// and threads * items <= 16384 (tile-local offsets staged as uint16 in at most 32 KiB).
#define EAGLE_COMPACT_VARIANTS(X) \
    X(0, 256, 16)                 \
    X(1, 256, 32)                 \
    X(2, 256, 64)                 \
    X(3, 512, 16)                 \
    X(4, 512, 32)                 \
    X(5, 128, 32)                 \
    X(6, 128, 64)                 \
    X(7, 128, 16)
constexpr int kCompactVariants = 8;
constexpr int kCompactThreads[kCompactVariants] = {256, 256, 256, 512, 512, 128, 128, 128};
constexpr int kCompactItems[kCompactVariants] = {16, 32, 64, 16, 32, 32, 64, 16};
constexpr int kMinCompactTile = 2048;  // the smallest threads * items above: sizes the scratch

// The variant compact_device uses for n samples. This is the one place to change after a sweep
// (benchmarks/cuda/compact_sweep.cu prints its pick as the row "auto").
// Picked from two H200 sweeps (benchmarks/logs/session4/bench_cuda_h200_{run3,final}.log): up to
// 2^21 samples 256x16 (0.64-0.66x CUB over a counting iterator at 2^20); above, 128x64, the one
// variant at 1.35-1.37x the copy floor in both runs at 2^26 (256x32 gave 1.35x, then 1.56x).
inline int select_compact_variant(int64_t n) { return n <= (int64_t{1} << 21) ? 0 : 6; }
inline int compact_tile(int variant) { return kCompactThreads[variant] * kCompactItems[variant]; }

// ----------------------------------------------------------------------- scan building blocks
constexpr unsigned long long kAggregate = 1ull << 32;
constexpr unsigned long long kPrefix = 2ull << 32;
constexpr unsigned long long kFlagBits = 3ull << 32;
// A tile's status word: [epoch:30 | flag:2 | value:32].
__device__ __forceinline__ unsigned long long epoch_tag(uint32_t epoch) {
    return static_cast<unsigned long long>(epoch & 0x3fffffffu) << 34;
}

__device__ __forceinline__ unsigned long long load_status(const unsigned long long* p) {
    return *reinterpret_cast<const volatile unsigned long long*>(p);
}
// Value and flag travel in one 64-bit word and nothing else is published through it, so no fence.
__device__ __forceinline__ void store_status(unsigned long long* p, unsigned long long v) { atomicExch(p, v); }

// Draws this block's ticket (thread 0 only); the last ticket of the launch starts the next epoch.
__device__ __forceinline__ void take_ticket(unsigned long long* word, uint32_t tiles, uint32_t* tile,
                                            uint32_t* epoch) {
    const unsigned long long w = atomicAdd(word, 1ull);
    *tile = static_cast<uint32_t>(w);
    *epoch = static_cast<uint32_t>(w >> 32);
    if (*tile == tiles - 1) atomicExch(word, static_cast<unsigned long long>(*epoch + 1u) << 32);
}

// 4 keep bits from 4 mask bytes: bit k set iff byte k != 0.
__device__ __forceinline__ uint32_t nonzero_nibble(uint32_t x) {
    const uint32_t y = ((((x & 0x7f7f7f7fu) + 0x7f7f7f7fu) | x) & 0x80808080u) >> 7;
    return (y * 0x10204080u) >> 28;
}

__device__ __forceinline__ uint32_t warp_inclusive(uint32_t v, int lane) {
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const uint32_t up = gpu_shfl_up32(v, d);
        if (lane >= d) v += up;
    }
    return v;
}

// The 16 keep bits of chunk [p, p + 16) of the mask, positions >= lim not kept.
__device__ __forceinline__ uint32_t chunk_bits(const uint8_t* mask, uint32_t p, uint32_t lim, bool vector,
                                               uint32_t flip) {
    uint32_t nz = 0;
    if (vector) {
        const uint4 q = *reinterpret_cast<const uint4*>(mask + p);
        nz = nonzero_nibble(q.x) | (nonzero_nibble(q.y) << 4) | (nonzero_nibble(q.z) << 8) |
             (nonzero_nibble(q.w) << 12);
        return (nz ^ flip) & 0xffffu;
    }
    uint32_t valid = 0;
#pragma unroll
    for (int k = 0; k < 16; ++k) {
        if (p + k < lim) {
            valid |= 1u << k;
            nz |= (mask[p + k] != 0 ? 1u : 0u) << k;
        }
    }
    return (nz ^ flip) & valid;
}

// Decoupled look-back by one warp (all 32 lanes): publishes the tile's aggregate, then its
// inclusive prefix; returns the number kept before the tile (in every lane).
__device__ __forceinline__ uint32_t look_back(unsigned long long* status, uint32_t tile, unsigned long long tag,
                                              uint32_t aggregate, int lane) {
    if (tile == 0) {
        if (lane == 0) store_status(&status[0], tag | kPrefix | aggregate);
        return 0;
    }
    if (lane == 0) store_status(&status[tile], tag | kAggregate | aggregate);
    uint32_t exclusive = 0;
    int64_t top = static_cast<int64_t>(tile) - 1;
    while (true) {
        const int64_t j = top - lane;
        const unsigned long long w = j >= 0 ? load_status(&status[j]) : tag | kPrefix;
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
    if (lane == 0) store_status(&status[tile], tag | kPrefix | (exclusive + aggregate));
    return exclusive;
}

// Scan of one tile of T threads x I items (I/16 chunks a lane, warp-striped). On return:
// bits[v] (this lane's chunk v), rank[v] (kept in the tile before chunk v of this lane),
// *aggregate (kept in the tile). Contains one __syncthreads.
template <int T, int I>
__device__ __forceinline__ void tile_counts(const uint8_t* mask, uint32_t start, uint32_t lim, uint32_t flip,
                                            bool aligned, uint32_t* s_warp, uint32_t (&bits)[I / 16],
                                            uint32_t (&rank)[I / 16], uint32_t* aggregate) {
    constexpr int W = T / 32;
    constexpr int V = I / 16;
    constexpr int TILE = T * I;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const bool vector = aligned && start + TILE <= lim;
    const uint32_t wbase = start + static_cast<uint32_t>(warp) * (32u * I);
#pragma unroll
    for (int v = 0; v < V; ++v) bits[v] = chunk_bits(mask, wbase + (v * 32 + lane) * 16u, lim, vector, flip);
    uint32_t sum = 0;
#pragma unroll
    for (int v = 0; v < V; ++v) {
        const uint32_t c = __popc(bits[v]);
        const uint32_t incl = warp_inclusive(c, lane);
        rank[v] = sum + incl - c;
        sum += gpu_shfl32(incl, 31);
    }
    if (lane == 0) s_warp[warp] = sum;
    __syncthreads();
    const uint32_t wt = lane < W ? s_warp[lane] : 0u;
    const uint32_t wincl = warp_inclusive(wt, lane);
    const uint32_t wexcl = gpu_shfl32(wincl - wt, warp);
#pragma unroll
    for (int v = 0; v < V; ++v) rank[v] += wexcl;
    *aggregate = gpu_shfl32(wincl, W - 1);
}

// ------------------------------------------------------------------------------- compaction
struct CompactArgs {
    const uint8_t* mask;
    int32_t* out;                 // index_map
    uint32_t n;
    uint32_t flip;                // 0xffff with MASK_IS_DROP, else 0
    unsigned long long* ticket;   // [epoch:32 | ticket:32]
    unsigned long long* status;   // per-tile status words
    uint32_t* total;              // count
    uint32_t* live32;
    const uint32_t* span;
    uint32_t* fire;
    float theta;
    uint32_t tiles;
    // The WHILE fold (cuda only; zero elsewhere). With loop_set != 0 this compaction ends an
    // iteration of a WHILE whose guard is `*total != 0`: the thread that writes the count also
    // takes the loop's next decision and sets the node's condition handle `loop_handle`, so no
    // setter kernel follows. With `loop_cell` (eagle's [remaining, ran] cell) it decides exactly as
    // the backend's while_body_setter does: go = remaining > 0 && kept != 0, and a go steps the
    // cell; with loop_cell NULL it sets kept != 0 (a raw WHILE with no cap). The caller guarantees
    // that nothing in the body runs after this kernel (the decision is the body's last word).
    unsigned long long loop_handle;  // a cudaGraphConditionalHandle
    uint32_t* loop_cell;
    uint32_t loop_set;
};

// Ends a WHILE iteration from the compaction (see CompactArgs::loop_set). One thread calls it.
__device__ __forceinline__ void set_loop(const CompactArgs& a, uint32_t kept) {
#if !defined(EAGLE_GPU_HIP)
    bool go = kept != 0u;
    if (a.loop_cell) {
        const uint32_t remaining = a.loop_cell[0];
        go = go && remaining > 0u;
        if (go) {
            a.loop_cell[0] = remaining - 1u;
            a.loop_cell[1] += 1u;
        }
    }
    cudaGraphSetConditional(static_cast<cudaGraphConditionalHandle>(a.loop_handle), go ? 1u : 0u);
#else
    (void)a;
    (void)kept;
#endif
}

__device__ __forceinline__ void write_trigger(const CompactArgs& a, uint32_t kept) {
    *a.total = kept;
    if (a.live32) *a.live32 = kept;
    if (a.fire && a.span) {
        const uint32_t span = *a.span;
        *a.fire = (kept < span && static_cast<float>(kept) <= a.theta * static_cast<float>(span)) ? 1u : 0u;
    }
    if (a.loop_set) set_loop(a, kept);
}

template <int T, int I>
__global__ void __launch_bounds__(T) compact_kernel(CompactArgs a) {
    static_assert(I % 16 == 0 && T % 32 == 0 && T * I <= 16384, "compaction variant out of range");
    constexpr int V = I / 16;
    constexpr int TILE = T * I;
    __shared__ uint32_t s_tile, s_epoch, s_base;
    __shared__ uint32_t s_warp[T / 32];
    __shared__ uint16_t s_out[TILE];  // tile-local offsets of the kept samples, ascending
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    if (tid == 0) take_ticket(a.ticket, a.tiles, &s_tile, &s_epoch);
    __syncthreads();
    const uint32_t tile = s_tile;
    // A ticket past the last tile means a scratch that was not zero-filled before its first use
    // (the header's rule): touch nothing outside the caller's buffers.
    if (tile >= a.tiles) return;
    const uint32_t start = tile * static_cast<uint32_t>(TILE);
    const bool aligned = (reinterpret_cast<uintptr_t>(a.mask) & 15u) == 0;
    uint32_t bits[V], rank[V], aggregate;
    tile_counts<T, I>(a.mask, start, a.n, a.flip, aligned, s_warp, bits, rank, &aggregate);
    // Stage the kept offsets (warp 0 after publishing its aggregate would delay the chain; it
    // stages first, like the others).
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
            if (tile == a.tiles - 1) write_trigger(a, exclusive + aggregate);
        }
    }
    __syncthreads();
    int32_t* out = a.out + s_base;
    for (uint32_t i = tid; i < aggregate; i += T) out[i] = static_cast<int32_t>(start + s_out[i]);
}

__global__ void empty_compact_kernel(CompactArgs a) { write_trigger(a, 0); }

// ---------------------------------------------------------------------------------- reorder
constexpr int kReorderThreads = 256;
constexpr int kReorderItems = 16;
constexpr int kReorderTile = kReorderThreads * kReorderItems;  // 4096 positions a tile
constexpr int kMaxPlanes = 65;                                 // 64 planes + perm

struct PlaneDesc {
    char* data;       // row r at data + r * pitch
    char* tmp;        // row r at tmp + r * n * elem (scratch)
    int64_t pitch;
    uint32_t rows;
    uint32_t elem;    // 1, 2, 4, 8 or 16
};

struct PlaneSet {
    PlaneDesc p[kMaxPlanes];
    uint32_t count;
    int32_t perm_index;  // the plane that is perm (inv is written from it), or -1
    int32_t* inv;
};

struct ReorderArgs {
    const uint8_t* mask;
    uint32_t n;
    uint32_t flip;
    uint32_t* gate;               // fire (or NULL: always)
    uint32_t* span;
    unsigned long long* ticket;   // kernel 1: [epoch:32 | ticket:32]
    uint32_t* ticket2;            // kernel 2: blocks done
    uint32_t* total;              // kept (written by kernel 1, read by kernel 2)
    unsigned long long* status;
    uint8_t* still;               // per tile: 1 when nothing in it moves
};  // both kernels run one block a tile: the tile count is gridDim.x

struct alignas(16) Elem16 {
    unsigned long long lo, hi;
};

template <class E>
__device__ __forceinline__ void scatter_rows(const PlaneDesc& d, uint32_t start, uint32_t len, uint32_t n,
                                             const int32_t* s_code) {
    constexpr int T = kReorderThreads;
    for (uint32_t r = 0; r < d.rows; ++r) {
        const E* src = reinterpret_cast<const E*>(d.data + static_cast<int64_t>(r) * d.pitch) + start;
        E* dst = reinterpret_cast<E*>(d.tmp) + static_cast<uint64_t>(r) * n;
        for (uint32_t j = threadIdx.x; j < len; j += 4 * T) {
            E v[4];
#pragma unroll
            for (int u = 0; u < 4; ++u)
                if (j + u * T < len) v[u] = src[j + u * T];
#pragma unroll
            for (int u = 0; u < 4; ++u)
                if (j + u * T < len) dst[s_code[j + u * T]] = v[u];
        }
    }
}

template <class E, bool kInv>
__device__ __forceinline__ void gather_rows(const PlaneDesc& d, uint32_t start, uint32_t len, uint32_t n,
                                            uint32_t lim, uint32_t kept, int32_t* inv) {
    constexpr int T = kReorderThreads;
    for (uint32_t r = 0; r < d.rows; ++r) {
        E* row = reinterpret_cast<E*>(d.data + static_cast<int64_t>(r) * d.pitch);
        const E* tmp = reinterpret_cast<const E*>(d.tmp) + static_cast<uint64_t>(r) * n;
        for (uint32_t j = threadIdx.x; j < len; j += 4 * T) {
            E v[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                const uint32_t q = start + j + u * T;
                if (j + u * T < len) v[u] = tmp[q < kept ? q : lim - 1u - (q - kept)];
            }
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                const uint32_t q = start + j + u * T;
                if (j + u * T < len) {
                    row[q] = v[u];
                    if constexpr (kInv) {  // perm: sample v[u] now sits at position q
                        const int32_t sample = static_cast<int32_t>(v[u]);
                        if (sample >= 0 && static_cast<uint32_t>(sample) < n) inv[sample] = static_cast<int32_t>(q);
                    }
                }
            }
        }
    }
}

__global__ void __launch_bounds__(kReorderThreads)
    reorder_scan_kernel(ReorderArgs a, const EAGLE_GRID_CONSTANT PlaneSet ps) {
    constexpr int T = kReorderThreads;
    constexpr int I = kReorderItems;
    constexpr int TILE = kReorderTile;
    if (a.gate && *a.gate == 0) return;  // not fired (nothing writes the gate during this kernel)
    __shared__ uint32_t s_tile, s_epoch, s_base;
    __shared__ uint32_t s_warp[T / 32];
    __shared__ int4 s_code4[TILE / 4];  // tmp index of each position of the tile (int4: 16-byte aligned)
    int32_t* s_code = reinterpret_cast<int32_t*>(s_code4);
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    if (tid == 0) take_ticket(a.ticket, gridDim.x, &s_tile, &s_epoch);
    __syncthreads();
    const uint32_t tile = s_tile;
    if (tile >= gridDim.x) return;  // scratch not zero-filled before its first use
    const uint32_t lim = min(a.n, *a.span);
    const uint32_t start = tile * static_cast<uint32_t>(TILE);
    if (lim == 0) {
        if (tile == 0 && tid == 0) *a.total = 0;
        return;
    }
    if (start >= lim) return;
    const uint32_t len = min(static_cast<uint32_t>(TILE), lim - start);
    const bool aligned = (reinterpret_cast<uintptr_t>(a.mask) & 15u) == 0;
    uint32_t bits[1], rank[1], aggregate;
    tile_counts<T, I>(a.mask, start, lim, a.flip, aligned, s_warp, bits, rank, &aggregate);
    if (warp == 0) {
        const uint32_t exclusive = look_back(a.status, tile, epoch_tag(s_epoch), aggregate, lane);
        if (lane == 0) {
            s_base = exclusive;
            if (tile == (lim - 1) / TILE) *a.total = exclusive + aggregate;
            a.still[tile] = (len == static_cast<uint32_t>(TILE) && exclusive == start && aggregate == len) ? 1 : 0;
        }
    }
    __syncthreads();
    const uint32_t base = s_base;
    if (len == static_cast<uint32_t>(TILE) && base == start && aggregate == len) return;  // nothing moves
    {
        // tmp index of each of this lane's 16 positions: kept of rank r -> r; dropped of rank d
        // (d = p - kept before p) -> lim - 1 - d.
        const uint32_t off = static_cast<uint32_t>(warp) * (32u * I) + lane * 16u;
        uint32_t r = base + rank[0];
        int32_t code[16];
#pragma unroll
        for (int k = 0; k < 16; ++k) {
            const uint32_t p = start + off + k;
            if (bits[0] & (1u << k))
                code[k] = static_cast<int32_t>(r++);
            else
                code[k] = p < lim ? static_cast<int32_t>(lim - 1u - (p - r)) : -1;
        }
#pragma unroll
        for (int k = 0; k < 16; k += 4)
            s_code4[(off + k) / 4] = make_int4(code[k], code[k + 1], code[k + 2], code[k + 3]);
    }
    __syncthreads();
    for (uint32_t i = 0; i < ps.count; ++i) {
        const PlaneDesc& d = ps.p[i];
        switch (d.elem) {
            case 1: scatter_rows<uint8_t>(d, start, len, a.n, s_code); break;
            case 2: scatter_rows<uint16_t>(d, start, len, a.n, s_code); break;
            case 4: scatter_rows<uint32_t>(d, start, len, a.n, s_code); break;
            case 8: scatter_rows<unsigned long long>(d, start, len, a.n, s_code); break;
            default: scatter_rows<Elem16>(d, start, len, a.n, s_code); break;
        }
    }
}

__global__ void __launch_bounds__(kReorderThreads)
    reorder_move_kernel(ReorderArgs a, const EAGLE_GRID_CONSTANT PlaneSet ps) {
    constexpr int TILE = kReorderTile;
    __shared__ uint32_t s_go, s_lim, s_kept;
    // Thread 0 alone reads the gate and the span: the block that draws the last ticket resets both,
    // and every block has read them before it draws its own ticket.
    if (threadIdx.x == 0) {
        uint32_t go = a.gate ? (*reinterpret_cast<volatile uint32_t*>(a.gate) != 0) : 1u;
        if (go) {
            const uint32_t lim = min(a.n, *reinterpret_cast<volatile uint32_t*>(a.span));
            const uint32_t kept = *a.total;
            s_lim = lim;
            s_kept = kept;
            __threadfence();
            if (atomicAdd(a.ticket2, 1u) == gridDim.x - 1) {
                __threadfence();
                *a.ticket2 = 0u;
                *a.span = kept;
                if (a.gate) *a.gate = 0u;
            }
        }
        s_go = go;
    }
    __syncthreads();
    if (!s_go) return;
    const uint32_t lim = s_lim;
    const uint32_t kept = s_kept;
    const uint32_t start = blockIdx.x * static_cast<uint32_t>(TILE);
    if (start >= lim || a.still[blockIdx.x]) return;
    const uint32_t len = min(static_cast<uint32_t>(TILE), lim - start);
    for (uint32_t i = 0; i < ps.count; ++i) {
        const PlaneDesc& d = ps.p[i];
        if (static_cast<int32_t>(i) == ps.perm_index && ps.inv) {
            gather_rows<uint32_t, true>(d, start, len, a.n, lim, kept, ps.inv);
            continue;
        }
        switch (d.elem) {
            case 1: gather_rows<uint8_t, false>(d, start, len, a.n, lim, kept, nullptr); break;
            case 2: gather_rows<uint16_t, false>(d, start, len, a.n, lim, kept, nullptr); break;
            case 4: gather_rows<uint32_t, false>(d, start, len, a.n, lim, kept, nullptr); break;
            case 8: gather_rows<unsigned long long, false>(d, start, len, a.n, lim, kept, nullptr); break;
            default: gather_rows<Elem16, false>(d, start, len, a.n, lim, kept, nullptr); break;
        }
    }
}

// ------------------------------------------------------------------ reorder host set-up
// One place that lays out the reorder scratch and fills both kernels' arguments, used by the backend
// (filtering.cu) and by the sweep (benchmarks/cuda/compact_sweep.cu), so the two cannot drive the
// kernels differently. (The sweep once built its own ReorderArgs and left a `tiles` field at 0:
// kernel 1's blocks all returned at "ticket past the last tile", kernel 2 read kept = 0 and set
// span = 0. The kernels now take the tile count from gridDim.x, so there is no such field.)
//
// Scratch: [0] kernel 1's ticket word, [8] kept, [12] kernel 2's ticket; [256] tile status words;
// then one "still" byte per tile; then perm's row out of place (reserved whether or not the call
// names a perm: the size query may not); then every plane's rows out of place, in order.
struct ReorderPlane {
    char* data;
    int64_t pitch;  // bytes from one row to the next (>= n * elem)
    uint32_t rows;  // >= 1
    uint32_t elem;  // 1, 2, 4, 8 or 16
};

inline size_t reorder_align256(size_t v) { return (v + 255) / 256 * 256; }
inline uint32_t reorder_tiles(uint64_t n) { return static_cast<uint32_t>((n + kReorderTile - 1) / kReorderTile); }

// Scratch bytes of a reorder of n samples over these planes (only rows and elem are read).
inline size_t reorder_scratch_bytes(uint64_t n, const ReorderPlane* planes, uint32_t count) {
    const uint32_t tiles = reorder_tiles(n);
    size_t off = 256 + reorder_align256(static_cast<size_t>(tiles) * 8) + reorder_align256(tiles) +
                 reorder_align256(n * 4);
    for (uint32_t i = 0; i < count; ++i)
        off += reorder_align256(static_cast<size_t>(planes[i].rows) * n * planes[i].elem);
    return off;
}

// Fills both kernels' arguments for a scratch of reorder_scratch_bytes(n, planes, count) bytes,
// zero-filled before its first use. count <= kMaxPlanes - 1; gate (fire) may be NULL (always fire);
// perm may be NULL (then inv is not written). Launch tiles = reorder_tiles(n) blocks of
// kReorderThreads, reorder_scan_kernel then reorder_move_kernel; n == 0 is reorder_empty_kernel.
inline void reorder_setup(char* scratch, uint32_t n, const uint8_t* mask, bool mask_is_drop, uint32_t* gate,
                          uint32_t* span, int32_t* perm, int32_t* inv, const ReorderPlane* planes, uint32_t count,
                          ReorderArgs* a, PlaneSet* ps) {
    const uint32_t tiles = reorder_tiles(n);
    size_t off = 256 + reorder_align256(static_cast<size_t>(tiles) * 8);
    const size_t off_still = off;
    off += reorder_align256(tiles);
    const size_t off_perm = off;
    off += reorder_align256(static_cast<size_t>(n) * 4);
    *ps = PlaneSet{};
    ps->perm_index = -1;
    if (perm) {  // perm moves like a plane; inv is written from it where it moves
        ps->perm_index = 0;
        ps->inv = inv;
        ps->p[0] = PlaneDesc{reinterpret_cast<char*>(perm), scratch + off_perm, static_cast<int64_t>(n) * 4, 1u, 4u};
        ps->count = 1;
    }
    for (uint32_t i = 0; i < count; ++i) {
        const ReorderPlane& p = planes[i];
        ps->p[ps->count++] = PlaneDesc{p.data, scratch + off, p.pitch, p.rows, p.elem};
        off += reorder_align256(static_cast<size_t>(p.rows) * n * p.elem);
    }
    *a = ReorderArgs{};
    a->mask = mask;
    a->n = n;
    a->flip = mask_is_drop ? 0xffffu : 0u;
    a->gate = gate;
    a->span = span;
    a->ticket = reinterpret_cast<unsigned long long*>(scratch);
    a->total = reinterpret_cast<uint32_t*>(scratch + 8);
    a->ticket2 = reinterpret_cast<uint32_t*>(scratch + 12);
    a->status = reinterpret_cast<unsigned long long*>(scratch + 256);
    a->still = reinterpret_cast<uint8_t*>(scratch + off_still);
}

// n == 0: nothing to move; the span becomes 0 and the gate is reset.
__global__ void reorder_empty_kernel(uint32_t* gate, uint32_t* span) {
    if (gate) {
        if (*gate == 0) return;
        *gate = 0;
    }
    *span = 0;
}

}  // namespace filtering
}  // namespace gpu
}  // namespace eagle
