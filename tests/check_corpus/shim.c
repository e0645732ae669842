/*
 * shim.c -- the corpus of deliberately broken backends for tests/test_check_corpus.py.
 *
 * Built once per defect:
 *   cc -shared -fPIC -fvisibility=hidden -I<repo> -DSHIM_TARGET='"/abs/libeagle_cpu.so"' \
 *      [-DDEFECT_<NAME>] shim.c -o <dir>/libeagle_cpu.so -ldl
 * Without a DEFECT_ switch it forwards every seam symbol to the real backend SHIM_TARGET and
 * must pass `python -m eagle.check`; each switch breaks exactly one promise of eagle_backend.h.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eagle_backend.h"

#ifndef SHIM_TARGET
#error "compile with -DSHIM_TARGET='\"/path/to/libeagle_cpu.so\"'"
#endif

#define EXPORT __attribute__((visibility("default")))

static void* target(void) {
    static void* lib;
    if (!lib) {
        lib = dlopen(SHIM_TARGET, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            fprintf(stderr, "shim: cannot open %s: %s\n", SHIM_TARGET, dlerror());
            abort();
        }
    }
    return lib;
}

static void* lookup(const char* name) {
    void* p = dlsym(target(), name);
    if (!p) {
        fprintf(stderr, "shim: %s lacks %s\n", SHIM_TARGET, name);
        abort();
    }
    return p;
}

/* The real backend's function `name`, resolved once. */
#define REAL(name)                                                                      \
    ({                                                                                  \
        static __typeof__(&eagle_backend_##name) p_;                                    \
        if (!p_) p_ = (__typeof__(&eagle_backend_##name))lookup("eagle_backend_" #name); \
        p_;                                                                             \
    })

#define FWD(ret, name, params, args) \
    EXPORT ret eagle_backend_##name params { return REAL(name) args; }
#define FWD_VOID(name, params, args) \
    EXPORT void eagle_backend_##name params { REAL(name) args; }

__attribute__((unused)) static void crash(void) { raise(SIGSEGV); }

#if defined(DEFECT_LAST_ERROR_GLOBAL)
static char g_error[512]; /* one message for every thread: the defect */
static eagle_backend_status remember(eagle_backend_status st) {
    if (st) snprintf(g_error, sizeof g_error, "%s", REAL(last_error)());
    return st;
}
#else
#define remember(st) (st)
#endif

/* ------------------------------------------------------------------ required */
EXPORT uint32_t eagle_backend_version(void) {
#ifdef DEFECT_MAJOR_2
    return (2u << 16) | (REAL(version)() & 0xFFFFu);
#else
    return REAL(version)();
#endif
}

EXPORT const char* eagle_backend_last_error(void) {
#if defined(DEFECT_LAST_ERROR_GLOBAL)
    return g_error;
#elif defined(DEFECT_LAST_ERROR_EMPTY)
    return "";
#else
    return REAL(last_error)();
#endif
}

EXPORT eagle_backend_status eagle_backend_build_info(struct eagle_backend_build_info* info) {
#if defined(DEFECT_SHORT_STRUCT)
    if (info && info->struct_size >= 4) {  /* ignores the caller's size: writes it all */
        uint32_t caller = info->struct_size;
        struct eagle_backend_build_info full;
        memset(&full, 0, sizeof full);
        full.struct_size = sizeof full;
        eagle_backend_status st = REAL(build_info)(&full);
        memcpy(info, &full, sizeof full);
        info->struct_size = caller;
        return st;
    }
#elif defined(DEFECT_LONG_STRUCT)
    if (info && info->struct_size > sizeof *info) {  /* claims the caller's size */
        uint32_t caller = info->struct_size;
        eagle_backend_status st = REAL(build_info)(info);
        info->struct_size = caller;
        return st;
    }
#endif
    return remember(REAL(build_info)(info));
}

FWD(eagle_backend_status, probe, (void), ())
FWD_VOID(free, (void* p), (p))

EXPORT eagle_backend_status eagle_backend_capabilities(uint64_t* groups) {
    eagle_backend_status st = remember(REAL(capabilities)(groups));
#ifdef DEFECT_RESERVED_BIT
    if (st == EAGLE_BACKEND_OK) *groups |= 1ull << 8;
#endif
#ifdef ONLY_STREAM /* not a defect: a stream-only backend whose work is host functions and copies */
    if (st == EAGLE_BACKEND_OK) *groups &= EAGLE_BACKEND_CAP_STREAM;
#endif
    return st;
}

EXPORT eagle_backend_status eagle_backend_device_types(int32_t* types, int32_t cap, int32_t* count) {
#ifdef DEFECT_CAP_IGNORED
    if (count && cap >= 0 && types) {  /* writes every type, whatever cap says */
        int32_t all[64], n = 0;
        eagle_backend_status st = REAL(device_types)(all, 64, &n);
        for (int32_t i = 0; st == EAGLE_BACKEND_OK && i < n && i < 64; ++i) types[i] = all[i];
        *count = n;
        return st;
    }
#endif
    return remember(REAL(device_types)(types, cap, count));
}

/* ------------------------------------------------------------------ stream */
EXPORT eagle_backend_status eagle_backend_stream_create(const struct eagle_backend_stream_desc* desc,
                                                        eagle_backend_stream* out) {
#ifdef DEFECT_IGNORE_FLAGS
    if (desc) {
        struct eagle_backend_stream_desc d = *desc;
        d.flags &= EAGLE_BACKEND_STREAM_NON_BLOCKING;  /* unknown bits dropped, not refused */
        return REAL(stream_create)(&d, out);
    }
#endif
    return REAL(stream_create)(desc, out);
}
FWD(eagle_backend_status, stream_ptr, (eagle_backend_stream s, uint64_t* raw), (s, raw))

EXPORT eagle_backend_status eagle_backend_stream_synchronize(eagle_backend_stream s) {
#ifdef DEFECT_CRASH_SYNC
    crash();
#endif
    return REAL(stream_synchronize)(s);
}

EXPORT void eagle_backend_stream_release(eagle_backend_stream s) {
#ifdef DEFECT_RELEASE_NULL_CRASH
    if (!s) crash();
#endif
    REAL(stream_release)(s);
}

/* ------------------------------------------------------------------ capturer, captured */
FWD(eagle_backend_status, capturer_create, (const struct eagle_backend_capturer_desc* d, eagle_backend_capturer* o), (d, o))
#ifdef DEFECT_CAPTURER_RELEASE_KEEPS_CAPTURE
/* A release that forgets a capture in progress: the capturer is never released, so its capture
 * is never abandoned and the stream stays captured. Releases of idle capturers are forwarded. */
static eagle_backend_capturer shim_begun[64];
static int shim_is_begun(eagle_backend_capturer c, int set) {
    for (int i = 0; i < 64; ++i) {
        if (set > 0 && !shim_begun[i]) { shim_begun[i] = c; return 1; }
        if (set <= 0 && c && shim_begun[i] == c) { if (set < 0) shim_begun[i] = NULL; return 1; }
    }
    return 0;
}
EXPORT eagle_backend_status eagle_backend_capturer_begin(eagle_backend_capturer c) {
    eagle_backend_status st = REAL(capturer_begin)(c);
    if (st == EAGLE_BACKEND_OK) shim_is_begun(c, 1);
    return st;
}
EXPORT eagle_backend_status eagle_backend_capturer_end(eagle_backend_capturer c, eagle_backend_captured* o) {
    eagle_backend_status st = REAL(capturer_end)(c, o);
    if (st != EAGLE_BACKEND_BAD_HANDLE) shim_is_begun(c, -1);
    return st;
}
EXPORT void eagle_backend_capturer_release(eagle_backend_capturer c) {
    if (shim_is_begun(c, 0)) return;
    REAL(capturer_release)(c);
}
#else
FWD(eagle_backend_status, capturer_begin, (eagle_backend_capturer c), (c))
FWD(eagle_backend_status, capturer_end, (eagle_backend_capturer c, eagle_backend_captured* o), (c, o))
FWD_VOID(capturer_release, (eagle_backend_capturer c), (c))
#endif
FWD(eagle_backend_status, captured_is_valid, (eagle_backend_captured c, int32_t* v), (c, v))
FWD_VOID(captured_release, (eagle_backend_captured c), (c))

/* ------------------------------------------------------------------ fork */
FWD(eagle_backend_status, fork_create, (const struct eagle_backend_fork_desc* d, eagle_backend_fork* o), (d, o))
FWD(eagle_backend_status, fork_fork, (eagle_backend_fork f), (f))

EXPORT eagle_backend_status eagle_backend_fork_join(eagle_backend_fork f) {
#ifdef DEFECT_HANG_JOIN
    for (;;) pause();
#endif
    return REAL(fork_join)(f);
}
FWD(eagle_backend_status, fork_branch, (eagle_backend_fork f, uint64_t i, uint64_t* s), (f, i, s))
FWD(eagle_backend_status, fork_origin, (eagle_backend_fork f, uint64_t* s), (f, s))
FWD(eagle_backend_status, fork_forked, (eagle_backend_fork f, int32_t* v), (f, v))
#ifndef DEFECT_MISSING_SYMBOL
EXPORT eagle_backend_status eagle_backend_fork_size(eagle_backend_fork f, uint64_t* size) {
#ifdef DEFECT_STATUS_42
    (void)f; (void)size;
    return 42;  /* a status the seam does not define */
#else
    return REAL(fork_size)(f, size);
#endif
}
#endif
#ifdef DEFECT_FORK_LEAKS_THREAD
#include <pthread.h>
static void* shim_linger(void* unused) {
    (void)unused;
    for (;;) pause();  /* a helper thread the release forgets to end */
    return NULL;
}
#endif
EXPORT void eagle_backend_fork_release(eagle_backend_fork f) {
#ifdef DEFECT_FORK_LEAKS_THREAD
    pthread_t t;
    if (f && pthread_create(&t, NULL, shim_linger, NULL) == 0) pthread_detach(t);
#endif
    REAL(fork_release)(f);
}

/* ------------------------------------------------------------------ conditional */
EXPORT eagle_backend_status eagle_backend_conditional_create(const struct eagle_backend_conditional_desc* desc,
                                                             eagle_backend_conditional* out) {
#ifdef DEFECT_IF_IGNORES_GUARD
    static uint32_t always = 1;  /* host memory is device memory on cpu */
    if (desc && desc->struct_size >= sizeof *desc && desc->counter_ptr == 0 && desc->case_count == 0) {
        struct eagle_backend_conditional_desc d = *desc;
        d.count_ptr = (uint64_t)(uintptr_t)&always;
        d.baseline_ptr = 0;
        return REAL(conditional_create)(&d, out);
    }
#endif
#ifdef DEFECT_WHILE_CAP_IGNORED
    /* a WHILE that ignores loop_cap: it runs until its guard fails */
    if (desc && desc->struct_size >= sizeof *desc && desc->counter_ptr != 0) {
        struct eagle_backend_conditional_desc d = *desc;
        d.loop_cap = 0xffffffffu;
        return REAL(conditional_create)(&d, out);
    }
#endif
#ifdef DEFECT_SWITCH_ALWAYS_CASE0
    /* a SWITCH that reads a word of its own, always 0, instead of the selector */
    static uint32_t zero = 0;
    if (desc && desc->struct_size >= sizeof *desc && desc->case_count != 0) {
        struct eagle_backend_conditional_desc d = *desc;
        d.count_ptr = (uint64_t)(uintptr_t)&zero;
        return REAL(conditional_create)(&d, out);
    }
#endif
    return REAL(conditional_create)(desc, out);
}
#ifdef DEFECT_WHILE_BODY_PARTIAL
/* the last body stream handed out: its launches run their first 1024 lanes only, as a backend
 * whose body-ending kernel took the loop's decision before its last blocks had run would */
static uint64_t partial_body;
EXPORT eagle_backend_status eagle_backend_conditional_begin(eagle_backend_conditional c, uint64_t* b) {
    eagle_backend_status st = REAL(conditional_begin)(c, b);
    if (st == EAGLE_BACKEND_OK && b) partial_body = *b;
    return st;
}
#else
FWD(eagle_backend_status, conditional_begin, (eagle_backend_conditional c, uint64_t* b), (c, b))
#endif
FWD(eagle_backend_status, conditional_body_stream, (eagle_backend_conditional c, uint64_t* b), (c, b))
FWD(eagle_backend_status, conditional_is_loop, (eagle_backend_conditional c, int32_t* v), (c, v))
FWD(eagle_backend_status, conditional_end, (eagle_backend_conditional c), (c))
FWD(eagle_backend_status, conditional_begin_case, (eagle_backend_conditional c, uint32_t i, uint64_t* b), (c, i, b))
FWD_VOID(conditional_release, (eagle_backend_conditional c), (c))

/* ------------------------------------------------------------------ attribution, graph */
FWD(eagle_backend_status, capture_snapshot_nodes, (uint64_t s, uint64_t** n, int64_t* c), (s, n, c))
FWD(eagle_backend_status, is_node_toggleable, (uint64_t n, int32_t* t), (n, t))
FWD(eagle_backend_status, graph_create, (const struct eagle_backend_graph_desc* d, eagle_backend_graph* o), (d, o))
FWD(eagle_backend_status, graph_from_captured, (eagle_backend_captured c, eagle_backend_graph* o), (c, o))
FWD(eagle_backend_status, graph_stream, (eagle_backend_graph g, uint64_t s), (g, s))
FWD(eagle_backend_status, graph_add_node, (eagle_backend_graph g, eagle_backend_captured c), (g, c))
FWD(eagle_backend_status, graph_launcher, (eagle_backend_graph g, eagle_backend_launcher* o), (g, o))
FWD(eagle_backend_status, graph_last_node, (eagle_backend_graph g, int64_t* i), (g, i))
FWD_VOID(graph_release, (eagle_backend_graph g), (g))

/* ------------------------------------------------------------------ launcher */
FWD(eagle_backend_status, launcher_launch, (eagle_backend_launcher l), (l))
FWD(eagle_backend_status, launcher_synchronize, (eagle_backend_launcher l), (l))
FWD(eagle_backend_status, launcher_stream, (eagle_backend_launcher l, uint64_t s), (l, s))

EXPORT eagle_backend_status eagle_backend_launcher_set_logical_size(eagle_backend_launcher l, int64_t size) {
#ifdef DEFECT_LOGICAL_SIZE_IGNORED
    (void)l; (void)size;
    return EAGLE_BACKEND_OK;
#else
    return REAL(launcher_set_logical_size)(l, size);
#endif
}
FWD(eagle_backend_status, launcher_kernel_node_count, (eagle_backend_launcher l, int64_t* c), (l, c))
FWD(eagle_backend_status, launcher_set_node_enabled, (eagle_backend_launcher l, uint64_t n, int32_t e), (l, n, e))
FWD_VOID(launcher_release, (eagle_backend_launcher l), (l))

/* ------------------------------------------------------------------ exec */
EXPORT eagle_backend_status eagle_backend_run_device(const struct eagle_backend_launch_desc* desc,
                                                     int32_t* launched) {
#ifdef DEFECT_UNORDERED_STREAM
    /* every second launch goes to a private stream: unordered with the caller's stream */
    static unsigned n;
    static uint64_t side;
    if (desc && (n++ & 1u)) {
        if (!side) {
            struct eagle_backend_stream_desc sd = {sizeof sd, 0, -1, 0};
            eagle_backend_stream h;
            if (REAL(stream_create)(&sd, &h) == EAGLE_BACKEND_OK) REAL(stream_ptr)(h, &side);
        }
        struct eagle_backend_launch_desc d = *desc;
        d.stream = side;
        return REAL(run_device)(&d, launched);
    }
#endif
#ifdef DEFECT_WHILE_BODY_PARTIAL
    if (desc && desc->struct_size >= sizeof *desc && partial_body && desc->stream == partial_body &&
        desc->count > 1024) {
        struct eagle_backend_launch_desc d = *desc;
        d.count = 1024;
        return REAL(run_device)(&d, launched);
    }
#endif
    return REAL(run_device)(desc, launched);
}

/* ------------------------------------------------------------------ device, interop */
EXPORT eagle_backend_status eagle_backend_device_props(int32_t device, struct eagle_backend_device_props* props) {
#ifdef DEFECT_PROPS_OVERWRITE
    if (props && props->struct_size >= 4) {
        uint32_t caller = props->struct_size;
        struct eagle_backend_device_props full;
        memset(&full, 0, sizeof full);
        full.struct_size = sizeof full;
        eagle_backend_status st = REAL(device_props)(device, &full);
        memcpy(props, &full, sizeof full);
        props->struct_size = caller < sizeof full ? caller : sizeof full;
        return st;
    }
#endif
    return REAL(device_props)(device, props);
}

EXPORT eagle_backend_status eagle_backend_fence(int32_t t, int32_t id, int64_t producer, int64_t consumer) {
#ifdef DEFECT_FENCE_NOOP
    (void)t; (void)id; (void)producer; (void)consumer;
    return EAGLE_BACKEND_OK;
#else
    return REAL(fence)(t, id, producer, consumer);
#endif
}
FWD(eagle_backend_status, event_pool_created, (int64_t* c), (c))

/* ------------------------------------------------------------------ filtering */
EXPORT eagle_backend_status eagle_backend_compact_device(struct eagle_backend_compact_desc* desc) {
#if defined(DEFECT_COMPACT_OFF_BY_ONE) || defined(DEFECT_COMPACT_FLAGS)
    if (desc && desc->struct_size >= sizeof *desc) {
        struct eagle_backend_compact_desc d = *desc;
#ifdef DEFECT_COMPACT_OFF_BY_ONE
        if (d.n > 0 && d.n < (1ll << 31)) d.n -= 1;  /* forgets the last sample */
#else
        d.flags &= EAGLE_BACKEND_COMPACT_MASK_IS_DROP;  /* unknown bits dropped, not refused */
#endif
        eagle_backend_status st = REAL(compact_device)(&d);
        desc->scratch_bytes = d.scratch_bytes;
        return st;
    }
#endif
    return REAL(compact_device)(desc);
}
#ifdef DEFECT_REORDER_INVERTED
/* a reorder that reads the mask the wrong way round: the dropped samples come first */
EXPORT eagle_backend_status eagle_backend_reorder_device(struct eagle_backend_reorder_desc* desc) {
    if (!desc || desc->struct_size < sizeof *desc) return REAL(reorder_device)(desc);
    struct eagle_backend_reorder_desc d = *desc;
    d.flags ^= EAGLE_BACKEND_COMPACT_MASK_IS_DROP;
    eagle_backend_status st = REAL(reorder_device)(&d);
    desc->scratch_bytes = d.scratch_bytes;
    return st;
}
#else
FWD(eagle_backend_status, reorder_device, (struct eagle_backend_reorder_desc* d), (d))
#endif

/* ------------------------------------------------------------------ minor 6 */
EXPORT eagle_backend_status eagle_backend_memcpy(uint64_t dst, uint64_t src, uint64_t bytes, int32_t dir,
                                                 uint64_t stream) {
#ifdef DEFECT_MEMCPY_EAGER
    if (dir >= EAGLE_BACKEND_MEMCPY_H2D && dir <= EAGLE_BACKEND_MEMCPY_H2H) {
        memmove((void*)(uintptr_t)dst, (const void*)(uintptr_t)src, bytes);  /* not in stream order */
        return EAGLE_BACKEND_OK;
    }
#endif
    return REAL(memcpy)(dst, src, bytes, dir, stream);
}
FWD(eagle_backend_status, host_alloc, (uint64_t b, uint32_t f, void** o), (b, f, o))
FWD_VOID(host_free, (void* p), (p))

#ifdef DEFECT_HOST_FUNC_THREADED
#include <pthread.h>
struct shim_call { eagle_backend_host_fn fn; void* user; };
static void* shim_run(void* p) {
    struct shim_call c = *(struct shim_call*)p;
    free(p);
    c.fn(c.user);
    return NULL;
}
#endif

EXPORT eagle_backend_status eagle_backend_host_func(uint64_t stream, eagle_backend_host_fn fn, void* user) {
#ifdef DEFECT_HOST_FUNC_THREADED
    if (fn) {  /* each host function on its own thread: no stream order, synchronize waits for none */
        struct shim_call* c = malloc(sizeof *c);
        pthread_t t;
        c->fn = fn;
        c->user = user;
        (void)stream;
        pthread_create(&t, NULL, shim_run, c);
        pthread_detach(t);
        return EAGLE_BACKEND_OK;
    }
#endif
#ifdef DEFECT_HOST_FUNC_EAGER
    if (fn) {
        (void)stream;
        fn(user);  /* runs now, not in stream order */
        return EAGLE_BACKEND_OK;
    }
#endif
    return REAL(host_func)(stream, fn, user);
}

/* ------------------------------------------------------------------ minor 7 */
FWD(eagle_backend_status, module_from_source,
    (const struct eagle_backend_module_desc* d, const char* s, uint64_t n, eagle_backend_module* o, char** l),
    (d, s, n, o, l))
FWD(eagle_backend_status, module_from_image,
    (const struct eagle_backend_module_desc* d, const void* s, uint64_t n, eagle_backend_module* o, char** l),
    (d, s, n, o, l))
FWD(eagle_backend_status, module_function, (eagle_backend_module m, const char* n, uint64_t* f), (m, n, f))
FWD_VOID(module_release, (eagle_backend_module m), (m))
FWD(eagle_backend_status, mem_alloc, (int32_t d, uint64_t b, uint32_t f, uint64_t* a), (d, b, f, a))
FWD_VOID(mem_free, (uint64_t a), (a))

/* ------------------------------------------------------------------ minor 8 */
FWD(eagle_backend_status, stream_query, (eagle_backend_stream st, int32_t* done), (st, done))
FWD(eagle_backend_status, launcher_query, (eagle_backend_launcher l, int32_t* done), (l, done))

#ifdef DEFECT_EXTRA_EXPORT
/* A helper that leaked into the export table. */
EXPORT int eagle_backend_debug_dump(void) { return 0; }
EXPORT int shim_helper_counter = 0;
#endif
