// The live handles a backend has handed out, keyed by address: how every backend tells a live
// handle from a released, consumed, foreign or mistyped one (BAD_HANDLE) without reading the
// memory the handle points to, which may already be freed.
//
// Contract: a creator adds its handle before returning it; a release or consuming call takes it out
// before freeing the object; every other call finds it first and only then dereferences it. Lookups
// are mutex-protected and never touch the object. A handle is single-thread-affine (the header's
// rule), so between a successful lookup and the call's use of the object no other thread may
// release it. The allocator may reuse a released address for a new handle of the same type; a
// stale handle then names that new object (as it would on any runtime whose handles are addresses).
//
// The hot path: replay loops look the same handle up on every call, so for plain values (a GPU
// backend's type tags) each thread remembers its last answer, with the registry's generation at
// the time. Every take() moves the generation on, so a remembered answer is used only while no
// handle at all has been released since it was found under the lock: it can never name a handle
// that is gone. add() needs no bump (a new handle does not end an old one).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <utility>

namespace eagle {

// `Value` is what the registry keeps per handle: a type tag (a GPU backend's raw objects) or an
// owning pointer that also carries the type (the cpu backend's shared objects). Value{} means
// "not a live handle" in every answer, so a live entry's value must never equal Value{}.
template <class Value>
class HandleRegistry {
public:
    // Registers a live handle. Throws std::bad_alloc (the caller still owns the object then).
    void add(const void* handle, Value value) {
        std::lock_guard<std::mutex> lock(mu_);
        live_[handle] = std::move(value);
    }

    // The value of `handle` when it is live and match(value) holds; Value{} otherwise.
    template <class Match>
    Value find(const void* handle, Match match) const {
        if constexpr (kRemembered) {
            LastFound& last = last_found();
            if (last.registry == this && last.handle == handle &&
                last.generation == generation_.load(std::memory_order_acquire))
                return match(last.value) ? last.value : Value{};
            std::lock_guard<std::mutex> lock(mu_);
            auto it = live_.find(handle);
            if (it == live_.end() || !match(it->second)) return Value{};
            last = LastFound{this, handle, it->second, generation_.load(std::memory_order_relaxed)};
            return it->second;
        } else {
            std::lock_guard<std::mutex> lock(mu_);
            auto it = live_.find(handle);
            if (it == live_.end() || !match(it->second)) return Value{};
            return it->second;
        }
    }

    // Unregisters `handle` when it is live and match(value) holds, returning its value; Value{}
    // (and nothing removed) otherwise.
    template <class Match>
    Value take(const void* handle, Match match) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = live_.find(handle);
        if (it == live_.end() || !match(it->second)) return Value{};
        Value v = std::move(it->second);
        live_.erase(it);
        generation_.fetch_add(1, std::memory_order_release);  // every remembered answer is void now
        return v;
    }

    // Calls fn(handle, value) for every live handle, under the registry's lock (fn must not call
    // back into the registry).
    template <class Fn>
    void for_each(Fn fn) const {
        std::lock_guard<std::mutex> lock(mu_);
        for (const auto& [h, v] : live_) fn(h, v);
    }

    // fork() support, for a backend's pthread_atfork handlers: a forked child has only the forking
    // thread, so a lock another thread held at the fork would stay held there for ever (and the
    // table could be half-updated). prepare_fork() takes the lock in the forking thread (no other
    // thread is inside the registry while the process forks); after_fork() releases it, in the
    // parent and in the child alike (the child's one thread is the one that took it).
    void prepare_fork() const { mu_.lock(); }
    void after_fork() const { mu_.unlock(); }

private:
    // Only plain values are remembered: an owning pointer kept in a thread's memory would keep a
    // released object alive.
    static constexpr bool kRemembered = std::is_trivially_copyable_v<Value>;
    struct LastFound {
        const HandleRegistry* registry = nullptr;
        const void* handle = nullptr;
        Value value{};
        uint64_t generation = 0;
    };
    static LastFound& last_found() noexcept {
        thread_local LastFound last;
        return last;
    }

    mutable std::mutex mu_;
    std::unordered_map<const void*, Value> live_;
    // Starts at 1, so a thread's zeroed LastFound never matches.
    std::atomic<uint64_t> generation_{1};
};

}  // namespace eagle
