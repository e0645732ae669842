/*
 * eagle/kernel.h -- write the per-sample step once, in C, and get every kind's entry from it.
 *
 * Include it from a kernel source compiled by eagle.compile (the include directory is
 * eagle.include_dir(), passed to every kind's compiler). A kernel is declared with its arguments
 * as (type, name) pairs, followed by the body of ONE sample's work:
 *
 *     #include <eagle/kernel.h>
 *
 *     EAGLE_KERNEL(drift, (double*, x), (const double*, v), (double, dt))
 *     {
 *         x[i] += dt * v[i];      // i: this lane's sample (int64_t); n: the run's n_samples
 *     }
 *
 * From that one definition the header makes, for the kind being compiled:
 *   drift          every sample of the launch's partition: lanes [base, base + count), i = lane.
 *   drift_active   the ActiveSet variant: two more arguments follow the declared ones,
 *                  (const int32_t* index_map, const uint32_t* live_count); lane l < *live_count
 *                  runs sample i = index_map[l]; lanes at or past *live_count do nothing.
 *   drift_drain    the drained ActiveSet variant, launched by ActiveSet.drain(): six more
 *                  arguments follow the declared ones, (const int32_t* index_map,
 *                  const uint32_t* live_count, const uint8_t* drop_mask, uint32_t* queue,
 *                  int64_t rounds, int64_t workers). Every live sample i (index_map[p] for
 *                  p < *live_count, each exactly once) has its body called again and again
 *                  until drop_mask[i] != 0 or it was called `rounds` times. With index_map and
 *                  live_count both NULL every sample 0..n-1 is visited (map position p is sample
 *                  p) and those whose drop_mask byte is set are skipped: a drain straight after a
 *                  reset then needs no compaction before it (ActiveSet.drain(compacted=False)). That is what
 *                  `rounds` iterations of (drift_active; compact) give each sample, with no
 *                  synchronisation between the rounds: valid when sample i's body touches only
 *                  sample i. A lane that finishes its sample takes the next live one, so the
 *                  lanes stay busy however unequal the samples are. On cuda, the `workers` lanes
 *                  take positions 0..workers-1 first, then chunks claimed by their warp from
 *                  queue[0]; the last block to finish leaves queue[0..1] at zero for the next
 *                  launch (it must be zero before the first). The cpu kind strides by `workers`.
 *                  queue[2] is the cancel word: while it is nonzero every lane stops (at its
 *                  next round, on every kind), leaving its sample where it stopped. eagle's host
 *                  side sets it when a wait for the drain is interrupted (Ctrl-C, an alarm's
 *                  exception: eagle/_inflight/cancel.py) and clears it in stream order after the
 *                  stopped launch, so the queue holds 3 words (ActiveSet allocates 4).
 *   eagle_while_end_2_drift (cuda only; 2 is the number of declared arguments) `drift` that
 *                  also ends an iteration of the WHILE whose body it ends: the cuda backend launches it in place of `drift` when a `drift`
 *                  launch is the last word of a WHILE body, so no setter kernel follows it (see
 *                  eagle_while_decide below). Never called by the user; names that begin with
 *                  eagle_ are the header's.
 * On the cpu kind each is `void k(void* const* params, int64_t base, int64_t count, int64_t n)`
 * with a lane loop; on cuda and hip each is an extern "C" __global__ function taking the declared
 * arguments, then eagle's partition triple (int64 base, count, n_samples), one lane per thread.
 * On opencl each is a __kernel taking every declared argument as its 8-byte value (ulong), then
 * the partition triple, one work-item per lane; a declared pointer is a __global pointer where
 * the device has no generic address space (NVIDIA's OpenCL, PoCL), else generic.
 * The partition triple and the lane loop are eagle's, never the user's.
 *
 * Numerics: this header includes <eagle/numerics.h>, so every kind has C's numeric vocabulary
 * (INFINITY, NAN, M_PI, DBL_EPSILON, FLT_MAX, isnan, fmin, nextafter, fma, ..., int64_t,
 * INT64_MAX, bool, size_t, NULL) with C's meaning, and a source needs no other include.
 *
 * Rules: 1 to 24 arguments; each type is one token sequence without commas or parentheses (a
 * pointer, double, int32_t, ...). The names i and n are the body's own. Helper functions the body
 * calls are marked EAGLE_FN. A helper's pointer parameter that receives a pointer into a declared
 * array (f(&x[i]), f(x)), and a local pointer variable that holds one, are written EAGLE_GLOBAL
 * double*: __global on an opencl device without the generic address space, nothing elsewhere
 * (pointers to the body's own locals need nothing); without it that device's compiler refuses the
 * call, naming the address space. A pointer parameter's type shows its '*' (not a typedef of a
 * pointer), so that the opencl backend sees it is one (backends/opencl/README.md).
 *
 * Typed launches. eagle reads the declaration and checks every launch of the kernel against it
 * (eagle.run, Stream.run, Kernel.run, a step recorded by Graph.build, ActiveSet.drain) before the
 * kernel runs, refusing with an eagle error that names the kernel, the argument, its declared type
 * and what was given:
 *   double, float         a real number: a Python int is converted; a bool or an array is refused.
 *   int8_t .. uint64_t, int, long, size_t, ...
 *                         an integer in the type's range (a bool counts as 0 or 1); a float is
 *                         refused, even 2.0.
 *   bool                  a bool, or 0 or 1.
 *   T*                    an array (eagle's, numpy's on the cpu kind, anything exporting DLPack or
 *                         an array interface) of T's dtype (double* float64, float* float32,
 *                         int32_t* int32, uint8_t* uint8, ...), writable unless declared const T*,
 *                         holding at least the run's n_samples along its last axis (a plane (N,)
 *                         or (w, N)); never a number, a Python int address or a 0-d array. void*,
 *                         T** and a pointer to a type eagle does not know take any array.
 *   EAGLE_BUFFER T*       as T*, of any length: a table, a counter word, a buffer that is not
 *                         one sample per lane. Written before the type: (EAGLE_BUFFER const
 *                         double*, table). It expands to nothing on every kind.
 * Scalars are passed at their declared width (a float as 4 bytes, an int32_t as 4). A simple
 * typedef of the source (typedef float real;) is checked as the type it names. A type eagle does
 * not know (a struct, a vector type, a macro) is passed unchecked, as an 8-byte value for a Python
 * int or float, or the bytes given. A kernel loaded from an image or from a source
 * without EAGLE_KERNEL has no declaration: its launches are not checked.
 *
 * Floating point: eagle.compile has three modes. The default contracts multiply-adds into fused
 * multiply-adds as each kind's compiler does by default (cpu: -ffp-contract=fast, with FMA
 * instructions where the host CPU has them; cuda: NVRTC's --fmad=true), with IEEE division and
 * square root and no flush to zero: results may differ between kinds in the last place of a
 * multiply-add. exact=True is bit-exact: every kind keeps each operation the source spells, with
 * no contraction, IEEE division and square root, so + - * / and sqrt (and the exactly rounded
 * functions of eagle/numerics.h) give the same bits on every kind. Library functions (exp, sin,
 * log, ...) come from each kind's own math library and may differ in the last place in every
 * mode. fast_math=True lets every compiler also reassociate, approximate and flush denormals.
 */
#ifndef EAGLE_KERNEL_H
#define EAGLE_KERNEL_H

/* The C numerics vocabulary (INFINITY, M_PI, DBL_EPSILON, int64_t, INT64_MAX, bool, size_t, ...),
 * the same on every kind: see eagle/numerics.h. */
#include "numerics.h"

#if defined(__CUDACC_RTC__) || defined(__HIPCC_RTC__) || defined(__CUDACC__) || defined(__HIPCC__)
#define EAGLE_KIND_GPU 1
#else
#define EAGLE_KIND_GPU 0
#endif
/* OpenCL C (the opencl kind): its own half below; EAGLE_KIND_GPU is 0 there (no CUDA syntax). */
#if defined(__OPENCL_VERSION__) || defined(__OPENCL_C_VERSION__)
#define EAGLE_KIND_OPENCL 1
#else
#define EAGLE_KIND_OPENCL 0
#endif

/* A pointer parameter of any length (eagle checks no sample count for it): see "Typed launches". */
#ifdef EAGLE_READ_DECLARATIONS
#define EAGLE_BUFFER eagle_buffer__
#else
#define EAGLE_BUFFER
#endif
/* A helper's pointer parameter that receives a pointer into a declared array
 * (EAGLE_FN void f(EAGLE_GLOBAL double* p), called as f(&x[i])): __global on an opencl device
 * without the generic address space (see the opencl half), nothing on every other kind. A helper
 * that takes pointers to the body's own locals needs nothing. */
#if !EAGLE_KIND_OPENCL
#define EAGLE_GLOBAL
#endif

/* ------------------------------------------------------------------ preprocessor helpers */
/* Argument counting and an indexed map over (type, name) pairs; generated for up to 24 pairs. */
#define EAGLE_PP_NARGS(...) EAGLE_PP_NARGS_(__VA_ARGS__, 24,23,22,21,20,19,18,17,16,15,14,13,12,11,10,9,8,7,6,5,4,3,2,1, 0)
#define EAGLE_PP_NARGS_(_1,_2,_3,_4,_5,_6,_7,_8,_9,_10,_11,_12,_13,_14,_15,_16,_17,_18,_19,_20,_21,_22,_23,_24, N, ...) N
#define EAGLE_PP_MAP_1(M, k, a) M(k, a)
#define EAGLE_PP_MAP_2(M, k, a, ...) M(k, a) EAGLE_PP_MAP_1(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_3(M, k, a, ...) M(k, a) EAGLE_PP_MAP_2(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_4(M, k, a, ...) M(k, a) EAGLE_PP_MAP_3(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_5(M, k, a, ...) M(k, a) EAGLE_PP_MAP_4(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_6(M, k, a, ...) M(k, a) EAGLE_PP_MAP_5(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_7(M, k, a, ...) M(k, a) EAGLE_PP_MAP_6(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_8(M, k, a, ...) M(k, a) EAGLE_PP_MAP_7(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_9(M, k, a, ...) M(k, a) EAGLE_PP_MAP_8(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_10(M, k, a, ...) M(k, a) EAGLE_PP_MAP_9(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_11(M, k, a, ...) M(k, a) EAGLE_PP_MAP_10(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_12(M, k, a, ...) M(k, a) EAGLE_PP_MAP_11(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_13(M, k, a, ...) M(k, a) EAGLE_PP_MAP_12(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_14(M, k, a, ...) M(k, a) EAGLE_PP_MAP_13(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_15(M, k, a, ...) M(k, a) EAGLE_PP_MAP_14(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_16(M, k, a, ...) M(k, a) EAGLE_PP_MAP_15(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_17(M, k, a, ...) M(k, a) EAGLE_PP_MAP_16(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_18(M, k, a, ...) M(k, a) EAGLE_PP_MAP_17(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_19(M, k, a, ...) M(k, a) EAGLE_PP_MAP_18(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_20(M, k, a, ...) M(k, a) EAGLE_PP_MAP_19(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_21(M, k, a, ...) M(k, a) EAGLE_PP_MAP_20(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_22(M, k, a, ...) M(k, a) EAGLE_PP_MAP_21(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_23(M, k, a, ...) M(k, a) EAGLE_PP_MAP_22(M, (k) + 1, __VA_ARGS__)
#define EAGLE_PP_MAP_24(M, k, a, ...) M(k, a) EAGLE_PP_MAP_23(M, (k) + 1, __VA_ARGS__)
/* The same map with a fixed context c (the kernel's name) in place of the index: M(c, pair). */
#define EAGLE_PP_MAPK_1(M, c, a) M(c, a)
#define EAGLE_PP_MAPK_2(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_1(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_3(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_2(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_4(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_3(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_5(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_4(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_6(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_5(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_7(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_6(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_8(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_7(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_9(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_8(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_10(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_9(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_11(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_10(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_12(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_11(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_13(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_12(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_14(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_13(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_15(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_14(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_16(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_15(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_17(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_16(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_18(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_17(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_19(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_18(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_20(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_19(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_21(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_20(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_22(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_21(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_23(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_22(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK_24(M, c, a, ...) M(c, a) EAGLE_PP_MAPK_23(M, c, __VA_ARGS__)
#define EAGLE_PP_MAPK(M, c, ...) EAGLE_PP_CAT(EAGLE_PP_MAPK_, EAGLE_PP_NARGS(__VA_ARGS__))(M, c, __VA_ARGS__)
#define EAGLE_PP_CAT(a, b) EAGLE_PP_CAT_(a, b)
#define EAGLE_PP_CAT_(a, b) a##b
#define EAGLE_PP_MAP(M, ...) EAGLE_PP_CAT(EAGLE_PP_MAP_, EAGLE_PP_NARGS(__VA_ARGS__))(M, 0, __VA_ARGS__)
#define EAGLE_PP_TYPE(T, name) T
#define EAGLE_PP_NAME(T, name) name
/* ", T name" / ", name" / "T name = *(T const*)params[k];" for one (T, name) pair. */
#define EAGLE_PP_DECL(k, p) , EAGLE_PP_TYPE p EAGLE_PP_NAME p
#define EAGLE_PP_PARAM(k, p) EAGLE_PP_TYPE p EAGLE_PP_NAME p,
#define EAGLE_PP_USE(k, p) , EAGLE_PP_NAME p
#define EAGLE_PP_UNPACK(k, p) EAGLE_PP_TYPE p EAGLE_PP_NAME p = *(EAGLE_PP_TYPE p const*)eagle_params[k];

/* ------------------------------------------------------------------ per kind */
#if EAGLE_KIND_GPU
/* Marks a helper function the body calls. */
#define EAGLE_FN static __device__ __forceinline__

/* ---- the drain loop's lane state (see name_drain above). Every lane of a warp runs these
 * together (the warp stays converged around them); the pool is the same in every lane. */
#define EAGLE_DRAIN_CHUNK 64
typedef struct {
    int64_t p, i, r;            /* this lane's map position (-1: none), its sample, body calls made */
    int64_t live, first_dynamic; /* positions [0, live); those from first_dynamic on are claimed */
    int64_t pool_next, pool_end; /* the warp's claimed positions not yet taken */
    int exhausted;               /* the queue has nothing more below live */
    unsigned cancel;             /* lane 0: the cancel word as read one round ago (see next) */
} eagle_drain_lane;

/* Map position p's sample: index_map[p], or p itself when there is no map (every sample 0..n-1). */
#define EAGLE_DRAIN_SAMPLE(map, p) ((map) ? (int64_t)(map)[p] : (int64_t)(p))

EAGLE_FN eagle_drain_lane eagle_drain_begin(const uint32_t* live, int64_t n, int64_t workers) {
    eagle_drain_lane d;
    const int64_t w = (int64_t)blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    d.live = live ? (int64_t)*live : n;
    d.first_dynamic = workers;
    d.p = -1;
    d.i = 0;
    d.r = 0;
    d.pool_next = d.pool_end = 0;
    d.cancel = 0u;
    d.exhausted = workers >= d.live;
    if (w < workers && w < d.live) d.p = w;
    return d;
}

/* Releases a finished sample, refills the lanes that have none, and says whether any lane of
 * the warp has a sample to step (then d->p >= 0 marks the lanes that do, d->i their sample). */
EAGLE_FN bool eagle_drain_next(eagle_drain_lane* d, const int32_t* map, const uint8_t* mask, uint32_t* queue,
                               int64_t rounds) {
    if (d->p >= 0 && d->r == 0) d->i = EAGLE_DRAIN_SAMPLE(map, d->p);
    if (d->p >= 0 && (d->r >= rounds || mask[d->i] != 0)) d->p = -1;
#if defined(__HIPCC_RTC__) || defined(__HIPCC__)
    /* hip: each lane claims alone (wavefront-width ballots are not used here). */
    if (*(volatile const uint32_t*)(queue + 2) != 0u) { /* the cancel word */
        d->p = -1;
        d->exhausted = 1;
        return false;
    }
    if (d->p < 0 && !d->exhausted) {
        const int64_t q = d->first_dynamic + (int64_t)atomicAdd(queue, 1u);
        if (q < d->live) {
            d->p = q; d->i = EAGLE_DRAIN_SAMPLE(map, q); d->r = 0; if (mask[d->i] != 0) d->p = -1;
        } else {
            d->exhausted = 1;
        }
    }
    if (d->p >= 0) d->r++;
    return d->p >= 0 || !d->exhausted;
#else
    const unsigned lane = threadIdx.x & 31u;
    /* the cancel word, read by lane 0 and shared, so the whole warp stops together. The value
     * used is the one read a round ago: the load is in flight while the body runs, off the
     * loop's latency chain, and a cancel stops the warp one round later. */
    const unsigned stop = __shfl_sync(0xffffffffu, d->cancel, 0);
    if (lane == 0) d->cancel = *(volatile const uint32_t*)(queue + 2);
    if (stop != 0u) {
        d->p = -1;
        d->exhausted = 1;
        d->pool_next = d->pool_end = 0;
        return false;
    }
    const unsigned want = __ballot_sync(0xffffffffu, d->p < 0);
    if (want != 0u) {
        const int64_t k = __popc(want);
        const int64_t rank = __popc(want & ((1u << lane) - 1u));
        int64_t avail = d->pool_end - d->pool_next;
        if (avail < 0) avail = 0;
        int64_t mine = rank < avail ? d->pool_next + rank : -1;
        if (avail < k && !d->exhausted) {
            unsigned c = 0;
            if (lane == 0) c = atomicAdd(queue, (unsigned)EAGLE_DRAIN_CHUNK);
            c = __shfl_sync(0xffffffffu, c, 0);
            const int64_t start = d->first_dynamic + (int64_t)c;
            if (rank >= avail) mine = start + (rank - avail);
            d->pool_next = start + (k - avail);
            d->pool_end = start + EAGLE_DRAIN_CHUNK < d->live ? start + EAGLE_DRAIN_CHUNK : d->live;
            if (start + EAGLE_DRAIN_CHUNK >= d->live) d->exhausted = 1;
        } else {
            d->pool_next += avail < k ? avail : k;  /* the queue is empty: the pool's last positions */
        }
        if (d->p < 0 && mine >= 0 && mine < d->live) {
            d->p = mine;
            d->i = EAGLE_DRAIN_SAMPLE(map, mine);
            d->r = 0;
            if (mask[d->i] != 0) d->p = -1;  /* dropped before this launch: take another next time */
        }
    }
    if (d->p >= 0) d->r++;
    /* pool and exhausted are the same in every lane, so the warp leaves the loop together */
    return __any_sync(0xffffffffu, d->p >= 0) != 0 || d->pool_next < d->pool_end || !d->exhausted;
#endif
}

/* The last block to finish leaves the queue at zero for the next launch. */
EAGLE_FN void eagle_drain_end(uint32_t* queue) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(queue + 1, 1u) == gridDim.x - 1) {
            queue[0] = 0u;
            queue[1] = 0u;
            __threadfence();
        }
    }
}

#if defined(__HIPCC_RTC__) || defined(__HIPCC__)
/* hip has no conditional graph nodes: no WHILE-end variant. */
#define EAGLE_WHILE_END_VARIANT(name, ...)
#else
#if defined(__CUDACC_RTC__)
/* NVRTC declares no device runtime API: the one builtin the WHILE-end variant calls. */
extern "C" __device__ __attribute__((cudart_builtin)) void cudaGraphSetConditional(unsigned long long handle,
                                                                                     unsigned int value);
#endif
/* ---- the WHILE fold (cuda). eagle_while_end_<N>_<name> (N: the declared arguments) is `name`
 * followed by the decision of the WHILE whose body it ends, so that no setter kernel follows it
 * (the cuda backend's conditional nodes; never launched by the user). Its hidden arguments follow the partition triple: the loop's condition
 * handle, its guard words (count, and baseline or NULL), its [remaining, ran] cell and a ticket word
 * (zero before the first launch). Once every lane of the grid has run the body, one thread decides
 * exactly as the backend's setter does: go = remaining > 0 && *count != (baseline ? *baseline : 0);
 * a go steps the cell. With several blocks the last block to draw a ticket decides (each block
 * fences its writes before it draws) and leaves the ticket at zero for the next launch.
 *
 * Each iteration is a latency chain, so every read that can be is taken off it: thread 0 reads the
 * cell before the body (only these decisions write it, and the last one finished before this launch
 * began), and a single block reads the guard with plain loads (after the barrier its own writes are
 * visible and nothing else writes it) where several blocks need loads that see other blocks' writes. */
EAGLE_FN void eagle_while_decide(unsigned long long handle, const uint32_t* count, const uint32_t* baseline,
                                 uint32_t* cell, uint32_t* ticket, uint32_t remaining, uint32_t ran) {
    __syncthreads();
    if (threadIdx.x != 0) return;
    uint32_t guard, base;
    if (gridDim.x > 1) {
        __threadfence();
        if (atomicAdd(ticket, 1u) != gridDim.x - 1) return;
        *ticket = 0u;
        __threadfence();
        guard = *(volatile const uint32_t*)count;
        base = baseline ? *(volatile const uint32_t*)baseline : 0u;
    } else {
        guard = *count;
        base = baseline ? *baseline : 0u;
    }
    const bool go = remaining > 0u && guard != base;
    if (go) {
        cell[0] = remaining - 1u;
        cell[1] = ran + 1u;
    }
    cudaGraphSetConditional(handle, go ? 1u : 0u);
}
#define EAGLE_WHILE_END_NAME(name, ...) \
    EAGLE_PP_CAT(EAGLE_PP_CAT(eagle_while_end_, EAGLE_PP_NARGS(__VA_ARGS__)), EAGLE_PP_CAT(_, name))
#define EAGLE_WHILE_END_VARIANT(name, ...)                                                           \
    extern "C" __global__ void EAGLE_WHILE_END_NAME(name, __VA_ARGS__)(                              \
                                                      EAGLE_PP_MAP(EAGLE_PP_PARAM, __VA_ARGS__)      \
                                                      int64_t eagle_base, int64_t eagle_count,       \
                                                      int64_t eagle_n, unsigned long long eagle_handle, \
                                                      const uint32_t* eagle_guard,                   \
                                                      const uint32_t* eagle_baseline,                \
                                                      uint32_t* eagle_cell, uint32_t* eagle_ticket) { \
        uint32_t eagle_remaining = 0u, eagle_ran = 0u;                                               \
        if (threadIdx.x == 0) {                                                                      \
            eagle_remaining = eagle_cell[0];                                                         \
            eagle_ran = eagle_cell[1];                                                               \
        }                                                                                            \
        const int64_t eagle_l = eagle_base + (int64_t)blockIdx.x * (int64_t)blockDim.x + threadIdx.x; \
        if (eagle_l < eagle_base + eagle_count)                                                      \
            eagle_body_##name(eagle_l, eagle_n EAGLE_PP_MAP(EAGLE_PP_USE, __VA_ARGS__));             \
        eagle_while_decide(eagle_handle, eagle_guard, eagle_baseline, eagle_cell, eagle_ticket,      \
                           eagle_remaining, eagle_ran);                                              \
    }
#endif

#define EAGLE_KERNEL(name, ...)                                                                      \
    EAGLE_FN void eagle_body_##name(int64_t i, int64_t n EAGLE_PP_MAP(EAGLE_PP_DECL, __VA_ARGS__));  \
    EAGLE_WHILE_END_VARIANT(name, __VA_ARGS__)                                                       \
    extern "C" __global__ void name(EAGLE_PP_MAP(EAGLE_PP_PARAM, __VA_ARGS__) int64_t eagle_base,     \
                                    int64_t eagle_count, int64_t eagle_n) {                          \
        const int64_t eagle_l = eagle_base + (int64_t)blockIdx.x * (int64_t)blockDim.x + threadIdx.x; \
        if (eagle_l < eagle_base + eagle_count)                                                      \
            eagle_body_##name(eagle_l, eagle_n EAGLE_PP_MAP(EAGLE_PP_USE, __VA_ARGS__));             \
    }                                                                                                \
    extern "C" __global__ void name##_active(EAGLE_PP_MAP(EAGLE_PP_PARAM, __VA_ARGS__)               \
                                             const int32_t* eagle_map, const uint32_t* eagle_live,   \
                                             int64_t eagle_base, int64_t eagle_count, int64_t eagle_n) { \
        const int64_t eagle_l = eagle_base + (int64_t)blockIdx.x * (int64_t)blockDim.x + threadIdx.x; \
        if (eagle_l < eagle_base + eagle_count && eagle_l < (int64_t)*eagle_live)                     \
            eagle_body_##name(eagle_map[eagle_l], eagle_n EAGLE_PP_MAP(EAGLE_PP_USE, __VA_ARGS__));  \
    }                                                                                                \
    extern "C" __global__ void name##_drain(EAGLE_PP_MAP(EAGLE_PP_PARAM, __VA_ARGS__)                \
                                            const int32_t* eagle_map, const uint32_t* eagle_live,    \
                                            const uint8_t* eagle_mask, uint32_t* eagle_queue,        \
                                            int64_t eagle_rounds, int64_t eagle_workers,             \
                                            int64_t eagle_base, int64_t eagle_count, int64_t eagle_n) { \
        (void)eagle_base; (void)eagle_count;                                                         \
        eagle_drain_lane eagle_d = eagle_drain_begin(eagle_live, eagle_n, eagle_workers);            \
        while (eagle_drain_next(&eagle_d, eagle_map, eagle_mask, eagle_queue, eagle_rounds))          \
            if (eagle_d.p >= 0)                                                                      \
                eagle_body_##name(eagle_d.i, eagle_n EAGLE_PP_MAP(EAGLE_PP_USE, __VA_ARGS__));       \
        eagle_drain_end(eagle_queue);                                                                \
    }                                                                                                \
    EAGLE_FN void eagle_body_##name(int64_t i, int64_t n EAGLE_PP_MAP(EAGLE_PP_DECL, __VA_ARGS__))

#elif EAGLE_KIND_OPENCL
/* ---- the opencl kind: the backend picks the -cl-std (backends/opencl/README.md). Where the
 * device has the generic address space a pointer the user writes without one (double*) is
 * generic, in the body and the helpers alike; where it has not (NVIDIA's OpenCL, PoCL 3.1) the
 * declared pointer parameters are made __global (EAGLE_OCL_SPACE below) and a helper's pointer
 * into them is written EAGLE_GLOBAL. Every kernel entry takes each declared argument as the
 * 8-byte value eagle passes
 * (ulong: a scalar's bits, or an array's device address -- a coarse-grained SVM address, the same
 * on the host and the device) and reinterprets it as the declared type; then eagle's partition
 * triple (long base, count, n_samples), one work-item per lane: lane = base + get_global_id(0).
 * Taking addresses as integers is what lets eagle do arithmetic on them (plane offsets). */
#define EAGLE_FN static inline
#define EAGLE_OCL_ARG(p) EAGLE_PP_CAT(eagle_arg_, EAGLE_PP_NAME p)
#define EAGLE_OCL_PARAM(k, p) ulong EAGLE_OCL_ARG(p),
/* The declared type from its 8 bytes (little-endian: a narrower scalar is the low bytes). */
#define EAGLE_OCL_AS(T, bits) (((union { ulong eagle_u; T eagle_v; }){.eagle_u = (bits)}).eagle_v)
/* A declared parameter's address space. On a device without the generic address space (OpenCL
 * C 1.2, or 3.0 without __opencl_c_generic_address_space: NVIDIA's, and PoCL's), where an
 * unqualified pointer is private, the opencl backend reads the source's EAGLE_KERNEL declarations
 * (as eagle does) and prepends, with EAGLE_OCL_SPACES,
 *   #define EAGLE_OCL_SPACE_<kernel>__<param> ~, __global   (a pointer: its type holds a '*')
 *   #define EAGLE_OCL_SPACE_<kernel>__<param> ~,            (a scalar)
 * and, for a name that is a pointer in every declaration (or a scalar in every one),
 *   #define EAGLE_OCL_SPACE__<param> __global   (or nothing),
 * which serves a kernel the backend did not see by its name (one declared inside a macro that
 * names its kernels, as eagle's restore kernels are). `double* x` becomes `__global double* x`
 * in the entries and the body. EAGLE_OCL_SPACE picks the first that is defined (the second item
 * of "<kernel line>, <param line>, ~" is __global or nothing when the kernel line is defined, the
 * param line otherwise). With the generic address space nothing is prepended. */
#ifdef EAGLE_OCL_SPACES
#define EAGLE_OCL_SECOND(a, b, ...) b
#define EAGLE_OCL_SECOND_(...) EAGLE_OCL_SECOND(__VA_ARGS__)
#define EAGLE_OCL_UNPAIR(T, param) T, param
#define EAGLE_OCL_KEY(name, T, param) EAGLE_OCL_SPACE_##name##__##param, EAGLE_OCL_SPACE__##param, ~
#define EAGLE_OCL_KEY_(...) EAGLE_OCL_KEY(__VA_ARGS__)
#define EAGLE_OCL_SPACE(name, p) EAGLE_OCL_SECOND_(EAGLE_OCL_KEY_(name, EAGLE_OCL_UNPAIR p))
#define EAGLE_GLOBAL __global
#else
#define EAGLE_OCL_SPACE(name, p)
#define EAGLE_GLOBAL
#endif
#define EAGLE_OCL_TYPE(name, p) EAGLE_OCL_SPACE(name, p) EAGLE_PP_TYPE p
#define EAGLE_OCL_UNPACK(name, p) \
    EAGLE_OCL_TYPE(name, p) EAGLE_PP_NAME p = EAGLE_OCL_AS(EAGLE_OCL_TYPE(name, p), EAGLE_OCL_ARG(p));
#define EAGLE_OCL_DECL(name, p) , EAGLE_OCL_TYPE(name, p) EAGLE_PP_NAME p
#define EAGLE_OCL_LANE const int64_t eagle_l = eagle_base + (int64_t)get_global_id(0)

#define EAGLE_KERNEL(name, ...)                                                                      \
    EAGLE_FN void eagle_body_##name(int64_t i, int64_t n EAGLE_PP_MAPK(EAGLE_OCL_DECL, name, __VA_ARGS__)); \
    __kernel void name(EAGLE_PP_MAP(EAGLE_OCL_PARAM, __VA_ARGS__) long eagle_base, long eagle_count,  \
                       long eagle_n) {                                                               \
        EAGLE_PP_MAPK(EAGLE_OCL_UNPACK, name, __VA_ARGS__)                                           \
        EAGLE_OCL_LANE;                                                                              \
        if (eagle_l < eagle_base + eagle_count)                                                      \
            eagle_body_##name(eagle_l, eagle_n EAGLE_PP_MAP(EAGLE_PP_USE, __VA_ARGS__));             \
    }                                                                                                \
    __kernel void name##_active(EAGLE_PP_MAP(EAGLE_OCL_PARAM, __VA_ARGS__) ulong eagle_map_bits,      \
                                ulong eagle_live_bits, long eagle_base, long eagle_count, long eagle_n) { \
        EAGLE_PP_MAPK(EAGLE_OCL_UNPACK, name, __VA_ARGS__)                                           \
        __global const int32_t* eagle_map = (__global const int32_t*)eagle_map_bits;                 \
        __global const uint32_t* eagle_live = (__global const uint32_t*)eagle_live_bits;             \
        EAGLE_OCL_LANE;                                                                              \
        if (eagle_l < eagle_base + eagle_count && eagle_l < (int64_t)*eagle_live)                     \
            eagle_body_##name(eagle_map[eagle_l], eagle_n EAGLE_PP_MAP(EAGLE_PP_USE, __VA_ARGS__));  \
    }                                                                                                \
    /* the drain: lane w takes map positions w, w + workers, ... (the cpu kind's strided form); */  \
    /* the queue words are not used (left at zero). */                                              \
    __kernel void name##_drain(EAGLE_PP_MAP(EAGLE_OCL_PARAM, __VA_ARGS__) ulong eagle_map_bits,       \
                               ulong eagle_live_bits, ulong eagle_mask_bits, ulong eagle_queue_bits,  \
                               long eagle_rounds, long eagle_workers, long eagle_base,               \
                               long eagle_count, long eagle_n) {                                     \
        EAGLE_PP_MAPK(EAGLE_OCL_UNPACK, name, __VA_ARGS__)                                           \
        volatile __global const uint* eagle_cancel = (volatile __global const uint*)eagle_queue_bits + 2; \
        __global const int32_t* eagle_map = (__global const int32_t*)eagle_map_bits;                 \
        __global const uint32_t* eagle_live_p = (__global const uint32_t*)eagle_live_bits;           \
        const int64_t eagle_live = eagle_live_p ? (int64_t)*eagle_live_p : eagle_n; /* NULL: all n */ \
        __global const uint8_t* eagle_mask = (__global const uint8_t*)eagle_mask_bits;               \
        EAGLE_OCL_LANE;                                                                              \
        if (eagle_l >= eagle_base + eagle_count) return;                                             \
        for (int64_t eagle_p = eagle_l; eagle_p < eagle_live && *eagle_cancel == 0u; eagle_p += eagle_workers) { \
            const int64_t eagle_i = eagle_map ? (int64_t)eagle_map[eagle_p] : eagle_p;               \
            for (int64_t eagle_r = 0; eagle_r < eagle_rounds && eagle_mask[eagle_i] == 0 && *eagle_cancel == 0u; \
                 ++eagle_r)                                                                          \
                eagle_body_##name(eagle_i, eagle_n EAGLE_PP_MAP(EAGLE_PP_USE, __VA_ARGS__));         \
        }                                                                                            \
    }                                                                                                \
    EAGLE_FN void eagle_body_##name(int64_t i, int64_t n EAGLE_PP_MAPK(EAGLE_OCL_DECL, name, __VA_ARGS__))

#else /* the cpu kind */
#define EAGLE_FN static inline __attribute__((always_inline))
#ifdef __cplusplus
#define EAGLE_CPU_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define EAGLE_CPU_EXPORT __attribute__((visibility("default")))
#endif

#define EAGLE_KERNEL(name, ...)                                                                      \
    EAGLE_FN void eagle_body_##name(int64_t i, int64_t n EAGLE_PP_MAP(EAGLE_PP_DECL, __VA_ARGS__));  \
    EAGLE_CPU_EXPORT void name(void* const* eagle_params, int64_t eagle_base, int64_t eagle_count,   \
                               int64_t eagle_n) {                                                    \
        EAGLE_PP_MAP(EAGLE_PP_UNPACK, __VA_ARGS__)                                                    \
        for (int64_t eagle_l = eagle_base; eagle_l < eagle_base + eagle_count; ++eagle_l)           \
            eagle_body_##name(eagle_l, eagle_n EAGLE_PP_MAP(EAGLE_PP_USE, __VA_ARGS__));             \
    }                                                                                                \
    EAGLE_CPU_EXPORT void name##_active(void* const* eagle_params, int64_t eagle_base,               \
                                        int64_t eagle_count, int64_t eagle_n) {                      \
        EAGLE_PP_MAP(EAGLE_PP_UNPACK, __VA_ARGS__)                                                    \
        const int32_t* eagle_map = *(const int32_t* const*)eagle_params[EAGLE_PP_NARGS(__VA_ARGS__)]; \
        const uint32_t* eagle_live =                                                                 \
            *(const uint32_t* const*)eagle_params[EAGLE_PP_NARGS(__VA_ARGS__) + 1];                   \
        const int64_t eagle_end = eagle_base + eagle_count;                                          \
        const int64_t eagle_hi = eagle_end < (int64_t)*eagle_live ? eagle_end : (int64_t)*eagle_live; \
        for (int64_t eagle_l = eagle_base; eagle_l < eagle_hi; ++eagle_l)                            \
            eagle_body_##name(eagle_map[eagle_l], eagle_n EAGLE_PP_MAP(EAGLE_PP_USE, __VA_ARGS__));  \
    }                                                                                                \
    EAGLE_CPU_EXPORT void name##_drain(void* const* eagle_params, int64_t eagle_base,                \
                                       int64_t eagle_count, int64_t eagle_n) {                       \
        EAGLE_PP_MAP(EAGLE_PP_UNPACK, __VA_ARGS__)                                                    \
        const int32_t* eagle_map = *(const int32_t* const*)eagle_params[EAGLE_PP_NARGS(__VA_ARGS__)]; \
        const uint32_t* eagle_live_p = *(const uint32_t* const*)eagle_params[EAGLE_PP_NARGS(__VA_ARGS__) + 1]; \
        const int64_t eagle_live = eagle_live_p ? (int64_t)*eagle_live_p : eagle_n; /* NULL: all n */  \
        const uint8_t* eagle_mask = *(const uint8_t* const*)eagle_params[EAGLE_PP_NARGS(__VA_ARGS__) + 2]; \
        const int64_t eagle_rounds = *(const int64_t*)eagle_params[EAGLE_PP_NARGS(__VA_ARGS__) + 4];  \
        const int64_t eagle_workers = *(const int64_t*)eagle_params[EAGLE_PP_NARGS(__VA_ARGS__) + 5]; \
        /* the cancel word (queue[2]; no queue: never cancelled) */                                  \
        const uint32_t* eagle_queue = *(const uint32_t* const*)eagle_params[EAGLE_PP_NARGS(__VA_ARGS__) + 3]; \
        static const uint32_t eagle_never = 0u;                                                      \
        volatile const uint32_t* eagle_cancel = eagle_queue ? eagle_queue + 2 : &eagle_never;        \
        for (int64_t eagle_w = eagle_base; eagle_w < eagle_base + eagle_count && *eagle_cancel == 0u; ++eagle_w) \
            for (int64_t eagle_p = eagle_w; eagle_p < eagle_live && *eagle_cancel == 0u; eagle_p += eagle_workers) { \
                const int64_t eagle_i = eagle_map ? (int64_t)eagle_map[eagle_p] : eagle_p;           \
                for (int64_t eagle_r = 0; eagle_r < eagle_rounds && eagle_mask[eagle_i] == 0 && *eagle_cancel == 0u; \
                     ++eagle_r)                                                                      \
                    eagle_body_##name(eagle_i, eagle_n EAGLE_PP_MAP(EAGLE_PP_USE, __VA_ARGS__));     \
            }                                                                                        \
    }                                                                                                \
    EAGLE_FN void eagle_body_##name(int64_t i, int64_t n EAGLE_PP_MAP(EAGLE_PP_DECL, __VA_ARGS__))
#endif

/* eagle's reading of the declarations (eagle/module.py): a source with #if, #define or -D is
 * run through the host's C preprocessor with EAGLE_READ_DECLARATIONS defined, and each
 * EAGLE_KERNEL becomes a marker eagle reads, with the branches the compile takes, macros expanded
 * and EAGLE_BUFFER kept as a word. Never defined in a compile. */
#ifdef EAGLE_READ_DECLARATIONS
#undef EAGLE_KERNEL
#define EAGLE_KERNEL(name, ...) eagle_declared__ name (__VA_ARGS__) eagle_declared_end__
#endif

#endif /* EAGLE_KERNEL_H */
