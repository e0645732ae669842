/* Smoke test of a cpu-kind eagle backend through dlopen: drives every seam symbol and checks the
 * results. Build: cc -std=c11 -O1 -I. tests/c_backend/smoke.c -o smoke -ldl -lpthread
 * Run:   ./smoke /path/to/libeagle_cpu.so */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eagle_backend.h"

static int failures = 0;
#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                             \
        }                                                                           \
    } while (0)
#define CHECK_ST(call, want)                                                                       \
    do {                                                                                           \
        int32_t st_ = (call);                                                                      \
        if (st_ != (want)) {                                                                       \
            fprintf(stderr, "%s:%d: %s -> %d (want %d): %s\n", __FILE__, __LINE__, #call, st_, (want), \
                    B.last_error());                                                               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)
#define OK(call) CHECK_ST(call, EAGLE_BACKEND_OK)

/* ------------------------------------------------------------------ binding */

static struct {
#define SYM(name) __typeof__(&eagle_backend_##name) name;
#include "smoke_symbols.inc"
#undef SYM
} B;

static const char* const symbol_names[] = {
#define SYM(name) "eagle_backend_" #name,
#include "smoke_symbols.inc"
#undef SYM
};

static void bind(const char* path) {
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        exit(2);
    }
    void** slots = (void**)&B;
    for (size_t i = 0; i < sizeof symbol_names / sizeof symbol_names[0]; ++i) {
        slots[i] = dlsym(h, symbol_names[i]);
        if (!slots[i]) {
            fprintf(stderr, "missing symbol %s\n", symbol_names[i]);
            exit(2);
        }
    }
}

/* ------------------------------------------------------------------ kernels and host functions */

/* params[0]: uint32_t* array; adds 1 to every lane of the tile. */
static void k_inc(void* const* params, int64_t base, int64_t count, int64_t n) {
    (void)n;
    uint32_t* a = *(uint32_t* const*)params[0];
    for (int64_t i = base; i < base + count; ++i) a[i] += 1;
}
/* params[0]: double* array, params[1]: double value. */
static void k_fill(void* const* params, int64_t base, int64_t count, int64_t n) {
    (void)n;
    double* a = *(double* const*)params[0];
    const double v = *(const double*)params[1];
    for (int64_t i = base; i < base + count; ++i) a[i] = v + (double)i;
}
/* params[0]: int64 counter: adds the lanes; params[1]: int64 counter of n_samples seen (last). */
static void k_lanes(void* const* params, int64_t base, int64_t count, int64_t n) {
    (void)base;
    _Atomic int64_t* c = *(_Atomic int64_t* const*)params[0];
    _Atomic int64_t* ns = *(_Atomic int64_t* const*)params[1];
    atomic_fetch_add(c, count);
    atomic_store(ns, n);
}
/* Counts tiles. */
static void k_tiles(void* const* params, int64_t base, int64_t count, int64_t n) {
    (void)base; (void)count; (void)n;
    atomic_fetch_add(*(_Atomic int64_t* const*)params[0], 1);
}

static void h_add(void* p) { atomic_fetch_add((_Atomic int64_t*)p, 1); }
static void h_dec_u32(void* p) { (*(uint32_t*)p)--; }

typedef struct {
    _Atomic int* log;
    _Atomic int* pos;
    int value;
} log_entry;
static void h_log(void* p) {
    log_entry* e = (log_entry*)p;
    int i = atomic_fetch_add(e->pos, 1);
    e->log[i] = e->value;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Rendezvous: each branch marks itself and waits (2 s at most) for the other to arrive. */
typedef struct {
    _Atomic int* arrived;
    int me;
    _Atomic int* met;
} rendezvous;
static void h_rendezvous(void* p) {
    rendezvous* r = (rendezvous*)p;
    atomic_fetch_or(r->arrived, 1 << r->me);
    for (int i = 0; i < 2000; ++i) {
        if (atomic_load(r->arrived) == 3) {
            atomic_fetch_add(r->met, 1);
            return;
        }
        sleep_ms(1);
    }
}

static _Atomic int slow_flag;
static _Atomic int seen_flag;
static void h_slow_set(void* p) { (void)p; sleep_ms(100); atomic_store(&slow_flag, 1); }
static void h_read(void* p) { (void)p; atomic_store(&seen_flag, atomic_load(&slow_flag)); }

/* ------------------------------------------------------------------ helpers */

static uint64_t u64(const void* p) { return (uint64_t)(uintptr_t)p; }

static eagle_backend_stream new_stream(uint32_t flags) {
    struct eagle_backend_stream_desc d = {sizeof d, flags, -1, 0};
    eagle_backend_stream s = NULL;
    OK(B.stream_create(&d, &s));
    return s;
}
static uint64_t raw_of(eagle_backend_stream s) {
    uint64_t r = 0;
    OK(B.stream_ptr(s, &r));
    return r;
}
static int32_t run(uint64_t stream, void* fn, const void* const* args, int64_t nargs, int64_t base, int64_t count,
                   int64_t n, uint32_t block) {
    uint64_t params[65] = {0};
    for (int64_t i = 0; i < nargs && i < 2; ++i) params[i] = u64(args[i]); /* nargs > 2: a refusal test */
    struct eagle_backend_launch_desc d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.device = -1;
    d.block = block;
    d.function = u64(fn);
    d.params = params;
    d.nparams = nargs;
    d.base = base;
    d.count = count;
    d.n_samples = n;
    d.stream = stream;
    int32_t launched = -1;
    int32_t st = B.run_device(&d, &launched);
    if (st == EAGLE_BACKEND_OK) CHECK(launched == (count > 0));
    return st;
}
static eagle_backend_capturer begin_capture(uint64_t raw) {
    struct eagle_backend_capturer_desc d = {sizeof d, 0, -1, 0, raw};
    eagle_backend_capturer c = NULL;
    OK(B.capturer_create(&d, &c));
    OK(B.capturer_begin(c));
    return c;
}
static eagle_backend_launcher end_to_launcher(eagle_backend_capturer c, uint64_t stream) {
    eagle_backend_captured cd = NULL;
    OK(B.capturer_end(c, &cd));
    int32_t valid = 0;
    OK(B.captured_is_valid(cd, &valid));
    CHECK(valid == 1);
    eagle_backend_graph g = NULL;
    OK(B.graph_from_captured(cd, &g));
    CHECK_ST(B.captured_is_valid(cd, &valid), EAGLE_BACKEND_BAD_HANDLE); /* consumed */
    OK(B.graph_stream(g, stream));
    eagle_backend_launcher l = NULL;
    OK(B.graph_launcher(g, &l));
    B.graph_release(g); /* the launcher outlives its graph */
    B.capturer_release(c);
    return l;
}

/* ------------------------------------------------------------------ tests */

static void test_required(void) {
    CHECK(B.version() == EAGLE_BACKEND_VERSION);
    struct eagle_backend_build_info bi;
    memset(&bi, 0x5a, sizeof bi);
    bi.struct_size = sizeof bi;
    OK(B.build_info(&bi));
    CHECK(bi.struct_size == sizeof bi);
    CHECK(bi.abi_version == EAGLE_BACKEND_VERSION);
    CHECK(bi.cudart_version == 0);
    CHECK(strcmp(bi.backend_kind, "cpu") == 0);
    CHECK(strcmp(bi.eagle_version, "0.1.0") == 0);
    /* short output struct: only 8 bytes written */
    unsigned char buf[64];
    memset(buf, 0xee, sizeof buf);
    uint32_t eight = 8;
    memcpy(buf, &eight, 4);
    OK(B.build_info((struct eagle_backend_build_info*)buf));
    uint32_t got;
    memcpy(&got, buf, 4);
    CHECK(got == 8);
    memcpy(&got, buf + 4, 4);
    CHECK(got == EAGLE_BACKEND_VERSION);
    CHECK(buf[8] == 0xee);
    uint32_t small = 2;
    CHECK_ST(B.build_info((struct eagle_backend_build_info*)&small), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK(strlen(B.last_error()) > 0);
    CHECK_ST(B.build_info(NULL), EAGLE_BACKEND_INVALID_ARGUMENT);
    OK(B.probe());
    uint64_t caps = 0;
    OK(B.capabilities(&caps));
    CHECK(caps == 0x1effull);
    CHECK_ST(B.capabilities(NULL), EAGLE_BACKEND_INVALID_ARGUMENT);
    int32_t types[4] = {0, 0, 0, 0}, count = 0;
    OK(B.device_types(NULL, 0, &count));
    CHECK(count == 1);
    OK(B.device_types(types, 4, &count));
    CHECK(count == 1 && types[0] == 1 && types[1] == 0);
    CHECK_ST(B.device_types(types, -1, &count), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK_ST(B.device_types(types, 1, NULL), EAGLE_BACKEND_INVALID_ARGUMENT);
    B.free(NULL);
}

static void test_device(void) {
    struct eagle_backend_device_props p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    OK(B.device_props(-1, &p));
    CHECK(p.struct_size == sizeof p);
    CHECK(p.device == 0 && p.sm_count >= 1 && p.warp_size == 1 && strlen(p.name) > 0);
    printf("device: %s, %d cores, L1d %lld, L2 %lld\n", p.name, p.sm_count, (long long)p.shared_mem_per_block,
           (long long)p.shared_mem_per_sm);
    CHECK_ST(B.device_props(1, &p), EAGLE_BACKEND_INDEX);
    CHECK_ST(B.device_props(0, NULL), EAGLE_BACKEND_INVALID_ARGUMENT);
}

static void test_stream_and_exec(void) {
    eagle_backend_stream s = new_stream(0);
    uint64_t raw = raw_of(s);
    CHECK(raw != 0);
    /* order: host funcs log in enqueue order, interleaved with kernels */
    _Atomic int log[16];
    _Atomic int pos = 0;
    log_entry e[8];
    for (int i = 0; i < 8; ++i) {
        e[i].log = log;
        e[i].pos = &pos;
        e[i].value = i;
    }
    const int64_t n = 1000003;
    double* a = calloc(n, sizeof(double));
    double v = 0.5;
    const void* args[] = {&a, &v};
    OK(B.host_func(raw, h_log, &e[0]));
    CHECK_ST(run(raw, (void*)k_fill, args, 2, 0, n, n, 0), EAGLE_BACKEND_OK);
    v = 99.0; /* arguments were copied at enqueue */
    OK(B.host_func(raw, h_log, &e[1]));
    for (int i = 2; i < 8; ++i) OK(B.host_func(raw, h_log, &e[i]));
    OK(B.stream_synchronize(s));
    CHECK(pos == 8);
    { /* minor 8: a synchronize that does not wait, on an idle stream */
        int32_t done = 7;
        OK(B.stream_query(s, &done));
        CHECK(done == 1);
        CHECK_ST(B.stream_query(s, NULL), EAGLE_BACKEND_INVALID_ARGUMENT);
    }
    for (int i = 0; i < 8; ++i) CHECK(log[i] == i);
    int bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += a[i] != 0.5 + (double)i;
    CHECK(bad == 0);
    /* partition: base/count, tiles by block */
    _Atomic int64_t tiles = 0;
    _Atomic int64_t* tp = &tiles;
    const void* targs[] = {&tp};
    CHECK_ST(run(raw, (void*)k_tiles, targs, 1, 10, 10000, 20000, 1000), EAGLE_BACKEND_OK);
    OK(B.stream_synchronize(s));
    CHECK(tiles == 10);
    CHECK_ST(run(raw, (void*)k_tiles, targs, 1, 0, 0, 0, 0), EAGLE_BACKEND_OK); /* empty: launched 0 */
    CHECK_ST(run(raw, (void*)k_tiles, targs, 1, 5, 10, 12, 0), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK_ST(run(raw, (void*)k_tiles, targs, 1, -1, 1, 12, 0), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK_ST(run(raw, (void*)k_tiles, targs, 65, 0, 1, 1, 0), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK_ST(run(12345, (void*)k_tiles, targs, 1, 0, 1, 1, 0), EAGLE_BACKEND_INVALID_ARGUMENT);
    {
        struct eagle_backend_launch_desc d;
        memset(&d, 0, sizeof d);
        d.struct_size = sizeof d;
        d.flags = 4;
        d.count = 1;
        d.n_samples = 1;
        d.function = u64(k_tiles);
        int32_t launched;
        CHECK_ST(B.run_device(&d, &launched), EAGLE_BACKEND_UNSUPPORTED);
        d.flags = 0;
        CHECK_ST(B.run_device(&d, NULL), EAGLE_BACKEND_INVALID_ARGUMENT);
    }
    /* default stream (raw 0) */
    tiles = 0;
    CHECK_ST(run(0, (void*)k_tiles, targs, 1, 0, 100, 100, 10), EAGLE_BACKEND_OK);
    _Atomic int64_t dflt = 0;
    OK(B.host_func(0, h_add, (void*)&dflt));
    /* a blocking stream's next work follows the default stream's */
    OK(B.host_func(raw, h_add, (void*)&dflt));
    OK(B.stream_synchronize(s));
    CHECK(dflt == 2 && tiles == 10);
    /* stream validation */
    struct eagle_backend_stream_desc sd = {sizeof sd, 2, -1, 0};
    eagle_backend_stream s2 = NULL;
    CHECK_ST(B.stream_create(&sd, &s2), EAGLE_BACKEND_UNSUPPORTED);
    sd.flags = EAGLE_BACKEND_STREAM_NON_BLOCKING;
    sd.device = 3;
    CHECK_ST(B.stream_create(&sd, &s2), EAGLE_BACKEND_INDEX);
    sd.device = 0;
    CHECK_ST(B.stream_create(&sd, NULL), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK_ST(B.stream_create(NULL, &s2), EAGLE_BACKEND_INVALID_ARGUMENT);
    sd.struct_size = 4; /* short desc: flags and device read as 0 */
    OK(B.stream_create(&sd, &s2));
    B.stream_release(s2);
    CHECK_ST(B.stream_synchronize(s2), EAGLE_BACKEND_BAD_HANDLE);
    CHECK_ST(B.stream_ptr(s2, &raw), EAGLE_BACKEND_BAD_HANDLE);
    CHECK_ST(B.stream_ptr(s, NULL), EAGLE_BACKEND_INVALID_ARGUMENT);
    B.stream_release(s2); /* double release is harmless */
    B.stream_release(NULL);
    B.stream_release(s);
    free(a);
}

static void test_memory(void) {
    eagle_backend_stream s = new_stream(EAGLE_BACKEND_STREAM_NON_BLOCKING);
    uint64_t raw = raw_of(s);
    void* h = NULL;
    OK(B.host_alloc(1 << 20, 0, &h));
    CHECK(h != NULL && ((uintptr_t)h % 64) == 0);
    memset(h, 0, 1 << 20);
    CHECK_ST(B.host_alloc(0, 0, &h), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK_ST(B.host_alloc(16, 1, &h), EAGLE_BACKEND_UNSUPPORTED);
    CHECK_ST(B.host_alloc(16, 0, NULL), EAGLE_BACKEND_INVALID_ARGUMENT);
    char src[64], mid[64], dst[64], back[64];
    for (int i = 0; i < 64; ++i) src[i] = (char)i;
    OK(B.memcpy(u64(h), u64(src), 64, EAGLE_BACKEND_MEMCPY_H2D, raw));
    OK(B.memcpy(u64(mid), u64(h), 64, EAGLE_BACKEND_MEMCPY_D2D, raw));
    OK(B.memcpy(u64(dst), u64(mid), 64, EAGLE_BACKEND_MEMCPY_D2H, raw));
    OK(B.memcpy(u64(back), u64(dst), 64, EAGLE_BACKEND_MEMCPY_H2H, raw));
    OK(B.memcpy(u64((char*)h + 8), u64(h), 32, EAGLE_BACKEND_MEMCPY_D2D, raw)); /* overlapping: memmove */
    OK(B.stream_synchronize(s));
    CHECK(memcmp(back, src, 64) == 0);
    CHECK(((char*)h)[8] == 0 && ((char*)h)[39] == 31);
    CHECK_ST(B.memcpy(u64(dst), u64(src), 1, 0, raw), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK_ST(B.memcpy(0, u64(src), 1, 1, raw), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK_ST(B.host_func(raw, NULL, NULL), EAGLE_BACKEND_INVALID_ARGUMENT);
    B.host_free(h);
    B.host_free(NULL);
    B.stream_release(s);
}

static void test_capture_replay(void) {
    eagle_backend_stream s = new_stream(0);
    uint64_t raw = raw_of(s);
    const int64_t n = 50000;
    uint32_t* arr = calloc(n, sizeof(uint32_t));
    uint32_t* copy = calloc(n, sizeof(uint32_t));
    _Atomic int64_t hits = 0;
    const void* args[] = {&arr};
    eagle_backend_capturer c = begin_capture(raw);
    CHECK_ST(B.capturer_begin(c), EAGLE_BACKEND_INVALID_ARGUMENT); /* already begun */
    CHECK_ST(run(raw, (void*)k_inc, args, 1, 0, n, n, 0), EAGLE_BACKEND_OK);
    OK(B.memcpy(u64(copy), u64(arr), n * sizeof(uint32_t), EAGLE_BACKEND_MEMCPY_D2D, raw));
    OK(B.host_func(raw, h_add, (void*)&hits));
    uint64_t* nodes = NULL;
    int64_t count = 0;
    OK(B.capture_snapshot_nodes(raw, &nodes, &count));
    CHECK(count == 3);
    for (int64_t i = 0; i < count; ++i) {
        int32_t t = -1;
        OK(B.is_node_toggleable(nodes[i], &t));
        CHECK(t == 1);
    }
    CHECK_ST(B.is_node_toggleable(12345, &(int32_t){0}), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK_ST(B.stream_synchronize(s), EAGLE_BACKEND_INVALID_ARGUMENT); /* breaks the capture */
    eagle_backend_captured cd = NULL;
    CHECK_ST(B.capturer_end(c, &cd), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK_ST(B.capturer_end(c, &cd), EAGLE_BACKEND_INVALID_ARGUMENT); /* not begun */
    B.free(nodes);
    CHECK(arr[0] == 0 && hits == 0); /* nothing ran */

    /* capture again, properly */
    OK(B.capturer_begin(c));
    CHECK_ST(run(raw, (void*)k_inc, args, 1, 0, n, n, 0), EAGLE_BACKEND_OK);
    OK(B.memcpy(u64(copy), u64(arr), n * sizeof(uint32_t), EAGLE_BACKEND_MEMCPY_D2D, raw));
    OK(B.host_func(raw, h_add, (void*)&hits));
    OK(B.capture_snapshot_nodes(raw, &nodes, &count));
    CHECK(count == 3);
    eagle_backend_launcher l = end_to_launcher(c, raw);
    CHECK_ST(B.capture_snapshot_nodes(raw, &nodes, &count), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK(arr[0] == 0 && hits == 0);
    int64_t kn = 0;
    OK(B.launcher_kernel_node_count(l, &kn));
    CHECK(kn == 1);
    for (int i = 0; i < 3; ++i) OK(B.launcher_launch(l));
    OK(B.launcher_synchronize(l));
    CHECK(arr[0] == 3 && arr[n - 1] == 3 && copy[n / 2] == 3 && hits == 3);
    {
        int32_t done = 7;
        OK(B.launcher_query(l, &done));
        CHECK(done == 1);
    }
    /* toggling the kernel node */
    OK(B.launcher_set_node_enabled(l, nodes[0], 0));
    OK(B.launcher_launch(l));
    OK(B.launcher_synchronize(l));
    CHECK(arr[0] == 3 && hits == 4);
    OK(B.launcher_set_node_enabled(l, nodes[0], 1));
    OK(B.launcher_launch(l));
    OK(B.launcher_synchronize(l));
    CHECK(arr[7] == 4 && hits == 5);
    CHECK_ST(B.launcher_set_node_enabled(l, u64(&hits), 0), EAGLE_BACKEND_INVALID_ARGUMENT);
    B.free(nodes);
    /* launcher on another stream and on the default stream */
    eagle_backend_stream s2 = new_stream(EAGLE_BACKEND_STREAM_NON_BLOCKING);
    OK(B.launcher_stream(l, raw_of(s2)));
    OK(B.launcher_launch(l));
    OK(B.stream_synchronize(s2));
    CHECK(arr[1] == 5);
    OK(B.launcher_stream(l, 0));
    OK(B.launcher_launch(l));
    OK(B.launcher_synchronize(l));
    CHECK(arr[1] == 6 && hits == 7);
    CHECK_ST(B.launcher_stream(l, 77), EAGLE_BACKEND_INVALID_ARGUMENT);
    /* empty capture */
    c = begin_capture(raw);
    eagle_backend_captured empty = NULL;
    OK(B.capturer_end(c, &empty));
    int32_t valid = 1;
    OK(B.captured_is_valid(empty, &valid));
    CHECK(valid == 0);
    eagle_backend_graph g = NULL;
    CHECK_ST(B.graph_from_captured(empty, &g), EAGLE_BACKEND_INVALID_ARGUMENT);
    B.captured_release(empty); /* still owned after the failed call */
    B.captured_release(empty);
    B.capturer_release(c);
    /* capturer released mid-capture abandons it; the stream runs eagerly again */
    c = begin_capture(raw);
    B.capturer_release(c);
    OK(B.host_func(raw, h_add, (void*)&hits));
    OK(B.stream_synchronize(s));
    CHECK(hits == 8);
    B.launcher_release(l);
    CHECK_ST(B.launcher_launch(l), EAGLE_BACKEND_BAD_HANDLE);
    B.launcher_release(NULL);
    B.stream_release(s2);
    B.stream_release(s);
    free(arr);
    free(copy);
}

static void test_logical_size_and_builder(void) {
    eagle_backend_stream s = new_stream(EAGLE_BACKEND_STREAM_NON_BLOCKING);
    uint64_t raw = raw_of(s);
    _Atomic int64_t lanes = 0, ns = 0;
    _Atomic int64_t *lp = &lanes, *np = &ns;
    const void* args[] = {&lp, &np};
    eagle_backend_capturer c = begin_capture(raw);
    CHECK_ST(run(raw, (void*)k_lanes, args, 2, 0, 100, 100, 0), EAGLE_BACKEND_OK); /* whole run */
    CHECK_ST(run(raw, (void*)k_lanes, args, 2, 10, 5, 100, 0), EAGLE_BACKEND_OK);  /* a partition */
    eagle_backend_captured cd1 = NULL;
    OK(B.capturer_end(c, &cd1));
    OK(B.capturer_begin(c));
    _Atomic int log[8];
    _Atomic int pos = 0;
    log_entry e1 = {log, &pos, 1}, e2 = {log, &pos, 2};
    OK(B.host_func(raw, h_log, &e1));
    eagle_backend_captured cd2 = NULL;
    OK(B.capturer_end(c, &cd2));
    OK(B.capturer_begin(c));
    OK(B.host_func(raw, h_log, &e2));
    eagle_backend_captured cd3 = NULL;
    OK(B.capturer_end(c, &cd3));
    B.capturer_release(c);

    struct eagle_backend_graph_desc gd = {sizeof gd, 0, -1, 0};
    eagle_backend_graph g = NULL;
    OK(B.graph_create(&gd, &g));
    int64_t last = 7;
    OK(B.graph_last_node(g, &last));
    CHECK(last == -1);
    eagle_backend_launcher l = NULL;
    CHECK_ST(B.graph_launcher(g, &l), EAGLE_BACKEND_INVALID_ARGUMENT);
    OK(B.graph_add_node(g, cd2));
    OK(B.graph_add_node(g, cd1));
    OK(B.graph_add_node(g, cd3));
    CHECK_ST(B.graph_add_node(g, cd3), EAGLE_BACKEND_BAD_HANDLE); /* consumed */
    OK(B.graph_last_node(g, &last));
    CHECK(last == 2);
    OK(B.graph_stream(g, raw));
    OK(B.graph_launcher(g, &l));
    B.graph_release(g);
    int64_t kn = 0;
    OK(B.launcher_kernel_node_count(l, &kn));
    CHECK(kn == 2);
    OK(B.launcher_launch(l));
    OK(B.launcher_synchronize(l));
    CHECK(lanes == 105 && pos == 2 && log[0] == 1 && log[1] == 2);
    OK(B.launcher_set_logical_size(l, 37));
    OK(B.launcher_launch(l));
    OK(B.launcher_synchronize(l));
    CHECK(lanes == 105 + 37 + 5);
    OK(B.launcher_set_logical_size(l, -1));
    OK(B.launcher_launch(l));
    OK(B.launcher_synchronize(l));
    CHECK(lanes == 147 + 105 && ns == 100);
    CHECK_ST(B.launcher_set_logical_size(l, (int64_t)1 << 31), EAGLE_BACKEND_INVALID_ARGUMENT);
    B.launcher_release(l);
    gd.flags = 1;
    CHECK_ST(B.graph_create(&gd, &g), EAGLE_BACKEND_UNSUPPORTED);
    B.stream_release(s);
}

static void test_fork(void) {
    eagle_backend_stream s = new_stream(0);
    uint64_t raw = raw_of(s);
    struct eagle_backend_fork_desc fd = {sizeof fd, 0, -1, 0, raw, 2};
    eagle_backend_fork f = NULL;
    OK(B.fork_create(&fd, &f));
    uint64_t size = 0, origin = 0, b0 = 0, b1 = 0;
    OK(B.fork_size(f, &size));
    CHECK(size == 2);
    OK(B.fork_origin(f, &origin));
    CHECK(origin == raw);
    OK(B.fork_branch(f, 0, &b0));
    OK(B.fork_branch(f, 1, &b1));
    CHECK(b0 && b1 && b0 != b1 && b0 != raw);
    CHECK_ST(B.fork_branch(f, 2, &b0), EAGLE_BACKEND_INDEX);
    int32_t forked = -1;
    OK(B.fork_forked(f, &forked));
    CHECK(forked == 0);
    CHECK_ST(B.fork_join(f), EAGLE_BACKEND_INVALID_ARGUMENT);

    /* eagerly: branches run concurrently, after the origin's earlier work, and join before later work */
    _Atomic int arrived = 0, met = 0;
    rendezvous r0 = {&arrived, 0, &met}, r1 = {&arrived, 1, &met};
    atomic_store(&slow_flag, 0);
    OK(B.host_func(raw, h_slow_set, NULL));
    OK(B.fork_fork(f));
    OK(B.fork_forked(f, &forked));
    CHECK(forked == 1);
    CHECK_ST(B.fork_fork(f), EAGLE_BACKEND_INVALID_ARGUMENT);
    OK(B.host_func(b0, h_read, NULL));
    OK(B.host_func(b0, h_rendezvous, &r0));
    OK(B.host_func(b1, h_rendezvous, &r1));
    OK(B.fork_join(f));
    _Atomic int64_t after = 0;
    OK(B.host_func(raw, h_add, (void*)&after));
    OK(B.stream_synchronize(s));
    CHECK(seen_flag == 1);
    CHECK(met == 2);
    CHECK(after == 1);

    /* captured: a replay runs the branches concurrently and joins them */
    eagle_backend_capturer c = begin_capture(raw);
    _Atomic int64_t pre = 0;
    OK(B.host_func(raw, h_add, (void*)&pre));
    OK(B.fork_fork(f));
    OK(B.host_func(b0, h_rendezvous, &r0));
    OK(B.host_func(b1, h_rendezvous, &r1));
    OK(B.fork_join(f));
    OK(B.host_func(raw, h_add, (void*)&after));
    uint64_t* nodes = NULL;
    int64_t count = 0;
    OK(B.capture_snapshot_nodes(raw, &nodes, &count));
    CHECK(count == 4);
    B.free(nodes);
    eagle_backend_launcher l = end_to_launcher(c, raw);
    CHECK(met == 2 && after == 1);
    for (int rep = 0; rep < 3; ++rep) {
        arrived = 0;
        met = 0;
        OK(B.launcher_launch(l));
        OK(B.launcher_synchronize(l));
        CHECK(met == 2);
        CHECK(after == 2 + rep && pre == 1 + rep);
    }
    /* unjoined fork breaks the capture */
    c = begin_capture(raw);
    OK(B.fork_fork(f));
    OK(B.host_func(b0, h_add, (void*)&pre));
    eagle_backend_captured cd = NULL;
    CHECK_ST(B.capturer_end(c, &cd), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK_ST(B.host_func(b0, h_add, (void*)&pre), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK_ST(B.fork_join(f), EAGLE_BACKEND_INVALID_ARGUMENT); /* detaches the branches */
    OK(B.fork_forked(f, &forked));
    CHECK(forked == 0);
    B.capturer_release(c);
    B.launcher_release(l);
    fd.branch_count = 0;
    CHECK_ST(B.fork_create(&fd, &f), EAGLE_BACKEND_INVALID_ARGUMENT);
    B.fork_release(f);
    CHECK_ST(B.fork_size(f, &size), EAGLE_BACKEND_BAD_HANDLE);
    B.fork_release(NULL);
    B.stream_release(s);
}

static void test_conditionals(void) {
    eagle_backend_stream s = new_stream(0);
    uint64_t raw = raw_of(s);
    uint32_t if_guard = 0, while_guard = 0, baseline = 0, cell[2] = {0, 0}, sel = 0;
    _Atomic int64_t if_hits = 0, while_hits = 0, nested_hits = 0, case_hits[3] = {0, 0, 0};
    const int64_t n = 1000;
    uint32_t* arr = calloc(n, sizeof(uint32_t));
    const void* args[] = {&arr};

    /* conditional on a stream not being captured */
    struct eagle_backend_conditional_desc cdsc;
    memset(&cdsc, 0, sizeof cdsc);
    cdsc.struct_size = sizeof cdsc;
    cdsc.device = -1;
    cdsc.origin = raw;
    cdsc.count_ptr = u64(&if_guard);
    eagle_backend_conditional cond = NULL;
    CHECK_ST(B.conditional_create(&cdsc, &cond), EAGLE_BACKEND_INVALID_ARGUMENT);

    eagle_backend_capturer c = begin_capture(raw);
    /* IF */
    OK(B.conditional_create(&cdsc, &cond));
    int32_t loop = -1;
    OK(B.conditional_is_loop(cond, &loop));
    CHECK(loop == 0);
    uint64_t body = 0, body2 = 0;
    CHECK_ST(B.conditional_body_stream(cond, &body), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK_ST(B.conditional_begin_case(cond, 0, &body), EAGLE_BACKEND_INVALID_ARGUMENT);
    OK(B.conditional_begin(cond, &body));
    OK(B.conditional_body_stream(cond, &body2));
    CHECK(body == body2 && body != raw);
    CHECK_ST(B.conditional_begin(cond, &body2), EAGLE_BACKEND_INVALID_ARGUMENT);
    OK(B.host_func(body, h_add, (void*)&if_hits));
    uint64_t* nodes = NULL;
    int64_t count = 0;
    OK(B.capture_snapshot_nodes(body, &nodes, &count));
    CHECK(count == 1);
    B.free(nodes);
    OK(B.conditional_end(cond));
    CHECK_ST(B.conditional_end(cond), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK_ST(B.host_func(body, h_add, (void*)&if_hits), EAGLE_BACKEND_INVALID_ARGUMENT); /* closed */
    B.conditional_release(cond);

    /* WHILE with a nested IF and a kernel: body decrements the guard */
    memset(&cdsc, 0, sizeof cdsc);
    cdsc.struct_size = sizeof cdsc;
    cdsc.device = -1;
    cdsc.origin = raw;
    cdsc.count_ptr = u64(&while_guard);
    cdsc.baseline_ptr = u64(&baseline);
    cdsc.counter_ptr = u64(cell);
    cdsc.loop_cap = 5;
    OK(B.conditional_create(&cdsc, &cond));
    OK(B.conditional_is_loop(cond, &loop));
    CHECK(loop == 1);
    OK(B.conditional_begin(cond, &body));
    OK(B.host_func(body, h_add, (void*)&while_hits));
    CHECK_ST(run(body, (void*)k_inc, args, 1, 0, n, n, 0), EAGLE_BACKEND_OK);
    struct eagle_backend_conditional_desc inner;
    memset(&inner, 0, sizeof inner);
    inner.struct_size = sizeof inner;
    inner.device = -1;
    inner.origin = body;
    inner.count_ptr = u64(&if_guard);
    eagle_backend_conditional icond = NULL;
    OK(B.conditional_create(&inner, &icond));
    uint64_t ibody = 0;
    OK(B.conditional_begin(icond, &ibody));
    OK(B.host_func(ibody, h_add, (void*)&nested_hits));
    OK(B.conditional_end(icond));
    B.conditional_release(icond);
    OK(B.host_func(body, h_dec_u32, &while_guard));
    OK(B.capture_snapshot_nodes(body, &nodes, &count));
    CHECK(count == 4);
    int32_t t = -1;
    OK(B.is_node_toggleable(nodes[2], &t)); /* the nested conditional */
    CHECK(t == 0);
    OK(B.is_node_toggleable(nodes[1], &t));
    CHECK(t == 1);
    uint64_t kernel_node = nodes[1];
    uint64_t cond_node = nodes[2];
    B.free(nodes);
    OK(B.conditional_end(cond));
    B.conditional_release(cond);

    /* SWITCH over 3 cases, case 1 left empty */
    memset(&cdsc, 0, sizeof cdsc);
    cdsc.struct_size = sizeof cdsc;
    cdsc.device = -1;
    cdsc.origin = raw;
    cdsc.count_ptr = u64(&sel);
    cdsc.case_count = 3;
    cdsc.counter_ptr = u64(cell);
    CHECK_ST(B.conditional_create(&cdsc, &cond), EAGLE_BACKEND_INVALID_ARGUMENT);
    cdsc.counter_ptr = 0;
    OK(B.conditional_create(&cdsc, &cond));
    OK(B.conditional_begin(cond, &body)); /* case 0 */
    OK(B.host_func(body, h_add, (void*)&case_hits[0]));
    OK(B.conditional_begin_case(cond, 2, &body2));
    OK(B.host_func(body2, h_add, (void*)&case_hits[2]));
    OK(B.host_func(body2, h_add, (void*)&case_hits[2]));
    CHECK_ST(B.conditional_begin_case(cond, 2, &body2), EAGLE_BACKEND_INVALID_ARGUMENT);
    CHECK_ST(B.conditional_begin_case(cond, 3, &body2), EAGLE_BACKEND_INDEX);
    OK(B.conditional_end(cond));
    B.conditional_release(cond);
    _Atomic int64_t tail = 0;
    OK(B.host_func(raw, h_add, (void*)&tail));
    OK(B.capture_snapshot_nodes(raw, &nodes, &count));
    CHECK(count == 4);
    OK(B.is_node_toggleable(nodes[0], &t));
    CHECK(t == 0);
    B.free(nodes);
    eagle_backend_launcher l = end_to_launcher(c, raw);
    int64_t kn = 0;
    OK(B.launcher_kernel_node_count(l, &kn));
    CHECK(kn == 1);
    CHECK_ST(B.launcher_set_node_enabled(l, cond_node, 0), EAGLE_BACKEND_UNSUPPORTED);

    /* replay 1: IF off, WHILE guard 3 (3 iterations), nested IF off, SWITCH 0 */
    if_guard = 0; while_guard = 3; sel = 0;
    OK(B.launcher_launch(l));
    OK(B.launcher_synchronize(l));
    CHECK(if_hits == 0 && while_hits == 3 && nested_hits == 0 && cell[0] == 2 && cell[1] == 3);
    CHECK(arr[0] == 3 && arr[n - 1] == 3 && while_guard == 0);
    CHECK(case_hits[0] == 1 && case_hits[2] == 0 && tail == 1);
    /* replay 2: IF on, WHILE guard 100 capped at 5, nested IF on, SWITCH 2 */
    if_guard = 1; while_guard = 100; sel = 2;
    OK(B.launcher_launch(l));
    OK(B.launcher_synchronize(l));
    CHECK(if_hits == 1 && while_hits == 8 && nested_hits == 5 && cell[0] == 0 && cell[1] == 5);
    CHECK(while_guard == 95 && arr[5] == 8);
    CHECK(case_hits[0] == 1 && case_hits[2] == 2 && tail == 2);
    /* replay 3: baseline equal to the guard (no iteration), SWITCH 1 (empty) and 7 (none) */
    baseline = 95; sel = 1;
    OK(B.launcher_launch(l));
    OK(B.launcher_synchronize(l));
    CHECK(while_hits == 8 && cell[0] == 5 && cell[1] == 0 && if_hits == 2);
    CHECK(case_hits[0] == 1 && case_hits[2] == 2 && tail == 3);
    sel = 7; baseline = 0; while_guard = 1;
    OK(B.launcher_set_node_enabled(l, kernel_node, 0)); /* toggle a kernel inside a WHILE body */
    OK(B.launcher_launch(l));
    OK(B.launcher_synchronize(l));
    CHECK(while_hits == 9 && cell[1] == 1 && arr[0] == 8 && tail == 4);
    CHECK(case_hits[0] == 1 && case_hits[2] == 2);
    B.launcher_release(l);
    /* an open body at capture end breaks it */
    c = begin_capture(raw);
    cdsc.case_count = 0;
    OK(B.conditional_create(&cdsc, &cond));
    OK(B.conditional_begin(cond, &body));
    eagle_backend_captured cd = NULL;
    CHECK_ST(B.capturer_end(c, &cd), EAGLE_BACKEND_INVALID_ARGUMENT);
    B.conditional_release(cond);
    B.capturer_release(c);
    cdsc.counter_ptr = u64(cell);
    cdsc.loop_cap = 0;
    c = begin_capture(raw);
    CHECK_ST(B.conditional_create(&cdsc, &cond), EAGLE_BACKEND_INVALID_ARGUMENT); /* WHILE with cap 0 */
    cdsc.loop_cap = 1;
    cdsc.flags = 8;
    CHECK_ST(B.conditional_create(&cdsc, &cond), EAGLE_BACKEND_UNSUPPORTED);
    B.capturer_release(c);
    B.conditional_release(NULL);
    B.stream_release(s);
    free(arr);
}

/* reference compaction: flatnonzero */
static int64_t ref_compact(const uint8_t* m, int64_t n, int drop, int32_t* out) {
    int64_t k = 0;
    for (int64_t i = 0; i < n; ++i)
        if ((m[i] != 0) != drop) out[k++] = (int32_t)i;
    return k;
}

static void test_compact(void) {
    eagle_backend_stream s = new_stream(EAGLE_BACKEND_STREAM_NON_BLOCKING);
    uint64_t raw = raw_of(s);
    const int64_t sizes[] = {0, 1, 7, 256, 257, 4096, 100003, 3000017};
    unsigned seed = 12345;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; ++si) {
        const int64_t n = sizes[si];
        for (int drop = 0; drop < 2; ++drop) {
            for (int density = 0; density < 3; ++density) {
                uint8_t* m = malloc(n + 1);
                for (int64_t i = 0; i < n; ++i) {
                    seed = seed * 1103515245u + 12345u;
                    const unsigned r = (seed >> 16) % 100;
                    m[i] = density == 0 ? (r < 3 ? (uint8_t)(1 + r) : 0)
                                        : density == 1 ? (r < 50 ? 7 : 0) : (r < 99 ? 255 : 0);
                }
                int32_t* ref = malloc(sizeof(int32_t) * (n + 1));
                int32_t* out = malloc(sizeof(int32_t) * (n + 2));
                for (int64_t i = 0; i < n + 2; ++i) out[i] = -7;
                const int64_t k = ref_compact(m, n, drop, ref);
                uint32_t count = 12345, live = 0, span = (uint32_t)n, fire = 9;
                struct eagle_backend_compact_desc d;
                memset(&d, 0, sizeof d);
                d.struct_size = sizeof d;
                d.flags = drop ? EAGLE_BACKEND_COMPACT_MASK_IS_DROP : 0;
                d.device = -1;
                d.mask = u64(m);
                d.index_map = u64(out);
                d.count = u64(&count);
                d.n = n;
                d.stream = raw;
                d.live32 = u64(&live);
                d.span = u64(&span);
                d.fire = u64(&fire);
                d.theta = 0.25f;
                OK(B.compact_device(&d)); /* query */
                CHECK(d.scratch_bytes > 0);
                void* scratch = malloc(d.scratch_bytes);
                d.scratch = u64(scratch);
                OK(B.compact_device(&d));
                OK(B.stream_synchronize(s));
                CHECK(count == (uint32_t)k && live == (uint32_t)k);
                CHECK(memcmp(out, ref, sizeof(int32_t) * k) == 0);
                CHECK(out[k] == -7 && out[n] == -7 && out[n + 1] == -7); /* tail untouched */
                const uint32_t want_fire = ((uint32_t)k < span && (float)k <= 0.25f * (float)span) ? 1 : 0;
                CHECK(fire == want_fire);
                free(scratch);
                free(m);
                free(ref);
                free(out);
            }
        }
    }
    struct eagle_backend_compact_desc d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.n = (int64_t)1 << 31;
    d.stream = raw;
    CHECK_ST(B.compact_device(&d), EAGLE_BACKEND_UNSUPPORTED);
    d.n = 10;
    d.scratch = 64;
    d.scratch_bytes = 1;
    CHECK_ST(B.compact_device(&d), EAGLE_BACKEND_INVALID_ARGUMENT);
    d.flags = 2;
    CHECK_ST(B.compact_device(&d), EAGLE_BACKEND_UNSUPPORTED);
    CHECK_ST(B.compact_device(NULL), EAGLE_BACKEND_INVALID_ARGUMENT);
    B.stream_release(s);
}

static void test_reorder(void) {
    eagle_backend_stream s = new_stream(EAGLE_BACKEND_STREAM_NON_BLOCKING);
    uint64_t raw = raw_of(s);
    const int64_t sizes[] = {0, 1, 7, 257, 100003};
    unsigned seed = 777;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; ++si) {
        const int64_t n = sizes[si];
        const int64_t span0 = n - n / 5; /* positions from span on stay */
        uint8_t* m = malloc(n + 1);
        int32_t* perm = malloc(4 * (n + 1));
        int32_t* inv = malloc(4 * (n + 1));
        double* p8 = malloc(16 * (n + 1)); /* a (2, n) plane of doubles, pitch 8n */
        uint16_t* p2 = malloc(2 * (n + 1));
        uint8_t(*p16)[16] = malloc(16 * (n + 1));
        double* r8 = malloc(16 * (n + 1));
        int32_t* rperm = malloc(4 * (n + 1));
        for (int64_t i = 0; i < n; ++i) {
            seed = seed * 1103515245u + 12345u;
            m[i] = ((seed >> 16) % 3) != 0;
            perm[i] = (int32_t)(n - 1 - i);
            inv[n - 1 - i] = (int32_t)i;
            p8[i] = (double)i;
            p8[n + i] = -(double)i;
            p2[i] = (uint16_t)i;
            memset(p16[i], (int)(i & 0xff), 16);
        }
        /* reference stable partition over [0, span0) */
        int64_t k = 0;
        for (int64_t i = 0; i < span0; ++i)
            if (m[i]) { r8[k] = p8[i]; rperm[k] = perm[i]; k++; }
        const int64_t kept = k;
        for (int64_t i = 0; i < span0; ++i)
            if (!m[i]) { r8[k] = p8[i]; rperm[k] = perm[i]; k++; }
        for (int64_t i = span0; i < n; ++i) { r8[i] = p8[i]; rperm[i] = perm[i]; }
        struct eagle_backend_reorder_plane planes[3] = {
            {u64(p8), 8, 2, 8 * n}, {u64(p2), 2, 0, 0}, {u64(p16), 16, 1, 0}};
        uint32_t span = (uint32_t)span0, fire = 1;
        struct eagle_backend_reorder_desc d;
        memset(&d, 0, sizeof d);
        d.struct_size = sizeof d;
        d.device = -1;
        d.plane_count = 3;
        d.planes = planes;
        d.mask = u64(m);
        d.perm = u64(perm);
        d.inv = u64(inv);
        d.span = u64(&span);
        d.fire = u64(&fire);
        d.n = n;
        d.stream = raw;
        OK(B.reorder_device(&d));
        CHECK(d.scratch_bytes > 0);
        void* scratch = malloc(d.scratch_bytes);
        d.scratch = u64(scratch);
        /* captured, replayed twice: the second replay finds fire == 0 and does nothing */
        eagle_backend_capturer c = begin_capture(raw);
        OK(B.reorder_device(&d));
        eagle_backend_launcher l = end_to_launcher(c, raw);
        OK(B.launcher_launch(l));
        OK(B.launcher_launch(l));
        OK(B.launcher_synchronize(l));
        B.launcher_release(l);
        CHECK(fire == 0);
        CHECK(span == (uint32_t)(n ? kept : span0));
        int bad = 0;
        for (int64_t i = 0; i < n; ++i) {
            bad += p8[i] != r8[i];
            bad += p8[n + i] != -r8[i];
            bad += perm[i] != rperm[i];
            bad += inv[perm[i]] != i;
            bad += p2[i] != (uint16_t)(int64_t)r8[i];
            bad += p16[i][15] != (uint8_t)((int64_t)r8[i] & 0xff);
        }
        CHECK(bad == 0);
        free(scratch);
        free(m); free(perm); free(inv); free(p8); free(p2); free(p16); free(r8); free(rperm);
    }
    struct eagle_backend_reorder_plane bad_plane = {8, 3, 1, 0};
    struct eagle_backend_reorder_desc d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.plane_count = 1;
    d.planes = &bad_plane;
    d.n = 4;
    d.stream = raw;
    CHECK_ST(B.reorder_device(&d), EAGLE_BACKEND_UNSUPPORTED);
    d.plane_count = 0;
    d.n = (int64_t)1 << 31;
    CHECK_ST(B.reorder_device(&d), EAGLE_BACKEND_UNSUPPORTED);
    B.stream_release(s);
}

static void test_interop(void) {
    eagle_backend_stream p = new_stream(EAGLE_BACKEND_STREAM_NON_BLOCKING);
    eagle_backend_stream q = new_stream(EAGLE_BACKEND_STREAM_NON_BLOCKING);
    int64_t before = -1, after = -1;
    OK(B.event_pool_created(&before));
    atomic_store(&slow_flag, 0);
    atomic_store(&seen_flag, -1);
    OK(B.host_func(raw_of(p), h_slow_set, NULL));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    OK(B.fence(1, 0, (int64_t)raw_of(p), (int64_t)raw_of(q)));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 50); /* did not block */
    OK(B.host_func(raw_of(q), h_read, NULL));
    OK(B.stream_synchronize(q));
    CHECK(seen_flag == 1);
    OK(B.event_pool_created(&after));
    CHECK(after >= 1 && after >= before);
    /* the pool reuses fence objects */
    for (int i = 0; i < 5; ++i) {
        OK(B.host_func(raw_of(p), h_slow_set, NULL));
        OK(B.fence(1, 0, (int64_t)raw_of(p), (int64_t)raw_of(q)));
        OK(B.stream_synchronize(q));
    }
    int64_t later = -1;
    OK(B.event_pool_created(&later));
    CHECK(later <= after + 1);
    OK(B.fence(1, 0, EAGLE_BACKEND_STREAM_NONE, (int64_t)raw_of(q)));
    OK(B.fence(1, 0, (int64_t)raw_of(p), EAGLE_BACKEND_STREAM_NONE));
    OK(B.fence(1, 0, 0, (int64_t)raw_of(q))); /* 0: the default stream */
    CHECK_ST(B.fence(2, 0, (int64_t)raw_of(p), (int64_t)raw_of(q)), EAGLE_BACKEND_INTEROP);
    CHECK_ST(B.fence(1, 0, 999, (int64_t)raw_of(q)), EAGLE_BACKEND_INTEROP);
    CHECK_ST(B.event_pool_created(NULL), EAGLE_BACKEND_INVALID_ARGUMENT);
    B.stream_release(p);
    B.stream_release(q);
}

/* ------------------------------------------------------------------ host functions that wait */

/* What a host function does with the seam from inside its command. */
typedef struct {
    eagle_backend_stream own;     /* the stream it runs on */
    eagle_backend_stream other;   /* a stream it synchronizes, creates work on or releases */
    _Atomic int* go;              /* waited for (2 s at most) before acting, when not NULL */
    _Atomic int64_t* counter;     /* incremented by the work it enqueues */
    _Atomic int* arrived;         /* rendezvous of two host functions, when not NULL */
    int me;
    int32_t status;               /* what its synchronize returned */
    _Atomic int done;
} waiter;

static void wait_flag(_Atomic int* flag, int want) {
    for (int i = 0; i < 2000 && atomic_load(flag) != want; ++i) sleep_ms(1);
}

/* Creates a blocking stream, enqueues work on it and synchronizes it. */
static void h_new_stream_and_sync(void* p) {
    waiter* w = (waiter*)p;
    if (w->go) wait_flag(w->go, 1);
    struct eagle_backend_stream_desc d = {sizeof d, 0, -1, 0};
    eagle_backend_stream s = NULL;
    w->status = B.stream_create(&d, &s);
    if (w->status == EAGLE_BACKEND_OK) {
        uint64_t raw = 0;
        B.stream_ptr(s, &raw);
        w->status = B.host_func(raw, h_add, (void*)w->counter);
        if (w->status == EAGLE_BACKEND_OK) w->status = B.stream_synchronize(s);
        B.stream_release(s);
    }
    atomic_store(&w->done, 1);
}
static void h_sync_own(void* p) {
    waiter* w = (waiter*)p;
    w->status = B.stream_synchronize(w->own);
    atomic_store(&w->done, 1);
}
static void h_sync_other(void* p) {
    waiter* w = (waiter*)p;
    if (w->go) wait_flag(w->go, 1);
    if (w->arrived) {
        atomic_fetch_or(w->arrived, 1 << w->me);
        wait_flag(w->arrived, 3);
    }
    w->status = B.stream_synchronize(w->other);
    atomic_store(&w->done, 1);
}
static void h_release_other(void* p) {
    waiter* w = (waiter*)p;
    if (w->go) wait_flag(w->go, 1);
    B.stream_release(w->other);
    atomic_store(&w->done, 1);
}
static void h_release_own(void* p) {
    waiter* w = (waiter*)p;
    if (w->go) wait_flag(w->go, 1);
    B.stream_release(w->own);
    atomic_store(&w->done, 1);
}

static void test_host_function_waits(void) {
    _Atomic int64_t counter = 0;
    _Atomic int go = 0;
    /* 1. A host function on blocking stream A creates and synchronizes blocking stream S2 while the
     * default stream holds work ordered after A's host function and the main thread waits on
     * another blocking stream C ordered after the default stream: no deadlock, all of it runs. */
    {
        eagle_backend_stream a = new_stream(0), c = new_stream(0);
        waiter w = {a, NULL, &go, &counter, NULL, 0, -1, 0};
        OK(B.host_func(raw_of(a), h_new_stream_and_sync, &w));
        OK(B.host_func(0, h_add, (void*)&counter));        /* default: waits for A's host function */
        OK(B.host_func(raw_of(c), h_add, (void*)&counter)); /* C: waits for the default stream */
        atomic_store(&go, 1);
        OK(B.stream_synchronize(c));
        OK(B.stream_synchronize(a));
        CHECK(atomic_load(&w.done) == 1);
        OK(w.status);
        CHECK(atomic_load(&counter) == 3);
        B.stream_release(a);
        B.stream_release(c);
    }
    /* 2. Synchronizing its own stream returns at once: the commands before it have finished, the
     * ones behind it run after it returns. */
    {
        eagle_backend_stream a = new_stream(0);
        counter = 0;
        waiter w = {a, NULL, NULL, &counter, NULL, 0, -1, 0};
        OK(B.host_func(raw_of(a), h_add, (void*)&counter));
        OK(B.host_func(raw_of(a), h_sync_own, &w));
        OK(B.host_func(raw_of(a), h_add, (void*)&counter));
        OK(B.stream_synchronize(a));
        OK(w.status);
        CHECK(counter == 2);
        B.stream_release(a);
    }
    /* 3. Waiting for a stream fenced after itself is refused (INVALID_ARGUMENT), not a deadlock. */
    {
        eagle_backend_stream a = new_stream(EAGLE_BACKEND_STREAM_NON_BLOCKING);
        eagle_backend_stream b = new_stream(EAGLE_BACKEND_STREAM_NON_BLOCKING);
        go = 0;
        waiter w = {a, b, &go, &counter, NULL, 0, -1, 0};
        OK(B.host_func(raw_of(a), h_sync_other, &w));
        OK(B.fence(1, 0, (int64_t)raw_of(a), (int64_t)raw_of(b))); /* b waits for a's host function */
        atomic_store(&go, 1);
        OK(B.stream_synchronize(a));
        CHECK(w.status == EAGLE_BACKEND_INVALID_ARGUMENT);
        OK(B.stream_synchronize(b));
        B.stream_release(a);
        B.stream_release(b);
    }
    /* 4. Two host functions that synchronize each other's stream: one of them is refused. */
    {
        eagle_backend_stream a = new_stream(EAGLE_BACKEND_STREAM_NON_BLOCKING);
        eagle_backend_stream b = new_stream(EAGLE_BACKEND_STREAM_NON_BLOCKING);
        _Atomic int arrived = 0;
        waiter wa = {a, b, NULL, &counter, &arrived, 0, -1, 0};
        waiter wb = {b, a, NULL, &counter, &arrived, 1, -1, 0};
        OK(B.host_func(raw_of(a), h_sync_other, &wa));
        OK(B.host_func(raw_of(b), h_sync_other, &wb));
        OK(B.stream_synchronize(a));
        OK(B.stream_synchronize(b));
        CHECK((wa.status == EAGLE_BACKEND_INVALID_ARGUMENT) + (wb.status == EAGLE_BACKEND_INVALID_ARGUMENT) == 1);
        CHECK((wa.status == EAGLE_BACKEND_OK) + (wb.status == EAGLE_BACKEND_OK) == 1);
        B.stream_release(a);
        B.stream_release(b);
    }
    /* 5. Releasing, from a host function, a stream whose queue waits for that host function does
     * not wait: the released stream finishes its queue on its own. Releasing its own stream too. */
    {
        eagle_backend_stream a = new_stream(EAGLE_BACKEND_STREAM_NON_BLOCKING);
        eagle_backend_stream b = new_stream(EAGLE_BACKEND_STREAM_NON_BLOCKING);
        const uint64_t ra = raw_of(a), rb = raw_of(b);
        counter = 0;
        go = 0;
        waiter w = {a, b, &go, &counter, NULL, 0, -1, 0};
        OK(B.host_func(ra, h_release_other, &w));
        OK(B.fence(1, 0, (int64_t)ra, (int64_t)rb)); /* b waits for a's host function */
        OK(B.host_func(rb, h_add, (void*)&counter));  /* runs after the release, on b's worker */
        atomic_store(&go, 1);
        OK(B.stream_synchronize(a));
        CHECK(w.done == 1);
        for (int i = 0; i < 2000 && atomic_load(&counter) != 1; ++i) sleep_ms(1);
        CHECK(atomic_load(&counter) == 1);
        CHECK_ST(B.stream_synchronize(b), EAGLE_BACKEND_BAD_HANDLE);
        go = 0;
        waiter w2 = {a, NULL, &go, &counter, NULL, 0, -1, 0};
        OK(B.host_func(ra, h_release_own, &w2));
        OK(B.host_func(ra, h_add, (void*)&counter)); /* behind the release: still runs */
        atomic_store(&go, 1);
        for (int i = 0; i < 2000 && atomic_load(&counter) != 2; ++i) sleep_ms(1);
        CHECK(w2.done == 1);
        CHECK(atomic_load(&counter) == 2);
        CHECK_ST(B.stream_synchronize(a), EAGLE_BACKEND_BAD_HANDLE);
    }
}

/* ------------------------------------------------------------------ released and foreign handles */

/* Every handle type, used after its release, is BAD_HANDLE; so is a handle of another type and a
 * pointer the backend never handed out, even one whose first bytes look like a live object's. */
static void test_released_handles(void) {
    eagle_backend_stream s = new_stream(0);
    const uint64_t raw = raw_of(s);
    _Atomic int64_t hits = 0;
    int32_t i32 = 0;
    int64_t i64 = 0;
    uint64_t u = 0;

    eagle_backend_capturer cap = begin_capture(raw);
    uint32_t guard = 1;
    struct eagle_backend_conditional_desc cdsc;
    memset(&cdsc, 0, sizeof cdsc);
    cdsc.struct_size = sizeof cdsc;
    cdsc.device = -1;
    cdsc.origin = raw;
    cdsc.count_ptr = u64(&guard);
    eagle_backend_conditional cond = NULL;
    OK(B.conditional_create(&cdsc, &cond));
    OK(B.conditional_end(cond));
    B.conditional_release(cond);
    CHECK_ST(B.conditional_is_loop(cond, &i32), EAGLE_BACKEND_BAD_HANDLE);
    CHECK_ST(B.conditional_end(cond), EAGLE_BACKEND_BAD_HANDLE);
    B.conditional_release(cond); /* twice: harmless */
    OK(B.host_func(raw, h_add, (void*)&hits));
    eagle_backend_captured cd = NULL;
    OK(B.capturer_end(cap, &cd));
    B.capturer_release(cap);
    CHECK_ST(B.capturer_begin(cap), EAGLE_BACKEND_BAD_HANDLE);
    B.capturer_release(cap);
    B.captured_release(cd);
    CHECK_ST(B.captured_is_valid(cd, &i32), EAGLE_BACKEND_BAD_HANDLE);
    eagle_backend_graph g = NULL;
    CHECK_ST(B.graph_from_captured(cd, &g), EAGLE_BACKEND_BAD_HANDLE);
    B.captured_release(cd);

    struct eagle_backend_graph_desc gd = {sizeof gd, 0, -1, 0};
    OK(B.graph_create(&gd, &g));
    B.graph_release(g);
    CHECK_ST(B.graph_last_node(g, &i64), EAGLE_BACKEND_BAD_HANDLE);
    CHECK_ST(B.graph_stream(g, raw), EAGLE_BACKEND_BAD_HANDLE);
    B.graph_release(g);

    struct eagle_backend_fork_desc fd = {sizeof fd, 0, -1, 0, raw, 2};
    eagle_backend_fork f = NULL;
    OK(B.fork_create(&fd, &f));
    B.fork_release(f);
    CHECK_ST(B.fork_branch(f, 0, &u), EAGLE_BACKEND_BAD_HANDLE);
    B.fork_release(f);

    /* a handle of another type */
    CHECK_ST(B.fork_size((eagle_backend_fork)s, &u), EAGLE_BACKEND_BAD_HANDLE);
    CHECK_ST(B.graph_last_node((eagle_backend_graph)s, &i64), EAGLE_BACKEND_BAD_HANDLE);
    CHECK_ST(B.launcher_launch((eagle_backend_launcher)s), EAGLE_BACKEND_BAD_HANDLE);
    /* pointers it never handed out, filled with every 4-byte pattern a type tag might have */
    uint32_t fake[64];
    for (int k = 0; k < 64; ++k) fake[k] = 0x5354524du; /* "STRM" */
    CHECK_ST(B.stream_ptr((eagle_backend_stream)fake, &u), EAGLE_BACKEND_BAD_HANDLE);
    CHECK_ST(B.stream_synchronize((eagle_backend_stream)fake), EAGLE_BACKEND_BAD_HANDLE);
    B.stream_release((eagle_backend_stream)fake);
    CHECK(fake[0] == 0x5354524du && fake[63] == 0x5354524du); /* a foreign release touches nothing */
    CHECK_ST(B.fork_size((eagle_backend_fork)fake, &u), EAGLE_BACKEND_BAD_HANDLE);
    CHECK_ST(B.stream_ptr((eagle_backend_stream)(uintptr_t)0x10, &u), EAGLE_BACKEND_BAD_HANDLE);

    OK(B.stream_synchronize(s));
    CHECK(hits == 0); /* captured, never replayed */
    B.stream_release(s);
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s libeagle_cpu.so\n", argv[0]);
        return 2;
    }
    bind(argv[1]);
    alarm(100); /* a deadlock ends the run (SIGALRM) instead of hanging it */
    test_required();
    test_device();
    test_stream_and_exec();
    test_memory();
    test_capture_replay();
    test_logical_size_and_builder();
    test_fork();
    test_conditionals();
    test_compact();
    test_reorder();
    test_interop();
    test_host_function_waits();
    test_released_handles();
    if (failures) {
        printf("smoke: %d check(s) FAILED\n", failures);
        return 1;
    }
    printf("smoke: all checks passed (%zu symbols bound)\n", sizeof symbol_names / sizeof symbol_names[0]);
    return 0;
}
