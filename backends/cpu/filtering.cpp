// Group filtering (bit 12) and reorder_device (minor 2): stream-ordered compaction (two-pass
// parallel scan, bit-exact with numpy.flatnonzero) and stable in-place partition of planes.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "runtime.h"
#include "thread_pool.h"

using namespace eagle;
using namespace eagle::cpu;

namespace eagle::cpu {

namespace {

constexpr int kMaxChunks = 64;
constexpr int64_t kCountsBytes = 2 * kMaxChunks * sizeof(uint64_t);
constexpr int64_t kParallelMin = int64_t(1) << 15;

int64_t align64(int64_t x) { return (x + 63) / 64 * 64; }

struct Chunks {
    int64_t n, size, count;
    explicit Chunks(int64_t total) : n(total) {
        const int threads = ThreadPool::instance().threads();
        count = total >= kParallelMin ? std::min<int64_t>(kMaxChunks, threads) : 1;
        size = std::max<int64_t>(1, align64((total + count - 1) / std::max<int64_t>(count, 1)));
        count = total > 0 ? (total + size - 1) / size : 0;
    }
    int64_t lo(int64_t c) const { return c * size; }
    int64_t hi(int64_t c) const { return std::min(n, (c + 1) * size); }
};

void for_chunks(const Chunks& ch, const std::function<void(int64_t)>& fn) {
    if (ch.count <= 1) {
        for (int64_t c = 0; c < ch.count; ++c) fn(c);
        return;
    }
    ThreadPool::instance().parallel_for(ch.count, fn);
}

// Number of nonzero bytes in m[lo, hi).
int64_t count_nonzero(const uint8_t* m, int64_t lo, int64_t hi) {
    int64_t k = 0;
    for (int64_t i = lo; i < hi; ++i) k += m[i] != 0;
    return k;
}

// True when one of the 8 mask bytes at m is kept (nonzero; zero when drop is set).
inline bool any_kept8(const uint8_t* m, bool drop) {
    uint64_t w;
    std::memcpy(&w, m, 8);
    if (!drop) return w != 0;
    return ((w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull) != 0;  // a zero byte
}

// counts[c] := how many indices of chunk c are kept (mask byte nonzero; zero when drop is set).
void count_kept(const Chunks& ch, const uint8_t* m, bool drop, uint64_t* counts) {
    for_chunks(ch, [&](int64_t c) {
        const int64_t nz = count_nonzero(m, ch.lo(c), ch.hi(c));
        counts[c] = static_cast<uint64_t>(drop ? (ch.hi(c) - ch.lo(c)) - nz : nz);
    });
}

template <size_t N>
struct Elem {
    unsigned char b[N];
};

template <size_t N>
void scatter_row(const Chunks& ch, unsigned char* row, unsigned char* tmp, const int32_t* dest) {
    using E = Elem<N>;
    E* r = reinterpret_cast<E*>(row);
    E* t = reinterpret_cast<E*>(tmp);
    for_chunks(ch, [&](int64_t c) {
        for (int64_t i = ch.lo(c); i < ch.hi(c); ++i) std::memcpy(&t[dest[i]], &r[i], N);
    });
    for_chunks(ch, [&](int64_t c) {
        std::memcpy(row + ch.lo(c) * N, tmp + ch.lo(c) * N, size_t(ch.hi(c) - ch.lo(c)) * N);
    });
}

void scatter_any(size_t elem, const Chunks& ch, unsigned char* row, unsigned char* tmp, const int32_t* dest) {
    switch (elem) {
        case 1: scatter_row<1>(ch, row, tmp, dest); break;
        case 2: scatter_row<2>(ch, row, tmp, dest); break;
        case 4: scatter_row<4>(ch, row, tmp, dest); break;
        case 8: scatter_row<8>(ch, row, tmp, dest); break;
        case 16: scatter_row<16>(ch, row, tmp, dest); break;
        default: throw Error(EAGLE_BACKEND_UNSUPPORTED, "element size " + std::to_string(elem));
    }
}

template <class T>
T* at(uint64_t addr) {
    return reinterpret_cast<T*>(addr);
}

}  // namespace

int64_t compact_scratch_bytes(int64_t) { return kCountsBytes; }

int64_t reorder_scratch_bytes(int64_t n) { return kCountsBytes + align64(4 * n) + 16 * n; }

void CompactNode::run(const RunSettings*) const {
    const int64_t n = d_.n;
    const bool drop = (d_.flags & EAGLE_BACKEND_COMPACT_MASK_IS_DROP) != 0;
    const uint8_t* m = at<const uint8_t>(d_.mask);
    int32_t* out = at<int32_t>(d_.index_map);
    uint64_t* counts = at<uint64_t>(d_.scratch);
    const Chunks ch(n);
    count_kept(ch, m, drop, counts);
    uint64_t total = 0;
    for (int64_t c = 0; c < ch.count; ++c) {
        const uint64_t k = counts[c];
        counts[c] = total;  // becomes the chunk's output offset
        total += k;
        counts[kMaxChunks + c] = k;
    }
    for_chunks(ch, [&](int64_t c) {
        int64_t pos = static_cast<int64_t>(counts[c]);
        const int64_t end = pos + static_cast<int64_t>(counts[kMaxChunks + c]);
        if (pos == end) return;
        for (int64_t i = ch.lo(c), hi = ch.hi(c); i < hi;) {
            // 8 mask bytes at a time while none of them is kept (late in a run most are dropped)
            while (i + 8 <= hi && !any_kept8(m + i, drop)) i += 8;
            for (const int64_t stop = std::min(hi, i + 8); i < stop; ++i) {
                out[pos] = static_cast<int32_t>(i);  // overwritten until a kept index lands; never past end
                pos += (m[i] != 0) != drop;
                if (pos == end) return;
            }
        }
    });
    const uint32_t count = static_cast<uint32_t>(total);
    *at<uint32_t>(d_.count) = count;
    if (d_.live32) *at<uint32_t>(d_.live32) = count;
    if (d_.fire && d_.span) {
        const uint32_t span = *at<uint32_t>(d_.span);
        *at<uint32_t>(d_.fire) = (count < span && static_cast<float>(count) <= d_.theta * static_cast<float>(span)) ? 1u : 0u;
    }
}

void ReorderNode::run(const RunSettings*) const {
    const int64_t n = d_.n;
    if (d_.fire) {
        uint32_t* fire = at<uint32_t>(d_.fire);
        const uint32_t f = *fire;
        *fire = 0;
        if (f == 0) return;
    }
    if (n == 0) return;
    uint32_t* span_p = at<uint32_t>(d_.span);
    const int64_t s = *span_p;
    if (s > n)
        throw Error(EAGLE_BACKEND_ERROR, "reorder_device: *span (" + std::to_string(s) + ") exceeds n (" +
                                             std::to_string(n) + "); nothing was moved");
    const bool drop = (d_.flags & EAGLE_BACKEND_COMPACT_MASK_IS_DROP) != 0;
    const uint8_t* m = at<const uint8_t>(d_.mask);
    int32_t* perm = at<int32_t>(d_.perm);
    int32_t* inv = at<int32_t>(d_.inv);
    for (int64_t p = 0; p < s; ++p)
        if (perm[p] < 0 || perm[p] >= n)
            throw Error(EAGLE_BACKEND_ERROR, "reorder_device: perm[" + std::to_string(p) + "] = " +
                                                 std::to_string(perm[p]) + " is outside [0, n); nothing was moved");
    unsigned char* scratch = at<unsigned char>(d_.scratch);
    uint64_t* counts = reinterpret_cast<uint64_t*>(scratch);
    int32_t* dest = reinterpret_cast<int32_t*>(scratch + kCountsBytes);
    unsigned char* tmp = scratch + kCountsBytes + align64(4 * n);
    const Chunks ch(s);
    count_kept(ch, m, drop, counts);
    uint64_t kept = 0;
    for (int64_t c = 0; c < ch.count; ++c) kept += counts[c];
    uint64_t keep_off = 0, drop_off = kept;
    for (int64_t c = 0; c < ch.count; ++c) {
        const uint64_t k = counts[c];
        const uint64_t len = static_cast<uint64_t>(ch.hi(c) - ch.lo(c));
        counts[c] = keep_off;
        counts[kMaxChunks + c] = drop_off;
        keep_off += k;
        drop_off += len - k;
    }
    for_chunks(ch, [&](int64_t c) {
        int64_t k = static_cast<int64_t>(counts[c]);
        int64_t d = static_cast<int64_t>(counts[kMaxChunks + c]);
        for (int64_t i = ch.lo(c), hi = ch.hi(c); i < hi; ++i) {
            if ((m[i] != 0) != drop)
                dest[i] = static_cast<int32_t>(k++);
            else
                dest[i] = static_cast<int32_t>(d++);
        }
    });
    for (const auto& pl : planes_) {
        const size_t elem = pl.elem_size;
        const uint32_t width = pl.width ? pl.width : 1;
        const int64_t pitch = pl.pitch_bytes ? pl.pitch_bytes : n * static_cast<int64_t>(elem);
        for (uint32_t r = 0; r < width; ++r)
            scatter_any(elem, ch, at<unsigned char>(pl.data) + r * pitch, tmp, dest);
    }
    scatter_any(4, ch, reinterpret_cast<unsigned char*>(perm), tmp, dest);
    for_chunks(ch, [&](int64_t c) {
        for (int64_t p = ch.lo(c); p < ch.hi(c); ++p) inv[perm[p]] = static_cast<int32_t>(p);
    });
    *span_p = static_cast<uint32_t>(kept);
}

}  // namespace eagle::cpu

EAGLE_EXPORT eagle_backend_status eagle_backend_compact_device(eagle_backend_compact_desc* desc) {
    return guarded("eagle_backend_compact_device", [&] {
        auto d = read_desc(desc, "desc");
        check_flags(d.flags, EAGLE_BACKEND_COMPACT_MASK_IS_DROP, "desc->flags");
        check_device(d.device, "desc->device");
        check_sample_count(d.n, "desc->n");
        auto s = resolve_stream(d.stream, "desc->stream");
        const int64_t need = compact_scratch_bytes(d.n);
        if (scratch_query_or_check(desc, d, need, "compaction")) return;
        if (!d.count) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->count is 0");
        if (d.n > 0 && !d.mask) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->mask is 0");
        if (d.n > 0 && !d.index_map) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->index_map is 0");
        if (d.fire && !(d.theta > 0.0f && d.theta <= 1.0f) && d.span)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->theta must be in (0, 1] when fire is given");
        submit(*s, std::make_shared<CompactNode>(d));
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_reorder_device(eagle_backend_reorder_desc* desc) {
    return guarded("eagle_backend_reorder_device", [&] {
        auto d = read_desc(desc, "desc");
        check_flags(d.flags, EAGLE_BACKEND_COMPACT_MASK_IS_DROP, "desc->flags");
        check_device(d.device, "desc->device");
        check_sample_count(d.n, "desc->n");
        if (d.plane_count > 64)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->plane_count is " + std::to_string(d.plane_count) + " (0..64)");
        if (d.plane_count > 0 && !d.planes) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->planes is NULL");
        std::vector<eagle_backend_reorder_plane> planes(d.planes, d.planes + d.plane_count);
        for (size_t i = 0; i < planes.size(); ++i) {
            const auto& p = planes[i];
            const std::string name = "desc->planes[" + std::to_string(i) + "]";
            if (p.elem_size != 1 && p.elem_size != 2 && p.elem_size != 4 && p.elem_size != 8 && p.elem_size != 16)
                fail(EAGLE_BACKEND_UNSUPPORTED, name + ".elem_size is " + std::to_string(p.elem_size) +
                                                    " (1, 2, 4, 8 or 16)");
            if (d.n > 0 && !p.data) fail(EAGLE_BACKEND_INVALID_ARGUMENT, name + ".data is 0");
            if (p.pitch_bytes != 0 && p.pitch_bytes < d.n * int64_t(p.elem_size) && (p.width > 1))
                fail(EAGLE_BACKEND_INVALID_ARGUMENT, name + ".pitch_bytes is smaller than a row");
            if (p.pitch_bytes < 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, name + ".pitch_bytes is negative");
        }
        auto s = resolve_stream(d.stream, "desc->stream");
        const int64_t need = reorder_scratch_bytes(d.n);
        if (scratch_query_or_check(desc, d, need, "reorder")) return;
        if (d.n > 0) {
            if (!d.mask) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->mask is 0");
            if (!d.perm) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->perm is 0");
            if (!d.inv) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->inv is 0");
            if (!d.span) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->span is 0");
        }
        d.planes = nullptr;  // copied above; the node keeps its own array
        submit(*s, std::make_shared<ReorderNode>(d, std::move(planes)));
    });
}
