// graph.h -- the graph builder and launcher objects shared by graph.cpp and launcher.cpp.
#pragma once

#include "gpu.h"

namespace eagle::gpu {

struct Graph : Handle<0x47524150u> {
    std::shared_ptr<GraphOwner> owner;
    int device = 0;
    bool device_given = false;       // created with device >= 0 (else it follows its first capture)
    gpuStream_t stream = nullptr;
    uint64_t stream_serial = 0;      // stream_serial(stream) when it was set (0: not one of ours)
    gpuGraphNode_t last = nullptr;   // the last node added by graph_add_node
    int64_t added = 0;               // nodes added (graph_last_node = added - 1)
    // snapshot node (of a capture that became a child graph) -> the node inside the child clone
    std::unordered_map<gpuGraphNode_t, gpuGraphNode_t> alias;
};

// Sets the stream a graph or launcher replays on: 0 is the legacy default stream of its device; a
// stream this backend created must be on the handle's device (INVALID_ARGUMENT otherwise).
void bind_stream(int device, uint64_t raw, gpuStream_t* stream, uint64_t* serial, const char* what);

struct LaunchedKernel {
    gpuGraphNode_t node;
    KernelRecordPtr rec;
};

struct Launcher : Handle<0x4c4e4348u> {
    uint64_t stream_checked_at = ~0ull;  // stream_release_generation() when the stream was last found live
    std::shared_ptr<GraphOwner> owner;  // keeps the node handles the exec names alive
    gpuGraphExec_t exec = nullptr;
    int device = 0;
    gpuStream_t stream = nullptr;      // borrowed: the launcher never owns the stream it replays on
    uint64_t stream_serial = 0;        // stream_serial(stream) when it was set (0: not one of ours)
    std::vector<LaunchedKernel> kernels;  // run_device nodes, bodies included
    std::unordered_map<gpuGraphNode_t, gpuGraphNode_t> alias;
    std::unordered_set<gpuGraphNode_t> members;  // every node of the instantiated graph
    bool noted = false;  // in launcher.cpp's set of launched launchers (from its first launch on)
};

}  // namespace eagle::gpu
