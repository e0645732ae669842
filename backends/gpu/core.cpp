// core.cpp -- error mapping, device selection, capture queries and the kernel-record registry
// shared by every concept file of the GPU backend.
#include "gpu.h"

#include <algorithm>

namespace eagle::gpu {

eagle_backend_status status_of(gpuError_t e) {
    switch (e) {
#if defined(EAGLE_GPU_HIP)
        case hipErrorInvalidDevice: return EAGLE_BACKEND_INDEX;
        case hipErrorNoDevice:
        case hipErrorInsufficientDriver: return EAGLE_BACKEND_UNAVAILABLE;
        case hipErrorInvalidValue:
        case hipErrorInvalidHandle:
        case hipErrorStreamCaptureUnsupported:
        case hipErrorStreamCaptureInvalidated:
        case hipErrorStreamCaptureUnmatched:
        case hipErrorStreamCaptureUnjoined:
        case hipErrorStreamCaptureIsolation:
        case hipErrorStreamCaptureImplicit:
        case hipErrorCapturedEvent:
        case hipErrorStreamCaptureWrongThread:
        case hipErrorIllegalState: return EAGLE_BACKEND_INVALID_ARGUMENT;
        case hipErrorNotSupported: return EAGLE_BACKEND_UNSUPPORTED;
#else
        case cudaErrorInvalidDevice: return EAGLE_BACKEND_INDEX;
        case cudaErrorNoDevice:
        case cudaErrorInsufficientDriver:
        case cudaErrorCallRequiresNewerDriver: return EAGLE_BACKEND_UNAVAILABLE;
        case cudaErrorInvalidValue:
        case cudaErrorInvalidResourceHandle:
        case cudaErrorStreamCaptureUnsupported:
        case cudaErrorStreamCaptureInvalidated:
        case cudaErrorStreamCaptureMerge:
        case cudaErrorStreamCaptureUnmatched:
        case cudaErrorStreamCaptureUnjoined:
        case cudaErrorStreamCaptureIsolation:
        case cudaErrorStreamCaptureImplicit:
        case cudaErrorCapturedEvent:
        case cudaErrorStreamCaptureWrongThread:
        case cudaErrorIllegalState: return EAGLE_BACKEND_INVALID_ARGUMENT;
        case cudaErrorNotSupported: return EAGLE_BACKEND_UNSUPPORTED;
#endif
        default: return EAGLE_BACKEND_ERROR;
    }
}

void check(gpuError_t e, const char* what) {
    if (e == gpuSuccess) return;
    (void)gpuGetLastError();  // clear the sticky-free error so later calls start clean
    fail(status_of(e), std::string(what) + ": " + gpuGetErrorName(e) + ": " + gpuGetErrorString(e));
}

namespace {
std::atomic<bool> g_available{false};
}

std::string probe_reason() {
    std::string why = forked_reason();
    if (!why.empty()) {
        g_available.store(false, std::memory_order_release);
        return why;
    }
    if (g_available.load(std::memory_order_acquire)) return {};
    note_runtime_used();
    why = native::driver_reason();
    if (!why.empty()) return why;
    int n = 0;
    gpuError_t e = gpuGetDeviceCount(&n);
    if (e != gpuSuccess) {
        (void)gpuGetLastError();
        const std::string name = gpuGetErrorName(e), text = gpuGetErrorString(e);
        return std::string("the " EAGLE_GPU_KIND " runtime found no usable device: ") + name +
               (text == name ? std::string() : ": " + text);
    }
    if (n <= 0) return "the " EAGLE_GPU_KIND " runtime reports 0 devices";
    g_available.store(true, std::memory_order_release);
    return {};
}

void require_device() {
    if (g_available.load(std::memory_order_acquire) && forked_reason().empty()) return;
    std::string why = probe_reason();
    if (!why.empty()) fail(EAGLE_BACKEND_UNAVAILABLE, why);
}

int device_count() {
    require_device();
    int n = 0;
    check(gpuGetDeviceCount(&n), "getDeviceCount");
    return n;
}

int current_device() {
    int d = 0;
    check(gpuGetDevice(&d), "getDevice");
    return d;
}

HandleRegistry<uint32_t>& handles() {
    static HandleRegistry<uint32_t>* r = new HandleRegistry<uint32_t>();  // leaked: valid during exit
    return *r;
}

namespace {
struct StreamEntry {
    int device = 0;
    uint64_t serial = 0;
};
std::mutex g_streams_mu;
std::unordered_map<gpuStream_t, StreamEntry> g_streams;
uint64_t g_next_serial = 0;  // under g_streams_mu
std::atomic<uint64_t> g_release_generation{0};  // bumped by every stream_unregister
}  // namespace

void streams_at_fork(bool take) noexcept {
    if (take)
        g_streams_mu.lock();
    else
        g_streams_mu.unlock();
}

uint64_t stream_release_generation() { return g_release_generation.load(std::memory_order_acquire); }

uint64_t stream_register(gpuStream_t s, int device) {
    std::lock_guard<std::mutex> lk(g_streams_mu);
    const uint64_t serial = ++g_next_serial;
    g_streams[s] = StreamEntry{device, serial};
    return serial;
}

void stream_unregister(gpuStream_t s) {
    std::lock_guard<std::mutex> lk(g_streams_mu);
    g_streams.erase(s);
    g_release_generation.fetch_add(1, std::memory_order_acq_rel);
}

uint64_t stream_serial(gpuStream_t s) {
    if (!s) return 0;
    std::lock_guard<std::mutex> lk(g_streams_mu);
    auto it = g_streams.find(s);
    return it == g_streams.end() ? 0 : it->second.serial;
}

bool stream_released(gpuStream_t s, uint64_t serial) { return serial != 0 && stream_serial(s) != serial; }

int stream_device(gpuStream_t s) {
    if (!s) return -1;
    std::lock_guard<std::mutex> lk(g_streams_mu);
    auto it = g_streams.find(s);
    return it == g_streams.end() ? -1 : it->second.device;
}

int device_of_stream(uint64_t stream) {
    if (stream == 0) return -1;
    const int d = stream_device(as_stream(stream));
    if (d >= 0) return d;
#if EAGLE_GPU_HAS_STREAM_GET_DEVICE
    // A foreign stream: ask the runtime, but never while it is capturing (the query would break it).
    if (!is_capturing(as_stream(stream))) {
        int q = -1;
        if (cudaStreamGetDevice(as_stream(stream), &q) == cudaSuccess && q >= 0) return q;
        (void)cudaGetLastError();
    }
#endif
    return -1;
}

int resolve_device(int32_t requested, uint64_t stream, bool has_stream) {
    const int n = device_count();
    if (requested >= 0) {
        if (requested >= n)
            fail(EAGLE_BACKEND_INDEX,
                 "device " + std::to_string(requested) + " does not exist (" + std::to_string(n) + " devices)");
        return requested;
    }
    if (requested != -1) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "device " + std::to_string(requested) + " (use -1 or >= 0)");
    if (has_stream) {
        const int d = device_of_stream(stream);
        if (d >= 0) return d;
    }
    return current_device();
}

namespace {
// Whether the process sees exactly one device (asked once). Then device 0 is always the current
// device: there is nothing to ask or switch, and a replay loop saves a getDevice a call.
bool only_one_device() noexcept {
    static const bool one = [] {
        int n = 0;
        if (gpuGetDeviceCount(&n) != gpuSuccess) {
            (void)gpuGetLastError();
            return false;
        }
        return n == 1;
    }();
    return one;
}
}  // namespace

DeviceGuard::DeviceGuard(int device) {
    if (device == 0 && only_one_device()) return;
    check(gpuGetDevice(&previous_), "getDevice");
    if (previous_ != device) {
        check(gpuSetDevice(device), "setDevice");
        switched_ = true;
    }
}

DeviceGuard::~DeviceGuard() {
    if (switched_) (void)gpuSetDevice(previous_);
}

// ---------------------------------------------------------------- capture

CaptureInfo capture_info(gpuStream_t s) {
    CaptureInfo info;
    unsigned long long id = 0;
    const gpuGraphNode_t* deps = nullptr;
    size_t n = 0;
    check(gpuStreamGetCaptureInfo(s, &info.status, &id, &info.graph, &deps, &n), "streamGetCaptureInfo");
    if (info.status == gpuStreamCaptureStatusActive && deps) info.deps.assign(deps, deps + n);
    return info;
}

bool is_capturing(gpuStream_t s) {
    gpuStreamCaptureStatus st = gpuStreamCaptureStatusNone;
    check(gpuStreamIsCapturing(s, &st), "streamIsCapturing");
    return st != gpuStreamCaptureStatusNone;
}

namespace {
std::mutex g_bodies_mu;
std::unordered_map<gpuGraph_t, gpuGraph_t> g_bodies;  // body -> the graph of its outermost capture
std::mutex g_records_mu;
std::unordered_map<gpuGraphNode_t, KernelRecordPtr> g_records;
}  // namespace

void body_graph_add(gpuGraph_t g, gpuGraph_t root) {
    std::lock_guard<std::mutex> lk(g_bodies_mu);
    g_bodies[g] = root;
}
void body_graph_remove(gpuGraph_t g) {
    std::lock_guard<std::mutex> lk(g_bodies_mu);
    g_bodies.erase(g);
}
bool body_graph_contains(gpuGraph_t g) {
    std::lock_guard<std::mutex> lk(g_bodies_mu);
    return g_bodies.count(g) != 0;
}
gpuGraph_t body_graph_root(gpuGraph_t g) {
    std::lock_guard<std::mutex> lk(g_bodies_mu);
    auto it = g_bodies.find(g);
    return it == g_bodies.end() ? g : it->second;
}

void collect_nodes(gpuGraph_t g, std::vector<gpuGraphNode_t>& out, bool recurse, bool bodies) {
    size_t n = 0;
    check(gpuGraphGetNodes(g, nullptr, &n), "graphGetNodes");
    if (n == 0) return;
    std::vector<gpuGraphNode_t> nodes(n);
    check(gpuGraphGetNodes(g, nodes.data(), &n), "graphGetNodes");
    nodes.resize(n);
    for (gpuGraphNode_t node : nodes) {
        out.push_back(node);
        if (!recurse) continue;
        gpuGraphNodeType t;
        check(gpuGraphNodeGetType(node, &t), "graphNodeGetType");
        if (t == gpuGraphNodeTypeGraph) {
            gpuGraph_t child = nullptr;
            check(gpuGraphChildGraphNodeGetGraph(node, &child), "graphChildGraphNodeGetGraph");
            collect_nodes(child, out, true, bodies);
        } else if (bodies) {
            std::vector<gpuGraph_t> inner;
            native::conditional_bodies(node, inner);
            for (gpuGraph_t b : inner) collect_nodes(b, out, true, true);
        }
    }
}

void record_kernel(gpuGraphNode_t node, KernelRecordPtr rec) {
    std::lock_guard<std::mutex> lk(g_records_mu);
    g_records[node] = std::move(rec);
}

KernelRecordPtr find_kernel(gpuGraphNode_t node) {
    KernelRecordPtr rec;
    {
        std::lock_guard<std::mutex> lk(g_records_mu);
        auto it = g_records.find(node);
        if (it == g_records.end()) return nullptr;
        rec = it->second;
    }
    // A record left by a graph the runtime freed on its own (a broken capture) must not be taken
    // for another kind of node that reuses its address.
    gpuGraphNodeType t{};
    if (gpuGraphNodeGetType(node, &t) != gpuSuccess || t != gpuGraphNodeTypeKernel) {
        (void)gpuGetLastError();
        return nullptr;
    }
    return rec;
}

void forget_nodes(gpuGraph_t g) {
    std::vector<gpuGraphNode_t> nodes;
    try {
        collect_nodes(g, nodes, true);
    } catch (...) {
        return;
    }
    for (gpuGraphNode_t n : nodes) native::forget_node(n);
    std::lock_guard<std::mutex> lk(g_records_mu);
    for (gpuGraphNode_t n : nodes) g_records.erase(n);
}

void forget_capture(gpuStream_t s) noexcept {
    gpuStreamCaptureStatus status{};
    gpuGraph_t g = nullptr;
    if (gpuStreamGetCaptureInfo(s, &status, nullptr, &g, nullptr, nullptr) == gpuSuccess && g)
        forget_nodes(g);
    (void)gpuGetLastError();
}

GraphOwner::~GraphOwner() {
    if (g) {
        forget_nodes(g);
        (void)gpuGraphDestroy(g);
    }
    for (gpuGraph_t k : keep) {
        forget_nodes(k);
        (void)gpuGraphDestroy(k);
    }
}

Captured::~Captured() {
    if (g) {
        forget_nodes(g);
        (void)gpuGraphDestroy(g);
    }
}

}  // namespace eagle::gpu
