"""The generator's own minimal preprocessor.

It turns the header into text pycparser can parse, with every line where it was: comments become
blanks (the `@eagle` markers in them are collected), directives become empty lines (the #defines
are collected), the include guard, `#include <stdint.h>` and `#ifdef __cplusplus` blocks go away.
Any other directive stops the generator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import SeamError

_MARKER = re.compile(r"@eagle\s+group=([A-Za-z0-9_-]+)\s+since=(\d+)(?:\s+extends=([A-Za-z0-9_]+))?\s*$")
_DIRECTIVE = re.compile(r"\s*#\s*(\w*)\s*(.*?)\s*$", re.DOTALL)
_DEFINE = re.compile(r"([A-Za-z_]\w*)(\(?)\s*(.*)$", re.DOTALL)
_CPLUSPLUS_LINES = ('extern "C" {', "}")


@dataclass(frozen=True)
class Marker:
    group: str
    since: int
    line: int
    extends: str | None = None  # per-symbol entries only: the capability group they need too


@dataclass(frozen=True)
class Define:
    name: str
    body: str
    line: int


@dataclass(frozen=True)
class Source:
    """The header as pycparser will see it: `text` has the header's line count and numbering."""

    path: str
    text: str
    markers: tuple[Marker, ...]
    defines: tuple[Define, ...]


def preprocess(text: str, path: str) -> Source:
    """Strip comments and directives from `text`, keeping line numbers; collect markers and #defines."""
    code, markers = _strip_comments(text, path)
    code, defines = _Directives(path).run(code)
    return Source(path, code, tuple(markers), tuple(defines))


def _strip_comments(text: str, path: str) -> tuple[str, list[Marker]]:
    """Blank out every comment (newlines kept) and collect the markers that open a comment."""
    out: list[str] = []
    markers: list[Marker] = []
    i, line, n = 0, 1, len(text)
    while i < n:
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise SeamError(path, line, "unterminated comment")
            body = text[i + 2:end]
            marker = _marker(body, line, path)
            if marker:
                markers.append(marker)
            blank = re.sub(r"[^\n]", " ", text[i:end + 2])
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            body = text[i + 2:end]
            marker = _marker(body, line, path)
            if marker:
                markers.append(marker)
            blank = " " * (end - i)
            end -= 2
        elif text[i] in "\"'":
            end = _literal_end(text, i, line, path)
            blank = text[i:end + 2]
        else:
            blank = text[i]
            end = i - 1
        out.append(blank)
        line += blank.count("\n")
        i = end + 2
    return "".join(out), markers


def _literal_end(text: str, i: int, line: int, path: str) -> int:
    """Index two before the end of the string or char literal starting at i (loop convention)."""
    quote, j = text[i], i + 1
    while j < len(text) and text[j] != quote:
        if text[j] == "\n":
            raise SeamError(path, line, "unterminated literal")
        j += 2 if text[j] == "\\" else 1
    if j >= len(text):
        raise SeamError(path, line, "unterminated literal")
    return j - 1


def _marker(body: str, line: int, path: str) -> Marker | None:
    """The marker opening this comment body, if any; a marker anywhere else in it is an error."""
    lines = body.split("\n")
    opener = body.lstrip(" \t\n*")
    opener_line = line + body[: len(body) - len(opener)].count("\n")
    for k, text in enumerate(lines):
        stripped = text.strip().lstrip("*").strip()
        if _MARKER.match(stripped) and line + k != opener_line:
            raise SeamError(path, line + k, "an @eagle marker must open its comment")
    if not opener.startswith("@eagle"):
        return None
    first = opener.split("\n", 1)[0].rstrip()
    m = _MARKER.match(first)
    if not m:
        raise SeamError(path, opener_line,
                        f"malformed marker {first!r} (expected '@eagle group=<group> since=<minor>"
                        " [extends=<group>]')")
    return Marker(m.group(1), int(m.group(2)), opener_line, m.group(3))


class _Directives:
    """Walks the comment-free text line by line and consumes the preprocessor directives."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.defines: dict[str, Define] = {}
        self.stack: list[tuple[str, int]] = []   # ("guard" | "cplusplus", opening line)
        self.guard: str | None = None
        self.guard_closed = False
        self.pending_guard: tuple[str, int] | None = None
        self.seen_code = False

    def run(self, code: str) -> tuple[str, list[Define]]:
        """Return the code with directive lines emptied, and the #defines in order."""
        lines = code.split("\n")
        out: list[str] = []
        k = 0
        while k < len(lines):
            start = k
            text = lines[k]
            while text.rstrip().endswith("\\") and text.lstrip().startswith("#") and k + 1 < len(lines):
                k += 1
                text = text.rstrip()[:-1] + " " + lines[k]
            k += 1
            count = k - start
            lineno = start + 1
            if text.lstrip().startswith("#"):
                self._directive(text, lineno)
                out.extend([""] * count)
            elif self.stack and self.stack[-1][0] == "cplusplus":
                if text.strip() and text.strip() not in _CPLUSPLUS_LINES:
                    raise SeamError(self.path, lineno, "unexpected code in an #ifdef __cplusplus block")
                out.extend([""] * count)
            else:
                if text.strip():
                    self._code(lineno)
                out.extend(lines[start:k])
        if self.pending_guard:
            raise SeamError(self.path, self.pending_guard[1], "#ifndef that is not an include guard")
        if self.stack:
            kind, line = self.stack[-1]
            raise SeamError(self.path, line, f"unterminated #if{'ndef' if kind == 'guard' else 'def'}")
        return "\n".join(out), list(self.defines.values())

    def _code(self, lineno: int) -> None:
        """Note a line of C code (none may follow the include guard's #endif)."""
        if self.guard_closed:
            raise SeamError(self.path, lineno, "code after the include guard's #endif")
        self.seen_code = True

    def _directive(self, text: str, lineno: int) -> None:
        """Consume one directive."""
        m = _DIRECTIVE.match(text)
        keyword, rest = m.group(1), m.group(2)
        if self.guard_closed:
            raise SeamError(self.path, lineno, "directive after the include guard's #endif")
        if self.stack and self.stack[-1][0] == "cplusplus" and keyword != "endif":
            raise SeamError(self.path, lineno, "directive inside an #ifdef __cplusplus block")
        if self.pending_guard:
            name, _ = self.pending_guard
            if keyword != "define" or rest != name:
                raise SeamError(self.path, self.pending_guard[1], "#ifndef that is not an include guard")
            self.pending_guard, self.guard = None, name
            self.stack.append(("guard", lineno))
            return
        match keyword:
            case "ifndef" if not self.seen_code and self.guard is None and not self.defines and not self.stack:
                self.pending_guard = (rest, lineno)
            case "ifdef" if rest == "__cplusplus":
                self.stack.append(("cplusplus", lineno))
            case "endif":
                if not self.stack:
                    raise SeamError(self.path, lineno, "#endif without #if")
                kind, _ = self.stack.pop()
                self.guard_closed = kind == "guard"
            case "include":
                if rest != "<stdint.h>":
                    raise SeamError(self.path, lineno, f"#include {rest} is not understood (only <stdint.h>)")
            case "define":
                self._define(rest, lineno)
            case _:
                raise SeamError(self.path, lineno, f"directive #{keyword} {rest}".rstrip() + " is not understood")

    def _define(self, rest: str, lineno: int) -> None:
        """Collect an object-like #define; a function-like or empty one is an error."""
        m = _DEFINE.match(rest)
        if not m:
            raise SeamError(self.path, lineno, f"malformed #define {rest!r}")
        name, paren, body = m.group(1), m.group(2), m.group(3).strip()
        if paren:
            raise SeamError(self.path, lineno, f"function-like macro {name} is not understood")
        if not body:
            raise SeamError(self.path, lineno, f"#define {name} has no value to evaluate to an integer literal")
        if name in self.defines:
            raise SeamError(self.path, lineno,
                            f"duplicate symbol {name} (first defined at line {self.defines[name].line})")
        self.defines[name] = Define(name, body, lineno)
