// Group graph (bit 6) of the opencl backend: a graph is the nodes of a capture (graph_from_captured)
// or a list of captured pieces appended one after the other (graph_add_node: each a child node).
// A launcher (launcher.cpp) copies the list, so the graph may go first.
#include <set>

#include "common.h"

namespace eagle_opencl {
struct Captured;
const Nodes& captured_nodes(eagle_backend_captured h);
void consume_captured(eagle_backend_captured h) noexcept;
eagle_backend_launcher make_launcher(const Nodes& nodes, uint64_t stream);

namespace {
struct Graph {
    Nodes nodes;
    uint64_t stream = 0;  // raw stream its launchers launch on (0: the default stream)
    int64_t last = -1;
};
std::mutex g_mu;
std::set<Graph*> g_graphs;

Graph& lookup_graph(eagle_backend_graph h) {
    Graph* g = reinterpret_cast<Graph*>(h);
    std::lock_guard<std::mutex> lock(g_mu);
    if (!g || !g_graphs.count(g))
        eagle::fail(EAGLE_BACKEND_BAD_HANDLE, "graph is not a live graph of the opencl backend (NULL, released or foreign)");
    return *g;
}

eagle_backend_graph publish(std::unique_ptr<Graph> g) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_graphs.insert(g.get());
    return reinterpret_cast<eagle_backend_graph>(g.release());
}
}  // namespace
}  // namespace eagle_opencl

using namespace eagle_opencl;

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_create(const struct eagle_backend_graph_desc* desc,
                                                             eagle_backend_graph* out) {
    return eagle::guarded("eagle_backend_graph_create", [&] {
        const auto d = eagle::read_desc(desc, "desc");
        eagle::require(out, "out");
        eagle::check_flags(d.flags, 0, "desc->flags");
        check_device(d.device, "desc->device");
        *out = publish(std::make_unique<Graph>());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_from_captured(eagle_backend_captured captured,
                                                                    eagle_backend_graph* out) {
    return eagle::guarded("eagle_backend_graph_from_captured", [&] {
        eagle::require(out, "out");
        auto g = std::make_unique<Graph>();
        g->nodes = captured_nodes(captured);
        g->last = static_cast<int64_t>(g->nodes.size()) - 1;
        *out = publish(std::move(g));
        consume_captured(captured);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_stream(eagle_backend_graph graph, uint64_t stream) {
    return eagle::guarded("eagle_backend_graph_stream", [&] {
        Graph& g = lookup_graph(graph);
        stream_of_raw(stream, "stream");
        g.stream = stream;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_add_node(eagle_backend_graph graph,
                                                               eagle_backend_captured captured) {
    return eagle::guarded("eagle_backend_graph_add_node", [&] {
        Graph& g = lookup_graph(graph);
        auto child = std::make_shared<Node>(Node::Kind::Child);
        child->children = captured_nodes(captured);
        g.nodes.push_back(std::move(child));
        g.last = static_cast<int64_t>(g.nodes.size()) - 1;
        consume_captured(captured);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_launcher(eagle_backend_graph graph,
                                                               eagle_backend_launcher* out) {
    return eagle::guarded("eagle_backend_graph_launcher", [&] {
        eagle::require(out, "out");
        Graph& g = lookup_graph(graph);
        if (g.nodes.empty()) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the graph is empty");
        *out = make_launcher(g.nodes, g.stream);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_last_node(eagle_backend_graph graph, int64_t* index) {
    return eagle::guarded("eagle_backend_graph_last_node", [&] {
        eagle::require(index, "index");
        *index = lookup_graph(graph).last;
    });
}

EAGLE_EXPORT void eagle_backend_graph_release(eagle_backend_graph graph) {
    eagle::guarded_void([&] {
        Graph* g = reinterpret_cast<Graph*>(graph);
        {
            std::lock_guard<std::mutex> lock(g_mu);
            if (!g || !g_graphs.erase(g)) return;
        }
        delete g;
    });
}
