// Host threads of the cpu backend: the persistent compute pool that runs kernel tiles and scans,
// and the growable task runner that runs concurrent graph branches.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace eagle::cpu {

// A fixed pool of hardware_concurrency - 1 workers; the caller of parallel_for works too.
class ThreadPool {
public:
    static ThreadPool& instance();
    // Workers plus the calling thread.
    int threads() const noexcept { return static_cast<int>(workers_.size()) + 1; }
    // Runs fn(0) .. fn(n-1), spread over the pool and the caller; returns when all have run.
    // Several parallel_for calls may run at once (from different streams); rethrows the first
    // exception a task threw.
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
    std::vector<std::thread> workers_;
};

// Runs submitted tasks on their own threads; grows so that every queued task finds a thread
// (tasks may block on each other, as concurrent branches of a replay do). Threads are reused.
class TaskRunner {
public:
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
