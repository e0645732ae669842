// Recorded commands (graph nodes) of the cpu backend. A command is immutable once built; the same
// object runs eagerly from a stream queue or at every replay of a graph that recorded it. Its
// address is the raw node value the attribution group hands out.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_set>
#include <vector>

#include "eagle_backend.h"

namespace eagle::cpu {

class Node;
class Graph;

// Per-replay settings of a launcher instance: disabled nodes and the logical size.
struct RunSettings {
    std::unordered_set<const Node*> disabled;
    int64_t logical_size = -1;  // < 0: the recorded sizes
};

class Node {
public:
    enum class Type { Kernel, Copy, Compact, Reorder, Host, Conditional, Child };
    explicit Node(Type type) : type_(type) {}
    virtual ~Node();
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;

    Type type() const noexcept { return type_; }
    // Kernel, copy, compact, reorder and host nodes can be switched off in a launcher.
    bool toggleable() const noexcept { return type_ != Type::Conditional && type_ != Type::Child; }
    // Runs the command; rs is null for eager work. Throws on failure.
    virtual void run(const RunSettings* rs) const = 0;
    // Kernel nodes here and in nested bodies.
    virtual int64_t kernel_count() const { return type_ == Type::Kernel ? 1 : 0; }
    // Adds this node and every node nested in it to `out`.
    virtual void collect(std::unordered_set<const Node*>& out) const { out.insert(this); }

    // Makes the node's address a known raw node value (done when it is recorded).
    void publish() const;
    // 1 / 0: `raw` is a live recorded node that is / is not toggleable; -1: not a live node.
    static int toggleable_of(uint64_t raw) noexcept;

private:
    Type type_;
    mutable bool published_ = false;
};

// run_device: a C function pointer called once per tile with copies of the arguments.
class KernelNode final : public Node {
public:
    using Fn = void (*)(void* const* params, int64_t base, int64_t count, int64_t n_samples);
    KernelNode(Fn fn, const uint64_t* params, const uint64_t* sizes, int64_t nparams, int64_t base,
               int64_t count, int64_t n_samples, uint32_t block);
    void run(const RunSettings* rs) const override;

private:
    Fn fn_;
    std::vector<unsigned char> storage_;
    std::vector<void*> args_;
    int64_t base_, count_, n_samples_;
    uint32_t block_;
};

class CopyNode final : public Node {
public:
    CopyNode(uint64_t dst, uint64_t src, uint64_t bytes) : Node(Type::Copy), dst_(dst), src_(src), bytes_(bytes) {}
    void run(const RunSettings* rs) const override;

private:
    uint64_t dst_, src_, bytes_;
};

class HostNode final : public Node {
public:
    HostNode(eagle_backend_host_fn fn, void* user) : Node(Type::Host), fn_(fn), user_(user) {}
    void run(const RunSettings* rs) const override;

private:
    eagle_backend_host_fn fn_;
    void* user_;
};

// Scratch bytes the filtering commands need.
int64_t compact_scratch_bytes(int64_t n);
int64_t reorder_scratch_bytes(int64_t n);

class CompactNode final : public Node {
public:
    explicit CompactNode(const eagle_backend_compact_desc& d) : Node(Type::Compact), d_(d) {}
    void run(const RunSettings* rs) const override;

private:
    eagle_backend_compact_desc d_;
};

class ReorderNode final : public Node {
public:
    ReorderNode(const eagle_backend_reorder_desc& d, std::vector<eagle_backend_reorder_plane> planes)
        : Node(Type::Reorder), d_(d), planes_(std::move(planes)) {}
    void run(const RunSettings* rs) const override;

private:
    eagle_backend_reorder_desc d_;
    std::vector<eagle_backend_reorder_plane> planes_;
};

// IF / WHILE / SWITCH decided from guard words in (host) memory at every run.
class ConditionalNode final : public Node {
public:
    ConditionalNode(const eagle_backend_conditional_desc& d);
    ~ConditionalNode() override;
    void run(const RunSettings* rs) const override;
    int64_t kernel_count() const override;
    void collect(std::unordered_set<const Node*>& out) const override;

    bool is_loop() const noexcept { return d_.counter_ptr != 0; }
    bool is_switch() const noexcept { return d_.case_count != 0; }
    size_t body_count() const noexcept { return bodies_.size(); }
    const std::shared_ptr<Graph>& body(size_t i) const { return bodies_.at(i); }

private:
    bool guard() const;
    eagle_backend_conditional_desc d_;
    std::vector<std::shared_ptr<Graph>> bodies_;
};

// A whole graph as one node: graph_add_node, or a launcher launched onto a captured stream
// (then it carries that launcher's settings).
class ChildNode final : public Node {
public:
    ChildNode(std::shared_ptr<const Graph> graph, std::shared_ptr<const RunSettings> settings)
        : Node(Type::Child), graph_(std::move(graph)), settings_(std::move(settings)) {}
    void run(const RunSettings* rs) const override;
    int64_t kernel_count() const override;
    void collect(std::unordered_set<const Node*>& out) const override;

private:
    std::shared_ptr<const Graph> graph_;
    std::shared_ptr<const RunSettings> settings_;
};

}  // namespace eagle::cpu
