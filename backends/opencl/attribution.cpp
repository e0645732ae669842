// Group attribution (bit 5) of the opencl backend: snapshots of the nodes a capture has recorded
// (a node's raw value is its address, recording.h), and which of them a launcher can switch off.
#include <cstdlib>

#include "common.h"

using namespace eagle_opencl;

EAGLE_EXPORT eagle_backend_status eagle_backend_capture_snapshot_nodes(uint64_t stream, uint64_t** nodes,
                                                                       int64_t* count) {
    return eagle::guarded("eagle_backend_capture_snapshot_nodes", [&] {
        eagle::require(nodes, "nodes");
        eagle::require(count, "count");
        std::vector<uint64_t> raw;
        {
            std::lock_guard<std::recursive_mutex> lock(capture_mutex());
            Stream& s = stream_of_raw(stream, "stream");
            auto cap = active_capture(s);
            if (!cap) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the stream is not being captured");
            raw.reserve(cap->nodes.size());
            for (const auto& n : cap->nodes) raw.push_back(reinterpret_cast<uint64_t>(n.get()));
        }
        *nodes = eagle::malloc_copy(raw.data(), raw.size());
        *count = static_cast<int64_t>(raw.size());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_is_node_toggleable(uint64_t node, int32_t* toggleable) {
    return eagle::guarded("eagle_backend_is_node_toggleable", [&] {
        eagle::require(toggleable, "toggleable");
        const int t = node_toggleable(node);
        if (t < 0) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "node is not a live recorded node of the opencl backend");
        *toggleable = t;
    });
}
