"""Evaluate each #define body to an integer the way a C compiler on LP64 would.

Bodies are parsed as C expressions by pycparser and folded with C's integer types (int, unsigned,
long, unsigned long; 32/64 bits). Overflow, a wrapping unsigned result, a shift out of range, a
name that is not an earlier #define, or any non-integer construct stops the generator.
One exception: `-9223372036854775808`, the spelling cffi needs for INT64_MIN (C has no literal
for it), is read as INT64_MIN so that a cdef reparses to the same constants.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pycparser import c_ast, c_parser

from .errors import SeamError
from .model import Constant
from .preprocess import Define

_LITERAL = re.compile(r"(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)([uU]?(?:ll|LL|l|L)?|(?:ll|LL|l|L)[uU])")
_INT64_MIN_SPELLING = 2**63


@dataclass(frozen=True)
class _Int:
    """A value with its C type: width in bits and signedness."""

    value: int
    bits: int
    unsigned: bool

    @property
    def ctype(self) -> str:
        return f"{'unsigned ' if self.unsigned else ''}{'int' if self.bits == 32 else 'long'}"


def _fits(value: int, bits: int, unsigned: bool) -> bool:
    """Whether value is representable in the type."""
    if unsigned:
        return 0 <= value < 2**bits
    return -(2 ** (bits - 1)) <= value < 2 ** (bits - 1)


def evaluate(defines: tuple[Define, ...], path: str) -> tuple[Constant, ...]:
    """Fold every #define to its integer value, in order; later ones may name earlier ones."""
    values: dict[str, _Int] = {}
    out = []
    for d in defines:
        values[d.name] = _Evaluator(d, values, path).run()
        out.append(Constant(d.name, values[d.name].value, d.line))
    return tuple(out)


class _Evaluator:
    """Folds one #define body: visit_<Node> per expression node kind."""

    def __init__(self, define: Define, values: dict[str, _Int], path: str) -> None:
        self.define, self.values, self.path = define, values, path

    def _error(self, why: str) -> SeamError:
        """A SeamError at the #define's line."""
        d = self.define
        return SeamError(self.path, d.line,
                         f"#define {d.name} {d.body} cannot be evaluated to an integer literal: {why}")

    def run(self) -> _Int:
        """Parse the body as an initializer and fold it."""
        try:
            ast = c_parser.CParser().parse(f"long __eagle_value = {self.define.body};", self.path)
        except c_parser.ParseError as e:
            raise self._error(f"not a C expression ({str(e).split(': ', 1)[-1]})") from None
        decls = ast.ext
        if len(decls) != 1 or not isinstance(decls[0], c_ast.Decl) or decls[0].init is None:
            raise self._error("not a single expression")
        return self.visit(decls[0].init)

    def visit(self, node: c_ast.Node) -> _Int:
        """Dispatch to visit_<Node>; unknown kinds are errors."""
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            raise self._error(f"{type(node).__name__} is not an integer expression")
        return method(node)

    def visit_Constant(self, node: c_ast.Constant) -> _Int:
        return self._literal(node.value)

    def visit_ID(self, node: c_ast.ID) -> _Int:
        if node.name not in self.values:
            raise self._error(f"{node.name} is not an earlier #define")
        return self.values[node.name]

    def visit_UnaryOp(self, node: c_ast.UnaryOp) -> _Int:
        if (node.op == "-" and isinstance(node.expr, c_ast.Constant)
                and node.expr.value == str(_INT64_MIN_SPELLING)):
            return _Int(-_INT64_MIN_SPELLING, 64, False)
        x = self.visit(node.expr)
        match node.op:
            case "+":
                return x
            case "-":
                if x.unsigned and x.value:
                    raise self._error(f"negating an {x.ctype} wraps")
                return self._checked(-x.value, x.bits, x.unsigned)
            case "~":
                value = (2**x.bits - 1) ^ x.value if x.unsigned else ~x.value
                return _Int(value, x.bits, x.unsigned)
        raise self._error(f"operator {node.op} is not understood")

    def visit_BinaryOp(self, node: c_ast.BinaryOp) -> _Int:
        a, b = self.visit(node.left), self.visit(node.right)
        if node.op in ("<<", ">>"):
            return self._shift(node.op, a, b)
        bits, unsigned = _common(a, b)
        match node.op:
            case "+":
                value = a.value + b.value
            case "-":
                value = a.value - b.value
            case "*":
                value = a.value * b.value
            case "/" | "%":
                if b.value == 0:
                    raise self._error("division by zero")
                q = abs(a.value) // abs(b.value) * (1 if (a.value < 0) == (b.value < 0) else -1)
                value = q if node.op == "/" else a.value - b.value * q
            case "|":
                value = a.value | b.value
            case "&":
                value = a.value & b.value
            case "^":
                value = a.value ^ b.value
            case _:
                raise self._error(f"operator {node.op} is not understood")
        return self._checked(value, bits, unsigned)

    def _shift(self, op: str, a: _Int, b: _Int) -> _Int:
        """C shift: the left operand's type; a negative or too wide count is an error."""
        if not 0 <= b.value < a.bits:
            raise self._error(f"shift by {b.value} of a {a.bits}-bit {a.ctype}")
        if a.value < 0:
            raise self._error("shift of a negative value")
        value = a.value << b.value if op == "<<" else a.value >> b.value
        return self._checked(value, a.bits, a.unsigned)

    def _checked(self, value: int, bits: int, unsigned: bool) -> _Int:
        """The value in its type, or an error when it does not fit."""
        result = _Int(value, bits, unsigned)
        if not _fits(value, bits, unsigned):
            raise self._error(f"{value} overflows {result.ctype}")
        return result

    def _literal(self, text: str) -> _Int:
        """An integer literal with the type C gives it (first candidate type that holds it)."""
        m = _LITERAL.fullmatch(text)
        if not m:
            raise self._error(f"{text} is not an integer literal")
        digits, suffix = m.group(1), m.group(2).lower()
        value = int(digits, 16) if digits[:2].lower() == "0x" else int(digits, 8 if digits.startswith("0") else 10)
        decimal = not digits.startswith("0") or digits == "0"
        if "u" in suffix:
            candidates = [(32, True), (64, True)] if "l" not in suffix else [(64, True)]
        elif "l" in suffix:
            candidates = [(64, False)] if decimal else [(64, False), (64, True)]
        else:
            candidates = [(32, False), (64, False)] if decimal else [(32, False), (32, True), (64, False), (64, True)]
        for bits, unsigned in candidates:
            if _fits(value, bits, unsigned):
                return _Int(value, bits, unsigned)
        raise self._error(f"literal {text} fits no C integer type")


def _common(a: _Int, b: _Int) -> tuple[int, bool]:
    """C's usual arithmetic conversions for int/long (LP64: long holds every unsigned int)."""
    if a.bits == b.bits:
        return a.bits, a.unsigned or b.unsigned
    wide = a if a.bits > b.bits else b
    return wide.bits, wide.unsigned
