// eagle::cpu::Graph (the executor graph) and the node registry behind raw node values.
#include "exec_graph.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cxxabi.h>
#include <exception>
#include <mutex>
#include <unordered_set>

#include "at_fork.h"
#include "command_context.h"
#include "thread_pool.h"

namespace eagle::cpu {

// ---------------------------------------------------------------- nodes

namespace {
struct NodeRegistry {
    std::mutex mu;
    std::unordered_set<const Node*> live;
};
NodeRegistry& node_registry() {
    static NodeRegistry* r = new NodeRegistry();
    return *r;
}
}  // namespace

void node_registry_at_fork(ForkPhase phase) noexcept {
    if (phase == ForkPhase::Prepare)
        node_registry().mu.lock();
    else
        node_registry().mu.unlock();
}

Node::~Node() {
    if (published_) {
        auto& r = node_registry();
        std::lock_guard<std::mutex> lock(r.mu);
        r.live.erase(this);
    }
}

void Node::publish() const {
    if (published_) return;
    auto& r = node_registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.live.insert(this);
    published_ = true;
}

int Node::toggleable_of(uint64_t raw) noexcept {
    auto& r = node_registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.live.find(reinterpret_cast<const Node*>(raw));
    if (it == r.live.end()) return -1;
    return (*it)->toggleable() ? 1 : 0;
}

// ---------------------------------------------------------------- graph structure

uint32_t Graph::add_node(const std::vector<uint32_t>& deps, std::shared_ptr<const Node> node) {
    const uint32_t idx = static_cast<uint32_t>(nodes_.size());
    std::vector<uint32_t> d;
    d.reserve(deps.size());
    for (uint32_t x : deps) {
        if (x >= idx) throw std::out_of_range("Graph::add_node: a dependency names a later node");
        if (std::find(d.begin(), d.end(), x) == d.end()) d.push_back(x);
    }
    std::sort(d.begin(), d.end());
    nodes_.push_back(std::move(node));
    deps_.push_back(std::move(d));
    if (finalized_) {
        finalized_ = false;
        arena_.reset();
        succ_begin_ = succ_ = indegree_ = nullptr;
    }
    return idx;
}

void Graph::finalize() {
    if (finalized_) return;
    arena_.reset();
    const size_t n = nodes_.size();
    uint32_t* begin = arena_.allocate_array<uint32_t>(n + 1);
    uint32_t* indeg = arena_.allocate_array<uint32_t>(n);
    std::fill(begin, begin + n + 1, 0u);
    size_t edges = 0;
    chain_ = true;
    for (size_t i = 0; i < n; ++i) {
        indeg[i] = static_cast<uint32_t>(deps_[i].size());
        edges += deps_[i].size();
        for (uint32_t d : deps_[i]) ++begin[d + 1];
        const bool link = i == 0 ? deps_[i].empty() : (deps_[i].size() == 1 && deps_[i][0] == i - 1);
        if (!link) chain_ = false;
    }
    for (size_t i = 0; i < n; ++i) begin[i + 1] += begin[i];
    uint32_t* succ = arena_.allocate_array<uint32_t>(edges);
    std::vector<uint32_t> fill(begin, begin + n);
    for (size_t i = 0; i < n; ++i)
        for (uint32_t d : deps_[i]) succ[fill[d]++] = static_cast<uint32_t>(i);
    succ_begin_ = begin;
    succ_ = succ;
    indegree_ = indeg;
    arena_.commit();
    finalized_ = true;
}

Graph Graph::clone() const {
    Graph g;
    g.nodes_ = nodes_;
    g.deps_ = deps_;
    return g;
}

int64_t Graph::kernel_count() const {
    int64_t total = 0;
    for (auto& n : nodes_)
        if (n) total += n->kernel_count();
    return total;
}

void Graph::collect(std::unordered_set<const Node*>& out) const {
    for (auto& n : nodes_)
        if (n) n->collect(out);
}

// ---------------------------------------------------------------- replay

void Graph::run_node(uint32_t i, const RunSettings* rs) const {
    const Node* node = nodes_[i].get();
    if (!node) return;
    if (rs && !rs->disabled.empty() && node->toggleable() && rs->disabled.count(node)) return;
    node->run(rs);
}

struct Graph::Exec {
    const Graph* g;
    const RunSettings* rs;
    std::unique_ptr<std::atomic<uint32_t>[]> pending;
    std::atomic<size_t> left;
    std::atomic<bool> failed{false};
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::exception_ptr err;
    CommandContext ctx;  // the command running the replay; branches on other threads run under it
};

void Graph::drive(const std::shared_ptr<Exec>& e, uint32_t i) {
    const Graph& g = *e->g;
    for (;;) {
        if (!e->failed.load(std::memory_order_relaxed)) {
            try {
                g.run_node(i, e->rs);
            } catch (const abi::__forced_unwind&) {
                throw;  // the thread is being ended (pthread_exit): never swallowed
            } catch (...) {
                std::lock_guard<std::mutex> lock(e->mu);
                if (!e->err) e->err = std::current_exception();
                e->failed = true;
            }
        }
        uint32_t next = UINT32_MAX;
        for (uint32_t k = g.succ_begin_[i]; k < g.succ_begin_[i + 1]; ++k) {
            const uint32_t s = g.succ_[k];
            if (e->pending[s].fetch_sub(1, std::memory_order_acq_rel) == 1) {
                if (next == UINT32_MAX)
                    next = s;
                else
                    TaskRunner::instance().submit([e, s] {
                        CommandScope scope(e->ctx);
                        drive(e, s);
                    });
            }
        }
        if (e->left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard<std::mutex> lock(e->mu);
            e->done = true;
            e->cv.notify_all();
        }
        if (next == UINT32_MAX) return;
        i = next;
    }
}

void Graph::run(const RunSettings* rs) const {
    if (!finalized_) throw std::logic_error("Graph::run before finalize");
    const size_t n = nodes_.size();
    if (n == 0) return;
    if (chain_) {
        for (uint32_t i = 0; i < n; ++i) run_node(i, rs);
        return;
    }
    auto e = std::make_shared<Exec>();
    e->g = this;
    e->rs = rs;
    e->ctx = current_command();
    e->pending.reset(new std::atomic<uint32_t>[n]);
    for (size_t i = 0; i < n; ++i) e->pending[i].store(indegree_[i], std::memory_order_relaxed);
    e->left.store(n);
    std::vector<uint32_t> roots;
    for (uint32_t i = 0; i < n; ++i)
        if (indegree_[i] == 0) roots.push_back(i);
    for (size_t r = 1; r < roots.size(); ++r) {
        const uint32_t root = roots[r];
        TaskRunner::instance().submit([e, root] {
            CommandScope scope(e->ctx);
            drive(e, root);
        });
    }
    drive(e, roots[0]);
    std::unique_lock<std::mutex> lock(e->mu);
    e->cv.wait(lock, [&] { return e->done; });
    if (e->err) std::rethrow_exception(e->err);
}

}  // namespace eagle::cpu
