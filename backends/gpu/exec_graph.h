// exec_graph.h -- eagle::cuda::Graph (and eagle::hip::Graph, from the same source under
// EAGLE_GPU_HIP): the GPU executor graph, satisfying eagle::ExecGraph (eagle/ExecGraph.h).
//
// It owns a native graph (shared through GraphOwner with the graphs cloned from it, so node handles
// stay valid while any of them lives), the native-node dependency table (`dependencies()[i]` lists
// the nodes node i waits for), a scratch arena, and, once finalize() has run, the instantiated
// executable graph. A node is one piece of work appended by add_node (an empty join node) or
// add_child (a captured graph as one child graph node); a graph adopted from a capture starts with
// that whole capture as node 0. A node's exits are the native nodes that finish it: a later node
// depending on it waits for all of them. finalize() lists every native node the instance names
// (conditional bodies included) into the arena, instantiates, and commits the arena; after it
// the graph adds no node. Single-thread-affine, like the seam handles that hold it.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "eagle/ExecGraph.h"
#include "gpu.h"

#if defined(EAGLE_GPU_HIP)
#define EAGLE_GPU_EXEC_NS hip
#else
#define EAGLE_GPU_EXEC_NS cuda
#endif

namespace eagle::EAGLE_GPU_EXEC_NS {

class Graph {
public:
    Graph() = default;  // holds no native graph: made by create() or adopt()
    Graph(Graph&&) noexcept = default;
    Graph& operator=(Graph&&) noexcept = default;
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;

    // An empty native graph on the current device.
    static Graph create();
    // Takes ownership of `captured` (a non-empty captured graph) as node 0, with no dependencies.
    static Graph adopt(gpuGraph_t captured);

    ByteArena& arena() noexcept { return arena_; }
    const std::vector<std::vector<uint32_t>>& dependencies() const noexcept { return deps_; }
    // Appends an empty node (a join point) waiting for `deps` (indices of earlier nodes); its index.
    uint32_t add_node(const std::vector<uint32_t>& deps);
    // Appends `child` as one child graph node (the runtime embeds a clone) waiting for `deps`; the
    // graph keeps `child` itself (ownership passes on success) so its node handles stay unique
    // while they alias the clone's. Returns the new node's index.
    uint32_t add_child(const std::vector<uint32_t>& deps, gpuGraph_t child);
    // Lists the native nodes into the arena, instantiates the executable graph, commits the arena.
    // Idempotent.
    void finalize();

    bool finalized() const noexcept { return exec_ != nullptr; }
    size_t size() const noexcept { return deps_.size(); }
    bool empty_native() const;  // true when the native graph holds no node at all
    // The native node that is node i (its child graph node or empty node; null for an adopted capture).
    gpuGraphNode_t native_node(size_t i) const { return nodes_.at(i); }
    gpuGraph_t native() const noexcept { return owner_ ? owner_->g : nullptr; }
    // The structure, sharing the native graph and its nodes; not finalized.
    Graph clone() const;
    // After finalize(): the executable graph (owned: destroyed with this object, before the native
    // graph) and every native node it names.
    gpuGraphExec_t exec() const noexcept { return exec_.get(); }
    const gpuGraphNode_t* members() const noexcept { return members_; }
    size_t member_count() const noexcept { return member_count_; }

private:
    struct ExecDeleter {
        void operator()(std::remove_pointer_t<gpuGraphExec_t>* e) const noexcept;
    };
    std::vector<gpuGraphNode_t> exits_of(const std::vector<uint32_t>& deps) const;

    std::shared_ptr<gpu::GraphOwner> owner_;  // declared before exec_: the exec goes first
    std::vector<std::vector<uint32_t>> deps_;
    std::vector<gpuGraphNode_t> nodes_;               // native node of each node (null: adopted)
    std::vector<std::vector<gpuGraphNode_t>> exits_;  // native nodes that finish each node
    ByteArena arena_;
    const gpuGraphNode_t* members_ = nullptr;  // arena: every native node of the instance
    size_t member_count_ = 0;
    std::unique_ptr<std::remove_pointer_t<gpuGraphExec_t>, ExecDeleter> exec_;
};

}  // namespace eagle::EAGLE_GPU_EXEC_NS

EAGLE_CHECK_EXEC_GRAPH(eagle::EAGLE_GPU_EXEC_NS::Graph);

namespace eagle {
// The executor graph of this build: eagle::cpu::Graph under EAGLE_CPU_ONLY (backends/cpu/exec_graph.h),
// eagle::cuda::Graph in the cuda build; the hip build, which shares this source, names hip::Graph.
using Graph = EAGLE_GPU_EXEC_NS::Graph;
EAGLE_CHECK_EXEC_GRAPH(eagle::Graph);
}  // namespace eagle
