"""An ensemble solve over MPI ranks: every rank is given all the samples' inputs, solves its
share ``[base, base + count)`` (eagle.distributed's static partition) on its own device, and the
per-sample results are gathered, in sample order, to every rank. Each sample's computation does
not depend on which rank or lane runs it, so the result equals the one-process solve bit for bit.

Used by ``solve_ivp(..., distributed=True)`` (a Job made here, collectively) or
``Solver.solve(..., distributed=job)``, and the same for solve_sde / SdeSolver.solve (an ``eagle.distributed.Job`` of the caller's over all the
samples)."""
import numpy as np

from ..errors import EagleTypeError, EagleValueError
from ._solution import MESSAGES


def _job(distributed, n, backend):
    import eagle.distributed as ed
    if distributed is True:
        return ed.Job(n, backend=backend)
    if isinstance(distributed, ed.Job):
        if distributed.n_samples != n:
            raise EagleValueError(f"eagle.ode: the Job is over {distributed.n_samples} samples, the solve over {n}")
        return distributed
    raise EagleTypeError(f"eagle.ode: distributed= takes True or an eagle.distributed.Job, got a "
                         f"{type(distributed).__name__}")


def _share(a, job, n):
    """This rank's rows of a per-sample input (first axis N), or the input itself when shared."""
    if isinstance(a, np.ndarray) and a.ndim >= 1 and a.shape[0] == n and n > 1:
        return a[job.base:job.base + job.count]
    return a


def _gather(v, n, comm):
    """Every rank's (count, ...) share of a per-sample field as one (n, ...) array on every rank
    (eagle.distributed gathers planes with the samples on their last axis: flattened to 2-d)."""
    import eagle.distributed as ed
    rest = v.shape[1:]
    width = int(np.prod(rest)) if rest else 0
    plane = np.ascontiguousarray(v.reshape(v.shape[0], width).T) if rest else np.ascontiguousarray(v)
    got = ed.gather(plane, n, comm, root=None)
    return np.ascontiguousarray(got.T).reshape((n,) + rest) if rest else got


def solve_over_ranks(run, y0, args, distributed, backend, seed=None, n_paths=None):
    """The gathered :class:`GatheredSolution` of every rank's share (``run``: eagle/ode/_run.py)."""
    y0h = np.asarray(y0)
    n = y0h.shape[0] if y0h.ndim == 2 else n_paths if n_paths is not None else max(
        [np.shape(a)[0] for a in (run.t0, run.t1, *args) if np.ndim(a) >= 1 and not (np.ndim(a) == 2 and
                                                                                      np.shape(a)[0] == 1)] or [1])
    job = _job(distributed, n, backend)
    mine = None
    if job.count:
        y0s = y0h if y0h.ndim == 1 else y0h[job.base:job.base + job.count]
        span = tuple(_share(np.asarray(t), job, n) if np.ndim(t) else t for t in (run.t0, run.t1))
        if getattr(run, "callbacks", None):
            from ._acts import check_times
            check_times(run.callbacks, run.t0, run.t1, n)  # every sample's times, before the shares
        mine = run.solve(np.ascontiguousarray(y0s), tuple(_share(np.asarray(a), job, n) for a in args), seed=seed,
                         span=span, first=job.base, n_paths=None if n_paths is None else job.count,
                         rows=(job.base, job.count))
    fields = {}
    d = run.d
    empty = {"t": np.zeros(0), "y": np.zeros((0, d)), "status": np.zeros(0, np.int32),
             "failure": np.zeros(0, np.int32), "nfev": np.zeros(0, np.int32), "n_accepted": np.zeros(0, np.int32),
             "n_rejected": np.zeros(0, np.int32)}
    if getattr(run.scheme, "return_noise", False):
        empty["noise"] = np.zeros((0, d))
    for name, zero in empty.items():
        fields[name] = _gather(getattr(mine, name) if mine is not None else zero, n, job.comm)
    if run.t_eval is not None:
        fields["ys"] = _gather(mine.ys if mine is not None else np.zeros((0, d, run.t_eval.size)), n, job.comm)
    ne = len(run.events)
    if ne:
        fields["n_events"] = _gather(mine.n_events if mine is not None else np.zeros((0, ne), np.int32), n, job.comm)
        k = getattr(run, "max_events", None)
        none = np.zeros(0) if k is None else np.zeros((0, k))
        fields["t_events"] = [_gather(mine.t_events[e] if mine is not None else none, n, job.comm)
                              for e in range(ne)]
        fields["y_events"] = [_gather(mine.y_events[e] if mine is not None else np.zeros((0, d)), n, job.comm)
                              for e in range(ne)]
    plan = getattr(run, "summary", None)
    if plan is not None:  # the save= summaries: kind -> (N, its components)
        widths = {k: len(v) for k, v in plan.comps.items()}
        if plan.ng:
            widths["g"] = plan.ng
        fields["saved"] = {k: _gather(mine.saved[k] if mine is not None else np.zeros((0, w)), n, job.comm)
                           for k, w in widths.items()}
    fields["n_steps"] = fields["n_accepted"]
    return GatheredSolution(run, fields)


class GatheredSolution:
    """The fields of an :class:`OdeSolution` (or SdeSolution), gathered from every rank in sample
    order (host arrays): ``t``, ``y``, ``status``, ``failure``, ``nfev``, ``n_accepted``,
    ``n_rejected``, ``n_steps``, ``ys``, ``t_events``, ``y_events``, ``n_events``, ``noise`` (an
    SDE's with return_noise), ``message``, ``source``."""

    def __init__(self, run, fields):
        self.source = run.source
        self.method = run.method
        self.t_eval = run.t_eval
        self.message = dict(MESSAGES)
        self.message.update(getattr(run.scheme, "messages", {}))  # an implicit scheme's own wording
        self.jacobian = getattr(run.scheme, "jacobian_kind", None)
        self.ys, self.t_events, self.y_events, self.saved = None, [], [], {}
        self.n_events = np.zeros((len(fields["t"]), 0), np.int32)
        self.__dict__.update(fields)

    @property
    def success(self):
        return bool(np.all(self.status >= 0))

    def __repr__(self):
        return f"<eagle.ode gathered solution {self.method}: {self.status.size} samples>"
