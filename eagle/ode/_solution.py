"""The result of an ensemble solve: per-sample final states, outcomes and counters, the states at
t_eval and the events' first crossings. The device planes are read back when a field is first
asked for (``sol.y`` ...), so a solve that only feeds another device computation copies nothing."""
import numpy as np

from . import _summary
from ._frame import DONE, EVENT, FAILURES, RUNNING

# keys: the values of sol.status (0, 1, -1) and of sol.failure (the codes 3.. of _codegen.FAILURES)
MESSAGES = {0: "reached t1", 1: "a terminal event stopped the sample", -1: "failed: sol.failure says why",
            **FAILURES}


class OdeSolution:
    """Per-sample results of :func:`eagle.ode.solve_ivp` (N samples, d components).

    Attributes (numpy arrays, read from the device on first use)
    ----------
    t : (N,) the time each sample ended at (t1, an event's time, or where it failed)
    y : (N, d) the state there
    status : (N,) int: 0 reached t1, 1 stopped by a terminal event, -1 failed
    failure : (N,) int: 0, or the failure's code (a key of ``message``)
    message : dict, code -> text, for the values of ``status`` and of ``failure``
    success : bool, every sample reached t1 or a terminal event
    nfev, n_accepted, n_rejected : (N,) int counters
    njev, nlu : (N,) int: the implicit methods' Jacobian evaluations and LU factorizations of
        the iteration matrix per sample (None for the explicit methods)
    t_eval, ys : (T,) and (N, d, T) when t_eval was given (nan where a sample ended earlier)
    t_events, y_events : lists, one per event: (N,) the first crossing's time (nan: none) and
        (N, d) the state there; n_events (N, n_events) the crossings counted; with
        ``max_events=k``, t_events[e] is (N, k): the first k crossings' times (nan padded)
    saved : dict of the ``save=`` summaries, name -> (N, len(components))
    source : the generated C (also ``Solver.source``)
    """

    def __init__(self, view, W, I, YS, EVT, EVY):
        self._view = view  # what the solve was: never the solver's later state
        self._W, self._I, self._YS, self._EVT, self._EVY = W, I, YS, EVT, EVY
        self._cache = {}
        self.source = view.source
        self.method = view.method
        self.t_eval = view.t_eval
        self.message = dict(MESSAGES)
        self.message.update(getattr(view.scheme, "messages", {}))  # an implicit scheme's own wording
        self.jacobian = getattr(view.scheme, "jacobian_kind", None)  # implicit methods: which Jacobian was used

    def _detach(self, backend, stream):
        """Give this solution planes of its own (device-to-device copies, enqueued on ``stream``):
        the solver's next solve overwrites the ones it was reading."""
        for name in ("_W", "_I", "_YS", "_EVT", "_EVY"):
            old = getattr(self, name)
            key = name[1:]
            if old is None or key in self._cache:
                continue
            new = backend.empty(old.shape, old.dtype)
            stream.copy(new, old)
            setattr(self, name, new)

    def _host(self, key, plane):
        v = self._cache.get(key)
        if v is None:
            v = self._cache[key] = plane.numpy()
        return v

    def _rows(self):
        return self._view.rows

    @property
    def t(self):
        w, _, _, _ = self._rows()
        return self._host("W", self._W)[w["T"]].copy()

    @property
    def y(self):
        w, _, _, _ = self._rows()
        d = self._view.n_state
        return np.ascontiguousarray(self._host("W", self._W)[w["Y"]:w["Y"] + d].T)

    def _irow(self, name):
        _, i, _, _ = self._rows()
        return self._host("I", self._I)[i[name]]

    @property
    def status(self):
        s = self._irow("STATUS") & 255
        out = np.full(s.shape, -1, np.int32)
        out[s == DONE] = 0
        out[s == EVENT] = 1
        return out

    @property
    def failure(self):
        s = (self._irow("STATUS") & 255).astype(np.int32)
        out = np.where((s == DONE) | (s == EVENT), 0, s)
        return np.where(s == RUNNING, 6, out)

    @property
    def success(self):
        return bool(np.all(self.status >= 0))

    @property
    def nfev(self):
        return self._irow("NFEV").copy()

    @property
    def n_accepted(self):
        return self._irow("NACC").copy()

    @property
    def n_rejected(self):
        return self._irow("NREJ").copy()

    def _counter(self, name):
        w, _, _, _ = self._rows()
        if name not in w:
            return None
        return self._host("W", self._W)[w[name]].astype(np.int64)

    @property
    def njev(self):
        """(N,) Jacobian evaluations per sample (implicit methods; None otherwise)."""
        return self._counter("NJEV")

    @property
    def nlu(self):
        """(N,) LU factorizations of the iteration matrix per sample (implicit methods; None otherwise)."""
        return self._counter("NLU")

    @property
    def ys(self):
        if self._YS is None:
            return None
        return self._host("YS", self._YS)

    @property
    def n_events(self):
        ne = len(self._view.events)
        _, i, _, _ = self._rows()
        if not ne:
            return np.zeros((self._view.n, 0), np.int32)
        return np.ascontiguousarray(self._host("I", self._I)[i["NEV"]:i["NEV"] + ne].T)

    @property
    def t_events(self):
        ne = len(self._view.events)
        if not ne:
            return []
        ev = self._host("EVT", self._EVT)
        cnt = self.n_events
        k = getattr(self._view, "max_events", None)
        if k is None:
            return [np.where(cnt[:, e] > 0, ev[e], np.nan) for e in range(ne)]
        slot = np.arange(k)[None, :]
        return [np.where(slot < cnt[:, e:e + 1], ev[e * k:(e + 1) * k].T, np.nan) for e in range(ne)]

    @property
    def saved(self):
        """The summaries asked for with ``save=``: name -> (N, len(components)) (``g``: (N, m))."""
        plan = getattr(self._view, "summary", None)
        if plan is None:
            return {}
        got = self._cache.get("saved")
        if got is None:
            t0 = self._t0 if getattr(self, "_t0", None) is not None else 0.0
            got = self._cache["saved"] = _summary.results(plan, self._host("W", self._W), self._rows()[0], t0,
                                                          self.t, self.y)
        return got

    @property
    def y_events(self):
        ne = len(self._view.events)
        if not ne:
            return []
        ev = self._host("EVY", self._EVY)
        cnt = self.n_events
        return [np.where(cnt[:, e:e + 1] > 0, ev[e].T, np.nan) for e in range(ne)]

    def __repr__(self):
        s = self.status
        return (f"<eagle.ode.OdeSolution {self.method}: {s.size} samples, {int((s == 0).sum())} reached t1, "
                f"{int((s == 1).sum())} stopped by an event, {int((s < 0).sum())} failed>")
