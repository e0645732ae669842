// Group launcher (bit 7): executable instances of a graph, with their own enabled flags and
// logical size, replayed asynchronously on a stream.
#include "runtime.h"

using namespace eagle;
using namespace eagle::cpu;

namespace eagle::cpu {

class Launcher : public Object {
public:
    static constexpr Kind kKind = Kind::Launcher;
    Launcher() : Object(kKind) {}
    std::shared_ptr<const Graph> graph;
    std::shared_ptr<const RunSettings> settings = std::make_shared<RunSettings>();
    std::unordered_set<const Node*> members;
    std::shared_ptr<Stream> stream;  // null: the default stream
    int64_t kernels = 0;
    std::vector<std::pair<std::weak_ptr<Stream>, uint64_t>> launched;  // latest replay per stream

    std::shared_ptr<Stream> target() {
        if (!stream) return default_stream();
        if (!find_stream(stream->raw()))
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the launcher's stream has been released");
        return stream;
    }
    void note_launch(const std::shared_ptr<Stream>& s, uint64_t seq) {
        for (auto& [w, q] : launched) {
            if (w.lock() == s) {
                q = seq;
                return;
            }
        }
        launched.emplace_back(s, seq);
    }
};

std::shared_ptr<Object> make_launcher(const Graph& graph, std::shared_ptr<Stream> stream) {
    auto l = make_object<Launcher>();
    auto g = std::make_shared<Graph>(graph.clone());
    g->finalize();
    g->collect(l->members);
    l->kernels = g->kernel_count();
    l->graph = std::move(g);
    l->stream = std::move(stream);
    register_object(l);
    return l;
}

}  // namespace eagle::cpu

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_launch(eagle_backend_launcher launcher) {
    return guarded("eagle_backend_launcher_launch", [&] {
        auto l = lookup<Launcher>(launcher, "launcher");
        auto s = l->target();
        // Launched into a capture, it is recorded as a child-graph node (seq 0); else replayed eagerly.
        const uint64_t seq = submit(*s, std::make_shared<ChildNode>(l->graph, l->settings));
        if (seq) l->note_launch(s, seq);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_synchronize(eagle_backend_launcher launcher) {
    return guarded("eagle_backend_launcher_synchronize", [&] {
        auto l = lookup<Launcher>(launcher, "launcher");
        auto s = l->target();
        {
            std::lock_guard<std::recursive_mutex> lock(capture_mutex());
            if (s->capture && !s->capture->ended)
                fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the launcher's stream is being captured");
        }
        s->drain_and_check();
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_query(eagle_backend_launcher launcher, int32_t* done) {
    return guarded("eagle_backend_launcher_query", [&] {
        require(done, "done");
        *done = 0;
        auto l = lookup<Launcher>(launcher, "launcher");
        auto s = l->target();
        {
            std::lock_guard<std::recursive_mutex> lock(capture_mutex());
            if (s->capture && !s->capture->ended)
                fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the launcher's stream is being captured");
        }
        s->query_and_check(done);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_stream(eagle_backend_launcher launcher, uint64_t stream) {
    return guarded("eagle_backend_launcher_stream", [&] {
        auto l = lookup<Launcher>(launcher, "launcher");
        l->stream = stream ? resolve_stream(stream, "stream") : nullptr;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_set_logical_size(eagle_backend_launcher launcher,
                                                                          int64_t size) {
    return guarded("eagle_backend_launcher_set_logical_size", [&] {
        auto l = lookup<Launcher>(launcher, "launcher");
        if (size > INT32_MAX)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "size " + std::to_string(size) + " exceeds 2^31-1");
        auto next = std::make_shared<RunSettings>(*l->settings);
        next->logical_size = size < 0 ? -1 : size;
        l->settings = std::move(next);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_kernel_node_count(eagle_backend_launcher launcher,
                                                                           int64_t* count) {
    return guarded("eagle_backend_launcher_kernel_node_count", [&] {
        require(count, "count");
        *count = lookup<Launcher>(launcher, "launcher")->kernels;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_launcher_set_node_enabled(eagle_backend_launcher launcher,
                                                                          uint64_t node, int32_t enabled) {
    return guarded("eagle_backend_launcher_set_node_enabled", [&] {
        auto l = lookup<Launcher>(launcher, "launcher");
        const Node* n = reinterpret_cast<const Node*>(node);
        if (!l->members.count(n))
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "node is not a node of this launcher's graph");
        if (!n->toggleable())
            fail(EAGLE_BACKEND_UNSUPPORTED, "conditional and child-graph nodes cannot be toggled");
        if (enabled != 0 && enabled != 1)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "enabled is " + std::to_string(enabled) + " (0 or 1)");
        auto next = std::make_shared<RunSettings>(*l->settings);
        if (enabled)
            next->disabled.erase(n);
        else
            next->disabled.insert(n);
        l->settings = std::move(next);
    });
}

EAGLE_EXPORT void eagle_backend_launcher_release(eagle_backend_launcher launcher) {
    guarded_void([&] {
        auto l = take<Launcher>(launcher);
        if (!l) return;
        // A replay it cannot wait for (from inside a command ordered before it) keeps its graph
        // and settings alive itself (ChildNode holds them).
        for (auto& [w, seq] : l->launched)
            if (auto s = w.lock()) (void)s->wait_as_caller(seq);
    });
}
