"""The math a traced right-hand side may call: ``from eagle.ode import math as em``.

Every function takes traced values (they record a node of the C that eagle.ode generates) and
plain Python or numpy numbers and arrays alike (then it computes the numeric result, as numpy
does), so one ``fun`` runs both under eagle.ode and under plain numpy. numpy's own ufuncs
(``np.sin``, ``np.maximum``, ...) and ``np.where`` work on traced values too; the names here add
C's spelling (``asin``, ``fmin``, ``fma``, ``erf``) and n-ary ``min``/``max``.

Semantics are numpy's: ``maximum``-style NaN propagation in ``clip``; ``min``/``max`` are C's
``fmin``/``fmax`` (NaN loses), ``sign`` is numpy's. In C each maps to its libm function
(``sinf`` ... in float32), so a transcendental may differ from numpy's in the last place.
"""
import functools
import math as _math
from fractions import Fraction as _Fraction

import numpy as _np

from eagle.ode import _trace

pi, e, inf, nan = _math.pi, _math.e, _math.inf, _math.nan


def _symbolic(x):
    """True where ``x`` is traced: an Expr, or a list/tuple/object array holding one."""
    if isinstance(x, _trace.Expr):
        return True
    if isinstance(x, (list, tuple)):
        return any(_symbolic(v) for v in x)
    return isinstance(x, _np.ndarray) and x.dtype == object and any(_symbolic(v) for v in x.flat)


def _lift(x):
    """A sequence holding traced values as a SymArray (so numpy's ufuncs dispatch to eagle)."""
    if isinstance(x, (list, tuple, _np.ndarray)) and not isinstance(x, _trace.SymArray) and _symbolic(x):
        return _np.asarray(x, dtype=object).view(_trace.SymArray)
    return x


def _from_ufunc(ufunc, name, doc):
    def f(*xs):
        return ufunc(*[_lift(x) for x in xs])
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{doc} (numpy.{ufunc.__name__} on numbers)."
    return f


exp = _from_ufunc(_np.exp, "exp", "e ** x")
expm1 = _from_ufunc(_np.expm1, "expm1", "exp(x) - 1, accurate near 0")
log = _from_ufunc(_np.log, "log", "Natural logarithm")
log1p = _from_ufunc(_np.log1p, "log1p", "log(1 + x), accurate near 0")
log2 = _from_ufunc(_np.log2, "log2", "Base-2 logarithm")
log10 = _from_ufunc(_np.log10, "log10", "Base-10 logarithm")
sin = _from_ufunc(_np.sin, "sin", "Sine")
cos = _from_ufunc(_np.cos, "cos", "Cosine")
tan = _from_ufunc(_np.tan, "tan", "Tangent")
asin = _from_ufunc(_np.arcsin, "asin", "Inverse sine")
acos = _from_ufunc(_np.arccos, "acos", "Inverse cosine")
atan = _from_ufunc(_np.arctan, "atan", "Inverse tangent")
atan2 = _from_ufunc(_np.arctan2, "atan2", "atan(y / x) in the right quadrant, atan2(y, x)")
sinh = _from_ufunc(_np.sinh, "sinh", "Hyperbolic sine")
cosh = _from_ufunc(_np.cosh, "cosh", "Hyperbolic cosine")
tanh = _from_ufunc(_np.tanh, "tanh", "Hyperbolic tangent")
asinh = _from_ufunc(_np.arcsinh, "asinh", "Inverse hyperbolic sine")
acosh = _from_ufunc(_np.arccosh, "acosh", "Inverse hyperbolic cosine")
atanh = _from_ufunc(_np.arctanh, "atanh", "Inverse hyperbolic tangent")
sqrt = _from_ufunc(_np.sqrt, "sqrt", "Square root")
cbrt = _from_ufunc(_np.cbrt, "cbrt", "Cube root")
abs = fabs = _from_ufunc(_np.fabs, "fabs", "Absolute value")  # noqa: A001 -- the math namespace's abs
pow = _from_ufunc(_np.power, "pow", "x ** p (a whole p by multiplications, 0.5 by sqrt)")  # noqa: A001
hypot = _from_ufunc(_np.hypot, "hypot", "sqrt(x*x + y*y) without overflow")
floor = _from_ufunc(_np.floor, "floor", "Largest whole number <= x")
ceil = _from_ufunc(_np.ceil, "ceil", "Smallest whole number >= x")
trunc = _from_ufunc(_np.trunc, "trunc", "x rounded toward zero")
copysign = _from_ufunc(_np.copysign, "copysign", "|x| with the sign of y")
fmin = _from_ufunc(_np.fmin, "fmin", "The smaller of two; a NaN loses")
fmax = _from_ufunc(_np.fmax, "fmax", "The larger of two; a NaN loses")
sign = _from_ufunc(_np.sign, "sign", "1, -1 or 0 (NaN for NaN), numpy's sign")


def _nary(pair, name):
    def f(*xs):
        if len(xs) == 1 and isinstance(xs[0], (list, tuple, _np.ndarray)):
            xs = tuple(xs[0])
        if len(xs) < 2:
            raise _trace.EagleTypeError(f"eagle.ode.math.{name} takes two or more values (or one sequence "
                                        f"of them), got {len(xs)}")
        return functools.reduce(pair, xs)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"The {'smallest' if name == 'min' else 'largest'} of two or more values, left to right by "
                 f"f{name} (a NaN loses); one sequence argument reduces over it.")
    return f


min = _nary(fmin, "min")  # noqa: A001
max = _nary(fmax, "max")  # noqa: A001


def where(cond, a, b):
    """``a`` where ``cond`` holds, else ``b`` (C's ``?:``; numpy.where on numbers). Combine
    conditions with ``&``, ``|`` and ``~``, not ``and``/``or``/``not``."""
    if _symbolic(cond) or _symbolic(a) or _symbolic(b):
        return _trace.elementwise(_where1, cond, a, b)
    return _np.where(cond, a, b)


def _where1(c, a, b):
    if isinstance(c, _trace.Expr) or isinstance(a, _trace.Expr) or isinstance(b, _trace.Expr):
        return _trace.where(c, a, b)
    return _np.where(c, a, b)[()]


def interp(x, xp, fp, left=None, right=None):
    """numpy.interp over a constant table (``xp`` increasing, ``fp``; numpy arrays the right-hand
    side closes over) at a traced ``x``: ``np.interp`` itself works too. One select a segment."""
    return _trace.table_interp(x, xp, fp, left, right)


def take(table, index):
    """``table[floor(index)]`` of a constant table (a numpy array the right-hand side closes over)
    at a traced index, clamped to the table; one select an entry. (numpy.take and ``table[i]`` do
    not see a traced index: numpy asks it for a Python int.)"""
    if _symbolic(index):
        return _trace.table_take(table, index)
    return _np.take(table, _np.clip(_np.floor(index).astype(int), 0, len(table) - 1))


def clip(x, lo, hi):
    """``x`` limited to ``[lo, hi]`` (numpy.clip: a NaN propagates)."""
    if _symbolic(x) or _symbolic(lo) or _symbolic(hi):
        return _trace.CLIP(*[_lift(v) for v in (x, lo, hi)])  # numpy's clip ufunc, dispatched to eagle
    return _np.clip(x, lo, hi)


def _numeric(scalar_fn, *xs):
    """``scalar_fn`` (on Python floats) over numbers or arrays, keeping a float32 input float32."""
    arrays = [_np.asarray(x) for x in xs]
    dtype = _np.float32 if all(a.dtype == _np.float32 for a in arrays) else _np.float64
    out = _np.vectorize(lambda *v: scalar_fn(*map(float, v)), otypes=[_np.float64])(*arrays)
    out = out.astype(dtype)
    return out[()] if out.ndim == 0 else out


def _traced_call(fn, scalar_fn, name, doc):
    def f(*xs):
        if any(_symbolic(x) for x in xs):
            return _trace.elementwise(
                lambda *v: _trace.call(fn, *v) if _trace._graph_of(v) else _numeric(scalar_fn, *v), *xs)
        return _numeric(scalar_fn, *xs)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


def _fma_exact(a, b, c):
    if hasattr(_math, "fma"):  # Python 3.13
        return _math.fma(a, b, c)
    if not all(_math.isfinite(v) for v in (a, b, c)):
        return a * b + c
    return float(_Fraction(a) * _Fraction(b) + _Fraction(c))  # exact, then rounded once


erf = _traced_call("erf", _math.erf, "erf", "The error function (math.erf on numbers).")
erfc = _traced_call("erfc", _math.erfc, "erfc", "1 - erf(x), accurate for large x (math.erfc on numbers).")
fma = _traced_call("fma", _fma_exact, "fma",
                   "a * b + c rounded once (C's fma; on numbers computed exactly, then rounded, in float64: "
                   "a float32 result may then differ in rare double-rounding cases).")

__all__ = ["exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan",
           "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sqrt", "cbrt", "abs", "fabs", "pow",
           "hypot", "floor", "ceil", "trunc", "copysign", "fmin", "min", "fmax", "max", "where", "erf",
           "erfc", "fma", "pi", "e", "inf", "nan", "sign", "clip"]
