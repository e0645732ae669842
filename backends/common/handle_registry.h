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
#pragma once

#include <mutex>
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
        std::lock_guard<std::mutex> lock(mu_);
        auto it = live_.find(handle);
        if (it == live_.end() || !match(it->second)) return Value{};
        return it->second;
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
        return v;
    }

    // Calls fn(handle, value) for every live handle, under the registry's lock (fn must not call
    // back into the registry).
    template <class Fn>
    void for_each(Fn fn) const {
        std::lock_guard<std::mutex> lock(mu_);
        for (const auto& [h, v] : live_) fn(h, v);
    }

private:
    mutable std::mutex mu_;
    std::unordered_map<const void*, Value> live_;
};

}  // namespace eagle
