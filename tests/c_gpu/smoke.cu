// smoke.cu -- exercises every symbol of libeagle_cuda.so on a real GPU and prints PASS/FAIL lines.
// Usage: smoke <path/to/kernels.ptx>. Exit status = number of failures.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "eagle_backend.h"

static int g_fail = 0, g_pass = 0;
#define EXPECT(cond, ...)                                              \
    do {                                                               \
        if (cond) { ++g_pass; printf("PASS "); printf(__VA_ARGS__); printf("\n"); } \
        else { ++g_fail; printf("FAIL "); printf(__VA_ARGS__); printf("  [last_error: %s]\n", eagle_backend_last_error()); } \
        fflush(stdout);                                                \
    } while (0)
#define OK(call) ((call) == EAGLE_BACKEND_OK)
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); exit(99); } } while (0)

static CUfunction f_add, f_fill, f_lanes, f_dec;
static uint64_t U(const void* p) { return (uint64_t)(uintptr_t)p; }

template <class T> T* dalloc(size_t n) { T* p; CK(cudaMalloc(&p, n * sizeof(T) + 16)); CK(cudaMemset(p, 0, n * sizeof(T) + 16)); return p; }
template <class T> std::vector<T> d2h(const T* p, size_t n) { std::vector<T> v(n); if (n) CK(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost)); return v; }
template <class T> void h2d(T* p, const std::vector<T>& v) { if (!v.empty()) CK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice)); }
static void setu32(uint32_t* p, uint32_t v) { CK(cudaMemcpy(p, &v, 4, cudaMemcpyHostToDevice)); }
static uint32_t getu32(const uint32_t* p) { uint32_t v; CK(cudaMemcpy(&v, p, 4, cudaMemcpyDeviceToHost)); return v; }

// run_device of a 2-argument kernel (pointer + u32 or pointer + pointer) over [base, base+count)
static int run2(CUfunction f, uint64_t stream, const void* a0, size_t s0, const void* a1, size_t s1, int64_t base,
                int64_t count, int64_t n, bool sizes = true) {
    uint64_t params[2] = {U(a0), U(a1)};
    uint64_t ps[2] = {s0, s1};
    eagle_backend_launch_desc d{};
    d.struct_size = sizeof d; d.device = -1; d.function = U(f); d.params = params; d.param_sizes = sizes ? ps : nullptr;
    d.nparams = 2; d.base = base; d.count = count; d.n_samples = n; d.stream = stream;
    int32_t launched = -1;
    int st = eagle_backend_run_device(&d, &launched);
    return st == 0 ? launched : -100 - st;
}
static int add(uint64_t s, uint32_t* buf, uint32_t v, int64_t n) { return run2(f_add, s, &buf, 8, &v, 4, 0, n, n); }

static eagle_backend_stream mkstream(uint64_t* raw) {
    eagle_backend_stream_desc d{}; d.struct_size = sizeof d; d.flags = EAGLE_BACKEND_STREAM_NON_BLOCKING; d.device = -1;
    eagle_backend_stream s = nullptr;
    if (!OK(eagle_backend_stream_create(&d, &s))) { printf("stream_create failed: %s\n", eagle_backend_last_error()); exit(98); }
    eagle_backend_stream_ptr(s, raw);
    return s;
}
static eagle_backend_capturer begin_capture(uint64_t raw) {
    eagle_backend_capturer_desc d{}; d.struct_size = sizeof d; d.device = -1; d.stream = raw;
    eagle_backend_capturer c = nullptr;
    eagle_backend_capturer_create(&d, &c);
    eagle_backend_capturer_begin(c);
    return c;
}
static eagle_backend_launcher end_to_launcher(eagle_backend_capturer c, uint64_t raw, eagle_backend_graph* gout = nullptr) {
    eagle_backend_captured cap = nullptr; eagle_backend_graph g = nullptr; eagle_backend_launcher l = nullptr;
    if (!OK(eagle_backend_capturer_end(c, &cap))) { printf("capturer_end: %s\n", eagle_backend_last_error()); }
    eagle_backend_capturer_release(c);
    if (!OK(eagle_backend_graph_from_captured(cap, &g))) { printf("graph_from_captured: %s\n", eagle_backend_last_error()); eagle_backend_captured_release(cap); return nullptr; }
    eagle_backend_graph_stream(g, raw);
    if (!OK(eagle_backend_graph_launcher(g, &l))) printf("graph_launcher: %s\n", eagle_backend_last_error());
    if (gout) *gout = g; else eagle_backend_graph_release(g);
    return l;
}
static void replay(eagle_backend_launcher l) {
    if (!OK(eagle_backend_launcher_launch(l))) printf("launch: %s\n", eagle_backend_last_error());
    if (!OK(eagle_backend_launcher_synchronize(l))) printf("sync: %s\n", eagle_backend_last_error());
}

static void host_count(void* p) { ++*static_cast<int*>(p); }

int main(int argc, char** argv) {
    if (argc < 2) { printf("usage: smoke kernels.ptx\n"); return 2; }
    // ---- required
    printf("version %#x\n", eagle_backend_version());
    EXPECT(eagle_backend_version() == EAGLE_BACKEND_VERSION, "version");
    int ps = eagle_backend_probe();
    EXPECT(ps == 0, "probe OK (%d: %s)", ps, eagle_backend_last_error());
    if (ps) return 1;
    struct eagle_backend_build_info bi{}; bi.struct_size = sizeof bi;
    EXPECT(OK(eagle_backend_build_info(&bi)) && !strcmp(bi.backend_kind, "cuda"), "build_info kind=%s archs=%s cudart=%d", bi.backend_kind, bi.archs, bi.cudart_version);
    uint64_t caps = 0; eagle_backend_capabilities(&caps);
    EXPECT(caps == 0x1eff, "capabilities %#llx", (unsigned long long)caps);
    int32_t types[8], nt = 0; eagle_backend_device_types(types, 8, &nt);
    EXPECT(nt == 3 && types[0] == 2 && types[1] == 3 && types[2] == 13, "device_types %d", nt);
    struct eagle_backend_device_props dp{}; dp.struct_size = sizeof dp;
    EXPECT(OK(eagle_backend_device_props(0, &dp)) && dp.sm_count > 0, "device_props %s cc %d.%d sms %d clk %d kHz mem %d kHz bus %d peak %.0f GB/s sp %.1f TF dp %.1f TF",
           dp.name, dp.cc_major, dp.cc_minor, dp.sm_count, dp.clock_rate_khz, dp.memory_clock_rate_khz, dp.memory_bus_width_bits,
           dp.peak_bytes_per_s / 1e9, dp.peak_flops_sp / 1e12, dp.peak_flops_dp / 1e12);
    EXPECT(eagle_backend_device_props(99, &dp) == EAGLE_BACKEND_INDEX, "device_props(99) INDEX");

    CK(cudaFree(0));
    CUmodule mod;
    {
        FILE* f = fopen(argv[1], "rb"); if (!f) { printf("no ptx %s\n", argv[1]); return 2; }
        std::vector<char> ptx(1 << 20); size_t n = fread(ptx.data(), 1, ptx.size() - 1, f); ptx[n] = 0; fclose(f);
        // driver calls through the runtime's entry-point lookup (no link against libcuda)
        using PLoad = CUresult (*)(CUmodule*, const void*);
        using PGet = CUresult (*)(CUfunction*, CUmodule, const char*);
        void *pl = nullptr, *pg = nullptr;
        CK(cudaGetDriverEntryPointByVersion("cuModuleLoadData", &pl, 2000, cudaEnableDefault, nullptr));
        CK(cudaGetDriverEntryPointByVersion("cuModuleGetFunction", &pg, 2000, cudaEnableDefault, nullptr));
        auto cuModuleLoadData = (PLoad)pl; auto cuModuleGetFunction = (PGet)pg;
        CUresult r = cuModuleLoadData(&mod, ptx.data());
        EXPECT(r == CUDA_SUCCESS, "cuModuleLoadData(PTX) %d", (int)r);
        cuModuleGetFunction(&f_add, mod, "k_add"); cuModuleGetFunction(&f_fill, mod, "k_fill");
        cuModuleGetFunction(&f_lanes, mod, "k_lanes"); cuModuleGetFunction(&f_dec, mod, "k_dec");
    }

    // ---- streams + exec
    uint64_t s1, s2; eagle_backend_stream st1 = mkstream(&s1), st2 = mkstream(&s2);
    EXPECT(s1 != 0 && s2 != 0 && s1 != s2, "stream_create/stream_ptr");
    {
        eagle_backend_stream_desc d{}; d.struct_size = sizeof d; d.flags = 2; d.device = -1; eagle_backend_stream s = nullptr;
        EXPECT(eagle_backend_stream_create(&d, &s) == EAGLE_BACKEND_UNSUPPORTED, "stream flag 2 UNSUPPORTED");
        d.flags = 0; d.device = 99;
        EXPECT(eagle_backend_stream_create(&d, &s) == EAGLE_BACKEND_INDEX, "stream device 99 INDEX");
    }
    const int N = 100000;
    uint32_t* buf = dalloc<uint32_t>(N);
    {
        uint32_t v7 = 7;
        int a = run2(f_fill, s1, &buf, 8, &v7, 4, 0, N, N);
        int b = add(s1, buf, 5, N);
        int c = run2(f_add, s1, &buf, 8, &v7, 4, 10, 0, N);
        int d0 = run2(f_add, s1, &buf, 8, &v7, 4, 0, N, N, false);  // param sizes from cuFuncGetParamInfo
        EXPECT(OK(eagle_backend_stream_synchronize(st1)), "stream_synchronize");
        auto h = d2h(buf, N);
        bool good = a == 1 && b == 1 && c == 0 && d0 == 1;
        for (int i = 0; i < N; ++i) good &= h[i] == 19;
        EXPECT(good, "stream order fill,add,add (run_device launched=%d,%d,%d,%d, buf[0]=%u)", a, b, c, d0, h[0]);
        EXPECT(run2(f_add, s1, &buf, 8, &v7, 4, 5, 10, 10) == -100 - EAGLE_BACKEND_INVALID_ARGUMENT, "bad partition INVALID_ARGUMENT");
        CK(cudaMemset(buf, 0, N * 4));
    }

    // ---- capture + replay, empty capture
    {
        eagle_backend_capturer c = begin_capture(s1);
        add(s1, buf, 1, N);
        eagle_backend_launcher l = end_to_launcher(c, s1);
        for (int i = 0; i < 3; ++i) eagle_backend_launcher_launch(l);
        eagle_backend_launcher_synchronize(l);
        auto h = d2h(buf, N);
        EXPECT(l && h[0] == 3 && h[N - 1] == 3, "capture + 3 replays -> %u", h[0]);
        int64_t kc = -1; eagle_backend_launcher_kernel_node_count(l, &kc);
        EXPECT(kc == 1, "kernel_node_count %lld", (long long)kc);
        eagle_backend_launcher_release(l);
        c = begin_capture(s1);
        EXPECT(eagle_backend_capturer_begin(c) == EAGLE_BACKEND_INVALID_ARGUMENT, "capturer_begin twice INVALID_ARGUMENT");
        EXPECT(eagle_backend_stream_synchronize(st1) == EAGLE_BACKEND_INVALID_ARGUMENT, "stream_synchronize under capture INVALID_ARGUMENT");
        eagle_backend_captured cap = nullptr; eagle_backend_capturer_end(c, &cap); eagle_backend_capturer_release(c);
        int32_t valid = -1; eagle_backend_captured_is_valid(cap, &valid);
        eagle_backend_graph g = nullptr;
        EXPECT(valid == 0 && eagle_backend_graph_from_captured(cap, &g) == EAGLE_BACKEND_INVALID_ARGUMENT, "empty capture is_valid 0, graph_from_captured INVALID_ARGUMENT");
        eagle_backend_captured_release(cap);
        CK(cudaMemset(buf, 0, N * 4));
    }

    // ---- fork/join eager and captured
    {
        uint32_t* A = dalloc<uint32_t>(N); uint32_t* B = dalloc<uint32_t>(N);
        for (int pass = 0; pass < 2; ++pass) {
            eagle_backend_capturer c = pass ? begin_capture(s1) : nullptr;
            eagle_backend_fork_desc fd{}; fd.struct_size = sizeof fd; fd.device = -1; fd.origin = s1; fd.branch_count = 2;
            eagle_backend_fork f = nullptr; eagle_backend_fork_create(&fd, &f);
            uint64_t b0 = 0, b1 = 0, o = 0, sz = 0; int32_t fk = -1;
            eagle_backend_fork_fork(f);
            eagle_backend_fork_branch(f, 0, &b0); eagle_backend_fork_branch(f, 1, &b1); eagle_backend_fork_origin(f, &o);
            eagle_backend_fork_size(f, &sz); eagle_backend_fork_forked(f, &fk);
            uint64_t bx; int idx = eagle_backend_fork_branch(f, 2, &bx);
            add(b0, A, 2, N); add(b1, B, 3, N);
            eagle_backend_fork_join(f);
            int32_t fk2 = -1; eagle_backend_fork_forked(f, &fk2);
            add(s1, A, 1, N);  // after the join: A = 3 per pass
            eagle_backend_fork_release(f);
            if (pass) { eagle_backend_launcher l = end_to_launcher(c, s1); replay(l); eagle_backend_launcher_release(l); }
            else eagle_backend_stream_synchronize(st1);
            auto ha = d2h(A, N), hb = d2h(B, N);
            EXPECT(ha[N - 1] == 3u * (pass + 1) && hb[N - 1] == 3u * (pass + 1) && o == s1 && sz == 2 && fk == 1 && fk2 == 0 && idx == EAGLE_BACKEND_INDEX,
                   "fork/join %s: A=%u B=%u", pass ? "captured" : "eager", ha[N - 1], hb[N - 1]);
        }
        cudaFree(A); cudaFree(B);
    }

    // ---- conditionals
    uint32_t* cnt = dalloc<uint32_t>(1); uint32_t* basel = dalloc<uint32_t>(1); uint32_t* cell = dalloc<uint32_t>(2);
    {   // IF
        eagle_backend_capturer c = begin_capture(s1);
        eagle_backend_conditional_desc cd{}; cd.struct_size = sizeof cd; cd.device = -1; cd.origin = s1; cd.count_ptr = U(cnt); cd.baseline_ptr = U(basel);
        eagle_backend_conditional k = nullptr;
        int st = eagle_backend_conditional_create(&cd, &k);
        if (st) printf("conditional_create: %s\n", eagle_backend_last_error());
        uint64_t body = 0, body2 = 0; int32_t loop = -1;
        eagle_backend_conditional_begin(k, &body); eagle_backend_conditional_body_stream(k, &body2); eagle_backend_conditional_is_loop(k, &loop);
        add(body, buf, 1, N);
        int hf = eagle_backend_host_func(body, host_count, nullptr);
        EXPECT(hf == EAGLE_BACKEND_INVALID_ARGUMENT, "host_func inside a conditional body INVALID_ARGUMENT: %s", eagle_backend_last_error());
        eagle_backend_conditional_end(k); eagle_backend_conditional_release(k);
        eagle_backend_launcher l = end_to_launcher(c, s1);
        int64_t kc = -1; eagle_backend_launcher_kernel_node_count(l, &kc);
        setu32(cnt, 0); setu32(basel, 0); replay(l); uint32_t r0 = d2h(buf, 1)[0];
        setu32(cnt, 5); replay(l); uint32_t r1 = d2h(buf, 1)[0];
        setu32(basel, 5); replay(l); uint32_t r2 = d2h(buf, 1)[0];
        EXPECT(st == 0 && body != 0 && body == body2 && loop == 0 && r0 == 0 && r1 == 1 && r2 == 1 && kc == 1,
               "IF: guard 0!=0 ->%u, 5!=0 ->%u, 5!=5 ->%u (kernel nodes %lld)", r0, r1, r2, (long long)kc);
        eagle_backend_launcher_release(l);
        CK(cudaMemset(buf, 0, N * 4));
        uint64_t bs; eagle_backend_conditional_desc bad = cd;
        eagle_backend_conditional kk = nullptr;
        EXPECT(eagle_backend_conditional_create(&bad, &kk) == EAGLE_BACKEND_INVALID_ARGUMENT, "conditional_create without capture INVALID_ARGUMENT");
        (void)bs;
    }
    {   // WHILE: body decrements cnt and adds 1; guard cnt != 0
        eagle_backend_capturer c = begin_capture(s1);
        eagle_backend_conditional_desc cd{}; cd.struct_size = sizeof cd; cd.device = -1; cd.origin = s1; cd.count_ptr = U(cnt);
        cd.counter_ptr = U(cell); cd.loop_cap = 100;
        eagle_backend_conditional k = nullptr;
        int st = eagle_backend_conditional_create(&cd, &k);
        if (st) printf("conditional_create: %s\n", eagle_backend_last_error());
        uint64_t body = 0; int32_t loop = -1;
        eagle_backend_conditional_begin(k, &body); eagle_backend_conditional_is_loop(k, &loop);
        uint64_t params[1] = {U(&cnt)};
        eagle_backend_launch_desc d{}; d.struct_size = sizeof d; d.device = -1; d.function = U(f_dec); d.params = params; d.nparams = 1;
        d.count = 1; d.n_samples = 1; d.stream = body; int32_t la; eagle_backend_run_device(&d, &la);
        add(body, buf, 1, N);
        eagle_backend_conditional_end(k); eagle_backend_conditional_release(k);
        eagle_backend_launcher l = end_to_launcher(c, s1);
        setu32(cnt, 5); replay(l);
        auto cl = d2h(cell, 2); uint32_t b = d2h(buf, 1)[0];
        EXPECT(st == 0 && loop == 1 && cl[0] == 95 && cl[1] == 5 && b == 5 && getu32(cnt) == 0, "WHILE count=5 cap=100: cell=[%u,%u] buf=%u", cl[0], cl[1], b);
        setu32(cnt, 250); replay(l);
        cl = d2h(cell, 2); b = d2h(buf, 1)[0];
        EXPECT(cl[0] == 0 && cl[1] == 100 && b == 105 && getu32(cnt) == 150, "WHILE count=250 cap=100: cell=[%u,%u] buf=%u cnt=%u", cl[0], cl[1], b, getu32(cnt));
        setu32(cnt, 0); replay(l);
        cl = d2h(cell, 2);
        EXPECT(cl[0] == 100 && cl[1] == 0 && d2h(buf, 1)[0] == 105, "WHILE count=0: cell=[%u,%u]", cl[0], cl[1]);
        eagle_backend_launcher_release(l);
        CK(cudaMemset(buf, 0, N * 4));
    }
    {   // SWITCH with 3 cases
        eagle_backend_capturer c = begin_capture(s1);
        eagle_backend_conditional_desc cd{}; cd.struct_size = sizeof cd; cd.device = -1; cd.origin = s1; cd.count_ptr = U(cnt); cd.case_count = 3;
        eagle_backend_conditional k = nullptr;
        int st = eagle_backend_conditional_create(&cd, &k);
        if (st) printf("conditional_create: %s\n", eagle_backend_last_error());
        uint64_t body = 0;
        eagle_backend_conditional_begin(k, &body); add(body, buf, 1, N);
        eagle_backend_conditional_begin_case(k, 2, &body); add(body, buf, 100, N);
        int again = eagle_backend_conditional_begin_case(k, 2, &body);
        int oob = eagle_backend_conditional_begin_case(k, 3, &body);
        eagle_backend_conditional_begin_case(k, 1, &body); add(body, buf, 10, N);
        eagle_backend_conditional_end(k); eagle_backend_conditional_release(k);
        eagle_backend_launcher l = end_to_launcher(c, s1);
        uint32_t r[4]; uint32_t sel[4] = {1, 2, 7, 0};
        for (int i = 0; i < 4; ++i) { setu32(cnt, sel[i]); replay(l); r[i] = d2h(buf, N)[N - 1]; }
        EXPECT(st == 0 && again == EAGLE_BACKEND_INVALID_ARGUMENT && oob == EAGLE_BACKEND_INDEX && r[0] == 10 && r[1] == 110 && r[2] == 110 && r[3] == 111,
               "SWITCH: sel 1,2,7,0 -> %u,%u,%u,%u", r[0], r[1], r[2], r[3]);
        eagle_backend_launcher_release(l);
        CK(cudaMemset(buf, 0, N * 4));
    }

    // ---- attribution + toggling
    {
        eagle_backend_capturer c = begin_capture(s1);
        add(s1, buf, 1, N);
        uint64_t* nodes = nullptr; int64_t nn = 0;
        int st = eagle_backend_capture_snapshot_nodes(s1, &nodes, &nn);
        add(s1, buf, 10, N);
        int32_t tog = -1; if (nn > 0) eagle_backend_is_node_toggleable(nodes[nn - 1], &tog);
        uint64_t first = nn > 0 ? nodes[nn - 1] : 1;
        uint64_t* n2 = nullptr; int64_t nn2 = 0; eagle_backend_capture_snapshot_nodes(s1, &n2, &nn2);
        eagle_backend_launcher l = end_to_launcher(c, s1);
        int se = eagle_backend_launcher_set_node_enabled(l, first, 0);
        replay(l); uint32_t r0 = d2h(buf, 1)[0];
        eagle_backend_launcher_set_node_enabled(l, first, 1);
        replay(l); uint32_t r1 = d2h(buf, 1)[0];
        int bad = eagle_backend_launcher_set_node_enabled(l, 12345, 0);
        EXPECT(st == 0 && nn == 1 && nn2 == 2 && tog == 1 && se == 0 && r0 == 10 && r1 == 21 && bad == EAGLE_BACKEND_INVALID_ARGUMENT,
               "snapshot %lld then %lld nodes, toggleable %d, disabled ->%u, enabled ->%u", (long long)nn, (long long)nn2, tog, r0, r1);
        uint64_t* n3 = nullptr; int64_t nn3 = 0;
        EXPECT(eagle_backend_capture_snapshot_nodes(s1, &n3, &nn3) == EAGLE_BACKEND_INVALID_ARGUMENT, "snapshot when not capturing INVALID_ARGUMENT");
        eagle_backend_free(nodes); eagle_backend_free(n2);
        eagle_backend_launcher_release(l);
        CK(cudaMemset(buf, 0, N * 4));
    }

    // ---- logical size (PTX kernel), graph builder
    {
        unsigned long long* acc = dalloc<unsigned long long>(1); int64_t* tri = dalloc<int64_t>(3);
        eagle_backend_capturer c = begin_capture(s1);
        run2(f_lanes, s1, &acc, 8, &tri, 8, 0, 1000, 1000);
        eagle_backend_launcher l = end_to_launcher(c, s1);
        replay(l); auto a0 = d2h(acc, 1)[0];
        int ss = eagle_backend_launcher_set_logical_size(l, 300);
        replay(l); auto a1 = d2h(acc, 1)[0]; auto t1 = d2h(tri, 3);
        eagle_backend_launcher_set_logical_size(l, 0);
        replay(l); auto a2 = d2h(acc, 1)[0];
        eagle_backend_launcher_set_logical_size(l, -1);
        replay(l); auto a3 = d2h(acc, 1)[0]; auto t3 = d2h(tri, 3);
        EXPECT(ss == 0 && a0 == 1000 && a1 == 1300 && t1[1] == 300 && t1[2] == 300 && a2 == 1300 && a3 == 2300 && t3[2] == 1000,
               "logical size: 1000 lanes, 300 ->+%llu (triple %lld,%lld,%lld), 0 ->+%llu, restore ->+%llu",
               a1 - a0, (long long)t1[0], (long long)t1[1], (long long)t1[2], a2 - a1, a3 - a2);
        EXPECT(eagle_backend_launcher_set_logical_size(l, 1ll << 32) == EAGLE_BACKEND_INVALID_ARGUMENT, "logical size 2^32 INVALID_ARGUMENT");
        eagle_backend_launcher_release(l);
        // graph_create + add_node: two captures appended as child graphs
        eagle_backend_graph_desc gd{}; gd.struct_size = sizeof gd; gd.device = -1;
        eagle_backend_graph g = nullptr; eagle_backend_graph_create(&gd, &g);
        int64_t last0 = 5; eagle_backend_graph_last_node(g, &last0);
        eagle_backend_launcher le = nullptr;
        int empty = eagle_backend_graph_launcher(g, &le);
        for (int i = 0; i < 2; ++i) {
            eagle_backend_capturer cc = begin_capture(s1);
            if (i == 0) add(s1, buf, 1, N); else run2(f_lanes, s1, &acc, 8, &tri, 8, 0, 1000, 1000);
            eagle_backend_captured cap = nullptr; eagle_backend_capturer_end(cc, &cap); eagle_backend_capturer_release(cc);
            if (!OK(eagle_backend_graph_add_node(g, cap))) printf("graph_add_node: %s\n", eagle_backend_last_error());
        }
        int64_t last = -5; eagle_backend_graph_last_node(g, &last);
        eagle_backend_graph_stream(g, s1);
        eagle_backend_launcher l2 = nullptr; eagle_backend_graph_launcher(g, &l2);
        eagle_backend_graph_release(g);  // launchers outlive their graph
        CK(cudaMemset(acc, 0, 8));
        replay(l2);
        int64_t kc = -1; eagle_backend_launcher_kernel_node_count(l2, &kc);
        EXPECT(last0 == -1 && empty == EAGLE_BACKEND_INVALID_ARGUMENT && last == 1 && d2h(buf, 1)[0] == 1 && d2h(acc, 1)[0] == 1000 && kc == 2,
               "graph_create/add_node x2: last %lld, kernel nodes %lld, buf %u, lanes %llu", (long long)last, (long long)kc, d2h(buf, 1)[0], d2h(acc, 1)[0]);
        int sl = eagle_backend_launcher_set_logical_size(l2, 10);
        replay(l2);
        EXPECT(sl == 0 && d2h(acc, 1)[0] == 1010, "logical size inside a child graph node: %d, lanes %llu", sl, d2h(acc, 1)[0]);
        eagle_backend_launcher_release(l2);
        cudaFree(acc); cudaFree(tri);
        CK(cudaMemset(buf, 0, N * 4));
    }

    // ---- compaction vs a CPU reference
    {
        std::mt19937 rng(7);
        const int64_t sizes[] = {0, 1, 7, 256, 257, 4096, 100003, 1 << 20};
        const int64_t NMAX = 1 << 20;
        uint8_t* mask = dalloc<uint8_t>(NMAX); int32_t* imap = dalloc<int32_t>(NMAX);
        uint32_t *count = dalloc<uint32_t>(1), *live = dalloc<uint32_t>(1), *span = dalloc<uint32_t>(1), *fire = dalloc<uint32_t>(1);
        eagle_backend_compact_desc q{}; q.struct_size = sizeof q; q.device = -1; q.n = NMAX; q.stream = s1;
        eagle_backend_compact_device(&q);
        void* scratch; CK(cudaMalloc(&scratch, q.scratch_bytes));
        printf("compact scratch for 2^20: %lld bytes\n", (long long)q.scratch_bytes);
        for (int drop = 0; drop < 2; ++drop)
            for (int64_t n : sizes) {
                std::vector<uint8_t> hm(n);
                for (auto& b : hm) b = (rng() % 2) ? (uint8_t)(1 + rng() % 200) : 0;
                h2d(mask, hm);
                CK(cudaMemset(imap, 0xff, NMAX * 4));
                setu32(span, (uint32_t)n); setu32(fire, 7);
                eagle_backend_compact_desc d{}; d.struct_size = sizeof d; d.device = -1; d.flags = drop; d.mask = U(mask);
                d.index_map = U(imap); d.count = U(count); d.scratch = U(scratch); d.scratch_bytes = q.scratch_bytes; d.n = n; d.stream = s1;
                d.live32 = U(live); d.span = U(span); d.fire = U(fire); d.theta = 0.6f;
                int st = eagle_backend_compact_device(&d);
                eagle_backend_stream_synchronize(st1);
                std::vector<int32_t> ref;
                for (int64_t i = 0; i < n; ++i) if ((hm[i] != 0) != (drop != 0)) ref.push_back((int32_t)i);
                auto got = d2h(imap, n);
                uint32_t k = getu32(count);
                bool same = st == 0 && k == ref.size() && std::equal(ref.begin(), ref.end(), got.begin()) && getu32(live) == k;
                for (int64_t i = ref.size(); i < n && same; ++i) same &= got[i] == -1;  // tail untouched
                uint32_t want_fire = (k < (uint32_t)n && k <= 0.6f * (float)n) ? 1u : 0u;
                same &= getu32(fire) == want_fire;
                EXPECT(same, "compact n=%lld %s: count %u (ref %zu) fire %u", (long long)n, drop ? "DROP" : "KEEP", k, ref.size(), getu32(fire));
            }
        // captured compaction replays
        eagle_backend_capturer c = begin_capture(s1);
        eagle_backend_compact_desc d{}; d.struct_size = sizeof d; d.device = -1; d.mask = U(mask); d.index_map = U(imap); d.count = U(count);
        d.scratch = U(scratch); d.scratch_bytes = q.scratch_bytes; d.n = 4096; d.stream = s1;
        int st = eagle_backend_compact_device(&d);
        eagle_backend_launcher l = end_to_launcher(c, s1);
        std::vector<uint8_t> hm(4096, 0); hm[5] = 1; hm[4000] = 1; h2d(mask, hm); replay(l);
        uint32_t k1 = getu32(count);
        hm[77] = 1; h2d(mask, hm); replay(l);
        auto got = d2h(imap, 3);
        EXPECT(st == 0 && k1 == 2 && getu32(count) == 3 && got[0] == 5 && got[1] == 77 && got[2] == 4000, "compaction captured and replayed: %u then %u", k1, getu32(count));
        eagle_backend_launcher_release(l);
        eagle_backend_compact_desc big{}; big.struct_size = sizeof big; big.n = 1ll << 31; big.scratch = 1;
        EXPECT(eagle_backend_compact_device(&big) == EAGLE_BACKEND_UNSUPPORTED, "compact n=2^31 UNSUPPORTED");
        cudaFree(scratch); cudaFree(mask); cudaFree(imap);

        // ---- reorder vs a CPU reference, fire gating
        const int n = 1000; const uint32_t spanv = 800;
        uint8_t* m = dalloc<uint8_t>(n); int32_t* perm = dalloc<int32_t>(n); int32_t* inv = dalloc<int32_t>(n);
        std::vector<uint8_t> hmask(n); for (auto& b : hmask) b = rng() % 3 == 0;
        h2d(m, hmask);
        std::vector<int32_t> id(n); for (int i = 0; i < n; ++i) id[i] = i;
        const uint32_t es[] = {1, 2, 4, 8, 16, 4};
        const uint32_t widths[] = {1, 1, 1, 1, 1, 3};
        std::vector<void*> pd; std::vector<std::vector<uint8_t>> ph;
        eagle_backend_reorder_plane planes[6];
        for (int p = 0; p < 6; ++p) {
            size_t bytes = (size_t)es[p] * n * widths[p];
            std::vector<uint8_t> h(bytes); for (auto& b : h) b = rng();
            void* dptr; CK(cudaMalloc(&dptr, bytes)); CK(cudaMemcpy(dptr, h.data(), bytes, cudaMemcpyHostToDevice));
            pd.push_back(dptr); ph.push_back(h);
            planes[p] = {U(dptr), es[p], widths[p], 0};
        }
        for (int gate = 0; gate < 2; ++gate) {
            h2d(perm, id); h2d(inv, id); setu32(span, spanv); setu32(fire, gate);
            eagle_backend_reorder_desc rq{}; rq.struct_size = sizeof rq; rq.device = -1; rq.plane_count = 6; rq.planes = planes;
            rq.mask = U(m); rq.perm = U(perm); rq.inv = U(inv); rq.span = U(span); rq.fire = U(fire); rq.n = n; rq.stream = s1;
            eagle_backend_reorder_device(&rq);
            void* rs; CK(cudaMalloc(&rs, rq.scratch_bytes)); rq.scratch = U(rs);
            int st2 = eagle_backend_reorder_device(&rq);
            eagle_backend_stream_synchronize(st1);
            // reference: kept positions (< span) first in order, then dropped, tail untouched
            std::vector<int> order;
            for (int p = 0; p < (int)spanv; ++p) if (hmask[p]) order.push_back(p);
            uint32_t kept = order.size();
            for (int p = 0; p < (int)spanv; ++p) if (!hmask[p]) order.push_back(p);
            for (int p = spanv; p < n; ++p) order.push_back(p);
            if (!gate) { order.clear(); for (int p = 0; p < n; ++p) order.push_back(p); }
            bool good = st2 == 0;
            for (int p = 0; p < 6; ++p) {
                size_t bytes = (size_t)es[p] * n * widths[p];
                std::vector<uint8_t> got(bytes); CK(cudaMemcpy(got.data(), pd[p], bytes, cudaMemcpyDeviceToHost));
                for (uint32_t r = 0; r < widths[p]; ++r)
                    for (int q = 0; q < n; ++q)
                        good &= !memcmp(&got[((size_t)r * n + q) * es[p]], &ph[p][((size_t)r * n + order[q]) * es[p]], es[p]);
            }
            auto hp = d2h(perm, n), hi = d2h(inv, n);
            for (int q = 0; q < n; ++q) { good &= hp[q] == order[q]; good &= hi[hp[q]] == q; }
            uint32_t sp = getu32(span), fr = getu32(fire);
            good &= gate ? (sp == kept && fr == 0) : (sp == spanv && fr == 0);
            EXPECT(good, "reorder fire=%d: span -> %u (kept %u), fire -> %u, planes 1/2/4/8/16 B + width 3", gate, sp, kept, fr);
            cudaFree(rs);
        }
        for (void* p : pd) cudaFree(p);
    }

    // ---- minor 6: memcpy, host_alloc, host_func
    {
        const size_t B = 1 << 20;
        void *h1 = nullptr, *h2 = nullptr;
        int a1 = eagle_backend_host_alloc(B, 0, &h1), a2 = eagle_backend_host_alloc(B, 0, &h2);
        unsigned int hflags = 0; cudaHostGetFlags(&hflags, h1);
        void* d1; void* d2; CK(cudaMalloc(&d1, B)); CK(cudaMalloc(&d2, B));
        for (size_t i = 0; i < B; ++i) ((uint8_t*)h1)[i] = (uint8_t)(i * 31 + 1);
        int m1 = eagle_backend_memcpy(U(d1), U(h1), B, EAGLE_BACKEND_MEMCPY_H2D, s1);
        int m2 = eagle_backend_memcpy(U(d2), U(d1), B, EAGLE_BACKEND_MEMCPY_D2D, s1);
        int m3 = eagle_backend_memcpy(U(h2), U(d2), B, EAGLE_BACKEND_MEMCPY_D2H, s1);
        eagle_backend_stream_synchronize(st1);
        bool same = !memcmp(h1, h2, B);
        memset(h2, 0, B);
        int m4 = eagle_backend_memcpy(U(h2), U(h1), B, EAGLE_BACKEND_MEMCPY_H2H, s1);
        eagle_backend_stream_synchronize(st1);
        same &= !memcmp(h1, h2, B);
        int bad = eagle_backend_memcpy(U(h2), U(h1), B, 9, s1);
        void* z = nullptr;
        EXPECT(a1 == 0 && a2 == 0 && m1 == 0 && m2 == 0 && m3 == 0 && m4 == 0 && same && bad == EAGLE_BACKEND_INVALID_ARGUMENT &&
               eagle_backend_host_alloc(0, 0, &z) == EAGLE_BACKEND_INVALID_ARGUMENT,
               "memcpy H2D,D2D,D2H,H2H through host_alloc memory (page-locked flags %#x)", hflags);
        eagle_backend_host_free(h1); eagle_backend_host_free(h2); eagle_backend_host_free(nullptr);
        cudaFree(d1); cudaFree(d2);
        static int calls = 0;
        eagle_backend_host_func(s1, host_count, &calls);
        eagle_backend_stream_synchronize(st1);
        eagle_backend_capturer c = begin_capture(s1);
        int hs = eagle_backend_host_func(s1, host_count, &calls);
        eagle_backend_launcher l = end_to_launcher(c, s1);
        replay(l); replay(l);
        EXPECT(hs == 0 && calls == 3, "host_func eager + host node replayed twice: %d calls", calls);
        eagle_backend_launcher_release(l);
    }

    // ---- interop fence
    {
        int64_t before = 0; eagle_backend_event_pool_created(&before);
        uint32_t v9 = 9;
        run2(f_fill, s1, &buf, 8, &v9, 4, 0, N, N);
        int f1 = eagle_backend_fence(2, 0, (int64_t)s1, (int64_t)s2);
        add(s2, buf, 1, N);
        eagle_backend_stream_synchronize(st2);
        uint32_t r = d2h(buf, N)[N - 1];
        int f2 = eagle_backend_fence(2, 0, 0, (int64_t)s2);
        int f3 = eagle_backend_fence(1, 0, (int64_t)s1, (int64_t)s2);
        int f4 = eagle_backend_fence(2, 0, EAGLE_BACKEND_STREAM_NONE, (int64_t)s2);
        int f5 = eagle_backend_fence(2, 0, 1, 2);
        int f6 = eagle_backend_fence(13, 0, -1, (int64_t)s1);
        eagle_backend_stream_synchronize(st1); eagle_backend_stream_synchronize(st2);
        int64_t after = 0; eagle_backend_event_pool_created(&after);
        EXPECT(f1 == 0 && r == 10 && f2 == EAGLE_BACKEND_INTEROP && f3 == EAGLE_BACKEND_INTEROP && f4 == 0 && f5 == 0 && f6 == 0 && after >= 1,
               "fence orders s2 after s1 (buf %u), code 0 and type 1 refused INTEROP, events created %lld", r, (long long)after);
    }

    // ---- released, mistyped and foreign handles: BAD_HANDLE from the registry, no read of freed memory
    {
        uint64_t raw = 0, u = 0; int32_t i32 = 0; int64_t i64 = 0;
        eagle_backend_stream s = mkstream(&raw);
        eagle_backend_stream_release(s);
        int a1 = eagle_backend_stream_ptr(s, &u), a2 = eagle_backend_stream_synchronize(s);
        eagle_backend_stream_release(s);  // twice: harmless
        eagle_backend_capturer c = begin_capture(s1);
        add(s1, buf, 1, N);
        eagle_backend_captured cap = nullptr;
        int e1 = eagle_backend_capturer_end(c, &cap);
        eagle_backend_capturer_release(c);
        int a3 = eagle_backend_capturer_begin(c);
        eagle_backend_graph g = nullptr;
        int e2 = eagle_backend_graph_from_captured(cap, &g);
        int a4 = eagle_backend_captured_is_valid(cap, &i32);     // consumed
        eagle_backend_captured_release(cap);                      // consumed: harmless
        eagle_backend_launcher l = nullptr;
        int e3 = eagle_backend_graph_launcher(g, &l);
        eagle_backend_graph_release(g);
        int a5 = eagle_backend_graph_last_node(g, &i64);
        eagle_backend_launcher_release(l);
        int a6 = eagle_backend_launcher_launch(l), a7 = eagle_backend_launcher_kernel_node_count(l, &i64);
        eagle_backend_fork_desc fd{}; fd.struct_size = sizeof fd; fd.device = -1; fd.origin = s1; fd.branch_count = 2;
        eagle_backend_fork f = nullptr;
        int e4 = eagle_backend_fork_create(&fd, &f);
        eagle_backend_fork_release(f);
        int a8 = eagle_backend_fork_size(f, &u);
        int a9 = eagle_backend_fork_size(reinterpret_cast<eagle_backend_fork>(st1), &u);  // another type
        uint32_t fake[64];
        for (uint32_t& w : fake) w = 0x5354524du;  // shaped like the old Stream's type word
        int a10 = eagle_backend_stream_ptr(reinterpret_cast<eagle_backend_stream>(fake), &u);
        eagle_backend_stream_release(reinterpret_cast<eagle_backend_stream>(fake));
        const int B = EAGLE_BACKEND_BAD_HANDLE;
        EXPECT(e1 == 0 && e2 == 0 && e3 == 0 && e4 == 0 && a1 == B && a2 == B && a3 == B && a4 == B && a5 == B &&
                   a6 == B && a7 == B && a8 == B && a9 == B && a10 == B && fake[0] == 0x5354524du,
               "released/consumed/mistyped/foreign handles are BAD_HANDLE (%d %d %d %d %d %d %d %d %d %d)", a1, a2, a3,
               a4, a5, a6, a7, a8, a9, a10);
        eagle_backend_stream_synchronize(st1);
    }

    eagle_backend_stream_release(st1); eagle_backend_stream_release(st2); eagle_backend_stream_release(nullptr);
    cudaFree(buf); cudaFree(cnt); cudaFree(basel); cudaFree(cell);
    printf("SUMMARY: %d passed, %d failed\n", g_pass, g_fail);
    return g_fail;
}
