// graph.cpp -- the graph builder (bit 6): a graph from one capture, or captures appended as child
// graph nodes, instantiated by graph_launcher.
#include "graph.h"

using namespace eagle;
using namespace eagle::gpu;

namespace {
void require_nonempty(Captured* c) {
    size_t n = 0;
    check(gpuGraphGetNodes(c->g, nullptr, &n), "graphGetNodes");
    if (n == 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capture recorded no work (an empty capture)");
}
}  // namespace

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_create(const struct eagle_backend_graph_desc* desc,
                                                             eagle_backend_graph* out) {
    return guarded("graph_create", [&] {
        auto d = read_desc(desc, "desc");
        require(out, "out");
        if (d.flags) fail(EAGLE_BACKEND_UNSUPPORTED, "unknown graph flags " + std::to_string(d.flags));
        auto g = std::make_unique<Graph>();
        g->device = resolve_device(d.device, 0, false);
        g->owner = std::make_shared<GraphOwner>();
        DeviceGuard guard(g->device);
        check(gpuGraphCreate(&g->owner->g, 0), "graphCreate");
        *out = reinterpret_cast<eagle_backend_graph>(g.release());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_from_captured(eagle_backend_captured captured,
                                                                    eagle_backend_graph* out) {
    return guarded("graph_from_captured", [&] {
        auto* c = from_handle<Captured>(captured, "captured");
        require(out, "out");
        require_nonempty(c);
        auto g = std::make_unique<Graph>();
        g->device = c->device;
        g->owner = std::make_shared<GraphOwner>();
        g->owner->g = c->g;
        g->added = 1;
        c->g = nullptr;
        delete c;
        *out = reinterpret_cast<eagle_backend_graph>(g.release());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_stream(eagle_backend_graph graph, uint64_t stream) {
    return guarded("graph_stream", [&] { from_handle<Graph>(graph, "graph")->stream = as_stream(stream); });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_add_node(eagle_backend_graph graph,
                                                               eagle_backend_captured captured) {
    return guarded("graph_add_node", [&] {
        auto* g = from_handle<Graph>(graph, "graph");
        auto* c = from_handle<Captured>(captured, "captured");
        require_nonempty(c);
        DeviceGuard guard(g->device);
        gpuGraphNode_t node = nullptr;
        check(gpuGraphAddChildGraphNode(&node, g->owner->g, g->last ? &g->last : nullptr, g->last ? 1 : 0, c->g),
              "graphAddChildGraphNode");
        // The child is a clone: pair its nodes with the capture's (same creation order) so snapshot
        // nodes and kernel records still find their node.
        gpuGraph_t clone = nullptr;
        check(gpuGraphChildGraphNodeGetGraph(node, &clone), "graphChildGraphNodeGetGraph");
        std::vector<gpuGraphNode_t> orig, copy;
        collect_nodes(c->g, orig, true, false);  // conditional bodies of a clone cannot be listed
        collect_nodes(clone, copy, true, false);
        if (orig.size() == copy.size()) {
            for (size_t i = 0; i < orig.size(); ++i) {
                g->alias[orig[i]] = copy[i];
                if (auto rec = find_kernel(orig[i])) record_kernel(copy[i], rec);
            }
        }
        g->owner->keep.push_back(c->g);  // kept so its node handles are never reused while aliased
        c->g = nullptr;
        delete c;
        g->last = node;
        g->added += 1;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_launcher(eagle_backend_graph graph, eagle_backend_launcher* out) {
    return guarded("graph_launcher", [&] {
        auto* g = from_handle<Graph>(graph, "graph");
        require(out, "out");
        std::vector<gpuGraphNode_t> nodes;
        collect_nodes(g->owner->g, nodes, true);
        if (nodes.empty()) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the graph is empty");
        auto l = std::make_unique<Launcher>();
        l->owner = g->owner;
        l->device = g->device;
        l->stream = g->stream;
        l->alias = g->alias;
        for (gpuGraphNode_t n : nodes) {
            l->members.insert(n);
            if (auto rec = find_kernel(n)) l->kernels.push_back({n, rec});
        }
        DeviceGuard guard(g->device);
        check(gpuGraphInstantiate(&l->exec, g->owner->g), "graphInstantiate");
        *out = reinterpret_cast<eagle_backend_launcher>(l.release());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_last_node(eagle_backend_graph graph, int64_t* index) {
    return guarded("graph_last_node", [&] { *require(index, "index") = from_handle<Graph>(graph, "graph")->added - 1; });
}

EAGLE_EXPORT void eagle_backend_graph_release(eagle_backend_graph graph) {
    guarded_void([&] {
        if (!graph) return;
        delete from_handle<Graph>(graph, "graph");
    });
}
