/*
 * minimal_1_0.c -- a third-party-style backend written from eagle_backend.h's text alone, the way
 * an author outside the project would: plain C, no eagle helper, no handle registry.
 *
 * It declares eagle-backend/1.0 ((1 << 16) | 0), provides the seven required symbols and the
 * stream group (bit 0), and says why it leaves out everything else. Its streams carry no work
 * (nothing in the 1.0 stream group enqueues any), so synchronize has nothing to wait for.
 *
 *   cc -std=c11 -shared -fPIC -fvisibility=hidden -I<repo> minimal_1_0.c -o libeagle_minimal.so
 *
 * tests/test_check_minimal.py builds it and requires `python -m eagle.check` to pass it (exit 0):
 * what the header does not require (recognising a released handle) may only be advice.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eagle_backend.h"

#define EXPORT __attribute__((visibility("default")))
#define MINIMAL_VERSION ((1u << 16) | 0u) /* eagle-backend/1.0: the published seam */

/* "A failed call leaves a message in the thread-local eagle_backend_last_error()". */
static _Thread_local char t_error[512];

static eagle_backend_status fail(eagle_backend_status st, const char* where, const char* what) {
    snprintf(t_error, sizeof t_error, "%s: %s", where, what);
    return st;
}

/* An input desc: "the callee reads only the fields that fit and takes the rest as zero". */
static void read_desc(void* dst, size_t ours, const void* src) {
    uint32_t theirs;
    memset(dst, 0, ours);
    memcpy(&theirs, src, sizeof theirs);
    if (theirs < sizeof theirs) return; /* not even struct_size fits: every field is zero */
    memcpy(dst, src, theirs < ours ? theirs : ours);
}

/* ------------------------------------------------------------------ required */
EXPORT uint32_t eagle_backend_version(void) { return MINIMAL_VERSION; }

EXPORT const char* eagle_backend_last_error(void) { return t_error; }

EXPORT eagle_backend_status eagle_backend_build_info(struct eagle_backend_build_info* info) {
    if (!info) return fail(EAGLE_BACKEND_INVALID_ARGUMENT, "eagle_backend_build_info", "info is NULL");
    if (info->struct_size < 4)
        return fail(EAGLE_BACKEND_INVALID_ARGUMENT, "eagle_backend_build_info", "info->struct_size < 4");
    struct eagle_backend_build_info b;
    memset(&b, 0, sizeof b);
    uint32_t n = info->struct_size < sizeof b ? info->struct_size : (uint32_t)sizeof b;
    b.struct_size = n;
    b.abi_version = MINIMAL_VERSION;
    snprintf(b.eagle_version, sizeof b.eagle_version, "minimal-1.0");
    snprintf(b.backend_kind, sizeof b.backend_kind, "minimal");
    memcpy(info, &b, n); /* the output struct rule: min(caller, callee) bytes, that size back */
    return EAGLE_BACKEND_OK;
}

EXPORT eagle_backend_status eagle_backend_probe(void) {
    t_error[0] = '\0';
    return EAGLE_BACKEND_OK; /* the "device" is this process */
}

EXPORT void eagle_backend_free(void* buffer) { free(buffer); }

/* One `name: reason` line per group left out; this backend has no per-symbol entry of minor 0. */
static const char WHY[] =
    "capturer: this backend has no work to record\n"
    "captured: this backend has no work to record\n"
    "fork: this backend has one stream kind and no work to order\n"
    "conditional: this backend has no graphs\n"
    "attribution: this backend has no graphs\n"
    "graph: this backend has no graphs\n"
    "launcher: this backend has no graphs\n"
    "exec: this backend runs no kernels\n"
    "device: this backend reports no device properties\n"
    "interop: this backend serves no DLPack device of its own to order with\n"
    "filtering: this backend runs no kernels";

EXPORT eagle_backend_status eagle_backend_capabilities(uint64_t* groups) {
    if (!groups) return fail(EAGLE_BACKEND_INVALID_ARGUMENT, "eagle_backend_capabilities", "groups is NULL");
    *groups = EAGLE_BACKEND_CAP_STREAM;
    snprintf(t_error, sizeof t_error, "%s", WHY); /* "On OK it also sets last_error to a note" */
    return EAGLE_BACKEND_OK;
}

EXPORT eagle_backend_status eagle_backend_device_types(int32_t* types, int32_t cap, int32_t* count) {
    if (!count) return fail(EAGLE_BACKEND_INVALID_ARGUMENT, "eagle_backend_device_types", "count is NULL");
    if (cap < 0) return fail(EAGLE_BACKEND_INVALID_ARGUMENT, "eagle_backend_device_types", "cap is negative");
    if (cap > 0 && !types)
        return fail(EAGLE_BACKEND_INVALID_ARGUMENT, "eagle_backend_device_types", "types is NULL");
    if (cap >= 1) types[0] = 12; /* kDLExtDev: DLPack has no code for this kind */
    *count = 1;
    return EAGLE_BACKEND_OK;
}

/* ------------------------------------------------------------------ stream (bit 0) */
#define STREAM_MAGIC 0x6d696e31u /* "min1": this backend's streams, cleared on release */

struct eagle_backend_stream_opaque {
    uint32_t magic;
    uint32_t flags;
    int32_t device;
};

/* Cheap recognition of what is plainly not a stream (NULL, not this backend's layout). A released
 * handle is not tracked: the header defines BAD_HANDLE but does not require a registry. */
static struct eagle_backend_stream_opaque* stream_of(eagle_backend_stream s) {
#ifdef MINIMAL_TRUST_HANDLES
    /* The variant tests/test_check_minimal.py builds to show advice: it trusts every non-NULL
     * handle, as a Vulkan driver does (using a released handle is the caller's error). */
    return s;
#else
    return s && s->magic == STREAM_MAGIC ? s : NULL;
#endif
}

EXPORT eagle_backend_status eagle_backend_stream_create(const struct eagle_backend_stream_desc* desc,
                                                        eagle_backend_stream* out) {
    static const char* where = "eagle_backend_stream_create";
    if (!desc) return fail(EAGLE_BACKEND_INVALID_ARGUMENT, where, "desc is NULL");
    if (!out) return fail(EAGLE_BACKEND_INVALID_ARGUMENT, where, "out is NULL");
    struct eagle_backend_stream_desc d;
    read_desc(&d, sizeof d, desc);
    if (d.flags & ~EAGLE_BACKEND_STREAM_NON_BLOCKING)
        return fail(EAGLE_BACKEND_UNSUPPORTED, where, "desc->flags has an unknown bit");
    if (d.device != -1 && d.device != 0)
        return fail(EAGLE_BACKEND_INDEX, where, "desc->device does not exist (this backend has device 0)");
    struct eagle_backend_stream_opaque* s = malloc(sizeof *s);
    if (!s) return fail(EAGLE_BACKEND_ERROR, where, "out of memory");
    s->magic = STREAM_MAGIC;
    s->flags = d.flags;
    s->device = 0;
    *out = s;
    return EAGLE_BACKEND_OK;
}

EXPORT eagle_backend_status eagle_backend_stream_ptr(eagle_backend_stream stream, uint64_t* raw) {
    if (!stream_of(stream)) return fail(EAGLE_BACKEND_BAD_HANDLE, "eagle_backend_stream_ptr", "not a stream");
    if (!raw) return fail(EAGLE_BACKEND_INVALID_ARGUMENT, "eagle_backend_stream_ptr", "raw is NULL");
    *raw = (uint64_t)(uintptr_t)stream;
    return EAGLE_BACKEND_OK;
}

EXPORT eagle_backend_status eagle_backend_stream_synchronize(eagle_backend_stream stream) {
    if (!stream_of(stream))
        return fail(EAGLE_BACKEND_BAD_HANDLE, "eagle_backend_stream_synchronize", "not a stream");
    return EAGLE_BACKEND_OK; /* nothing can be enqueued on it, so nothing is pending */
}

EXPORT void eagle_backend_stream_release(eagle_backend_stream stream) {
    struct eagle_backend_stream_opaque* s = stream_of(stream);
    if (!s) return; /* NULL-safe */
    s->magic = 0;
    free(s);
}
