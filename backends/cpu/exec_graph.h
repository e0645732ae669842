// eagle::cpu::Graph: the cpu executor graph (satisfies eagle::ExecGraph). Nodes are commands;
// dependencies() is the native-node dependency table; finalize() lays the successor table and
// in-degrees out in the arena and commits it. run() replays it: a chain runs in order on the
// calling thread, a DAG runs its ready branches concurrently on TaskRunner threads.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "command.h"
#include "eagle/ExecGraph.h"

namespace eagle::cpu {

class Graph {
public:
    Graph() = default;
    Graph(Graph&&) noexcept = default;
    Graph& operator=(Graph&&) noexcept = default;
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;

    ByteArena& arena() noexcept { return arena_; }
    const std::vector<std::vector<uint32_t>>& dependencies() const noexcept { return deps_; }
    // Appends a node waiting for `deps` (indices of earlier nodes); returns its index.
    uint32_t add_node(const std::vector<uint32_t>& deps, std::shared_ptr<const Node> node = nullptr);
    // Builds the successor table in the arena and commits it. Idempotent.
    void finalize();
    bool finalized() const noexcept { return finalized_; }

    size_t size() const noexcept { return nodes_.size(); }
    const std::shared_ptr<const Node>& node(size_t i) const { return nodes_.at(i); }
    // A copy of the structure (the node objects are shared; they are immutable).
    Graph clone() const;
    // Replays the graph (must be finalized). Rethrows the first failure of a node.
    void run(const RunSettings* rs) const;
    int64_t kernel_count() const;
    void collect(std::unordered_set<const Node*>& out) const;

private:
    void run_node(uint32_t i, const RunSettings* rs) const;
    struct Exec;
    static void drive(const std::shared_ptr<Exec>& e, uint32_t i);

    std::vector<std::shared_ptr<const Node>> nodes_;
    std::vector<std::vector<uint32_t>> deps_;
    ByteArena arena_;
    bool finalized_ = false;
    bool chain_ = true;
    const uint32_t* succ_begin_ = nullptr;  // arena: n + 1 offsets into succ_
    const uint32_t* succ_ = nullptr;        // arena: successor indices
    const uint32_t* indegree_ = nullptr;    // arena: n in-degrees
};

}  // namespace eagle::cpu

EAGLE_CHECK_EXEC_GRAPH(eagle::cpu::Graph);

#ifdef EAGLE_CPU_ONLY
namespace eagle {
// The executor graph of this build; the cuda build aliases eagle::cuda::Graph instead
// (backends/gpu/exec_graph.h, the same source as eagle::hip::Graph).
using Graph = cpu::Graph;
EAGLE_CHECK_EXEC_GRAPH(eagle::Graph);
}  // namespace eagle
#endif
