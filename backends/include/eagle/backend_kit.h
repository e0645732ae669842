// eagle/backend_kit.h -- the helpers eagle offers backend authors (C++17, header-only).
//
// A backend implements the plain-C seam eagle_backend.h; this header is optional and makes its
// rules hold by construction. It is installed with eagle (`python -m eagle --include-dir`) and
// used by eagle's own backends. Everything is in namespace eagle; nothing here is exported.
//
//   EAGLE_EXPORT                 marks a seam function for export (default visibility, C linkage).
//                                Backends build with hidden visibility, so a seam function
//                                without it is NOT exported and eagle cannot load the library.
//   eagle::Error, eagle::fail    throw a seam status with a message.
//   eagle::guarded(where, fn)    run fn; any exception becomes a status with last_error set.
//   eagle::guarded_void(fn)      the same for functions that return nothing (releases).
//   eagle::last_error() ...      the thread-local message behind eagle_backend_last_error().
//   eagle::require(p, name)      INVALID_ARGUMENT naming `name` when p is NULL.
//   eagle::read_desc(in, name)   an input desc by the struct_size rule.
//   eagle::write_out(dst, v, n)  an output struct by the struct_size rule.
//   eagle::copy_string(dst, s)   a string into a fixed char array, truncated, NUL-filled.
//   eagle::check_flags(...)      unknown flag bits are UNSUPPORTED.
//   eagle::check_partition(...)  run_device's partition triple.
//   eagle::check_sample_count, eagle::scratch_query_or_check   filtering's n and scratch rules.
//
// A typical seam function:
//
//   EAGLE_EXPORT eagle_backend_status eagle_backend_stream_ptr(eagle_backend_stream s, uint64_t* raw) {
//       return eagle::guarded("eagle_backend_stream_ptr", [&] {
//           eagle::require(raw, "raw");
//           *raw = my_lookup(s).raw();          // throws eagle::Error(BAD_HANDLE, ...) when s is stale
//       });
//   }
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "eagle_backend.h"

// The release string a backend reports in build_info.eagle_version (a backend may define its own).
#ifndef EAGLE_RELEASE
#define EAGLE_RELEASE "0.1.0"
#endif

// Marks a seam function for export: C linkage, default visibility. Put it on the definition of
// every eagle_backend_* function; the linker version script then keeps exactly the seam.
#ifdef __cplusplus
#define EAGLE_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define EAGLE_EXPORT __attribute__((visibility("default")))
#endif

namespace eagle {

// A failure with a seam status; thrown inside a backend, turned into the status by guarded().
class Error : public std::exception {
public:
    Error(eagle_backend_status status, std::string message)
        : status_(status), message_(std::move(message)) {}
    eagle_backend_status status() const noexcept { return status_; }
    const char* what() const noexcept override { return message_.c_str(); }

private:
    eagle_backend_status status_;
    std::string message_;
};

// Throws Error(status, message).
[[noreturn]] inline void fail(eagle_backend_status status, std::string message) {
    throw Error(status, std::move(message));
}

namespace detail {
// The calling thread's message; one per thread and per backend library (hidden visibility).
inline std::string& last_error_storage() noexcept {
    thread_local std::string message;
    return message;
}
}  // namespace detail

// The calling thread's message of the last failed call ("" if none); valid until the next call
// that sets it on this thread. Return it from eagle_backend_last_error().
inline const char* last_error() noexcept { return detail::last_error_storage().c_str(); }

// Sets the calling thread's message (NULL is taken as ""). Never throws: on allocation failure
// the message is cleared.
inline void set_last_error(const char* message) noexcept {
    try {
        detail::last_error_storage().assign(message ? message : "");
    } catch (...) {
        detail::last_error_storage().clear();
    }
}
inline void set_last_error(const std::string& message) noexcept { set_last_error(message.c_str()); }
inline void clear_last_error() noexcept { detail::last_error_storage().clear(); }

// Maps the exception being handled to a status and records its message, prefixed with
// "where: " when where is not NULL. Call only from a catch block. Error -> its status;
// std::bad_alloc -> ERROR "out of memory"; any other exception -> ERROR with its what().
inline eagle_backend_status status_from_current_exception(const char* where) noexcept {
    std::string prefix;
    try {
        if (where) prefix = std::string(where) + ": ";
    } catch (...) {
    }
    auto set_prefixed = [&](const char* message) noexcept {
        try {
            detail::last_error_storage() = prefix + message;
        } catch (...) {
            set_last_error(message);
        }
    };
    try {
        throw;
    } catch (const Error& e) {
        set_prefixed(e.what());
        return e.status();
    } catch (const std::bad_alloc&) {
        set_last_error("out of memory");
        return EAGLE_BACKEND_ERROR;
    } catch (const std::exception& e) {
        set_prefixed(e.what());
        return EAGLE_BACKEND_ERROR;
    } catch (...) {
        set_prefixed("unknown C++ exception");
        return EAGLE_BACKEND_ERROR;
    }
}

// Runs fn (returning void or eagle_backend_status) and returns its status; any exception becomes
// a status with last_error set ("where: message"). No exception ever leaves. `where` names the
// seam function in messages (use its full eagle_backend_ name).
template <class Fn>
eagle_backend_status guarded(const char* where, Fn&& fn) noexcept {
    try {
        if constexpr (std::is_void_v<decltype(fn())>) {
            fn();
            return EAGLE_BACKEND_OK;
        } else {
            eagle_backend_status s = fn();
            return s;
        }
    } catch (...) {
        return status_from_current_exception(where);
    }
}

// For seam functions that return nothing (releases, free): runs fn and swallows every exception.
template <class Fn>
void guarded_void(Fn&& fn) noexcept {
    try {
        fn();
    } catch (...) {
    }
}

// Throws INVALID_ARGUMENT naming `name` when p is NULL; returns p.
template <class T>
T* require(T* p, const char* name) {
    if (!p) fail(EAGLE_BACKEND_INVALID_ARGUMENT, std::string(name) + " is NULL");
    return p;
}

// The scratch protocol of compact_device and reorder_device. With desc->scratch == 0 the call is a
// query: `need` is written to desc->scratch_bytes (INVALID_ARGUMENT when the caller's struct is too
// short to hold it) and true is returned; otherwise the scratch must hold `need` bytes
// (INVALID_ARGUMENT otherwise) and false is returned. `d` is the desc as read_desc read it.
template <class Desc>
bool scratch_query_or_check(Desc* desc, const Desc& d, int64_t need, const char* what) {
    if (!d.scratch) {
        if (d.struct_size < offsetof(Desc, scratch_bytes) + sizeof(int64_t))
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->struct_size is too small to hold scratch_bytes");
        desc->scratch_bytes = need;
        return true;
    }
    if (d.scratch_bytes < need)
        fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->scratch_bytes is " + std::to_string(d.scratch_bytes) + "; " +
                                                 what + " needs " + std::to_string(need));
    return false;
}

// A sample count for filtering: INVALID_ARGUMENT when negative, UNSUPPORTED at 2^31 and beyond
// (index maps are int32).
inline void check_sample_count(int64_t n, const char* name) {
    if (n < 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, std::string(name) + " is negative");
    if (n > INT32_MAX)
        fail(EAGLE_BACKEND_UNSUPPORTED, std::string(name) + " is " + std::to_string(n) + "; the limit is 2^31-1");
}

// Unknown flag bits are UNSUPPORTED, never ignored: `name` (e.g. "desc->flags") and the unknown
// bits in hex are in the message.
inline void check_flags(uint32_t flags, uint32_t known, const char* name) {
    if (flags & ~known) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%x", flags & ~known);
        fail(EAGLE_BACKEND_UNSUPPORTED, std::string(name) + " has unknown bits 0x" + buf);
    }
}

// The partition triple of run_device: INVALID_ARGUMENT unless 0 <= base, 0 <= count,
// 0 <= n_samples and base + count <= n_samples (base + count checked without signed overflow).
// `what` names where the triple came from (e.g. "desc").
inline void check_partition(int64_t base, int64_t count, int64_t n_samples, const char* what) {
    if (base < 0 || count < 0 || n_samples < 0 || base > INT64_MAX - count || n_samples < base + count)
        fail(EAGLE_BACKEND_INVALID_ARGUMENT,
             std::string(what) + " has a bad partition: base " + std::to_string(base) + ", count " +
                 std::to_string(count) + ", n_samples " + std::to_string(n_samples) +
                 " (needs 0 <= base, 0 <= count, base + count <= n_samples)");
}

// Reads an input desc by the struct_size rule: copies min(caller, ours) bytes, zero-fills the rest,
// and sets the copy's struct_size to that number. NULL or struct_size < 4 is INVALID_ARGUMENT.
template <class Desc>
Desc read_desc(const Desc* in, const char* name) {
    static_assert(std::is_trivially_copyable_v<Desc>, "descs are POD");
    require(in, name);
    uint32_t caller = 0;
    std::memcpy(&caller, in, sizeof caller);
    if (caller < sizeof(uint32_t))
        fail(EAGLE_BACKEND_INVALID_ARGUMENT,
             std::string(name) + "->struct_size is " + std::to_string(caller) + " (< 4)");
    Desc out;
    std::memset(&out, 0, sizeof out);
    std::memcpy(&out, in, std::min<size_t>(caller, sizeof(Desc)));
    out.struct_size = static_cast<uint32_t>(std::min<size_t>(caller, sizeof(Desc)));
    return out;
}

// Writes an output struct by the struct_size rule: min(caller, ours) bytes, never beyond, and that
// size back into struct_size. NULL or struct_size < 4 is INVALID_ARGUMENT.
template <class Out>
void write_out(Out* dst, const Out& value, const char* name) {
    static_assert(std::is_trivially_copyable_v<Out>, "output structs are POD");
    require(dst, name);
    uint32_t caller = 0;
    std::memcpy(&caller, dst, sizeof caller);
    if (caller < sizeof(uint32_t))
        fail(EAGLE_BACKEND_INVALID_ARGUMENT,
             std::string(name) + "->struct_size is " + std::to_string(caller) + " (< 4)");
    const uint32_t n = static_cast<uint32_t>(std::min<size_t>(caller, sizeof(Out)));
    Out copy = value;
    copy.struct_size = n;
    std::memcpy(dst, &copy, n);
}

// A malloc'd copy of `count` words, which the caller frees with eagle_backend_free (the out array of
// capture_snapshot_nodes, say), or NULL when count is 0. Throws std::bad_alloc.
inline uint64_t* malloc_copy(const uint64_t* words, size_t count) {
    if (count == 0) return nullptr;
    auto* out = static_cast<uint64_t*>(std::malloc(count * sizeof(uint64_t)));
    if (!out) throw std::bad_alloc();
    std::memcpy(out, words, count * sizeof(uint64_t));
    return out;
}

// Copies a string into a fixed char array, truncating and NUL-filling the rest.
template <size_t N>
void copy_string(char (&dst)[N], const std::string& src) {
    const size_t n = std::min(N - 1, src.size());
    std::memcpy(dst, src.data(), n);
    std::memset(dst + n, 0, N - n);
}

}  // namespace eagle
