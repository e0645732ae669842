"""Backends that break the header's promises at run time (not at load time): eagle must answer
with an EagleError, never crash or raise a bare Python exception. Each case runs in a fresh
interpreter against a stub backend compiled on the fly."""
import pytest

from _subproc import run_snippet

NULL_LAST_ERROR = {
    "eagle_backend_last_error": "return NULL;",
    "eagle_backend_stream_create": "(void)desc; (void)out; return EAGLE_BACKEND_INVALID_ARGUMENT;",
}


@pytest.mark.parametrize("call,expected", [
    ("b.stream()", "EagleValueError"),
    ("b.probe()", "BackendUnavailable"),
    ("b.fork(None, 2)", "BackendUnavailable"),  # a clear bit: refused before any seam call
])
def test_a_backend_whose_last_error_is_null_gives_a_typed_error(make_stub, call, expected):
    path = make_stub("nullerr", caps=1, bodies=NULL_LAST_ERROR)
    out = run_snippet(f"""
        import eagle
        b = eagle.backend(PATH)
        {call}
    """, globals={"PATH": path})
    out.expect_no_crash()
    out.expect_raises(expected)


def test_a_null_last_error_reads_as_no_message(make_stub):
    path = make_stub("nullerr", caps=1, bodies=NULL_LAST_ERROR)
    out = run_snippet("""
        import eagle
        b = eagle.backend(PATH)   # the handshake reads last_error after capabilities()
        try:
            b.stream()
        except eagle.EagleError as e:
            result = str(e)
    """, globals={"PATH": path})
    assert out.expect_ok() == "eagle_backend_stream_create: (the backend left no message)"
