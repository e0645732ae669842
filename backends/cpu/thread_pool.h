// Host threads of the cpu backend: the persistent compute pool that runs kernel tiles and scans,
// and the growable task runner that runs concurrent graph branches.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace eagle::cpu {

// The number of threads the cpu backend computes on: $EAGLE_CPU_THREADS when it is a whole number
// 1..4096 (read once, at the first call), else the CPUs this process may run on (its affinity
// mask), else std::thread::hardware_concurrency(), else 2.
int configured_threads() noexcept;

// A fixed pool of configured_threads() - 1 workers; the caller of parallel_for works too, so a
// launch computes on configured_threads() threads.
class ThreadPool {
public:
    // The process's pool, made when first used (in a forked child: made anew there, since none of
    // the parent pool's threads is in the child; see thread_pool_at_fork).
    static ThreadPool& instance();
    // Workers plus the calling thread.
    int threads() const noexcept { return static_cast<int>(workers_.size()) + 1; }
    // Runs fn(0) .. fn(n-1), spread over the pool and the caller; returns when all have run.
    // Items are taken one at a time from a shared counter (dynamic scheduling). The caller runs
    // them alone for the first ~20 us and only then offers the rest to the workers, so a short
    // call wakes no thread. Several parallel_for calls may run at once (from different streams);
    // rethrows the first exception a task threw.
    void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);

private:
    struct Job;
    ThreadPool();
    void worker_loop();
    Job* pick_locked();

    std::mutex mu_;
    std::condition_variable cv_work_;
    std::condition_variable cv_idle_;
    std::deque<Job*> jobs_;
    std::atomic<int> offered_{0};  // jobs in jobs_: what an idle worker watches before it sleeps
    std::vector<std::thread> workers_;
};

// Runs submitted tasks on their own threads; grows so that every queued task finds a thread
// (tasks may block on each other, as concurrent branches of a replay do). Threads are reused.
class TaskRunner {
public:
    // The process's runner, made when first used (in a forked child: made anew there).
    static TaskRunner& instance();
    void submit(std::function<void()> task);

private:
    TaskRunner() = default;
    void loop();

    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> queue_;
    int idle_ = 0;
};

}  // namespace eagle::cpu
