// eagle::gpu::Executor (eagle::cuda::Graph / eagle::hip::Graph): the executor graph.
#include "exec_graph.h"

#include <algorithm>
#include <stdexcept>

#include "gpu.h"

namespace eagle::gpu {

Executor::Executor() { check(gpuGraphCreate(&graph_, 0), "graphCreate"); }

Executor::~Executor() { release(); }

Executor::Executor(Executor&& o) noexcept
    : graph_(o.graph_), exec_(o.exec_), nodes_(std::move(o.nodes_)), deps_(std::move(o.deps_)),
      arena_(std::move(o.arena_)), flat_(o.flat_) {
    o.graph_ = nullptr;
    o.exec_ = nullptr;
    o.flat_ = nullptr;
}

Executor& Executor::operator=(Executor&& o) noexcept {
    if (this != &o) {
        release();
        graph_ = o.graph_;
        exec_ = o.exec_;
        nodes_ = std::move(o.nodes_);
        deps_ = std::move(o.deps_);
        arena_ = std::move(o.arena_);
        flat_ = o.flat_;
        o.graph_ = nullptr;
        o.exec_ = nullptr;
        o.flat_ = nullptr;
    }
    return *this;
}

void Executor::release() noexcept {
    if (exec_) (void)gpuGraphExecDestroy(exec_);
    if (graph_) (void)gpuGraphDestroy(graph_);
    exec_ = nullptr;
    graph_ = nullptr;
}

uint32_t Executor::add_node(const std::vector<uint32_t>& deps, gpuGraph_t child) {
    const uint32_t idx = static_cast<uint32_t>(nodes_.size());
    std::vector<uint32_t> d;
    std::vector<gpuGraphNode_t> native_deps;
    for (uint32_t x : deps) {
        if (x >= idx) throw std::out_of_range("Executor::add_node: a dependency names a later node");
        if (std::find(d.begin(), d.end(), x) != d.end()) continue;
        d.push_back(x);
        native_deps.push_back(nodes_[x]);
    }
    gpuGraphNode_t node = nullptr;
    if (child) {
        check(gpuGraphAddChildGraphNode(&node, graph_, native_deps.data(), native_deps.size(), child),
              "graphAddChildGraphNode");
    } else {
#if defined(EAGLE_GPU_HIP)
        check(hipGraphAddEmptyNode(&node, graph_, native_deps.data(), native_deps.size()), "graphAddEmptyNode");
#else
        check(cudaGraphAddEmptyNode(&node, graph_, native_deps.data(), native_deps.size()), "graphAddEmptyNode");
#endif
    }
    nodes_.push_back(node);
    deps_.push_back(std::move(d));
    if (exec_) {
        (void)gpuGraphExecDestroy(exec_);
        exec_ = nullptr;
    }
    if (arena_.committed()) {
        arena_.reset();
        flat_ = nullptr;
    }
    return idx;
}

void Executor::finalize() {
    if (exec_) return;
    arena_.reset();
    size_t total = 0;
    for (const auto& d : deps_) total += 1 + d.size();
    uint32_t* flat = arena_.allocate_array<uint32_t>(total);
    size_t k = 0;
    for (const auto& d : deps_) {
        flat[k++] = static_cast<uint32_t>(d.size());
        for (uint32_t x : d) flat[k++] = x;
    }
    flat_ = flat;
    arena_.commit();
    check(gpuGraphInstantiate(&exec_, graph_), "graphInstantiate");
}

void Executor::launch(gpuStream_t stream) const {
    if (!exec_) throw std::logic_error("Executor::launch before finalize");
    check(gpuGraphLaunch(exec_, stream), "graphLaunch");
}

}  // namespace eagle::gpu
