#include "thread_pool.h"

#include <sched.h>

#include "at_fork.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cxxabi.h>

namespace eagle::cpu {

namespace {
// parallel_for's caller runs items alone until this much time has passed, and only then offers
// the rest to the workers: a short job (a small kernel launch, a compaction of a few pages) costs
// no wake-up, a long one waits at most this (plus one item) before every thread works.
constexpr std::chrono::nanoseconds kSerialBudget = std::chrono::microseconds(20);
// A worker that finished a job watches for the next one this long (yielding) before it sleeps:
// the launches and scans of one graph iteration follow each other within microseconds, and a
// futex wake-up costs tens of microseconds per job (more on a virtual machine).
constexpr std::chrono::nanoseconds kWorkerSpin = std::chrono::microseconds(200);
}  // namespace

struct ThreadPool::Job {
    const std::function<void(int64_t)>* fn;
    int64_t n;
    std::atomic<int64_t> next{0};
    int active = 0;  // workers inside the job (guarded by mu_)
    std::mutex err_mu;
    std::exception_ptr err;

    // Runs items until none is left, or (deadline given) until the deadline has passed after an
    // item; returns true when none is left.
    bool drain(const std::chrono::steady_clock::time_point* deadline = nullptr) {
        for (;;) {
            const int64_t i = next.fetch_add(1, std::memory_order_relaxed);
            if (i >= n) return true;
            try {
                (*fn)(i);
            } catch (const abi::__forced_unwind&) {
                throw;  // the thread is being ended (pthread_exit): never swallowed
            } catch (...) {
                std::lock_guard<std::mutex> lock(err_mu);
                if (!err) err = std::current_exception();
            }
            if (deadline && std::chrono::steady_clock::now() >= *deadline)
                return next.load(std::memory_order_relaxed) >= n;
        }
    }
};

namespace {

int threads_from_environment() noexcept {
    constexpr long kMax = 4096;
    if (const char* env = std::getenv("EAGLE_CPU_THREADS"); env && *env) {
        char* end = nullptr;
        const long v = std::strtol(env, &end, 10);
        if (end && *end == '\0' && v >= 1 && v <= kMax) return static_cast<int>(v);
    }
#ifdef CPU_COUNT
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
#endif
    const unsigned hw = std::thread::hardware_concurrency();
    return hw > 0 ? static_cast<int>(std::min<unsigned>(hw, kMax)) : 2;
}

}  // namespace

int configured_threads() noexcept {
    static const int n = threads_from_environment();
    return n;
}

namespace {
// The pool and the runner of this process, made when first used and leaked on purpose (their
// threads outlive static destruction at exit). A forked child forgets its parent's: their threads
// are not in the child, and its first use makes new ones (thread_pool_at_fork).
std::atomic<ThreadPool*> g_pool{nullptr};
std::atomic<TaskRunner*> g_runner{nullptr};
std::mutex g_make_mu;  // guards making either

template <class T, class Make>
T& made_once(std::atomic<T*>& slot, Make make) {
    if (T* p = slot.load(std::memory_order_acquire)) return *p;
    std::lock_guard<std::mutex> lock(g_make_mu);
    T* p = slot.load(std::memory_order_relaxed);
    if (!p) {
        p = make();
        slot.store(p, std::memory_order_release);
    }
    return *p;
}
}  // namespace

void thread_pool_at_fork(ForkPhase phase) noexcept {
    switch (phase) {
        case ForkPhase::Prepare:
            g_make_mu.lock();
            break;
        case ForkPhase::Parent:
            g_make_mu.unlock();
            break;
        case ForkPhase::Child:
            // The parent's pool and runner are leaked: their threads (and any lock one of them
            // held) are not in the child, and an idle count that counts them would hand work to
            // nobody.
            g_pool.store(nullptr, std::memory_order_relaxed);
            g_runner.store(nullptr, std::memory_order_relaxed);
            g_make_mu.unlock();
            break;
    }
}

ThreadPool& ThreadPool::instance() {
    return made_once(g_pool, [] { return new ThreadPool(); });
}

ThreadPool::ThreadPool() {
    const int nworkers = configured_threads() - 1;
    for (int i = 0; i < nworkers; ++i) {
        workers_.emplace_back([this] { worker_loop(); });
        workers_.back().detach();
    }
}

ThreadPool::Job* ThreadPool::pick_locked() {
    for (Job* j : jobs_)
        if (j->next.load(std::memory_order_relaxed) < j->n) return j;
    return nullptr;
}

void ThreadPool::worker_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        Job* job = pick_locked();
        if (!job) {
            lock.unlock();
            const auto until = std::chrono::steady_clock::now() + kWorkerSpin;
            for (int i = 1; offered_.load(std::memory_order_acquire) == 0; ++i) {
                if ((i & 15) == 0 && std::chrono::steady_clock::now() >= until) break;
                std::this_thread::yield();
            }
            lock.lock();
            cv_work_.wait(lock, [&] { return (job = pick_locked()) != nullptr; });
        }
        ++job->active;
        lock.unlock();
        job->drain();
        lock.lock();
        if (--job->active == 0) cv_idle_.notify_all();
    }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
    if (n <= 0) return;
    if (n == 1 || workers_.empty()) {
        for (int64_t i = 0; i < n; ++i) fn(i);
        return;
    }
    Job job;
    job.fn = &fn;
    job.n = n;
    const auto deadline = std::chrono::steady_clock::now() + kSerialBudget;
    if (job.drain(&deadline)) {
        if (job.err) std::rethrow_exception(job.err);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mu_);
        jobs_.push_back(&job);
        offered_.fetch_add(1, std::memory_order_release);
    }
    cv_work_.notify_all();
    job.drain();
    {
        std::unique_lock<std::mutex> lock(mu_);
        jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
        offered_.fetch_sub(1, std::memory_order_relaxed);
        cv_idle_.wait(lock, [&] { return job.active == 0; });
    }
    if (job.err) std::rethrow_exception(job.err);
}

TaskRunner& TaskRunner::instance() {
    return made_once(g_runner, [] { return new TaskRunner(); });
}

void TaskRunner::submit(std::function<void()> task) {
    bool spawn = false;
    {
        std::lock_guard<std::mutex> lock(mu_);
        queue_.push_back(std::move(task));
        spawn = static_cast<int>(queue_.size()) > idle_;
    }
    if (spawn) {
        std::thread([this] { loop(); }).detach();
    } else {
        cv_.notify_one();
    }
}

void TaskRunner::loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        while (queue_.empty()) {
            ++idle_;
            cv_.wait(lock);
            --idle_;
        }
        std::function<void()> task = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        try {
            task();
        } catch (const abi::__forced_unwind&) {
            throw;  // the thread is being ended (pthread_exit): never swallowed
        } catch (...) {
        }
        task = nullptr;
        lock.lock();
    }
}

}  // namespace eagle::cpu
