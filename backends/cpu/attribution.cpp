// Group attribution (bit 5): snapshots of the nodes a capture has recorded, and which can toggle.
#include <cstdlib>

#include "runtime.h"

using namespace eagle;
using namespace eagle::cpu;

EAGLE_EXPORT eagle_backend_status eagle_backend_capture_snapshot_nodes(uint64_t stream, uint64_t** nodes,
                                                                       int64_t* count) {
    return guarded("eagle_backend_capture_snapshot_nodes", [&] {
        require(nodes, "nodes");
        require(count, "count");
        auto s = resolve_stream(stream, "stream");
        std::vector<uint64_t> raw;
        {
            std::lock_guard<std::recursive_mutex> lock(capture_mutex());
            auto cap = s->capture && !s->capture->ended ? s->capture : nullptr;
            if (!cap) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the stream is not being captured");
            const Graph& g = *cap->graph;
            raw.reserve(g.size());
            for (size_t i = 0; i < g.size(); ++i) raw.push_back(reinterpret_cast<uint64_t>(g.node(i).get()));
        }
        *nodes = eagle::malloc_copy(raw.data(), raw.size());
        *count = static_cast<int64_t>(raw.size());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_is_node_toggleable(uint64_t node, int32_t* toggleable) {
    return guarded("eagle_backend_is_node_toggleable", [&] {
        require(toggleable, "toggleable");
        const int t = Node::toggleable_of(node);
        if (t < 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "node is not a live recorded node of the cpu backend");
        *toggleable = t;
    });
}
