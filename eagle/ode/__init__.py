"""eagle.ode: ensembles of ordinary differential equations, one sample per lane, in scipy's
vocabulary (``solve_ivp``) and batched over samples.

The right-hand side is ONE sample's ``fun(t, y, *args)`` in Python, traced once into C (or C
given directly with :class:`C`); a method is a *scheme* (explicit Runge-Kutta tableaux:
eagle/ode/_methods.py, eagle/ode/_rk.py; the implicit stiff methods Rodas5P, Kvaerno5 and
Rosenbrock23: eagle/ode/_stiff_methods.py, eagle/ode/_implicit.py, with the Jacobian derived from
the trace by eagle/ode/_derive.py and a per-sample LU from eagle/ode/_linalg.py; the SDE methods:
eagle/ode/_sde.py) and the step-size
controller an object (eagle/ode/_control.py); eagle/ode/_frame.py generates the drained kernels
around them (events, t_eval, per-sample status), and ONE ensemble run (eagle/ode/_run.py)
compiles them once per right-hand side for the arrays' kind and runs them as one recorded graph
whose live samples are drained on the device. How a scheme plugs in: eagle/ode/SCHEMES.md.

This floor uses eagle's public API and ``eagle.compile`` only."""
from ._acts import at, event
from ._methods import METHODS
from ._rhs import C
from ._sde import SdeSolution, SdeSolver, solve_sde
from ._solution import OdeSolution
from ._solver import Solver
from ._ivp import solve_ivp
from ._sensitivity import SdeSensitivitySolver, SensitivitySolution, SensitivitySolver
from ._adjoint import AdjointSolution, AdjointSolver

__all__ = ["C", "METHODS", "at", "event", "OdeSolution", "Solver", "solve_ivp", "math", "SdeSolution", "SdeSolver",
           "solve_sde", "SensitivitySolver", "SensitivitySolution", "SdeSensitivitySolver", "AdjointSolver",
           "AdjointSolution"]


def __getattr__(name):
    if name == "math":
        import importlib
        return importlib.import_module(".math", __name__)
    raise AttributeError(f"module 'eagle.ode' has no attribute '{name}'")
