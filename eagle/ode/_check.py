"""Every validator of eagle.ode's inputs, in one place (as scipy's integrate/_ivp/common.py): each
takes the value and the name the user gave it, and returns it normalised or raises an EagleError
subclass naming that argument. Nothing here knows about devices or C."""
import math
import numbers

import numpy as np

from ..errors import EagleTypeError, EagleValueError

REALS = {"float64": "double", "float32": "float"}
MAX_STEPS = 2**31 - 2  # a count the device keeps in an int32

# scipy.integrate.solve_ivp's keywords that eagle.ode does not take, and what it does instead
SCIPY_INSTEAD = {
    "dense_output": "eagle.ode keeps no interpolant per sample: pass t_eval= (the states at those times, "
                    "sol.ys) or events=",
    "vectorized": "fun is ONE sample's right-hand side, traced once into C and run for every sample at once: "
                  "no vectorized= is needed",
    "jac_sparsity": "the implicit methods keep the sparsity of the Jacobian they derive from fun's trace (or of "
                    "jac=); no pattern is needed",
    "lband": "the implicit methods factor the full (at most 64 x 64) matrix per sample, skipping zeros",
    "uband": "the implicit methods factor the full (at most 64 x 64) matrix per sample, skipping zeros",
    "min_step": "the step floor is 10 eps |t| (a sample below it fails with status -1)",
}


def scipy_keywords(kw, what):
    """Refuse scipy keywords eagle does not take (naming what to do instead) and any other."""
    for k in kw:
        if k in SCIPY_INSTEAD:
            raise EagleTypeError(f"{what}: {k}= is scipy's; {SCIPY_INSTEAD[k]}")
        raise EagleTypeError(f"{what}: unexpected keyword argument {k!r}")


def real_of(dtype):
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise EagleTypeError(f"eagle.ode: dtype must be float64 or float32, got {dtype!r} ({e})") from None
    if dt.name not in REALS:
        raise EagleTypeError(f"eagle.ode: dtype must be float64 or float32, got {dt}")
    return dt


def positive(x, what, *, allow_zero=False, allow_inf=False):
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise EagleTypeError(f"eagle.ode: {what} must be a real number, got a {type(x).__name__}")
    x = float(x)
    if x != x or (x == math.inf and not allow_inf) or x < 0 or (x == 0 and not allow_zero):
        raise EagleValueError(f"eagle.ode: {what} must be {'>= 0' if allow_zero else '> 0'}"
                              f"{'' if allow_inf else ' and finite'}, got {x}")
    return x


def count(x, what, lo, hi=MAX_STEPS):
    """An int in lo..hi (a bool, a float or anything else refused naming ``what``)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or not lo <= x <= hi:
        raise EagleValueError(f"eagle.ode: {what} must be an int in {lo}..{hi}, got {x!r}")
    return int(x)


def atol_of(atol, d):
    """atol as d floats >= 0 (one number is every component's)."""
    if np.ndim(atol) == 0:
        return positive(atol, "atol", allow_zero=True)
    a = np.asarray(atol)
    if a.dtype.kind not in "fiu" or a.ndim != 1 or (d is not None and a.shape != (d,)) \
            or not np.all(np.isfinite(a)) or np.any(a < 0):
        raise EagleValueError(f"eagle.ode: atol must be a number >= 0 or {d if d else 'd'} of them (one per "
                              f"component), finite, got {a.tolist() if a.size <= 8 else a.shape}")
    return a.astype(np.float64)


def times(t, what, n_ok=True):
    """A finite time, or (n_ok) an (N,) array of finite times: float or float64 array."""
    if np.ndim(t) == 0:
        if isinstance(t, bool) or not isinstance(t, (numbers.Real, np.generic)) or not math.isfinite(float(t)):
            raise EagleValueError(f"eagle.ode: {what} must be a finite number{' or an (N,) array' if n_ok else ''}, "
                                  f"got {t!r}")
        return float(t)
    a = np.asarray(t)
    if not n_ok or a.ndim != 1 or a.dtype.kind not in "fiu" or a.size == 0:
        raise EagleValueError(f"eagle.ode: {what} must be a number{' or an (N,) array of numbers' if n_ok else ''}, "
                              f"got shape {a.shape} of {a.dtype}")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        raise EagleValueError(f"eagle.ode: {what}[{int(np.argmax(~np.isfinite(a)))}] is not finite")
    return a


def span(t_span):
    """(t0, t1): each a number or an (N,) array of per-sample times, t1 > t0 everywhere."""
    if not isinstance(t_span, (tuple, list)) or len(t_span) != 2:
        raise EagleValueError(f"eagle.ode: t_span must be (t0, t1), got {t_span!r}")
    t0, t1 = times(t_span[0], "t_span's t0"), times(t_span[1], "t_span's t1")
    ok = np.asarray(t1) > np.asarray(t0) if np.ndim(t0) == np.ndim(t1) or np.ndim(t0) == 0 or np.ndim(t1) == 0 \
        else None
    if ok is None or (np.ndim(t0) and np.ndim(t1) and np.shape(t0) != np.shape(t1)):
        raise EagleValueError(f"eagle.ode: t_span's t0 and t1 disagree on N: {np.shape(t0)} and {np.shape(t1)}")
    if not np.all(ok):
        if np.ndim(ok) == 0:
            raise EagleValueError(f"eagle.ode: t_span = ({t0}, {t1}) is empty or backwards: t1 must be greater "
                                  f"than t0 (eagle.ode integrates forwards; for a backward solve substitute s = -t)")
        bad = int(np.argmax(~ok))
        raise EagleValueError(f"eagle.ode: t_span's t1[{bad}] = {np.broadcast_to(t1, ok.shape)[bad]} is not after "
                              f"t0 = {np.broadcast_to(t0, ok.shape)[bad]}")
    return t0, t1


def t_eval_of(t_eval, t0, t1):
    if t_eval is None:
        return None
    te = np.asarray(t_eval)
    if te.ndim != 1 or te.dtype.kind not in "fiu" or te.size == 0:
        raise EagleValueError(f"eagle.ode: t_eval must be a non-empty 1-d array of times, got shape {te.shape} "
                              f"of {te.dtype}")
    te = te.astype(np.float64)
    lo, top = float(np.min(t0)), float(np.max(t1))
    if not np.all(np.isfinite(te)):
        j = int(np.argmin(np.isfinite(te)))
        raise EagleValueError(f"eagle.ode: t_eval[{j}] = {te[j]} is not finite")
    if te[0] < lo or te[-1] > top:
        raise EagleValueError(f"eagle.ode: t_eval must lie within t_span [{lo}, {top}], got "
                              f"[{te.min()}, {te.max()}]")
    if np.any(np.diff(te) <= 0):
        raise EagleValueError("eagle.ode: t_eval must be strictly increasing")
    return te


def on_grid(te, t0, t1, dt):
    """Refuse t_eval points off the fixed grid t0 + k dt that are not an end t1 (the SDE methods
    store states at step ends only)."""
    if te is None:
        return
    k = np.rint((te - np.min(t0)) / dt)
    ok = (np.abs(np.min(t0) + k * dt - te) <= 1e-9 * dt) | np.isin(te, np.atleast_1d(t1))
    if np.ndim(t0) and not np.all(ok):
        raise EagleValueError("eagle.ode: t_eval with per-sample t0 needs a grid shared by every sample")
    if not np.all(ok):
        j = int(np.argmax(~ok))
        raise EagleValueError(f"eagle.ode: t_eval[{j}] = {te[j]} is not on the step grid t0 + k dt (t0 = "
                              f"{float(np.min(t0))}, dt = {dt}) nor t1: the SDE methods store the state at step "
                              f"ends only")


def grid_steps(t0, t1, dt):
    """Refuse a fixed step whose step count rounds to 0 or passes what a sample may take."""
    span = float(np.max(np.asarray(t1) - np.asarray(t0)))
    steps = math.ceil(span / dt - 1e-9)
    if steps > MAX_STEPS:
        raise EagleValueError(f"eagle.ode: dt = {dt} over a span of {span} is {steps} steps, more than a sample "
                              f"may take ({MAX_STEPS}): pass a larger dt")
    if dt > 1e12 * max(span, 1e-300):
        raise EagleValueError(f"eagle.ode: dt = {dt} is far larger than the span {span}: pass a dt below the span")


def events_of(events, is_c):
    """[(callable, terminal, direction)] from scipy's forms: one callable or a sequence, each with
    optional ``terminal`` (bool or 0/1) and ``direction`` (a number: its sign) attributes."""
    if events is None:
        return []
    if callable(events) or is_c(events):
        events = [events]
    if not isinstance(events, (list, tuple)):
        raise EagleTypeError(f"eagle.ode: events must be a callable or a list of them, got a {type(events).__name__}")
    out = []
    for k, g in enumerate(events):
        if not (callable(g) or is_c(g)):
            raise EagleTypeError(f"eagle.ode: events[{k}] must be a callable g(t, y, *args), got a {type(g).__name__}")
        terminal = getattr(g, "terminal", False)
        if isinstance(terminal, (bool, np.bool_)):
            terminal = bool(terminal)
        elif isinstance(terminal, numbers.Integral):
            if terminal not in (0, 1):
                raise EagleValueError(f"eagle.ode: events[{k}].terminal = {terminal}: a count of occurrences is "
                                      f"not supported; use True (stop at the first) or False")
        else:
            raise EagleTypeError(f"eagle.ode: events[{k}].terminal must be a bool, got {terminal!r}")
        direction = getattr(g, "direction", 0)
        if not isinstance(direction, numbers.Real) or isinstance(direction, bool) or direction != direction:
            raise EagleTypeError(f"eagle.ode: events[{k}].direction must be a number, got {direction!r}")
        out.append((g, bool(terminal), int(np.sign(direction))))
    return out


def y0_of(y0, what="y0"):
    """y0 as an array with shape and dtype (a list becomes a numpy array; a ragged one is refused)."""
    if not (hasattr(y0, "shape") and hasattr(y0, "dtype")):
        try:
            y0 = np.asarray(y0)
        except (ValueError, TypeError) as e:
            raise EagleValueError(f"eagle.ode: {what} must be an array of shape (N, d) or (d,): {e}") from None
    shape = tuple(y0.shape)
    if np.dtype(y0.dtype).kind not in "fiu":
        raise EagleTypeError(f"eagle.ode: {what} must hold real numbers, got dtype {y0.dtype}")
    if len(shape) not in (1, 2) or shape[-1] < 1:
        raise EagleValueError(f"eagle.ode: {what} must have shape (N, d) or (d,), got {shape}")
    return y0


def finite(x, what, name):
    """Refuse a host array (or number) ``x`` holding nan or inf, naming ``name`` and the first
    offending index (sample, component): an input that is not finite would only fail its sample
    at t0. One pass over the values (np.isfinite once; integers and bools are always finite). The
    caller skips device-resident arrays: they are not copied to the host to be checked (a
    non-finite value there fails its sample alone, with the failure code of a non-finite state)."""
    a = np.asarray(x)
    if a.dtype.kind not in "fc" or a.size == 0:
        return
    ok = np.isfinite(a)
    if ok.all():
        return
    at = np.unravel_index(int(np.argmin(ok)), a.shape)
    where = f"[{', '.join(str(int(k)) for k in at)}]" if a.ndim else ""
    raise EagleValueError(f"{what}: {name}{where} = {a[at]} is not finite: every input must be a finite number (a "
                          f"value that turns nan or inf during the run fails its sample alone, with a failure code)")


def args_of(args):
    return tuple(args) if isinstance(args, (tuple, list)) else (args,)


def widths_of(args):
    """Per argument: k for an (N, k) array (a per-sample vector of k numbers), else 0."""
    return tuple(int(a.shape[1]) if len(getattr(a, "shape", ())) == 2 else 0 for a in args)


def agreed_n(ns, what, noun):
    """The one N every per-sample input in ``ns`` (name -> length) agrees on (1 when none is
    per sample), refused naming each input when they disagree or N is out of 1 .. 2**31 - 2."""
    sizes = set(ns.values())
    if len(sizes) > 1:
        raise EagleValueError(f"{what}: the {noun} disagree on N: " + ", ".join(f"{k} has {v}" for k, v in ns.items()))
    n = sizes.pop() if sizes else 1
    if not 1 <= n <= MAX_STEPS:
        raise EagleValueError(f"{what}: N = {n} {noun}; one solve takes 1 .. 2**31 - 2 (split them)")
    return n


def seed_of(seed):
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**64:
        raise EagleValueError(f"eagle.ode.solve_sde: seed must be an int in 0..2**64-1, got {seed!r}")
    return int(seed)
