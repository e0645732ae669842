// exec_graph.cpp -- eagle::cuda::Graph / eagle::hip::Graph (exec_graph.h).
#include "exec_graph.h"

#include <algorithm>
#include <unordered_set>

namespace eagle::EAGLE_GPU_EXEC_NS {

namespace {
// The nodes of `g`'s top level that no edge leaves: the work a later node must wait for.
std::vector<gpuGraphNode_t> sinks(gpuGraph_t g) {
    size_t n = 0;
    gpu::check(gpuGraphGetNodes(g, nullptr, &n), "graphGetNodes");
    std::vector<gpuGraphNode_t> nodes(n);
    if (n) gpu::check(gpuGraphGetNodes(g, nodes.data(), &n), "graphGetNodes");
    nodes.resize(n);
    size_t e = 0;
    gpu::check(gpuGraphGetEdges(g, nullptr, nullptr, &e), "graphGetEdges");
    std::vector<gpuGraphNode_t> from(e), to(e);
    if (e) gpu::check(gpuGraphGetEdges(g, from.data(), to.data(), &e), "graphGetEdges");
    from.resize(e);
    const std::unordered_set<gpuGraphNode_t> has_successor(from.begin(), from.end());
    std::vector<gpuGraphNode_t> out;
    for (gpuGraphNode_t node : nodes)
        if (!has_successor.count(node)) out.push_back(node);
    return out;
}
}  // namespace

void Graph::ExecDeleter::operator()(std::remove_pointer_t<gpuGraphExec_t>* e) const noexcept {
    if (gpuGraphExecDestroy(e) != gpuSuccess) (void)gpuGetLastError();
}

Graph Graph::create() {
    Graph out;
    out.owner_ = std::make_shared<gpu::GraphOwner>();
    gpu::check(gpuGraphCreate(&out.owner_->g, 0), "graphCreate");
    return out;
}

Graph Graph::adopt(gpuGraph_t captured) {
    Graph out;
    auto exits = sinks(captured);  // before ownership passes: a failure here consumes nothing
    out.owner_ = std::make_shared<gpu::GraphOwner>();
    out.owner_->g = captured;
    out.deps_.emplace_back();
    out.nodes_.push_back(nullptr);
    out.exits_.push_back(std::move(exits));
    return out;
}

std::vector<gpuGraphNode_t> Graph::exits_of(const std::vector<uint32_t>& deps) const {
    if (exec_) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the executor graph is finalized; it adds no node");
    if (!owner_) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the executor graph holds no native graph");
    std::vector<gpuGraphNode_t> out;
    for (uint32_t d : deps) {
        if (d >= exits_.size())
            eagle::fail(EAGLE_BACKEND_INDEX, "dependency " + std::to_string(d) + " names no earlier node (" +
                                               std::to_string(exits_.size()) + " nodes)");
        out.insert(out.end(), exits_[d].begin(), exits_[d].end());
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

uint32_t Graph::add_node(const std::vector<uint32_t>& deps) {
    const auto wait = exits_of(deps);
    gpuGraphNode_t node = nullptr;
    gpu::check(gpuGraphAddEmptyNode(&node, owner_->g, wait.empty() ? nullptr : wait.data(), wait.size()),
               "graphAddEmptyNode");
    deps_.push_back(deps);
    nodes_.push_back(node);
    exits_.push_back({node});
    return static_cast<uint32_t>(deps_.size() - 1);
}

uint32_t Graph::add_child(const std::vector<uint32_t>& deps, gpuGraph_t child) {
    const auto wait = exits_of(deps);
    owner_->keep.reserve(owner_->keep.size() + 1);  // the push below cannot throw after the node exists
    gpuGraphNode_t node = nullptr;
    gpu::check(gpuGraphAddChildGraphNode(&node, owner_->g, wait.empty() ? nullptr : wait.data(), wait.size(), child),
               "graphAddChildGraphNode");
    owner_->keep.push_back(child);
    deps_.push_back(deps);
    nodes_.push_back(node);
    exits_.push_back({node});
    return static_cast<uint32_t>(deps_.size() - 1);
}

bool Graph::empty_native() const {
    if (!owner_ || !owner_->g) return true;
    size_t n = 0;
    gpu::check(gpuGraphGetNodes(owner_->g, nullptr, &n), "graphGetNodes");
    return n == 0;
}

Graph Graph::clone() const {
    Graph out;
    out.owner_ = owner_;
    out.deps_ = deps_;
    out.nodes_ = nodes_;
    out.exits_ = exits_;
    return out;
}

void Graph::finalize() {
    if (exec_) return;
    if (!owner_) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the executor graph holds no native graph");
    std::vector<gpuGraphNode_t> all;
    gpu::collect_nodes(owner_->g, all, true);
    auto* table = arena_.allocate_array<gpuGraphNode_t>(all.size());
    std::copy(all.begin(), all.end(), table);
    gpuGraphExec_t e = nullptr;
    gpu::check(gpuGraphInstantiate(&e, owner_->g), "graphInstantiate");
    exec_.reset(e);
    members_ = table;
    member_count_ = all.size();
    arena_.commit();
}

}  // namespace eagle::EAGLE_GPU_EXEC_NS
