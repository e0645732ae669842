"""Each defect in a temporary copy of the header stops the generator with file:line: reason."""

import subprocess
import sys
from pathlib import Path

import pytest

from build_tools import layout, parse as seam_parse
from build_tools.errors import SeamError

ROOT = Path(__file__).resolve().parent.parent
HEADER_TEXT = (ROOT / "eagle_backend.h").read_text()
BEFORE_CPLUSPLUS_END = "#ifdef __cplusplus\n} /* extern"
AFTER_DEFINES = "#define EAGLE_BACKEND_MEMCPY_H2H 4\n"


def _replace(old: str, new: str) -> tuple[str, int]:
    """Header text with `old` (which must occur once) replaced; the line where `new` starts."""
    assert HEADER_TEXT.count(old) == 1, old
    at = HEADER_TEXT.index(old)
    return HEADER_TEXT.replace(old, new), HEADER_TEXT[:at].count("\n") + 1


def _insert(anchor: str, new: str, after: bool = False) -> tuple[str, int]:
    """Header text with `new` inserted before (or after) the unique `anchor`; new's first line."""
    return _replace(anchor, anchor + new if after else new + anchor)


def _line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def _defect(case: str) -> tuple[str, int, str]:
    """(header text with one defect, the line the error must name, a phrase of the reason)."""
    match case:
        case "unknown type in a parameter":
            text, line = _replace("eagle_backend_status eagle_backend_probe(void);",
                                  "eagle_backend_status eagle_backend_probe(foo_t x);")
            return text, line, "unknown type 'foo_t'"
        case "unknown type as a return type":
            text, line = _replace("uint32_t eagle_backend_version(void);", "foo_t eagle_backend_version(void);")
            return text, line, "unknown type 'foo_t'"
        case "unknown type in a struct field":
            text, line = _replace("    int32_t reserved0;       /* written as 0 */",
                                  "    size_t reserved0;        /* written as 0 */")
            return text, line, "unknown type 'size_t'"
        case "non-fixed-width type":
            text, line = _replace("eagle_backend_status eagle_backend_fork_join(eagle_backend_fork fork);",
                                  "eagle_backend_status eagle_backend_fork_join(eagle_backend_fork fork, long n);")
            return text, line, "unknown type 'long'"
        case "unknown struct tag":
            text, line = _replace("eagle_backend_status eagle_backend_reorder_device(struct eagle_backend_reorder_desc* desc);",
                                  "eagle_backend_status eagle_backend_reorder_device(struct eagle_backend_reorder_dsec* desc);")
            return text, line, "unknown struct eagle_backend_reorder_dsec"
        case "function-like macro":
            text, line = _insert(AFTER_DEFINES, "#define EAGLE_BACKEND_MAX(a, b) ((a) > (b) ? (a) : (b))\n", after=True)
            return text, line + 1, "function-like macro EAGLE_BACKEND_MAX"
        case "missing marker":
            text, _ = _replace("/* @eagle group=stream since=0\n * Writes the stream's raw value",
                               "/* Writes the stream's raw value")
            return text, _line_of(text, "eagle_backend_stream_ptr("), "eagle_backend_stream_ptr has no @eagle group marker"
        case "marker with an unknown group":
            text, line = _replace("/* @eagle group=fork since=0\n * Writes branch_count",
                                  "/* @eagle group=forks since=0\n * Writes branch_count")
            return text, line, "unknown group 'forks'"
        case "marker beyond the minor":
            text, line = _replace("/* @eagle group=per-symbol since=7\n * Frees memory from mem_alloc",
                                  "/* @eagle group=per-symbol since=10\n * Frees memory from mem_alloc")
            return text, line, "beyond EAGLE_BACKEND_VERSION_MINOR"
        case "malformed marker":
            text, line = _replace("/* @eagle group=per-symbol since=6\n * Frees memory",
                                  "/* @eagle group=per-symbol\n * Frees memory")
            return text, line, "malformed marker"
        case "two markers for one function":
            text, line = _insert("/* @eagle group=graph since=0\n * Creates an empty graph",
                                 "/* @eagle group=graph since=0 */\n")
            return text, line + 1, "second marker for eagle_backend_graph_create"
        case "marker before a struct":
            text, line = _insert("/* Input of eagle_backend_graph_create().", "/* @eagle group=graph since=0 */\n")
            return text, line, "followed by the definition of struct eagle_backend_graph_desc at line"
        case "duplicate function":
            text, line = _insert(BEFORE_CPLUSPLUS_END,
                                 "/* @eagle group=required since=0 */\neagle_backend_status eagle_backend_probe(void);\n\n")
            return text, line + 1, "duplicate symbol eagle_backend_probe"
        case "duplicate define":
            text, line = _insert(AFTER_DEFINES, "#define EAGLE_BACKEND_INDEX 9\n", after=True)
            return text, line + 1, "duplicate symbol EAGLE_BACKEND_INDEX"
        case "duplicate struct":
            text, line = _insert(BEFORE_CPLUSPLUS_END,
                                 "struct eagle_backend_stream_desc {\n    uint32_t struct_size;\n};\n\n")
            return text, line, "duplicate symbol struct eagle_backend_stream_desc"
        case "define that is a float":
            text, line = _insert(AFTER_DEFINES, "#define EAGLE_BACKEND_RATIO (1.5 * 2)\n", after=True)
            return text, line + 1, "cannot be evaluated to an integer literal"
        case "define that is a string":
            text, line = _insert(AFTER_DEFINES, '#define EAGLE_BACKEND_NAME "cpu"\n', after=True)
            return text, line + 1, "cannot be evaluated to an integer literal"
        case "define naming no define":
            text, line = _insert(AFTER_DEFINES, "#define EAGLE_BACKEND_X (EAGLE_BACKEND_Y + 1)\n", after=True)
            return text, line + 1, "EAGLE_BACKEND_Y is not an earlier #define"
        case "define that overflows its C type":
            text, line = _insert(AFTER_DEFINES, "#define EAGLE_BACKEND_BIG (1u << 40)\n", after=True)
            return text, line + 1, "shift by 40 of a 32-bit unsigned int"
        case "define without a value":
            text, line = _insert(AFTER_DEFINES, "#define EAGLE_BACKEND_FLAG\n", after=True)
            return text, line + 1, "has no value"
        case "struct passed by value":
            text, line = _replace("eagle_backend_status eagle_backend_build_info(struct eagle_backend_build_info* info);",
                                  "eagle_backend_status eagle_backend_build_info(struct eagle_backend_build_info info);")
            return text, line, "passes struct eagle_backend_build_info by value"
        case "struct returned by value":
            text, line = _replace("eagle_backend_status eagle_backend_build_info(struct eagle_backend_build_info* info);",
                                  "struct eagle_backend_build_info eagle_backend_build_info(void);")
            return text, line, "returns struct eagle_backend_build_info by value"
        case "unsupported directive":
            text, line = _insert(AFTER_DEFINES, "#if 0\n#endif\n", after=True)
            return text, line + 1, "directive #if 0 is not understood"
        case "other include":
            text, line = _replace("#include <stdint.h>", "#include <stddef.h>")
            return text, line, "#include <stddef.h> is not understood"
        case "a variable":
            text, line = _insert(BEFORE_CPLUSPLUS_END, "extern int32_t eagle_backend_counter;\n\n")
            return text, line, "eagle_backend_counter"
        case "an enum":
            text, line = _insert(BEFORE_CPLUSPLUS_END, "enum eagle_backend_kind { EAGLE_BACKEND_KIND_CPU };\n\n")
            return text, line, "an enum is not understood"
        case "a capability bit without symbols":
            text, line = _insert("#define EAGLE_BACKEND_CAP_FILTERING", "#define EAGLE_BACKEND_CAP_PROFILING (1ull << 13)\n")
            return text, line, "capability group 'profiling' has no symbols"
        case "a marker in the middle of a comment":
            text, line = _replace(" * Frees memory from host_alloc. NULL-safe. */",
                                  " * Frees memory from host_alloc. NULL-safe.\n * @eagle group=per-symbol since=6 */")
            return text, line + 1, "must open its comment"
        case "extends on a group symbol":
            text, line = _replace("/* @eagle group=conditional since=0\n * Closes the open body",
                                  "/* @eagle group=conditional since=0 extends=fork\n * Closes the open body")
            return text, line, "extends=fork needs group=per-symbol"
        case "extends naming no group":
            text, line = _replace("since=4 extends=conditional", "since=4 extends=conditionals")
            return text, line, "extends=conditionals needs group=per-symbol and a capability group"
    raise AssertionError(case)


CASES = [
    "unknown type in a parameter", "unknown type as a return type", "unknown type in a struct field",
    "non-fixed-width type", "unknown struct tag", "function-like macro", "missing marker",
    "marker with an unknown group", "marker beyond the minor", "malformed marker", "two markers for one function",
    "marker before a struct", "duplicate function", "duplicate define", "duplicate struct", "define that is a float",
    "define that is a string", "define naming no define", "define that overflows its C type",
    "define without a value", "struct passed by value", "struct returned by value", "unsupported directive",
    "other include", "a variable", "an enum", "a capability bit without symbols",
    "a marker in the middle of a comment", "extends on a group symbol", "extends naming no group",
]


@pytest.mark.parametrize("case", CASES)
def test_malformed_header_fails_naming_file_and_line(case, tmp_path):
    text, line, reason = _defect(case)
    header = tmp_path / "eagle_backend.h"
    header.write_text(text)
    with pytest.raises(SeamError) as info:
        seam_parse.load(header)
    message = str(info.value)
    assert message.startswith(f"{header}:{line}: "), message
    assert reason in message, message


def test_implicit_padding_fails_naming_the_field(tmp_path):
    text, _ = _replace("    int32_t device;     /* -1: the device of `stream` */\n    int32_t reserved0;\n",
                       "    int32_t device;     /* -1: the device of `stream` */\n")
    header = tmp_path / "eagle_backend.h"
    header.write_text(text)
    model = seam_parse.load(header)
    with pytest.raises(SeamError) as info:
        layout.layouts(model)
    line = _line_of(text, "uint64_t stream;    /* raw stream whose work")
    assert str(info.value).startswith(f"{header}:{line}: 4 bytes of implicit padding before"
                                      " eagle_backend_capturer_desc.stream")


def test_cli_prints_file_line_reason_and_exits_1(tmp_path):
    text, line, _ = _defect("function-like macro")
    header = tmp_path / "eagle_backend.h"
    header.write_text(text)
    result = subprocess.run([sys.executable, "-m", "build_tools", "layout", "--header", str(header),
                             "-o", str(tmp_path / "layout.json")], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.strip() == f"{header}:{line}: function-like macro EAGLE_BACKEND_MAX is not understood"
    assert not (tmp_path / "layout.json").exists()


def test_the_unmodified_copy_loads(tmp_path):
    """The defects above are what fails, not the copying."""
    header = tmp_path / "eagle_backend.h"
    header.write_text(HEADER_TEXT)
    assert seam_parse.load(header) == seam_parse.load(ROOT / "eagle_backend.h")
