// attribution.cpp -- node snapshots of a capture in progress, and which nodes can be toggled (bit 5).
#include <cstdlib>

#include "gpu.h"

using namespace eagle;
using namespace eagle::gpu;

EAGLE_EXPORT eagle_backend_status eagle_backend_capture_snapshot_nodes(uint64_t stream, uint64_t** nodes,
                                                                       int64_t* count) {
    return guarded("eagle_backend_capture_snapshot_nodes", [&] {
        require(nodes, "nodes");
        require(count, "count");
        *nodes = nullptr;
        *count = 0;
        require_device();
        if (stream == 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "stream 0 is not being captured");
        CaptureInfo ci = capture_info(as_stream(stream));
        if (ci.status != gpuStreamCaptureStatusActive || !ci.graph)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the stream is not being captured");
        std::vector<gpuGraphNode_t> all;
        collect_nodes(ci.graph, all, false);
        if (all.empty()) return;
        auto* buf = static_cast<uint64_t*>(std::malloc(all.size() * sizeof(uint64_t)));
        if (!buf) throw std::bad_alloc();
        for (size_t i = 0; i < all.size(); ++i) buf[i] = reinterpret_cast<uintptr_t>(all[i]);
        *nodes = buf;
        *count = static_cast<int64_t>(all.size());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_is_node_toggleable(uint64_t node, int32_t* toggleable) {
    return guarded("eagle_backend_is_node_toggleable", [&] {
        require(toggleable, "toggleable");
        *toggleable = 0;
        if (!node) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "node is 0");
#if EAGLE_GPU_HAS_NODE_ENABLE
        gpuGraphNodeType t;
        check(gpuGraphNodeGetType(reinterpret_cast<gpuGraphNode_t>(static_cast<uintptr_t>(node)), &t),
              "graphNodeGetType");
        *toggleable = (t == gpuGraphNodeTypeKernel || t == gpuGraphNodeTypeMemcpy || t == gpuGraphNodeTypeMemset) ? 1 : 0;
#endif
    });
}
