// gpu.h -- the shared GPU backend's internal objects and helpers (cuda and hip kinds).
//
// Everything here is written against runtime.h's gpu* names. The few calls that differ in substance
// between the runtimes (launching a kernel handle, rewriting a kernel node, probing the driver) are
// declared in namespace native and defined once per kind (backends/cuda/native.cpp,
// backends/hip/native.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "eagle/backend_kit.h"
#include "handle_registry.h"
#include "module_common.h"
#include "runtime.h"

namespace eagle::gpu {

// ---------------------------------------------------------------- errors

// Throws (via eagle::fail) when e is not success: "<what>: <errorName>: <errorString>".
void check(gpuError_t e, const char* what);
// Maps a runtime error to a seam status (INDEX for a bad device, UNAVAILABLE for no driver, ...).
eagle_backend_status status_of(gpuError_t e);
// Throws UNAVAILABLE with the probe's reason unless a device is usable. Cached after success.
void require_device();
// The probe's answer: empty when a device is usable, else the reason.
std::string probe_reason();

// ---------------------------------------------------------------- devices

inline gpuStream_t as_stream(uint64_t raw) { return reinterpret_cast<gpuStream_t>(static_cast<uintptr_t>(raw)); }
inline uint64_t as_raw(gpuStream_t s) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(s)); }

int device_count();
// Streams this backend created, with their device (so no runtime query touches a capturing stream)
// and a serial number unique to each registration (so a handle that outlives the stream it names
// can tell that the stream was released, even when the runtime reuses the address).
uint64_t stream_register(gpuStream_t s, int device);
void stream_unregister(gpuStream_t s);
// The serial of a stream this backend created and has not released yet; 0 for any other stream
// (foreign, the default streams, or released).
uint64_t stream_serial(gpuStream_t s);
// Counts stream releases: a handle that checked its stream at generation G need not look again
// while the generation is still G (a lock-free fast path for launches).
uint64_t stream_release_generation();
// True when `serial` (from stream_serial, when the stream was handed over) names a stream this
// backend has released since: its release waited for its work, and it must not be used again.
bool stream_released(gpuStream_t s, uint64_t serial);
// The device of a stream this backend created, -1 for any other.
int stream_device(gpuStream_t s);
int current_device();
// The device of a raw stream: one this backend created, or (cuda) one the runtime can place when it
// is not capturing; -1 when unknown (0, the default streams on hip, a capturing foreign stream).
int device_of_stream(uint64_t stream);
// Resolves a desc's device: `requested` >= 0 is checked against the device count (INDEX);
// -1 is the device of `stream` (when has_stream and the runtime can tell), else the current device.
int resolve_device(int32_t requested, uint64_t stream, bool has_stream);

// Makes `device` current for its lifetime and restores the previous current device.
class DeviceGuard {
public:
    explicit DeviceGuard(int device);
    ~DeviceGuard();
    DeviceGuard(const DeviceGuard&) = delete;
    DeviceGuard& operator=(const DeviceGuard&) = delete;

private:
    int previous_ = -1;
    bool switched_ = false;
};

// ---------------------------------------------------------------- capture state

struct CaptureInfo {
    gpuStreamCaptureStatus status = gpuStreamCaptureStatusNone;
    gpuGraph_t graph = nullptr;
    std::vector<gpuGraphNode_t> deps;
};
CaptureInfo capture_info(gpuStream_t s);
bool is_capturing(gpuStream_t s);
// streamQuery: true when the work on `s` has finished, false while it runs; ERROR (`failed`
// followed by the runtime's error) when that work failed, after writing 1 to *done (when done is
// not NULL): failed work has finished (stream.cpp).
bool query_stream(gpuStream_t s, const char* failed, int32_t* done);
// Finishes the launchers released while their stream was being captured (launcher.cpp) whose
// stream is no longer captured. Called where a capture may have ended.
void finish_deferred_launchers() noexcept;

// Graphs that are conditional bodies being captured (host nodes are refused there), each with the
// graph of the outermost capture it is nested in (its root).
void body_graph_add(gpuGraph_t g, gpuGraph_t root);
void body_graph_remove(gpuGraph_t g);
bool body_graph_contains(gpuGraph_t g);
// The root of a body being captured; any other graph is its own root.
gpuGraph_t body_graph_root(gpuGraph_t g);

// Every node of g in creation order, descending into child graphs (and, on cuda, conditional
// bodies) depth first; `out` gets (node, type) pairs.
void collect_nodes(gpuGraph_t g, std::vector<gpuGraphNode_t>& out, bool recurse, bool bodies = true);

// ---------------------------------------------------------------- events

// A process-wide pool of timing-free events per device. acquire/release are cheap; created()
// counts the events ever made.
gpuEvent_t event_acquire(int device);
void event_release(int device, gpuEvent_t e);
int64_t event_created();

// ---------------------------------------------------------------- kernel records

// What run_device launched under capture, kept so a launcher can re-partition the node.
struct KernelRecord {
    uint64_t function = 0;
    uint32_t block = 0;
    int64_t base = 0, count = 0, n_samples = 0;
    std::vector<uint8_t> storage;       // every argument's bytes, each at offsets[i]
    std::vector<uint32_t> offsets;
    // Arguments after the partition triple (the kernel WHILE fold's five; 0 otherwise): the triple
    // is at offsets[size - hidden - 3 ...].
    uint32_t hidden = 0;
};
using KernelRecordPtr = std::shared_ptr<const KernelRecord>;

void record_kernel(gpuGraphNode_t node, KernelRecordPtr rec);
KernelRecordPtr find_kernel(gpuGraphNode_t node);
void forget_nodes(gpuGraph_t g);   // drops records of every node of g (recursively)
void forget_capture(gpuStream_t s) noexcept;  // forget_nodes of what a capture on s recorded so far

// ---------------------------------------------------------------- handles

// Every handle type carries a distinct nonzero tag. Live handles are kept in one registry
// (eagle::HandleRegistry, shared with the cpu backend): a handle is published when created, retired
// before its object is freed, and looked up before every use, so a released, consumed, foreign or
// mistyped handle is BAD_HANDLE and no call reads the memory of a freed object.
template <uint32_t Tag>
struct Handle {
    static_assert(Tag != 0, "tag 0 means 'not a live handle'");
    static constexpr uint32_t kTag = Tag;
};

// The live handles of this backend, by address, with their tags (leaked: valid during exit).
HandleRegistry<uint32_t>& handles();

// fork() (at_fork.cpp): in a child, the handles made before the fork (moved here from handles()
// by the child's atfork handler), refused with UNAVAILABLE by from_handle and leaked by retire.
HandleRegistry<uint32_t>& made_before_fork();
// Throws UNAVAILABLE: the `name` handle was made before fork() in the parent process.
[[noreturn]] void fail_made_before_fork(const char* name);
// probe_reason calls it before it first reaches the runtime: a child forked after it cannot use it.
void note_runtime_used() noexcept;
// Why this process cannot use the runtime (it was forked after its parent used it), or empty.
std::string forked_reason();
// Takes (true) or releases (false) the stream table's lock around fork() (core.cpp).
void streams_at_fork(bool take) noexcept;

struct Stream : Handle<0x5354524du> {
    gpuStream_t s = nullptr;
    int device = 0;
};

struct Capturer : Handle<0x43415054u> {
    gpuStream_t s = nullptr;
    int device = 0;
    bool begun = false;
};

// A graph whose lifetime is shared by a Graph and the launchers made from it (node handles must
// outlive every exec that names them).
struct GraphOwner {
    gpuGraph_t g = nullptr;
    std::vector<gpuGraph_t> keep;   // captured graphs embedded as child nodes (their node handles alias)
    ~GraphOwner();
};

struct Captured : Handle<0x43415044u> {
    gpuGraph_t g = nullptr;
    int device = 0;
    ~Captured();
};


// Converts a handle to its object: BAD_HANDLE for NULL (as on cpu) and when it is not a live
// handle of T's type. Reads only the registry.
template <class T, class H>
T* from_handle(H h, const char* name) {
    if (!h) fail(EAGLE_BACKEND_BAD_HANDLE, std::string(name) + " is NULL");
    const void* key = reinterpret_cast<const void*>(h);
    if (handles().find(key, [](uint32_t tag) { return tag == T::kTag; }) == 0) {
        if (made_before_fork().find(key, [](uint32_t tag) { return tag == T::kTag; }) != 0)
            fail_made_before_fork(name);
        fail(EAGLE_BACKEND_BAD_HANDLE, std::string(name) + " is not a live " + name +
                                           " handle of this backend (released, consumed or foreign)");
    }
    return reinterpret_cast<T*>(h);
}

// Registers a new object and hands it out as the seam handle type H: ownership passes from `obj`
// to the handle. When registering throws, `obj` still owns the object.
template <class H, class T>
H publish(std::unique_ptr<T>& obj) {
    handles().add(obj.get(), T::kTag);
    return reinterpret_cast<H>(obj.release());
}

// Unregisters a live handle of T's type and returns its object for the caller to free; null
// (nothing removed) for NULL, released, foreign or mistyped handles.
template <class T, class H>
T* retire(H h) noexcept {
    if (!h) return nullptr;
    const void* key = reinterpret_cast<const void*>(h);
    return handles().take(key, [](uint32_t tag) { return tag == T::kTag; }) ? reinterpret_cast<T*>(h) : nullptr;
}

// ---------------------------------------------------------------- the WHILE fold (cuda only)
#if !defined(EAGLE_GPU_HIP)
// A WHILE whose guard is `*count != 0` (no baseline word) and whose body ends with a compaction
// writing `count` needs no setter kernel after it: the compaction's last block takes the decision
// (filtering_kernels.cuh, CompactArgs::loop_set). conditional.cu keeps the WHILE bodies being
// captured; compact_device offers its kernel node; the body's end takes the offer when that node
// is the body's only sink and the body stream's only capture dependency, and otherwise ends the
// body with the setter kernel as before.
//
// The kernel fold (kernel_fold.cpp) does the same for a kernel compiled from EAGLE_KERNEL, whose
// module has the `eagle_while_end_<N>_<name>` entry (eagle/kernel.h): it ends any WHILE, baseline or not.
struct WhileFold {
    gpuGraph_t body = nullptr;        // the body graph being captured
    gpuGraph_t root = nullptr;        // the graph of the outermost capture it is nested in
    uint64_t handle = 0;              // the WHILE's cudaGraphConditionalHandle
    const uint32_t* count = nullptr;  // its guard words
    const uint32_t* baseline = nullptr;
    uint32_t* cell = nullptr;         // its [remaining, ran] cell
};
// True (and *out filled) when s is capturing the body of a WHILE whose guard is `*count != 0`.
// One relaxed atomic load when no WHILE body is open anywhere. Throws nothing.
bool while_fold_target(gpuStream_t s, const uint32_t* count, WhileFold* out) noexcept;
// True (and *out filled) when s is capturing the body of any WHILE. Throws nothing.
bool while_body_target(gpuStream_t s, WhileFold* out) noexcept;
// Rewrites an offered node so that it sets the loop's condition (returns the runtime's status).
struct FoldEnabler {
    virtual ~FoldEnabler() = default;
    virtual gpuError_t enable() noexcept = 0;
};
// Offers `node`, a kernel node just captured into the body `body` (from while_fold_target), as the
// body's last word. `enable` is called at most once, at the body's end, and only while the body is
// still being captured. A later offer for the same body replaces this one (only the last
// compaction can be the last word).
void while_fold_offer(gpuGraph_t body, gpuGraphNode_t node, std::unique_ptr<FoldEnabler> enable) noexcept;

// The kernel fold (kernel_fold.cpp). module.cpp tells it each kernel handle it hands out whose
// module also has the handle's WHILE-end entry (for a kernel of `nargs` declared arguments), and
// forgets them when the module is unloaded. `device` gets its first ticket words then, outside any
// capture as a rule.
void kernel_fold_learn(uint64_t function, uint64_t while_end, int64_t nargs, int device) noexcept;
void kernel_fold_forget(uint64_t function) noexcept;
// run_device calls it for a kernel node `node` just captured on s from `rec` on `device`: when s is
// capturing a WHILE body and rec's function has a WHILE-end variant, the node is offered to end the
// body's iterations.
void offer_kernel_fold(gpuStream_t s, gpuGraphNode_t node, const KernelRecordPtr& rec, int device) noexcept;
#endif

// ---------------------------------------------------------------- per-kind native layer

namespace native {
// Why the driver cannot be used ("" when it can).
std::string driver_reason();
// Launches a kernel handle with argument pointers `args` (nparams + 3) on stream s.
void launch(uint64_t function, uint32_t grid, uint32_t block, gpuStream_t s, void** args);
// Byte size of parameter i of `function`, or 0 when the runtime cannot tell.
size_t param_size(uint64_t function, int64_t i);
// Rewrites a kernel node of an exec graph to launch `function` over `grid` blocks with `args`.
void exec_set_kernel(gpuGraphExec_t exec, gpuGraphNode_t node, uint64_t function, uint32_t grid, uint32_t block,
                     void** args);
#if !defined(EAGLE_GPU_HIP)
// Rewrites a kernel node of a graph (not yet instantiated) the same way; returns the driver's
// result (0 success) and throws nothing.
int graph_set_kernel(gpuGraphNode_t node, uint64_t function, uint32_t grid, uint32_t block, void** args) noexcept;
#endif
// Enables/disables a node of an exec graph; throws UNSUPPORTED where the runtime cannot.
void exec_set_enabled(gpuGraphExec_t exec, gpuGraphNode_t node, bool enabled);
// Takes one more reference to `device`'s primary context, never given back, so that the runtime's
// teardown at process exit does not destroy the context (destroying it waits for work still
// running on it). Returns false where the kind cannot (then nothing changes). See launcher.cpp.
bool keep_context(int device) noexcept;
// Capability bits the installed driver can serve (every bit the kind implements when it cannot tell).
uint64_t capabilities();
// One `name: reason` line per group or per-symbol entry this build or driver leaves out ("" if none).
std::string left_out();
// Conditional bodies nested in a node of this type, appended to out (none on hip).
void conditional_bodies(gpuGraphNode_t node, std::vector<gpuGraph_t>& out);
// Forgets what the native layer knows about a node (its conditional bodies).
void forget_node(gpuGraphNode_t node);
// The device archs string for build_info.
const char* archs();
int runtime_version();

// Minor 7. The kind's runtime compiler: what it is called in messages, how to install it, the
// library file names tried (through the system loader and in `directories`), the entry-point
// prefix ("nvrtc", "hiprtc") and the code getters' names after the prefix. Arrays end with nullptr.
struct RtcNames {
    const char* what;
    const char* install;
    const char* const* libraries;
    const char* const* directories;
    const char* prefix;
    const char* code_size;
    const char* code;
};
const RtcNames& rtc();
// The compiler options for `device` (its architecture) and the floating-point mode: bit-exact
// (no contraction), contract (fused multiply-adds, IEEE division and square root, no flush to
// zero) or fast.
std::vector<std::string> rtc_options(int device, FpMode mode);
// Loads an image (cubin, fatbin, NUL-terminated PTX; a code object on hip) into the current device's
// context; nullptr on failure with the loader's message in `log`.
void* module_load(const void* image, size_t bytes, std::string& log);
// The kernel handle of `name`, 0 when the module has none.
uint64_t module_function(void* module, const char* name);
#if !defined(EAGLE_GPU_HIP)
// Every kernel of the module, (name, handle); empty where the driver cannot list them.
std::vector<std::pair<std::string, uint64_t>> module_functions(void* module);
#endif
void module_unload(void* module);
}  // namespace native

}  // namespace eagle::gpu
