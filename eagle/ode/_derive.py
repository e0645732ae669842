"""Forward differentiation of a traced right-hand side, at trace time.

A traced ``fun(t, y, *args)`` (eagle/ode/_trace.py) is a hash-consed SSA graph. :func:`derive`
walks the nodes its outputs need, in creation order, and gives each node its derivative with
respect to every input it depends on (``y[k]``, ``t``, ``args[k]``) as new nodes of the SAME
graph, built with the graph's own ``node``/``const`` (so constant operations fold, equal
subexpressions are shared with ``fun``'s own, and a derivative that is structurally zero is
simply absent: sparsity is kept, zeros are never multiplied).

Public API (stable; eagle/ode's stiff methods and its sensitivities build on it)::

    from eagle.ode._derive import derive, jacobian
    d = derive(tf)                 # tf: a TracedFunction (eagle.ode._trace.trace(...)), n_out outputs
    d = jacobian(fun, n_state, n_args, dtype="float64")   # trace + derive in one call

    d.n_out, d.n_state, d.n_args   # sizes
    d.jac        # dict (i, j) -> Expr: d out[i] / d y[j], structurally nonzero entries only
    d.dt         # dict i -> Expr: d out[i] / d t (nonzero only)
    d.dargs      # dict (i, k) -> Expr: d out[i] / d args[k] (nonzero only)
    d.pattern    # sorted list of the (i, j) in d.jac: the Jacobian's sparsity pattern
    d.nnz        # len(d.pattern)
    d.c_function(cname, parts=("jac",))
        # C text of EAGLE_FN void cname(const T t, const T* y, const T* a, T* out): one function
        # computing the requested parts, sharing their subexpressions. ``parts`` is a sequence of
        # "f" (the outputs, n_out values), "jac" (n_out x n_state, row-major: out[i*n_state + j]),
        # "dt" (n_out values), "dargs" (n_out x n_args, row-major), laid out one after another in
        # the order given; d.layout(parts) says each part's offset. Only the structurally nonzero
        # entries of jac and dargs are written: the caller zeroes those blocks once (the pattern
        # does not change); f and dt are written in full (zeros as 0). As TracedFunction's C: every
        # load of y and a precedes the first store (out may not alias y, it is larger, though).
    d.evaluate(t, y, args, parts=("jac",))
        # the same numbers computed in numpy (float64) by walking the graph: for tests and host use

Rules: the usual calculus per node; a piecewise function (where, min/max, abs, clip, copysign)
differentiates the branch taken (at a tie, the branch the value came from); floor, ceil, trunc,
rint, comparisons and conditions have derivative zero; ``pow(a, b)`` with a constant exponent is
``b a^(b-1)``, else ``pow(a, b) (b/a da + log(a) db)``. A node with no rule here (none is known
today) raises :class:`eagle.errors.EagleValueError` naming the operation.
"""
import math

import numpy as np

from eagle.errors import EagleValueError

from . import _trace
from ._trace import TracedFunction

_ZERO_DERIV = {"floor", "ceil", "trunc", "rint", "cast"}  # piecewise constant (cast: a condition as 1 or 0)


class _D:
    """Builders of derivative nodes on graph ``g`` that drop zeros and ones (None is zero)."""

    def __init__(self, g):
        self.g = g

    def c(self, v):
        return self.g.const(v)

    @staticmethod
    def is_const(e, v):
        return e is not None and e.op == "const" and e.kind == "num" and e.value == v

    def add(self, a, b):
        if a is None or self.is_const(a, 0.0):
            return b
        if b is None or self.is_const(b, 0.0):
            return a
        if b.op == "neg":
            return self.sub(a, b.args[0])
        if a.op == "neg":
            return self.sub(b, a.args[0])
        return self.g.node("add", (a, b))

    def sub(self, a, b):
        if b is None or self.is_const(b, 0.0):
            return a
        if a is None or self.is_const(a, 0.0):
            return self.neg(b)
        if b.op == "neg":
            return self.add(a, b.args[0])
        return self.g.node("sub", (a, b))

    def neg(self, a):
        if a is None:
            return None
        if a.op == "neg":
            return a.args[0]
        return self.g.node("neg", (a,))

    def mul(self, a, b):
        if a is None or b is None or self.is_const(a, 0.0) or self.is_const(b, 0.0):
            return None
        if self.is_const(a, 1.0):
            return b
        if self.is_const(b, 1.0):
            return a
        if self.is_const(a, -1.0):
            return self.neg(b)
        if self.is_const(b, -1.0):
            return self.neg(a)
        return self.g.node("mul", (a, b))

    def div(self, a, b):
        if a is None or self.is_const(a, 0.0):
            return None
        if self.is_const(b, 1.0):
            return a
        return self.g.node("div", (a, b))

    def fn(self, name, *args):
        return self.g.node(name, args)

    def select(self, cond, a, b):
        if a is None and b is None:
            return None
        z = self.c(0.0)
        return _trace.where(cond, z if a is None else a, z if b is None else b)

    def cmp(self, op, a, b):
        return self.g.node(op, (a, b), kind="bool")


def _scale(D, dx, factor):
    """{var: factor * dx[var]} without zeros."""
    out = {}
    for v, e in dx.items():
        p = D.mul(factor, e)
        if p is not None:
            out[v] = p
    return out


def _combine(D, terms):
    """sum over (factor, dx) pairs of factor * dx, per variable (factor None means 1)."""
    out = {}
    for factor, dx in terms:
        for v, e in dx.items():
            p = e if factor is None else D.mul(factor, e)
            if p is None:
                continue
            s = D.add(out.get(v), p)
            if s is None or D.is_const(s, 0.0):
                out.pop(v, None)
            else:
                out[v] = s
    return out


def _node_derivative(D, e, d):
    """The derivative dict of node ``e`` from its arguments' derivative dicts (``d``: id -> dict)."""
    op, g = e.op, D.g
    if e.kind == "bool" or op == "const" or op in _ZERO_DERIV:
        return {}
    if op == "t":
        return {("t",): D.c(1.0)}
    if op == "y":
        return {("y", e.value): D.c(1.0)}
    if op == "a":
        return {("a", e.value): D.c(1.0)}
    args = e.args
    da = [d.get(x.id, {}) for x in args]
    if not any(da):
        return {}
    x = args[0]
    one = D.c(1.0)
    if op == "add":
        return _combine(D, [(None, da[0]), (None, da[1])])
    if op == "sub":
        return _combine(D, [(None, da[0]), (D.c(-1.0), da[1])])
    if op == "neg":
        return _scale(D, da[0], D.c(-1.0))
    if op == "mul":
        return _combine(D, [(args[1], da[0]), (args[0], da[1])])
    if op == "div":  # (da - q db) / b, q = a / b = e
        inv = D.div(one, args[1])
        return _combine(D, [(inv, da[0]), (D.neg(D.mul(e, inv)), da[1])])
    if op == "select":
        c, a, b = args
        out = {}
        for v in set(da[1]) | set(da[2]):
            s = D.select(c, da[1].get(v), da[2].get(v))
            if s is not None and not D.is_const(s, 0.0):
                out[v] = s
        return out
    if op in ("maximum", "minimum", "clipmax", "clipmin", "fmax", "fmin"):
        a, b = args
        # the branch the value came from: a where e took a's value (NaN: a's, numpy's rule)
        test = {"maximum": "gt", "clipmax": "ge", "fmax": "ge", "minimum": "lt", "clipmin": "le", "fmin": "le"}[op]
        first = D.cmp(test, a, b)
        if op in ("maximum", "minimum", "clipmax", "clipmin"):
            first = g.node("or", (first, D.cmp("ne", a, a)), kind="bool")
        else:  # fmax/fmin: a NaN loses
            first = g.node("or", (first, D.cmp("ne", b, b)), kind="bool")
        out = {}
        for v in set(da[0]) | set(da[1]):
            s = D.select(first, da[0].get(v), da[1].get(v))
            if s is not None and not D.is_const(s, 0.0):
                out[v] = s
        return out
    if op == "fabs":
        return _scale(D, da[0], D.fn("copysign", one, x))
    if op == "copysign":  # |a| sign(b): d = sign(a) sign(b) da
        return _scale(D, da[0], D.mul(D.fn("copysign", one, x), D.fn("copysign", one, args[1])))
    if op == "fmod":  # a - trunc(a / b) b
        return _combine(D, [(None, da[0]), (D.neg(D.fn("trunc", D.div(args[0], args[1]))), da[1])])
    if op == "fma":
        a, b, c = args
        return _combine(D, [(b, da[0]), (a, da[1]), (None, da[2])])
    if op == "hypot":
        inv = D.div(one, e)
        return _combine(D, [(D.mul(args[0], inv), da[0]), (D.mul(args[1], inv), da[1])])
    if op == "atan2":  # atan2(y, x): (x dy - y dx) / (x^2 + y^2)
        yy, xx = args
        inv = D.div(one, D.add(D.mul(xx, xx), D.mul(yy, yy)))
        return _combine(D, [(D.mul(xx, inv), da[0]), (D.neg(D.mul(yy, inv)), da[1])])
    if op == "pow":
        a, b = args
        terms = []
        if da[0]:
            if b.op == "const" and not da[1]:
                fa = D.mul(b, _trace.power(a, b.value - 1.0)) if b.value != 1.0 else one
            else:
                fa = D.mul(e, D.div(b, a))
            terms.append((fa, da[0]))
        if da[1]:
            terms.append((D.mul(e, D.fn("log", a)), da[1]))
        return _combine(D, terms)
    f = _UNARY.get(op)
    if f is None:
        raise EagleValueError(f"eagle.ode derive: no derivative rule for the traced operation {op!r}")
    return _scale(D, da[0], f(D, x, e))


def _sqrt(D, x):
    return D.fn("sqrt", x)


LN2, LN10 = math.log(2.0), math.log(10.0)
# d f(x) / dx in terms of x and the node e = f(x)
_UNARY = {
    "sqrt": lambda D, x, e: D.div(D.c(0.5), e),
    "cbrt": lambda D, x, e: D.div(D.c(1.0 / 3.0), D.mul(e, e)),
    "exp": lambda D, x, e: e,
    "exp2": lambda D, x, e: D.mul(D.c(LN2), e),
    "expm1": lambda D, x, e: D.add(e, D.c(1.0)),
    "log": lambda D, x, e: D.div(D.c(1.0), x),
    "log2": lambda D, x, e: D.div(D.c(1.0 / LN2), x),
    "log10": lambda D, x, e: D.div(D.c(1.0 / LN10), x),
    "log1p": lambda D, x, e: D.div(D.c(1.0), D.add(x, D.c(1.0))),
    "sin": lambda D, x, e: D.fn("cos", x),
    "cos": lambda D, x, e: D.neg(D.fn("sin", x)),
    "tan": lambda D, x, e: D.add(D.c(1.0), D.mul(e, e)),
    "sinh": lambda D, x, e: D.fn("cosh", x),
    "cosh": lambda D, x, e: D.fn("sinh", x),
    "tanh": lambda D, x, e: D.sub(D.c(1.0), D.mul(e, e)),
    "asin": lambda D, x, e: D.div(D.c(1.0), _sqrt(D, D.sub(D.c(1.0), D.mul(x, x)))),
    "acos": lambda D, x, e: D.div(D.c(-1.0), _sqrt(D, D.sub(D.c(1.0), D.mul(x, x)))),
    "atan": lambda D, x, e: D.div(D.c(1.0), D.add(D.c(1.0), D.mul(x, x))),
    "asinh": lambda D, x, e: D.div(D.c(1.0), _sqrt(D, D.add(D.mul(x, x), D.c(1.0)))),
    "acosh": lambda D, x, e: D.div(D.c(1.0), _sqrt(D, D.sub(D.mul(x, x), D.c(1.0)))),
    "atanh": lambda D, x, e: D.div(D.c(1.0), D.sub(D.c(1.0), D.mul(x, x))),
    "erf": lambda D, x, e: D.mul(D.c(2.0 / math.sqrt(math.pi)), D.fn("exp", D.neg(D.mul(x, x)))),
    "erfc": lambda D, x, e: D.mul(D.c(-2.0 / math.sqrt(math.pi)), D.fn("exp", D.neg(D.mul(x, x)))),
}


class Derivatives:
    """The derivatives of a traced function's outputs (see the module docstring)."""

    def __init__(self, tf, jac, dt, dargs):
        self.traced = tf
        self.n_out, self.n_state, self.n_args = tf.n_out, tf.n_state, tf.n_args
        self.jac, self.dt, self.dargs = jac, dt, dargs
        self.pattern = sorted(jac)
        self.nnz = len(self.pattern)

    def layout(self, parts, columns=None):
        """{part: offset into out} of ``c_function(..., parts, columns)`` and the total size."""
        sizes = {"f": self.n_out, "jac": self.n_out * (columns or self.n_state), "dt": self.n_out,
                 "dargs": self.n_out * self.n_args}
        off, out = 0, {}
        for p in parts:
            if p not in sizes:
                raise EagleValueError(f"eagle.ode derive: unknown part {p!r}; the parts are f, jac, dt, dargs")
            out[p] = off
            off += sizes[p]
        return out, off

    def _entries(self, parts, columns=None):
        """[(offset in out, Expr)] of the parts; f and dt in full, jac and dargs nonzero only.
        ``columns``: the Jacobian's first that many columns alone, rows of that stride (the
        block column of an augmented system that its linear algebra reads)."""
        g = self.traced.graph
        offsets, _ = self.layout(parts, columns)
        nc = columns or self.n_state
        items = []
        for p in parts:
            o = offsets[p]
            if p == "f":
                items += [(o + i, e) for i, e in enumerate(self.traced.outputs)]
            elif p == "dt":
                items += [(o + i, self.dt.get(i, g.const(0.0))) for i in range(self.n_out)]
            elif p == "jac":
                items += [(o + i * nc + j, self.jac[(i, j)]) for i, j in self.pattern if j < nc]
            elif p == "dargs":
                items += [(o + i * self.n_args + k, self.dargs[(i, k)]) for i, k in sorted(self.dargs)]
        return items

    def c_function(self, cname, parts=("jac",), columns=None):
        items = self._entries(parts, columns)
        tf = self.traced
        what = f"d({tf.what})/d({', '.join(parts)})"
        sub = _StraightLine(tf.graph, [e for _, e in items] or [tf.graph.const(0.0)], tf.n_state, tf.n_args, what)
        text = sub.c_function(cname)
        if not items:  # nothing to write: a function that only reads its arguments
            return text.replace("    out[0] = 0.0;\n", "    (void)out;\n").replace("    out[0] = 0.0f;\n", "    (void)out;\n")
        lines = text.split("\n")
        for k, (pos, _) in enumerate(items):
            prefix = f"    out[{k}] = "
            idx = next(n for n in range(len(lines) - 1, -1, -1) if lines[n].startswith(prefix))
            lines[idx] = f"    out[{pos}] = " + lines[idx][len(prefix):] + "  /* " + _name(parts, pos, self, columns) + " */"
        return "\n".join(lines)

    def evaluate(self, t, y, args=(), parts=("jac",)):
        """The parts' values at (t, y, args) in float64 numpy (structural zeros as 0), by
        walking the graph: a host-side reference for tests."""
        items = self._entries(parts)
        _, size = self.layout(parts)
        values = _evaluate([e for _, e in items], float(t), np.asarray(y, np.float64), np.asarray(args, np.float64))
        out = np.zeros(size)
        for (pos, _), v in zip(items, values):
            out[pos] = v
        return out


class _StraightLine(TracedFunction):
    """A TracedFunction whose body is never rerolled into loops: one ``out[k] = ...;`` line per
    output, which c_function renumbers to the entry's place in the layout."""

    def _reroll(self, order, outputs):
        return None


def _name(parts, pos, d, columns=None):
    offsets, _ = d.layout(parts, columns)
    for p in sorted(parts, key=lambda q: -offsets[q]):
        if pos >= offsets[p]:
            r = pos - offsets[p]
            if p == "jac":
                nc = columns or d.n_state
                return f"d f{r // nc} / d y{r % nc}"
            if p == "dargs":
                return f"d f{r // max(d.n_args, 1)} / d a{r % max(d.n_args, 1)}"
            return f"{'d f' + str(r) + ' / dt' if p == 'dt' else 'f' + str(r)}"
    return ""


def derive(tf):
    """The :class:`Derivatives` of a TracedFunction's outputs with respect to y, t and the args."""
    if not isinstance(tf, TracedFunction) or not hasattr(tf, "graph"):
        raise EagleValueError(f"eagle.ode derive: expected a TracedFunction, got a {type(tf).__name__}")
    D = _D(tf.graph)
    d = {}
    for e in _trace._reached(tf.outputs):
        dx = _node_derivative(D, e, d)
        if dx:
            d[e.id] = dx
    jac, dt, dargs = {}, {}, {}
    for i, o in enumerate(tf.outputs):
        for v, e in d.get(o.id, {}).items():
            if D.is_const(e, 0.0):
                continue
            if v[0] == "y":
                jac[(i, v[1])] = e
            elif v[0] == "t":
                dt[i] = e
            else:
                dargs[(i, v[1])] = e
    return Derivatives(tf, jac, dt, dargs)


def jacobian(fun, n_state, n_args, dtype="float64", what="fun"):
    """Trace ``fun(t, y, *args)`` (a right-hand side of ``n_state`` outputs) and derive it."""
    return derive(_trace.trace(fun, n_state, n_args, dtype=dtype, what=what))


# ------------------------------------------------------------------ a numpy evaluator of the graph

_NP = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide, "lt": np.less,
       "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal,
       "and": np.logical_and, "or": np.logical_or, "xor": np.not_equal, "neg": np.negative, "not": np.logical_not,
       "cast": float, "select": lambda c, a, b: a if c else b, "maximum": np.maximum, "minimum": np.minimum,
       "clipmax": lambda a, b: a if a >= b or a != a else b, "clipmin": lambda a, b: a if a <= b or a != a else b,
       "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh,
       "atanh": np.arctanh, "atan2": np.arctan2, "pow": np.power, "erf": math.erf, "erfc": math.erfc,
       "fma": lambda a, b, c: a * b + c, "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
       "signbit": np.signbit}


def _evaluate(outputs, t, y, a):
    vals = {}
    with np.errstate(all="ignore"):
        for e in _trace._reached(outputs):
            if e.op == "const":
                v = e.value
            elif e.op == "t":
                v = t
            elif e.op == "y":
                v = y[e.value]
            elif e.op == "a":
                v = a[e.value]
            else:
                f = _NP.get(e.op) or getattr(np, e.op)
                v = f(*[vals[x.id] for x in e.args])
            vals[e.id] = float(v) if e.kind == "num" else bool(v)
    return [vals[o.id] for o in outputs]
