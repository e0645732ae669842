// graph.h -- the graph builder and launcher objects shared by graph.cpp and launcher.cpp.
#pragma once

#include "exec_graph.h"
#include "gpu.h"

namespace eagle::gpu {

// The seam's graph handle: an executor graph (eagle::Graph, exec_graph.h) and what the seam adds.
struct GraphBuilder : Handle<0x47524150u> {
    eagle::Graph graph;              // its nodes are chained: each waits for the one before
    int device = 0;
    bool device_given = false;       // created with device >= 0 (else it follows its first capture)
    gpuStream_t stream = nullptr;
    uint64_t stream_serial = 0;      // stream_serial(stream) when it was set (0: not one of ours)
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
    eagle::Graph graph;                // finalized: owns the exec and keeps the nodes it names alive
    gpuGraphExec_t exec = nullptr;     // graph.exec(), for the hot path
    int device = 0;
    gpuStream_t stream = nullptr;      // borrowed: the launcher never owns the stream it replays on
    uint64_t stream_serial = 0;        // stream_serial(stream) when it was set (0: not one of ours)
    std::vector<LaunchedKernel> kernels;  // run_device nodes, bodies included
    std::unordered_map<gpuGraphNode_t, gpuGraphNode_t> alias;
    std::unordered_set<gpuGraphNode_t> members;  // every node of the instantiated graph
    bool noted = false;  // in launcher.cpp's set of launched launchers (from its first launch on)
};

}  // namespace eagle::gpu
