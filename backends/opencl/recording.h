// What a capture of the opencl backend records, and where one seam call's work goes (Target).
//
// OpenCL has no stream capture. Where the device offers cl_khr_command_buffer, the backend makes
// its own: while a stream is being captured, each seam call that enqueues work on it (run_device,
// compact_device, reorder_device, memcpy, host_func, a launcher's launch) records one Node
// instead of enqueueing. A Node holds Commands: a kernel launch (a clone of the kernel with the
// arguments it had at record time: clCloneKernel, since PoCL 3.1's command buffers read a kernel's
// arguments when the buffer is enqueued, not when the command is recorded), a copy
// (clEnqueueSVMMemcpy's arguments) or a host call. Nothing runs at record time.
//
// A launcher (launcher.cpp) replays the nodes in record order as segments: each run of
// consecutive kernel commands is one cl_command_buffer_khr, and each copy or host call between
// them is enqueued on the launch stream as it would be eagerly (cl_khr_command_buffer 0.9.0 has no
// SVM copy command, and a host function cannot be in a command buffer). The launch stream is one
// in-order queue, so the segments run in record order.
//
// Fork branches forked under capture record into their origin's capture, in the order the calls
// are made: a replay runs the branches one after the other, which is one of the orders the fork
// allows (each branch after the origin's earlier work, the origin's later work after all).
#pragma once

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace eagle_opencl {

// One recorded enqueue; immutable once recorded.
struct Command {
    enum class Kind { Kernel, Copy, Host };
    Kind kind = Kind::Kernel;
    // Kernel: a clone holding the recorded arguments. It is never enqueued itself: each build of a
    // launcher clones it again (its own arguments and live allocations), so a replay in flight
    // never sees arguments change.
    cl_kernel kernel = nullptr;
    size_t global = 0, local = 0;
    // run_device over a whole run (base 0, count == n_samples): launcher_set_logical_size
    // rewrites its count and n_samples, the arguments at triple + 1 and triple + 2.
    bool whole_run = false;
    cl_uint triple = 0;
    // Copy: clEnqueueSVMMemcpy(dst, src, bytes) at every replay.
    void* dst = nullptr;
    const void* src = nullptr;
    size_t bytes = 0;
    // Host: called in stream order at every replay, with the stream it runs on.
    std::function<void(Stream&)> fn;

    Command() = default;
    Command(const Command&) = delete;
    Command& operator=(const Command&) = delete;
    ~Command();
};

struct Node;
// Per-launcher settings: nodes switched off and the logical size (< 0: the recorded sizes).
struct Settings {
    std::unordered_set<const Node*> disabled;
    int64_t logical_size = -1;
};

// What one seam call recorded: its raw node value (attribution) is its address. A Child is a
// graph appended with graph_add_node (its nodes follow the launcher's settings), or a launcher
// launched onto a stream being captured (`frozen`: that launcher's settings at the launch).
struct Node {
    enum class Kind { Kernel, Compact, Reorder, Copy, Host, Child };
    const Kind kind;
    std::vector<std::shared_ptr<const Command>> commands;
    std::vector<std::shared_ptr<const Node>> children;
    std::shared_ptr<const Settings> frozen;

    explicit Node(Kind k);  // registers the node (node_toggleable knows it while it lives)
    ~Node();
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;
    // Every node but a child can be switched off in a launcher.
    bool toggleable() const noexcept { return kind != Kind::Child; }
    // run_device nodes here and in children.
    int64_t kernel_count() const;
    // This node and the nodes of its children that follow a launcher's settings.
    void collect(std::unordered_set<const Node*>& out) const;
};
// 1 / 0: `raw` is a live node that is / is not toggleable; -1: not a live node.
int node_toggleable(uint64_t raw) noexcept;

using Nodes = std::vector<std::shared_ptr<const Node>>;

// One capture: the nodes recorded so far, in record order.
struct CaptureState {
    Nodes nodes;
    bool ended = false;
    bool broken = false;
    std::string why;            // why it broke
    int attached_branches = 0;  // fork branches recording into it, not yet joined
    void brk(const std::string& reason) {
        if (!broken) why = reason;
        broken = true;
    }
};
// Guards Stream::capture of every stream and every CaptureState.
std::recursive_mutex& capture_mutex();
// The capture `s` records into, or null; INVALID_ARGUMENT for a branch of a capture that has
// ended. The caller holds capture_mutex.
std::shared_ptr<CaptureState> active_capture(Stream& s);

// Where the work of one seam call goes: enqueued on the stream at once (after enqueue_stream's
// ordering with the default stream), or, while the stream is being captured, recorded as one node
// of kind `kind`, appended by commit() (a call that fails before commit records nothing).
class Target {
public:
    Target(uint64_t raw, const char* name, Node::Kind kind);
    bool recording() const noexcept { return cap_ != nullptr; }
    // The stream the work goes to (eagerly) or is recorded from.
    Stream& stream() const noexcept { return *s_; }
    // k's arguments are set (the caller holds the lock that serialises k): enqueued with the live
    // allocations, or cloned into the node.
    void kernel(cl_kernel k, size_t global, size_t local, bool whole_run = false, cl_uint triple = 0);
    void copy(void* dst, const void* src, size_t bytes);
    void host(std::function<void(Stream&)> fn);
    void commit();

private:
    Stream* s_ = nullptr;
    std::shared_ptr<CaptureState> cap_;
    std::shared_ptr<Node> node_;
};

// Records `node` into the capture s records into; the caller holds capture_mutex.
void record(CaptureState& cap, std::shared_ptr<const Node> node);
}  // namespace eagle_opencl
