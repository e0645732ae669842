// Group graph (bit 6): graphs from a capture, or built node by node from captured pieces.
#include "runtime.h"

using namespace eagle;
using namespace eagle::cpu;

namespace eagle::cpu {

std::shared_ptr<Graph> captured_graph(eagle_backend_captured captured);
void consume_captured(eagle_backend_captured captured) noexcept;
std::shared_ptr<Object> make_launcher(const Graph& graph, std::shared_ptr<Stream> stream);

class GraphObject : public Object {
public:
    static constexpr Kind kKind = Kind::Graph;
    GraphObject() : Object(kKind), graph(std::make_shared<Graph>()) {}
    std::shared_ptr<Graph> graph;
    std::shared_ptr<Stream> stream;  // null: the default stream
    int64_t last = -1;
};

void ChildNode::run(const RunSettings* rs) const { graph_->run(settings_ ? settings_.get() : rs); }

int64_t ChildNode::kernel_count() const { return graph_->kernel_count(); }

void ChildNode::collect(std::unordered_set<const Node*>& out) const {
    out.insert(this);
    graph_->collect(out);
}

}  // namespace eagle::cpu

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_create(const eagle_backend_graph_desc* desc,
                                                             eagle_backend_graph* out) {
    return guarded("eagle_backend_graph_create", [&] {
        const auto d = read_desc(desc, "desc");
        require(out, "out");
        check_flags(d.flags, 0, "desc->flags");
        check_device(d.device, "desc->device");
        auto g = make_object<GraphObject>();
        register_object(g);
        *out = reinterpret_cast<eagle_backend_graph>(g.get());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_from_captured(eagle_backend_captured captured,
                                                                    eagle_backend_graph* out) {
    return guarded("eagle_backend_graph_from_captured", [&] {
        require(out, "out");
        auto body = captured_graph(captured);
        auto g = make_object<GraphObject>();
        g->graph = body;
        g->last = static_cast<int64_t>(body->size()) - 1;
        register_object(g);
        consume_captured(captured);
        *out = reinterpret_cast<eagle_backend_graph>(g.get());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_stream(eagle_backend_graph graph, uint64_t stream) {
    return guarded("eagle_backend_graph_stream", [&] {
        auto g = lookup<GraphObject>(graph, "graph");
        g->stream = stream ? resolve_stream(stream, "stream") : nullptr;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_add_node(eagle_backend_graph graph,
                                                               eagle_backend_captured captured) {
    return guarded("eagle_backend_graph_add_node", [&] {
        auto g = lookup<GraphObject>(graph, "graph");
        auto body = captured_graph(captured);
        auto child = std::make_shared<ChildNode>(body, nullptr);
        std::vector<uint32_t> deps;
        if (g->last >= 0) deps.push_back(static_cast<uint32_t>(g->last));
        g->last = g->graph->add_node(deps, std::move(child));
        consume_captured(captured);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_launcher(eagle_backend_graph graph,
                                                               eagle_backend_launcher* out) {
    return guarded("eagle_backend_graph_launcher", [&] {
        require(out, "out");
        auto g = lookup<GraphObject>(graph, "graph");
        if (g->graph->size() == 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the graph is empty");
        auto l = make_launcher(*g->graph, g->stream);
        *out = reinterpret_cast<eagle_backend_launcher>(l.get());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_last_node(eagle_backend_graph graph, int64_t* index) {
    return guarded("eagle_backend_graph_last_node", [&] {
        require(index, "index");
        *index = lookup<GraphObject>(graph, "graph")->last;
    });
}

EAGLE_EXPORT void eagle_backend_graph_release(eagle_backend_graph graph) {
    guarded_void([&] { take<GraphObject>(graph); });
}
