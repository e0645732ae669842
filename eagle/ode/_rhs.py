"""A right-hand side (or event function) as the generated source takes it: traced from Python
(eagle/ode/_trace.py) or written in C by the user (:class:`C`, the escape hatch)."""
import inspect

from ..errors import EagleTypeError, EagleValueError


class C:
    """A right-hand side, event, drift or diffusion function written in C.

    ``source`` defines a function with this fixed signature (``EAGLE_ODE_REAL`` is ``double`` or
    ``float``, the solve's precision)::

        EAGLE_FN void NAME(const EAGLE_ODE_REAL t, const EAGLE_ODE_REAL* y,
                           const EAGLE_ODE_REAL* a, EAGLE_ODE_REAL* out)

    where ``y[k]`` are the state's components, ``a[k]`` the sample's arguments (in the order of
    ``args=``) and ``out`` receives the derivative (``n_state`` values; one for an event). It may
    define helpers (``EAGLE_FN``) and use everything ``<eagle/kernel.h>`` offers; it is compiled
    for every kind with the rest of the solver.

    Example::

        lorenz = eagle.ode.C('''
        EAGLE_FN void lorenz(const EAGLE_ODE_REAL t, const EAGLE_ODE_REAL* y,
                             const EAGLE_ODE_REAL* a, EAGLE_ODE_REAL* dy) {
            (void)t;
            dy[0] = 10 * (y[1] - y[0]);
            dy[1] = y[0] * (a[0] - y[2]) - y[1];
            dy[2] = y[0] * y[1] - (8.0 / 3.0) * y[2];
        }''', name="lorenz")
    """

    def __init__(self, source, name=None, *, terminal=False, direction=0):
        if not isinstance(source, str):
            raise EagleTypeError(f"eagle.ode.C: source must be a str of C, got a {type(source).__name__}")
        if name is None:
            import re
            found = re.findall(r"EAGLE_FN\s+void\s+([A-Za-z_]\w*)\s*\(", source)
            if len(found) != 1:
                raise EagleValueError("eagle.ode.C: name= is needed: the source defines "
                                      f"{len(found)} EAGLE_FN void functions ({', '.join(found) or 'none'})")
            name = found[0]
        if not isinstance(name, str) or not name.isidentifier():
            raise EagleValueError(f"eagle.ode.C: name must be a C identifier, got {name!r}")
        if name not in source:
            raise EagleValueError(f"eagle.ode.C: the source does not mention the function {name!r}")
        self.source = source
        self.name = name
        self.terminal = terminal
        self.direction = direction

    def __repr__(self):
        return f"eagle.ode.C(name={self.name!r})"


class Rhs:
    """A function as the generator needs it: C text defining ``cname`` with the fixed signature."""

    def __init__(self, text, n_out, label, n_ops=None):
        self.text = text
        self.n_out = n_out
        self.label = label
        self.n_ops = n_ops


def build(fun, cname, n_state, n_args, real, *, n_out, what, arg_widths=None):
    """The :class:`Rhs` of ``fun`` (a Python callable traced once, or a :class:`C`), defining C
    function ``cname``; ``arg_widths``: per argument 0 (a number) or k (a vector of k: a[] holds
    its numbers in order)."""
    if hasattr(fun, "c_function") and hasattr(fun, "n_out"):  # already traced (eagle/ode/_sensitivity.py)
        r = Rhs(fun.c_function(cname), fun.n_out, f"{fun.what}: {fun.name} at {fun.filename}:{fun.lineno}",
                getattr(fun, "n_ops", None))
        r.traced = fun
        return r
    if isinstance(fun, C):
        glue = (f"EAGLE_FN void {cname}(const ode_real t, const ode_real* y, const ode_real* a, ode_real* out)\n"
                f"{{\n    {fun.name}(t, y, a, out);\n}}")
        return Rhs(f"/* {what}: C source given by the user */\n{fun.source}\n{glue}", n_out, f"C:{fun.name}")
    if not callable(fun):
        raise EagleTypeError(f"eagle.ode: {what} must be a callable f(t, y, *args) or eagle.ode.C(...), got a "
                             f"{type(fun).__name__}")
    from ._trace import trace
    tf = trace(fun, n_state, n_args, dtype="float32" if real == "float" else "float64",
               n_out=None if n_out == n_state and what in ("fun", "drift", "diffusion") else n_out, what=what,
               arg_widths=arg_widths)
    r = Rhs(tf.c_function(cname), tf.n_out, _label(fun), getattr(tf, "n_ops", None))
    r.traced = tf  # eagle/ode/_derive.py differentiates it (the implicit methods' Jacobian)
    return r


def _label(fun):
    try:
        return f"{fun.__name__} at {inspect.getsourcefile(fun)}:{inspect.getsourcelines(fun)[1]}"
    except (TypeError, OSError, AttributeError):
        return repr(fun)
