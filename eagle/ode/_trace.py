"""Trace a Python right-hand side ``fun(t, y, *args)`` once into a C function.

``fun`` is called with symbolic values: ``t`` and the args are :class:`Expr` scalars, ``y`` a
numpy object array of them (:class:`SymArray`). Every operation records a node of one graph;
equal nodes are shared (hash-consing), so the graph is already free of common subexpressions.
:meth:`TracedFunction.c_function` prints the nodes an output needs, one ``const T vN = ...;`` per
node, in creation order (a topological order), so the same ``fun`` gives byte-identical C.

Traced: + - * / // % ** (numpy's semantics: a whole exponent by multiplications, 0.5 by sqrt;
// and % as numpy computes them from fmod, bit for bit), unary - + abs(), comparisons (conditions),
& | ^ ~ on conditions, conditions used as numbers (1 or 0), numpy's ufuncs and ``np.where`` on
traced scalars and arrays, ``eagle.ode.math``; ``y`` indexes, slices, unpacks and iterates like
the length-n_state array it is. Python loops of fixed length unroll. Constant operations that
IEEE rounds exactly fold at trace time; a transcendental stays in the C.

What cannot be traced (a Python ``if``/``and``/``or``/``not`` or builtin ``min``/``max`` on a
traced value, a loop whose length depends on the state, a call that needs a Python number, an
unknown ufunc) raises :class:`TraceError` naming the user's file, line and its text, with what to
use instead; an exception of ``fun`` itself is wrapped the same way, chained.
"""
import linecache
import math
import numbers
import operator
import os
import struct
import sys

import numpy as np

from eagle.errors import EagleTypeError, EagleValueError

MAX_NODES = 200_000  # a graph past this is refused: a Python loop unrolled far too long

CLIP = (getattr(np, "_core", None) or np.core).umath.clip  # the ufunc behind np.clip
_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_NUMPY = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
_WHERE_HINT = ("use eagle.ode.math.where(cond, a, b) (and &, |, ~ to combine conditions); builtin "
               "min(a, b)/max(a, b) compare too: use eagle.ode.math.min/max")


class TraceError(EagleValueError):
    """``fun`` cannot be traced. ``filename``, ``lineno`` and ``source_line`` locate the user's line
    (None where unknown); the message says what happened there and what to use instead."""

    def __init__(self, message, filename=None, lineno=None, source_line=None):
        super().__init__(message)
        self.filename, self.lineno, self.source_line = filename, lineno, source_line


class TraceIndexError(TraceError, IndexError):
    """An index of a traced vector (``y[5]`` of 3 states) is out of range."""


# ------------------------------------------------------------------ where in the user's code

def _internal(filename):
    return filename.startswith((_HERE, _NUMPY)) or filename.startswith("<__array_function__")


def _site_of_frames(frames):
    """(filename, lineno) of the innermost frame of ``frames`` (innermost first) outside
    eagle/ode and numpy, or None."""
    for f, lineno in frames:
        if not _internal(f.f_code.co_filename):
            return f.f_code.co_filename, lineno
    return None


def _stack_site():
    f, frames = sys._getframe(1), []
    while f is not None:
        frames.append((f, f.f_lineno))
        f = f.f_back
    return _site_of_frames(frames)


def _traceback_site(tb):
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return _site_of_frames(frames[::-1])


def _definition_site(fun):
    """(name, filename, lineno) of where ``fun`` was defined, as far as Python knows."""
    target = getattr(fun, "func", fun)  # functools.partial
    code = getattr(target, "__code__", None) or getattr(getattr(type(target), "__call__", None), "__code__", None)
    name = getattr(target, "__qualname__", None) or type(target).__name__
    if code is None:
        return name, "<unknown>", 0
    return name, code.co_filename, code.co_firstlineno


# ------------------------------------------------------------------ the graph

class _Graph:
    """The nodes of one trace, hash-consed: ``node`` returns the existing node for a key it saw."""

    def __init__(self, dtype, what, fun):
        self.np_dtype = np.dtype(dtype).type
        self.what = what
        self.fun_name, self.def_file, self.def_line = _definition_site(fun)
        self.nodes, self._memo = [], {}

    def refuse(self, problem, hint, site=None):
        """A TraceError at the user's line (the innermost frame outside eagle/ode and numpy)."""
        site = site or _stack_site() or (self.def_file, self.def_line)
        filename, lineno = site
        text = linecache.getline(filename, lineno).strip() or "(source not available)"
        hint = hint[:1].upper() + hint[1:]
        msg = f"{self.what}: {problem} at {filename}:{lineno} (in {self.fun_name}): `{text}`. {hint}"
        return TraceError(msg, filename, lineno, text)

    def node(self, op, args=(), payload=None, kind="num", value=None):
        if op in _COMMUTATIVE and args[0].id > args[1].id:
            args = (args[1], args[0])
        if op in _FOLD and args and not any(a.op != "const" for a in args):
            return self._fold(op, args)
        key = (op, tuple(a.id for a in args), payload)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        if len(self.nodes) >= MAX_NODES:
            raise self.refuse(f"the traced graph passed {MAX_NODES} nodes",
                              "a Python loop unrolled this far is too large to compile; shorten it, or "
                              "write the right-hand side in C (eagle.ode.C)")
        e = Expr(self, len(self.nodes), op, args, value, kind)
        self.nodes.append(e)
        self._memo[key] = e
        return e

    def _fold(self, op, args):
        """An exact operation of constants, computed now as the device would (in the trace's type)."""
        vals = [a.value if a.kind == "bool" else self.np_dtype(a.value) for a in args]
        with np.errstate(all="ignore"):
            return self.const(_FOLD[op](*vals))

    def const(self, v):
        """A number node: ``v`` as the trace's float type (bool stays a condition)."""
        if isinstance(v, (bool, np.bool_)):
            return self.node("const", payload=("b", bool(v)), kind="bool", value=bool(v))
        if isinstance(v, (complex, np.complexfloating)):
            raise self.refuse(f"a complex number ({v!r}) met a traced value", "only real arithmetic is traced")
        try:
            x = float(v)
        except OverflowError:
            raise self.refuse(f"the constant {v!r} does not fit a float", "use a smaller constant") from None
        if self.np_dtype is np.float32:  # rounded to nearest as np.float32(x) does; too large: inf
            try:
                x = struct.unpack("<f", struct.pack("<f", x))[0]
            except OverflowError:
                x = math.copysign(math.inf, x)
        return self.node("const", payload=("f", struct.pack("<d", x)), value=x)

    def lift(self, v):
        """``v`` as a node of this graph: an Expr of it, or a Python/numpy number; else None."""
        if isinstance(v, Expr):
            if v.g is not self:
                raise self.refuse("a traced value of another trace was used", "do not keep traced values "
                                  "between calls (in a closure or a global)")
            return v
        if isinstance(v, np.ndarray) and v.ndim == 0:
            v = v[()]
        if isinstance(v, (numbers.Number, np.number, np.bool_)):
            return self.const(v)
        return None


def _graph_of(values):
    for v in values:
        if isinstance(v, Expr):
            return v.g
    return None


def _graph_in(values):
    """The graph of the first Expr in ``values`` or in an object array among them."""
    for v in values:
        g = _graph_of(v.flat) if isinstance(v, np.ndarray) and v.dtype == object else _graph_of([v])
        if g is not None:
            return g
    return None


# ------------------------------------------------------------------ nodes and their operations

_COMMUTATIVE = {"add", "mul", "eq", "ne", "and", "or", "xor", "hypot"}


def _num(e):
    """``e`` as a number: a condition converts to T (1 or 0)."""
    if e.kind != "bool":
        return e
    if e.op == "const":
        return e.g.const(1.0 if e.value else 0.0)
    return e.g.node("cast", (e,))


def _cond(e):
    """``e`` as a condition: a number is true where nonzero (numpy's rule)."""
    return e if e.kind == "bool" else e.g.node("ne", (e, e.g.const(0.0)), kind="bool")


def _lifted(values):
    g = _graph_of(values)
    out = [g.lift(v) for v in values]
    for v, e in zip(values, out):
        if e is None:
            raise g.refuse(f"a {type(v).__name__} met a traced value", "only numbers combine with traced values")
    return g, out


def call(fn, *values):
    """The C math function ``fn`` (double spelling) of numbers."""
    g, args = _lifted(values)
    return g.node(fn, tuple(_num(a) for a in args))


def compare(op, a, b):
    g, (a, b) = _lifted([a, b])
    if a.kind != b.kind:
        a, b = _num(a), _num(b)
    return g.node(op, (a, b), kind="bool")


def logical(op, *values):
    g, args = _lifted(values)
    for v, e in zip(values, args):
        if e.kind != "bool":
            raise g.refuse(f"`{_LOGIC_SYMBOL[op]}` was given a number ({type(v).__name__}), not a condition",
                           "&, |, ^ and ~ combine conditions (comparisons): write (a > 0) & (b < 1)")
    if op == "not":
        return g.const(not args[0].value) if args[0].op == "const" else g.node("not", args, kind="bool")
    a, b = sorted(args, key=lambda e: e.op != "const")  # a constant first, to simplify
    if a.op == "const" and b.op != "const":
        if op == "xor":
            return logical("not", b) if a.value else b
        return b if a.value == (op == "and") else a  # True & b, False | b: b; False & b, True | b: a
    return g.node(op, tuple(args), kind="bool")


_LOGIC_SYMBOL = {"and": "&", "or": "|", "xor": "^", "not": "~"}


def where(c, a, b):
    """``a`` where ``c`` holds, else ``b`` (C's ``?:``) of one element."""
    g, (c, a, b) = _lifted([c, a, b])
    c = _cond(c)
    if c.op == "const":
        return a if c.value else b
    if a.kind == b.kind == "bool":
        return g.node("select", (c, a, b), kind="bool")
    return g.node("select", (c, _num(a), _num(b)))


MAX_TABLE = 4096  # entries of a constant table: a lookup costs one select per entry


def _table(values, what):
    t = np.asarray(values, dtype=np.float64)
    if t.ndim != 1 or t.size == 0 or t.size > MAX_TABLE or not np.all(np.isfinite(t)):
        raise EagleValueError(f"eagle.ode: {what} must be a 1-d table of 1 .. {MAX_TABLE} finite numbers, got shape "
                              f"{t.shape}")
    return t


def table_interp(x, xp, fp, left=None, right=None, period=None):
    """numpy.interp at a traced ``x`` over a constant table (xp increasing, fp): the piecewise-linear
    interpolant as a chain of selects, one per segment (fp[0] below xp[0], fp[-1] above xp[-1],
    or ``left``/``right``)."""
    if period is not None:
        raise EagleValueError("eagle.ode: numpy.interp's period= is not traced")
    if not _graph_of(np.ravel(np.asarray(x, object))):
        return np.interp(x, xp, fp, left, right)
    xp, fp = _table(xp, "interp's xp"), _table(fp, "interp's fp")
    if xp.shape != fp.shape or np.any(np.diff(xp) <= 0):
        raise EagleValueError("eagle.ode: interp's xp must increase strictly and match fp's length")

    def one(v):
        r = fp[0] if left is None else float(left)
        r = where(v >= xp[0], float(fp[0]), r)
        for j in range(1, xp.size):
            slope = (fp[j] - fp[j - 1]) / (xp[j] - xp[j - 1])
            r = where(v > xp[j - 1], (v - float(xp[j - 1])) * float(slope) + float(fp[j - 1]), r)
        r = where(v >= xp[-1], float(fp[-1]), r)
        return r if right is None else where(v > xp[-1], float(right), r)
    return elementwise(one, x)


def table_take(table, index):
    """``table[floor(index)]`` (clamped to the table) at a traced index: numpy.take on a closed-over
    table, a chain of selects."""
    t = _table(table, "take's table")

    def one(v):
        r = float(t[0])
        for j in range(1, t.size):
            r = where(v >= j, float(t[j]), r)
        return r
    return elementwise(one, index)


def arith(op, a, b):
    g, (a, b) = _lifted([a, b])
    return g.node(op, (_num(a), _num(b)))


def power(a, b):
    """``a ** b``: a whole exponent by repeated squaring (negative: 1/...), 0.5 by sqrt, else pow."""
    if isinstance(a, Expr) and isinstance(b, (numbers.Real, np.number, np.ndarray)) and np.ndim(b) == 0:
        p = float(b)
        if p == 0.5:
            return call("sqrt", a)
        if p.is_integer() and abs(p) <= 64:
            n, base, result = int(abs(p)), _num(_lifted([a])[1][0]), None
            if n == 0:
                return base.g.const(1.0)
            while n:
                if n & 1:
                    result = base if result is None else arith("mul", result, base)
                n >>= 1
                if n:
                    base = arith("mul", base, base)
            return arith("div", 1.0, result) if p < 0 else result
    return call("pow", a, b)


def remainder(a, b):
    """Python's and numpy's ``a % b`` (the sign of ``b``), as numpy computes it from fmod."""
    _, (a, b) = _lifted([a, b])
    mod = call("fmod", a, b)
    fix = logical("xor", compare("lt", b, 0.0), compare("lt", mod, 0.0))
    return where(compare("ne", mod, 0.0), where(fix, arith("add", mod, b), mod), call("copysign", 0.0, b))


def floor_divide(a, b):
    """Python's and numpy's ``a // b``: the quotient of ``a - fmod(a, b)`` snapped to an integer."""
    _, (a, b) = _lifted([a, b])
    mod = call("fmod", a, b)
    div = arith("div", arith("sub", a, mod), b)
    fix = logical("and", compare("ne", mod, 0.0),
                  logical("xor", compare("lt", b, 0.0), compare("lt", mod, 0.0)))
    div = where(fix, arith("sub", div, 1.0), div)
    fl = call("floor", div)
    fl = where(compare("gt", arith("sub", div, fl), 0.5), arith("add", fl, 1.0), fl)
    quotient = arith("div", a, b)
    fl = where(compare("ne", div, 0.0), fl, call("copysign", 0.0, quotient))
    return where(compare("eq", b, 0.0), quotient, fl)


def sign(x):
    """numpy's sign: 1, -1, 0 (for either zero), NaN for NaN."""
    _, (x,) = _lifted([x])
    zero_or_nan = where(compare("eq", x, 0.0), 0.0, x)
    return where(compare("gt", x, 0.0), 1.0, where(compare("lt", x, 0.0), -1.0, zero_or_nan))


def maximum(a, b):
    g, (a, b) = _lifted([a, b])
    return g.node("maximum", (_num(a), _num(b)))


def minimum(a, b):
    g, (a, b) = _lifted([a, b])
    return g.node("minimum", (_num(a), _num(b)))


def clip(x, lo, hi):
    """numpy's clip: min(max(x, lo), hi) where a tie keeps x (its zero's sign) and a NaN propagates."""
    g, (x, lo, hi) = _lifted([x, lo, hi])
    return g.node("clipmin", (g.node("clipmax", (_num(x), _num(lo))), _num(hi)))


def _op(kind, name):
    return lambda a, b: kind(name, a, b)


class Expr:
    """One traced scalar: a node of its trace's graph. Arithmetic, comparisons and numpy's
    ufuncs on it record new nodes; anything that needs a Python number refuses."""

    __slots__ = ("g", "id", "op", "args", "value", "kind")
    __hash__ = object.__hash__

    def __init__(self, g, id_, op, args, value, kind):
        self.g, self.id, self.op, self.args, self.value, self.kind = g, id_, op, args, value, kind

    def __repr__(self):
        return f"<traced {self.kind} #{self.id}: {self.op}>"

    def _binary(builder, swap=False):
        def method(self, other):
            if isinstance(other, np.ndarray) and other.ndim > 0 or self.g.lift(other) is None:
                return NotImplemented  # an array: numpy calls our __array_ufunc__; else not ours
            return builder(other, self) if swap else builder(self, other)
        return method

    __add__, __radd__ = _binary(_op(arith, "add")), _binary(_op(arith, "add"), True)
    __sub__, __rsub__ = _binary(_op(arith, "sub")), _binary(_op(arith, "sub"), True)
    __mul__, __rmul__ = _binary(_op(arith, "mul")), _binary(_op(arith, "mul"), True)
    __truediv__, __rtruediv__ = _binary(_op(arith, "div")), _binary(_op(arith, "div"), True)
    __floordiv__, __rfloordiv__ = _binary(floor_divide), _binary(floor_divide, True)
    __mod__, __rmod__ = _binary(remainder), _binary(remainder, True)
    __pow__, __rpow__ = _binary(power), _binary(power, True)
    __and__, __rand__ = _binary(_op(logical, "and")), _binary(_op(logical, "and"), True)
    __or__, __ror__ = _binary(_op(logical, "or")), _binary(_op(logical, "or"), True)
    __xor__, __rxor__ = _binary(_op(logical, "xor")), _binary(_op(logical, "xor"), True)
    __lt__, __le__ = _binary(_op(compare, "lt")), _binary(_op(compare, "le"))
    __gt__, __ge__ = _binary(_op(compare, "gt")), _binary(_op(compare, "ge"))
    __eq__, __ne__ = _binary(_op(compare, "eq")), _binary(_op(compare, "ne"))
    del _binary

    def __divmod__(self, other):
        return floor_divide(self, other), remainder(self, other)

    def __rdivmod__(self, other):
        return floor_divide(other, self), remainder(other, self)

    def __neg__(self):
        return self.g.node("neg", (_num(self),))

    def __pos__(self):
        return _num(self)

    def __abs__(self):
        return call("fabs", self)

    def __invert__(self):
        return logical("not", self)

    def __floor__(self):
        return call("floor", self)

    def __ceil__(self):
        return call("ceil", self)

    def __trunc__(self):
        return call("trunc", self)

    def __bool__(self):
        raise self.g.refuse("branches on a traced value (a Python if/while/and/or/not, or bool())",
                            "A traced value has no truth value until the device runs: " + _WHERE_HINT)

    def _number_needed(self, *_):
        raise self.g.refuse(
            "a Python number was needed where a traced value was given (int(), float(), range(), an "
            "index, Python's math module, or storing into a float numpy array)",
            "A traced value has no number until the device runs, and a loop whose length depends on the "
            "state cannot be traced. For functions use eagle.ode.math.sin (etc.) or numpy's ufuncs "
            "(np.sin); build results as a list or an object array (np.zeros_like(y))")

    __float__ = __int__ = __index__ = __complex__ = __round__ = _number_needed

    def clip(self, lo=None, hi=None, out=None, **kwargs):  # np.clip(x, lo, hi) on a scalar calls this
        lo, hi = kwargs.pop("min", lo), kwargs.pop("max", hi)
        return clip(self, -math.inf if lo is None else lo, math.inf if hi is None else hi)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _array_function(func, args, kwargs)


class SymArray(np.ndarray):
    """A numpy object array of traced values (``y``): numpy's ufuncs map onto the same nodes as the
    scalars' operators, and an index out of range names the vector's length."""

    def __getitem__(self, key):
        if isinstance(key, Expr):
            key.__index__()  # refuses: an index must be a Python number
        if isinstance(key, (int, np.integer)) and self.ndim == 1 and not -len(self) <= key < len(self):
            g = _graph_of(self.flat)
            n = len(self)
            err = f"index {int(key)} is out of range for " + (
                f"y (n_state = {n})" if getattr(self, "_is_state", False) else f"a vector of length {n}")
            if g is None:
                raise IndexError(err)
            e = g.refuse(err, f"valid indices are 0 .. {n - 1} (or -{n} .. -1)")
            raise TraceIndexError(str(e), e.filename, e.lineno, e.source_line)
        return super().__getitem__(key)

    def __iter__(self):  # ndarray iterates through __getitem__ until IndexError: not through ours
        get = super().__getitem__
        return (get(k) for k in range(len(self)))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _array_function(func, args, kwargs)


def _scalar(v):
    return not isinstance(v, (np.ndarray, list, tuple))


def elementwise(fn, *values):
    """``fn`` over the broadcast elements of ``values`` (a SymArray), or on scalars as they are."""
    if all(_scalar(v) for v in values):
        return fn(*values)
    arrays = [np.asarray(v, dtype=object) for v in values]
    b = np.broadcast(*arrays)
    out = np.empty(b.shape, dtype=object)
    for index, items in zip(np.ndindex(*b.shape), b):
        out[index] = fn(*items)
    return out.view(SymArray)


def _ufunc_scalar(ufunc, builder):
    def apply(*items):
        return builder(*items) if _graph_of(items) is not None else ufunc(*items)
    return apply


_BY_OPERATORS = {np.matmul, getattr(np, "vecdot", np.matmul), getattr(np, "matvec", np.matmul),
                 getattr(np, "vecmat", np.matmul)}


def _array_ufunc(ufunc, method, inputs, kwargs):
    builder = _UFUNCS.get(ufunc)
    plain = [np.asarray(v) if isinstance(v, SymArray) else v for v in inputs]
    g = _graph_in(inputs)
    if builder is None and ufunc not in _BY_OPERATORS:
        err = TraceError(f"numpy.{ufunc.__name__} is not supported on traced values")
        if g is None:
            raise err
        raise g.refuse(f"numpy.{ufunc.__name__} is not supported on traced values",
                       "the supported ufuncs are " + ", ".join(sorted(u.__name__ for u in _UFUNCS)))
    out = kwargs.pop("out", None)
    if method == "__call__" and builder is not None and not kwargs:
        result = elementwise(_ufunc_scalar(ufunc, builder), *inputs)
    elif method == "reduce" and builder is not None and ufunc.nin == 2 and np.ndim(inputs[0]) == 1 \
            and kwargs.get("axis", 0) in (0, -1, None, (0,)) and kwargs.get("dtype") is None \
            and not kwargs.get("keepdims", False) and kwargs.get("where", True) is True \
            and set(kwargs) <= {"axis", "dtype", "keepdims", "where"}:
        items = list(np.asarray(inputs[0], dtype=object))
        if not items:
            return getattr(ufunc, method)(np.zeros(0), **kwargs)
        result, apply = items[0], _ufunc_scalar(ufunc, builder)
        for v in items[1:]:
            result = apply(result, v)
    else:  # matmul, and add.reduce over more axes: numpy's object loops, which call Expr's operators
        result = getattr(ufunc, method)(*plain, **kwargs)
        if isinstance(result, np.ndarray) and result.dtype == object:
            result = result.view(SymArray)
    if out is not None:
        out[0][...] = result
        return out[0]
    return result


def _array_function(func, args, kwargs):
    if func is np.where and len(args) == 3 and not kwargs:
        return elementwise(lambda c, a, b: where(c, a, b) if _graph_of((c, a, b)) else np.where(c, a, b), *args)
    if func is np.interp:  # a closed-over table at a traced point
        return table_interp(*args, **kwargs)
    if func is np.take and len(args) == 2 and not kwargs and _graph_of(np.ravel(np.asarray(args[1], object))):
        return table_take(*args)
    impl = getattr(func, "_implementation", None)  # numpy's own, over object arrays
    return NotImplemented if impl is None else impl(*args, **kwargs)


# numpy ufunc -> its node builder. The C math functions first: numpy's name, then C's where it differs.
_C_FUNCTIONS = {**{n: n for n in "sqrt cbrt exp exp2 expm1 log log2 log10 log1p sin cos tan sinh cosh tanh "
                   "floor ceil trunc rint fabs fmod hypot copysign fmin fmax".split()},
                "absolute": "fabs", "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
                "arccosh": "acosh", "arctanh": "atanh", "arctan2": "atan2", "float_power": "pow"}
_UFUNCS = {getattr(np, n): (lambda fn: lambda *v: call(fn, *v))(c) for n, c in _C_FUNCTIONS.items()}
_UFUNCS.update({getattr(np, n): _op(arith, op) for n, op in
                [("add", "add"), ("subtract", "sub"), ("multiply", "mul"), ("true_divide", "div")]})
_UFUNCS.update({getattr(np, n): _op(compare, op) for n, op in
                [("greater", "gt"), ("greater_equal", "ge"), ("less", "lt"), ("less_equal", "le"),
                 ("equal", "eq"), ("not_equal", "ne")]})
_UFUNCS.update({getattr(np, n): (lambda op: lambda *v: logical(op, *v))(op) for n, op in
                [("bitwise_and", "and"), ("bitwise_or", "or"), ("bitwise_xor", "xor"), ("invert", "not")]})
_UFUNCS.update({getattr(np, n): (lambda op: lambda *v: logical(op, *map(_cond_of, v)))(op) for n, op in
                [("logical_and", "and"), ("logical_or", "or"), ("logical_xor", "xor"), ("logical_not", "not")]})
_UFUNCS.update({getattr(np, n): (lambda fn: lambda x: x.g.node(fn, (_num(x),), kind="bool"))(n)
                for n in ("isnan", "isinf", "isfinite", "signbit")})
_UFUNCS.update({
    np.floor_divide: floor_divide, np.remainder: remainder, np.power: power, np.negative: operator.neg,
    np.positive: operator.pos, np.maximum: maximum, np.minimum: minimum, np.sign: sign, CLIP: clip,
    np.square: lambda x: arith("mul", x, x), np.reciprocal: lambda x: arith("div", 1.0, x),
    np.deg2rad: lambda x: arith("mul", x, math.pi / 180.0),  # numpy's: x * (pi / 180)
    np.rad2deg: lambda x: arith("mul", x, 180.0 / math.pi)})


def _cond_of(v):
    return _cond(v) if isinstance(v, Expr) else bool(v)


# numpy's loops over plain object arrays (np.asarray(y), np.array([...])) call a method named as
# the ufunc on each element: give Expr those methods, mapped onto the same nodes.
for _u, _b in _UFUNCS.items():
    if _u.nin in (1, 2) and not hasattr(Expr, _u.__name__):
        setattr(Expr, _u.__name__, (lambda b: lambda self, *other: b(self, *other))(_b))
del _u, _b


# Operations of constants folded at trace time: those IEEE rounds exactly, so that folding gives the
# device's bits (a transcendental of a constant stays in the C, computed by the device's libm).
_FOLD = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": np.true_divide,
         "neg": operator.neg, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
         "eq": operator.eq, "ne": operator.ne, "and": lambda a, b: a and b, "or": lambda a, b: a or b,
         "xor": operator.ne, "not": operator.not_, "cast": float, "fabs": np.fabs, "copysign": np.copysign,
         "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint, "fmod": np.fmod,
         "sqrt": np.sqrt, "fmin": np.fmin, "fmax": np.fmax, "maximum": np.maximum, "minimum": np.minimum,
         "clipmax": lambda a, b: a if a >= b or a != a else b, "clipmin": lambda a, b: a if a <= b or a != a else b}


# ------------------------------------------------------------------ the C text

_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
          "eq": "==", "ne": "!=", "and": "&&", "or": "||", "xor": "!="}
_PREDICATES = {"isnan", "isinf", "isfinite", "signbit"}  # C99 macros, CUDA overloads: no float suffix
_NOT_OPS = {"const", "t", "y", "a", "cast"}  # n_ops counts every other node
REROLL_MIN_OUTPUTS = 64  # outputs from which a body is rerolled into loops where it can be
REROLL_MIN_RUN = 8       # outputs of one shape that make a loop
REROLL_MAX_TREE = 64     # nodes of one output's expression (what depends on y, recomputed per output)


def _tree(out, needs_y, limit):
    """(shape, y indices) of the expression of ``out``: its y-dependent nodes as a tree (shared
    ones repeated), leaves y[i] in order; nodes that do not need y are named by their id. None when
    the tree passes ``limit`` nodes."""
    leaves, size = [], [0]

    def walk(e):
        size[0] += 1
        if size[0] > limit:
            raise OverflowError
        if e.op == "y":
            leaves.append(e.value)
            return ("y",)
        if e.op == "const":
            return ("c", e.kind, repr(e.value))
        if not needs_y[e.id]:
            return ("n", e.id)
        return (e.op, e.kind) + tuple(walk(x) for x in e.args)
    try:
        return walk(out), tuple(leaves)
    except OverflowError:
        return None


def _text(e, needs_y, names, leaf, expression, T, f32):
    """The C expression of ``e`` with its y-dependent nodes inline, leaves by ``leaf(e)`` in the
    order _tree lists them."""
    if e.op == "y":
        return leaf(e)
    if e.op == "const":
        return _literal(e, f32)
    if not needs_y[e.id]:
        return names[e.id]
    a = [f"({_text(x, needs_y, names, leaf, expression, T, f32)})" for x in e.args]
    return expression(e.op, a, T, f32)


def _literal(e, float32):
    if e.kind == "bool":
        return "1" if e.value else "0"
    v = e.value
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    if float32:
        s = str(np.float32(v))
        s = (s if any(c in s for c in ".e") else s + ".0") + "f"
    else:
        s = repr(v)
    return f"({s})" if s.startswith("-") else s


class TracedFunction:
    """A traced ``fun``: its outputs' graph and the C that computes them.

    ``n_ops`` counts the arithmetic, comparison, select and function nodes the outputs need (a
    transcendental counts 1; loads, constants and bool-to-number conversions count 0).
    """

    def __init__(self, g, outputs, n_state, n_args, what):
        self.n_out, self.n_state, self.n_args, self.what = len(outputs), n_state, n_args, what
        self.graph, self.outputs = g, tuple(outputs)  # eagle/ode/_derive.py differentiates these
        self.dtype = np.dtype(g.np_dtype).name
        self.ctype = "float" if self.dtype == "float32" else "double"
        self.name, self.filename, self.lineno = g.fun_name, g.def_file, g.def_line
        order = _reached(outputs)
        self.uses_t = any(e.op == "t" for e in order)
        self.used_args = tuple(sorted(e.value for e in order if e.op == "a"))
        self.n_ops = sum(e.op not in _NOT_OPS for e in order)
        self._body = (self._reroll(order, outputs) if len(outputs) >= REROLL_MIN_OUTPUTS else None) or \
            self._emit(order, outputs)

    def _emit(self, order, outputs):
        T, f32 = self.ctype, self.ctype == "float"
        names, lines, count = {}, [], 0

        def ref(e):
            return _literal(e, f32) if e.op == "const" else names[e.id]

        for e in order:
            if e.op == "const":
                continue
            if e.op == "t":
                names[e.id] = "t"
                continue
            a = [ref(x) for x in e.args]
            if e.op in ("y", "a"):
                names[e.id] = f"{e.op}{e.value}"
                text = f"{e.op}[{e.value}]"
            else:
                names[e.id], count = f"v{count}", count + 1
                text = self._expression(e.op, a, T, f32)
            lines.append(f"    const {'int' if e.kind == 'bool' else T} {names[e.id]} = {text};")
        for k, o in enumerate(outputs):
            lines.append(f"    out[{k}] = {ref(o)};")
        unused = [p for p, used in (("t", self.uses_t), ("y", any(e.op == "y" for e in order)),
                                    ("a", bool(self.used_args))) if not used]
        if unused:
            lines.insert(0, "    " + " ".join(f"(void){p};" for p in unused))
        return lines

    def _reroll(self, order, outputs):
        """The body with loops over components, where runs of outputs compute the same expression
        of y at the same offsets from their own index (a method-of-lines stencil, ``-y``, ``c * y``):
        ``for (k = k0; k < k1; ++k) out[k] = <expr of y[k + o]>;``. The compiler's time grows faster
        than a straight-line body (a 10 000-component -y took minutes); a loop keeps it linear.
        What does not depend on y is computed once before the loops; what does is recomputed in each
        output's expression. None (the straight-line body) when no run covers half the outputs.
        The loops store into out while later ones still load y: out must not be y here."""
        T, f32 = self.ctype, self.ctype == "float"
        needs_y = {}
        for e in order:
            needs_y[e.id] = e.op == "y" or any(needs_y[x.id] for x in e.args)
        shapes, leaves = [], []
        for o in outputs:
            got = _tree(o, needs_y, REROLL_MAX_TREE)
            if got is None:
                return None
            shapes.append(got[0])
            leaves.append(got[1])
        runs, k = [], 0
        while k < len(outputs):
            j = k + 1
            delta = None
            while j < len(outputs) and shapes[j] == shapes[k] and len(leaves[j]) == len(leaves[k]):
                d = tuple(b - a for a, b in zip(leaves[j - 1], leaves[j]))
                if any(x not in (0, 1) for x in d) or (delta is not None and d != delta):
                    break
                delta, j = d, j + 1
            runs.append((k, j, delta or (1,) * len(leaves[k])))
            k = j
        if sum(j - k for k, j, _ in runs if j - k >= REROLL_MIN_RUN) * 2 < len(outputs):
            return None
        names, lines, count = {}, [], 0
        for e in order:  # what does not depend on y: once, before the loops
            if needs_y[e.id] or e.op == "const":
                continue
            if e.op == "t":
                names[e.id] = "t"
                continue
            a = [_literal(x, f32) if x.op == "const" else names[x.id] for x in e.args]
            if e.op == "a":
                names[e.id], text = f"a{e.value}", f"a[{e.value}]"
            else:
                names[e.id], count = f"v{count}", count + 1
                text = self._expression(e.op, a, T, f32)
            lines.append(f"    const {'int' if e.kind == 'bool' else T} {names[e.id]} = {text};")
        for k, j, delta in runs:
            loop = j - k >= REROLL_MIN_RUN
            for q in ([k] if loop else range(k, j)):
                base = leaves[q]
                it = iter(range(len(base)))

                def leaf(e, base=base, it=it):
                    i = next(it)
                    if not loop or not delta[i]:
                        return f"y[{base[i]}]"
                    off = base[i] - k
                    return f"y[k{' + ' + str(off) if off > 0 else ' - ' + str(-off) if off < 0 else ''}]"
                text = _text(outputs[q], needs_y, names, leaf, self._expression, T, f32)
                if loop:
                    lines.append(f"    for (int k = {k}; k < {j}; ++k) out[k] = {text};")
                else:
                    lines.append(f"    out[{q}] = {text};")
        unused = [p for p, used in (("t", self.uses_t), ("y", any(e.op == "y" for e in order)),
                                    ("a", bool(self.used_args))) if not used]
        if unused:
            lines.insert(0, "    " + " ".join(f"(void){p};" for p in unused))
        return lines

    @staticmethod
    def _expression(op, a, T, f32):
        if op in _INFIX:
            return f"{a[0]} {_INFIX[op]} {a[1]}"
        if op == "neg":
            return f"-{a[0]}"
        if op == "not":
            return f"!{a[0]}"
        if op == "cast":
            return f"({T}){a[0]}"
        if op == "select":
            return f"{a[0]} ? {a[1]} : {a[2]}"
        if op == "maximum":  # numpy's: a NaN propagates (C's fmax drops it), of two zeros the second
            return f"({a[0]} > {a[1]} || {a[0]} != {a[0]}) ? {a[0]} : {a[1]}"
        if op == "minimum":
            return f"({a[0]} < {a[1]} || {a[0]} != {a[0]}) ? {a[0]} : {a[1]}"
        if op in ("clipmax", "clipmin"):  # as maximum and minimum, but of equals the first
            return f"({a[0]} {'>=' if op == 'clipmax' else '<='} {a[1]} || {a[0]} != {a[0]}) ? {a[0]} : {a[1]}"
        if op in _PREDICATES:  # C's may answer any nonzero (glibc's isinf(-inf) is -1): make it 1
            return f"{op}({a[0]}) != 0"
        return f"{op + 'f' if f32 else op}({', '.join(a)})"

    def c_function(self, cname):
        """The C (C99, CUDA C++ and HIP) definition ``EAGLE_FN void cname(const T t, const T* y,
        const T* a, T* out)``; it needs ``<eagle/kernel.h>`` included before it. Every load of ``y``
        and ``a`` comes before the first store to ``out``, so ``out`` may be ``y`` itself; ``a`` is
        not read when no arg is used (NULL is fine then)."""
        if not isinstance(cname, str) or not cname.isidentifier() or not cname.isascii():
            raise EagleValueError(f"c_function: cname must be a C identifier, got {cname!r}")
        T = self.ctype
        where = f"{os.path.basename(self.filename)}:{self.lineno}"
        counts = ", ".join(f"{k} {w}{'s' if k != 1 else ''}" for k, w in
                           [(self.n_state, "state"), (self.n_args, "arg"), (self.n_out, "output")])
        comment = (f"/* eagle.ode: {self.what} = {self.name} ({where}), traced: {counts}, {self.dtype}, "
                   f"{self.n_ops} ops */")
        head = "/*" + comment[2:-2].replace("*/", "* /").replace("\n", " ") + "*/"  # one line, one comment
        return "\n".join([head, f"EAGLE_FN void {cname}(const {T} t, const {T}* y, const {T}* a, {T}* out)",
                          "{", *self._body, "}", ""])

    def __repr__(self):
        return (f"<TracedFunction {self.what}={self.name}: {self.n_state} states -> {self.n_out} outputs, "
                f"{self.dtype}, {self.n_ops} ops>")


def _reached(outputs):
    """The nodes the outputs need, in creation order."""
    seen, stack = {}, list(outputs)
    while stack:
        e = stack.pop()
        if e.id not in seen:
            seen[e.id] = e
            stack.extend(e.args)
    return [seen[k] for k in sorted(seen)]


# ------------------------------------------------------------------ trace()

def _count(value, name, lo):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise EagleTypeError(f"trace: {name} must be an int, got {type(value).__name__}")
    if value < lo:
        raise EagleValueError(f"trace: {name} must be at least {lo}, got {value}")
    return int(value)


def _outputs(g, result, n_out, expected):
    """The result of ``fun`` as a list of ``n_out`` nodes, or a TraceError saying what is wrong."""
    site = (g.def_file, g.def_line)
    scalar = isinstance(result, np.ndarray) and result.ndim == 0
    if scalar or isinstance(result, (Expr, numbers.Number, np.generic)):
        if n_out != 1:
            raise g.refuse(f"returned a scalar; expected {expected}", f"return a list of {n_out} values", site)
        items = [result]
    elif isinstance(result, (list, tuple, np.ndarray)):
        try:
            arr = np.asarray(result, dtype=object)
        except ValueError as e:
            raise g.refuse(f"returned a ragged sequence ({e}); expected {expected}",
                           "return one flat list of numbers", site) from None
        if arr.ndim != 1 or len(arr) != n_out:
            got = f"{len(arr)} values" if arr.ndim == 1 else f"shape {arr.shape}"
            raise g.refuse(f"returned {got}; expected {expected}", f"return a list of {n_out} values", site)
        items = list(arr)
    else:
        raise g.refuse(f"returned a {type(result).__name__}; expected {expected}",
                       f"return a list of {n_out} numbers", site)
    out = []
    for k, v in enumerate(items):
        e = None if isinstance(v, (complex, np.complexfloating)) else g.lift(v)
        if e is None:
            raise g.refuse(f"returned a {type(v).__name__} at index {k}; expected {expected}",
                           "every output must be a number or a traced value", site)
        out.append(_num(e))
    return out


def trace(fun, n_state, n_args, *, dtype="float64", n_out=None, what="fun", arg_widths=None):
    """Call ``fun(t, y, *args)`` once with traced values and return its :class:`TracedFunction`.

    ``arg_widths``: per argument, 0 for a number or k for a vector of k numbers (``args[j][c]``);
    the arguments' numbers are the C function's ``a[]`` in order (n_args of them in all).

    ``n_out=None``: the result is a right-hand side of length ``n_state``; an int: that many
    outputs (1 also takes a scalar: an event function). ``what`` names ``fun`` in messages.
    """
    if not callable(fun):
        raise EagleTypeError(f"trace: {what} must be callable, got {type(fun).__name__}")
    n_state, n_args = _count(n_state, "n_state", 1), _count(n_args, "n_args", 0)
    n_out = n_state if n_out is None else _count(n_out, "n_out", 1)
    try:
        dtype = np.dtype(dtype).name
    except TypeError:
        dtype = repr(dtype)
    if dtype not in ("float64", "float32"):
        raise EagleValueError(f"trace: dtype must be float64 or float32, got {dtype}")
    g = _Graph(dtype, what, fun)
    y = np.empty(n_state, dtype=object)
    for k in range(n_state):
        y[k] = g.node("y", payload=k, value=k)
    y = y.view(SymArray)
    y._is_state = True
    if arg_widths is None:
        args = [g.node("a", payload=k, value=k) for k in range(n_args)]
    else:
        args, slot = [], 0
        for w in arg_widths:
            if not w:
                args.append(g.node("a", payload=slot, value=slot))
                slot += 1
                continue
            v = np.empty(w, dtype=object)
            for c in range(w):
                v[c] = g.node("a", payload=slot + c, value=slot + c)
            args.append(v.view(SymArray))
            slot += w
    try:
        result = fun(g.node("t"), y, *args)
    except TraceError:
        raise
    except Exception as e:  # noqa: BLE001 -- the user's own error, located and chained
        site = _traceback_site(e.__traceback__) or (g.def_file, g.def_line)
        text = linecache.getline(site[0], site[1]).strip() or "(source not available)"
        raise TraceError(f"{what} raised {type(e).__name__} at {site[0]}:{site[1]} (in {g.fun_name}): "
                         f"`{text}`: {e}", site[0], site[1], text) from e
    expected = "one number" if n_out == 1 else f"{n_out} values"
    if n_out == n_state:
        expected += f" (n_state = {n_state})"
    return TracedFunction(g, _outputs(g, result, n_out, expected), n_state, n_args, what)
