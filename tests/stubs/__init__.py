"""Stub backends the loader tests compile on the fly (``cc -shared``) into many shapes.

``build_stub(tmp_path, caps=..., omit=..., major=...)`` writes a C file that defines every seam
symbol from the header's model (required ones for real, the rest returning UNSUPPORTED or doing
the least that is needed), minus the omitted ones, and compiles it."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.append(ROOT)

_REAL_BODIES = {
    "eagle_backend_version": "return ((uint32_t)STUB_MAJOR << 16) | STUB_MINOR;",
    "eagle_backend_last_error": "return stub_error;",
    "eagle_backend_build_info": (
        "if (!info || info->struct_size < 4) return EAGLE_BACKEND_INVALID_ARGUMENT;"
        " struct eagle_backend_build_info mine; memset(&mine, 0, sizeof mine);"
        " mine.abi_version = EAGLE_BACKEND_VERSION; strcpy(mine.backend_kind, STUB_KIND);"
        " strcpy(mine.eagle_version, \"stub\");"
        " uint32_t n = info->struct_size < sizeof mine ? info->struct_size : (uint32_t)sizeof mine;"
        " mine.struct_size = n; memcpy(info, &mine, n); return 0;"),
    "eagle_backend_probe": "snprintf(stub_error, sizeof stub_error, \"stub: no device here (%s)\", STUB_KIND); return EAGLE_BACKEND_UNAVAILABLE;",
    "eagle_backend_free": "free(buffer);",
    "eagle_backend_capabilities": "if (!groups) return EAGLE_BACKEND_INVALID_ARGUMENT; *groups = STUB_CAPS; return 0;",
    "eagle_backend_device_types": (
        "if (!count || cap < 0) return EAGLE_BACKEND_INVALID_ARGUMENT;"
        " if (cap > 0 && types) types[0] = STUB_DEVICE_TYPE; *count = 1; return 0;"),
    # a stream that does nothing, so groups can be exercised past creation
    "eagle_backend_stream_create": (
        "(void)desc; if (!out) return EAGLE_BACKEND_INVALID_ARGUMENT;"
        " *out = (eagle_backend_stream)malloc(16); return 0;"),
    "eagle_backend_stream_ptr": "*raw = (uint64_t)(uintptr_t)stream; return 0;",
    "eagle_backend_stream_synchronize": "(void)stream; return 0;",
    "eagle_backend_stream_query": "(void)stream; if (!done) return EAGLE_BACKEND_INVALID_ARGUMENT; *done = 1; return 0;",
    "eagle_backend_stream_release": "free(stream);",
}


def stub_source(omit=(), extra_exports=(), bodies=None):
    from build_tools import cdef, parse
    m = parse.load(os.path.join(ROOT, "eagle_backend.h"))
    out = ['#include <stdint.h>', '#include <stdio.h>', '#include <stdlib.h>', '#include <string.h>',
           '#include "eagle_backend.h"',
           '#define X __attribute__((visibility("default")))',
           'static __thread char stub_error[256] = "stub: unsupported";']
    for f in m.functions:
        if f.name in omit:
            continue
        names = [p.name for p in f.params]
        sig = cdef.declare(f.returns, f"{f.name}({cdef.parameters(f.params)})")
        body = (bodies or {}).get(f.name, _REAL_BODIES.get(f.name))
        if body is None:
            voids = " ".join(f"(void){n};" for n in names)
            if cdef.declare(f.returns) == "void":
                body = voids
            else:
                body = f"{voids} snprintf(stub_error, sizeof stub_error, \"stub: {f.name} is a stub\"); return EAGLE_BACKEND_UNSUPPORTED;"
        out.append(f"X {sig} {{ {body} }}")
    for name in extra_exports:
        out.append(f"X int {name}(void) {{ return 0; }}")
    return "\n".join(out) + "\n"


def build_stub(tmp_path, name="stub", *, caps=0, major=1, minor=6, omit=(), kind="stub",
               device_type=1, extra_exports=(), bodies=None):
    """Compile a stub backend; returns its absolute path. ``bodies`` maps a seam symbol to the C
    body that replaces the stub's own (the parameters keep the header's names)."""
    src = os.path.join(str(tmp_path), f"{name}.c")
    lib = os.path.join(str(tmp_path), f"libeagle_{name}.so")
    with open(src, "w") as fh:
        fh.write(stub_source(omit, extra_exports, bodies))
    cmd = [os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O0", "-w", f"-I{ROOT}",
           f"-DSTUB_CAPS={int(caps)}ull", f"-DSTUB_MAJOR={int(major)}", f"-DSTUB_MINOR={int(minor)}",
           f'-DSTUB_KIND="{kind}"', f"-DSTUB_DEVICE_TYPE={int(device_type)}", src, "-o", lib]
    subprocess.run(cmd, check=True)
    return lib
