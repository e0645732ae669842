"""Careless and hostile input to eagle.ode.solve_ivp (issue 26), each case in a fresh interpreter
(tests/_subproc.py), so a crash or a hang is a failing test and not a dead run.

A refused call raises an eagle.EagleError subclass (mirroring ValueError or TypeError where the
case is clearly one of them) whose message names the argument at fault; the process then exits
normally. A right-hand side that produces NaN for some samples is not refused: those samples end
with status -1 and the others finish."""
import pytest

from _subproc import run_snippet

SETUP = """
import numpy as np
import eagle, eagle.ode
def decay(t, y):
    return (-y[0], -2.0 * y[1])
y0 = np.ones((4, 2))
"""

# (id, snippet, a builtin the error must also be (or None), strings the message must contain)
REFUSED = [
    ("fun returns the wrong length",
     "eagle.ode.solve_ivp(lambda t, y: (-y[0],), (0.0, 1.0), y0)", "ValueError", ["fun", "2"]),
    ("fun returns a scalar for a 2-state system",
     "eagle.ode.solve_ivp(lambda t, y: -y[0], (0.0, 1.0), y0)", None, ["fun"]),
    ("fun is not callable", "eagle.ode.solve_ivp(42, (0.0, 1.0), y0)", "TypeError", ["fun"]),
    ("y0 and args disagree on N",
     "eagle.ode.solve_ivp(lambda t, y, k: (-k * y[0], -y[1]), (0.0, 1.0), y0, args=(np.ones(5),))",
     "ValueError", ["args", "4", "5"]),
    ("two args disagree on N",
     "eagle.ode.solve_ivp(lambda t, y, a, b: (-a * y[0], -b * y[1]), (0.0, 1.0), np.ones(2),\n"
     "                    args=(np.ones(3), np.ones(7)))", "ValueError", ["args"]),
    ("args of the wrong count for fun",
     "eagle.ode.solve_ivp(lambda t, y, k: (-k * y[0], -y[1]), (0.0, 1.0), y0)", None, ["fun"]),
    ("an args array with two dimensions",
     "eagle.ode.solve_ivp(lambda t, y, k: (-y[0], -y[1]), (0.0, 1.0), y0, args=(np.ones((4, 2)),))",
     "ValueError", ["args"]),
    ("a zero span", "eagle.ode.solve_ivp(decay, (1.0, 1.0), y0)", "ValueError", ["t_span"]),
    ("a negative span", "eagle.ode.solve_ivp(decay, (1.0, 0.0), y0)", "ValueError", ["t_span"]),
    ("a per-sample t1 of the wrong length", "eagle.ode.solve_ivp(decay, (0.0, np.ones(3)), y0)",
     "ValueError", ["t_span"]),
    ("a per-sample t1 before t0 for one sample",
     "eagle.ode.solve_ivp(decay, (0.0, np.array([1.0, 2.0, -1.0, 1.0])), y0)", "ValueError", ["t_span"]),
    ("t_eval past t1", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, t_eval=[0.0, 0.5, 2.0])", "ValueError",
     ["t_eval"]),
    ("t_eval before t0", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, t_eval=[-0.5, 0.5])", "ValueError",
     ["t_eval"]),
    ("an unknown method", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, method='RK99')", "ValueError",
     ["method", "RK99"]),
    ("a method that is not a string", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, method=3)", None, ["method"]),
    ("dt missing for Euler", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, method='Euler')", None, ["dt"]),
    ("dt missing for RK4", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, method='RK4')", None, ["dt"]),
    ("a zero dt", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, method='RK4', dt=0.0)", "ValueError", ["dt"]),
    ("a negative dt", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, method='RK4', dt=-1e-3)", "ValueError", ["dt"]),
    ("a negative rtol", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, rtol=-1e-6)", "ValueError", ["rtol"]),
    ("a negative atol", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, atol=-1e-8)", "ValueError", ["atol"]),
    ("a NaN rtol", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, rtol=float('nan'))", "ValueError", ["rtol"]),
    ("a zero max_steps", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, max_steps=0)", "ValueError", ["max_steps"]),
    ("y0 with three dimensions", "eagle.ode.solve_ivp(decay, (0.0, 1.0), np.ones((2, 2, 2)))", "ValueError",
     ["y0"]),
    ("y0 of object dtype",
     "eagle.ode.solve_ivp(decay, (0.0, 1.0), np.array([[1.0, 'a'], [2.0, None]], dtype=object))", "TypeError",
     ["y0"]),
    ("y0 a string", "eagle.ode.solve_ivp(decay, (0.0, 1.0), 'ab')", None, ["y0"]),
    ("an event that is not callable", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, events=[3])", "TypeError",
     ["events"]),
    ("an event direction that is not a number (scipy takes its sign)",
     "ev = lambda t, y: y[0] - 0.5\nev.direction = 'up'\neagle.ode.solve_ivp(decay, (0.0, 1.0), y0, events=ev)",
     "TypeError", ["direction"]),
    ("an unknown dtype", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, dtype='float16')", None, ["dtype"]),
    # issue 42's eagle.ode inputs, refused in the one place (eagle/ode/_check.py, eagle/ode/_run.py)
    ("dt with an adaptive method is not silently a fixed-step solve",
     "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, rtol=1e-10, atol=1e-10, dt=0.1)", "ValueError",
     ["dt", "adaptive=False"]),
    ("a dt far larger than the span", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, method='RK4', dt=1e300)",
     "ValueError", ["dt"]),
    ("a dt so small a per-sample t1 needs more than 2**31 steps",
     "eagle.ode.solve_ivp(decay, (0.0, np.array([1.0, 2.0, 3.0, 1e3])), y0, method='RK4', dt=1e-7)", "ValueError",
     ["dt"]),
    ("solve_sde with a dt so small it needs more than 2**31 steps",
     "eagle.ode.solve_sde(decay, decay, (0.0, 1e3), y0, dt=1e-7)", "ValueError", ["dt"]),
    ("an event's terminal given as the string 'False'",
     "ev = lambda t, y: y[0] - 0.5\nev.terminal = 'False'\neagle.ode.solve_ivp(decay, (0.0, 1.0), y0, events=ev)",
     "TypeError", ["terminal"]),
    ("a ragged y0", "eagle.ode.solve_ivp(decay, (0.0, 1.0), [[1.0, 2.0], [3.0]])", "ValueError", ["y0"]),
    ("Solver.solve's own ragged y0",
     "S = eagle.ode.Solver(decay, t_span=(0.0, 1.0))\nS.solve([[1.0, 2.0], [3.0]])", "ValueError", ["y0"]),
    ("Solver.solve's y0 of object dtype",
     "S = eagle.ode.Solver(decay, t_span=(0.0, 1.0))\nS.solve(np.array([[1.0, 'a']], dtype=object))", "TypeError",
     ["y0"]),
    ("backend=0", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, backend=0)", "TypeError", ["backend"]),
    ("a negative steps_per_call",
     "eagle.ode.Solver(decay, t_span=(0.0, 1.0), steps_per_call=-1).solve(y0)", "ValueError", ["steps_per_call"]),
    ("a float steps_per_call", "eagle.ode.solve_sde(decay, decay, (0.0, 1.0), y0, dt=0.1) if False else "
     "eagle.ode.SdeSolver(decay, decay, t_span=(0.0, 1.0), dt=0.1, steps_per_call=2.5).solve(y0)", "ValueError",
     ["steps_per_call"]),
    ("scipy's dense_output", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, dense_output=True)", "TypeError",
     ["dense_output", "t_eval"]),
    ("scipy's vectorized", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, vectorized=True)", "TypeError",
     ["vectorized"]),
    ("an unknown keyword", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, rtoll=1e-3)", "TypeError", ["rtoll"]),
    ("atol of the wrong length", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, atol=[1e-8, 1e-8, 1e-8])",
     "ValueError", ["atol", "2"]),
    # non-finite inputs: refused before anything runs, naming the argument and the first bad index
    # (issue 39), for every method; a NaN that arises during the run still fails its sample alone
    ("a NaN in y0 (explicit adaptive)", "y0[2, 1] = np.nan\neagle.ode.solve_ivp(decay, (0.0, 1.0), y0)",
     "ValueError", ["y0[2, 1]", "nan", "finite"]),
    ("an inf in y0 (fixed steps)",
     "y0[3, 0] = -np.inf\neagle.ode.solve_ivp(decay, (0.0, 1.0), y0, method='RK4', dt=0.1)", "ValueError",
     ["y0[3, 0]", "-inf"]),
    ("a NaN in y0 (Kvaerno5)",
     "y0[1, 0] = np.nan\neagle.ode.solve_ivp(decay, (0.0, 1.0), y0, method='Kvaerno5')", "ValueError",
     ["y0[1, 0]"]),
    ("a NaN in y0 (Rodas5P)",
     "y0[0, 1] = np.nan\neagle.ode.solve_ivp(decay, (0.0, 1.0), y0, method='Rodas5P')", "ValueError",
     ["y0[0, 1]"]),
    ("a NaN in y0 (Radau, float32)",
     "y = np.ones((4, 2), np.float32); y[2, 0] = np.nan\n"
     "eagle.ode.solve_ivp(decay, (0.0, 1.0), y, method='Radau', dtype='float32')", "ValueError", ["y0[2, 0]"]),
    ("a NaN in y0 (auto)", "y0[1, 1] = np.nan\neagle.ode.solve_ivp(decay, (0.0, 1.0), y0, method='auto')",
     "ValueError", ["y0[1, 1]"]),
    ("a NaN in one shared y0", "eagle.ode.solve_ivp(decay, (0.0, 1.0), np.array([1.0, np.nan]))", "ValueError",
     ["y0[1]"]),
    ("Solver.solve's y0 with an inf",
     "S = eagle.ode.Solver(decay, t_span=(0.0, 1.0))\nS.solve(np.ones((2, 2)))\ny0[1, 1] = np.inf\nS.solve(y0)",
     "ValueError", ["y0[1, 1]"]),
    ("a NaN in a per-sample argument",
     "eagle.ode.solve_ivp(lambda t, y, k: (-k * y[0], -y[1]), (0.0, 1.0), y0, args=(np.array([1.0, 2.0, np.nan, "
     "1.0]),))", "ValueError", ["args[0][2]"]),
    ("an inf shared argument",
     "eagle.ode.solve_ivp(lambda t, y, k: (-k * y[0], -y[1]), (0.0, 1.0), y0, args=(float('inf'),), "
     "method='Kvaerno5')", "ValueError", ["args[0]", "inf"]),
    ("a NaN in a per-sample vector argument",
     "v = np.ones((4, 2)); v[3, 1] = np.nan\n"
     "eagle.ode.solve_ivp(lambda t, y, v: (-v[0] * y[0], -v[1] * y[1]), (0.0, 1.0), y0, args=(v,))", "ValueError",
     ["args[0][3, 1]"]),
    ("solve_sde with a NaN y0", "y0[0, 0] = np.nan\neagle.ode.solve_sde(decay, decay, (0.0, 1.0), y0, dt=0.1)",
     "ValueError", ["y0[0, 0]"]),
    ("a NaN t1", "eagle.ode.solve_ivp(decay, (0.0, float('nan')), y0)", "ValueError", ["t_span", "finite"]),
    ("an inf per-sample t0",
     "eagle.ode.solve_ivp(decay, (np.array([0.0, -np.inf, 0.0, 0.0]), 1.0), y0)", "ValueError", ["t_span", "[1]"]),
    ("a NaN in t_eval", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, t_eval=[0.1, np.nan, 0.5])", "ValueError",
     ["t_eval[1]", "finite"]),
    ("an inf rtol", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, rtol=float('inf'))", "ValueError", ["rtol"]),
    ("a NaN atol", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, atol=float('nan'))", "ValueError", ["atol"]),
    ("a NaN in a per-component atol", "eagle.ode.solve_ivp(decay, (0.0, 1.0), y0, atol=[1e-8, np.nan])",
     "ValueError", ["atol"]),
]


@pytest.mark.parametrize("code, builtin, match", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_bad_input_is_refused_naming_the_argument(code, builtin, match):
    out = run_snippet(SETUP + code + "\n")
    out.expect_raises("EagleError", match=match)
    if builtin is not None:
        assert out.raised(builtin), f"expected an error that is also a {builtin}; {out.describe()}"
    assert out.returncode == 70, out.describe()  # the runner's exit after a clean exception: no crash at exit


def test_a_python_if_on_the_state_is_refused_naming_its_line():
    out = run_snippet(SETUP + """
def branchy(t, y):
    if y[0] > 0.5:
        return (-y[0], -y[1])
    return (y[0], y[1])
eagle.ode.solve_ivp(branchy, (0.0, 1.0), y0)
""")
    out.expect_raises("TraceError")
    assert out.eagle_error, out.describe()
    line = SETUP.count("\n") + 3  # the `if` line of the snippet
    assert f"line {line}" in out.exc_message or f":{line}" in out.exc_message, out.describe()
    assert "where" in out.exc_message, f"the message should point at eagle.ode.math.where; {out.describe()}"


def test_a_loop_whose_length_depends_on_the_state_is_refused():
    out = run_snippet(SETUP + """
def loopy(t, y):
    v = y[0]
    while v > 0.1:
        v = v / 2
    return (-v, -y[1])
eagle.ode.solve_ivp(loopy, (0.0, 1.0), y0)
""")
    out.expect_raises("TraceError")
    assert out.eagle_error, out.describe()


def test_a_call_that_needs_a_python_float_is_refused_naming_its_line():
    """math.fsum asks the traced value for a float: the trace cannot give one."""
    out = run_snippet(SETUP + """
import math
def odd(t, y):
    return (-math.fsum([y[0]]), -y[1])
eagle.ode.solve_ivp(odd, (0.0, 1.0), y0)
""")
    out.expect_no_crash()
    assert out.status == "raised" and out.eagle_error, out.describe()
    line = SETUP.count("\n") + 4  # the return line of the snippet
    assert f"line {line}" in out.exc_message or f":{line}" in out.exc_message, out.describe()


def test_nan_from_fun_fails_those_samples_and_the_others_finish():
    out = run_snippet("""
import numpy as np
import eagle, eagle.ode
def f(t, y, a):
    return (-y[0] + eagle.ode.math.sqrt(a) - eagle.ode.math.sqrt(a),)   # NaN where a < 0
sol = eagle.ode.solve_ivp(f, (0.0, 1.0), np.ones((4, 1)), args=(np.array([1.0, -1.0, 4.0, -4.0]),),
                          method="RK45", rtol=1e-8, atol=1e-10)
result = dict(status=sol.status.tolist(), y=sol.y[:, 0].tolist(), failure=sol.failure.tolist(),
              messages={str(k): v for k, v in sol.message.items()})
""")
    res = out.expect_ok()
    assert res["status"] == [0, -1, 0, -1], res
    import math
    for i in (0, 2):
        assert abs(res["y"][i] - math.exp(-1.0)) <= 1e-7, res
    assert res["failure"][1] != 0 and res["failure"][3] != 0 and res["failure"][0] == 0, res
    assert res["messages"].get(str(res["failure"][1])), res


def test_nan_in_y0_is_refused_before_anything_runs_and_a_run_time_nan_fails_alone():
    """A NaN y0 is refused naming y0 and its index (issue 39: before any compile or launch); a NaN
    Jacobian that arises during the run (the sample's argument) still fails that sample alone with
    code 9, and the other samples finish."""
    out = run_snippet(SETUP + """
y = np.ones((3, 2)); y[1, 0] = np.nan
try:
    eagle.ode.solve_ivp(decay, (0.0, 1.0), y, method="Tsit5")
    refused = None
except eagle.EagleError as e:
    refused = str(e)
def f(t, y, a):
    return (-a * y[0],)
def jac(t, y, a):
    return [[eagle.ode.math.where(t > 0.5 * a, np.nan, -a)]]   # NaN from t = 0.5 a on
sol = eagle.ode.solve_ivp(f, (0.0, 1.0), np.ones(1), method="Rodas5P", args=(np.array([4.0, 1.0]),), jac=jac)
result = dict(refused=refused, status=sol.status.tolist(), failure=sol.failure.tolist())
""")
    res = out.expect_ok()
    assert res["refused"] is not None and "y0[1, 0]" in res["refused"], res
    assert res["status"] == [0, -1] and res["failure"] == [0, 9], res
