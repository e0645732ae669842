// eagle::gpu::Executor: the GPU executor graph (satisfies eagle::ExecGraph), exposed as
// eagle::cuda::Graph or eagle::hip::Graph. Node i is a native graph node: an empty node, or a child
// graph node embedding a captured graph; dependencies() mirrors the native edges. finalize()
// lays the dependency table out in the arena, commits it, and instantiates the native graph.
#pragma once

#include <cstdint>
#include <vector>

#include "eagle/ExecGraph.h"
#include "runtime.h"

namespace eagle::gpu {

class Executor {
public:
    Executor();
    ~Executor();
    Executor(Executor&& other) noexcept;
    Executor& operator=(Executor&& other) noexcept;
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    ByteArena& arena() noexcept { return arena_; }
    const std::vector<std::vector<uint32_t>>& dependencies() const noexcept { return deps_; }
    // Appends a node waiting for `deps` (indices of earlier nodes): a child graph node cloning
    // `child` when given, else an empty node. Returns its index.
    uint32_t add_node(const std::vector<uint32_t>& deps, gpuGraph_t child = nullptr);
    // Lays the dependency table out in the arena, commits it and instantiates. Idempotent.
    void finalize();
    // Replays the finalized graph on `stream`.
    void launch(gpuStream_t stream) const;

    size_t size() const noexcept { return nodes_.size(); }
    gpuGraph_t native() const noexcept { return graph_; }
    gpuGraphNode_t native_node(size_t i) const { return nodes_.at(i); }
    const uint32_t* flat_dependencies() const noexcept { return flat_; }

private:
    void release() noexcept;

    gpuGraph_t graph_ = nullptr;
    gpuGraphExec_t exec_ = nullptr;
    std::vector<gpuGraphNode_t> nodes_;
    std::vector<std::vector<uint32_t>> deps_;
    ByteArena arena_;
    const uint32_t* flat_ = nullptr;  // arena: for each node, its count then its dependencies
};

}  // namespace eagle::gpu

EAGLE_CHECK_EXEC_GRAPH(eagle::gpu::Executor);

#if defined(EAGLE_GPU_HIP)
namespace eagle::hip {
using Graph = ::eagle::gpu::Executor;
}
EAGLE_CHECK_EXEC_GRAPH(eagle::hip::Graph);
#else
namespace eagle::cuda {
using Graph = ::eagle::gpu::Executor;
}
EAGLE_CHECK_EXEC_GRAPH(eagle::cuda::Graph);
#ifndef EAGLE_CPU_ONLY
namespace eagle {
// The executor graph of this build (the cpu backend aliases its own under EAGLE_CPU_ONLY).
using Graph = cuda::Graph;
EAGLE_CHECK_EXEC_GRAPH(eagle::Graph);
}  // namespace eagle
#endif
#endif
