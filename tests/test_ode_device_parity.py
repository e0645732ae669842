"""Every scheme of the one ensemble run gives the same bits on a device kind as on cpu in exact mode:
the stiff methods (Jacobian and LU per lane), method="auto" (a per-sample switch), the Verner
methods, events that act, dosing callbacks, on-device summaries, forward sensitivities of a stiff
method and SDE paths. Each case is a small ensemble whose samples take different step counts, so a
kind that compacts or orders samples differently, or contracts a multiply-add where cpu does not,
shows here. Runs on every device kind present (the `device` fixture: cuda marked gpu, opencl);
skips naming why where none is."""
import numpy as np
import pytest

import eagle.ode as eo
from _stiff_problems import rober, van_der_pol




def fall(t, y, e):
    return (y[1], -9.81)


def ground(t, y, e):
    return y[0]


ground.direction = -1
ground.affect = lambda t, y, e: (y[0], -e * y[1])


def osc(t, y, w):
    return (y[1], -w * w * y[0])


N = 48
K1 = 0.04 * np.linspace(0.8, 1.2, N)
ROBER_Y0 = np.tile([1.0, 0.0, 0.0], (N, 1))


def _case(name):
    """(callable solving on a backend, the result fields to compare) for one case."""
    if name in ("Rodas5P", "Rosenbrock23", "Kvaerno5", "Radau"):
        return (lambda b: eo.solve_ivp(rober, (0.0, 1e5), ROBER_Y0, method=name, args=(K1, 3e7, 1e4), rtol=1e-6,
                                       atol=1e-10, t_eval=np.array([1e-3, 1.0, 1e3]), exact=True, backend=b),
                ("y", "ys", "status", "n_accepted", "n_rejected", "nfev"))
    if name == "auto":
        mus = np.geomspace(1.0, 1e5, N)
        return (lambda b: eo.solve_ivp(van_der_pol, (0.0, 3.0), [2.0, 0.0], method="auto", args=(mus,), rtol=1e-6,
                                       atol=1e-8, max_steps=20_000, exact=True, backend=b),
                ("y", "status", "n_accepted", "n_rejected", "switched_at"))
    if name in ("Vern7", "Vern9"):
        w = np.linspace(0.5, 3.0, N)
        return (lambda b: eo.solve_ivp(osc, (0.0, 10.0), [1.0, 0.0], method=name, args=(w,), rtol=1e-11,
                                       atol=1e-12, t_eval=np.linspace(0.0, 10.0, 7), exact=True, backend=b),
                ("y", "ys", "status", "n_accepted", "n_rejected"))
    if name == "events":
        e = np.linspace(0.7, 0.9, N)  # accumulation (Zeno) past t1 = 1.6 for e >= 0.7
        return (lambda b: eo.solve_ivp(fall, (0.0, 1.6), [1.0, 0.0], args=(e,), events=ground, max_events=12,
                                       rtol=1e-10, atol=1e-12, exact=True, backend=b),
                ("y", "status", "n_events", "n_accepted"))
    if name == "dosing+save":
        k = np.linspace(0.1, 0.3, N)
        cb = eo.at(np.arange(0.0, 72.0, 12.0), lambda t, y, k: (y[0] + 100.0,))
        return (lambda b: eo.solve_ivp(lambda t, y, k: (-k * y[0],), (0.0, 80.0), [0.0], args=(k,), callbacks=cb,
                                       rtol=1e-10, atol=1e-10, save=["max", "argmax", "integral", "final"],
                                       exact=True, backend=b),
                ("y", "status", "n_accepted", "saved"))
    if name == "stiff-sensitivity":
        return (lambda b: eo.solve_ivp(rober, (0.0, 1e3), ROBER_Y0, method="Rodas5P", args=(K1, 3e7, 1e4),
                                       rtol=1e-6, atol=1e-10, sensitivity=(0,), exact=True, backend=b),
                ("y", "status", "n_accepted", "dy_dargs"))
    if name == "sde":
        return (lambda b: eo.solve_sde(lambda t, y, s: (-y[0],), lambda t, y, s: (s * y[0],), (0.0, 1.0), [1.0],
                                       args=(0.3,), dt=1e-2, n_paths=N, seed=7, exact=True, backend=b),
                ("y", "status"))
    raise KeyError(name)


CASES = ["Rodas5P", "Rosenbrock23", "Kvaerno5", "Radau", "auto", "Vern7", "Vern9", "events", "dosing+save",
         "stiff-sensitivity", "sde"]


def _same(a, b, what):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), what
        for k in a:
            _same(a[k], b[k], f"{what}[{k!r}]")
    else:
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a), err_msg=what)


@pytest.mark.parametrize("case", CASES)
def test_a_device_kind_gives_cpus_bits_in_exact_mode(case, device):
    solve, fields = _case(case)
    c, d = solve("cpu"), solve(device)
    assert np.all(np.asarray(c.status) == 0), c.failure if hasattr(c, "failure") else c.status
    for f in fields:
        _same(getattr(c, f), getattr(d, f), f"{case}: {f}")
