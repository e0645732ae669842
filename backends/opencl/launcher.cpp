// Group launcher (bit 7) of the opencl backend: a launcher replays a graph's nodes on its stream.
//
// A replay is a list of segments made once (a Build) and enqueued in order on the launch stream's
// in-order queue: each run of consecutive kernel commands is one cl_command_buffer_khr (its
// kernels chained by sync points), and each copy or host call is enqueued between them as it is
// eagerly (recording.h says why). A build belongs to one queue, one set of settings (nodes switched
// off, the logical size: both are applied when the build is made, so a replay pays nothing for
// them) and one generation of allocations (every kernel is told the live ones, as eagerly): when
// any of them changes, the next launch makes a new build. A build replaced while a replay of it
// may still run is kept until that replay's last command has completed (its tail event). Where
// the device cannot enqueue a command buffer that is still pending (no simultaneous use), a launch
// onto a build still pending makes a new build too.
#include <set>

#include "common.h"

namespace eagle_opencl {
namespace {
struct Segment {
    cl_command_buffer_khr cb = nullptr;  // a run of kernel commands
    std::vector<cl_kernel> kernels;      // the clones cb records (owned)
    const Command* eager = nullptr;      // or a copy or host call, enqueued as it is
};

struct Build {
    cl_command_queue queue = nullptr;
    uint64_t generation = 0;
    bool simultaneous = false;  // its command buffers may be enqueued while pending
    std::vector<Segment> segments;
    cl_event tail = nullptr;  // the last command of the latest replay of this build

    Build() = default;
    Build(const Build&) = delete;
    Build& operator=(const Build&) = delete;
    ~Build() {
        const auto& api = runtime().command_buffer;
        for (auto& seg : segments) {
            if (seg.cb) api.release(seg.cb);
            for (cl_kernel k : seg.kernels) clReleaseKernel(k);
        }
        if (tail) clReleaseEvent(tail);
    }
    // No replay of this build can still be running.
    bool idle() const {
        if (!tail) return true;
        cl_int status = CL_QUEUED;
        clGetEventInfo(tail, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
        return status == CL_COMPLETE || status < 0;
    }
    // A command buffer of this build is still pending (matters without simultaneous use).
    bool pending() const {
        const auto& api = runtime().command_buffer;
        for (const auto& seg : segments) {
            if (!seg.cb) continue;
            cl_command_buffer_state_khr state = CL_COMMAND_BUFFER_STATE_EXECUTABLE_KHR;
            api.info(seg.cb, CL_COMMAND_BUFFER_STATE_KHR, sizeof state, &state, nullptr);
            if (state == CL_COMMAND_BUFFER_STATE_PENDING_KHR) return true;
        }
        return false;
    }
};

struct Launcher {
    Nodes nodes;
    std::unordered_set<const Node*> members;  // the nodes set_node_enabled may switch
    std::shared_ptr<const Settings> settings = std::make_shared<Settings>();
    uint64_t stream = 0;
    int64_t kernels = 0;
    std::unique_ptr<Build> current;
    bool dirty = false;                          // settings changed since `current` was made
    std::vector<std::unique_ptr<Build>> retired;  // replaced, perhaps still running
};
std::mutex g_mu;
std::set<Launcher*> g_launchers;

Launcher& lookup_launcher(eagle_backend_launcher h) {
    Launcher* l = reinterpret_cast<Launcher*>(h);
    std::lock_guard<std::mutex> lock(g_mu);
    if (!l || !g_launchers.count(l))
        eagle::fail(EAGLE_BACKEND_BAD_HANDLE, "launcher is not a live launcher of the opencl backend (NULL, released or foreign)");
    return *l;
}

// A command of a replay, with the lanes it runs over: `size` >= 0 for a whole-run kernel under a
// logical size, else -1 (as recorded).
struct Step {
    const Command* command;
    int64_t size;
};

void flatten(const Nodes& nodes, const Settings& st, std::vector<Step>& out) {
    for (const auto& n : nodes) {
        if (st.disabled.count(n.get())) continue;
        if (n->kind == Node::Kind::Child) {
            flatten(n->children, n->frozen ? *n->frozen : st, out);
            continue;
        }
        for (const auto& c : n->commands) out.push_back({c.get(), c->whole_run ? st.logical_size : -1});
    }
}

std::unique_ptr<Build> make_build(const Nodes& nodes, const Settings& st, cl_command_queue queue) {
    const auto& api = runtime().command_buffer;
    auto b = std::make_unique<Build>();
    b->queue = queue;
    b->generation = allocation_generation();
    b->simultaneous = api.simultaneous;
    std::vector<Step> steps;
    flatten(nodes, st, steps);
    const std::vector<void*> svm = live_allocations();
    cl_command_buffer_properties_khr simultaneous[] = {CL_COMMAND_BUFFER_FLAGS_KHR,
                                                       CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, 0};
    size_t open = SIZE_MAX;  // index of the segment kernels are being recorded into
    cl_sync_point_khr last = 0;
    for (const Step& step : steps) {
        const Command& c = *step.command;
        if (c.kind != Command::Kind::Kernel) {
            b->segments.emplace_back();
            b->segments.back().eager = &c;
            open = SIZE_MAX;
            continue;
        }
        if (step.size == 0) continue;  // a whole-run kernel over 0 lanes runs nothing
        if (open == SIZE_MAX) {
            b->segments.emplace_back();
            open = b->segments.size() - 1;
            cl_int err = CL_SUCCESS;
            b->segments[open].cb = api.create(1, &queue, b->simultaneous ? simultaneous : nullptr, &err);
            if (err != CL_SUCCESS && b->simultaneous) {  // a version without the flag: pending ones are rebuilt
                b->simultaneous = false;
                b->segments[open].cb = api.create(1, &queue, nullptr, &err);
            }
            cl_check(err, "clCreateCommandBufferKHR");
        }
        Segment& seg = b->segments[open];
        cl_int err = CL_SUCCESS;
        cl_kernel k = clCloneKernel(c.kernel, &err);
        cl_check(err, "clCloneKernel");
        const bool first = seg.kernels.empty();
        seg.kernels.push_back(k);
        size_t global = c.global;
        if (step.size > 0) {
            const cl_long lanes = step.size;
            cl_check(clSetKernelArg(k, c.triple + 1, 8, &lanes), "clSetKernelArg (logical size)");
            cl_check(clSetKernelArg(k, c.triple + 2, 8, &lanes), "clSetKernelArg (logical size)");
            global = static_cast<size_t>(lanes);
            if (c.local) global = (global + c.local - 1) / c.local * c.local;
        }
        cl_check(clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_SVM_PTRS, svm.size() * sizeof(void*),
                                     svm.empty() ? nullptr : svm.data()),
                 "clSetKernelExecInfo(SVM_PTRS)");
        const size_t local = c.local;
        cl_check(api.ndrange(seg.cb, nullptr, nullptr, k, 1, nullptr, &global, local ? &local : nullptr, first ? 0 : 1,
                             first ? nullptr : &last, &last, nullptr),
                 "clCommandNDRangeKernelKHR");
    }
    for (auto& seg : b->segments)
        if (seg.cb) cl_check(api.finalize(seg.cb), "clFinalizeCommandBufferKHR");
    return b;
}

// Frees the replaced builds no replay can still be running.
void reap(Launcher& l) {
    auto& r = l.retired;
    r.erase(std::remove_if(r.begin(), r.end(), [](const std::unique_ptr<Build>& b) { return b->idle(); }), r.end());
}

void replay(Launcher& l, Stream& s) {
    const auto& api = runtime().command_buffer;
    reap(l);
    bool stale = !l.current || l.dirty || l.current->queue != s.queue || l.current->generation != allocation_generation();
    if (!stale && !l.current->simultaneous && l.current->pending()) stale = true;
    if (stale) {
        auto next = make_build(l.nodes, *l.settings, s.queue);
        if (l.current) l.retired.push_back(std::move(l.current));
        l.current = std::move(next);
        l.dirty = false;
    }
    Build& b = *l.current;
    cl_event tail = nullptr;
    for (size_t i = 0; i < b.segments.size(); ++i) {
        const Segment& seg = b.segments[i];
        cl_event* out = i + 1 == b.segments.size() ? &tail : nullptr;
        if (seg.cb) {
            // on the queue it was made for (b.queue == s.queue), so no queue is passed
            cl_check(api.enqueue(0, nullptr, seg.cb, 0, nullptr, out), "clEnqueueCommandBufferKHR");
        } else if (seg.eager->kind == Command::Kind::Copy) {
            cl_check(clEnqueueSVMMemcpy(s.queue, CL_FALSE, seg.eager->dst, seg.eager->src, seg.eager->bytes, 0, nullptr,
                                        out),
                     "clEnqueueSVMMemcpy");
        } else {
            Stream* sp = &s;
            enqueue_host_call(s, [fn = seg.eager->fn, sp] { fn(*sp); }, out);
        }
    }
    if (tail) {
        if (b.tail) clReleaseEvent(b.tail);
        b.tail = tail;
    }
}

// The launcher's stream, not being captured (launcher_synchronize and launcher_query).
Stream& idle_target(Launcher& l, const char* call) {
    std::lock_guard<std::recursive_mutex> lock(capture_mutex());
    Stream* s = nullptr;
    try {
        s = &stream_of_raw(l.stream, "the launcher's stream");
    } catch (const eagle::Error&) {
        eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, std::string(call) + ": the launcher's stream has been released");
    }
    if (s->capture) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, std::string(call) + ": the launcher's stream is being captured");
    return *s;
}
}  // namespace

eagle_backend_launcher make_launcher(const Nodes& nodes, uint64_t stream) {
    auto l = std::make_unique<Launcher>();
    l->nodes = nodes;
    for (const auto& n : nodes) {
        n->collect(l->members);
        l->kernels += n->kernel_count();
    }
    l->stream = stream;  // the first launch makes the build, for the queue it launches on
    std::lock_guard<std::mutex> lock(g_mu);
    g_launchers.insert(l.get());
    return reinterpret_cast<eagle_backend_launcher>(l.release());
}
}  // namespace eagle_opencl

using namespace eagle_opencl;

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_launch(eagle_backend_launcher launcher) {
    return eagle::guarded("eagle_backend_launcher_launch", [&] {
        Launcher& l = lookup_launcher(launcher);
        {
            // launched onto a stream being captured: recorded there as a child node that keeps
            // this launcher's settings as they are now
            std::lock_guard<std::recursive_mutex> lock(capture_mutex());
            Stream* s = nullptr;
            try {
                s = &stream_of_raw(l.stream, "the launcher's stream");
            } catch (const eagle::Error&) {
                eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the launcher's stream has been released");
            }
            if (auto cap = active_capture(*s)) {
                auto child = std::make_shared<Node>(Node::Kind::Child);
                child->children = l.nodes;
                child->frozen = l.settings;
                record(*cap, std::move(child));
                return;
            }
        }
        replay(l, enqueue_stream(l.stream, "the launcher's stream"));
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_synchronize(eagle_backend_launcher launcher) {
    return eagle::guarded("eagle_backend_launcher_synchronize", [&] {
        finish(idle_target(lookup_launcher(launcher), "launcher_synchronize"), "launcher_synchronize");
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_query(eagle_backend_launcher launcher, int32_t* done) {
    return eagle::guarded("eagle_backend_launcher_query", [&] {
        eagle::require(done, "done");
        query_into(idle_target(lookup_launcher(launcher), "launcher_query"), done, "launcher_query");
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_stream(eagle_backend_launcher launcher, uint64_t stream) {
    return eagle::guarded("eagle_backend_launcher_stream", [&] {
        Launcher& l = lookup_launcher(launcher);
        stream_of_raw(stream, "stream");
        l.stream = stream;  // the next launch makes a build for its queue
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_set_logical_size(eagle_backend_launcher launcher,
                                                                          int64_t size) {
    return eagle::guarded("eagle_backend_launcher_set_logical_size", [&] {
        Launcher& l = lookup_launcher(launcher);
        if (size > INT32_MAX)
            eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "size " + std::to_string(size) + " exceeds 2^31-1");
        auto next = std::make_shared<Settings>(*l.settings);
        next->logical_size = size < 0 ? -1 : size;
        l.settings = std::move(next);
        l.dirty = true;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_kernel_node_count(eagle_backend_launcher launcher,
                                                                           int64_t* count) {
    return eagle::guarded("eagle_backend_launcher_kernel_node_count", [&] {
        eagle::require(count, "count");
        *count = lookup_launcher(launcher).kernels;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_set_node_enabled(eagle_backend_launcher launcher,
                                                                          uint64_t node, int32_t enabled) {
    return eagle::guarded("eagle_backend_launcher_set_node_enabled", [&] {
        Launcher& l = lookup_launcher(launcher);
        const Node* n = reinterpret_cast<const Node*>(node);
        if (!l.members.count(n))
            eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "node is not a node of this launcher's graph");
        if (!n->toggleable()) eagle::fail(EAGLE_BACKEND_UNSUPPORTED, "child-graph nodes cannot be switched off");
        if (enabled != 0 && enabled != 1)
            eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "enabled is " + std::to_string(enabled) + " (0 or 1)");
        auto next = std::make_shared<Settings>(*l.settings);
        if (enabled)
            next->disabled.erase(n);
        else
            next->disabled.insert(n);
        l.settings = std::move(next);
        l.dirty = true;
    });
}

EAGLE_EXPORT void eagle_backend_launcher_release(eagle_backend_launcher launcher) {
    eagle::guarded_void([&] {
        Launcher* l = reinterpret_cast<Launcher*>(launcher);
        {
            std::lock_guard<std::mutex> lock(g_mu);
            if (!l || !g_launchers.erase(l)) return;
        }
        std::unique_ptr<Launcher> gone(l);
        // waits for its replays: each build's latest replay is the last of that build on its queue
        std::vector<cl_event> tails;
        if (gone->current && gone->current->tail) tails.push_back(gone->current->tail);
        for (const auto& b : gone->retired)
            if (b->tail) tails.push_back(b->tail);
        for (cl_event e : tails) clWaitForEvents(1, &e);
    });
}
