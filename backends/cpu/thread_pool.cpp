#include "thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cxxabi.h>

namespace eagle::cpu {

struct ThreadPool::Job {
    const std::function<void(int64_t)>* fn;
    int64_t n;
    std::atomic<int64_t> next{0};
    int active = 0;  // workers inside the job (guarded by mu_)
    std::mutex err_mu;
    std::exception_ptr err;

    void drain() {
        for (;;) {
            const int64_t i = next.fetch_add(1, std::memory_order_relaxed);
            if (i >= n) return;
            try {
                (*fn)(i);
            } catch (const abi::__forced_unwind&) {
                throw;  // the thread is being ended (pthread_exit): never swallowed
            } catch (...) {
                std::lock_guard<std::mutex> lock(err_mu);
                if (!err) err = std::current_exception();
            }
        }
    }
};

ThreadPool& ThreadPool::instance() {
    // Leaked on purpose: workers outlive static destruction at exit.
    static ThreadPool* pool = new ThreadPool();
    return *pool;
}

ThreadPool::ThreadPool() {
    unsigned hw = std::thread::hardware_concurrency();
    if (hw == 0) hw = 2;
    const unsigned nworkers = std::max(1u, hw) - 1;
    for (unsigned i = 0; i < nworkers; ++i) {
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
        Job* job = nullptr;
        cv_work_.wait(lock, [&] { return (job = pick_locked()) != nullptr; });
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
    {
        std::lock_guard<std::mutex> lock(mu_);
        jobs_.push_back(&job);
    }
    cv_work_.notify_all();
    job.drain();
    {
        std::unique_lock<std::mutex> lock(mu_);
        jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
        cv_idle_.wait(lock, [&] { return job.active == 0; });
    }
    if (job.err) std::rethrow_exception(job.err);
}

TaskRunner& TaskRunner::instance() {
    static TaskRunner* runner = new TaskRunner();
    return *runner;
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
