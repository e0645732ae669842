// The cpu backend's runtime: handle registry, streams (in-order queues drained by a worker thread),
// capture state, and the one entry every command goes through (submit: record or enqueue).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "command.h"
#include "command_context.h"
#include "exec_graph.h"
#include "eagle/backend_kit.h"
#include "handle_registry.h"

namespace eagle::cpu {

// ---------------------------------------------------------------- fork()

// A child made by fork() has one thread, the one that forked: no stream's worker, no thread of the
// compute pool or of the replay runner made before the fork exists there, and whatever the parent's
// other threads had queued never runs. So eagle objects do not survive fork: every object carries
// the fork generation of the process that made it (bumped in the child by a pthread_atfork handler
// registered when the library loads), and in a child every use of an object made before the fork
// fails with UNAVAILABLE naming the cause (fail_made_before_fork). Releasing one there never waits:
// it is unregistered and leaked (the child's memory is its own), and no object made before a fork
// is ever destroyed in the child (make_object's deleter), since its destructor would wait for
// threads that are not there. The atfork handlers take every lock of the library around the fork,
// so a child never finds one held by a thread it does not have; the child gets a fresh default
// stream, compute pool and replay runner, made when first used. Objects made in the child work.
extern std::atomic<uint64_t> g_fork_generation;  // constant-initialised (runtime.cpp)
// The fork generation of this process: 0 in the process that loaded the library, +1 per fork().
inline uint64_t fork_generation() noexcept { return g_fork_generation.load(std::memory_order_relaxed); }
// This process's id, as of the last fork() (no system call).
int32_t process_id() noexcept;

// ---------------------------------------------------------------- handles

enum class Kind { Stream, Capturer, Captured, Fork, Conditional, Graph, Launcher };
const char* kind_name(Kind k) noexcept;

class Object {
public:
    explicit Object(Kind kind) : kind_(kind), generation_(fork_generation()), pid_(process_id()) {}
    virtual ~Object() = default;
    Kind kind() const noexcept { return kind_; }
    // True in a child forked after the object was made: the object is not usable here.
    bool made_before_fork() const noexcept { return generation_ != fork_generation(); }
    // The process the object was made in.
    int32_t pid() const noexcept { return pid_; }

private:
    Kind kind_;
    uint64_t generation_;
    int32_t pid_;
};

// Throws UNAVAILABLE: `obj` was made before fork() in another process (see above).
[[noreturn]] void fail_made_before_fork(const Object& obj);
// Throws that when `obj` was made before a fork; returns it otherwise.
inline const Object& usable_here(const Object& obj) {
    if (obj.made_before_fork()) fail_made_before_fork(obj);
    return obj;
}

// Makes an object whose last owner, in a child forked after it was made, leaks it instead of
// destroying it. Every Object is made by this.
template <class T, class... Args>
std::shared_ptr<T> make_object(Args&&... args) {
    return std::shared_ptr<T>(new T(std::forward<Args>(args)...), [](T* p) {
        if (!p->made_before_fork()) delete p;
    });
}

// Live handles, keyed by address (eagle::HandleRegistry, shared with the GPU backends): use after
// release or a foreign pointer is BAD_HANDLE, and no lookup reads the memory a handle points to.
void register_object(std::shared_ptr<Object> obj);
std::shared_ptr<Object> unregister_object(const void* handle) noexcept;
std::shared_ptr<Object> find_object(const void* handle, Kind kind) noexcept;
// Unregisters a live handle of `kind` and returns it; null (nothing removed) for any other, and
// null (unregistered, leaked) for one made before a fork.
std::shared_ptr<Object> take_object(const void* handle, Kind kind) noexcept;

template <class T>
std::shared_ptr<T> lookup(const void* handle, const char* name) {
    if (!handle) fail(EAGLE_BACKEND_BAD_HANDLE, std::string(name) + " is NULL");
    auto obj = find_object(handle, T::kKind);
    if (!obj)
        fail(EAGLE_BACKEND_BAD_HANDLE, std::string(name) + " is not a live " + kind_name(T::kKind) +
                                           " handle of the cpu backend (released, consumed or foreign)");
    usable_here(*obj);
    return std::static_pointer_cast<T>(obj);
}

// Unregisters a live handle of T's kind and returns it (null for NULL, foreign or released ones,
// and for one made before a fork, which is unregistered and leaked: see "fork()" above).
template <class T>
std::shared_ptr<T> take(const void* handle) noexcept {
    if (!handle) return nullptr;
    return std::static_pointer_cast<T>(take_object(handle, T::kKind));
}

// ---------------------------------------------------------------- capture

// One capture target: the root capture of a stream, or an open conditional body.
struct CaptureState {
    std::shared_ptr<Graph> graph;           // where nodes are recorded
    std::shared_ptr<CaptureState> parent;   // the enclosing capture of a body; null at the root
    bool ended = false;
    bool broken = false;
    std::string why;                        // why it broke
    int attached_branches = 0;              // fork branches recording into it, not yet joined
    int open_bodies = 0;                    // conditional bodies opened from it, not yet closed

    void brk(const std::string& reason);    // breaks this capture and every enclosing one
};

// Guards every capture field of every stream and capture state.
std::recursive_mutex& capture_mutex() noexcept;

// ---------------------------------------------------------------- streams

// Ordering rules of the cpu backend's streams (CUDA's legacy default stream, made explicit):
// - A command enqueued by an application thread on a blocking user stream waits for every command
//   enqueued earlier on the default stream; one enqueued on the default stream waits for every
//   command enqueued earlier on every blocking user stream. Non-blocking streams take no implicit
//   edge.
// - A command enqueued from inside a running command (a host function, on a stream worker or a
//   replay's TaskRunner thread) takes no implicit edge: the running command already sits in that
//   order (what it follows has finished; what follows it waits for it), so an implicit edge would be
//   redundant or a cycle through the running command. Order such work with explicit fences.
// - A wait from inside a running command (stream_synchronize, launcher_synchronize, a release that
//   waits) never waits for that command itself: on the command's own stream it covers the commands
//   before it, which have finished; on any other stream, a wait that would reach the running command
//   (through fences, the ordering above, or another command waiting on this one) is refused with
//   INVALID_ARGUMENT (a release then does not wait) instead of deadlocking.
// - A worker thread ended while running a command (pthread_exit, as a finalizing Python does to a
//   thread that asks for the GIL) marks its stream failed: waits return, synchronize reports ERROR,
//   and nothing more runs on that stream. After the process begins to exit (static destruction of
//   this library), commands not yet started are dropped; no worker thread is ever joined at exit.
class Stream : public Object, public std::enable_shared_from_this<Stream> {
public:
    static constexpr Kind kKind = Kind::Stream;
    enum class Role { User, Default, Branch, Body };
    Stream(Role role, bool blocking) : Object(Kind::Stream), role(role), blocking(blocking) {}
    ~Stream() override;

    uint64_t raw() const noexcept { return reinterpret_cast<uint64_t>(this); }
    // Eager queue. enqueue returns the task's sequence number (1, 2, ...).
    uint64_t enqueue(std::function<void()> task);
    // Enqueues `task`, a wait for `producer`'s command `seq`, as a fence edge (kept for the wait graph).
    uint64_t enqueue_fence(const std::shared_ptr<Stream>& producer, uint64_t seq, std::function<void()> task);
    // The last sequence number enqueued, or 0 when everything enqueued has finished.
    uint64_t pending() noexcept;
    // Blocks until task `seq` has finished (or the worker is gone). Fence commands use it as is.
    void wait_for(uint64_t seq);
    // Blocks the calling thread until task `seq` has finished, by the rules above: returns false,
    // without waiting, when that would wait for the command the calling thread is running.
    bool wait_as_caller(uint64_t seq);
    // Blocks until everything enqueued so far has finished (from inside one of this stream's
    // commands: everything before it); throws ERROR (once) when a task failed, INVALID_ARGUMENT
    // when the wait would deadlock.
    void drain_and_check();
    // drain_and_check without the wait (eagle_backend_stream_query): when everything it would
    // wait for has finished, writes 1 to *done and reports a failure as it does; else writes 0
    // (INVALID_ARGUMENT, as drain_and_check, when the work can never finish before the caller's
    // running command does).
    void query_and_check(int32_t* done);
    // Waits for the queue when it may (see wait_as_caller), then stops the worker; when it may not,
    // the worker finishes the queue on its own and keeps the stream alive until then. Idempotent.
    void shutdown() noexcept;

    const Role role;
    const bool blocking;
    // Capture bookkeeping (guarded by capture_mutex()).
    std::shared_ptr<CaptureState> capture;
    std::vector<uint32_t> tail;  // nodes the next recorded node depends on

private:
    struct Edge {
        uint64_t pos;                      // the fence command's sequence number here
        std::shared_ptr<Stream> producer;  // it waits for producer's command seq
        uint64_t seq;
    };
    void loop();
    // True when everything up to `seq` has finished (or never will run: the worker is gone). mu_ held.
    bool done_locked(uint64_t seq) const noexcept {
        return completed_ >= seq || dead_ || (stop_ && queue_.empty() && !worker_.joinable());
    }
    // Throws ERROR (once) when a task failed (drain_and_check's report).
    void report_failure();
    // True when `s`'s commands up to `seq` wait (transitively) for the command of `ctx`.
    static bool reaches(Stream& s, uint64_t seq, const CommandContext& ctx,
                        std::vector<std::pair<const Stream*, uint64_t>>& seen);

    std::mutex mu_;
    std::condition_variable cv_work_;
    std::condition_variable cv_done_;
    std::deque<std::function<void()>> queue_;
    uint64_t enqueued_ = 0;
    uint64_t completed_ = 0;
    std::atomic<uint64_t> enqueued_a_{0};   // mirrors for the short spin before blocking
    std::atomic<uint64_t> completed_a_{0};
    std::atomic<bool> dead_a_{false};       // mirrors dead_ (query_and_check's lock-free look)
    bool stop_ = false;
    bool failed_ = false;
    bool dead_ = false;                     // the worker thread ended inside a command
    std::string error_;
    std::thread worker_;
    std::deque<Edge> edges_;                // fence commands not finished yet, in order
    // Waits the running command (or its replay's branches) is blocked in: (stream, seq).
    std::vector<std::pair<std::shared_ptr<Stream>, uint64_t>> blocked_;
    std::shared_ptr<Stream> keep_alive_;    // set when shutdown leaves the worker to finish alone
};

// The backend's default stream (raw value 0), created on first use.
std::shared_ptr<Stream> default_stream();
// Raw stream value -> live stream (0: the default stream). INVALID_ARGUMENT naming `name` otherwise;
// UNAVAILABLE for a stream made before a fork.
std::shared_ptr<Stream> resolve_stream(uint64_t raw, const char* name);
// Same, or null when `raw` is not a live stream (a stream made before a fork is returned: check it).
std::shared_ptr<Stream> find_stream(uint64_t raw) noexcept;
// Creates a registered stream (the caller owns the registration).
std::shared_ptr<Stream> make_stream(Stream::Role role, bool blocking);
// Unregisters and shuts a stream down (one made before a fork is only unregistered: it is leaked).
void retire_stream(const std::shared_ptr<Stream>& s) noexcept;

// True (and the capture target) when `s` is recording. Throws INVALID_ARGUMENT when the stream
// belongs to a capture that has ended or to a closed conditional body. Call with capture_mutex held.
std::shared_ptr<CaptureState> active_capture(Stream& s);

// Records `node` on a capturing stream (returns 0), or enqueues it on the stream's queue (returns
// its sequence number there, >= 1).
uint64_t submit(Stream& s, std::shared_ptr<const Node> node);
// Appends a recorded node at the stream's tail (capture_mutex held, capture active).
void record(Stream& s, CaptureState& cap, std::shared_ptr<const Node> node);
// Enqueues eager work with the default-stream ordering rules (blocking streams and the default
// stream order after each other, as the legacy default stream of CUDA does).
uint64_t enqueue_eager(Stream& s, std::function<void()> task);
// Makes `consumer` wait (in its queue) for everything enqueued so far on `producer`.
void enqueue_wait(Stream& consumer, const std::shared_ptr<Stream>& producer);

// The cpu backend has one device, 0; -1 names it too.
inline void check_device(int32_t device, const char* name) {
    if (device != -1 && device != 0)
        fail(EAGLE_BACKEND_INDEX, std::string(name) + " is " + std::to_string(device) +
                                      "; the cpu backend has only device 0 (or -1)");
}

// Fence objects: pooled markers a waiting stream holds while it waits.
int64_t fence_objects_created() noexcept;

}  // namespace eagle::cpu
