"""eagle.ode: ensembles of ordinary differential equations, one sample per lane, in scipy's
vocabulary (``solve_ivp``) and batched over samples.

The right-hand side is ONE sample's ``fun(t, y, *args)`` in Python, traced once into C (or C
given directly with :class:`C`); a method is a tableau (eagle/ode/_methods.py); the stepper,
step-size controller, dense output, events and per-sample status are generated from those
pieces (eagle/ode/_codegen.py), compiled with ``eagle.compile`` for the arrays' kind and run as
one recorded graph whose live samples are drained on the device (eagle/ode/_solver.py).

This floor uses eagle's public API and ``eagle.compile`` only."""
from ._methods import METHODS
from ._rhs import C
from ._sde import SdeSolution, SdeSolver, solve_sde
from ._solution import OdeSolution
from ._solver import Solver, solve_ivp
from ._sensitivity import SensitivitySolution, SensitivitySolver
from ._adjoint import AdjointSolution, AdjointSolver

__all__ = ["C", "METHODS", "OdeSolution", "Solver", "solve_ivp", "math", "SdeSolution", "SdeSolver", "solve_sde",
           "SensitivitySolver", "SensitivitySolution", "AdjointSolver", "AdjointSolution"]


def __getattr__(name):
    if name == "math":
        import importlib
        return importlib.import_module(".math", __name__)
    raise AttributeError(f"module 'eagle.ode' has no attribute '{name}'")
