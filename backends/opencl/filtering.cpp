// Group filtering (bit 12) and reorder_device of the opencl backend, as OpenCL C kernels of the
// backend's own, enqueued on the stream (no host read of device memory, no allocation).
//
// compact_device: per-tile counts, a scan of them, a scatter (see the kernels), so it runs on as
// many work-items as the mask has bytes / 4 (a GPU); on a CPU device contiguous chunks, a few per
// compute unit, each walked serially; the map in numpy.flatnonzero's order either way.
// reorder_device: plan kernels check *span and perm and write each position's destination into
// the scratch (compact's count and scan, on many work-items); then, per plane row, a scatter into
// the scratch and a copy back (one work-item per position below *span); then inv (a work-item per position) and *span. Bad input
// found on the device (a span past n, a perm entry outside [0, n)) moves nothing and is reported
// by the stream's next synchronize: the plan's verdict is copied to the host and read by a host
// call in stream order. Under capture each call is recorded as one node (recording.h): its kernels,
// the verdict's copy and its host call run at every replay.
#include <algorithm>
#include <array>
#include <map>
#include <memory>

#include "common.h"

namespace {
const char* kSource = R"CL(
/* compact_device on many work-items, in three launches over tiles of TILE mask bytes: the kept
 * count of each tile (one work-group per tile), an exclusive scan of those counts in one
 * work-group (which also writes the total and the reorder trigger), and a scatter (one work-group
 * per tile) that writes each kept index at its tile's offset plus its rank in the tile. A tile is
 * PER rounds of WG consecutive bytes (work-item l reads byte round * WG + l: neighbouring
 * work-items read neighbouring bytes); ranks follow (round, l), so the map is ascending, as
 * numpy.flatnonzero's. The scratch holds the tiles' counts, then their offsets (uint each). */
#define WG 256
#define PER 4
#define TILE (WG * PER)

uint eagle_keep(const __global uchar* m, long i, long n, uint drop) {
    return i < n && ((m[i] != 0) != (drop != 0));
}

/* The exclusive prefix of v over the work-group; *total gets the sum of every v. */
uint eagle_scan_group(__local uint* buf, uint v, uint* total) {
    const uint l = get_local_id(0);
    buf[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < WG; off <<= 1) {
        const uint add = l >= off ? buf[l - off] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        buf[l] += add;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const uint inclusive = buf[l];
    *total = buf[WG - 1];
    barrier(CLK_LOCAL_MEM_FENCE);  /* buf is free again */
    return inclusive - v;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void eagle_opencl_compact_count(ulong mask_a, ulong sums_a, long n, uint drop) {
    __local uint buf[WG];
    const __global uchar* m = (const __global uchar*)mask_a;
    const long first = (long)get_group_id(0) * TILE + get_local_id(0);
    uint c = 0, total = 0;
    for (int r = 0; r < PER; ++r) c += eagle_keep(m, first + (long)r * WG, n, drop);
    eagle_scan_group(buf, c, &total);
    if (get_local_id(0) == 0) ((__global uint*)sums_a)[get_group_id(0)] = total;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void eagle_opencl_compact_scan(ulong sums_a, long tiles, ulong count_a, ulong live_a, ulong span_a,
                               ulong fire_a, float theta) {
    __local uint buf[WG];
    __global uint* sums = (__global uint*)sums_a;
    const uint l = get_local_id(0);
    uint carry = 0;
    for (long b = 0; b < tiles; b += WG) {
        const long t = b + l;
        const uint v = t < tiles ? sums[t] : 0u;
        uint total = 0;
        const uint ex = eagle_scan_group(buf, v, &total);
        if (t < tiles) sums[tiles + t] = carry + ex;
        carry += total;
    }
    if (l != 0) return;
    const uint k = carry;
    *(__global uint*)count_a = k;
    if (live_a) *(__global uint*)live_a = k;
    if (fire_a && span_a) {
        const uint span = *(__global const uint*)span_a;
        *(__global uint*)fire_a = (k < span && (float)k <= theta * (float)span) ? 1u : 0u;
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void eagle_opencl_compact_scatter(ulong mask_a, ulong map_a, ulong sums_a, long tiles, long n, uint drop) {
    __local uint buf[WG];
    const __global uchar* m = (const __global uchar*)mask_a;
    __global int* map = (__global int*)map_a;
    const long first = (long)get_group_id(0) * TILE + get_local_id(0);
    uint at = ((__global const uint*)sums_a)[tiles + get_group_id(0)];
    for (int r = 0; r < PER; ++r) {
        const long i = first + (long)r * WG;
        const uint k = eagle_keep(m, i, n, drop);
        uint total = 0;
        const uint ex = eagle_scan_group(buf, k, &total);
        if (k) map[at + ex] = (int)i;
        at += total;
    }
}

/* The same on a CPU device (PoCL), where a work-group's barriers cost more than the bytes: each
 * work-item counts, then writes, one contiguous chunk of `chunk` bytes in order, with the same
 * scan of the chunks' counts between (chunks <= tiles, so the scratch is the same). */
__kernel void eagle_opencl_compact_chunk_count(ulong mask_a, ulong sums_a, long n, uint drop, long chunk) {
    const long w = get_global_id(0), lo = w * chunk, hi = min(n, lo + chunk);
    const __global uchar* m = (const __global uchar*)mask_a;
    uint c = 0;
    for (long i = lo; i < hi; ++i) c += (m[i] != 0) != (drop != 0);
    ((__global uint*)sums_a)[w] = c;
}

__kernel void eagle_opencl_compact_chunk_scatter(ulong mask_a, ulong map_a, ulong sums_a, long chunks, long n,
                                                 uint drop, long chunk) {
    const long w = get_global_id(0), lo = w * chunk, hi = min(n, lo + chunk);
    const __global uchar* m = (const __global uchar*)mask_a;
    __global int* map = (__global int*)map_a;
    uint at = ((__global const uint*)sums_a)[chunks + w];
    for (long i = lo; i < hi; ++i)
        if ((m[i] != 0) != (drop != 0)) map[at++] = (int)i;
}

/* The scratch: uint header[16] = {verdict (0 go, 1 skip, 2 span > n, 3 perm out of range), kept,
 * span, the first bad position}, then int dest[n] (64-byte aligned), then the tiles' counts and
 * offsets (uint[2 * tiles], as compact's), then the elements' staging area. */
#define HDR(s) ((__global uint*)(s))
#define DEST(s) ((__global int*)((s) + 64))
#define TILES(n) (((n) + TILE - 1) / TILE)
#define SUMS(s, n) ((s) + 64 + (((n) * 4 + 63) / 64) * 64)
#define TMP(s, n) ((__global uchar*)(SUMS(s, n) + ((TILES(n) * 8 + 63) / 64) * 64))

/* The plan of a reorder, on many work-items: check (one work-item: the trigger, n, *span), the
 * perm's range (a work-item per position; the first bad one by atomic_min), the verdict, then
 * compact's count and scan over the positions below *span, and each position's destination:
 * a kept one its rank among the kept, a dropped one kept + its rank among the dropped. */
__kernel void eagle_opencl_reorder_check(ulong span_a, ulong fire_a, ulong scr, long n) {
    __global uint* hdr = HDR(scr);
    hdr[0] = 0; hdr[1] = 0; hdr[2] = 0; hdr[3] = 0xffffffffu;
    if (fire_a) {
        __global uint* fire = (__global uint*)fire_a;
        const uint f = *fire;
        *fire = 0;
        if (f == 0) { hdr[0] = 1; return; }
    }
    if (n == 0) { hdr[0] = 1; return; }
    const uint s = *(__global const uint*)span_a;
    hdr[2] = s;
    if ((long)s > n) hdr[0] = 2;
}

__kernel void eagle_opencl_reorder_perm(ulong perm_a, ulong scr, long n) {
    const long p = get_global_id(0);
    __global uint* hdr = HDR(scr);
    if (p >= n || hdr[0] != 0 || p >= (long)hdr[2]) return;
    const int v = ((const __global int*)perm_a)[p];
    if (v < 0 || (long)v >= n) atomic_min(&hdr[3], (uint)p);
}

__kernel void eagle_opencl_reorder_verdict(ulong scr) {
    __global uint* hdr = HDR(scr);
    if (hdr[0] == 0 && hdr[3] != 0xffffffffu) hdr[0] = 3;
}

/* Positions below this limit take part: *span where the reorder goes on, none otherwise. */
long eagle_reorder_limit(ulong scr) { return HDR(scr)[0] == 0 ? (long)HDR(scr)[2] : 0; }

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void eagle_opencl_reorder_count(ulong mask_a, ulong scr, long n, uint drop) {
    __local uint buf[WG];
    const long limit = eagle_reorder_limit(scr);
    const __global uchar* m = (const __global uchar*)mask_a;
    const long first = (long)get_group_id(0) * TILE + get_local_id(0);
    uint c = 0, total = 0;
    for (int r = 0; r < PER; ++r) c += eagle_keep(m, first + (long)r * WG, limit, drop);
    eagle_scan_group(buf, c, &total);
    if (get_local_id(0) == 0) ((__global uint*)SUMS(scr, n))[get_group_id(0)] = total;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void eagle_opencl_reorder_dest(ulong mask_a, ulong scr, long n, uint drop) {
    __local uint buf[WG];
    const long limit = eagle_reorder_limit(scr);
    const __global uchar* m = (const __global uchar*)mask_a;
    __global int* dest = DEST(scr);
    const uint kept = HDR(scr)[1];
    const long first = (long)get_group_id(0) * TILE + get_local_id(0);
    uint at = ((__global const uint*)SUMS(scr, n))[TILES(n) + get_group_id(0)];
    for (int r = 0; r < PER; ++r) {
        const long i = first + (long)r * WG;
        const uint k = eagle_keep(m, i, limit, drop);
        uint total = 0;
        const uint ex = eagle_scan_group(buf, k, &total);
        if (i < limit) dest[i] = k ? (int)(at + ex) : (int)(kept + (uint)i - (at + ex));
        at += total;
    }
}

/* The same two steps by chunks walked serially (a CPU device; see compact's). */
__kernel void eagle_opencl_reorder_chunk_count(ulong mask_a, ulong scr, long n, uint drop, long chunk) {
    const long w = get_global_id(0), lo = w * chunk, hi = min(eagle_reorder_limit(scr), lo + chunk);
    const __global uchar* m = (const __global uchar*)mask_a;
    uint c = 0;
    for (long i = lo; i < hi; ++i) c += (m[i] != 0) != (drop != 0);
    ((__global uint*)SUMS(scr, n))[w] = c;
}

__kernel void eagle_opencl_reorder_chunk_dest(ulong mask_a, ulong scr, long n, uint drop, long chunk, long chunks) {
    const long w = get_global_id(0), lo = w * chunk, hi = min(eagle_reorder_limit(scr), lo + chunk);
    const __global uchar* m = (const __global uchar*)mask_a;
    __global int* dest = DEST(scr);
    const uint kept = HDR(scr)[1];
    uint at = ((__global const uint*)SUMS(scr, n))[chunks + w];
    for (long i = lo; i < hi; ++i)
        dest[i] = ((m[i] != 0) != (drop != 0)) ? (int)at++ : (int)(kept + (uint)i - at);
}

__kernel void eagle_opencl_reorder_scatter(ulong row_a, ulong scr, long n, uint elem) {
    const long i = get_global_id(0);
    if (HDR(scr)[0] != 0 || i >= (long)HDR(scr)[2]) return;
    const __global uchar* row = (const __global uchar*)row_a;
    __global uchar* tmp = TMP(scr, n);
    const long to = (long)DEST(scr)[i];
    for (uint b = 0; b < elem; ++b) tmp[to * elem + b] = row[i * elem + b];
}

__kernel void eagle_opencl_reorder_back(ulong row_a, ulong scr, long n, uint elem) {
    const long i = get_global_id(0);
    if (HDR(scr)[0] != 0 || i >= (long)HDR(scr)[2]) return;
    __global uchar* row = (__global uchar*)row_a;
    const __global uchar* tmp = TMP(scr, n);
    for (uint b = 0; b < elem; ++b) row[i * elem + b] = tmp[i * elem + b];
}

/* inv of the moved perm (a work-item per position: perm is a permutation), then *span. */
__kernel void eagle_opencl_reorder_inv(ulong perm_a, ulong inv_a, ulong scr, long n) {
    const long p = get_global_id(0);
    __global const uint* hdr = HDR(scr);
    if (p >= n || hdr[0] != 0 || p >= (long)hdr[2]) return;
    ((__global int*)inv_a)[((const __global int*)perm_a)[p]] = (int)p;
}

__kernel void eagle_opencl_reorder_finish(ulong span_a, ulong scr) {
    __global const uint* hdr = HDR(scr);
    if (hdr[0] == 0) *(__global uint*)span_a = hdr[1];
}
)CL";

std::mutex g_mu;  // serialises the backend's own kernels (a cl_kernel holds its arguments)
constexpr size_t kWorkGroup = 256;    // WG of the compaction kernels (their reqd_work_group_size)
constexpr int64_t kTile = 256 * 4;    // TILE: mask bytes per work-group

int64_t align64(int64_t x) { return (x + 63) / 64 * 64; }
int64_t reorder_scratch_bytes(int64_t n) { return 64 + align64(4 * n) + align64(8 * ((n + kTile - 1) / kTile)) + 16 * n; }
}  // namespace

namespace eagle_opencl {
cl_kernel own_kernel(const char* source, const char* name) {
    static std::map<std::pair<const char*, std::string>, cl_kernel> kernels;  // live as long as the process
    static std::map<const char*, cl_program> programs;
    auto key = std::make_pair(source, std::string(name));
    auto it = kernels.find(key);
    if (it != kernels.end()) return it->second;
    Runtime& rt = runtime();
    cl_int err = CL_SUCCESS;
    cl_program& prog = programs[source];
    if (!prog) {
        cl_program p = clCreateProgramWithSource(rt.context, 1, &source, nullptr, &err);
        cl_check(err, "clCreateProgramWithSource (the backend's own kernels)");
        err = clBuildProgram(p, 1, &rt.device, "", nullptr, nullptr);
        if (err != CL_SUCCESS) {
            clReleaseProgram(p);
            cl_check(err, "clBuildProgram (the backend's own kernels)", EAGLE_BACKEND_UNAVAILABLE);
        }
        prog = p;
    }
    cl_kernel k = clCreateKernel(prog, name, &err);
    cl_check(err, "clCreateKernel (the backend's own kernels)");
    kernels.emplace(key, k);
    return k;
}

void launch_own(Target& t, cl_kernel k, const std::vector<std::pair<const void*, size_t>>& args, size_t global,
                size_t local) {
    for (size_t a = 0; a < args.size(); ++a)
        cl_check(clSetKernelArg(k, static_cast<cl_uint>(a), args[a].second, args[a].first), "clSetKernelArg");
    t.kernel(k, global, local);
}
}  // namespace eagle_opencl

using namespace eagle_opencl;

EAGLE_EXPORT eagle_backend_status eagle_backend_compact_device(struct eagle_backend_compact_desc* desc) {
    return eagle::guarded("eagle_backend_compact_device", [&] {
        auto d = eagle::read_desc(desc, "desc");
        eagle::check_flags(d.flags, EAGLE_BACKEND_COMPACT_MASK_IS_DROP, "desc->flags");
        check_device(d.device, "desc->device");
        eagle::check_sample_count(d.n, "desc->n");
        // the stream is checked now and ordered (enqueue_stream) only where work is enqueued: a
        // query enqueues nothing, so it must not order the default stream after the others
        stream_of_raw(d.stream, "desc->stream");
        const int64_t tiles = (d.n + kTile - 1) / kTile;
        if (eagle::scratch_query_or_check(desc, d, std::max<int64_t>(16, 8 * tiles), "compaction")) return;
        if (!d.count) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->count is 0");
        if (d.n > 0 && !d.mask) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->mask is 0");
        if (d.n > 0 && !d.index_map) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->index_map is 0");
        if (d.fire && d.span && !(d.theta > 0.0f && d.theta <= 1.0f))
            eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->theta must be in (0, 1] when fire is given");
        const cl_long n = d.n, t = tiles;
        const cl_uint drop = (d.flags & EAGLE_BACKEND_COMPACT_MASK_IS_DROP) ? 1u : 0u;
        const cl_float theta = d.theta;
        Target s(d.stream, "desc->stream", Node::Kind::Compact);  // enqueued, or recorded under capture
        const Runtime& rt = runtime();
        std::lock_guard<std::mutex> lock(g_mu);
        if (rt.compact_chunks) {  // a few chunks per compute unit, each at least a tile
            const int64_t want = std::max<int64_t>(1, 4 * static_cast<int64_t>(rt.compute_units));
            const cl_long chunk = std::max<int64_t>(kTile, (d.n + want - 1) / want);
            const cl_long chunks = (d.n + chunk - 1) / chunk;
            if (chunks > 0)
                launch_own(s, own_kernel(kSource, "eagle_opencl_compact_chunk_count"),
                           {{&d.mask, 8}, {&d.scratch, 8}, {&n, 8}, {&drop, 4}, {&chunk, 8}}, static_cast<size_t>(chunks));
            launch_own(s, own_kernel(kSource, "eagle_opencl_compact_scan"),
                       {{&d.scratch, 8}, {&chunks, 8}, {&d.count, 8}, {&d.live32, 8}, {&d.span, 8}, {&d.fire, 8},
                        {&theta, 4}},
                       kWorkGroup, kWorkGroup);
            if (chunks > 0)
                launch_own(s, own_kernel(kSource, "eagle_opencl_compact_chunk_scatter"),
                           {{&d.mask, 8}, {&d.index_map, 8}, {&d.scratch, 8}, {&chunks, 8}, {&n, 8}, {&drop, 4},
                            {&chunk, 8}},
                           static_cast<size_t>(chunks));
            s.commit();
            return;
        }
        const size_t groups = static_cast<size_t>(tiles) * kWorkGroup;
        if (tiles > 0)
            launch_own(s, own_kernel(kSource, "eagle_opencl_compact_count"),
                       {{&d.mask, 8}, {&d.scratch, 8}, {&n, 8}, {&drop, 4}}, groups, kWorkGroup);
        launch_own(s, own_kernel(kSource, "eagle_opencl_compact_scan"),
                   {{&d.scratch, 8}, {&t, 8}, {&d.count, 8}, {&d.live32, 8}, {&d.span, 8}, {&d.fire, 8}, {&theta, 4}},
                   kWorkGroup, kWorkGroup);
        if (tiles > 0)
            launch_own(s, own_kernel(kSource, "eagle_opencl_compact_scatter"),
                       {{&d.mask, 8}, {&d.index_map, 8}, {&d.scratch, 8}, {&t, 8}, {&n, 8}, {&drop, 4}}, groups,
                       kWorkGroup);
        s.commit();
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_reorder_device(struct eagle_backend_reorder_desc* desc) {
    return eagle::guarded("eagle_backend_reorder_device", [&] {
        auto d = eagle::read_desc(desc, "desc");
        eagle::check_flags(d.flags, EAGLE_BACKEND_COMPACT_MASK_IS_DROP, "desc->flags");
        check_device(d.device, "desc->device");
        eagle::check_sample_count(d.n, "desc->n");
        if (d.plane_count > 64)
            eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->plane_count is " + std::to_string(d.plane_count) + " (0..64)");
        if (d.plane_count > 0 && !d.planes) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->planes is NULL");
        std::vector<eagle_backend_reorder_plane> planes(d.planes, d.planes + d.plane_count);
        for (size_t i = 0; i < planes.size(); ++i) {
            const auto& p = planes[i];
            const std::string name = "desc->planes[" + std::to_string(i) + "]";
            if (p.elem_size != 1 && p.elem_size != 2 && p.elem_size != 4 && p.elem_size != 8 && p.elem_size != 16)
                eagle::fail(EAGLE_BACKEND_UNSUPPORTED, name + ".elem_size is " + std::to_string(p.elem_size) +
                                                           " (1, 2, 4, 8 or 16)");
            if (d.n > 0 && !p.data) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, name + ".data is 0");
            if (p.pitch_bytes < 0) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, name + ".pitch_bytes is negative");
            if (p.pitch_bytes != 0 && p.pitch_bytes < d.n * int64_t(p.elem_size) && p.width > 1)
                eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, name + ".pitch_bytes is smaller than a row");
        }
        stream_of_raw(d.stream, "desc->stream");  // ordered below, once there is work (see compact)
        if (eagle::scratch_query_or_check(desc, d, reorder_scratch_bytes(d.n), "reorder")) return;
        if (d.n > 0) {
            if (!d.mask) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->mask is 0");
            if (!d.perm) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->perm is 0");
            if (!d.inv) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->inv is 0");
            if (!d.span) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->span is 0");
        }
        const cl_long n = d.n;
        const cl_uint drop = (d.flags & EAGLE_BACKEND_COMPACT_MASK_IS_DROP) ? 1u : 0u;
        const size_t global = d.n > 0 ? static_cast<size_t>(d.n) : 1;
        Target s(d.stream, "desc->stream", Node::Kind::Reorder);  // enqueued, or recorded under capture
        std::lock_guard<std::mutex> lock(g_mu);
        // the plan (see the kernels): check, the perm's range, the verdict, count, scan, destinations
        const int64_t tiles = (d.n + kTile - 1) / kTile;
        const cl_long t = tiles;
        const uint64_t sums = d.scratch + static_cast<uint64_t>(64 + align64(4 * d.n));
        const uint64_t kept_word = d.scratch + 4;  // header[1]
        const uint64_t none = 0;
        const cl_float no_theta = 0.0f;
        launch_own(s, own_kernel(kSource, "eagle_opencl_reorder_check"),
                   {{&d.span, 8}, {&d.fire, 8}, {&d.scratch, 8}, {&n, 8}}, 1);
        if (d.n > 0) {
            launch_own(s, own_kernel(kSource, "eagle_opencl_reorder_perm"), {{&d.perm, 8}, {&d.scratch, 8}, {&n, 8}},
                       global);
            launch_own(s, own_kernel(kSource, "eagle_opencl_reorder_verdict"), {{&d.scratch, 8}}, 1);
            if (runtime().compact_chunks) {  // as compact's chunks (the sums region holds tiles >= chunks)
                const int64_t want = std::max<int64_t>(1, 4 * static_cast<int64_t>(runtime().compute_units));
                const cl_long chunk = std::max<int64_t>(kTile, (d.n + want - 1) / want);
                const cl_long chunks = (d.n + chunk - 1) / chunk;
                launch_own(s, own_kernel(kSource, "eagle_opencl_reorder_chunk_count"),
                           {{&d.mask, 8}, {&d.scratch, 8}, {&n, 8}, {&drop, 4}, {&chunk, 8}}, static_cast<size_t>(chunks));
                launch_own(s, own_kernel(kSource, "eagle_opencl_compact_scan"),
                           {{&sums, 8}, {&chunks, 8}, {&kept_word, 8}, {&none, 8}, {&none, 8}, {&none, 8}, {&no_theta, 4}},
                           kWorkGroup, kWorkGroup);
                launch_own(s, own_kernel(kSource, "eagle_opencl_reorder_chunk_dest"),
                           {{&d.mask, 8}, {&d.scratch, 8}, {&n, 8}, {&drop, 4}, {&chunk, 8}, {&chunks, 8}},
                           static_cast<size_t>(chunks));
            } else {
                launch_own(s, own_kernel(kSource, "eagle_opencl_reorder_count"),
                           {{&d.mask, 8}, {&d.scratch, 8}, {&n, 8}, {&drop, 4}}, static_cast<size_t>(tiles) * kWorkGroup,
                           kWorkGroup);
                launch_own(s, own_kernel(kSource, "eagle_opencl_compact_scan"),
                           {{&sums, 8}, {&t, 8}, {&kept_word, 8}, {&none, 8}, {&none, 8}, {&none, 8}, {&no_theta, 4}},
                           kWorkGroup, kWorkGroup);
                launch_own(s, own_kernel(kSource, "eagle_opencl_reorder_dest"),
                           {{&d.mask, 8}, {&d.scratch, 8}, {&n, 8}, {&drop, 4}}, static_cast<size_t>(tiles) * kWorkGroup,
                           kWorkGroup);
            }
        }
        auto move_row = [&](uint64_t row, cl_uint elem) {
            launch_own(s, own_kernel(kSource, "eagle_opencl_reorder_scatter"), {{&row, 8}, {&d.scratch, 8}, {&n, 8}, {&elem, 4}},
                       global);
            launch_own(s, own_kernel(kSource, "eagle_opencl_reorder_back"), {{&row, 8}, {&d.scratch, 8}, {&n, 8}, {&elem, 4}},
                       global);
        };
        for (const auto& pl : planes) {
            const uint32_t width = pl.width ? pl.width : 1;
            const int64_t pitch = pl.pitch_bytes ? pl.pitch_bytes : d.n * static_cast<int64_t>(pl.elem_size);
            for (uint32_t r = 0; r < width; ++r) move_row(pl.data + static_cast<uint64_t>(r * pitch), pl.elem_size);
        }
        move_row(d.perm, 4);
        if (d.n > 0)
            launch_own(s, own_kernel(kSource, "eagle_opencl_reorder_inv"),
                       {{&d.perm, 8}, {&d.inv, 8}, {&d.scratch, 8}, {&n, 8}}, global);
        launch_own(s, own_kernel(kSource, "eagle_opencl_reorder_finish"), {{&d.span, 8}, {&d.scratch, 8}}, 1);
        // The verdict to the host, then read in stream order: bad input surfaces at synchronize.
        // (Recorded, the verdict's host copy is the node's own, kept alive by the host call.)
        auto verdict = std::make_shared<std::array<uint32_t, 4>>();
        s.copy(verdict->data(), reinterpret_cast<const void*>(d.scratch), 16);
        const int64_t nn = d.n;
        s.host([verdict, nn](Stream& on) {
            Stream* sp = &on;
            const auto& v = *verdict;
            std::string why;
            if (v[0] == 2)
                why = "reorder_device: *span (" + std::to_string(v[2]) + ") exceeds n (" + std::to_string(nn) +
                      "); nothing was moved";
            else if (v[0] == 3)
                why = "reorder_device: perm[" + std::to_string(v[3]) + "] is outside [0, n); nothing was moved";
            if (why.empty()) return;
            std::lock_guard<std::mutex> lock(sp->mu);
            if (sp->failure.empty()) sp->failure = why;
        });
        s.commit();
    });
}
