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

namespace eagle::gpu {
void bind_stream(int device, uint64_t raw, gpuStream_t* stream, uint64_t* serial, const char* what) {
    gpuStream_t s = as_stream(raw);
    const int d = stream_device(s);
    if (d >= 0 && d != device)
        fail(EAGLE_BACKEND_INVALID_ARGUMENT, std::string("the stream is on device ") + std::to_string(d) + ", the " +
                                                 what + " on device " + std::to_string(device) +
                                                 "; replay on a stream of the " + what + "'s device");
    *stream = s;
    *serial = stream_serial(s);
}
}  // namespace eagle::gpu

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_create(const struct eagle_backend_graph_desc* desc,
                                                             eagle_backend_graph* out) {
    return guarded("eagle_backend_graph_create", [&] {
        auto d = read_desc(desc, "desc");
        require(out, "out");
        check_flags(d.flags, 0, "graph desc->flags");
        auto g = std::make_unique<GraphBuilder>();
        g->device = resolve_device(d.device, 0, false);
        g->device_given = d.device >= 0;
        DeviceGuard guard(g->device);
        g->graph = eagle::Graph::create();
        *out = publish<eagle_backend_graph>(g);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_from_captured(eagle_backend_captured captured,
                                                                    eagle_backend_graph* out) {
    return guarded("eagle_backend_graph_from_captured", [&] {
        auto* c = from_handle<Captured>(captured, "captured");
        require(out, "out");
        require_nonempty(c);
        auto g = std::make_unique<GraphBuilder>();
        g->device = c->device;
        g->device_given = true;
        GraphBuilder* made = g.get();
        *out = publish<eagle_backend_graph>(g);  // nothing is consumed when this throws
        try {
            DeviceGuard guard(made->device);
            made->graph = eagle::Graph::adopt(c->g);  // takes c->g only when it returns
        } catch (...) {
            delete retire<GraphBuilder>(*out);
            *out = nullptr;
            throw;
        }
        c->g = nullptr;
        delete retire<Captured>(captured);  // consumed
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_stream(eagle_backend_graph graph, uint64_t stream) {
    return guarded("eagle_backend_graph_stream", [&] {
        auto* g = from_handle<GraphBuilder>(graph, "graph");
        bind_stream(g->device, stream, &g->stream, &g->stream_serial, "graph");
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_add_node(eagle_backend_graph graph,
                                                               eagle_backend_captured captured) {
    return guarded("eagle_backend_graph_add_node", [&] {
        auto* g = from_handle<GraphBuilder>(graph, "graph");
        auto* c = from_handle<Captured>(captured, "captured");
        require_nonempty(c);
        if (c->device != g->device) {
            // A graph made with device -1 and no node yet follows its first capture's device.
            if (g->device_given || g->graph.size() > 0)
                fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capture was recorded on device " + std::to_string(c->device) +
                                                         ", the graph is on device " + std::to_string(g->device) +
                                                         "; a graph holds the work of one device");
            if (g->stream && stream_device(g->stream) >= 0 && stream_device(g->stream) != c->device)
                fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capture was recorded on device " + std::to_string(c->device) +
                                                         ", the graph's stream is on device " +
                                                         std::to_string(stream_device(g->stream)));
            g->device = c->device;
            g->device_given = true;
        }
        DeviceGuard guard(g->device);
        std::vector<uint32_t> after;
        if (g->graph.size() > 0) after.push_back(static_cast<uint32_t>(g->graph.size() - 1));
        const uint32_t index = g->graph.add_child(after, c->g);  // the graph keeps c->g from here
        gpuGraph_t original = c->g;
        c->g = nullptr;
        // The child is a clone: pair its nodes with the capture's (same creation order) so snapshot
        // nodes and kernel records still find their node.
        gpuGraph_t clone = nullptr;
        check(gpuGraphChildGraphNodeGetGraph(g->graph.native_node(index), &clone), "graphChildGraphNodeGetGraph");
        std::vector<gpuGraphNode_t> orig, copy;
        collect_nodes(original, orig, true, false);  // conditional bodies of a clone cannot be listed
        collect_nodes(clone, copy, true, false);
        if (orig.size() == copy.size()) {
            for (size_t i = 0; i < orig.size(); ++i) {
                g->alias[orig[i]] = copy[i];
                if (auto rec = find_kernel(orig[i])) record_kernel(copy[i], rec);
            }
        }
        delete retire<Captured>(captured);  // consumed
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_launcher(eagle_backend_graph graph, eagle_backend_launcher* out) {
    return guarded("eagle_backend_graph_launcher", [&] {
        auto* g = from_handle<GraphBuilder>(graph, "graph");
        require(out, "out");
        if (g->graph.empty_native()) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the graph is empty");
        auto l = std::make_unique<Launcher>();
        l->device = g->device;
        l->stream = g->stream;
        l->stream_serial = g->stream_serial;
        l->alias = g->alias;
        DeviceGuard guard(g->device);
        // The graph as it is now: a clone of its structure, finalized (instantiated) for this launcher.
        l->graph = g->graph.clone();
        l->graph.finalize();
        l->exec = l->graph.exec();
        for (size_t i = 0; i < l->graph.member_count(); ++i) {
            gpuGraphNode_t n = l->graph.members()[i];
            l->members.insert(n);
            if (auto rec = find_kernel(n)) l->kernels.push_back({n, rec});
        }
        *out = publish<eagle_backend_launcher>(l);  // on a throw, l (and its exec) goes under the guard
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_graph_last_node(eagle_backend_graph graph, int64_t* index) {
    return guarded("eagle_backend_graph_last_node", [&] { *require(index, "index") = static_cast<int64_t>(from_handle<GraphBuilder>(graph, "graph")->graph.size()) - 1; });
}

EAGLE_EXPORT void eagle_backend_graph_release(eagle_backend_graph graph) {
    guarded_void([&] {
        std::unique_ptr<GraphBuilder> g(retire<GraphBuilder>(graph));
        if (!g) return;  // NULL, released or foreign
        DeviceGuard guard(g->device);  // the graph (when no launcher shares it) goes with it
        g.reset();
    });
}
