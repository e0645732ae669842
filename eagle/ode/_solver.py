"""eagle.ode's driver: :class:`Solver` (compile once, solve again and again) and
:func:`solve_ivp` (scipy's vocabulary, one call).

A solve is one recorded graph on the arrays' backend: ``ode_init`` over every sample, then one
drained launch of ``ode_step`` over the samples its mask has not dropped (every live sample steps
until it ends, a lane that is done takes the next live sample: a sample that needs 10x the steps
costs only its own lane). No compaction is needed: the drain visits the samples in order and
skips the dropped ones. The host does no per-sample work: it copies y0 and the arguments in,
launches, and reads the planes back when the solution's fields are first read."""
import math
import numbers
import threading
import weakref

import numpy as np

import eagle
from ..errors import EagleMemoryError, EagleTypeError, EagleValueError
from . import _codegen, _progress, _rhs
from ._methods import method as _method
from ._solution import OdeSolution

_DTYPES = {"float64": "double", "float32": "float"}


def _real_of(dtype):
    dt = np.dtype(dtype)
    if dt.name not in _DTYPES:
        raise EagleTypeError(f"eagle.ode: dtype must be float64 or float32, got {dt}")
    return dt


def _positive(x, what, *, allow_zero=False, allow_inf=False):
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise EagleTypeError(f"eagle.ode: {what} must be a real number, got a {type(x).__name__}")
    x = float(x)
    if x != x or (x == math.inf and not allow_inf) or x < 0 or (x == 0 and not allow_zero):
        raise EagleValueError(f"eagle.ode: {what} must be {'>= 0' if allow_zero else '> 0'}"
                              f"{'' if allow_inf else ' and finite'}, got {x}")
    return x


def _events(events):
    """[(callable, terminal, direction)] from scipy's forms: one callable or a sequence, each with
    optional ``terminal`` (bool) and ``direction`` (-1, 0, 1) attributes."""
    if events is None:
        return []
    if callable(events) or isinstance(events, _rhs.C):
        events = [events]
    if not isinstance(events, (list, tuple)):
        raise EagleTypeError(f"eagle.ode: events must be a callable or a list of them, got a {type(events).__name__}")
    out = []
    for k, g in enumerate(events):
        if not (callable(g) or isinstance(g, _rhs.C)):
            raise EagleTypeError(f"eagle.ode: events[{k}] must be a callable g(t, y, *args), got a {type(g).__name__}")
        terminal = getattr(g, "terminal", False)
        if isinstance(terminal, numbers.Integral) and not isinstance(terminal, bool) and terminal not in (0, 1):
            raise EagleValueError(f"eagle.ode: events[{k}].terminal = {terminal}: a count of occurrences is not "
                                  f"supported; use True (stop at the first) or False")
        direction = getattr(g, "direction", 0)
        if not isinstance(direction, numbers.Real) or isinstance(direction, bool) or direction != direction:
            raise EagleTypeError(f"eagle.ode: events[{k}].direction must be a number, got {direction!r}")
        out.append((g, bool(terminal), int(np.sign(direction))))
    return out


class Solver:
    """An ensemble solver compiled once and solved again and again (new y0, new args, same
    method, span, tolerances and outputs). See :func:`solve_ivp` for the parameters; ``n_state``
    and ``n_args`` say what ``fun`` takes. The module is compiled and the graph recorded at the
    first :meth:`solve` on a backend (or at :meth:`compile`), then reused.

    Attributes: ``source`` (the generated C), ``method``, ``t_eval``, ``events``."""

    def __init__(self, fun, *, t_span, n_state=None, n_args=None, method="Tsit5", t_eval=None, events=None, rtol=1e-6,
                 atol=1e-8, dt=None, adaptive=None, max_steps=100_000, first_step=None, max_step=math.inf,
                 dtype="float64", backend=None, exact=False, fast_math=False, controller="PI",
                 steps_per_call=None, workers=None, progress=None, jac=None):
        self.method = _method(method)
        m = self.method
        self._jac_arg = jac
        self.jacobian_kind = None  # implicit methods: which Jacobian the stepper uses (set when traced)
        if jac is not None and not getattr(m, "implicit", False):
            raise EagleValueError(f"eagle.ode: jac= is for the implicit methods (Rodas5P, Kvaerno5, Rosenbrock23); "
                                  f"method {m.name} is explicit and does not use a Jacobian")
        self._fun = fun
        if not (callable(fun) or isinstance(fun, _rhs.C)):
            raise EagleTypeError(f"eagle.ode: fun must be a callable f(t, y, *args) or eagle.ode.C(...), got a "
                                 f"{type(fun).__name__}")
        self.n_state = self.n_args = None
        self.dtype = _real_of(dtype)
        self.real = _DTYPES[self.dtype.name]
        if adaptive is None:
            adaptive = m.adaptive and dt is None
        if adaptive and not m.adaptive:
            raise EagleValueError(f"eagle.ode: method {m.name} is fixed-step (no error estimate): pass dt= "
                                  f"(and adaptive=False)")
        if not adaptive:
            if dt is None:
                raise EagleValueError(f"eagle.ode: a fixed-step solve ({m.name}, adaptive=False) needs dt=")
            dt = _positive(dt, "dt")
        elif dt is not None:
            raise EagleValueError(f"eagle.ode: dt={dt} with the adaptive {m.name}: pass adaptive=False for fixed "
                                  f"steps of dt, or first_step= to start the adaptive solve with that step")
        self.adaptive = bool(adaptive)
        self.dt = dt
        self.rtol = _positive(rtol, "rtol")
        if self.adaptive and self.real == "double" and self.rtol < 100 * np.finfo(np.float64).eps:
            raise EagleValueError(f"eagle.ode: rtol={rtol} is below 100 eps of float64 (2.2e-14)")
        if np.ndim(atol) == 0:
            atol = _positive(atol, "atol", allow_zero=True)
        else:
            atol = np.asarray(atol, dtype=np.float64)
            if atol.shape != (self.n_state,) or not np.all(np.isfinite(atol)) or np.any(atol < 0):
                raise EagleValueError(f"eagle.ode: atol must be a number >= 0 or {self.n_state} of them, got shape "
                                      f"{atol.shape}")
            atol = tuple(float(x) for x in atol)
        self.atol = atol
        self.first_step = None if first_step is None else _positive(first_step, "first_step")
        self.max_step = _positive(max_step, "max_step", allow_inf=True)
        if isinstance(max_steps, bool) or not isinstance(max_steps, numbers.Integral) or not 1 <= max_steps < 2**31 - 1:
            raise EagleValueError(f"eagle.ode: max_steps must be an int in 1..2**31-2, got {max_steps!r}")
        self.max_steps = int(max_steps)
        if controller not in ("PI", "I"):
            raise EagleValueError(f"eagle.ode: controller must be 'PI' or 'I', got {controller!r}")
        self.controller = controller
        if exact and fast_math:
            raise EagleValueError("eagle.ode: exact=True and fast_math=True contradict each other")
        self.exact, self.fast_math = bool(exact), bool(fast_math)
        self.t0, self.t1 = self._span(t_span)
        self.t_eval = self._t_eval(t_eval)
        self.events = _events(events)
        self.steps_per_call = steps_per_call
        self.workers = workers  # lanes of the drained step (None: see _workers)
        self.progress = progress
        self._backend_arg = backend
        self._compiled = {}   # backend path -> (module, steps per call)
        self._runs = {}       # (backend path, n) -> the planes and graph of n samples
        self._lock = threading.Lock()
        self._shape(n_state, n_args)

    def _shape(self, n_state, n_args):
        """Fix the state's components and the arguments' count, and trace the functions (once:
        at construction when both are given, else at the first solve, from y0 and args)."""
        if n_state is None or n_args is None:
            return
        if isinstance(n_state, bool) or not isinstance(n_state, numbers.Integral) or n_state < 1:
            raise EagleValueError(f"eagle.ode: the state must have at least one component, got n_state={n_state!r}")
        if isinstance(n_args, bool) or not isinstance(n_args, numbers.Integral) or not 0 <= n_args <= 64:
            raise EagleValueError(f"eagle.ode: n_args must be an int in 0..64, got {n_args!r}")
        if self.n_state is not None:
            if (self.n_state, self.n_args) != (n_state, n_args):
                raise EagleValueError(f"eagle.ode: this Solver was built for {self.n_state} component(s) and "
                                      f"{self.n_args} argument(s); got y0 of {n_state} and {n_args} argument(s)")
            return
        self.n_state, self.n_args = int(n_state), int(n_args)
        self._rhs = _rhs.build(self._fun, "ode_user_f", self.n_state, self.n_args, self.real, n_out=self.n_state,
                               what="fun")
        self._ev_rhs = [_rhs.build(g, f"ode_g{k}", self.n_state, self.n_args, self.real, n_out=1,
                                   what=f"events[{k}]") for k, (g, _, _) in enumerate(self.events)]
        self._jacobian = None
        if getattr(self.method, "implicit", False):  # the stiff methods' Jacobian (eagle/ode/_implicit.py)
            from . import _implicit, _linalg
            _linalg.check_size(self.n_state, self.method.name)
            self._jacobian = _implicit.jacobian(self._fun, self._jac_arg, self._rhs, self.n_state, self.n_args,
                                                self.real)
            self.jacobian_kind = self._jacobian.kind
        self.source = self._source(self._default_steps_per_call(None))

    def flops_per_step(self):
        """An implicit method's floating-point operations per accepted step of one sample (a dict:
        f, jac, W, LU, solves, combine, error; an FMA counts 2), from the traced rhs's operation
        count and the Jacobian's nonzeros (eagle/ode/_implicit.py); None for an explicit method
        or a C rhs. For a benchmark's fraction of peak."""
        traced = getattr(getattr(self, "_rhs", None), "traced", None)
        if not getattr(self.method, "implicit", False) or traced is None:
            return None
        from ._derive import derive
        from ._implicit import flops_per_step
        return flops_per_step(self.method, self.n_state, derive(traced).nnz, traced.n_ops)

    # -- inputs -----------------------------------------------------------------------------------
    def _span(self, t_span):
        if not isinstance(t_span, (tuple, list)) or len(t_span) != 2:
            raise EagleValueError(f"eagle.ode: t_span must be (t0, t1), got {t_span!r}")
        t0, t1 = t_span
        if isinstance(t0, bool) or not isinstance(t0, numbers.Real) or not math.isfinite(t0):
            raise EagleValueError(f"eagle.ode: t_span's t0 must be a finite number, got {t0!r}")
        if np.ndim(t1) == 0:
            if isinstance(t1, bool) or not isinstance(t1, numbers.Real) or not math.isfinite(t1):
                raise EagleValueError(f"eagle.ode: t_span's t1 must be a finite number or an (N,) array, got {t1!r}")
            if not t1 > t0:
                raise EagleValueError(f"eagle.ode: t_span = ({t0}, {t1}) is empty or backwards: t1 must be greater "
                                      f"than t0 (eagle.ode integrates forwards; for a backward solve substitute "
                                      f"s = -t)")
            return float(t0), float(t1)
        t1 = np.asarray(t1)
        if t1.ndim != 1 or t1.dtype.kind not in "fiu":
            raise EagleValueError(f"eagle.ode: t_span's t1 must be a number or an (N,) array of numbers, got shape "
                                  f"{t1.shape} of {t1.dtype}")
        t1 = t1.astype(np.float64)
        if not np.all(np.isfinite(t1)) or not np.all(t1 > t0):
            bad = int(np.argmax(~(np.isfinite(t1) & (t1 > t0))))
            raise EagleValueError(f"eagle.ode: t_span's t1[{bad}] = {t1[bad]} is not a finite time after t0 = {t0}")
        return float(t0), t1

    def _t_eval(self, t_eval):
        if t_eval is None:
            return None
        te = np.asarray(t_eval)
        if te.ndim != 1 or te.dtype.kind not in "fiu" or te.size == 0:
            raise EagleValueError(f"eagle.ode: t_eval must be a non-empty 1-d array of times, got shape {te.shape} "
                                  f"of {te.dtype}")
        te = te.astype(np.float64)
        top = float(np.max(self.t1)) if np.ndim(self.t1) else self.t1
        if not np.all(np.isfinite(te)) or te[0] < self.t0 or te[-1] > top:
            raise EagleValueError(f"eagle.ode: t_eval must lie within t_span [{self.t0}, {top}], got "
                                  f"[{te.min()}, {te.max()}]")
        if np.any(np.diff(te) <= 0):
            raise EagleValueError("eagle.ode: t_eval must be strictly increasing")
        return te

    # -- code -------------------------------------------------------------------------------------
    def _default_steps_per_call(self, backend):
        """Steps a sample takes per call of the drained body. Fixed steps: all of them (every
        sample takes the same number). Adaptive: on a GPU few, since a lane whose sample ends
        mid-call idles until its warp's call ends, while each call reads and writes the sample's
        state once; on the cpu kind (lanes one at a time) many."""
        if not self.adaptive:
            steps = math.ceil((float(np.max(self.t1)) - self.t0) / self.dt) + 1
            return int(max(1, min(steps, self.max_steps, 1 << 20)))
        if backend is None:
            return 16
        props = backend.device_props(0)
        return 16 if props.warp_size > 1 else 256

    def _source(self, steps_per_call):
        o = _codegen.Options(self.method, self.n_state, self.n_args, self.real, adaptive=self.adaptive,
                             rtol=self.rtol, atol=self.atol, dt=self.dt,
                             first_step=self.first_step, max_step=self.max_step, max_steps=self.max_steps,
                             steps_per_call=steps_per_call, t_eval_count=0 if self.t_eval is None else self.t_eval.size,
                             events=[(t, d) for _, t, d in self.events], controller=self.controller,
                             t0=self.t0, t1=float(np.max(self.t1)), per_sample=bool(np.ndim(self.t1)),
                             exact=self.exact)
        funcs = "\n\n".join([self._rhs.text] + [r.text for r in self._ev_rhs])
        label = self._rhs.label
        header = (f"/* eagle.ode: {self.method.name} ({self.method.description}), "
                  f"{'adaptive' if self.adaptive else 'fixed step'}, {self.dtype.name}, d = {self.n_state}, "
                  f"{self.n_args} argument(s), {len(self.events)} event(s), "
                  f"{0 if self.t_eval is None else self.t_eval.size} t_eval point(s).\n"
                  f" * fun: {label}. Generated by eagle/ode/_codegen.py; compiled for every kind. */")
        if self._jacobian is not None:
            from ._implicit import StiffGen
            return StiffGen(o, self._jacobian).source(funcs, header)
        return _codegen._Gen(o).source(funcs, header)

    def _backend(self, y0):
        b = self._backend_arg
        if b is None:
            if hasattr(y0, "__dlpack_device__") and not isinstance(y0, np.ndarray):
                b = eagle.kind_of_array(y0)
            else:
                b = "cpu"
        return eagle.backend(b) if isinstance(b, str) else b

    def compile(self, backend=None):
        """Compile for ``backend`` (a kind or eagle.Backend; default: cpu) now; returns the module.
        Needs n_state and n_args (given to the constructor, or known from a solve)."""
        if self.n_state is None or self.n_args is None:
            raise EagleValueError("eagle.ode.Solver.compile: pass n_state= and n_args= to the Solver (or solve once)")
        b = eagle.backend(backend or "cpu") if not hasattr(backend, "compile") else backend
        return self._module(b)[0]

    def _workers(self, b, n):
        """Lanes of the drained step: on a GPU as many as can be resident (2048 a multiprocessor;
        the drain's dynamic claiming balances the samples over them), on the cpu kind one a sample."""
        if self.workers is not None:
            return self.workers
        props = b.device_props(0)
        if props.warp_size > 1:
            return max(1, min(n, int(props.sm_count) * 2048))
        return max(1, n)

    def _module(self, b):
        got = self._compiled.get(b.path)
        if got is None:
            spc = self.steps_per_call or self._default_steps_per_call(b)
            src = self._source(spc)
            self.source = src  # what the solutions show: the source this backend compiled
            got = self._compiled[b.path] = (b.compile(src.encode(), name="eagle_ode.c", fast_math=self.fast_math,
                                                      kernels=["ode_init", "ode_step_drain"], exact=self.exact), spc)
        return got

    # -- the run ----------------------------------------------------------------------------------
    def _samples(self, y0, args):
        """N, and the host/device inputs normalised: y0 (N, d) of the solve's dtype, args [(N,)]."""
        if isinstance(y0, (list, tuple)) or isinstance(y0, numbers.Number):
            y0 = np.asarray(y0)
        if not hasattr(y0, "shape") or not hasattr(y0, "dtype"):
            raise EagleTypeError(f"eagle.ode: y0 must be an array of shape (N, d) or (d,), got a {type(y0).__name__}")
        if np.dtype(y0.dtype).kind not in "fiu" or np.dtype(y0.dtype).kind == "c":
            raise EagleTypeError(f"eagle.ode: y0 must hold real numbers, got dtype {y0.dtype}")
        shape = tuple(y0.shape)
        if not isinstance(args, (tuple, list)):
            args = (args,)
        if len(shape) in (1, 2) and shape[-1] >= 1:
            self._shape(self.n_state or shape[-1], len(args) if self.n_args is None else self.n_args)
        d = self.n_state
        if len(shape) not in (1, 2) or shape[-1] != d:
            raise EagleValueError(f"eagle.ode: y0 must have shape (N, {d}) or ({d},) for this {d}-component state, "
                                  f"got {shape}")
        if not isinstance(args, (tuple, list)):
            args = (args,)
        if len(args) != self.n_args:
            raise EagleValueError(f"eagle.ode: fun takes {self.n_args} argument(s) after (t, y), got {len(args)} in args")
        ns = {}
        if len(shape) == 2:
            ns["y0"] = shape[0]
        host_args = sample_args(args, self.dtype, ns, "eagle.ode")
        if np.ndim(self.t1):
            ns["t_span's t1"] = self.t1.shape[0]
        n = agreed_n(ns, "eagle.ode", "samples")
        return n, y0, host_args

    def _run(self, b, n):
        key = (b.path, n)
        run = self._runs.get(key)
        if run is not None:
            return run
        mod, spc = self._module(b)
        w, irow, nw, ni = self._rows
        dt = self.dtype
        d, ne = self.n_state, len(self.events)
        nt = 0 if self.t_eval is None else self.t_eval.size
        try:
            W = b.empty((nw, n), dt)
            I = b.zeros((ni, n), "int32")
            M = b.zeros(n, "uint8")
            A = b.zeros((max(self.n_args, 1), n), dt)
            Y0 = b.empty((n, d), dt)
            TE = b.asarray(self.t_eval.astype(dt)) if nt else b.zeros(n, dt)
            YS = b.empty((n, d, nt), dt) if nt else b.zeros(n, dt)
            EVT = b.empty((ne, n), dt) if ne else b.zeros(n, dt)
            EVY = b.empty((ne, d, n), dt) if ne else b.zeros(n, dt)
            DONE = b.zeros(max(n, 1), "uint32")
        except EagleMemoryError as e:
            need = (nw + max(self.n_args, 1) + d + n * 0) * n * dt.itemsize + n * d * nt * dt.itemsize
            raise EagleMemoryError(f"eagle.ode: a solve of N = {n} samples needs about {need / 2**30:.2f} GiB on "
                                   f"{b.kind} ({'t_eval: ' + str(nt) + ' points x ' + str(d) + ' components per sample, ' if nt else ''}"
                                   f"the state and work planes); it does not fit: solve fewer samples at a time or "
                                   f"fewer t_eval points ({e})") from None
        stream = b.stream()
        aset = eagle.ActiveSet(M, backend=b, stream=stream)
        rounds = -(-self.max_steps // spc) + 2
        planes = [W, I, M, A, TE, YS, EVT, EVY, DONE]

        def init(s):
            s.run(mod.ode_init, [*planes, Y0], n)

        workers = self._workers(b, n)

        def drain(s):
            aset.drain(s, mod.ode_step_drain, planes, rounds, compacted=False, workers=workers)

        run = {"W": W, "I": I, "M": M, "A": A, "Y0": Y0, "DONE": DONE, "TE": TE, "YS": YS, "EVT": EVT, "EVY": EVY,
               "stream": stream, "aset": aset, "init": init, "drain": drain, "graph": None,
               "rows": (w, irow, nw, ni)}
        self._runs[key] = run
        return run

    @property
    def _rows(self):
        return _codegen.rows(self.n_state, len(self.events), adaptive=self.adaptive, pi=self.controller == "PI",
                             per_sample=bool(np.ndim(self.t1)), nt=0 if self.t_eval is None else self.t_eval.size)

    def _with_t1(self, t1):
        """A copy of this solver over per-sample ends ``t1`` (a rank's share of them)."""
        import copy
        other = copy.copy(self)
        other.t1 = t1
        other._compiled, other._runs, other._lock = {}, {}, threading.Lock()
        return other

    def solve(self, y0, args=(), *, progress=None, distributed=None):
        """Integrate every sample from ``y0`` ((N, d) or (d,)) with ``args`` (numbers or (N,)
        arrays); returns an :class:`OdeSolution`. Waits for the device (interruptibly where the
        backend allows).

        ``distributed``: True (an ``eagle.distributed.Job`` is made, collectively, on the solve's
        backend: one device per rank) or a Job over all the samples. Every rank passes all the
        samples' inputs, solves its share, and gets the whole solution back (gathered in sample
        order, host arrays), the same bit for bit as one process's solve."""
        if distributed is not None and distributed is not False:
            from ._distributed import solve_over_ranks
            if not isinstance(args, (tuple, list)):
                args = (args,)
            return solve_over_ranks(self, y0, args, distributed, self._backend_arg or "cpu")
        with self._lock:
            b = self._backend(y0)
            self._last_backend = b
            n, y0, args = self._samples(y0, args)
            run = self._run(b, n)
            self._last_n = n
            s = run["stream"]
            dt = self.dtype
            # y0 (N, d) and the argument rows, into the planes the graph reads
            last = run.get("last") and run["last"]()
            if last is not None:  # a solution still reads these planes: it gets copies of its own
                last._detach(b, s)
            run["keep"] = []  # host rows the copies read until the solve has waited
            if _on_device(y0):
                if tuple(y0.shape) != (n, self.n_state) or np.dtype(y0.dtype) != dt:
                    raise EagleValueError(f"eagle.ode: y0 lives on the device with shape {tuple(y0.shape)} of "
                                          f"{np.dtype(y0.dtype)}; on the device it must be ({n}, {self.n_state}) of {dt} "
                                          f"(or pass a host array, which is broadcast and converted)")
                s.copy(run["Y0"].address, y0, n * self.n_state * dt.itemsize, direction="d2d")
            else:
                host = np.ascontiguousarray(np.broadcast_to(np.asarray(y0, dtype=dt), (n, self.n_state)))
                if not np.all(np.isfinite(host)):
                    pass  # a non-finite y0 fails that sample (status -1), not the solve
                s.copy(run["Y0"], host)
                run["keep"].append(host)
            isz = dt.itemsize
            for k, a in enumerate(args):
                dst = run["A"].address + k * n * isz
                if _on_device(a):
                    s.copy(dst, a, n * isz, direction="d2d")
                else:
                    row = np.empty(n, dt)
                    row[:] = a
                    s.copy(dst, row, n * isz, direction="h2d")
                    run.setdefault("keep", []).append(row)
            w = run["rows"][0]
            if np.ndim(self.t1):
                host_w = np.zeros((1, n), dt)
                host_w[0] = self.t1
                s.copy(run["W"].address + w["T1"] * n * isz, host_w, n * isz, direction="h2d")
                run["keep"].append(host_w)
            if run["graph"] is None:
                run["graph"] = eagle.Graph.build([run["init"], run["drain"]],
                                                 planes=[run["W"], run["I"], run["M"]], stream=s, toggle=False)
            g = run["graph"]
            g.launch()
            self._wait(g, run, n, progress if progress is not None else self.progress)
            sol = OdeSolution(self, run["W"], run["I"], run["YS"] if self.t_eval is not None else None,
                              run["EVT"] if self.events else None, run["EVY"] if self.events else None)
            run["last"] = weakref.ref(sol)
            return sol

    def _wait(self, g, run, n, progress):
        with _progress.Progress(self._last_backend, run["DONE"], n, enabled=progress is not False):
            g.synchronize()

    @property
    def n(self):
        return getattr(self, "_last_n", 0)


def _on_device(a):
    """Does ``a`` live in memory that is not the host's (a CUDA array, an eagle array of a GPU)?"""
    if isinstance(a, np.ndarray) or not hasattr(a, "__dlpack_device__"):
        return False
    return eagle.kind_of_array(a) != "cpu"


def sample_args(args, dtype, ns, what):
    """The arguments of a solve as it copies them: a device array stays where it lives (an (N,)
    array of the solve's dtype), anything else becomes a numpy number or (N,) array; each (N,)
    array's length is recorded in ``ns`` (name -> N) for :func:`agreed_n`."""
    out = []
    for k, a in enumerate(args):
        if _on_device(a):  # stays where it is: copied device to device into the argument plane
            if len(a.shape) != 1:
                raise EagleValueError(f"{what}: args[{k}] must be an (N,) array, got shape {tuple(a.shape)}")
            if np.dtype(a.dtype) != dtype:
                raise EagleTypeError(f"{what}: args[{k}] lives on the device as {np.dtype(a.dtype)}; the solve "
                                     f"is {dtype}: convert it there (or pass a host array)")
            ns[f"args[{k}]"] = a.shape[0]
            out.append(a)
            continue
        if hasattr(a, "__dlpack_device__") and not isinstance(a, np.ndarray):
            a = np.from_dlpack(a)
        a = np.asarray(a)
        if a.dtype.kind not in "fiub":
            raise EagleTypeError(f"{what}: args[{k}] must be a number or an (N,) array of numbers, got dtype {a.dtype}")
        if a.ndim > 1:
            raise EagleValueError(f"{what}: args[{k}] must be a number or an (N,) array, got shape {a.shape}")
        if a.ndim == 1:
            ns[f"args[{k}]"] = a.shape[0]
        out.append(a)
    return out


def agreed_n(ns, what, noun):
    """The one N every per-sample input in ``ns`` (name -> length) agrees on (1 when none is
    per sample), refused naming each input when they disagree or N is out of 1 .. 2**31 - 2."""
    sizes = set(ns.values())
    if len(sizes) > 1:
        raise EagleValueError(f"{what}: the {noun} disagree on N: " + ", ".join(f"{k} has {v}" for k, v in ns.items()))
    n = sizes.pop() if sizes else 1
    if not 1 <= n < 2**31 - 1:
        raise EagleValueError(f"{what}: N = {n} {noun}; one solve takes 1 .. 2**31 - 2 (split them)")
    return n


def initial_states(y0, dtype, args, what):
    """``(y0, its shape, the solve's dtype, args as a tuple)`` of a solve's y0 ((N, d) or (d,)
    real numbers; float32 stays float32 unless ``dtype`` says otherwise, anything else is
    float64), refused with an EagleError naming y0 otherwise."""
    if not hasattr(y0, "shape"):
        try:
            y0 = np.asarray(y0)
        except (ValueError, TypeError) as e:
            raise EagleValueError(f"{what}: y0 must be an array of shape (N, d) or (d,): {e}") from None
    shape = tuple(getattr(y0, "shape", ()))
    if len(shape) not in (1, 2) or shape[-1] < 1:
        raise EagleValueError(f"{what}: y0 must have shape (N, d) or (d,), got {shape}")
    if not hasattr(y0, "dtype") or np.dtype(y0.dtype).kind not in "fiu":
        raise EagleTypeError(f"{what}: y0 must hold real numbers, got dtype {getattr(y0, 'dtype', None)}")
    if dtype is None:
        dtype = "float32" if np.dtype(y0.dtype) == np.float32 else "float64"
    if not isinstance(args, (tuple, list)):
        args = (args,)
    return y0, shape, dtype, tuple(args)


def solve_ivp(fun, t_span, y0, method="Tsit5", t_eval=None, events=None, rtol=1e-6, atol=1e-8, dt=None, args=(),
              backend=None, *, adaptive=None, max_steps=100_000, first_step=None, max_step=math.inf, dtype=None,
              exact=False, fast_math=False, controller="PI", progress=None, distributed=None, jac=None):
    """Integrate N independent initial-value problems y' = fun(t, y, *args) at once, one per lane
    of the arrays' device, in scipy.integrate.solve_ivp's vocabulary.

    Parameters
    ----------
    fun : callable ``fun(t, y, *args)`` or :class:`eagle.ode.C`
        The right-hand side of ONE sample, written with arithmetic, comparisons and
        ``eagle.ode.math`` (exp, sin, where, min, max, ... and numpy's ufuncs); it is traced once
        into C. A Python ``if`` on the state is refused (use ``where``).
    t_span : (t0, t1)
        Shared times, or ``t1`` an (N,) array of per-sample ends. t1 > t0.
    y0 : array (N, d) or (d,)
        Initial states. Where it lives picks the backend (numpy: cpu; a CUDA array: cuda),
        unless ``backend=`` names one. Its dtype picks the precision (float32 stays float32,
        everything else is float64) unless ``dtype=`` is given.
    method : "Tsit5" (default), "RK45", "RK23", "DOP853" (adaptive) or "RK4", "Euler" (fixed);
        for stiff problems the implicit "Rodas5P" (Rosenbrock 5(4)), "Kvaerno5" (ESDIRK 5(4)) or
        "Rosenbrock23" (ode23s), at most 64 state components (eagle/ode/_implicit.py).
    t_eval : 1-d increasing array, optional
        Shared times at which to store every sample's state (dense output), as ``sol.ys``
        (N, d, T) on the device.
    events : callable or list of callables ``g(t, y, *args)``, optional
        Traced like fun, with scipy's ``terminal`` and ``direction`` attributes. A crossing is
        located on the dense output; ``sol.t_events``/``y_events`` hold the first one per sample.
    rtol, atol : tolerances of the adaptive methods (atol: a number or d numbers).
    dt : step of a fixed-step solve (Euler, RK4, or an adaptive tableau with adaptive=False).
    args : numbers or (N,) arrays, passed to fun after (t, y).
    backend : kind, "gpu" or eagle.Backend, optional.
    max_steps : steps (accepted and rejected) a sample may take before it fails (status -1).
    first_step, max_step : as scipy's.
    exact : compile bit-exact (every kind gives the same bits); fast_math: let the compiler
        reassociate. controller: "PI" (default) or "I" (scipy's).
    progress : None/True shows the fraction of samples done for solves longer than ~2 s.
    distributed : True, or an ``eagle.distributed.Job``: the samples are split over MPI ranks
        (every rank passes all the inputs and gets the gathered solution); see Solver.solve.
    jac : callable ``jac(t, y, *args)`` returning the (d, d) Jacobian df/dy (traced like fun), or
        :class:`eagle.ode.C` writing its d*d entries row-major; implicit methods only. Default:
        derived exactly from fun's trace (a C fun: finite differences). ``sol.jacobian`` says
        which was used.

    Returns
    -------
    OdeSolution
        ``t``, ``y``, ``status`` (0 reached t1, 1 terminal event, -1 failed), ``failure``,
        ``message``, ``nfev``, ``n_accepted``, ``n_rejected``, ``ys``, ``t_events``, ``y_events``,
        ``source``.
    """
    y0, shape, dtype, args = initial_states(y0, dtype, args, "eagle.ode")
    solver = Solver(fun, t_span=t_span, n_state=shape[-1], n_args=len(args), method=method, t_eval=t_eval,
                    events=events, rtol=rtol, atol=atol, dt=dt, adaptive=adaptive, max_steps=max_steps,
                    first_step=first_step, max_step=max_step, dtype=dtype, backend=backend, exact=exact,
                    fast_math=fast_math, controller=controller, progress=progress, jac=jac)
    return solver.solve(y0, args, distributed=distributed)
