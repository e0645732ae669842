"""``python -m eagle new-backend DIR KIND``: write a minimal backend that builds and passes
``python -m eagle.check`` as written.

The skeleton has the seven required symbols and the ``stream`` group; ``capabilities()`` leaves a
``name: reason`` line for every other group and per-symbol entry of the seam (taken from
``eagle._seam_meta``, so it matches the installed header). It builds with CMake and any generator
from the installed kit (``find_package(eagle CONFIG)``); see docs/add_a_backend.md."""
import os
import re

from .. import _seam_meta as meta
from .._device_kind import GPU_KINDS, KIND_OF_DEVICE_TYPE

PREFIX = "eagle_backend_"
KIND_RE = re.compile(r"[a-z][a-z0-9_]{0,14}")  # the whole kind: use fullmatch

#: eagle's own kinds: a backend of one of these, installed, would replace eagle's libeagle_<kind>.so.
OWN_KINDS = frozenset(KIND_OF_DEVICE_TYPE.values()) | GPU_KINDS
#: Kinds a new backend may not take: eagle's own, and "gpu", the name by which users ask for the
#: installed one of GPU_KINDS (eagle/_loader.py), so no library is opened by it.
RESERVED_KINDS = OWN_KINDS | {"gpu"}

CMAKE = """\
# libeagle_{kind}.so, built against eagle's installed backend kit:
#   cmake -S . -B build -Deagle_DIR="$(python -m eagle --cmake-dir)"
#   cmake --build build
cmake_minimum_required(VERSION 3.20)
project(eagle_{kind} LANGUAGES CXX)
find_package(eagle 0.1 CONFIG REQUIRED)
eagle_add_backend({kind}
  SOURCES required.cpp stream.cpp)
"""

COMMON_H = """\
// State shared by the files of the {kind} backend. One concept per file: required.cpp holds the
// seven required symbols, stream.cpp the stream group.
#pragma once

#include "eagle/backend_kit.h"

namespace {ns} {{

// A stream of this kind. A real backend holds its native queue here; the skeleton runs no work,
// so a stream only needs to exist and to be told apart from a released one.
struct Stream {{
    bool blocking = true;
}};

// Live stream handles: a handle not in the registry (released, or never ours) is BAD_HANDLE.
Stream* register_stream(bool blocking);
Stream* lookup_stream(eagle_backend_stream handle, const char* name);
Stream* find_stream(uint64_t raw) noexcept;
bool unregister_stream(eagle_backend_stream handle) noexcept;

}}  // namespace {ns}
"""

REQUIRED = """\
// The seven required symbols of the {kind} backend.
#include <cstdlib>

#include "common.h"

namespace {{
// Why each group and per-symbol entry this backend leaves out is missing: one `name: reason`
// line each, left in last_error by capabilities() on OK (eagle shows them to users and
// eagle.check compares them with what is left out). Remove a line when you add its group.
constexpr const char* kLeftOut =
{left_out};
}}  // namespace

EAGLE_EXPORT uint32_t eagle_backend_version(void) {{ return EAGLE_BACKEND_VERSION; }}

EAGLE_EXPORT const char* eagle_backend_last_error(void) {{ return eagle::last_error(); }}

EAGLE_EXPORT eagle_backend_status eagle_backend_build_info(struct eagle_backend_build_info* info) {{
    return eagle::guarded("eagle_backend_build_info", [&] {{
        // C++: `struct eagle_backend_build_info` names the struct; the function of the same name
        // hides it, so the struct keyword is needed wherever the type is named.
        struct eagle_backend_build_info v;
        std::memset(&v, 0, sizeof v);
        v.abi_version = EAGLE_BACKEND_VERSION;
        eagle::copy_string(v.eagle_version, EAGLE_RELEASE);
        eagle::copy_string(v.archs, "");
        eagle::copy_string(v.backend_kind, "{kind}");
        eagle::write_out(info, v, "info");
    }});
}}

EAGLE_EXPORT eagle_backend_status eagle_backend_probe(void) {{
    // A real backend asks its driver here and fails with UNAVAILABLE and the driver's reason.
    return EAGLE_BACKEND_OK;
}}

EAGLE_EXPORT void eagle_backend_free(void* buffer) {{ std::free(buffer); }}

EAGLE_EXPORT eagle_backend_status eagle_backend_capabilities(uint64_t* groups) {{
    return eagle::guarded("eagle_backend_capabilities", [&] {{
        eagle::require(groups, "groups");
        *groups = EAGLE_BACKEND_CAP_STREAM;
        eagle::set_last_error(kLeftOut);
    }});
}}

EAGLE_EXPORT eagle_backend_status eagle_backend_device_types(int32_t* types, int32_t cap, int32_t* count) {{
    return eagle::guarded("eagle_backend_device_types", [&] {{
        eagle::require(count, "count");
        if (cap < 0) eagle::fail(EAGLE_BACKEND_INVALID_ARGUMENT, "cap is negative");
        if (cap > 0) eagle::require(types, "types");
        // DLPack has no device type for this kind: 12 is kDLExtDev, DLPack's code for a device it
        // does not name. Arrays of this kind are not routed here by their DLPack device; users
        // name the kind (backend="{kind}"). Use the kind's own DLPack code when it has one.
        const int32_t served[] = {{12}};
        const int32_t n = static_cast<int32_t>(sizeof served / sizeof served[0]);
        for (int32_t i = 0; i < n && i < cap; ++i) types[i] = served[i];
        *count = n;
    }});
}}
"""

STREAM = """\
// Group stream (bit 0) of the {kind} backend.
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common.h"

namespace {ns} {{
namespace {{
std::mutex g_mu;
std::unordered_map<Stream*, std::unique_ptr<Stream>> g_streams;
}}  // namespace

Stream* register_stream(bool blocking) {{
    auto s = std::make_unique<Stream>();
    s->blocking = blocking;
    std::lock_guard<std::mutex> lock(g_mu);
    Stream* p = s.get();
    g_streams.emplace(p, std::move(s));
    return p;
}}

Stream* find_stream(uint64_t raw) noexcept {{
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_streams.find(reinterpret_cast<Stream*>(raw));
    return it == g_streams.end() ? nullptr : it->first;
}}

Stream* lookup_stream(eagle_backend_stream handle, const char* name) {{
    if (!handle) eagle::fail(EAGLE_BACKEND_BAD_HANDLE, std::string(name) + " is NULL");
    Stream* s = find_stream(reinterpret_cast<uint64_t>(handle));
    if (!s)
        eagle::fail(EAGLE_BACKEND_BAD_HANDLE,
                    std::string(name) + " is not a live stream of the {kind} backend (released or foreign)");
    return s;
}}

bool unregister_stream(eagle_backend_stream handle) noexcept {{
    std::unique_ptr<Stream> gone;  // destroyed outside the lock
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_streams.find(reinterpret_cast<Stream*>(handle));
    if (it == g_streams.end()) return false;
    gone = std::move(it->second);
    g_streams.erase(it);
    return true;
}}

}}  // namespace {ns}

using namespace {ns};

EAGLE_EXPORT eagle_backend_status eagle_backend_stream_create(const struct eagle_backend_stream_desc* desc,
                                                              eagle_backend_stream* out) {{
    return eagle::guarded("eagle_backend_stream_create", [&] {{
        const auto d = eagle::read_desc(desc, "desc");
        eagle::require(out, "out");
        eagle::check_flags(d.flags, EAGLE_BACKEND_STREAM_NON_BLOCKING, "desc->flags");
        if (d.device != -1 && d.device != 0)
            eagle::fail(EAGLE_BACKEND_INDEX, "desc->device is " + std::to_string(d.device) +
                                                 "; the {kind} backend has only device 0 (or -1)");
        *out = reinterpret_cast<eagle_backend_stream>(
            register_stream((d.flags & EAGLE_BACKEND_STREAM_NON_BLOCKING) == 0));
    }});
}}

EAGLE_EXPORT eagle_backend_status eagle_backend_stream_ptr(eagle_backend_stream stream, uint64_t* raw) {{
    return eagle::guarded("eagle_backend_stream_ptr", [&] {{
        eagle::require(raw, "raw");
        *raw = reinterpret_cast<uint64_t>(lookup_stream(stream, "stream"));
    }});
}}

EAGLE_EXPORT eagle_backend_status eagle_backend_stream_synchronize(eagle_backend_stream stream) {{
    return eagle::guarded("eagle_backend_stream_synchronize", [&] {{
        lookup_stream(stream, "stream");
        // A real backend waits for the stream's work here and fails with ERROR when it failed.
    }});
}}

EAGLE_EXPORT void eagle_backend_stream_release(eagle_backend_stream stream) {{
    eagle::guarded_void([&] {{
        if (stream) unregister_stream(stream);  // NULL, released and foreign handles: no-op
    }});
}}
"""


def left_out_lines(provided_groups=("stream",)):
    """The ``name: reason`` lines for every group and per-symbol entry not provided."""
    lines = [f"{g}: not implemented yet by this backend" for g in meta.GROUP_BITS
             if g not in provided_groups]
    lines += [f"{sym[len(PREFIX):]}: not implemented yet by this backend" for sym in meta.PER_SYMBOL]
    return lines


def _c_string_lines(lines):
    out = [f'    "{line}\\n"' for line in lines[:-1]]
    out.append(f'    "{lines[-1]}"' if lines else '    ""')
    return "\n".join(out)


def _remove(files, folders):
    """Remove ``files``, then ``folders`` innermost first, as far as they go: what is left is
    named by the error that made the caller undo its work."""
    for path in files:
        try:
            os.remove(path)
        except OSError:
            pass
    for path in reversed(folders):
        try:
            os.rmdir(path)
        except OSError:
            pass


def check_kind(kind):
    """Refuse (ValueError, saying why) a kind a new backend cannot have: one that is not 1-15
    lower-case letters, digits or '_' starting with a letter, or one of RESERVED_KINDS."""
    if not KIND_RE.fullmatch(kind):
        raise ValueError(f"eagle new-backend: the kind {kind!r} must be 1-15 lower-case letters, "
                         "digits or '_', starting with a letter (it goes into build_info.backend_kind)")
    if kind in RESERVED_KINDS:
        raise ValueError(f"eagle new-backend: the kind {kind!r} is reserved: eagle's own backends are "
                         f"{', '.join(sorted(OWN_KINDS))} (cmake --install would put yours over eagle's "
                         "libeagle_<kind>.so), and 'gpu' asks for the installed GPU kind; choose another name")


def write(directory, kind):
    """Write the skeleton of backend ``kind`` into ``directory`` (created, with any missing parent
    folders; it must not exist or be empty). Returns the paths written.

    Raises ValueError for a kind :func:`check_kind` refuses and FileExistsError for a used
    ``directory``, before writing anything; any other OSError (a parent that is a file, a folder
    that cannot be written) after removing what this call wrote, files and folders, with the
    error's ``filename`` the path that failed."""
    check_kind(kind)
    directory = os.path.abspath(directory)
    if os.path.exists(directory) and (not os.path.isdir(directory) or os.listdir(directory)):
        raise FileExistsError(f"eagle new-backend: '{directory}' exists and is not an empty folder")
    fields = {"kind": kind, "ns": f"eagle_{kind}", "left_out": _c_string_lines(left_out_lines())}
    files = {"CMakeLists.txt": CMAKE, "common.h": COMMON_H, "required.cpp": REQUIRED, "stream.cpp": STREAM}
    missing = []  # the folders to make, outermost first
    parent = directory
    while not os.path.lexists(parent):
        missing.insert(0, parent)
        parent = os.path.dirname(parent)
    made, written = [], []
    path = directory
    try:
        for path in missing:
            os.mkdir(path)
            made.append(path)
        for name, text in files.items():
            path = os.path.join(directory, name)
            with open(path, "x") as f:  # "x": never over a file someone else made meanwhile
                written.append(path)
                f.write(text.format(**fields))
    except BaseException as e:
        _remove(written, made)
        if isinstance(e, OSError) and e.filename is None:  # a failed write() names no file
            e.filename = path
        raise
    return written
