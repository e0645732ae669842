"""The one ensemble run under every eagle.ode solver (solve_ivp, Solver, solve_sde, SdeSolver):
it owns, once, the backend (the core's resolver: where y0 lives names it), the rule for shared
vs per-sample inputs, the planes, the drain, the graph, the wait, progress, distributed solves and
the solution. A method is a *scheme* handed to it (eagle/ode/_rk.py, eagle/ode/_sde.py; the
interface in eagle/ode/SCHEMES.md), framed with its controller by eagle/ode/_frame.py.

A solve is one recorded graph on the arrays' backend: ``<p>_init`` over every sample, then one
drained launch of ``<p>_step`` over the samples its mask has not dropped (a lane that is done
takes the next live sample). Nothing of a solve's values is compiled in: t0, t1 (shared or per
sample), rtol, atol (one or d), dt, first_step, max_step, max_steps, t_eval, the seed and the
shared y0 and arguments are written to two small buffers (P, Q) and the input plane before each
solve, so one module serves every solve of a right-hand side: modules are cached by their source
(the traced functions, scheme, controller, shape, events, precision) and backend.

The shared/per-sample rule: y0 of shape (d,), a number argument, a number t0 or t1 is one value
for every sample (sent once, in P); (N, d), (N,) arrays are per sample (copied to Y0 and the input
plane IN, or device to device where they live on the solve's device). A repeat solve of the same
shapes allocates nothing and does O(1) Python work: planes, graph and host buffers are reused
and the inputs are copied in place."""
import math
import threading
import weakref

import numpy as np

import eagle
from ..errors import EagleMemoryError, EagleTypeError, EagleValueError
from . import _acts, _check, _progress, _rhs
from ._frame import (P_ATOL, P_DT, P_FIRST, P_MAX_STEP, P_RTOL, Q_FIRST, Q_MAX_STEPS, Q_NT, Q_SEED_HI,
                     Q_SEED_LO, Q_SHARED, Q_SPC, Frame)

_MODULES = {}  # (backend path, source, exact, fast_math) -> module: one compile per right-hand side
_MODULES_LOCK = threading.Lock()
compiles = [0]  # modules compiled by this process (tests read it)
OUTLINE_OPS = 100  # traced operations past which the functions are called out of line (ODE_OUTLINE)
OUTLINE_OPS_GPU = 1000  # the same on a GPU
_HOST = []


def host_kind():
    """The kind that serves host memory, as the core's resolver names it (a numpy array's)."""
    if not _HOST:
        _HOST.append(eagle.kind_of_array(np.empty(0)))
    return _HOST[0]


def on_device(a):
    """Does ``a`` live in memory that is not the host's (a CUDA array, an eagle array of a GPU)?"""
    if isinstance(a, np.ndarray) or not hasattr(a, "__dlpack_device__"):
        return False
    return eagle.kind_of_array(a) != host_kind()


def wait_for_producer(a, stream):
    """Order eagle's ``stream`` after the work the array library of the device array ``a`` has
    queued to write it, by DLPack's rule: ``a.__dlpack__(stream=<stream's raw value>)`` makes the
    stream wait for the producer's (torch, CuPy and JAX do; the capsule is dropped unused). An
    eagle array (whose writer the caller has waited for) or a producer that refuses the argument
    has nothing to order."""
    export = getattr(a, "__dlpack__", None)
    if export is None or isinstance(a, eagle.DeviceArray):
        return
    try:
        export(stream=stream.handle)
    except Exception:  # noqa: BLE001 - an exporter without stream support: nothing to order
        pass


def backend_of(backend, y0, what):
    """The solve's backend: ``backend=`` (a kind, 'gpu', a path or an eagle.Backend), else the
    kind of y0's memory (the core's resolver: host memory names the host's kind)."""
    if backend is None:
        backend = eagle.kind_of_array(y0 if hasattr(y0, "__dlpack_device__") else np.empty(0))
    elif not isinstance(backend, str) and not (hasattr(backend, "compile") and hasattr(backend, "path")):
        raise EagleTypeError(f"{what}: backend must be a kind ('cpu', 'cuda', 'gpu', ...), a library path or an "
                             f"eagle.Backend, got a {type(backend).__name__}")
    return eagle.backend(backend) if isinstance(backend, str) else backend


class View:
    """What a solution reads of its solve, fixed when the solve was made (never the Run's later
    state): rows, shape, outputs, source."""

    def __init__(self, run, n, source):
        self.rows, self.n, self.n_state, self.source = run.frame.rows, n, run.d, source
        self.events, self.t_eval, self.method = run.events, run.t_eval, run.method
        self.scheme = run.scheme
        self.max_events, self.summary = run.max_events, run.summary


class Run:
    """One ensemble problem compiled once and solved again and again (new y0, args, spans, seed).

    ``fns``: [(what, callable or eagle.ode.C, C name)] of the scheme's functions (each returns d
    values); ``scheme(d, real)`` makes the scheme once the state's size is known; ``controller``
    (eagle/ode/_control.py) or None (fixed steps of ``dt``); ``values``: the run-time values
    (rtol, atol, first_step, max_step, max_steps, dt)."""

    def __init__(self, what, fns, scheme, controller, *, method, events, t_span, t_eval, dtype, backend, exact,
                 fast_math, steps_per_call, workers, progress, values, grid=False, seed=0, n_state=None,
                 n_args=None, max_events=None, callbacks=(), save=None):
        self.what, self.fns, self.make_scheme, self.controller = what, fns, scheme, controller
        self.method = method
        # events: eagle/ode/_acts.EventSpec, or (g, terminal, direction) from a front without affects
        self.events = [e if isinstance(e, _acts.EventSpec) else _acts.EventSpec(e[0], int(bool(e[1])), e[2], None)
                       for e in events]
        self.max_events, self.callbacks, self.save, self.summary = max_events, list(callbacks), save, None
        self.t0, self.t1 = _check.span(t_span)
        _acts.check_times(self.callbacks, self.t0, self.t1, None)
        self.t_eval = _check.t_eval_of(t_eval, self.t0, self.t1)
        self.grid = grid
        if controller is None:
            _check.grid_steps(self.t0, self.t1, values["dt"])
            if grid:
                _check.on_grid(self.t_eval, self.t0, self.t1, values["dt"])
        self.dtype = _check.real_of(dtype)
        self.real = _check.REALS[self.dtype.name]
        if exact and fast_math:
            raise EagleValueError(f"{what}: exact=True and fast_math=True contradict each other")
        self.exact, self.fast_math = bool(exact), bool(fast_math)
        self.values = values
        self.seed = seed
        self.steps_per_call = None if steps_per_call is None else _check.count(steps_per_call, "steps_per_call", 1)
        self.workers = None if workers is None else _check.count(workers, "workers", 1)
        self.progress = progress
        self.backend_arg = backend
        if backend is not None:
            backend_of(backend, None, what)  # a wrong type is refused now, not at the first solve
        self.d = self.na = self.widths = None
        self.source = None
        self._runs = {}    # (backend path, n) -> planes, buffers, graph, view
        self._lock = threading.RLock()
        self.shape(n_state, n_args)

    # -- code -------------------------------------------------------------------------------------
    def shape(self, d, widths):
        """Fix the state's components and the arguments (``widths``: their count, or per argument
        0 for a number and k for a per-sample vector of k) and trace the functions (once: at
        construction when both are given, else at the first solve, from y0 and args)."""
        if d is None or widths is None or (d == self.d and widths == self.widths):
            return
        d = _check.count(d, "n_state (the state's components)", 1, 1 << 20)
        if not isinstance(widths, tuple):
            widths = (0,) * _check.count(widths, "n_args", 0, 64)
        na_user = sum(max(w, 1) for w in widths)
        na = na_user + sum(c.m for c in self.callbacks)  # the callbacks' times follow the user's arguments
        if na > 1024:
            raise EagleValueError(f"{self.what}: the arguments hold {na} numbers a sample; at most 1024")
        if self.source is not None:
            if (self.d, len(self.widths)) != (d, len(widths)):
                raise EagleValueError(f"{self.what}: built for {self.d} component(s) and {len(self.widths)} "
                                      f"argument(s); got y0 of {d} and {len(widths)} argument(s)")
            if self.widths != widths:
                raise EagleValueError(f"{self.what}: built for arguments of widths {self.widths} (0: a number, k: "
                                      f"an (N, k) vector a sample); got {widths}")
            return
        if np.ndim(self.values.get("atol", 0)):
            self.values["atol"] = _check.atol_of(self.values["atol"], d)
        wide = widths if any(widths) else None
        fns = [_rhs.build(f, cname, d, na_user, self.real, n_out=d, what=w, arg_widths=wide) for w, f, cname in self.fns]
        for (w, _, _), r in zip(self.fns, fns):
            if r.n_out != d:  # a C function cannot say; a traced one is checked by the tracer
                raise EagleValueError(f"{self.what}: {w} returns {r.n_out} values, the state has {d}")
        fns += [_rhs.build(e.fun, f"ode_g{k}", d, na_user, self.real, n_out=1, what=f"events[{k}]", arg_widths=wide)
                for k, e in enumerate(self.events)]
        # affects return the whole new state: traced with d outputs (a wrong length is refused here)
        acts = [_rhs.build(e.affect, f"ode_aff{k}", d, na_user, self.real, n_out=d, what=f"events[{k}].affect",
                           arg_widths=wide) for k, e in enumerate(self.events) if e.acts]
        acts += [_rhs.build(c.affect, f"ode_cb{k}", d, na_user, self.real, n_out=d, what=f"callbacks[{k}].affect",
                            arg_widths=wide) for k, c in enumerate(self.callbacks)]
        for r, what in zip(acts, [f"events[{k}].affect" for k, e in enumerate(self.events) if e.acts] +
                           [f"callbacks[{k}].affect" for k in range(len(self.callbacks))]):
            if r.n_out != d:
                raise EagleValueError(f"{self.what}: {what} returns {r.n_out} values, the state has {d}")
        fns += acts
        if self.save is not None:
            from . import _summary
            if not getattr(self.make_scheme(d, self.real), "dense", False):
                raise EagleValueError(f"{self.what}: save= needs a method with a dense output")
            self.summary = _summary.plan_of(self.save, d)
            self.summary.trace(d, na_user, self.real, wide)
        if wide and not any(isinstance(f, _rhs.C) for _, f, _ in self.fns):
            text, slot = "".join(r.text for r in fns), 0
            for k, w in enumerate(widths):
                if w and not any(f"= a[{slot + c}];" in text for c in range(w)):
                    raise EagleValueError(f"{self.what}: args[{k}] is an (N, {w}) array, a vector of {w} a sample, "
                                          f"but {self.fns[0][0]} never reads args[{k}][c]: pass an (N,) array for "
                                          f"one number a sample")
                slot += max(w, 1)
        self.scheme = self.make_scheme(d, self.real)
        bind = getattr(self.scheme, "bind", None)  # a scheme that differentiates its functions (_implicit.py)
        if bind is not None:
            bind(fns[:len(self.fns)], na, wide)
        ops = sum(r.n_ops or 0 for r in fns)
        self.frame = Frame(self.scheme, self.controller, d=d, na=na,
                           events=[(e.terminal, e.direction, e.acts) for e in self.events],
                           t_eval=self.t_eval is not None, real=self.real, exact=self.exact,
                           outline=(ops > OUTLINE_OPS, ops > OUTLINE_OPS_GPU),
                           atol_each=bool(np.ndim(self.values.get("atol", 0))),
                           max_step=self.values.get("max_step", math.inf) < math.inf, max_events=self.max_events,
                           callbacks=[c.m for c in self.callbacks], cb_base=na_user, summary=self.summary)
        header = (f"/* {self.what}: {self.scheme.name}{', ' + self.controller.name + ' controller' if self.controller else ', fixed steps'}, "
                  f"{self.dtype.name}, d = {d}, {na} argument(s), {len(self.events)} event(s)"
                  f"{f', {len(self.callbacks)} callback(s)' if self.callbacks else ''}"
                  f"{', summaries' if self.summary is not None else ''}"
                  f"{', t_eval' if self.t_eval is not None else ''}.\n"
                  f" * {'; '.join(f'{w}: {r.label}' for (w, _, _), r in zip(self.fns, fns))}.\n"
                  f" * Generated by eagle/ode/_frame.py; compiled for every kind; run-time values in P and Q. */")
        funcs = [r.text for r in fns] + ([self.summary.g_rhs.text] if self.summary is not None and self.summary.g_rhs else [])
        self.source = self.frame.source("\n\n".join(funcs), header)
        self.d, self.na, self.widths = d, na, widths

    def module(self, b):
        key = (b.path, self.source, self.exact, self.fast_math)
        with _MODULES_LOCK:
            mod = _MODULES.get(key)
            if mod is None:
                p = self.scheme.prefix
                mod = b.compile(self.source.encode(), name=f"eagle_{p}.c", fast_math=self.fast_math,
                                kernels=[f"{p}_init", f"{p}_step_drain"], exact=self.exact)
                _MODULES[key] = mod
                compiles[0] += 1
        return mod

    def compile(self, backend=None):
        if self.source is None:
            raise EagleValueError(f"{self.what}: pass n_state= and n_args= to the solver (or solve once) before "
                                  f"compile()")
        return self.module(backend_of(backend, None, self.what))

    # -- inputs -----------------------------------------------------------------------------------
    def samples(self, y0, args, t0, t1, n_paths, rows=None):
        """N and the inputs normalised: y0 (an array), args (tuple), t0 and t1. ``rows`` (first,
        count): this solve is that share of the samples (a rank's, distributed): per-sample
        callback times are sliced to it."""
        y0 = _check.y0_of(y0)
        args = _check.args_of(args)
        shape = tuple(y0.shape)
        self.shape(self.d or shape[-1], self.widths if self.widths is not None else
                   _check.widths_of(args))
        d = self.d
        if shape[-1] != d:
            raise EagleValueError(f"{self.what}: y0 must have shape (N, {d}) or ({d},) for this {d}-component state, "
                                  f"got {shape}")
        if len(args) != len(self.widths):
            raise EagleValueError(f"{self.what}: {self.fns[0][0]} takes {len(self.widths)} argument(s) after (t, y), "
                                  f"got {len(args)} in args")
        if not on_device(y0):  # a device-resident y0 is not copied to the host to be checked
            _check.finite(y0, self.what, "y0")
        ns = {"y0": shape[0]} if len(shape) == 2 else {}
        if n_paths is not None:
            if isinstance(n_paths, bool) or not isinstance(n_paths, int):
                raise EagleTypeError(f"{self.what}: n_paths must be an int, got a {type(n_paths).__name__}")
            ns["n_paths"] = n_paths
        out = []
        for k, (a, w) in enumerate(zip(args, self.widths)):
            if on_device(a):  # stays where it is: copied device to device into the input plane
                if len(a.shape) != 1 or w:
                    raise EagleValueError(f"{self.what}: args[{k}] on the device must be an (N,) array of numbers "
                                          f"(pass a per-sample vector argument as a host (N, k) array), got shape "
                                          f"{tuple(a.shape)}")
                if np.dtype(a.dtype) != self.dtype:
                    raise EagleTypeError(f"{self.what}: args[{k}] lives on the device as {np.dtype(a.dtype)}; the "
                                         f"solve is {self.dtype}: convert it there (or pass a host array)")
                ns[f"args[{k}]"] = a.shape[0]
                out.append(a)
                continue
            if hasattr(a, "__dlpack_device__") and not isinstance(a, np.ndarray):
                a = np.from_dlpack(a)
            try:
                a = np.asarray(a)
            except (ValueError, TypeError) as e:
                raise EagleValueError(f"{self.what}: args[{k}] is not an array of numbers: {e}") from None
            if a.dtype.kind not in "fiub":
                raise EagleTypeError(f"{self.what}: args[{k}] must be a number or an (N,) array of numbers, got dtype "
                                     f"{a.dtype}")
            if not w and a.ndim > 1:
                raise EagleValueError(f"{self.what}: args[{k}] must be a number or an (N,) array, got shape {a.shape}")
            if w and not (a.ndim == 2 and a.shape[1] == w):
                raise EagleValueError(f"{self.what}: args[{k}] is a vector of {w} a sample: pass an (N, {w}) array "
                                      f"(or (1, {w}), one for every sample), got shape {a.shape}")
            _check.finite(a, self.what, f"args[{k}]")
            if w and a.shape[0] == 1:
                a = a[0]  # one vector for every sample
            elif a.ndim == (2 if w else 1):
                ns[f"args[{k}]"] = a.shape[0]
            out.append(a)
        for name, t in (("t_span's t0", t0), ("t_span's t1", t1)):
            if np.ndim(t):
                ns[name] = len(t)
        for k, c in enumerate(self.callbacks):  # the times: a vector argument, (N, m) or (m,) shared
            tt = c.times
            if tt.ndim == 2:
                tt = tt if rows is None else tt[rows[0]:rows[0] + rows[1]]
                ns[f"callbacks[{k}].times"] = tt.shape[0]
            out.append(tt)
        n = _check.agreed_n(ns, self.what, "paths" if n_paths is not None or self.scheme.random else "samples")
        if self.callbacks and rows is None:
            _acts.check_times(self.callbacks, t0, t1, n)
        return n, y0, out

    # -- the run ----------------------------------------------------------------------------------
    def planes(self, b, n):
        key = (b.path, n)
        run = self._runs.get(key)
        if run is not None:
            return run
        mod = self.module(b)
        w, irow, nw, ni = self.frame.rows
        dt, d, na, ne = self.dtype, self.d, self.na, len(self.events)
        nt = 0 if self.t_eval is None else self.t_eval.size
        try:
            r = {"W": b.empty((nw, n), dt), "I": b.zeros((ni, n), "int32"), "M": b.zeros(n, "uint8"),
                 "IN": b.zeros((2 + na, n), dt), "P": b.zeros(P_ATOL + 2 * d + 2 + na, dt),
                 "Q": b.zeros(Q_SHARED + 3 + na, "uint32"), "Y0": b.empty((n, d), dt),
                 "TE": b.asarray(self.t_eval.astype(dt)) if nt else b.zeros(1, dt),
                 "YS": b.empty((n, d, nt), dt) if nt else b.zeros(1, dt),
                 "EVT": b.empty((ne * (self.max_events or 1), n), dt) if ne else b.zeros(1, dt),
                 "EVY": b.empty((ne, d, n), dt) if ne else b.zeros(1, dt), "DONE": b.zeros(1, "uint32")}
            extra = list(getattr(self.scheme, "planes", ()))  # the scheme's own planes (SCHEMES.md)
            for name, rows in extra:
                r[name] = b.empty((rows, n), dt)
        except EagleMemoryError as e:
            extra = list(getattr(self.scheme, "planes", ()))
            need = (nw + 2 + na + d + d * nt + ne * (d + 1) + sum(rows for _, rows in extra)) * n * dt.itemsize
            raise EagleMemoryError(f"{self.what}: a solve of N = {n} samples needs about {need / 2**30:.2f} GiB on "
                                   f"{b.kind} (the state and work planes{f', {nt} t_eval points x {d} components a sample' if nt else ''}"
                                   f"{''.join(f', {name}: {rows} numbers a sample' for name, rows in extra)}); "
                                   f"it does not fit: solve fewer samples at a time ({e})") from None
        spc = self.steps_per_call or self.scheme_steps_per_call(b)
        fixed = self.controller is None
        top = self.values["max_steps"]
        if fixed:
            top = min(top, math.ceil(float(np.max(np.asarray(self.t1) - np.asarray(self.t0))) / self.values["dt"]) + 1)
        p = self.scheme.prefix
        r.update(spc=spc, rounds=-(-top // spc) + 2, init=getattr(mod, f"{p}_init"), step=getattr(mod, f"{p}_step_drain"),
                 planes=[r[k] for k in ("W", "I", "M", "IN", "P", "Q", "TE", "YS", "EVT", "EVY", "DONE")] +
                 [r[name] for name, _ in extra],
                 workers=self.workers or self.default_workers(b, n), threads={}, last=None, sent=None,
                 view=View(self, n, self.source), hp=np.zeros(P_ATOL + 2 * d + 2 + na, dt),
                 hq=np.zeros(Q_SHARED + 3 + na, np.uint32))
        self._runs[key] = r
        return r

    def lane(self, r, b, n):
        """The calling thread's stream, ActiveSet and graph over the planes ``r`` (streams are
        thread-affine: a Solver serves any thread, one at a time under its lock)."""
        mine = r["threads"].get(threading.get_ident())
        if mine is None:
            stream = b.stream()
            aset = eagle.ActiveSet(r["M"], backend=b, stream=stream)
            init, step, planes, rounds, workers = r["init"], r["step"], r["planes"], r["rounds"], r["workers"]
            graph = eagle.Graph.build([lambda s: s.run(init, [*planes, r["Y0"]], n),
                                       lambda s: aset.drain(s, step, planes, rounds, compacted=False, workers=workers)],
                                      planes=[r["W"], r["I"], r["M"]], stream=stream, toggle=False)
            mine = r["threads"][threading.get_ident()] = (stream, graph, aset)
        return mine

    def scheme_steps_per_call(self, b):
        """Steps a sample takes per call of the drained body. Fixed steps: all of them (every sample
        takes the same number). Adaptive: on a GPU few, since a lane whose sample ends mid-call
        idles until its warp's call ends; on a kind whose lanes run one at a time, many."""
        if self.controller is None:
            steps = math.ceil(float(np.max(np.asarray(self.t1) - np.asarray(self.t0))) / self.values["dt"]) + 1
            return int(max(1, min(steps, self.values["max_steps"], 1 << 20)))
        return 16 if b.device_props(0).warp_size > 1 else 256

    def default_workers(self, b, n):
        """Lanes of the drained step: on a GPU as many as can be resident (2048 a multiprocessor;
        the drain's dynamic claiming balances the samples over them), else one a sample."""
        props = b.device_props(0)
        if props.warp_size > 1:
            return max(1, min(n, int(props.sm_count) * 2048))
        return max(1, n)

    def solve(self, y0, args=(), *, progress=None, seed=None, n_paths=None, span=None, distributed=None, first=0,
              rows=None):
        """Integrate every sample; returns the scheme's solution (see Solver.solve)."""
        if distributed is not None and distributed is not False:
            from ._distributed import solve_over_ranks
            return solve_over_ranks(self, y0, _check.args_of(args), distributed,
                                    backend_of(self.backend_arg, _check.y0_of(y0), self.what), seed=seed,
                                    n_paths=n_paths)
        t0, t1 = span if span is not None else (self.t0, self.t1)
        seed = self.seed if seed is None else _check.seed_of(seed)
        with self._lock:
            b = backend_of(self.backend_arg, y0, self.what)
            n, y0, args = self.samples(y0, args, t0, t1, n_paths, rows)
            r = self.planes(b, n)
            s, graph, _ = self.lane(r, b, n)
            last = r["last"] and r["last"]()
            if last is not None:  # a solution still reads these planes: it gets copies of its own
                last._detach(b, s)
            self.inputs(r, s, n, y0, args, t0, t1, seed, first)
            graph.launch()
            progress = self.progress if progress is None else progress
            with _progress.Progress(b, r["DONE"], n, enabled=progress is not False, label=self.what,
                                    times=(r["W"], r["view"].rows[0]["T"], float(np.max(t1)))):
                graph.synchronize()
            sol = self.scheme.solution(r["view"], r["W"], r["I"], r["YS"] if self.t_eval is not None else None,
                                       r["EVT"] if self.events else None, r["EVY"] if self.events else None)
            sol._t0 = t0  # the solve's start time(s): a summary's mean is over each sample's own span
            r["last"] = weakref.ref(sol)
            return sol

    def inputs(self, r, s, n, y0, args, t0, t1, seed, first):
        """The solve's values into P and Q (one copy each) and its per-sample inputs into Y0 and
        IN, in place (from the caller's array itself where it has the solve's dtype and layout)."""
        dt, d, isz = self.dtype, self.d, self.dtype.itemsize
        hp, hq, v = r["hp"], r["hq"], self.values
        hp[P_RTOL], hp[P_DT] = v.get("rtol", 1.0), v.get("dt") or 0.0
        hp[P_FIRST], hp[P_MAX_STEP] = v.get("first_step") or 0.0, min(v.get("max_step", math.inf), np.finfo(dt).max)
        hp[P_ATOL:P_ATOL + d] = v.get("atol", 0.0)
        hq[Q_MAX_STEPS], hq[Q_SPC], hq[Q_NT] = v["max_steps"], r["spc"], 0 if self.t_eval is None else self.t_eval.size
        hq[Q_SEED_LO], hq[Q_SEED_HI], hq[Q_FIRST] = seed & 0xFFFFFFFF, seed >> 32, first
        base = P_ATOL + d
        shared = hq[Q_SHARED:]
        items, slot = [(0, t0, 0), (1, t1, 0)], 2
        for a, w in zip(args, self.widths + tuple(c.m for c in self.callbacks)):
            items.append((slot, a, w))
            slot += max(w, 1)
        for row, x, w in items:
            flags = shared[row + 1:row + 1 + max(w, 1)]  # Q's flags: y0, then IN's rows
            flags[:] = 0
            if on_device(x):
                wait_for_producer(x, s)
                s.copy(r["IN"].address + row * n * isz, x, n * isz, direction="d2d")
            elif np.ndim(x) == (1 if w else 0):
                flags[:] = 1
                hp[base + row:base + row + max(w, 1)] = x
            elif w:  # (N, k): k rows of IN
                self.copy_in(s, r["IN"].address + row * n * isz, np.asarray(x).T, n * w)
            else:
                self.copy_in(s, r["IN"].address + row * n * isz, x, n)
        if on_device(y0):
            if tuple(y0.shape) != (n, d) or np.dtype(y0.dtype) != dt:
                raise EagleValueError(f"{self.what}: y0 lives on the device with shape {tuple(y0.shape)} of "
                                      f"{np.dtype(y0.dtype)}; on the device it must be ({n}, {d}) of {dt} (or pass a "
                                      f"host array, which is broadcast and converted)")
            shared[0] = 0
            wait_for_producer(y0, s)
            s.copy(r["Y0"].address, y0, n * d * isz, direction="d2d")
        elif y0.ndim == 1:
            shared[0] = 1
            hp[base + 2 + self.na:base + 2 + self.na + d] = y0
        else:
            shared[0] = 0
            self.copy_in(s, r["Y0"].address, y0, n * d)
        sent = hp.tobytes() + hq.tobytes()
        if sent != r["sent"]:
            s.copy(r["P"], hp)  # the values changed (or never went): P and Q are only read by the kernels
            s.copy(r["Q"], hq)
            r["sent"] = sent

    def copy_in(self, s, dst, x, count):
        """Host values ``x`` (count of them, any real dtype and layout) to the device address dst."""
        if not (isinstance(x, np.ndarray) and x.dtype == self.dtype and x.flags.c_contiguous):
            x = np.ascontiguousarray(x, dtype=self.dtype)
        s.copy(dst, x, count * self.dtype.itemsize, direction="h2d")

    @property
    def n(self):
        return max((k[1] for k in self._runs), default=0)


class Front:
    """What every solver front (Solver, SdeSolver) shows of its run (``self._run``)."""

    @property
    def source(self):
        """The generated C (the same for every backend)."""
        return self._run.source

    @property
    def n_state(self):
        return self._run.d

    @property
    def n_args(self):
        return None if self._run.widths is None else len(self._run.widths)

    @property
    def n(self):
        return self._run.n

    def compile(self, backend=None):
        """Compile for ``backend`` (a kind or eagle.Backend; default: the host's kind) now; returns
        the module. Needs n_state and n_args (given to the constructor, or known from a solve)."""
        return self._run.compile(backend)
