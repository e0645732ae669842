#include "guarded.h"

#include <typeinfo>

namespace eagle {

namespace {
thread_local std::string t_last_error;
}

void fail(eagle_backend_status status, std::string message) { throw Error(status, std::move(message)); }

const char* last_error() noexcept { return t_last_error.c_str(); }

void set_last_error(const char* message) noexcept {
    try {
        t_last_error.assign(message ? message : "");
    } catch (...) {
        t_last_error.clear();
    }
}

void set_last_error(const std::string& message) noexcept { set_last_error(message.c_str()); }

void clear_last_error() noexcept { t_last_error.clear(); }

namespace {
void set_prefixed(const std::string& prefix, const char* message) noexcept {
    try {
        t_last_error = prefix + message;
    } catch (...) {
        set_last_error(message);
    }
}
}  // namespace

eagle_backend_status status_from_current_exception(const char* where) noexcept {
    std::string prefix;
    try {
        if (where) prefix = std::string(where) + ": ";
    } catch (...) {
    }
    try {
        throw;
    } catch (const Error& e) {
        set_prefixed(prefix, e.what());
        return e.status();
    } catch (const std::bad_alloc&) {
        set_last_error("out of memory");
        return EAGLE_BACKEND_ERROR;
    } catch (const std::exception& e) {
        set_prefixed(prefix, e.what());
        return EAGLE_BACKEND_ERROR;
    } catch (...) {
        set_prefixed(prefix, "unknown C++ exception");
        return EAGLE_BACKEND_ERROR;
    }
}

}  // namespace eagle
