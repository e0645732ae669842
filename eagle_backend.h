/*
 * eagle_backend.h -- the seam between eagle and a backend library, eagle-backend/1.
 *
 * eagle (the Python core) talks to a backend library `libeagle_<kind>.so` only through the
 * functions declared here. This file is the one source of truth: the Python binding, the pinned
 * symbol list, every backend's linker version script and the struct layout manifest are all
 * generated from it by `python -m build_tools`.
 *
 * Machine-readable markers. A comment of the form
 *     @eagle group=<name> since=<minor> [extends=<group>]
 * placed before a function declaration gives that function its capability group (or `required`,
 * or `per-symbol` for a symbol bound one by one) and the minor version of the seam that added it.
 * `extends=<group>` marks a per-symbol entry that works on that capability group's handles or
 * descriptors: eagle uses it only when the backend provides the group too.
 * Every function carries exactly one marker; the generator refuses a function without one.
 *
 * General rules (they apply to every declaration below):
 * - Status. Every function returns an eagle_backend_status unless stated. A failed call leaves a
 *   message in the thread-local eagle_backend_last_error(), valid until the next seam call on the
 *   same thread. Statuses are never reused; new ones are appended.
 * - Structs never cross by value and start with `uint32_t struct_size`. An input desc: the caller
 *   zero-fills it and sets its own sizeof; the callee reads only the fields that fit and takes the
 *   rest as zero. An output struct: the callee writes min(caller size, callee size) bytes, never
 *   beyond, and writes that size back into struct_size. Padding is explicit (reservedN fields,
 *   which callers set to zero).
 * - Flags. A flag bit the backend does not know is refused with UNSUPPORTED, never ignored.
 * - Devices. Every creator names its device; -1 means the device of the stream the desc carries,
 *   or else the calling thread's current device. A handle stays bound to its device.
 * - Handles are opaque and single-thread-affine. Every *_release is NULL-safe and returns nothing.
 *   A call documented as CONSUMING a handle takes ownership of it on OK only; on any other status
 *   the caller still owns it.
 * - Raw values (native streams, graph nodes, kernel functions, device addresses) cross as
 *   uint64_t. A raw stream value 0 means the kind's default stream where the kind has one.
 * - Buffers the backend allocates for the caller are freed with eagle_backend_free().
 * - Callbacks passed to a call run synchronously on the calling thread; a nonzero return unwinds
 *   the call with CALLBACK_FAILED. Host functions enqueued with eagle_backend_host_func run later,
 *   in stream order, on a thread of the backend's choosing.
 */
#ifndef EAGLE_BACKEND_H
#define EAGLE_BACKEND_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================== version ======== */

/* The seam's major version. It changes only when a 1.x symbol, argument list or struct layout
 * changes incompatibly; eagle accepts exactly major 1. */
#define EAGLE_BACKEND_VERSION_MAJOR 1u
/* The seam's minor version. It grows with every appended symbol, struct field, status or bit;
 * within major 1 the seam only grows. Minor 0 is the published 1.0 seam. */
#define EAGLE_BACKEND_VERSION_MINOR 9u
/* The value eagle_backend_version() returns for this header: (major << 16) | minor. */
#define EAGLE_BACKEND_VERSION ((EAGLE_BACKEND_VERSION_MAJOR << 16) | EAGLE_BACKEND_VERSION_MINOR)

/* ======================================================================== statuses ======= */

/* A status; 0 is success. Values are stable and never reused. */
typedef int32_t eagle_backend_status;
/* The call did what it says. */
#define EAGLE_BACKEND_OK 0
/* A failure with no better status; the message says what failed. */
#define EAGLE_BACKEND_ERROR 1
/* An argument is out of its documented domain (NULL output pointer, bad size, bad value). */
#define EAGLE_BACKEND_INVALID_ARGUMENT 2
/* An index is out of range (e.g. a fork branch index). */
#define EAGLE_BACKEND_INDEX 3
/* A value from another library (a DLPack stream code, a foreign stream) cannot be used. */
#define EAGLE_BACKEND_INTEROP 4
/* No usable device or driver; the message says why. */
#define EAGLE_BACKEND_UNAVAILABLE 5
/* A callback passed to the call returned nonzero. */
#define EAGLE_BACKEND_CALLBACK_FAILED 6
/* A handle is not one this backend made, or has been released or consumed. */
#define EAGLE_BACKEND_BAD_HANDLE 7
/* The request is well formed but this backend does not do it (an unknown flag bit, a size
 * beyond its limits, an option its runtime lacks). */
#define EAGLE_BACKEND_UNSUPPORTED 8
/* A kernel source did not compile, or a binary image did not load (since minor 7); the log the
 * call hands back says why, with the compiler's line numbers. */
#define EAGLE_BACKEND_COMPILE_FAILED 9

/* ======================================================================== capabilities === */

/* Bits of eagle_backend_capabilities(). A set bit promises every 1.0 symbol of its group.
 * Bit 8 and bits 13..62 are reserved and must be clear; bit 63 is never assigned. Symbols added
 * after 1.0 are bound one by one: their presence is the capability. */
#define EAGLE_BACKEND_CAP_STREAM (1ull << 0)
#define EAGLE_BACKEND_CAP_CAPTURER (1ull << 1)
#define EAGLE_BACKEND_CAP_CAPTURED (1ull << 2)
#define EAGLE_BACKEND_CAP_FORK (1ull << 3)
#define EAGLE_BACKEND_CAP_CONDITIONAL (1ull << 4)
#define EAGLE_BACKEND_CAP_ATTRIBUTION (1ull << 5)
#define EAGLE_BACKEND_CAP_GRAPH (1ull << 6)
#define EAGLE_BACKEND_CAP_LAUNCHER (1ull << 7)
#define EAGLE_BACKEND_CAP_EXEC (1ull << 9)
#define EAGLE_BACKEND_CAP_DEVICE (1ull << 10)
#define EAGLE_BACKEND_CAP_INTEROP (1ull << 11)
#define EAGLE_BACKEND_CAP_FILTERING (1ull << 12)

/* ======================================================================== flags and codes  */

/* stream_desc.flags: the stream does not synchronise with the kind's default stream.
 * Without it, where the kind has a default stream (raw value 0), work enqueued on the stream waits
 * for the default stream's earlier work, and work enqueued on the default stream waits for the
 * stream's earlier work (since minor 8). */
#define EAGLE_BACKEND_STREAM_NON_BLOCKING 1u
/* compact_desc.flags and reorder_desc.flags: a nonzero mask byte means DROP the sample
 * (without this flag a nonzero byte means KEEP it). */
#define EAGLE_BACKEND_COMPACT_MASK_IS_DROP 1u
/* eagle_backend_fence(): "no stream given" for producer or consumer. Equals INT64_MIN. */
#define EAGLE_BACKEND_STREAM_NONE (-9223372036854775807LL - 1)
/* eagle_backend_memcpy() directions (since minor 6). Other values are INVALID_ARGUMENT. */
#define EAGLE_BACKEND_MEMCPY_H2D 1
#define EAGLE_BACKEND_MEMCPY_D2H 2
#define EAGLE_BACKEND_MEMCPY_D2D 3
#define EAGLE_BACKEND_MEMCPY_H2H 4
/* module_desc.flags (since minor 7): the floating-point mode. With no flag (0) a module is compiled
 * bit-exact: no floating-point contraction (no fused multiply-add the source does not spell), IEEE
 * division and square root, denormals kept; the same source then gives the same bits on every
 * kind. A backend of any minor reads 0 so. With FAST_MATH the compiler may contract, reassociate
 * and flush denormals (cpu: -O3 -ffast-math; NVRTC and hiprtc: --use_fast_math). */
#define EAGLE_BACKEND_MODULE_FAST_MATH 1u
/* module_desc.flags (since minor 8). With CONTRACT the compiler contracts multiply-adds into fused
 * multiply-adds as the kind's compiler does by default (cpu: -ffp-contract=fast where the host
 * CPU has FMA instructions; NVRTC: --fmad=true; hiprtc: -ffp-contract=fast), and keeps IEEE
 * division and square root and denormals; results may then differ between kinds in the last
 * place of a multiply-add. CONTRACT together with FAST_MATH is INVALID_ARGUMENT. A backend of
 * minor 7 refuses CONTRACT as an unknown flag (UNSUPPORTED): eagle sets it only for a backend of
 * minor 8 or later. */
#define EAGLE_BACKEND_MODULE_CONTRACT 2u

/* ======================================================================== handles ======== */

/* Opaque handles; each is owned by the caller from its creator until its *_release (or a call
 * that CONSUMES it). */
typedef struct eagle_backend_stream_opaque* eagle_backend_stream;
typedef struct eagle_backend_capturer_opaque* eagle_backend_capturer;
typedef struct eagle_backend_captured_opaque* eagle_backend_captured;
typedef struct eagle_backend_fork_opaque* eagle_backend_fork;
typedef struct eagle_backend_conditional_opaque* eagle_backend_conditional;
typedef struct eagle_backend_graph_opaque* eagle_backend_graph;
typedef struct eagle_backend_launcher_opaque* eagle_backend_launcher;
/* A loaded module of kernels (since minor 7): from module_from_source or module_from_image. */
typedef struct eagle_backend_module_opaque* eagle_backend_module;

/* A host function for eagle_backend_host_func (since minor 6). It runs once per enqueue (or per
 * replay of a captured graph), in stream order, on a backend thread; it must not call back into
 * the seam on the stream it was enqueued on. */
typedef void (*eagle_backend_host_fn)(void* user_data);

/* ======================================================================== structs ======== */

/* Output of eagle_backend_build_info(). Strings are NUL-terminated and truncated to fit. */
struct eagle_backend_build_info {
    uint32_t struct_size;    /* in: caller's sizeof; out: bytes written */
    uint32_t abi_version;    /* the EAGLE_BACKEND_VERSION the backend was built against */
    int32_t cudart_version;  /* device-runtime version (e.g. 12080), 0 if the kind has none */
    int32_t reserved0;       /* written as 0 */
    char eagle_version[32];  /* the backend's release string */
    char archs[128];         /* device code it carries, e.g. "sm_90,compute_90"; "" for host */
    char backend_kind[16];   /* the kind, e.g. "cpu", "cuda", "hip" */
};

/* Output of eagle_backend_device_props(). Figures the kind cannot know are 0. */
struct eagle_backend_device_props {
    uint32_t struct_size;          /* in: caller's sizeof; out: bytes written */
    int32_t device;                /* the device described */
    char name[256];                /* NUL-terminated */
    int32_t cc_major;              /* compute capability (0 where the kind has none) */
    int32_t cc_minor;
    int32_t sm_count;              /* multiprocessors; CPU cores on the cpu kind */
    int32_t clock_rate_khz;
    int32_t memory_clock_rate_khz;
    int32_t memory_bus_width_bits;
    int32_t regs_per_block;
    int32_t regs_per_sm;
    int32_t warp_size;             /* lanes that step together; 1 on the cpu kind */
    int32_t reserved0;
    int64_t shared_mem_per_block;  /* bytes; L1 data cache per core on the cpu kind */
    int64_t shared_mem_per_sm;     /* bytes; L2 per core on the cpu kind */
    double peak_bytes_per_s;       /* memory bandwidth, bytes/s (0 when unknown) */
    double peak_flops_sp;
    double peak_flops_dp;
    double fp64_ratio;             /* peak_flops_dp / peak_flops_sp (0 when unknown) */
    double ridge_flops_per_byte_sp;
    double ridge_flops_per_byte_dp;
};

/* Input of eagle_backend_stream_create(). flags: EAGLE_BACKEND_STREAM_NON_BLOCKING. */
struct eagle_backend_stream_desc {
    uint32_t struct_size;
    uint32_t flags;
    int32_t device;     /* -1: the calling thread's current device */
    int32_t reserved0;
};

/* Input of eagle_backend_graph_create(). No flags are defined. */
struct eagle_backend_graph_desc {
    uint32_t struct_size;
    uint32_t flags;
    int32_t device;     /* -1: the calling thread's current device */
    int32_t reserved0;
};

/* Input of eagle_backend_capturer_create(). No flags are defined. */
struct eagle_backend_capturer_desc {
    uint32_t struct_size;
    uint32_t flags;
    int32_t device;     /* -1: the device of `stream` */
    int32_t reserved0;
    uint64_t stream;    /* raw stream whose work is captured between begin and end */
};

/* Input of eagle_backend_fork_create(). No flags are defined. */
struct eagle_backend_fork_desc {
    uint32_t struct_size;
    uint32_t flags;
    int32_t device;         /* -1: the device of `origin` */
    int32_t reserved0;
    uint64_t origin;        /* raw stream the branches fork from and join back into */
    uint64_t branch_count;  /* >= 1 */
};

/* Input of eagle_backend_conditional_create(). No flags are defined.
 * The guard: the region runs iff *count != (*baseline, or 0 when baseline_ptr is 0); both are
 * device uint32 words read when the node is reached in a replay, never by the host at record time.
 * counter_ptr == 0 and case_count == 0: an IF, the body runs at most once.
 * counter_ptr != 0: a WHILE over a device uint32[2] cell [remaining, ran]. On entry the backend
 *   writes [loop_cap, 0]; before each iteration it re-reads the guard, and runs the body iff the
 *   guard holds and remaining > 0, then remaining -= 1 and ran += 1. After the node, ran is the
 *   number of iterations this replay ran. loop_cap >= 1 for a WHILE.
 * case_count != 0 (since minor 4): a SWITCH. *count selects the case to run; a value >= case_count
 *   runs none. baseline_ptr and counter_ptr must be 0. Needs eagle_backend_conditional_begin_case.
 */
struct eagle_backend_conditional_desc {
    uint32_t struct_size;
    uint32_t flags;
    int32_t device;         /* -1: the device of `origin` */
    uint32_t loop_cap;      /* WHILE: most iterations per replay (>= 1); IF/SWITCH: ignored */
    uint64_t origin;        /* raw stream being captured; the node is recorded there */
    uint64_t count_ptr;     /* device uint32*, required */
    uint64_t baseline_ptr;  /* device uint32*, or 0 for a baseline of 0 */
    uint64_t counter_ptr;   /* device uint32[2] cell of a WHILE, or 0 */
    /* --- since minor 4 --- */
    uint32_t case_count;    /* 0: IF/WHILE; n >= 1: a SWITCH with cases 0..n-1 */
    uint32_t reserved1;
};

/* Input of eagle_backend_run_device(): one launch of `function` over one partition.
 * The kernel receives the nparams arguments, then (int64 base, int64 count, int64 n_samples).
 * The cpu kind: `function` is `void k(void* const* params, int64_t base, int64_t count,
 * int64_t n_samples)`, called once per tile of [base, base+count) with that tile's base and count.
 * flags: none are defined. */
struct eagle_backend_launch_desc {
    uint32_t struct_size;
    uint32_t flags;
    int32_t device;                 /* -1: the device of `stream` */
    uint32_t block;                 /* lanes per block (tile on cpu); 0: the backend chooses */
    uint64_t function;              /* the kind's kernel handle */
    const uint64_t* params;         /* nparams addresses of argument storage, read during the call */
    const uint64_t* param_sizes;    /* nparams byte sizes, or NULL: the kind knows them (8 each on cpu) */
    int64_t nparams;                /* 0..64 */
    int64_t base;                   /* first global sample of this launch, >= 0 */
    int64_t count;                  /* lanes in this launch, >= 0; 0 launches nothing */
    int64_t n_samples;              /* the run's true total, >= base + count */
    uint64_t stream;                /* raw stream the launch is enqueued on (or captured into) */
};

/* Input/output of eagle_backend_compact_device(): the ascending indices of the kept samples.
 * Enqueue only: no allocation, no synchronisation, no host read of device memory, so it can be
 * captured. With scratch == 0 it is a query: scratch_bytes is written and nothing is enqueued.
 * The scratch is zero-filled by the caller before its first use; the backend may keep state in it
 * from one compaction to the next, so one scratch serves one stream's compactions at a time, and
 * must not be reused for anything else in between.
 * The reorder trigger (all optional, 0 = absent): after the count is known, `live32` (u32[1])
 * receives it too; when `fire` (u32[1]) and `span` (u32[1], the extent of the live region) are given,
 * *fire = (count < *span && count <= theta * *span) ? 1 : 0, i.e. the live samples are spread thin. */
struct eagle_backend_compact_desc {
    uint32_t struct_size;
    uint32_t flags;           /* EAGLE_BACKEND_COMPACT_MASK_IS_DROP */
    int32_t device;           /* -1: the device of `stream` */
    uint32_t reserved;
    uint64_t mask;            /* device uint8[n]; nonzero keeps (or drops, with MASK_IS_DROP) */
    uint64_t index_map;       /* device int32[n], out: kept indices ascending, the tail untouched */
    uint64_t count;           /* device uint32[1], out: number kept */
    uint64_t scratch;         /* device scratch of scratch_bytes, or 0 to query */
    int64_t n;                /* 0 .. 2^31-1; larger is UNSUPPORTED */
    uint64_t stream;          /* raw stream */
    int64_t scratch_bytes;    /* in: size of scratch; out on query: bytes needed */
    uint64_t live32;          /* device uint32[1] or 0 */
    uint64_t span;            /* device uint32[1] or 0 */
    uint64_t fire;            /* device uint32[1] or 0 */
    float theta;              /* trigger ratio, in (0, 1] when fire is given */
    uint32_t reserved2;
};

/* One plane of eagle_backend_reorder_device (since minor 2): `width` rows of n elements of
 * elem_size bytes (1, 2, 4, 8 or 16), row r starting at data + r * pitch_bytes. */
struct eagle_backend_reorder_plane {
    uint64_t data;            /* device address */
    uint32_t elem_size;       /* 1, 2, 4, 8 or 16 */
    uint32_t width;           /* rows; 0 is taken as 1 */
    int64_t pitch_bytes;      /* bytes between rows; 0: n * elem_size */
};

/* Input of eagle_backend_reorder_device (since minor 2): a stable in-place partition of every
 * plane over positions [0, *span) so the kept samples come first, in their old order; positions
 * from *span on are untouched. perm (int32[n]: position -> sample id) and inv (int32[n]: sample
 * id -> position) are permuted alongside; *span becomes the number kept. When `fire` is given the
 * reorder happens only where *fire != 0 (read on the device), and *fire is reset to 0.
 * Enqueue only, capturable; scratch == 0 is a query as for compaction. */
struct eagle_backend_reorder_desc {
    uint32_t struct_size;
    uint32_t flags;           /* EAGLE_BACKEND_COMPACT_MASK_IS_DROP */
    int32_t device;           /* -1: the device of `stream` */
    uint32_t plane_count;     /* entries in `planes`, 0..64 */
    const struct eagle_backend_reorder_plane* planes; /* host array, read during the call */
    uint64_t mask;            /* device uint8[n], indexed by position */
    uint64_t perm;            /* device int32[n] */
    uint64_t inv;             /* device int32[n] */
    uint64_t span;            /* device uint32[1], in/out */
    uint64_t fire;            /* device uint32[1] or 0 */
    uint64_t scratch;         /* device scratch, or 0 to query */
    int64_t scratch_bytes;    /* in: size of scratch; out on query: bytes needed */
    int64_t n;                /* 0 .. 2^31-1 */
    uint64_t stream;          /* raw stream */
};

/* Input of eagle_backend_module_from_source and eagle_backend_module_from_image (since minor 7).
 * Strings are NUL-terminated and read during the call only. */
struct eagle_backend_module_desc {
    uint32_t struct_size;
    uint32_t flags;                  /* 0 (bit-exact), EAGLE_BACKEND_MODULE_FAST_MATH or
                                      * EAGLE_BACKEND_MODULE_CONTRACT (since minor 8). */
    int32_t device;                  /* -1: the calling thread's current device; the module's
                                      * kernels run on this device only */
    uint32_t reserved0;
    const char* name;                /* the source's name in the log (e.g. "step.c"), or NULL */
    const char* const* include_dirs; /* include_dir_count directories searched by #include */
    int64_t include_dir_count;       /* 0..256 */
    const char* const* options;      /* option_count extra options passed to the compiler as
                                      * they are (e.g. "-DN=4"); the kind's own spelling */
    int64_t option_count;            /* 0..256 */
    const char* compiler;            /* where to find the kind's compiler before its default
                                      * search: a ':'-separated list of files or directories (an
                                      * executable on cpu; a runtime-compiler library, libnvrtc or
                                      * libhiprtc, on GPU kinds); NULL or "": the default search only
                                      * (cpu: $CC, then cc, gcc, clang on PATH; cuda: libnvrtc.so.13,
                                      * .12 by the system loader, then the toolkit's lib64) */
    /* since minor 8: stopping a compile */
    uint64_t cancel;                 /* 0, or the host address of a uint32_t word that another
                                      * thread may set nonzero while module_from_source runs. A
                                      * kind whose compiler is a process of its own (cpu) polls it
                                      * at least every 20 ms, then kills the compiler and its
                                      * children and returns ERROR with "cancelled" in the message;
                                      * a kind whose compiler runs in-process (NVRTC, hiprtc) may
                                      * finish first. Ignored by module_from_image. */
};

/* ======================================================================== required ======= */

/* @eagle group=required since=0
 * Returns EAGLE_BACKEND_VERSION as the backend was built: (major << 16) | minor. Never fails. */
uint32_t eagle_backend_version(void);

/* @eagle group=required since=0
 * Returns the calling thread's message of the last failed call, "" if none. Never NULL. The
 * string is owned by the backend and valid until the next seam call on this thread. */
const char* eagle_backend_last_error(void);

/* @eagle group=required since=0
 * Fills *info (output struct rules). INVALID_ARGUMENT for NULL or struct_size < 4. */
eagle_backend_status eagle_backend_build_info(struct eagle_backend_build_info* info);

/* @eagle group=required since=0
 * OK when a device of this kind is usable; UNAVAILABLE with the reason otherwise. Cheap to call
 * again; never crashes when the driver is absent. */
eagle_backend_status eagle_backend_probe(void);

/* @eagle group=required since=0
 * Frees a buffer the backend allocated for the caller. NULL is a no-op. Returns nothing. */
void eagle_backend_free(void* buffer);

/* @eagle group=required since=0
 * Writes the capability bits to *groups. INVALID_ARGUMENT for NULL. On OK it also sets
 * last_error to a note saying why each group or per-symbol entry it leaves out is missing, one
 * `name: reason` line each (e.g. "conditional: HIP 5.2 has no conditional graph nodes"), or to
 * "" when nothing is left out; eagle shows these reasons to users. */
eagle_backend_status eagle_backend_capabilities(uint64_t* groups);

/* @eagle group=required since=0
 * Writes up to `cap` DLPack device-type codes this kind serves to types[] and the total number to
 * *count (which may exceed cap; nothing is written past types[cap-1]). types may be NULL when
 * cap is 0. INVALID_ARGUMENT for a NULL count or a negative cap. */
eagle_backend_status eagle_backend_device_types(int32_t* types, int32_t cap, int32_t* count);

/* ======================================================================== stream (bit 0) = */

/* @eagle group=stream since=0
 * Creates an in-order stream on desc->device. *out is owned by the caller. UNSUPPORTED for an
 * unknown flag; INDEX for a device that does not exist. */
eagle_backend_status eagle_backend_stream_create(const struct eagle_backend_stream_desc* desc,
                                                 eagle_backend_stream* out);

/* @eagle group=stream since=0
 * Writes the stream's raw value (e.g. a cudaStream_t) to *raw; valid while the stream lives. */
eagle_backend_status eagle_backend_stream_ptr(eagle_backend_stream stream, uint64_t* raw);

/* @eagle group=stream since=0
 * Blocks until all work enqueued on the stream has finished. ERROR when that work failed;
 * INVALID_ARGUMENT while the stream is being captured. */
eagle_backend_status eagle_backend_stream_synchronize(eagle_backend_stream stream);

/* @eagle group=stream since=0
 * Waits for the stream's work, then destroys it. NULL-safe. */
void eagle_backend_stream_release(eagle_backend_stream stream);

/* ======================================================================== capturer (bit 1) */

/* @eagle group=capturer since=0
 * Creates a capturer for desc->stream (raw). Nothing is captured until begin. */
eagle_backend_status eagle_backend_capturer_create(const struct eagle_backend_capturer_desc* desc,
                                                   eagle_backend_capturer* out);

/* @eagle group=capturer since=0
 * From now on work enqueued on the stream is recorded, not run. INVALID_ARGUMENT when the stream
 * is already being captured. */
eagle_backend_status eagle_backend_capturer_begin(eagle_backend_capturer capturer);

/* @eagle group=capturer since=0
 * Ends the capture and hands the recorded work to *out (owned by the caller). INVALID_ARGUMENT
 * when the capture was not begun, or was broken by misuse (then nothing is returned). */
eagle_backend_status eagle_backend_capturer_end(eagle_backend_capturer capturer,
                                                eagle_backend_captured* out);

/* @eagle group=capturer since=0
 * Releases the capturer; a capture still in progress is abandoned. NULL-safe. */
void eagle_backend_capturer_release(eagle_backend_capturer capturer);

/* ======================================================================== captured (bit 2) */

/* @eagle group=captured since=0
 * *valid = 1 when the captured work can become a graph (it recorded at least one node), else 0. */
eagle_backend_status eagle_backend_captured_is_valid(eagle_backend_captured captured, int32_t* valid);

/* @eagle group=captured since=0
 * Releases captured work that was not consumed. NULL-safe. */
void eagle_backend_captured_release(eagle_backend_captured captured);

/* ======================================================================== fork (bit 3) === */

/* @eagle group=fork since=0
 * Creates branch_count branch streams (owned by the fork) beside desc->origin. */
eagle_backend_status eagle_backend_fork_create(const struct eagle_backend_fork_desc* desc,
                                               eagle_backend_fork* out);

/* @eagle group=fork since=0
 * Every branch starts after the work enqueued on origin so far. Works eagerly and under capture.
 * INVALID_ARGUMENT when already forked. */
eagle_backend_status eagle_backend_fork_fork(eagle_backend_fork fork);

/* @eagle group=fork since=0
 * Work enqueued on origin from now on starts after every branch's work. INVALID_ARGUMENT when not
 * forked. */
eagle_backend_status eagle_backend_fork_join(eagle_backend_fork fork);

/* @eagle group=fork since=0
 * Writes branch i's raw stream to *stream. INDEX when i >= branch_count. */
eagle_backend_status eagle_backend_fork_branch(eagle_backend_fork fork, uint64_t i, uint64_t* stream);

/* @eagle group=fork since=0
 * Writes the origin's raw stream to *origin. */
eagle_backend_status eagle_backend_fork_origin(eagle_backend_fork fork, uint64_t* origin);

/* @eagle group=fork since=0
 * *forked = 1 between fork and join, else 0. */
eagle_backend_status eagle_backend_fork_forked(eagle_backend_fork fork, int32_t* forked);

/* @eagle group=fork since=0
 * Writes branch_count to *size. */
eagle_backend_status eagle_backend_fork_size(eagle_backend_fork fork, uint64_t* size);

/* @eagle group=fork since=0
 * Releases the fork and its branch streams (a forked fork is joined first). NULL-safe. */
void eagle_backend_fork_release(eagle_backend_fork fork);

/* ======================================================================== conditional (bit 4) */

/* @eagle group=conditional since=0
 * Records a conditional node (IF, WHILE or SWITCH, see the desc) on desc->origin, which must be
 * being captured (INVALID_ARGUMENT otherwise). Only the guard words' addresses are recorded. */
eagle_backend_status eagle_backend_conditional_create(const struct eagle_backend_conditional_desc* desc,
                                                      eagle_backend_conditional* out);

/* @eagle group=conditional since=0
 * Opens the body (case 0 of a SWITCH): work enqueued on *body_stream until conditional_end is
 * recorded into the body. INVALID_ARGUMENT when already begun. */
eagle_backend_status eagle_backend_conditional_begin(eagle_backend_conditional conditional,
                                                     uint64_t* body_stream);

/* @eagle group=conditional since=0
 * Writes the open body's raw stream to *body_stream; INVALID_ARGUMENT when no body is open. */
eagle_backend_status eagle_backend_conditional_body_stream(eagle_backend_conditional conditional,
                                                           uint64_t* body_stream);

/* @eagle group=conditional since=0
 * *is_loop = 1 for a WHILE, else 0. */
eagle_backend_status eagle_backend_conditional_is_loop(eagle_backend_conditional conditional,
                                                       int32_t* is_loop);

/* @eagle group=conditional since=0
 * Closes the open body and the node; work on origin from now on follows the node. */
eagle_backend_status eagle_backend_conditional_end(eagle_backend_conditional conditional);

/* @eagle group=per-symbol since=4 extends=conditional
 * SWITCH only: closes the open case body, if any, and opens case `index`; its raw body stream goes
 * to *body_stream. Each case may be opened once; cases never opened are empty. INDEX when
 * index >= case_count; INVALID_ARGUMENT for an IF or WHILE or a case already opened. */
eagle_backend_status eagle_backend_conditional_begin_case(eagle_backend_conditional conditional,
                                                          uint32_t index, uint64_t* body_stream);

/* @eagle group=conditional since=0
 * Releases the conditional (an open body is abandoned, breaking the capture). NULL-safe. */
void eagle_backend_conditional_release(eagle_backend_conditional conditional);

/* ======================================================================== attribution (bit 5) */

/* @eagle group=attribution since=0
 * Snapshot of the nodes recorded so far by the capture on raw `stream` (its body, inside a
 * conditional), in record order, as raw node values. *nodes is allocated by the backend and
 * freed with eagle_backend_free (NULL when *count is 0). INVALID_ARGUMENT when not capturing. */
eagle_backend_status eagle_backend_capture_snapshot_nodes(uint64_t stream, uint64_t** nodes,
                                                          int64_t* count);

/* @eagle group=attribution since=0
 * *toggleable = 1 when launcher_set_node_enabled can switch this raw node, else 0. */
eagle_backend_status eagle_backend_is_node_toggleable(uint64_t node, int32_t* toggleable);

/* ======================================================================== graph (bit 6) == */

/* @eagle group=graph since=0
 * Creates an empty graph built node by node with graph_add_node. */
eagle_backend_status eagle_backend_graph_create(const struct eagle_backend_graph_desc* desc,
                                                eagle_backend_graph* out);

/* @eagle group=graph since=0
 * CONSUMES captured and makes a graph of it. INVALID_ARGUMENT for an empty capture. */
eagle_backend_status eagle_backend_graph_from_captured(eagle_backend_captured captured,
                                                       eagle_backend_graph* out);

/* @eagle group=graph since=0
 * Sets the raw stream the graph's launchers launch on (0: the kind's default stream). */
eagle_backend_status eagle_backend_graph_stream(eagle_backend_graph graph, uint64_t stream);

/* @eagle group=graph since=0
 * CONSUMES captured and appends it as one node after the graph's last node. INVALID_ARGUMENT for
 * an empty capture. */
eagle_backend_status eagle_backend_graph_add_node(eagle_backend_graph graph, eagle_backend_captured captured);

/* @eagle group=graph since=0
 * Makes a launcher (an executable instance) of the graph as it is now. The graph may be released
 * before the launcher. INVALID_ARGUMENT for an empty graph. */
eagle_backend_status eagle_backend_graph_launcher(eagle_backend_graph graph, eagle_backend_launcher* out);

/* @eagle group=graph since=0
 * Writes the index of the last node added (-1 when none) to *index. */
eagle_backend_status eagle_backend_graph_last_node(eagle_backend_graph graph, int64_t* index);

/* @eagle group=graph since=0
 * Releases the graph; launchers made from it stay valid. NULL-safe. */
void eagle_backend_graph_release(eagle_backend_graph graph);

/* ======================================================================== launcher (bit 7) */

/* @eagle group=launcher since=0
 * Enqueues one replay on the launcher's stream and returns without waiting. */
eagle_backend_status eagle_backend_launcher_launch(eagle_backend_launcher launcher);

/* @eagle group=launcher since=0
 * Blocks until the launcher's stream has finished. ERROR when its work failed. */
eagle_backend_status eagle_backend_launcher_synchronize(eagle_backend_launcher launcher);

/* @eagle group=launcher since=0
 * Sets the raw stream later launches go on. */
eagle_backend_status eagle_backend_launcher_stream(eagle_backend_launcher launcher, uint64_t stream);

/* @eagle group=launcher since=0
 * Later replays run every kernel node that was recorded over a whole run (base 0, count ==
 * n_samples) over `size` lanes instead: count = n_samples = size. size < 0 restores the recorded
 * sizes; INVALID_ARGUMENT for size > 2^31-1. */
eagle_backend_status eagle_backend_launcher_set_logical_size(eagle_backend_launcher launcher, int64_t size);

/* @eagle group=launcher since=0
 * Writes the number of kernel nodes (run_device launches) in the launcher, bodies included. */
eagle_backend_status eagle_backend_launcher_kernel_node_count(eagle_backend_launcher launcher, int64_t* count);

/* @eagle group=launcher since=0
 * Enables (1) or disables (0) a raw node from a snapshot of the capture this launcher's graph
 * came from; a disabled node does nothing in later replays. INVALID_ARGUMENT for a node not in
 * this launcher; UNSUPPORTED where the runtime cannot toggle nodes. */
eagle_backend_status eagle_backend_launcher_set_node_enabled(eagle_backend_launcher launcher, uint64_t node,
                                                             int32_t enabled);

/* @eagle group=launcher since=0
 * Waits for the launcher's replays, then releases it. NULL-safe. */
void eagle_backend_launcher_release(eagle_backend_launcher launcher);

/* ======================================================================== exec (bit 9) === */

/* @eagle group=exec since=0
 * One launch of desc->function over [base, base + count) on desc->stream, enqueued (or captured).
 * *launched = 1, or 0 for an empty partition (count 0). Argument storage is copied during the
 * call. INVALID_ARGUMENT for a bad partition or nparams; UNSUPPORTED for an unknown flag. */
eagle_backend_status eagle_backend_run_device(const struct eagle_backend_launch_desc* desc, int32_t* launched);

/* ======================================================================== device (bit 10) */

/* @eagle group=device since=0
 * Fills *props for `device` (output struct rules). INDEX for a device that does not exist. */
eagle_backend_status eagle_backend_device_props(int32_t device, struct eagle_backend_device_props* props);

/* ======================================================================== interop (bit 11) */

/* @eagle group=interop since=0
 * Orders the consumer stream after the work enqueued so far on the producer stream, without
 * blocking the host. Streams are DLPack stream codes of dl_device_type (EAGLE_BACKEND_STREAM_NONE:
 * none given; nothing to order). INTEROP for a device type this kind does not serve or a code the
 * kind refuses (e.g. 0 on CUDA). */
eagle_backend_status eagle_backend_fence(int32_t dl_device_type, int32_t device_id, int64_t producer,
                                         int64_t consumer);

/* @eagle group=interop since=0
 * Writes how many events (or fence objects) the backend's pool has created so far. */
eagle_backend_status eagle_backend_event_pool_created(int64_t* created);

/* ======================================================================== filtering (bit 12) */

/* @eagle group=filtering since=0
 * Enqueues a compaction (see the desc). UNSUPPORTED for n >= 2^31; INVALID_ARGUMENT for a NULL
 * address with n > 0 or too little scratch. */
eagle_backend_status eagle_backend_compact_device(struct eagle_backend_compact_desc* desc);

/* @eagle group=per-symbol since=2 extends=filtering
 * Enqueues a stable reorder of the planes (see the desc). UNSUPPORTED for n >= 2^31 or an element
 * size not in {1, 2, 4, 8, 16}. */
eagle_backend_status eagle_backend_reorder_device(struct eagle_backend_reorder_desc* desc);

/* ======================================================================== minor 6: copies and host memory */

/* @eagle group=per-symbol since=6
 * Enqueues a copy of `bytes` from src to dst in `direction` (EAGLE_BACKEND_MEMCPY_*) on raw
 * `stream`; captured as a copy node under capture. Both buffers must stay valid until it runs.
 * A kind whose host and device share memory copies with plain memory moves. */
eagle_backend_status eagle_backend_memcpy(uint64_t dst, uint64_t src, uint64_t bytes, int32_t direction,
                                          uint64_t stream);

/* @eagle group=per-symbol since=6
 * Allocates `bytes` (> 0) of page-locked host memory to *out, freed with host_free. No flags are
 * defined. UNAVAILABLE when it cannot be had. */
eagle_backend_status eagle_backend_host_alloc(uint64_t bytes, uint32_t flags, void** out);

/* @eagle group=per-symbol since=6
 * Frees memory from host_alloc. NULL-safe. */
void eagle_backend_host_free(void* ptr);

/* @eagle group=per-symbol since=6
 * Enqueues fn(user_data) on raw `stream` in stream order; under capture it becomes a host node
 * that runs at every replay. user_data must stay valid while it may run. INVALID_ARGUMENT inside a
 * conditional body on kinds that cannot host-call there. */
eagle_backend_status eagle_backend_host_func(uint64_t stream, eagle_backend_host_fn fn, void* user_data);

/* ======================================================================== minor 7: kernels and device memory */

/* Kernels. A module is compiled (or loaded) for one device and holds named kernels. A kernel
 * handle from eagle_backend_module_function is what eagle_backend_launch_desc.function takes:
 * the cpu kind's `void k(void* const* params, int64_t base, int64_t count, int64_t n_samples)`
 * address, a CUfunction on cuda, a hipFunction_t on hip. The handles are valid until the module is
 * released; the caller keeps the module alive while any launch, captured graph or launcher may
 * still run one of its kernels. */

/* @eagle group=per-symbol since=7
 * Compiles `source` (source_bytes bytes; it need not be NUL-terminated) with the kind's own
 * compiler and loads it as a module for desc->device: cpu the system C compiler (C11, into a
 * shared object), cuda NVRTC (CUDA C++, for the device's architecture), hip hiprtc. Kernels meant
 * to be found by name are declared extern "C" in CUDA and HIP sources. *log receives the
 * compiler's messages, NUL-terminated, allocated by the backend and freed with eagle_backend_free
 * (NULL when the compiler said nothing); it is written on COMPILE_FAILED and may be written on OK
 * (warnings). log may be NULL when the caller does not want it. COMPILE_FAILED when the source
 * does not compile (last_error gives the first error line; the log has them all); UNAVAILABLE
 * when the kind's compiler cannot be found or loaded (the message names what to install);
 * UNSUPPORTED for an unknown flag. */
eagle_backend_status eagle_backend_module_from_source(const struct eagle_backend_module_desc* desc,
                                                      const char* source, uint64_t source_bytes,
                                                      eagle_backend_module* out, char** log);

/* @eagle group=per-symbol since=7
 * Loads a binary image (bytes bytes) as a module for desc->device: cpu a shared object for this
 * host, cuda a cubin, fatbin or NUL-terminated PTX, hip a code object. desc->name names it in
 * messages; the compile fields are ignored. *log as for module_from_source (a JIT log where the
 * kind has one). COMPILE_FAILED when the image cannot be loaded. */
eagle_backend_status eagle_backend_module_from_image(const struct eagle_backend_module_desc* desc,
                                                     const void* image, uint64_t bytes,
                                                     eagle_backend_module* out, char** log);

/* @eagle group=per-symbol since=7
 * Writes the kernel handle of the kernel `name` in `module` to *function. INVALID_ARGUMENT when the
 * module holds no kernel of that name (the message names it). */
eagle_backend_status eagle_backend_module_function(eagle_backend_module module, const char* name,
                                                   uint64_t* function);

/* @eagle group=per-symbol since=7
 * Unloads the module; its kernel handles become invalid. NULL-safe. */
void eagle_backend_module_release(eagle_backend_module module);

/* @eagle group=per-symbol since=7
 * Allocates `bytes` (> 0) of memory on `device` (-1: the calling thread's current device) and
 * writes its device address, aligned to at least 256 bytes, to *address. The memory is not
 * initialised. It is what kernels of this kind read and write and what DLPack calls device memory
 * of the kind's device type (host memory on the cpu kind). No flags are defined. UNAVAILABLE when
 * the memory cannot be had; INDEX for a device that does not exist. */
eagle_backend_status eagle_backend_mem_alloc(int32_t device, uint64_t bytes, uint32_t flags, uint64_t* address);

/* @eagle group=per-symbol since=7
 * Frees memory from mem_alloc at once. The caller makes sure first that no work enqueued on any
 * stream, and no graph that may still be replayed, uses it (e.g. by synchronizing). 0 is a no-op;
 * an address mem_alloc did not return is ignored, never freed. */
void eagle_backend_mem_free(uint64_t address);

/* ======================================================================== minor 8: completion queries */

/* Waits that can be interrupted. eagle_backend_stream_synchronize and
 * eagle_backend_launcher_synchronize block in the backend until the work is done, so a caller
 * cannot handle a signal (Ctrl-C, an alarm) meanwhile. A query is a synchronize that does not
 * wait: a caller that wants to stay responsive queries, does what it must (handle signals,
 * give up), sleeps a little and queries again. A backend without them still loads; its waits are
 * then the blocking synchronizes. */

/* @eagle group=per-symbol since=8 extends=stream
 * When every piece of work enqueued on the stream so far has finished, writes 1 to *done and
 * returns what eagle_backend_stream_synchronize would return now, with the same effects (ERROR,
 * reported once, when that work failed; INVALID_ARGUMENT while the stream is being captured, which
 * may break the capture as synchronize does). Otherwise writes 0 to *done and returns OK, and
 * nothing else changes. Returns without waiting for the work: it may take the backend's own
 * short-lived locks, never a wait for the device or for a host function. INVALID_ARGUMENT for a
 * NULL done. Called from inside a host function (since minor 9): on the host function's own
 * stream it must not be called (eagle_backend_host_fn); on another stream it answers as above,
 * without waiting, except on a kind whose runtime allows no calls from host functions (CUDA's,
 * HIP's), where it must not be called either. (Minor 8 said it answered on the host function's
 * own stream too, which host_fn forbids.) */
eagle_backend_status eagle_backend_stream_query(eagle_backend_stream stream, int32_t* done);

/* @eagle group=per-symbol since=8 extends=launcher
 * eagle_backend_stream_query for eagle_backend_launcher_synchronize: *done = 1 (and that
 * synchronize's status and effects) when the launcher's stream has finished, else *done = 0
 * and OK. Never waits; INVALID_ARGUMENT for a NULL done. */
eagle_backend_status eagle_backend_launcher_query(eagle_backend_launcher launcher, int32_t* done);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EAGLE_BACKEND_H */
