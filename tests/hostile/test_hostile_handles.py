"""Handles the backend never handed out (or has released) reach it through the seam: every backend
answers BAD_HANDLE from its registry of live handles without reading the memory the handle points
to, and a release of such a handle frees nothing. The buffers passed here are shaped like live
objects of the GPU backends' old layout (a type word first), which a magic-word check accepted.
Runs on every installed kind (a GPU kind on its no-device path too: lookups need no device)."""
import pytest

from _subproc import run_snippet

KINDS = ["cpu", "cuda", "hip"]

FOREIGN_HANDLES = """
import eagle
from eagle._seam_ffi import ffi
b = eagle.backend(KIND)
tags = [0x5354524d, 0x43415054, 0x43415044, 0x47524150, 0x4c4e4348, 0x464f524b, 0x434f4e44]
calls = [  # (group, symbol, handle type, output type)
    ("stream", "stream_ptr", "eagle_backend_stream", "uint64_t*"),
    ("stream", "stream_synchronize", "eagle_backend_stream", None),
    ("capturer", "capturer_begin", "eagle_backend_capturer", None),
    ("captured", "captured_is_valid", "eagle_backend_captured", "int32_t*"),
    ("fork", "fork_size", "eagle_backend_fork", "uint64_t*"),
    ("conditional", "conditional_is_loop", "eagle_backend_conditional", "int32_t*"),
    ("graph", "graph_last_node", "eagle_backend_graph", "int64_t*"),
    ("launcher", "launcher_kernel_node_count", "eagle_backend_launcher", "int64_t*"),
]
releases = [("stream", "stream_release", "eagle_backend_stream"), ("capturer", "capturer_release", "eagle_backend_capturer"),
            ("captured", "captured_release", "eagle_backend_captured"), ("fork", "fork_release", "eagle_backend_fork"),
            ("conditional", "conditional_release", "eagle_backend_conditional"), ("graph", "graph_release", "eagle_backend_graph"),
            ("launcher", "launcher_release", "eagle_backend_launcher")]
statuses = {}
for tag in tags:
    buf = ffi.new("uint32_t[]", [tag] * 256)
    for group, sym, htype, out in calls:
        if not b.provides(group):
            continue
        args = [ffi.cast(htype, buf)] + ([ffi.new(out)] if out else [])
        statuses.setdefault(sym, set()).add(int(getattr(b._f, sym)(*args)))
    for group, sym, htype in releases:
        if b.provides(group):
            getattr(b._f, sym)(ffi.cast(htype, buf))
    assert list(buf) == [tag] * 256, f"a release of a foreign handle wrote into it ({hex(tag)})"
result = {sym: sorted(s) for sym, s in statuses.items()}
"""


@pytest.mark.parametrize("kind", KINDS)
def test_a_foreign_handle_shaped_like_a_live_object_is_bad_handle(kind):
    from eagle._loader import backends
    if kind not in backends():
        pytest.skip(f"no {kind} backend installed (set $EAGLE_BACKEND_{kind.upper()} to test one)")
    out = run_snippet(FOREIGN_HANDLES, globals={"KIND": kind}, timeout=120)
    result = out.expect_ok()
    assert result, "no handle-taking group was provided"
    assert result == {sym: [7] for sym in result}, f"not BAD_HANDLE (7) everywhere: {result}"


def test_every_cpu_handle_released_is_bad_handle(cpu):
    """A stream handle made and released through the seam binding, used again."""
    out = run_snippet("""
        import eagle
        from eagle._seam_ffi import ffi
        b = eagle.backend("cpu")
        out = ffi.new("uint64_t*")
        handle = ffi.new("eagle_backend_stream*")
        desc = ffi.new("struct eagle_backend_stream_desc*", {"struct_size": ffi.sizeof("struct eagle_backend_stream_desc"), "device": -1})
        assert b._f.stream_create(desc, handle) == 0
        h = handle[0]
        b._f.stream_release(h)
        result = [int(b._f.stream_ptr(h, out)), int(b._f.stream_synchronize(h))]
        b._f.stream_release(h)
    """)
    assert out.expect_ok() == [7, 7]
