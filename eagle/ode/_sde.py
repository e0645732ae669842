"""Ensembles of stochastic differential equations, dy = a(t, y) dt + b(t, y) dW, one path per lane,
on the same machinery as eagle.ode's fixed-step solves: :class:`SdeSolver` (compile once, solve
again and again) and :func:`solve_sde` (one call).

Noise is diagonal: ``diffusion`` returns d values b_k(t, y) and component k is driven by its own
Brownian motion W_k, independent of the others (Kloeden & Platen's diagonal noise, b_k depending
on y through y_k alone where Milstein's order 1 is wanted). The increments are
dW_k = sqrt(h) z_k with z_k the standard normals of <eagle/random.h> (Philox4x32-10, Box-Muller),
keyed by (seed, sample, draw). A path's normals are one stream, step s taking its numbers
s d .. s d + d - 1, number m being number m % 2 of block (draw) m / 2 of eagle_rng_normal2 in
float64, number m % 4 of block m / 4 of eagle_rng_normal4f in float32 (every normal drawn is used:
a one-component path draws a block every second step). So a path's numbers depend on neither the
lane that runs it, nor the launch, nor the kind.

Methods (fixed steps h = dt; the last step is shortened to land on t1):
  EulerMaruyama  y + a h + b dW                                   strong order 1/2, weak order 1
  Milstein       the derivative-free (Runge-Kutta) Milstein scheme of Kloeden & Platen (1992),
                 eq. 11.1.5: y + a h + b dW + (b(t, ybar) - b(t, y)) (dW^2 - h) / (2 sqrt(h)),
                 ybar = y + a h + b sqrt(h): strong order 1, weak order 1, one more diffusion
                 evaluation a step and no derivative of b.

Events g(t, y) are watched at the step ends only (discrete monitoring, the convention of a barrier
watched once a step): g changing sign between two step ends (scipy's direction rule) is a crossing
at the later step end, reported at that time with the state there; no interpolation. A terminal
event stops the path there (status 1) and the drain gives its lane the next path.

t_eval points must lie on the step grid (t0 + k dt, to 1e-9 of dt, or t1 itself); the state after
step k is stored for them.

The device code is generated here (one C source for every kind, including <eagle/kernel.h> and
<eagle/random.h>); drift, diffusion and the events are traced by eagle/ode/_rhs.py as ``fun`` is.
The kernels (planes component-major, sample i at column i, n the run's samples):

  sde_init(W, I, M, A, TE, YS, EVT, EVY, DONE, KEY, Y0)   every sample: y0, outputs at t0, g(t0, y0)
  sde_step(W, I, M, A, TE, YS, EVT, EVY, DONE, KEY)       up to SDE_STEPS_PER_CALL steps of sample i,
                                                            launched as sde_step_drain until M[i] != 0
  W (SDE_NW, n) reals: t, y (d), the events' last g, [the Brownian path's W_t - W_t0 (d)]
  I (SDE_NI, n) int32: status, steps taken, [next t_eval index], [each event's count]
  TE (SDE_NT,) int32: the step index of each t_eval point; YS (n, d, SDE_NT) reals: the states there
  KEY (3 + SDE_NA,) uint32, written by the host before each solve: the seed's low and high words;
      then 1 where y0 is shared by every path (Y0's first row holds it) and, for each argument, 1
      where it is one number for every path (A's row k holds it first): a shared value costs one
      copy to the device, not N
"""
import math
import numbers
import threading
import weakref

import numpy as np

import eagle
from ..errors import EagleMemoryError, EagleTypeError, EagleValueError
from . import _progress, _rhs
from ._codegen import DONE, EVENT, FAIL_MAX_STEPS, FAIL_NONFINITE, RUNNING, RUNTIME, lit
from ._solution import OdeSolution
from ._solver import _DTYPES, _events, _on_device, _positive, _real_of, agreed_n, initial_states, sample_args

#: name -> (description, strong order, weak order, diffusion evaluations a step)
SDE_METHODS = {
    "EulerMaruyama": ("Euler-Maruyama", 0.5, 1.0, 1),
    "Milstein": ("derivative-free Milstein (Kloeden-Platen 11.1.5)", 1.0, 1.0, 2),
}
NOISES = ("diagonal",)


class SdeMethod:
    def __init__(self, name):
        self.name = name
        self.description, self.strong_order, self.weak_order, self.diffusion_evals = SDE_METHODS[name]


def sde_rows(d, ne, nt, noise_out):
    """The row layout of W and I: (W rows, I rows, NW, NI), each a dict name -> first row."""
    w, r = {}, 0
    for name, size in (("T", 1), ("Y", d), ("G", ne), ("WN", d if noise_out else 0)):
        if size:
            w[name] = r
            r += size
    i, q = {}, 0
    for name, size in (("STATUS", 1), ("NACC", 1), ("NEXT", 1 if nt else 0), ("NEV", ne)):
        if size:
            i[name] = q
            q += size
    return w, i, r, q


class SdeSolution(OdeSolution):
    """Per-path results of :func:`eagle.ode.solve_sde` (N paths, d components): the fields of
    :class:`OdeSolution` (``t``, ``y``, ``status``, ``failure``, ``ys``, ``t_events``,
    ``y_events``, ``n_events``, ``source``) and

    n_steps : (N,) int, the steps each path took (fewer than the grid's where it stopped)
    nfev : (N,) int, drift and diffusion evaluations (n_steps x (1 + the method's diffusion calls))
    noise : (N, d), W_t - W_t0 of each path's Brownian motion at its end (``return_noise=True``)
    """

    def __init__(self, solver, W, I, YS, EVT, EVY):
        super().__init__(solver, W, I, YS, EVT, EVY)

    @property
    def n_steps(self):
        return self._irow("NACC").copy()

    n_accepted = n_steps

    @property
    def nfev(self):
        return self.n_steps * (1 + self._solver.method.diffusion_evals)

    @property
    def n_rejected(self):
        return np.zeros_like(self.n_steps)

    @property
    def noise(self):
        if not self._solver.return_noise:
            return None
        w, _, _, _ = self._rows()
        d = self._solver.n_state
        return np.ascontiguousarray(self._host("W", self._W)[w["WN"]:w["WN"] + d].T)

    def __repr__(self):
        s = self.status
        return (f"<eagle.ode.SdeSolution {self.method}: {s.size} paths, {int((s == 0).sum())} reached t1, "
                f"{int((s == 1).sum())} stopped by an event, {int((s < 0).sum())} failed>")


def _seed(seed):
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**64:
        raise EagleValueError(f"eagle.ode.solve_sde: seed must be an int in 0..2**64-1, got {seed!r}")
    return int(seed)


class SdeSolver:
    """An SDE ensemble solver compiled once and solved again and again (new y0, args or seed;
    same drift, diffusion, method, grid and outputs). See :func:`solve_sde` for the parameters;
    ``n_state`` and ``n_args`` say what drift and diffusion take (else they are learnt from the
    first solve's y0 and args).

    Attributes: ``source`` (the generated C), ``method``, ``t_eval``, ``events``, ``n_steps``
    (the grid's steps)."""

    def __init__(self, drift, diffusion, *, t_span, dt=None, n_state=None, n_args=None, method="EulerMaruyama",
                 noise="diagonal", seed=0, t_eval=None, events=None, dtype="float64", backend=None, exact=False,
                 progress=None, return_noise=False, steps_per_call=None, workers=None):
        for what, f in (("drift", drift), ("diffusion", diffusion)):
            if not (callable(f) or isinstance(f, _rhs.C)):
                raise EagleTypeError(f"eagle.ode.solve_sde: {what} must be a callable {what}(t, y, *args) or "
                                     f"eagle.ode.C(...), got a {type(f).__name__}")
        if not isinstance(method, str) or method not in SDE_METHODS:
            raise EagleValueError(f"eagle.ode.solve_sde: method must be one of {', '.join(SDE_METHODS)}, got "
                                  f"{method!r}")
        if not isinstance(noise, str) or noise not in NOISES:
            raise EagleValueError(f"eagle.ode.solve_sde: noise must be 'diagonal' (diffusion returns d values, "
                                  f"component k driven by its own W_k), got {noise!r}")
        if dt is None:
            raise EagleValueError("eagle.ode.solve_sde: dt= (the fixed step) is required: the SDE methods take "
                                  "fixed steps")
        self.method = SdeMethod(method)
        self.dt = _positive(dt, "dt")
        self._drift, self._diffusion = drift, diffusion
        self.dtype = _real_of(dtype)
        self.real = _DTYPES[self.dtype.name]
        self.seed = _seed(seed)
        self.t0, self.t1 = self._span(t_span)
        self.n_steps = math.ceil((self.t1 - self.t0) / self.dt - 1e-9)
        if self.n_steps >= 2**31 - 1:
            raise EagleValueError(f"eagle.ode.solve_sde: dt = {self.dt} over t_span ({self.t0}, {self.t1}) is "
                                  f"{self.n_steps} steps, more than a path may take (2**31 - 2)")
        self.t_eval, self._te_steps = self._t_eval(t_eval)
        self.events = _events(events)
        self.exact = bool(exact)
        self.progress = progress
        self.return_noise = bool(return_noise)
        self.steps_per_call = steps_per_call
        self.workers = workers
        self._backend_arg = backend
        self._compiled = {}
        self._runs = {}
        self._lock = threading.Lock()
        self.n_state = self.n_args = None
        self._shape(n_state, n_args)

    # -- inputs -----------------------------------------------------------------------------------
    def _span(self, t_span):
        if not isinstance(t_span, (tuple, list)) or len(t_span) != 2:
            raise EagleValueError(f"eagle.ode.solve_sde: t_span must be (t0, t1), got {t_span!r}")
        t0, t1 = t_span
        for name, v in (("t0", t0), ("t1", t1)):
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
                raise EagleValueError(f"eagle.ode.solve_sde: t_span's {name} must be a finite number (one t1 for "
                                      f"every path), got {v!r}")
        if not t1 > t0:
            raise EagleValueError(f"eagle.ode.solve_sde: t_span = ({t0}, {t1}) is empty or backwards: t1 must be "
                                  f"greater than t0")
        return float(t0), float(t1)

    def _t_eval(self, t_eval):
        """t_eval as floats and the step after which each point is reached (on the grid, or t1)."""
        if t_eval is None:
            return None, None
        te = np.asarray(t_eval)
        if te.ndim != 1 or te.dtype.kind not in "fiu" or te.size == 0:
            raise EagleValueError(f"eagle.ode.solve_sde: t_eval must be a non-empty 1-d array of times, got shape "
                                  f"{te.shape} of {te.dtype}")
        te = te.astype(np.float64)
        if not np.all(np.isfinite(te)) or te[0] < self.t0 or te[-1] > self.t1:
            raise EagleValueError(f"eagle.ode.solve_sde: t_eval must lie within t_span [{self.t0}, {self.t1}], "
                                  f"got [{te.min()}, {te.max()}]")
        if np.any(np.diff(te) <= 0):
            raise EagleValueError("eagle.ode.solve_sde: t_eval must be strictly increasing")
        k = np.rint((te - self.t0) / self.dt)
        on_grid = np.abs(self.t0 + k * self.dt - te) <= 1e-9 * self.dt
        at_end = te == self.t1
        bad = ~(on_grid | at_end)
        if np.any(bad):
            j = int(np.argmax(bad))
            raise EagleValueError(f"eagle.ode.solve_sde: t_eval[{j}] = {te[j]} is not on the step grid t0 + k dt "
                                  f"(t0 = {self.t0}, dt = {self.dt}) nor t1: the SDE methods store the state at "
                                  f"step ends only")
        k = np.where(at_end, self.n_steps, np.minimum(k, self.n_steps)).astype(np.int32)
        return te, k

    def _shape(self, n_state, n_args):
        if n_state is None or n_args is None:
            return
        if isinstance(n_state, bool) or not isinstance(n_state, numbers.Integral) or n_state < 1:
            raise EagleValueError(f"eagle.ode.solve_sde: the state must have at least one component, got "
                                  f"n_state={n_state!r}")
        if isinstance(n_args, bool) or not isinstance(n_args, numbers.Integral) or not 0 <= n_args <= 64:
            raise EagleValueError(f"eagle.ode.solve_sde: n_args must be an int in 0..64, got {n_args!r}")
        if self.n_state is not None:
            if (self.n_state, self.n_args) != (n_state, n_args):
                raise EagleValueError(f"eagle.ode.SdeSolver: built for {self.n_state} component(s) and "
                                      f"{self.n_args} argument(s); got y0 of {n_state} and {n_args} argument(s)")
            return
        d, na = int(n_state), int(n_args)
        drift = _rhs.build(self._drift, "sde_user_a", d, na, self.real, n_out=d, what="drift")
        diffusion = _rhs.build(self._diffusion, "sde_user_b", d, na, self.real, n_out=d, what="diffusion")
        for what, r in (("drift", drift), ("diffusion", diffusion)):
            if r.n_out != d:  # a C function cannot say; a traced one is checked by the tracer
                raise EagleValueError(f"eagle.ode.solve_sde: {what} returns {r.n_out} values, the state has {d}")
        self._fns = [drift, diffusion] + [_rhs.build(g, f"ode_g{k}", d, na, self.real, n_out=1, what=f"events[{k}]")
                                          for k, (g, _, _) in enumerate(self.events)]
        self.n_state, self.n_args = d, na
        self.source = self._source(self._steps_per_call())

    def _steps_per_call(self):
        spc = self.steps_per_call or min(self.n_steps, 1 << 20)
        if isinstance(spc, bool) or not isinstance(spc, numbers.Integral) or spc < 1:
            raise EagleValueError(f"eagle.ode.solve_sde: steps_per_call must be an int >= 1, got {spc!r}")
        return int(spc)

    @property
    def _rows(self):
        return sde_rows(self.n_state, len(self.events), 0 if self.t_eval is None else self.t_eval.size,
                        self.return_noise)

    # -- code -------------------------------------------------------------------------------------
    def _source(self, spc):
        d = self.n_state
        header = (f"/* eagle.ode.solve_sde: {self.method.name} ({self.method.description}), diagonal noise, "
                  f"{self.dtype.name}, d = {d}, {self.n_args} argument(s), {len(self.events)} event(s), "
                  f"{0 if self.t_eval is None else self.t_eval.size} t_eval point(s), {self.n_steps} steps of "
                  f"{self.dt!r}.\n * drift: {self._fns[0].label}; diffusion: {self._fns[1].label}.\n"
                  f" * Generated by eagle/ode/_sde.py; compiled for every kind. */")
        return _SdeGen(self, spc).source("\n\n".join(r.text for r in self._fns), header)

    def _backend(self, y0):
        b = self._backend_arg
        if b is None:
            b = eagle.kind_of_array(y0) if _on_device(y0) else "cpu"
        return eagle.backend(b) if isinstance(b, str) else b

    def compile(self, backend=None):
        """Compile for ``backend`` (default: cpu) now; returns the module. Needs n_state and n_args."""
        if self.n_state is None:
            raise EagleValueError("eagle.ode.SdeSolver.compile: pass n_state= and n_args= to the SdeSolver "
                                  "(or solve once)")
        b = eagle.backend(backend or "cpu") if not hasattr(backend, "compile") else backend
        return self._module(b)

    def _module(self, b):
        mod = self._compiled.get(b.path)
        if mod is None:
            mod = self._compiled[b.path] = b.compile(self.source.encode(), name="eagle_sde.c", exact=self.exact,
                                                     kernels=["sde_init", "sde_step_drain"])
        return mod

    def _workers(self, b, n):
        if self.workers is not None:
            return self.workers
        props = b.device_props(0)
        if props.warp_size > 1:
            return max(1, min(n, int(props.sm_count) * 2048))
        return max(1, n)

    def _samples(self, y0, args, n_paths=None):
        if isinstance(y0, (list, tuple)) or isinstance(y0, numbers.Number):
            y0 = np.asarray(y0)
        if not hasattr(y0, "shape") or not hasattr(y0, "dtype"):
            raise EagleTypeError(f"eagle.ode.solve_sde: y0 must be an array of shape (N, d) or (d,), got a "
                                 f"{type(y0).__name__}")
        if np.dtype(y0.dtype).kind not in "fiu":
            raise EagleTypeError(f"eagle.ode.solve_sde: y0 must hold real numbers, got dtype {y0.dtype}")
        if not isinstance(args, (tuple, list)):
            args = (args,)
        shape = tuple(y0.shape)
        if len(shape) in (1, 2) and shape[-1] >= 1:
            self._shape(self.n_state or shape[-1], len(args) if self.n_args is None else self.n_args)
        d = self.n_state
        if len(shape) not in (1, 2) or d is None or shape[-1] != d:
            raise EagleValueError(f"eagle.ode.solve_sde: y0 must have shape (N, {d}) or ({d},), got {shape}")
        if len(args) != self.n_args:
            raise EagleValueError(f"eagle.ode.solve_sde: drift and diffusion take {self.n_args} argument(s) after "
                                  f"(t, y), got {len(args)} in args")
        ns = {"y0": shape[0]} if len(shape) == 2 else {}
        if n_paths is not None:
            if isinstance(n_paths, bool) or not isinstance(n_paths, numbers.Integral):
                raise EagleTypeError(f"eagle.ode.solve_sde: n_paths must be an int, got a {type(n_paths).__name__}")
            ns["n_paths"] = int(n_paths)
        host = sample_args(args, self.dtype, ns, "eagle.ode.solve_sde")
        n = agreed_n(ns, "eagle.ode.solve_sde", "paths")
        return n, y0, host

    def _run(self, b, n):
        key = (b.path, n)
        run = self._runs.get(key)
        if run is not None:
            return run
        mod = self._module(b)
        w, irow, nw, ni = self._rows
        dt, d, ne = self.dtype, self.n_state, len(self.events)
        nt = 0 if self.t_eval is None else self.t_eval.size
        try:
            W = b.empty((nw, n), dt)
            I = b.zeros((ni, n), "int32")
            M = b.zeros(n, "uint8")
            A = b.zeros((max(self.n_args, 1), n), dt)
            Y0 = b.empty((n, d), dt)
            TE = b.asarray(self._te_steps) if nt else b.zeros(1, "int32")
            YS = b.empty((n, d, nt), dt) if nt else b.zeros(1, dt)
            EVT = b.empty((ne, n), dt) if ne else b.zeros(1, dt)
            EVY = b.empty((ne, d, n), dt) if ne else b.zeros(1, dt)
            DONE = b.zeros(1, "uint32")
            KEY = b.zeros(3 + self.n_args, "uint32")
        except EagleMemoryError as e:
            need = (nw + max(self.n_args, 1) + d + d * nt) * n * dt.itemsize
            raise EagleMemoryError(f"eagle.ode.solve_sde: N = {n} paths need about {need / 2**30:.2f} GiB on "
                                   f"{b.kind} (state, work planes and {nt} t_eval point(s) a path); solve fewer "
                                   f"paths at a time ({e})") from None
        stream = b.stream()
        aset = eagle.ActiveSet(M, backend=b, stream=stream)
        spc = self._steps_per_call()
        rounds = -(-self.n_steps // spc) + 2
        planes = [W, I, M, A, TE, YS, EVT, EVY, DONE, KEY]
        workers = self._workers(b, n)

        def init(s):
            s.run(mod.sde_init, [*planes, Y0], n)

        def drain(s):
            aset.drain(s, mod.sde_step_drain, planes, rounds, compacted=False, workers=workers)

        run = {"W": W, "I": I, "M": M, "A": A, "Y0": Y0, "YS": YS, "EVT": EVT, "EVY": EVY, "DONE": DONE,
               "KEY": KEY, "stream": stream, "aset": aset, "init": init, "drain": drain, "graph": None}
        self._runs[key] = run
        return run

    def solve(self, y0, args=(), *, seed=None, n_paths=None, progress=None):
        """Integrate every path from ``y0`` ((N, d) or (d,)) with ``args`` (numbers or (N,) arrays)
        under ``seed`` (default: the solver's); ``n_paths`` = N where neither y0 nor args says it
        (a shared y0 and number args: N paths from one start); returns an :class:`SdeSolution`."""
        seed = self.seed if seed is None else _seed(seed)
        with self._lock:
            b = self._backend(y0)
            n, y0, args = self._samples(y0, args, n_paths)
            run = self._run(b, n)
            self._last_n = n
            s = run["stream"]
            dt = self.dtype
            last = run.get("last") and run["last"]()
            if last is not None:
                last._detach(b, s)
            keep = run["keep"] = []
            if _on_device(y0):
                if tuple(y0.shape) != (n, self.n_state) or np.dtype(y0.dtype) != dt:
                    raise EagleValueError(f"eagle.ode.solve_sde: y0 on the device must be ({n}, {self.n_state}) of "
                                          f"{dt}, got {tuple(y0.shape)} of {np.dtype(y0.dtype)}")
                s.copy(run["Y0"].address, y0, n * self.n_state * dt.itemsize, direction="d2d")
            shared = [0] * (1 + self.n_args)  # y0, args[k]: one value for every path
            if not _on_device(y0):
                host = np.asarray(y0, dtype=dt)
                shared[0] = int(host.ndim == 1)
                host = np.ascontiguousarray(host.reshape(-1) if shared[0] else host)
                s.copy(run["Y0"].address, host, host.nbytes, direction="h2d")
                keep.append(host)
            isz = dt.itemsize
            for k, a in enumerate(args):
                dst = run["A"].address + k * n * isz
                if _on_device(a):
                    s.copy(dst, a, n * isz, direction="d2d")
                else:
                    row = np.ascontiguousarray(np.asarray(a, dtype=dt).reshape(-1))
                    shared[1 + k] = int(np.ndim(a) == 0)
                    s.copy(dst, row, row.nbytes, direction="h2d")
                    keep.append(row)
            key = np.array([seed & 0xFFFFFFFF, seed >> 32, *shared], np.uint32)
            s.copy(run["KEY"], key)
            keep.append(key)
            if run["graph"] is None:
                run["graph"] = eagle.Graph.build([run["init"], run["drain"]], planes=[run["W"], run["I"], run["M"]],
                                                 stream=s, toggle=False)
            g = run["graph"]
            g.launch()
            progress = progress if progress is not None else self.progress
            with _progress.Progress(b, run["DONE"], n, enabled=progress is not False, label="eagle.ode.solve_sde"):
                g.synchronize()
            sol = SdeSolution(self, run["W"], run["I"], run["YS"] if self.t_eval is not None else None,
                              run["EVT"] if self.events else None, run["EVY"] if self.events else None)
            run["last"] = weakref.ref(sol)
            return sol

    @property
    def n(self):
        return getattr(self, "_last_n", 0)


class _SdeGen:
    """The C source of one SdeSolver: constants, <eagle/random.h>'s normals, the method's step,
    discrete event monitoring, t_eval storage, the two kernels."""

    def __init__(self, solver, spc):
        self.s = solver
        self.spc = spc
        self.L = lambda x: lit(x, solver.real)

    def source(self, funcs, header):
        sv, L = self.s, self.L
        d, ne = sv.n_state, len(sv.events)
        nt = 0 if sv.t_eval is None else sv.t_eval.size
        w, irow, nw, ni = sv._rows
        f = "f" if sv.real == "float" else ""
        consts = [
            f"#define EAGLE_ODE_REAL {sv.real}\ntypedef {sv.real} ode_real;",
            f"#define D {d}                 /* state components = Brownian motions */",
            f"#define SDE_NA {sv.n_args}\n#define SDE_NE {ne}\n#define SDE_NT {nt}",
            f"#define SDE_NW {nw}\n#define SDE_NI {ni}",
            *(f"#define W_{k} {v}" for k, v in w.items()),
            *(f"#define I_{k} {v}" for k, v in irow.items()),
            f"#define ODE_RUNNING {RUNNING}\n#define ODE_DONE {DONE}\n#define ODE_EVENT {EVENT}",
            f"#define ODE_FAIL_MAX_STEPS {FAIL_MAX_STEPS}\n#define ODE_FAIL_NONFINITE {FAIL_NONFINITE}",
            f"#define SDE_STEPS_PER_CALL {self.spc}",
            f"#define SDE_NSTEP {sv.n_steps}     /* steps from t0 to t1; the last lands on t1 */",
            f"#define SDE_DT {L(sv.dt)}",
            f"#define SDE_SQRT_DT {L(math.sqrt(sv.dt))}",
            f"#define SDE_T0 {L(sv.t0)}\n#define SDE_T1 {L(sv.t1)}",
            f"#define ODE_SQRT sqrt{f}",
            ("#define ODE_INF ((float)3.4028234663852886e38 * 2)" if sv.real == "float"
             else "#define ODE_INF (1.7976931348623157e308 * 2)"),
            "#define ODE_NAN (ODE_INF - ODE_INF)",
        ]
        parts = [header, "#include <eagle/kernel.h>\n#include <eagle/random.h>", "\n".join(consts), RUNTIME, funcs,
                 self.helpers(), self.kernels()]
        return "\n\n".join(p for p in parts if p) + "\n"

    def helpers(self):
        sv = self.s
        if sv.real == "double":
            block, per, gen, pick = "eagle_rng_double2", 2, "eagle_rng_normal2", "(m & 1) ? c->p.y : c->p.x"
        else:
            block, per, gen, pick = ("eagle_rng_float4", 4, "eagle_rng_normal4f",
                                     "(m & 3) == 0 ? c->p.x : (m & 3) == 1 ? c->p.y : (m & 3) == 2 ? c->p.z : c->p.w")
        out = [f"/* The path's normals are one stream: normal m is number m % {per} of Philox block m / {per} "
               f"(<eagle/random.h>'s {gen}),",
               " * and step `step` takes numbers step * D .. step * D + D - 1. The block last drawn is kept, so a",
               f" * path with D < {per} draws one block every {per} / D steps (a call starts with none kept). */",
               f"typedef struct {{ int64_t block; {block} p; }} sde_rng_cache;",
               "EAGLE_FN void sde_normals(const uint64_t seed, const uint64_t sample, const int64_t step,",
               "                          sde_rng_cache* c, ode_real* z)",
               "{",
               "    for (int k = 0; k < D; ++k) {",
               "        const int64_t m = step * D + k;",
               f"        const int64_t blk = m / {per};",
               f"        if (blk != c->block) {{ c->p = {gen}(seed, sample, (uint64_t)blk); c->block = blk; }}",
               f"        z[k] = {pick};",
               "    }",
               "}"]
        out += [
               "/* One step of the method from (t, y) over hh (sq = sqrt(hh)) with the normals z: ynew, and the",
               " * Brownian increments dw = sq z. */",
               "EAGLE_FN void sde_step_one(const ode_real t, const ode_real hh, const ode_real sq, const ode_real* y,",
               "                           const ode_real* z, const ode_real* a, ode_real* ynew, ode_real* dw)",
               "{",
               "    ode_real f[D], g[D];",
               "    sde_user_a(t, y, a, f);",
               "    sde_user_b(t, y, a, g);",
               "    for (int k = 0; k < D; ++k) dw[k] = sq * z[k];"]
        if sv.method.name == "EulerMaruyama":
            out.append("    for (int k = 0; k < D; ++k) ynew[k] = y[k] + f[k] * hh + g[k] * dw[k];")
        else:  # derivative-free Milstein: the difference of b at the supporting value stands for b b' sqrt(h)
            out += ["    ode_real ybar[D], gb[D];",
                    "    for (int k = 0; k < D; ++k) ybar[k] = y[k] + f[k] * hh + g[k] * sq;",
                    "    sde_user_b(t, ybar, a, gb);",
                    f"    const ode_real half_over_sq = {self.L(0.5)} / sq;",
                    "    for (int k = 0; k < D; ++k)",
                    "        ynew[k] = y[k] + f[k] * hh + g[k] * dw[k] + (gb[k] - g[k]) * ((dw[k] * dw[k] - hh) * half_over_sq);"]
        out.append("}")
        if sv.events:
            out += ["/* Every event function's value at (t, y). */",
                    "EAGLE_FN void ode_g_all(const ode_real t, const ode_real* y, const ode_real* a, ode_real* g)",
                    "{",
                    *(f"    ode_g{e}(t, y, a, g + {e});" for e in range(len(sv.events))),
                    "}",
                    "/* Does g go from g0 to g1 in the direction the event watches (scipy's rule)? */",
                    "EAGLE_FN int ode_crosses(const ode_real g0, const ode_real g1, const int dir)",
                    "{",
                    "    const int up = g0 <= 0 && g1 >= 0, down = g0 >= 0 && g1 <= 0;",
                    "    return dir > 0 ? up : dir < 0 ? down : (up || down);",
                    "}"]
        return "\n".join(out)

    def kernels(self):
        sv = self.s
        ne = len(sv.events)
        nt = 0 if sv.t_eval is None else sv.t_eval.size
        w, irow, _, _ = sv._rows
        W_ = lambda name, k="": f"W[(int64_t)({w[name]}{' + ' + k if k else ''}) * n + i]"
        I_ = lambda name, k="": f"I[(int64_t)({irow[name]}{' + ' + k if k else ''}) * n + i]"
        # planes of n samples, and buffers of other lengths (EAGLE_BUFFER: the t_eval indices, the
        # (n, d, T) outputs, the events' rows, the progress word, the key)
        sig = ("(ode_real*, W), (int32_t*, I), (uint8_t*, M), (const ode_real*, A), (EAGLE_BUFFER const int32_t*, TE), "
               "(EAGLE_BUFFER ode_real*, YS), (EAGLE_BUFFER ode_real*, EVT), (EAGLE_BUFFER ode_real*, EVY), "
               "(EAGLE_BUFFER uint32_t*, DONE), (EAGLE_BUFFER const uint32_t*, KEY)")
        load = ["    ode_real a[SDE_NA > 0 ? SDE_NA : 1];",
                "    for (int k = 0; k < SDE_NA; ++k) a[k] = A[(int64_t)k * n + (KEY[3 + k] ? 0 : i)];",
                "    (void)TE; (void)YS; (void)EVT; (void)EVY; (void)KEY; (void)a;"]
        ev = []
        if ne:
            ev = ["    const int ode_terminal[SDE_NE] = {" + ", ".join(str(int(t)) for _, t, _ in sv.events) + "};",
                  "    const int ode_dir[SDE_NE] = {" + ", ".join(str(int(x)) for _, _, x in sv.events) + "};",
                  "    (void)ode_terminal; (void)ode_dir;"]
        init = ["/* Every sample: y0 from Y0 (n, D), the outputs at t0, the events' first values. */",
                f"EAGLE_KERNEL(sde_init, {sig}, (EAGLE_BUFFER const ode_real*, Y0))", "{", *load,
                "    ode_real y[D];",
                "    int ok = 1;",
                "    const int64_t r0 = KEY[2] ? 0 : i;  /* y0 shared by every path, or its own row */",
                "    for (int k = 0; k < D; ++k) { y[k] = Y0[r0 * D + k]; ok = ok && ode_finite(y[k]); }",
                f"    for (int k = 0; k < D; ++k) {W_('Y', 'k')} = y[k];",
                f"    {W_('T')} = SDE_T0;",
                f"    {I_('NACC')} = 0;"]
        if sv.return_noise:
            init.append(f"    for (int k = 0; k < D; ++k) {W_('WN', 'k')} = 0;")
        if nt:
            init += ["    for (int64_t q = 0; q < (int64_t)D * SDE_NT; ++q) YS[(int64_t)i * D * SDE_NT + q] = ODE_NAN;",
                     "    int32_t next = 0;",
                     "    while (next < SDE_NT && TE[next] == 0) {",
                     "        for (int k = 0; k < D; ++k) YS[((int64_t)i * D + k) * SDE_NT + next] = y[k];",
                     "        next += 1;",
                     "    }",
                     f"    {I_('NEXT')} = next;"]
        if ne:
            init += ["    ode_real g[SDE_NE];",
                     "    ode_g_all(SDE_T0, y, a, g);",
                     "    for (int e = 0; e < SDE_NE; ++e) {",
                     f"        {W_('G', 'e')} = g[e];",
                     f"        {I_('NEV', 'e')} = 0;",
                     "        EVT[(int64_t)e * n + i] = ODE_NAN;",
                     "        for (int k = 0; k < D; ++k) EVY[((int64_t)e * D + k) * n + i] = ODE_NAN;",
                     "    }"]
        init += ["    const int32_t status = ok ? ODE_RUNNING : ODE_FAIL_NONFINITE;",
                 f"    {I_('STATUS')} = status;",
                 "    M[i] = status != ODE_RUNNING;",
                 "    if (i == 0) *DONE = 0u;",
                 "}"]
        step = ["/* Up to SDE_STEPS_PER_CALL steps of sample i; M[i] = 1 once it has ended (see I_STATUS). */",
                f"EAGLE_KERNEL(sde_step, {sig})", "{", *load, *ev,
                "    const uint64_t seed = ((uint64_t)KEY[1] << 32) | (uint64_t)KEY[0];",
                f"    ode_real t = {W_('T')};",
                "    ode_real y[D], ynew[D], z[D], dw[D];",
                "    sde_rng_cache rc;",
                "    rc.block = -1;",
                f"    for (int k = 0; k < D; ++k) y[k] = {W_('Y', 'k')};",
                f"    int32_t status = {I_('STATUS')};",
                f"    int32_t nacc = {I_('NACC')};"]
        if sv.return_noise:
            step += ["    ode_real wn[D];", f"    for (int k = 0; k < D; ++k) wn[k] = {W_('WN', 'k')};"]
        if nt:
            step.append(f"    int32_t next = {I_('NEXT')};")
        if ne:
            step += ["    ode_real gold[SDE_NE], gnew[SDE_NE];",
                     "    int32_t nev[SDE_NE];",
                     f"    for (int e = 0; e < SDE_NE; ++e) {{ gold[e] = {W_('G', 'e')}; nev[e] = {I_('NEV', 'e')}; }}"]
        step += ["    int32_t todo = SDE_NSTEP - nacc;",
                 "    if (todo > SDE_STEPS_PER_CALL) todo = SDE_STEPS_PER_CALL;",
                 "    for (int32_t s = 0; s < todo && status == ODE_RUNNING; ++s) {",
                 "        const int last = nacc + 1 == SDE_NSTEP;",
                 "        /* the grid t0 + k dt (no drift of a running sum); the last step ends at t1 exactly */",
                 "        const ode_real tn = last ? SDE_T1 : SDE_T0 + (ode_real)(nacc + 1) * SDE_DT;",
                 "        const ode_real hh = last ? SDE_T1 - t : SDE_DT;",
                 "        const ode_real sq = last ? ODE_SQRT(hh) : SDE_SQRT_DT;",
                 "        sde_normals(seed, (uint64_t)i, nacc, &rc, z);",
                 "        sde_step_one(t, hh, sq, y, z, a, ynew, dw);",
                 "        int ok = 1;",
                 "        for (int k = 0; k < D; ++k) { y[k] = ynew[k]; ok = ok && ode_finite(y[k]); }"]
        if sv.return_noise:
            step.append("        for (int k = 0; k < D; ++k) wn[k] += dw[k];")
        step += ["        t = tn;",
                 "        nacc += 1;",
                 "        if (!ok) { status = ODE_FAIL_NONFINITE; break; }"]
        if nt:
            step += ["        while (next < SDE_NT && TE[next] == nacc) {",
                     "            for (int k = 0; k < D; ++k) YS[((int64_t)i * D + k) * SDE_NT + next] = y[k];",
                     "            next += 1;",
                     "        }"]
        if ne:
            step += ["        ode_g_all(t, y, a, gnew);",
                     "        int stop = 0;",
                     "        for (int e = 0; e < SDE_NE; ++e) {",
                     "            if (ode_crosses(gold[e], gnew[e], ode_dir[e])) {  /* at this step's end: no interpolation */",
                     "                if (nev[e] == 0) {",
                     "                    EVT[(int64_t)e * n + i] = t;",
                     "                    for (int k = 0; k < D; ++k) EVY[((int64_t)e * D + k) * n + i] = y[k];",
                     "                }",
                     "                nev[e] += 1;",
                     "                stop = stop || ode_terminal[e];",
                     "            }",
                     "            gold[e] = gnew[e];",
                     "        }",
                     "        if (stop) status = ODE_EVENT;"]
        step += ["    }",
                 "    (void)dw;",
                 "    if (status == ODE_RUNNING && nacc >= SDE_NSTEP) status = ODE_DONE;",
                 f"    {W_('T')} = t;",
                 f"    for (int k = 0; k < D; ++k) {W_('Y', 'k')} = y[k];",
                 f"    {I_('STATUS')} = status;",
                 f"    {I_('NACC')} = nacc;"]
        if sv.return_noise:
            step.append(f"    for (int k = 0; k < D; ++k) {W_('WN', 'k')} = wn[k];")
        if nt:
            step.append(f"    {I_('NEXT')} = next;")
        if ne:
            step.append(f"    for (int e = 0; e < SDE_NE; ++e) {{ {W_('G', 'e')} = gold[e]; {I_('NEV', 'e')} = nev[e]; }}")
        step += ["    M[i] = status != ODE_RUNNING;",
                 "    if (status != ODE_RUNNING) ode_count_done(DONE);",
                 "}"]
        return "\n".join(init) + "\n\n" + "\n".join(step)


def solve_sde(drift, diffusion, t_span, y0, dt=None, method="EulerMaruyama", noise="diagonal", seed=0, t_eval=None,
              events=None, args=(), backend=None, dtype=None, exact=False, progress=None, *, n_paths=None,
              return_noise=False):
    """Simulate N independent paths of the Ito SDE dy = drift(t, y) dt + diffusion(t, y) dW at once,
    one per lane of the arrays' device, with fixed steps.

    Parameters
    ----------
    drift, diffusion : callable ``f(t, y, *args)`` or :class:`eagle.ode.C`
        ONE path's drift a(t, y) and diffusion b(t, y), each returning d values, traced like
        ``solve_ivp``'s fun. Noise is diagonal: component k moves by b_k dW_k, the W_k independent.
        For Milstein's strong order 1, b_k must depend on y through y_k alone.
    t_span : (t0, t1), shared by every path.
    y0 : array (N, d) or (d,)  (its dtype and where it lives pick precision and backend).
    dt : the step (required, > 0); the last step is shortened to land on t1.
    method : "EulerMaruyama" (strong order 1/2, weak 1) or "Milstein" (derivative-free, strong 1).
    noise : "diagonal" (the only form so far).
    seed : int in 0..2**64-1. Path i's normals are <eagle/random.h>'s for (seed, i, draw); the same
        seed gives the same paths on every lane count and (in exact mode) every kind.
    t_eval : times on the step grid t0 + k dt (or t1), optional: sol.ys (N, d, T) holds the state
        after the step that lands on each (nan after a path stopped).
    events : callables g(t, y, *args) with scipy's ``terminal`` and ``direction``, optional,
        watched at the step ends: a sign change of g between two step ends is reported at the
        later one (``sol.t_events``, ``sol.y_events``: the first crossing per path); a terminal
        event stops the path there (status 1). A barrier: ``g = lambda t, y: y[0] - B``.
    args : numbers or (N,) arrays passed after (t, y).
    backend, dtype, exact, progress : as :func:`eagle.ode.solve_ivp`'s.
    n_paths : N, where y0 is (d,) and every argument a number (else the arrays say it; they must
        agree). A shared y0 and number arguments are sent to the device once, not N times.
    return_noise : keep each path's Brownian motion W_t1 - W_t0 (``sol.noise``, (N, d)), e.g. to
        compare with an exact solution driven by the same path.

    Returns
    -------
    SdeSolution
        ``t``, ``y``, ``status`` (0 reached t1, 1 terminal event, -1 non-finite state), ``failure``,
        ``n_steps``, ``nfev``, ``ys``, ``t_events``, ``y_events``, ``n_events``, ``noise``, ``source``.
    """
    y0, shape, dtype, args = initial_states(y0, dtype, args, "eagle.ode.solve_sde")
    solver = SdeSolver(drift, diffusion, t_span=t_span, dt=dt, n_state=shape[-1], n_args=len(args), method=method,
                       noise=noise, seed=seed, t_eval=t_eval, events=events, dtype=dtype, backend=backend,
                       exact=exact, progress=progress, return_noise=return_noise)
    return solver.solve(y0, args, n_paths=n_paths)
