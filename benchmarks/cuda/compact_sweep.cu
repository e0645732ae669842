// compact_sweep.cu -- every compaction variant of backends/gpu/filtering_kernels.cuh (the kernels the
// cuda backend runs, included from the same source) against the floor and CUB, in one process, and
// the reorder kernels against a compaction of the same n. Every variant's output is checked against a
// host flatnonzero at every size before it is timed; the reorder against a host stable partition.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -I backends/gpu \
//        benchmarks/cuda/compact_sweep.cu -o /tmp/compact_sweep && /tmp/compact_sweep [rounds] [reps]
//
// (benchmarks/bench_cuda.py builds and runs it.) Prints markdown tables; exits 1 on any mismatch.
#include <cuda_runtime.h>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "filtering_kernels.cuh"

using namespace eagle::gpu::filtering;

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            std::exit(2);                                                                      \
        }                                                                                      \
    } while (0)

static int g_failures = 0;
static void mismatch(const std::string& what) {
    std::printf("MISMATCH: %s\n", what.c_str());
    ++g_failures;
}

__device__ __forceinline__ uint32_t hash32(uint32_t x) {
    x = x * 0x9E3779B1u + 0x7f4a7c15u;
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}
__global__ void make_mask(uint8_t* m, uint32_t n, uint32_t threshold, uint32_t seed) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        m[i] = hash32(i ^ (seed * 0x51ed27u)) < threshold ? 1 : 0;
}
// The floor: read the n mask bytes, write the 4 * kept bytes of the output, streaming.
__global__ void floor_kernel(const uint4* in, size_t n16, uint4* out, size_t out16, unsigned* sink) {
    uint32_t acc = 0;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    const size_t t = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (size_t i = t; i < n16; i += stride) {
        const uint4 v = in[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    for (size_t i = t; i < out16; i += stride)
        out[i] = make_uint4(static_cast<unsigned>(i), static_cast<unsigned>(i), static_cast<unsigned>(i), acc);
    if (acc == 0x9e3779b9u) *sink = acc;
}
__global__ void empty_kernel() {}
__global__ void set_words(uint32_t* span, uint32_t span_v, uint32_t* fire, uint32_t fire_v) {
    *span = span_v;
    *fire = fire_v;
}

template <int T, int I>
void launch_variant_t(uint32_t n, cudaStream_t s, const CompactArgs& a0) {
    CompactArgs a = a0;
    a.tiles = (n + T * I - 1) / (T * I);
    compact_kernel<T, I><<<a.tiles, T, 0, s>>>(a);
}
static void launch_variant(int v, uint32_t n, cudaStream_t s, const CompactArgs& a) {
    switch (v) {
#define EAGLE_X(i, t, it) \
    case i: launch_variant_t<t, it>(n, s, a); break;
        EAGLE_COMPACT_VARIANTS(EAGLE_X)
#undef EAGLE_X
    }
}

struct Timer {
    cudaEvent_t a, b;
    Timer() {
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
    }
    template <class F>
    double median_us(cudaStream_t s, int reps, F f, void (*before)(cudaStream_t) = nullptr) {
        std::vector<float> ms;
        for (int r = 0; r < reps; ++r) {
            if (before) before(s);
            CK(cudaEventRecord(a, s));
            f();
            CK(cudaEventRecord(b, s));
            CK(cudaEventSynchronize(b));
            float m;
            CK(cudaEventElapsedTime(&m, a, b));
            ms.push_back(m);
        }
        std::sort(ms.begin(), ms.end());
        return ms[ms.size() / 2] * 1000.0;
    }
};

static double med(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// ------------------------------------------------------------------------------- compaction
static void sweep_compaction(int rounds, int reps, cudaStream_t s) {
    const int logs[] = {20, 24, 26};
    const double keeps[] = {0.5, 0.05};
    const uint32_t nmax = 1u << 26;
    uint8_t* mask;
    int32_t *out, *values, *cub_out, *floor_out;
    uint32_t* count;
    int* num;
    unsigned* sink;
    void* scratch;
    const size_t scratch_bytes = 256 + ((nmax + kMinCompactTile - 1) / kMinCompactTile) * 8 + 256;
    CK(cudaMalloc(&mask, nmax + 64));
    CK(cudaMalloc(&out, 4ull * nmax));
    CK(cudaMalloc(&values, 4ull * nmax));
    CK(cudaMalloc(&cub_out, 4ull * nmax));
    CK(cudaMalloc(&floor_out, 4ull * nmax));
    CK(cudaMalloc(&count, 4));
    CK(cudaMalloc(&num, 4));
    CK(cudaMalloc(&sink, 4));
    CK(cudaMalloc(&scratch, scratch_bytes));
    CK(cudaMemset(scratch, 0, scratch_bytes));  // the header's rule: zero-filled before first use
    {
        std::vector<int32_t> iota(nmax);
        for (uint32_t i = 0; i < nmax; ++i) iota[i] = static_cast<int32_t>(i);
        CK(cudaMemcpy(values, iota.data(), 4ull * nmax, cudaMemcpyHostToDevice));
    }
    size_t tb_count = 0, tb_values = 0;
    thrust::counting_iterator<int> first(0);
    CK(cub::DeviceSelect::Flagged(nullptr, tb_count, first, mask, cub_out, num, static_cast<int>(nmax), s));
    CK(cub::DeviceSelect::Flagged(nullptr, tb_values, values, mask, cub_out, num, static_cast<int>(nmax), s));
    void* temp;
    size_t tb = std::max(tb_count, tb_values);
    CK(cudaMalloc(&temp, tb));
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    Timer tm;
    std::vector<uint8_t> hmask(nmax);
    std::vector<int32_t> ref, got(nmax);
    std::printf("\n## Compaction sweep (uint8 mask -> ascending int32 indices + count)\n\n");
    std::printf("Median GPU time (events) over %d interleaved rounds of median-of-%d launches. GB/s counts the "
                "bytes eagle must move: n mask bytes + 4 bytes per kept index. Variant TxI = threads x items a "
                "thread (tile T*I). floor = one streaming kernel reading n bytes and writing 4*kept; "
                "memcpy = cudaMemcpyAsync D2D of (n + 4*kept)/2 bytes. cub counting = DeviceSelect::Flagged "
                "(thrust::counting_iterator<int>, uint8 flags) -> int32 indices (eagle's output); cub values = "
                "the same over an int32 array.\n",
                rounds, reps);
    for (int li : logs) {
        const uint32_t n = 1u << li;
        for (double keep : keeps) {
            const uint32_t thr = static_cast<uint32_t>(keep * 4294967296.0);
            make_mask<<<1024, 256, 0, s>>>(mask, n, thr, 11u + li);
            CK(cudaStreamSynchronize(s));
            CK(cudaMemcpy(hmask.data(), mask, n, cudaMemcpyDeviceToHost));
            ref.clear();
            for (uint32_t i = 0; i < n; ++i)
                if (hmask[i]) ref.push_back(static_cast<int32_t>(i));
            const uint32_t k = static_cast<uint32_t>(ref.size());
            CompactArgs a{};
            a.mask = mask;
            a.out = out;
            a.n = n;
            a.ticket = reinterpret_cast<unsigned long long*>(scratch);
            a.status = reinterpret_cast<unsigned long long*>(static_cast<char*>(scratch) + 256);
            a.total = count;
            // correctness of every variant, keep and drop, before timing
            for (int v = 0; v < kCompactVariants; ++v) {
                for (int drop = 0; drop < 2; ++drop) {
                    CK(cudaMemsetAsync(out, 0xf9, 4ull * n, s));
                    CompactArgs b = a;
                    b.flip = drop ? 0xffffu : 0u;
                    launch_variant(v, n, s, b);
                    CK(cudaGetLastError());
                    uint32_t c = 0;
                    CK(cudaMemcpyAsync(&c, count, 4, cudaMemcpyDeviceToHost, s));
                    CK(cudaStreamSynchronize(s));
                    CK(cudaMemcpy(got.data(), out, 4ull * n, cudaMemcpyDeviceToHost));
                    const uint32_t expect = drop ? n - k : k;
                    bool okv = c == expect;
                    if (okv && !drop) okv = std::memcmp(got.data(), ref.data(), 4ull * k) == 0;
                    if (okv && drop) {
                        uint32_t j = 0;
                        for (uint32_t i = 0; i < n && okv; ++i)
                            if (!hmask[i]) okv = got[j++] == static_cast<int32_t>(i);
                    }
                    for (uint32_t i = expect; i < n && okv; ++i) okv = got[i] == static_cast<int32_t>(0xf9f9f9f9u);
                    if (!okv)
                        mismatch("compaction variant " + std::to_string(kCompactThreads[v]) + "x" +
                                 std::to_string(kCompactItems[v]) + " n=2^" + std::to_string(li) + " keep=" +
                                 std::to_string(keep) + (drop ? " drop" : " keep") + ": count " + std::to_string(c) +
                                 " expected " + std::to_string(expect));
                }
            }
            {
                CK(cub::DeviceSelect::Flagged(temp, tb, first, mask, cub_out, num, static_cast<int>(n), s));
                int c = 0;
                CK(cudaMemcpyAsync(&c, num, 4, cudaMemcpyDeviceToHost, s));
                CK(cudaStreamSynchronize(s));
                CK(cudaMemcpy(got.data(), cub_out, 4ull * k, cudaMemcpyDeviceToHost));
                if (c != static_cast<int>(k) || std::memcmp(got.data(), ref.data(), 4ull * k) != 0)
                    mismatch("cub counting peer n=2^" + std::to_string(li));
            }
            // timing, interleaved rounds
            std::vector<std::string> names;
            std::vector<std::vector<double>> t;
            auto add = [&](size_t i, const std::string& nm, double us) {
                if (t.size() <= i) {
                    t.resize(i + 1);
                    names.resize(i + 1);
                }
                names[i] = nm;
                t[i].push_back(us);
            };
            const size_t bytes = n + 4ull * k;
            for (int r = 0; r < rounds; ++r) {
                size_t i = 0;
                for (int v = 0; v < kCompactVariants; ++v) {
                    add(i++, std::to_string(kCompactThreads[v]) + "x" + std::to_string(kCompactItems[v]),
                        tm.median_us(s, reps, [&] { launch_variant(v, n, s, a); }));
                }
                const int av = select_compact_variant(n);
                add(i++, "auto (" + std::to_string(kCompactThreads[av]) + "x" + std::to_string(kCompactItems[av]) + ")",
                    tm.median_us(s, reps, [&] { launch_variant(av, n, s, a); }));
                add(i++, "floor", tm.median_us(s, reps, [&] {
                        floor_kernel<<<sms * 8, 256, 0, s>>>(reinterpret_cast<const uint4*>(mask), n / 16,
                                                             reinterpret_cast<uint4*>(floor_out), (4ull * k) / 16, sink);
                    }));
                add(i++, "memcpy", tm.median_us(s, reps, [&] {
                        CK(cudaMemcpyAsync(floor_out, values, bytes / 2, cudaMemcpyDeviceToDevice, s));
                    }));
                add(i++, "cub counting", tm.median_us(s, reps, [&] {
                        CK(cub::DeviceSelect::Flagged(temp, tb, first, mask, cub_out, num, static_cast<int>(n), s));
                    }));
                add(i++, "cub values", tm.median_us(s, reps, [&] {
                        CK(cub::DeviceSelect::Flagged(temp, tb, values, mask, cub_out, num, static_cast<int>(n), s));
                    }));
            }
            // a timed run must still be right
            {
                uint32_t c = 0;
                launch_variant(select_compact_variant(n), n, s, a);
                CK(cudaMemcpyAsync(&c, count, 4, cudaMemcpyDeviceToHost, s));
                CK(cudaStreamSynchronize(s));
                CK(cudaMemcpy(got.data(), out, 4ull * k, cudaMemcpyDeviceToHost));
                if (c != k || std::memcmp(got.data(), ref.data(), 4ull * k) != 0)
                    mismatch("auto variant after timing n=2^" + std::to_string(li));
            }
            const size_t nv = t.size();
            std::vector<double> m(nv);
            for (size_t i = 0; i < nv; ++i) m[i] = med(t[i]);
            const double floor_us = m[kCompactVariants + 1], cubc = m[kCompactVariants + 3];
            double best = 1e30;
            int bestv = 0;
            for (int v = 0; v < kCompactVariants; ++v)
                if (m[v] < best) best = m[v], bestv = v;
            std::printf("\n### n = 2^%d, %.0f %% kept (%u kept)\n\n", li, keep * 100, k);
            std::printf("| case | us | min | max | GB/s | / floor | / cub counting |\n|---|---|---|---|---|---|---|\n");
            for (size_t i = 0; i < nv; ++i) {
                const auto mm = std::minmax_element(t[i].begin(), t[i].end());
                std::printf("| %s%s | %.2f | %.2f | %.2f | %.0f | %.2fx | %.2fx |\n", names[i].c_str(),
                            static_cast<int>(i) == bestv ? " (best)" : "", m[i], *mm.first, *mm.second,
                            bytes / m[i] / 1e3, m[i] / floor_us, m[i] / cubc);
            }
            std::printf("\nSWEEP n=2^%d keep=%.2f best=%dx%d %.2f us: %.2fx floor, %.2fx cub counting, %.2fx cub values; "
                        "auto %.2fx cub counting\n",
                        li, keep, kCompactThreads[bestv], kCompactItems[bestv], best, best / floor_us, best / cubc,
                        best / m[kCompactVariants + 4], m[kCompactVariants] / cubc);
        }
    }
    cudaFree(mask); cudaFree(out); cudaFree(values); cudaFree(cub_out); cudaFree(floor_out);
    cudaFree(count); cudaFree(num); cudaFree(sink); cudaFree(scratch); cudaFree(temp);
}

// ---------------------------------------------------------------------------------- reorder
struct HostPlane {
    uint32_t elem, rows;
    std::vector<uint8_t> h;  // rows * n * elem
    char* d;
};

// The reorder_device host path, minus validation: reorder_setup (filtering_kernels.cuh) lays out the
// scratch and fills both kernels' arguments, as in filtering.cu.
struct Reorder {
    uint32_t n;
    char* scratch;
    PlaneSet ps{};
    ReorderArgs a{};
    uint32_t tiles;
    Reorder(uint32_t n_, const uint8_t* mask, int32_t* perm, int32_t* inv, uint32_t* span, uint32_t* fire,
            std::vector<HostPlane>& planes)
        : n(n_) {
        std::vector<ReorderPlane> rp;
        for (auto& p : planes)
            rp.push_back(ReorderPlane{p.d, static_cast<int64_t>(1ull * n * p.elem), p.rows, p.elem});
        const size_t bytes = reorder_scratch_bytes(n, rp.data(), static_cast<uint32_t>(rp.size()));
        CK(cudaMalloc(&scratch, bytes));
        CK(cudaMemset(scratch, 0, bytes));  // zero-filled before its first use
        tiles = reorder_tiles(n);
        // the ActiveSet's drop mask (a nonzero byte drops)
        reorder_setup(scratch, n, mask, true, fire, span, perm, inv, rp.data(), static_cast<uint32_t>(rp.size()), &a,
                      &ps);
    }
    void operator()(cudaStream_t s) const {
        reorder_scan_kernel<<<tiles, kReorderThreads, 0, s>>>(a, ps);
        reorder_move_kernel<<<tiles, kReorderThreads, 0, s>>>(a, ps);
    }
    ~Reorder() { cudaFree(scratch); }
};

// Host stable partition over [0, span) by the drop mask (a nonzero byte drops); mask is plane 0.
static void host_partition(uint32_t n, uint32_t span, std::vector<uint8_t>& maskp, std::vector<int32_t>& perm,
                           std::vector<int32_t>& inv, std::vector<HostPlane>& planes, uint32_t* kept_out) {
    std::vector<uint32_t> order;
    order.reserve(span);
    for (uint32_t p = 0; p < span; ++p)
        if (!maskp[p]) order.push_back(p);
    const uint32_t kept = static_cast<uint32_t>(order.size());
    for (uint32_t p = 0; p < span; ++p)
        if (maskp[p]) order.push_back(p);
    for (auto& pl : planes) {
        for (uint32_t r = 0; r < pl.rows; ++r) {
            uint8_t* row = pl.h.data() + 1ull * r * n * pl.elem;
            std::vector<uint8_t> old(row, row + 1ull * span * pl.elem);
            for (uint32_t q = 0; q < span; ++q) std::memcpy(row + 1ull * q * pl.elem, old.data() + 1ull * order[q] * pl.elem, pl.elem);
        }
    }
    std::vector<int32_t> oldp(perm.begin(), perm.begin() + span);
    for (uint32_t q = 0; q < span; ++q) {
        perm[q] = oldp[order[q]];
        inv[perm[q]] = static_cast<int32_t>(q);
    }
    *kept_out = kept;
}

static void sweep_reorder(int rounds, int reps, cudaStream_t s) {
    struct Config {
        const char* name;
        std::vector<uint32_t> elems;  // after the mask plane (u8)
    };
    const Config configs[] = {
        {"mask + perm/inv (no other plane)", {}},
        {"mask + one f64 plane + perm/inv", {8}},
        {"the card: mask + 4 f64 + 2 i32 + perm/inv", {8, 8, 8, 8, 4, 4}},
        {"every element size: mask + u16 + u32 + 2-row f64 + 16 B + perm/inv", {2, 4, 8 | (2u << 8), 16}},
    };
    Timer tm;
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    std::printf("\n## Reorder (reorder_device kernels: stable partition of every plane over [0, span))\n\n");
    std::printf("Fired: span = n, the drop mask keeps 50 %% (or 5 %%), span and fire re-armed by a tiny kernel before "
                "each timed reorder (outside the events). Unfired: fire = 0, the cost inside a graph of 100 reorders / "
                "100. Bytes moved by a fired reorder: the mask once + each plane read, written out of place, read "
                "back and written (4x its bytes) + inv written (4 B a sample) -- every position < span moves unless "
                "its tile is all kept with everything before it kept. Compared with one compaction of the same n "
                "(the auto variant, n bytes + 4 per kept).\n\n");
    std::printf("| n | planes | kept | reorder us | GB/s moved | compaction us | reorder / compaction |\n|---|---|---|---|---|---|---|\n");
    std::vector<std::string> unfired;
    for (int li : {20, 24}) {
        const uint32_t n = 1u << li;
        for (const auto& cf : configs) {
            for (double keep : {0.5, 0.05}) {
                if (li == 24 && keep == 0.05) continue;
                std::vector<HostPlane> planes;
                planes.push_back(HostPlane{1, 1, {}, nullptr});  // the mask, moved with the samples
                for (uint32_t e : cf.elems) planes.push_back(HostPlane{e & 0xff, (e >> 8) ? (e >> 8) : 1u, {}, nullptr});
                uint32_t state = 12345u + li;
                for (size_t i = 0; i < planes.size(); ++i) {
                    auto& p = planes[i];
                    p.h.resize(1ull * p.rows * n * p.elem);
                    if (i > 0)
                        for (auto& b : p.h) b = static_cast<uint8_t>((state = state * 1664525u + 1013904223u) >> 24);
                    CK(cudaMalloc(&p.d, p.h.size()));
                }
                // drop mask: 1 = drop; kept fraction `keep`
                auto fill_mask = [&](uint32_t seed) {
                    uint8_t* m = planes[0].h.data();
                    for (uint32_t i = 0; i < n; ++i) {
                        uint32_t x = (i ^ (seed * 0x51ed27u)) * 0x9E3779B1u + 0x7f4a7c15u;
                        x ^= x >> 16; x *= 0x85ebca6bu; x ^= x >> 13; x *= 0xc2b2ae35u; x ^= x >> 16;
                        m[i] = x < static_cast<uint32_t>(keep * 4294967296.0) ? 0 : 1;
                    }
                    CK(cudaMemcpy(planes[0].d, m, n, cudaMemcpyHostToDevice));
                };
                fill_mask(7u + li);
                for (size_t i = 1; i < planes.size(); ++i)
                    CK(cudaMemcpy(planes[i].d, planes[i].h.data(), planes[i].h.size(), cudaMemcpyHostToDevice));
                std::vector<int32_t> perm(n), inv(n);
                for (uint32_t i = 0; i < n; ++i) perm[i] = inv[i] = static_cast<int32_t>(i);
                int32_t *dperm, *dinv;
                uint32_t *dspan, *dfire;
                CK(cudaMalloc(&dperm, 4ull * n));
                CK(cudaMalloc(&dinv, 4ull * n));
                CK(cudaMalloc(&dspan, 4));
                CK(cudaMalloc(&dfire, 4));
                CK(cudaMemcpy(dperm, perm.data(), 4ull * n, cudaMemcpyHostToDevice));
                CK(cudaMemcpy(dinv, inv.data(), 4ull * n, cudaMemcpyHostToDevice));
                Reorder ro(n, reinterpret_cast<const uint8_t*>(planes[0].d), dperm, dinv, dspan, dfire, planes);
                // correctness: fire twice (span n, then span = kept with a new mask), then unfired
                bool okr = true;
                uint32_t span = n;
                for (int step = 0; step < 3 && okr; ++step) {
                    if (step == 1) fill_mask(99u + li);
                    const uint32_t fire = step < 2 ? 1u : 0u;
                    set_words<<<1, 1, 0, s>>>(dspan, span, dfire, fire);
                    ro(s);
                    CK(cudaGetLastError());
                    CK(cudaStreamSynchronize(s));
                    uint32_t kept = span;
                    if (fire) host_partition(n, span, planes[0].h, perm, inv, planes, &kept);
                    uint32_t got_span = 0, got_fire = 7;
                    CK(cudaMemcpy(&got_span, dspan, 4, cudaMemcpyDeviceToHost));
                    CK(cudaMemcpy(&got_fire, dfire, 4, cudaMemcpyDeviceToHost));
                    std::vector<int32_t> gp(n), gi(n);
                    CK(cudaMemcpy(gp.data(), dperm, 4ull * n, cudaMemcpyDeviceToHost));
                    CK(cudaMemcpy(gi.data(), dinv, 4ull * n, cudaMemcpyDeviceToHost));
                    okr = got_span == kept && got_fire == 0 && gp == perm && gi == inv;
                    for (size_t i = 0; i < planes.size() && okr; ++i) {
                        std::vector<uint8_t> g(planes[i].h.size());
                        CK(cudaMemcpy(g.data(), planes[i].d, g.size(), cudaMemcpyDeviceToHost));
                        okr = g == planes[i].h;
                    }
                    if (!okr)
                        mismatch(std::string("reorder ") + cf.name + " n=2^" + std::to_string(li) + " step " +
                                 std::to_string(step) + ": span " + std::to_string(got_span) + " expected " +
                                 std::to_string(kept) + ", fire " + std::to_string(got_fire));
                    span = kept;
                }
                // timing: fired over span = n; a compaction of the same n beside it
                CompactArgs ca{};
                int32_t* cout;
                uint32_t* ccount;
                void* cscratch;
                const size_t csb = 256 + ((n + kMinCompactTile - 1) / kMinCompactTile) * 8;
                CK(cudaMalloc(&cout, 4ull * n));
                CK(cudaMalloc(&ccount, 4));
                CK(cudaMalloc(&cscratch, csb));
                CK(cudaMemset(cscratch, 0, csb));
                ca.mask = reinterpret_cast<const uint8_t*>(planes[0].d);
                ca.out = cout;
                ca.n = n;
                ca.flip = 0xffffu;
                ca.ticket = reinterpret_cast<unsigned long long*>(cscratch);
                ca.status = reinterpret_cast<unsigned long long*>(static_cast<char*>(cscratch) + 256);
                ca.total = ccount;
                std::vector<double> tr, tc;
                static uint32_t* g_span;
                static uint32_t* g_fire;
                static uint32_t g_n;
                g_span = dspan, g_fire = dfire, g_n = n;
                auto rearm = [](cudaStream_t st) { set_words<<<1, 1, 0, st>>>(g_span, g_n, g_fire, 1u); };
                const int av = select_compact_variant(n);
                for (int r = 0; r < rounds; ++r) {
                    tr.push_back(tm.median_us(s, reps, [&] { ro(s); }, rearm));
                    tc.push_back(tm.median_us(s, reps, [&] { launch_variant(av, n, s, ca); }));
                }
                uint32_t kept_now = 0;
                CK(cudaMemcpy(&kept_now, dspan, 4, cudaMemcpyDeviceToHost));
                double bytes = n;  // mask read by the scan
                for (auto& p : planes) bytes += 4.0 * p.rows * p.elem * n;
                bytes += 4.0 * 4 * n + 4.0 * n;  // perm (4x) + inv
                const double r_us = med(tr), c_us = med(tc);
                std::printf("| 2^%d | %s | %.0f %% | %.2f | %.0f | %.2f | %.2fx |\n", li, cf.name, keep * 100, r_us,
                            bytes / r_us / 1e3, c_us, r_us / c_us);
                std::printf("REORDER n=2^%d planes=\"%s\" keep=%.2f fired %.2f us, compaction %.2f us, ratio %.2fx\n", li,
                            cf.name, keep, r_us, c_us, r_us / c_us);
                // unfired, inside a graph of 100 (as in a WHILE body): vs 100 empty kernels, 100 compactions
                if (keep == 0.5) {
                    auto graph_us = [&](auto body) {
                        cudaGraph_t g;
                        cudaGraphExec_t ex;
                        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
                        for (int i = 0; i < 100; ++i) body();
                        CK(cudaStreamEndCapture(s, &g));
                        CK(cudaGraphInstantiate(&ex, g, 0));
                        CK(cudaGraphLaunch(ex, s));
                        CK(cudaStreamSynchronize(s));
                        std::vector<double> v;
                        for (int r = 0; r < rounds; ++r)
                            v.push_back(tm.median_us(s, reps, [&] { CK(cudaGraphLaunch(ex, s)); }) / 100.0);
                        cudaGraphExecDestroy(ex);
                        cudaGraphDestroy(g);
                        return med(v);
                    };
                    set_words<<<1, 1, 0, s>>>(dspan, n, dfire, 0u);
                    const double u = graph_us([&] { ro(s); });
                    const double e = graph_us([&] { empty_kernel<<<1, 1, 0, s>>>(); });
                    const double c = graph_us([&] { launch_variant(av, n, s, ca); });
                    char line[512];
                    std::snprintf(line, sizeof line,
                                  "| 2^%d | %s | %.2f | %.2f | %.2f | %.2f |", li, cf.name, u, e, c, u / e);
                    unfired.push_back(line);
                }
                cudaFree(cout); cudaFree(ccount); cudaFree(cscratch);
                cudaFree(dperm); cudaFree(dinv); cudaFree(dspan); cudaFree(dfire);
                for (auto& p : planes) cudaFree(p.d);
            }
        }
    }
    std::printf("\nUnfired reorder (fire = 0: two launches whose blocks read the gate and exit), per op inside a "
                "graph of 100:\n\n| n | planes | unfired reorder us | empty<<<1,1>>> us | compaction us | "
                "unfired / empty |\n|---|---|---|---|---|---|\n");
    for (auto& l : unfired) std::printf("%s\n", l.c_str());
}

int main(int argc, char** argv) {
    const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
    const int reps = argc > 2 ? std::atoi(argv[2]) : 15;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    std::printf("# compact_sweep: %s, %d SMs, CUDA runtime %d, CUB %d.%d.%d\n", prop.name, prop.multiProcessorCount,
                CUDART_VERSION, CUB_MAJOR_VERSION, CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    sweep_compaction(rounds, reps, s);
    sweep_reorder(rounds, reps, s);
    std::printf("\n%s: %d mismatch(es)\n", g_failures ? "FAILED" : "all outputs checked", g_failures);
    return g_failures ? 1 : 0;
}
