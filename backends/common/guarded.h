// Shared by every eagle backend: the exception -> status boundary, the thread-local last error,
// and the struct_size helpers for input descs and output structs. No kind specifics here.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "eagle_backend.h"

// The release string every backend reports in build_info.eagle_version.
#ifndef EAGLE_RELEASE
#define EAGLE_RELEASE "0.1.0"
#endif

// Marks a seam function for export (the version script then keeps exactly the seam).
#define EAGLE_EXPORT extern "C" __attribute__((visibility("default")))

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

[[noreturn]] void fail(eagle_backend_status status, std::string message);

// The calling thread's message of the last failed call ("" if none).
const char* last_error() noexcept;
void set_last_error(const char* message) noexcept;
void set_last_error(const std::string& message) noexcept;
void clear_last_error() noexcept;

// Maps the exception being handled to a status and records its message; call from a catch block.
eagle_backend_status status_from_current_exception(const char* where) noexcept;

// Runs fn (returning void or eagle_backend_status); any exception becomes a status with
// last_error set. `where` names the seam function in messages.
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

// For void seam functions (releases): swallows every exception.
template <class Fn>
void guarded_void(Fn&& fn) noexcept {
    try {
        fn();
    } catch (...) {
    }
}

// Throws INVALID_ARGUMENT naming `name` when p is NULL.
template <class T>
T* require(T* p, const char* name) {
    if (!p) fail(EAGLE_BACKEND_INVALID_ARGUMENT, std::string(name) + " is NULL");
    return p;
}

// The scratch protocol of compact_device and reorder_device. With desc->scratch == 0 the call is a
// query: `need` is written to desc->scratch_bytes (INVALID_ARGUMENT when the caller's struct is too
// short to hold it) and true is returned; otherwise the scratch must hold `need` bytes.
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
    if (flags & ~known)
        fail(EAGLE_BACKEND_UNSUPPORTED, std::string(name) + " has unknown bits 0x" + [&] {
            char buf[16];
            std::snprintf(buf, sizeof buf, "%x", flags & ~known);
            return std::string(buf);
        }());
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

// Reads an input desc by the struct_size rule: copies min(caller, ours) bytes, zero-fills the rest.
// NULL or struct_size < 4 is INVALID_ARGUMENT.
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

// Copies a string into a fixed char array, truncating and NUL-terminating.
template <size_t N>
void copy_string(char (&dst)[N], const std::string& src) {
    const size_t n = std::min(N - 1, src.size());
    std::memcpy(dst, src.data(), n);
    std::memset(dst + n, 0, N - n);
}

}  // namespace eagle
