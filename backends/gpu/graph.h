// graph.h -- the graph builder and launcher objects shared by graph.cpp and launcher.cpp.
#pragma once

#include "gpu.h"

namespace eagle::gpu {

struct Graph : Checked<0x47524150u> {
    std::shared_ptr<GraphOwner> owner;
    int device = 0;
    gpuStream_t stream = nullptr;
    gpuGraphNode_t last = nullptr;   // the last node added by graph_add_node
    int64_t added = 0;               // nodes added (graph_last_node = added - 1)
    // snapshot node (of a capture that became a child graph) -> the node inside the child clone
    std::unordered_map<gpuGraphNode_t, gpuGraphNode_t> alias;
};

struct LaunchedKernel {
    gpuGraphNode_t node;
    KernelRecordPtr rec;
};

struct Launcher : Checked<0x4c4e4348u> {
    std::shared_ptr<GraphOwner> owner;  // keeps the node handles the exec names alive
    gpuGraphExec_t exec = nullptr;
    int device = 0;
    gpuStream_t stream = nullptr;
    std::vector<LaunchedKernel> kernels;  // run_device nodes, bodies included
    std::unordered_map<gpuGraphNode_t, gpuGraphNode_t> alias;
    std::unordered_set<gpuGraphNode_t> members;  // every node of the instantiated graph
};

}  // namespace eagle::gpu
