// Groups capturer (bit 1) and captured (bit 2) of the opencl backend, and what they record with
// (recording.h): the node registry, a stream's capture, and Target, through which every seam call
// that enqueues work either enqueues it or records it.
#include <set>

#include "common.h"

namespace eagle_opencl {

Command::~Command() {
    if (kernel) clReleaseKernel(kernel);
}

namespace {
std::mutex& node_mu() {
    static std::mutex* mu = new std::mutex();
    return *mu;
}
std::unordered_set<const Node*>& live_nodes() {
    static auto* live = new std::unordered_set<const Node*>();
    return *live;
}
}  // namespace

Node::Node(Kind k) : kind(k) {
    std::lock_guard<std::mutex> lock(node_mu());
    live_nodes().insert(this);
}

Node::~Node() {
    std::lock_guard<std::mutex> lock(node_mu());
    live_nodes().erase(this);
}

int64_t Node::kernel_count() const {
    int64_t n = kind == Kind::Kernel ? 1 : 0;
    for (const auto& c : children) n += c->kernel_count();
    return n;
}

void Node::collect(std::unordered_set<const Node*>& out) const {
    out.insert(this);
    if (frozen) return;  // a launched launcher's nodes follow its own settings
    for (const auto& c : children) c->collect(out);
}

int node_toggleable(uint64_t raw) noexcept {
    std::lock_guard<std::mutex> lock(node_mu());
    auto it = live_nodes().find(reinterpret_cast<const Node*>(raw));
    if (it == live_nodes().end()) return -1;
    return (*it)->toggleable() ? 1 : 0;
}

std::recursive_mutex& capture_mutex() {
    static std::recursive_mutex* mu = new std::recursive_mutex();
    return *mu;
}

std::shared_ptr<CaptureState> active_capture(Stream& s) {
    if (!s.capture) return nullptr;
    if (s.capture->ended)
        eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the stream is a fork branch of a capture that has already ended");
    return s.capture;
}

void record(CaptureState& cap, std::shared_ptr<const Node> node) { cap.nodes.push_back(std::move(node)); }

Target::Target(uint64_t raw, const char* name, Node::Kind kind) {
    {
        std::lock_guard<std::recursive_mutex> lock(capture_mutex());
        Stream& s = stream_of_raw(raw, name);
        if (auto cap = active_capture(s)) {
            s_ = &s;
            cap_ = std::move(cap);
            node_ = std::make_shared<Node>(kind);
            return;
        }
    }
    s_ = &enqueue_stream(raw, name);
}

void Target::kernel(cl_kernel k, size_t global, size_t local, bool whole_run, cl_uint triple) {
    if (!cap_) {
        const std::vector<void*> svm = live_allocations();
        cl_check(clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_SVM_PTRS, svm.size() * sizeof(void*),
                                     svm.empty() ? nullptr : svm.data()),
                 "clSetKernelExecInfo(SVM_PTRS)");
        cl_check(clEnqueueNDRangeKernel(s_->queue, k, 1, nullptr, &global, local ? &local : nullptr, 0, nullptr,
                                        nullptr),
                 "clEnqueueNDRangeKernel");
        return;
    }
    auto c = std::make_shared<Command>();
    cl_int err = CL_SUCCESS;
    c->kernel = clCloneKernel(k, &err);
    cl_check(err, "clCloneKernel (recording a kernel under capture)");
    c->global = global;
    c->local = local;
    c->whole_run = whole_run;
    c->triple = triple;
    node_->commands.push_back(std::move(c));
}

void Target::copy(void* dst, const void* src, size_t bytes) {
    if (!cap_) {
        cl_check(clEnqueueSVMMemcpy(s_->queue, CL_FALSE, dst, src, bytes, 0, nullptr, nullptr), "clEnqueueSVMMemcpy");
        return;
    }
    auto c = std::make_shared<Command>();
    c->kind = Command::Kind::Copy;
    c->dst = dst;
    c->src = src;
    c->bytes = bytes;
    node_->commands.push_back(std::move(c));
}

void Target::host(std::function<void(Stream&)> fn) {
    if (!cap_) {
        Stream* s = s_;
        enqueue_host_call(*s, [fn = std::move(fn), s] { fn(*s); });
        return;
    }
    auto c = std::make_shared<Command>();
    c->kind = Command::Kind::Host;
    c->fn = std::move(fn);
    node_->commands.push_back(std::move(c));
}

void Target::commit() {
    if (!cap_) return;
    std::lock_guard<std::recursive_mutex> lock(capture_mutex());
    if (cap_->ended || s_->capture != cap_)
        eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the stream's capture ended while the call recorded into it");
    record(*cap_, std::move(node_));
    cap_.reset();
}

}  // namespace eagle_opencl

namespace eagle_opencl {
namespace {
struct Capturer {
    uint64_t stream = 0;                  // raw stream it captures
    std::shared_ptr<CaptureState> cap;    // while begun
};
struct Captured {
    Nodes nodes;
};
std::mutex g_mu;
std::set<Capturer*> g_capturers;
std::set<Captured*> g_captured;

Capturer& lookup_capturer(eagle_backend_capturer h) {
    Capturer* c = reinterpret_cast<Capturer*>(h);
    std::lock_guard<std::mutex> lock(g_mu);
    if (!c || !g_capturers.count(c))
        eagle::fail(EAGLE_BACKEND_BAD_HANDLE, "capturer is not a live capturer of the opencl backend (NULL, released or foreign)");
    return *c;
}

// The stream of a raw value, or null where it has been released (never throws BAD_HANDLE).
Stream* live_stream(uint64_t raw) noexcept {
    try {
        return &stream_of_raw(raw, "stream");
    } catch (...) {
        return nullptr;
    }
}

// Ends a capture: the stream records no more (the caller holds capture_mutex).
void detach(Capturer& c) {
    if (Stream* s = live_stream(c.stream); s && s->capture == c.cap) s->capture.reset();
    c.cap->ended = true;
}
}  // namespace

Captured& lookup_captured(eagle_backend_captured h) {
    Captured* c = reinterpret_cast<Captured*>(h);
    std::lock_guard<std::mutex> lock(g_mu);
    if (!c || !g_captured.count(c))
        eagle::fail(EAGLE_BACKEND_BAD_HANDLE,
                    "captured is not live captured work of the opencl backend (NULL, released, consumed or foreign)");
    return *c;
}

// Used by graph.cpp: the nodes of captured work (INVALID_ARGUMENT when it has none); then
// consume_captured once the call that takes them cannot fail any more.
const Nodes& captured_nodes(eagle_backend_captured h) {
    Captured& c = lookup_captured(h);
    if (c.nodes.empty()) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capture is empty (it recorded no node)");
    return c.nodes;
}

void consume_captured(eagle_backend_captured h) noexcept {
    Captured* c = reinterpret_cast<Captured*>(h);
    {
        std::lock_guard<std::mutex> lock(g_mu);
        if (!g_captured.erase(c)) return;
    }
    delete c;
}
}  // namespace eagle_opencl

using namespace eagle_opencl;

EAGLE_EXPORT eagle_backend_status eagle_backend_capturer_create(const struct eagle_backend_capturer_desc* desc,
                                                                eagle_backend_capturer* out) {
    return eagle::guarded("eagle_backend_capturer_create", [&] {
        const auto d = eagle::read_desc(desc, "desc");
        eagle::require(out, "out");
        eagle::check_flags(d.flags, 0, "desc->flags");
        check_device(d.device, "desc->device");
        if (const auto& cb = runtime().command_buffer; !cb.used)
            eagle::fail(EAGLE_BACKEND_UNSUPPORTED, "the opencl backend records captures only on cl_khr_command_buffer: " +
                                                       cb.why_not);
        stream_of_raw(d.stream, "desc->stream");
        auto c = std::make_unique<Capturer>();
        c->stream = d.stream;
        std::lock_guard<std::mutex> lock(g_mu);
        g_capturers.insert(c.get());
        *out = reinterpret_cast<eagle_backend_capturer>(c.release());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_capturer_begin(eagle_backend_capturer capturer) {
    return eagle::guarded("eagle_backend_capturer_begin", [&] {
        Capturer& c = lookup_capturer(capturer);
        std::lock_guard<std::recursive_mutex> lock(capture_mutex());
        if (c.cap) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capturer has already begun");
        Stream* s = live_stream(c.stream);
        if (!s) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capturer's stream was released");
        if (s->capture) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the stream is already being captured");
        c.cap = std::make_shared<CaptureState>();
        s->capture = c.cap;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_capturer_end(eagle_backend_capturer capturer,
                                                             eagle_backend_captured* out) {
    return eagle::guarded("eagle_backend_capturer_end", [&] {
        eagle::require(out, "out");
        *out = nullptr;
        Capturer& c = lookup_capturer(capturer);
        std::shared_ptr<CaptureState> cap;
        {
            std::lock_guard<std::recursive_mutex> lock(capture_mutex());
            if (!c.cap) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capture was not begun");
            detach(c);
            cap = std::move(c.cap);
            c.cap.reset();
            if (cap->attached_branches > 0) cap->brk("a fork forked during the capture was not joined");
            if (cap->broken) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capture was broken: " + cap->why);
        }
        auto done = std::make_unique<Captured>();
        done->nodes = std::move(cap->nodes);
        std::lock_guard<std::mutex> lock(g_mu);
        g_captured.insert(done.get());
        *out = reinterpret_cast<eagle_backend_captured>(done.release());
    });
}

EAGLE_EXPORT void eagle_backend_capturer_release(eagle_backend_capturer capturer) {
    eagle::guarded_void([&] {
        Capturer* c = reinterpret_cast<Capturer*>(capturer);
        {
            std::lock_guard<std::mutex> lock(g_mu);
            if (!c || !g_capturers.erase(c)) return;
        }
        std::unique_ptr<Capturer> gone(c);
        std::lock_guard<std::recursive_mutex> lock(capture_mutex());
        if (gone->cap) {  // abandoned: the stream runs work eagerly again, the recorded nodes go
            gone->cap->brk("the capturer was released during the capture");
            detach(*gone);
            gone->cap->nodes.clear();
        }
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_captured_is_valid(eagle_backend_captured captured, int32_t* valid) {
    return eagle::guarded("eagle_backend_captured_is_valid", [&] {
        eagle::require(valid, "valid");
        *valid = lookup_captured(captured).nodes.empty() ? 0 : 1;
    });
}

EAGLE_EXPORT void eagle_backend_captured_release(eagle_backend_captured captured) {
    eagle::guarded_void([&] { consume_captured(captured); });
}
