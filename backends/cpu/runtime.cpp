// Handle registry, stream queues, capture recording and the fence-object pool.
#include "runtime.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cstdio>
#include <cxxabi.h>
#include <new>
#include <unordered_map>

#include "at_fork.h"
#include "module_common.h"  // allocations(), mem_alloc's registry

namespace eagle::cpu {

// ---------------------------------------------------------------- registry

namespace {
using Registry = HandleRegistry<std::shared_ptr<Object>>;
Registry& registry() {
    static Registry* r = new Registry();  // leaked: used by worker threads at exit
    return *r;
}
}  // namespace

const char* kind_name(Kind k) noexcept {
    switch (k) {
        case Kind::Stream: return "stream";
        case Kind::Capturer: return "capturer";
        case Kind::Captured: return "captured";
        case Kind::Fork: return "fork";
        case Kind::Conditional: return "conditional";
        case Kind::Graph: return "graph";
        case Kind::Launcher: return "launcher";
    }
    return "?";
}

void register_object(std::shared_ptr<Object> obj) {
    const void* key = obj.get();
    registry().add(key, std::move(obj));
}

std::shared_ptr<Object> unregister_object(const void* handle) noexcept {
    return registry().take(handle, [](const std::shared_ptr<Object>&) { return true; });
}

std::shared_ptr<Object> find_object(const void* handle, Kind kind) noexcept {
    return registry().find(handle, [kind](const std::shared_ptr<Object>& o) { return o->kind() == kind; });
}

std::shared_ptr<Object> take_object(const void* handle, Kind kind) noexcept {
    auto obj = registry().take(handle, [kind](const std::shared_ptr<Object>& o) { return o->kind() == kind; });
    if (obj && obj->made_before_fork()) return nullptr;  // released here: leaked (make_object's deleter)
    return obj;
}

namespace {
std::vector<std::shared_ptr<Stream>> blocking_user_streams() {
    std::vector<std::shared_ptr<Stream>> out;
    registry().for_each([&](const void*, const std::shared_ptr<Object>& obj) {
        if (obj->kind() != Kind::Stream || obj->made_before_fork()) return;
        auto s = std::static_pointer_cast<Stream>(obj);
        if (s->role == Stream::Role::User && s->blocking) out.push_back(std::move(s));
    });
    return out;
}
}  // namespace

// ---------------------------------------------------------------- capture

void CaptureState::brk(const std::string& reason) {
    for (CaptureState* c = this; c; c = c->parent.get()) {
        if (!c->broken) {
            c->broken = true;
            c->why = reason;
        }
    }
}

std::recursive_mutex& capture_mutex() noexcept {
    static std::recursive_mutex* mu = new std::recursive_mutex();
    return *mu;
}

std::shared_ptr<CaptureState> active_capture(Stream& s) {
    if (!s.capture) {
        if (s.role == Stream::Role::Body)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the stream is a conditional body stream whose body is closed");
        return nullptr;
    }
    if (s.capture->ended)
        fail(EAGLE_BACKEND_INVALID_ARGUMENT,
             "the stream is a fork branch or body of a capture that has already ended");
    return s.capture;
}

void record(Stream& s, CaptureState& cap, std::shared_ptr<const Node> node) {
    node->publish();
    const uint32_t idx = cap.graph->add_node(s.tail, std::move(node));
    s.tail.assign(1, idx);
}

uint64_t submit(Stream& s, std::shared_ptr<const Node> node) {
    {
        std::lock_guard<std::recursive_mutex> lock(capture_mutex());
        if (auto cap = active_capture(s)) {
            record(s, *cap, std::move(node));
            return 0;
        }
    }
    return enqueue_eager(s, [node] { node->run(nullptr); });
}

// ---------------------------------------------------------------- command context

namespace {
thread_local CommandContext t_command;
// Set by the library's static destruction (the process is exiting): queued commands are dropped.
std::atomic<bool> g_exiting{false};
struct ExitFlag {
    ~ExitFlag() { g_exiting.store(true); }
} g_exit_flag;
// Serialises "may this command wait for that?" with registering the wait (see wait_as_caller).
std::mutex& wait_graph_mutex() {
    static std::mutex* mu = new std::mutex();
    return *mu;
}
}  // namespace

CommandContext current_command() noexcept { return t_command; }

CommandScope::CommandScope(CommandContext ctx) noexcept : saved_(t_command) { t_command = ctx; }
CommandScope::~CommandScope() { t_command = saved_; }

// ---------------------------------------------------------------- streams

Stream::~Stream() { shutdown(); }

uint64_t Stream::enqueue(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the stream has been released");
    if (dead_) fail(EAGLE_BACKEND_ERROR, "the stream's worker thread has ended: " + error_);
    if (!worker_.joinable()) worker_ = std::thread([this] { loop(); });
    queue_.push_back(std::move(task));
    const uint64_t seq = ++enqueued_;
    enqueued_a_.store(seq, std::memory_order_release);
    cv_work_.notify_one();
    return seq;
}

uint64_t Stream::enqueue_fence(const std::shared_ptr<Stream>& producer, uint64_t seq, std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the stream has been released");
    if (dead_) fail(EAGLE_BACKEND_ERROR, "the stream's worker thread has ended: " + error_);
    if (!worker_.joinable()) worker_ = std::thread([this] { loop(); });
    edges_.push_back({enqueued_ + 1, producer, seq});
    try {
        queue_.push_back(std::move(task));
    } catch (...) {
        edges_.pop_back();
        throw;
    }
    const uint64_t pos = ++enqueued_;
    enqueued_a_.store(pos, std::memory_order_release);
    cv_work_.notify_one();
    return pos;
}

uint64_t Stream::pending() noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    return completed_ == enqueued_ ? 0 : enqueued_;
}

void Stream::wait_for(uint64_t seq) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_done_.wait(lock, [&] { return done_locked(seq); });
}

bool Stream::reaches(Stream& s, uint64_t seq, const CommandContext& ctx,
                     std::vector<std::pair<const Stream*, uint64_t>>& seen) {
    if (&s == ctx.stream) return seq >= ctx.seq;
    for (auto& [p, q] : seen)
        if (p == &s && q >= seq) return false;
    seen.emplace_back(&s, seq);
    std::vector<std::pair<std::shared_ptr<Stream>, uint64_t>> next;
    {
        std::lock_guard<std::mutex> lock(s.mu_);
        if (s.completed_ >= seq || s.dead_) return false;
        for (const Edge& e : s.edges_)
            if (e.pos > s.completed_ && e.pos <= seq) next.emplace_back(e.producer, e.seq);
        for (auto& b : s.blocked_) next.push_back(b);  // its running command (<= seq) waits for these
    }
    for (auto& [p, q] : next)
        if (reaches(*p, q, ctx, seen)) return true;
    return false;
}

bool Stream::wait_as_caller(uint64_t seq) {
    const CommandContext ctx = current_command();
    if (!ctx.stream) {  // an application thread: nothing waits for it
        wait_for(seq);
        return true;
    }
    if (ctx.stream == this) return seq < ctx.seq;  // the commands before the running one are done
    std::shared_ptr<Stream> self = weak_from_this().lock();
    if (!self) {  // only in the destructor: the worker must be joined before the memory goes
        wait_for(seq);
        return true;
    }
    {
        std::lock_guard<std::mutex> graph(wait_graph_mutex());
        std::vector<std::pair<const Stream*, uint64_t>> seen;
        if (reaches(*this, seq, ctx, seen)) return false;
        std::lock_guard<std::mutex> lock(ctx.stream->mu_);
        ctx.stream->blocked_.emplace_back(self, seq);
    }
    struct Unblock {
        Stream* waiter;
        Stream* target;
        ~Unblock() {
            std::lock_guard<std::mutex> lock(waiter->mu_);
            auto& b = waiter->blocked_;
            for (auto it = b.begin(); it != b.end(); ++it) {
                if (it->first.get() == target) {
                    b.erase(it);
                    break;
                }
            }
        }
    } unblock{ctx.stream, this};
    wait_for(seq);
    return true;
}

namespace {
const char* const kWouldDeadlock =
    "waiting here would deadlock: the stream's pending work is ordered after the host function "
    "(or replay) that is waiting for it, through a fence, the default-stream ordering or another "
    "host function's wait; wait for it outside the host function";

// Spins (yielding) for a few microseconds while `done` is false: a replay of a small graph then
// costs no futex round trip. Returns done().
template <class Done>
bool spin_briefly(Done done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    for (int i = 0;; ++i) {
        if (done()) return true;
        if ((i & 15) == 15 && std::chrono::steady_clock::now() > until) return false;
        std::this_thread::yield();
    }
}
}  // namespace

void Stream::drain_and_check() {
    const CommandContext ctx = current_command();
    uint64_t target;
    {
        std::lock_guard<std::mutex> lock(mu_);
        target = ctx.stream == this ? ctx.seq - 1 : enqueued_;
    }
    if (!ctx.stream) {
        spin_briefly([&] { return completed_a_.load(std::memory_order_acquire) >= target; });
        wait_for(target);
    } else if (!wait_as_caller(target)) {
        fail(EAGLE_BACKEND_INVALID_ARGUMENT, kWouldDeadlock);
    }
    report_failure();
}

void Stream::query_and_check(int32_t* done) {
    const CommandContext ctx = current_command();
    *done = 0;
    if (!ctx.stream && !dead_a_.load(std::memory_order_acquire) &&
        completed_a_.load(std::memory_order_acquire) < enqueued_a_.load(std::memory_order_acquire))
        return;  // still running, seen without a lock (a waiter's polls cost no lock round trip)
    uint64_t target;
    bool finished;
    {
        std::lock_guard<std::mutex> lock(mu_);
        target = ctx.stream == this ? ctx.seq - 1 : enqueued_;
        finished = done_locked(target);
    }
    if (!finished) {
        if (ctx.stream && ctx.stream != this) {  // a host function polling: refused as its wait would be
            std::lock_guard<std::mutex> graph(wait_graph_mutex());
            std::vector<std::pair<const Stream*, uint64_t>> seen;
            if (reaches(*this, target, ctx, seen)) fail(EAGLE_BACKEND_INVALID_ARGUMENT, kWouldDeadlock);
        }
        return;
    }
    *done = 1;
    report_failure();
}

void Stream::report_failure() {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_) {
        std::string msg = std::move(error_);
        error_.clear();
        failed_ = dead_;  // a dead worker keeps reporting
        if (dead_) error_ = msg;
        fail(EAGLE_BACKEND_ERROR, "work enqueued on the stream failed: " + msg);
    }
}

void Stream::shutdown() noexcept {
    if (made_before_fork()) return;  // its worker is not in this process: nothing to wait for
    std::thread worker;
    bool waited = false;
    {
        std::unique_lock<std::mutex> lock(mu_);
        const bool own = worker_.joinable() && worker_.get_id() == std::this_thread::get_id();
        if (worker_.joinable() && !own) {
            const uint64_t target = enqueued_;
            lock.unlock();
            waited = wait_as_caller(target);
            lock.lock();
        }
        stop_ = true;
        cv_work_.notify_all();
        worker = std::move(worker_);
        if (worker.joinable() && !waited) {
            // Released from inside a command that this stream's queue runs or waits for: the worker
            // finishes the queue on its own, holding the stream alive until it returns.
            keep_alive_ = weak_from_this().lock();
        }
    }
    if (worker.joinable()) {
        if (waited) {
            worker.join();
        } else {
            worker.detach();
        }
    }
    std::lock_guard<std::mutex> lock(mu_);
    cv_done_.notify_all();
}

void Stream::loop() {
    std::shared_ptr<Stream> keep;  // declared first: destroyed last, after every use of members
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        if (queue_.empty() && !stop_) {
            lock.unlock();
            spin_briefly([&] {
                return enqueued_a_.load(std::memory_order_acquire) != completed_a_.load(std::memory_order_relaxed);
            });
            lock.lock();
        }
        cv_work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) break;
        std::function<void()> task = std::move(queue_.front());
        queue_.pop_front();
        const uint64_t seq = completed_ + 1;
        lock.unlock();
        std::string err;
        bool bad = false;
        try {
            CommandScope scope({this, seq});
            if (g_exiting.load(std::memory_order_acquire)) {
                bad = true;
                err = "not run: the process is exiting";
            } else {
                task();
            }
        } catch (const abi::__forced_unwind&) {
            // The thread is being ended inside the command (pthread_exit): the stream is dead.
            task = nullptr;
            lock.lock();
            dead_ = true;
            dead_a_.store(true, std::memory_order_release);
            if (!failed_) {
                failed_ = true;
                error_ = "the stream's worker thread was ended while running a command (a finalizing "
                         "interpreter ends threads that call into it)";
            }
            keep = std::move(keep_alive_);
            cv_done_.notify_all();
            throw;  // must continue: a forced unwind may not be swallowed
        } catch (const std::bad_alloc&) {
            bad = true;
            err = "out of memory";
        } catch (const std::exception& e) {
            bad = true;
            err = e.what();
        } catch (...) {
            bad = true;
            err = "unknown C++ exception";
        }
        task = nullptr;
        lock.lock();
        if (bad && !failed_) {
            failed_ = true;
            error_ = std::move(err);
        }
        ++completed_;
        while (!edges_.empty() && edges_.front().pos <= completed_) edges_.pop_front();
        completed_a_.store(completed_, std::memory_order_release);
        cv_done_.notify_all();
    }
    keep = std::move(keep_alive_);
    lock.unlock();
    // `keep` goes last: it may destroy this stream (whose destructor then finds no worker to join).
}

namespace {
std::mutex g_default_mu;
std::shared_ptr<Stream>* g_default = nullptr;  // leaked on purpose
std::mutex g_order_mu;

std::shared_ptr<Stream> existing_default() {
    std::lock_guard<std::mutex> lock(g_default_mu);
    return g_default ? *g_default : nullptr;
}
}  // namespace

std::shared_ptr<Stream> make_stream(Stream::Role role, bool blocking) {
    auto s = make_object<Stream>(role, blocking);
    register_object(s);
    return s;
}

void retire_stream(const std::shared_ptr<Stream>& s) noexcept {
    if (!s) return;
    unregister_object(s.get());
    s->shutdown();  // returns at once for a stream made before a fork (it is leaked)
}

std::shared_ptr<Stream> default_stream() {
    std::lock_guard<std::mutex> lock(g_default_mu);
    if (!g_default) g_default = new std::shared_ptr<Stream>(make_stream(Stream::Role::Default, true));
    return *g_default;
}

std::shared_ptr<Stream> find_stream(uint64_t raw) noexcept {
    if (raw == 0) {
        try {
            return default_stream();
        } catch (...) {
            return nullptr;
        }
    }
    return std::static_pointer_cast<Stream>(find_object(reinterpret_cast<const void*>(raw), Kind::Stream));
}

std::shared_ptr<Stream> resolve_stream(uint64_t raw, const char* name) {
    if (raw == 0) return default_stream();
    auto s = find_stream(raw);
    if (!s) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(raw));
        fail(EAGLE_BACKEND_INVALID_ARGUMENT,
             std::string(name) + " (" + buf + ") is not a live stream of the cpu backend");
    }
    usable_here(*s);
    return s;
}

uint64_t enqueue_eager(Stream& s, std::function<void()> task) {
    if (s.role == Stream::Role::Body)
        fail(EAGLE_BACKEND_INVALID_ARGUMENT, "a conditional body stream only records");
    if (current_command().stream) return s.enqueue(std::move(task));  // no implicit edge (runtime.h)
    if (s.role == Stream::Role::User && s.blocking) {
        if (auto d = existing_default()) {
            std::lock_guard<std::mutex> lock(g_order_mu);
            enqueue_wait(s, d);
            return s.enqueue(std::move(task));
        }
    } else if (s.role == Stream::Role::Default) {
        std::lock_guard<std::mutex> lock(g_order_mu);
        for (auto& u : blocking_user_streams()) enqueue_wait(s, u);
        return s.enqueue(std::move(task));
    }
    return s.enqueue(std::move(task));
}

// ---------------------------------------------------------------- fence objects

namespace {
struct FenceObject {
    std::shared_ptr<Stream> producer;
    uint64_t seq = 0;
};
struct FencePool {
    std::mutex mu;
    std::vector<FenceObject*> free;
    std::atomic<int64_t> created{0};
};
FencePool& fence_pool() {
    static FencePool* p = new FencePool();
    return *p;
}
std::shared_ptr<FenceObject> acquire_fence() {
    auto& p = fence_pool();
    FenceObject* f = nullptr;
    {
        std::lock_guard<std::mutex> lock(p.mu);
        if (!p.free.empty()) {
            f = p.free.back();
            p.free.pop_back();
        }
    }
    if (!f) {
        f = new FenceObject();
        p.created.fetch_add(1);
    }
    return std::shared_ptr<FenceObject>(f, [](FenceObject* obj) {
        obj->producer.reset();
        auto& pool = fence_pool();
        std::lock_guard<std::mutex> lock(pool.mu);
        pool.free.push_back(obj);
    });
}
}  // namespace

int64_t fence_objects_created() noexcept { return fence_pool().created.load(); }

void enqueue_wait(Stream& consumer, const std::shared_ptr<Stream>& producer) {
    if (!producer || producer.get() == &consumer) return;
    const uint64_t seq = producer->pending();
    if (seq == 0) return;  // nothing outstanding: already ordered
    auto f = acquire_fence();
    f->producer = producer;
    f->seq = seq;
    consumer.enqueue_fence(producer, seq, [f] { f->producer->wait_for(f->seq); });
}

// ---------------------------------------------------------------- fork()

std::atomic<uint64_t> g_fork_generation{0};

namespace {
std::atomic<int32_t> g_pid{0};
}  // namespace

int32_t process_id() noexcept { return g_pid.load(std::memory_order_relaxed); }

void fail_made_before_fork(const Object& obj) {
    const char* what = obj.kind() == Kind::Fork ? "fork object" : kind_name(obj.kind());
    fail(EAGLE_BACKEND_UNAVAILABLE,
         std::string("this ") + what + " was created before fork() in process " + std::to_string(obj.pid()) +
             "; eagle objects do not survive fork: create new ones in the child (or use the "
             "multiprocessing 'spawn' start method)");
}

namespace {

// Every lock of the library that a forked child may need, taken outer first in the order the
// library nests them (g_order_mu and g_default_mu before the registry; capture_mutex before the
// stream, fence and node locks; the registries and the pools' locks are leaves), so the prepare
// handler cannot deadlock with a thread that holds one and waits for another. Per-stream locks
// are not taken: a child never touches a stream made before the fork.
void prepare_fork() noexcept {
    g_order_mu.lock();
    g_default_mu.lock();
    capture_mutex().lock();
    wait_graph_mutex().lock();
    fence_pool().mu.lock();
    node_registry_at_fork(ForkPhase::Prepare);
    host_allocations_at_fork(ForkPhase::Prepare);
    thread_pool_at_fork(ForkPhase::Prepare);
    registry().prepare_fork();
    allocations().prepare_fork();
}

void after_fork_in_parent() noexcept {
    allocations().after_fork();
    registry().after_fork();
    thread_pool_at_fork(ForkPhase::Parent);
    host_allocations_at_fork(ForkPhase::Parent);
    node_registry_at_fork(ForkPhase::Parent);
    fence_pool().mu.unlock();
    wait_graph_mutex().unlock();
    capture_mutex().unlock();
    g_default_mu.unlock();
    g_order_mu.unlock();
}

void after_fork_in_child() noexcept {
    // Runs right after fork(), in the child's only thread (the one that forked).
    g_fork_generation.fetch_add(1, std::memory_order_relaxed);  // every object made so far is unusable
    g_pid.store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
    t_command = CommandContext{};  // fork() inside a command: the child's thread runs none of ours
    g_default = nullptr;           // the parent's default stream is leaked; the child makes its own
    allocations().after_fork();
    registry().after_fork();
    thread_pool_at_fork(ForkPhase::Child);
    host_allocations_at_fork(ForkPhase::Child);
    node_registry_at_fork(ForkPhase::Child);
    fence_pool().mu.unlock();
    wait_graph_mutex().unlock();
    // A recursive mutex remembers its owner's thread id, which the child's thread no longer has
    // (unlock would fail with EPERM and leave it locked): the child gets a fresh one.
    new (&capture_mutex()) std::recursive_mutex();
    g_default_mu.unlock();
    g_order_mu.unlock();
}

struct AtForkRegistration {
    AtForkRegistration() noexcept {
        g_pid.store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
        // glibc unregisters these when the library is unloaded (they are keyed by its __dso_handle)
        pthread_atfork(prepare_fork, after_fork_in_parent, after_fork_in_child);
    }
} g_at_fork_registration;

}  // namespace

}  // namespace eagle::cpu
