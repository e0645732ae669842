"""Parse the preprocessed header with pycparser and turn its AST into a Model.

A small typed visitor walks the top-level declarations; anything it has no rule for stops the
generator with `file:line: reason`. Nothing is skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

from pycparser import c_ast, c_parser

from . import macros
from .errors import SeamError
from .model import (BUILTIN_TYPES, CAP_PREFIX, GROUP_PER_SYMBOL, GROUP_REQUIRED, STATUS_FIRST,
                    SYMBOL_PREFIX, Array, Builtin, Constant, CType, Field, Function, FunctionType,
                    Model, Param, Pointer, Struct, StructType, Typedef, TypedefName)
from .preprocess import Marker, Source, preprocess

_PRELUDE_FILE = "<eagle-stdint-prelude>"
# Stand-ins so pycparser knows the stdint names as types; the visitor maps the names itself.
_PRELUDE = (
    "typedef signed char int8_t; typedef unsigned char uint8_t;"
    " typedef short int16_t; typedef unsigned short uint16_t;"
    " typedef int int32_t; typedef unsigned int uint32_t;"
    " typedef long long int64_t; typedef unsigned long long uint64_t;"
)
_C_WORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline"
    " int long register restrict return short signed sizeof static struct switch typedef union"
    " unsigned void volatile while _Bool _Complex".split()
)
_TYPE_POSITION = re.compile(r"(?<![\w.])(struct\s+)?([A-Za-z_]\w*)(?=\s*(?:\*\s*|\s)(?:const\b\s*)?\**\s*[A-Za-z_(])")


def load(path: str | Path) -> Model:
    """Parse the header at `path` into a Model; raises SeamError on anything not understood."""
    path = Path(path)
    return parse_text(path.read_text(encoding="utf-8"), str(path))


def parse_text(text: str, path: str) -> Model:
    """Model of the header source `text` (named `path` in errors)."""
    source = preprocess(text, path)
    constants = macros.evaluate(source.defines, path)
    ast = _parse_c(source)
    return _Visitor(source, constants).model(ast)


def _parse_c(source: Source) -> c_ast.FileAST:
    """pycparser's AST of the preprocessed text; a parse error becomes a SeamError at its line."""
    text = f'# 1 "{_PRELUDE_FILE}"\n{_PRELUDE}\n# 1 "{_quoted(source.path)}"\n{source.text}'
    try:
        return c_parser.CParser().parse(text, source.path)
    except c_parser.ParseError as e:
        raise _diagnose(source, str(e)) from None


def _quoted(path: str) -> str:
    """path escaped for a #line directive."""
    return path.replace("\\", "\\\\").replace('"', '\\"')


def _diagnose(source: Source, message: str) -> SeamError:
    """Turn a pycparser error into file:line and, where it is one, name the unknown type."""
    m = re.match(r".*?:(\d+)(?::\d+)?: (.*)$", message, re.DOTALL)
    reason = m.group(2) if m else message.split(": ", 1)[-1]
    lines = source.text.split("\n")
    span = range(int(m.group(1)), int(m.group(1)) + 1) if m else _failing_declaration(source, lines)
    known = set(BUILTIN_TYPES) | _C_WORDS | _typedef_names(source.text)
    for lineno in span:
        for word in _TYPE_POSITION.finditer(lines[lineno - 1] if 0 < lineno <= len(lines) else ""):
            if not word.group(1) and word.group(2) not in known:
                return SeamError(source.path, lineno, f"unknown type '{word.group(2)}'")
    return SeamError(source.path, span[0], f"cannot parse: {reason}")


def _failing_declaration(source: Source, lines: list[str]) -> range:
    """Lines of the first top-level declaration whose prefix no longer parses (errors without a line)."""
    start, depth = 1, 0
    for lineno, line in enumerate(lines, 1):
        depth += line.count("{") - line.count("}")
        if depth == 0 and ";" in line:
            prefix = "\n".join(lines[:lineno])
            try:
                c_parser.CParser().parse(f'{_PRELUDE}\n# 1 "{_quoted(source.path)}"\n{prefix}', source.path)
            except c_parser.ParseError:
                return range(start, lineno + 1)
            start = lineno + 1
    return range(start, len(lines) + 1)


def _typedef_names(text: str) -> set[str]:
    """Names the text declares with typedef (for diagnostics only)."""
    names = set()
    for body in re.findall(r"\btypedef\b([^;]*);", text):
        fn = re.search(r"\(\s*\*\s*(\w+)\s*\)", body)
        last = re.findall(r"\w+", body)
        names.add(fn.group(1) if fn else (last[-1] if last else ""))
    return names


def _lines(node: c_ast.Node) -> list[int]:
    """Every source line any part of node sits on."""
    out = [node.coord.line] if node.coord else []
    for _, child in node.children():
        out.extend(_lines(child))
    return out


class _Visitor:
    """Builds the Model from the top-level declarations, one visit_<Node> per kind."""

    def __init__(self, source: Source, constants: tuple[Constant, ...]) -> None:
        self.path = source.path
        self.markers = source.markers
        self.constants = constants
        self.values = {c.name: c.value for c in constants}
        self.typedefs: dict[str, Typedef] = {}
        self.structs: dict[str, Struct] = {}
        self.functions: dict[str, Function] = {}
        self.opaque: set[str] = set()
        self.marker_of: dict[int, Marker] = {}
        self.groups = self._groups()

    # -- entry -----------------------------------------------------------------------------

    def model(self, ast: c_ast.FileAST) -> Model:
        """Visit the file and check what spans declarations (markers, versions, groups)."""
        self._check_versions()
        nodes = [n for n in ast.ext if not (n.coord and n.coord.file == _PRELUDE_FILE)]
        self._assign_markers(nodes)
        for node in nodes:
            self.visit(node)
        self._check_groups_used()
        return Model(self.path, self.constants, tuple(self.typedefs.values()),
                     tuple(self.structs.values()), tuple(self.functions.values()))

    def visit(self, node: c_ast.Node) -> None:
        """Dispatch a top-level node to visit_<Node>; a kind without a method is an error."""
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            raise self._error(node, f"{_kind(node)} is not understood in the seam")
        method(node)

    # -- top-level declarations --------------------------------------------------------------

    def visit_Typedef(self, node: c_ast.Typedef) -> None:
        self._no_extras(node, storage=["typedef"])
        self._new_name(node.name, node)
        ctype = self._type(node.type)
        if isinstance(ctype, Pointer) and isinstance(ctype.target, StructType) \
                and ctype.target.tag not in self.structs:
            self.opaque.add(ctype.target.tag)
        else:
            self._check_complete(ctype, node, "typedef")
        self.typedefs[node.name] = Typedef(node.name, ctype, node.coord.line)

    def visit_Decl(self, node: c_ast.Decl) -> None:
        match node.type:
            case c_ast.FuncDecl():
                self._function(node)
            case c_ast.Struct(decls=list()) if node.name is None:
                self._no_extras(node)
                self._struct(node.type)
            case c_ast.Struct(decls=None) if node.name is None:
                raise self._error(node, f"forward declaration of struct {node.type.name} is not understood")
            case _:
                what = f"declaration of {node.name}" if node.name else _kind(node.type)
                raise self._error(node, f"{what} is not understood (the seam declares functions, structs"
                                        " and typedefs)")

    def _function(self, node: c_ast.Decl) -> None:
        """A function prototype, with its marker."""
        self._no_extras(node)
        name = node.name
        if not name.startswith(SYMBOL_PREFIX):
            raise self._error(node, f"function {name} lacks the {SYMBOL_PREFIX} prefix")
        self._new_name(name, node)
        ftype = self._type(node.type)
        assert isinstance(ftype, FunctionType)
        self._check_passable(ftype.returns, node, f"the return type of {name}", returning=True)
        for p in ftype.params:
            self._check_passable(p.type, node, f"parameter {p.name} of {name}")
        marker = self.marker_of.get(id(node))
        if marker is None:
            raise self._error(node, f"function {name} has no @eagle group marker")
        self.functions[name] = Function(name, ftype.returns, ftype.params, marker.group, marker.since,
                                        node.coord.line, marker.extends)

    def _struct(self, node: c_ast.Struct) -> None:
        """A struct definition: named, non-empty, fields of understood complete types."""
        if not node.name:
            raise self._error(node, "anonymous struct is not understood")
        if node.name in self.structs:
            raise self._error(node, f"duplicate symbol struct {node.name} "
                                    f"(first defined at line {self.structs[node.name].line})")
        if not node.decls:
            raise self._error(node, f"struct {node.name} has no fields")
        fields: dict[str, Field] = {}
        for decl in node.decls:
            if not isinstance(decl, c_ast.Decl) or not decl.name:
                raise self._error(decl, f"{_kind(decl)} in struct {node.name} is not understood")
            self._no_extras(decl)
            if decl.bitsize is not None:
                raise self._error(decl, f"bit-field {decl.name} is not understood")
            if decl.name in fields:
                raise self._error(decl, f"duplicate field {decl.name} in struct {node.name}")
            ctype = self._type(decl.type)
            if isinstance(ctype, FunctionType) or ctype == Builtin("void") or ctype == Builtin("void", True):
                raise self._error(decl, f"field {decl.name} has no object type")
            self._check_complete(ctype, decl, f"field {decl.name}")
            fields[decl.name] = Field(decl.name, ctype, decl.coord.line)
        self.structs[node.name] = Struct(node.name, tuple(fields.values()), node.coord.line)

    # -- types ---------------------------------------------------------------------------------

    def _type(self, node: c_ast.Node) -> CType:
        """The CType of a declarator chain."""
        match node:
            case c_ast.TypeDecl(type=inner, quals=quals):
                const = self._const(quals, node)
                match inner:
                    case c_ast.IdentifierType(names=names):
                        return self._named(names, const, node)
                    case c_ast.Struct(name=tag, decls=None):
                        return StructType(tag, const)
                    case c_ast.Struct():
                        raise self._error(node, "a struct defined inside a declaration is not understood")
                    case _:
                        raise self._error(node, f"{_kind(inner)} is not understood in the seam")
            case c_ast.PtrDecl(type=target, quals=quals):
                return Pointer(self._type(target), self._const(quals, node))
            case c_ast.ArrayDecl(type=element, dim=dim, dim_quals=dim_quals):
                if dim_quals:
                    raise self._error(node, f"array qualifiers {dim_quals} are not understood")
                return Array(self._type(element), self._dimension(dim, node))
            case c_ast.FuncDecl(args=args, type=returns):
                return FunctionType(self._type(returns), self._params(args, node))
        raise self._error(node, f"{_kind(node)} is not understood as a type")

    def _named(self, names: list[str], const: bool, node: c_ast.Node) -> CType:
        """A builtin or typedef name; anything else is an unknown type."""
        spelled = " ".join(names)
        if spelled in BUILTIN_TYPES:
            return Builtin(spelled, const)
        if spelled in self.typedefs:
            return TypedefName(spelled, const)
        raise self._error(node, f"unknown type '{spelled}' (the seam uses fixed-width types, char,"
                                " float, double, void and its own typedefs)")

    def _params(self, args: c_ast.ParamList | None, node: c_ast.Node) -> tuple[Param, ...]:
        """Named parameters; `(void)` is none; `()` and `...` are not understood."""
        if args is None:
            raise self._error(node, "an empty parameter list () is not understood; write (void)")
        params = args.params
        if len(params) == 1 and isinstance(params[0], c_ast.Typename) \
                and self._type(params[0].type) == Builtin("void"):
            return ()
        out = []
        for p in params:
            match p:
                case c_ast.Decl(name=str() as name):
                    self._no_extras(p)
                    ctype = self._type(p.type)
                    out.append(Param(name, ctype))
                case c_ast.EllipsisParam():
                    raise self._error(p, "a variadic function is not understood")
                case _:
                    raise self._error(p, "a parameter without a name is not understood")
        return tuple(out)

    def _dimension(self, dim: c_ast.Node | None, node: c_ast.Node) -> int:
        """An array length: an integer literal or an earlier #define, at least 1."""
        match dim:
            case c_ast.Constant(type="int", value=text) if re.fullmatch(r"[1-9][0-9]*[uUlL]*|0[xX][0-9a-fA-F]+[uUlL]*", text):
                value = int(text.rstrip("uUlL"), 0)
            case c_ast.ID(name=name) if name in self.values:
                value = self.values[name]
            case _:
                raise self._error(node, "an array length must be an integer literal or an earlier #define")
        if value < 1:
            raise self._error(node, f"array length {value} is not positive")
        return value

    def _const(self, quals: list[str], node: c_ast.Node) -> bool:
        """Whether `const` is among quals; any other qualifier is not understood."""
        for q in quals:
            if q != "const":
                raise self._error(node, f"qualifier {q} is not understood")
        return "const" in quals

    # -- checks --------------------------------------------------------------------------------

    def _resolve(self, ctype: CType) -> CType:
        """ctype with typedef names replaced by what they name (top level only)."""
        while isinstance(ctype, TypedefName):
            ctype = self.typedefs[ctype.name].type
        return ctype

    def _check_passable(self, ctype: CType, node: c_ast.Node, what: str, returning: bool = False) -> None:
        """A parameter or return type: no struct or array by value, no bare void parameter."""
        resolved = self._resolve(ctype)
        if isinstance(resolved, StructType):
            verb = "returns" if returning else "passes"
            raise self._error(node, f"{what} {verb} struct {resolved.tag} by value")
        if isinstance(resolved, (Array, FunctionType)):
            raise self._error(node, f"{what} is an array or function type; use a pointer")
        if isinstance(resolved, Builtin) and resolved.name == "void" and not returning:
            raise self._error(node, f"{what} has type void")
        self._check_complete(ctype, node, what)

    def _check_complete(self, ctype: CType, node: c_ast.Node, what: str) -> None:
        """Every struct named (by value or behind pointers) is defined, or an opaque handle tag."""
        match ctype:
            case StructType(tag=tag) if tag not in self.structs and tag not in self.opaque:
                raise self._error(node, f"{what} names unknown struct {tag}")
            case Pointer(target=target):
                self._check_complete(target, node, what)
            case Array(element=element):
                self._check_complete(element, node, what)
            case FunctionType(returns=returns, params=params):
                self._check_complete(returns, node, what)
                for p in params:
                    self._check_passable(p.type, node, f"parameter {p.name} of {what}")

    def _no_extras(self, node: c_ast.Node, storage: list[str] | None = None) -> None:
        """No storage class, function specifier or alignment (qualifiers live on the type nodes)."""
        extras = [*getattr(node, "funcspec", []),
                  *(getattr(node, "align", None) or [])]
        if (getattr(node, "storage", []) or []) != (storage or []):
            extras += node.storage
        if extras:
            raise self._error(node, f"{' '.join(map(str, extras))} on {getattr(node, 'name', None) or 'a declaration'}"
                                    " is not understood")

    def _new_name(self, name: str, node: c_ast.Node) -> None:
        """Refuse a name already declared as a function or typedef."""
        first = self.functions.get(name) or self.typedefs.get(name)
        if first is not None:
            raise self._error(node, f"duplicate symbol {name} (first declared at line {first.line})")

    def _groups(self) -> tuple[str, ...]:
        """Valid marker groups; each CAP macro must be one distinct bit below 63."""
        seen: dict[int, str] = {}
        for c in self.constants:
            if not c.name.startswith(CAP_PREFIX):
                continue
            if c.value <= 0 or c.value & (c.value - 1) or c.value >= 2**63:
                raise SeamError(self.path, c.line, f"{c.name} is not a single capability bit below 63")
            if c.value in seen:
                raise SeamError(self.path, c.line, f"{c.name} reuses the bit of {seen[c.value]}")
            seen[c.value] = c.name
        groups = [c.name[len(CAP_PREFIX):].lower() for c in self.constants if c.name.startswith(CAP_PREFIX)]
        return (GROUP_REQUIRED, *groups, GROUP_PER_SYMBOL)

    def _check_versions(self) -> None:
        """The version macros exist and VERSION == (MAJOR << 16) | MINOR; EAGLE_BACKEND_OK is 0."""
        names = ("EAGLE_BACKEND_VERSION_MAJOR", "EAGLE_BACKEND_VERSION_MINOR", "EAGLE_BACKEND_VERSION", STATUS_FIRST)
        for name in names:
            if name not in self.values:
                raise SeamError(self.path, 1, f"missing #define {name}")
        major, minor, version = (self.values[n] for n in names[:3])
        line = next(c.line for c in self.constants if c.name == "EAGLE_BACKEND_VERSION")
        if version != (major << 16) | minor or not 0 <= minor < 2**16:
            raise SeamError(self.path, line, "EAGLE_BACKEND_VERSION is not (MAJOR << 16) | MINOR")
        if self.values[STATUS_FIRST] != 0:
            ok_line = next(c.line for c in self.constants if c.name == STATUS_FIRST)
            raise SeamError(self.path, ok_line, f"{STATUS_FIRST} must be 0")

    def _assign_markers(self, nodes: list[c_ast.Node]) -> None:
        """Give each marker to the declaration that follows it, which must be a function."""
        spans = [(min(ls), max(ls), n) for n in nodes if (ls := _lines(n))]
        minor = self.values["EAGLE_BACKEND_VERSION_MINOR"]
        for marker in self.markers:
            if marker.group not in self.groups:
                raise SeamError(self.path, marker.line,
                                f"marker names unknown group '{marker.group}' (known: {', '.join(self.groups)})")
            if marker.since > minor:
                raise SeamError(self.path, marker.line,
                                f"marker since={marker.since} is beyond EAGLE_BACKEND_VERSION_MINOR {minor}")
            if marker.extends is not None and (marker.group != GROUP_PER_SYMBOL
                                               or marker.extends not in self.groups[1:-1]):
                raise SeamError(self.path, marker.line,
                                f"extends={marker.extends} needs group=per-symbol and a capability group "
                                f"(known: {', '.join(self.groups[1:-1])})")
            if (marker.group == GROUP_PER_SYMBOL) != (marker.since > 0):
                raise SeamError(self.path, marker.line,
                                "a symbol added after 1.0 (since > 0) is per-symbol, and a per-symbol one has since > 0")
            following = [(first, last, n) for first, last, n in spans if last >= marker.line]
            if not following:
                raise SeamError(self.path, marker.line, "marker is not followed by a function declaration")
            first, _, node = following[0]
            if first <= marker.line:
                raise SeamError(self.path, marker.line, "marker inside a declaration")
            if not (isinstance(node, c_ast.Decl) and isinstance(node.type, c_ast.FuncDecl)):
                raise SeamError(self.path, marker.line,
                                f"marker is followed by {_kind(node)} at line {first}, not a function declaration")
            if id(node) in self.marker_of:
                raise SeamError(self.path, marker.line,
                                f"second marker for {node.name} (first at line {self.marker_of[id(node)].line})")
            self.marker_of[id(node)] = marker

    def _check_groups_used(self) -> None:
        """Every capability group promises at least one 1.0 symbol."""
        used = {f.group for f in self.functions.values()}
        for c in self.constants:
            group = c.name[len(CAP_PREFIX):].lower()
            if c.name.startswith(CAP_PREFIX) and group not in used:
                raise SeamError(self.path, c.line, f"capability group '{group}' has no symbols")

    def _error(self, node: c_ast.Node, reason: str) -> SeamError:
        """A SeamError at node's line."""
        return SeamError(self.path, node.coord.line if node.coord else 0, reason)


def _kind(node: c_ast.Node) -> str:
    """A node kind as words for messages."""
    match node:
        case c_ast.Decl(type=c_ast.Struct(name=tag)) if node.name is None:
            return f"the definition of struct {tag}"
        case c_ast.Decl(type=c_ast.FuncDecl()):
            return f"the function {node.name}"
        case c_ast.Decl():
            return f"the declaration of {node.name}"
        case c_ast.Typedef():
            return f"typedef {node.name}"
    return {"FuncDef": "a function definition", "Pragma": "a #pragma", "StaticAssert": "a static assertion",
            "Enum": "an enum", "Union": "a union", "Struct": "a struct"}.get(type(node).__name__,
                                                                              type(node).__name__)
