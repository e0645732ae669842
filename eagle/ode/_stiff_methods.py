"""The implicit (stiff) methods of eagle.ode, as data. eagle/ode/_implicit.py turns one into the
stepper that runs on the device (Jacobian, per-sample LU, stages, error, dense output).

Three schemes:

- ``"ros23"``: Shampine and Reichelt's ode23s (MATLAB's; SIAM J. Sci. Comput. 18 (1997) 1-22),
  a Rosenbrock 2(3) pair with W = I - h d J, d = 1/(2 + sqrt 2): L-stable, FSAL, with its own
  continuous extension.
- ``"rodas"``: a Rosenbrock method in Hairer and Wanner's transformed form (Solving ODEs II,
  IV.7): with W = I/(h gamma) - J, stage s solves
      W k_s = f(t + c_s h, y + sum_j A[s][j] k_j) + h D[s] f_t + sum_j (C[s][j] / h) k_j,
  the solution is y + sum_s B[s] k_s and the error estimate sum_s E[s] k_s. Dense output
  y(t + th h) = (1 - th) y + th (y_new + (1 - th)(h1 + th (h2 + th h3))), h_r = sum_j H[r][j] k_j.
  Rodas5P: Steinebach's 2023 coefficients ("Construction of Rosenbrock-Wanner method Rodas5P
  and numerical benchmarks within the Julia Differential Equations package", BIT 63 (2023)),
  8 stages, order 5(4), stiffly accurate, L-stable, with a 4th-order dense output.
- ``"esdirk"``: an explicit-first-stage, singly diagonally implicit Runge-Kutta method solved
  by simplified Newton on each stage with the matrix I - h gamma J (one LU per attempted step,
  shared by every stage and iteration); ``P`` predicts each stage's derivative from the earlier
  ones. Kvaerno5: A. Kvaerno, "Singly diagonally implicit Runge-Kutta methods with an explicit
  first stage", BIT 44 (2004) 489-502: 7 stages, order 5(4), stiffly accurate, L-stable; dense
  output by the cubic Hermite interpolant of y, f at both ends.
"""
import math
from dataclasses import dataclass, field
from typing import Optional, Tuple


@dataclass(frozen=True)
class StiffMethod:
    name: str
    description: str
    order: int
    error_order: int
    scheme: str                 # "ros23", "rodas" or "esdirk"
    gamma: float
    stages: int                 # the K slots the stepper keeps (the FSAL slot not counted)
    fsal: bool
    dense: str                  # what eagle/ode/_implicit.py emits for the dense output
    A: Tuple[Tuple[float, ...], ...] = ()
    C: Tuple[Tuple[float, ...], ...] = ()
    c: Tuple[float, ...] = ()
    D: Tuple[float, ...] = ()
    B: Tuple[float, ...] = ()
    E: Tuple[float, ...] = ()
    H: Tuple[Tuple[float, ...], ...] = ()
    P: Tuple[Tuple[float, ...], ...] = ()
    implicit: bool = True
    adaptive: bool = True
    C_extra: Optional[tuple] = None
    messages: dict = field(default_factory=dict, hash=False, compare=False)

    def evaluations_per_step(self):
        return self.stages


# the failure messages of an implicit method where the explicit ones' advice (switch to a stiff
# method) does not apply; keys are eagle/ode/_frame.py's failure codes
_MESSAGES = {3: "the step size fell below the floor (10 eps |t|): the solution may be singular there",
             4: "max_steps steps were taken before t1 (raise max_steps=)"}

# ---------------------------------------------------------------- Rosenbrock23 (ode23s)
_D23 = 1.0 / (2.0 + math.sqrt(2.0))
ROSENBROCK23 = StiffMethod(
    "Rosenbrock23", "Shampine-Reichelt ode23s, Rosenbrock 2(3), L-stable", 2, 2, "ros23", _D23,
    stages=4, fsal=True, dense="ros23", messages=_MESSAGES, c=(0.0, 0.5, 1.0), D=(6.0 + math.sqrt(2.0),))  # D[0]: e32

# ---------------------------------------------------------------- Rodas5P (Steinebach 2023)
_g = 0.21193756319429014
_a = {(2, 1): 3.0, (3, 1): 2.849394379747939, (3, 2): 0.45842242204463923,
      (4, 1): -6.954028509809101, (4, 2): 2.489845061869568, (4, 3): -10.358996098473584,
      (5, 1): 2.8029986275628964, (5, 2): 0.5072464736228206, (5, 3): -0.3988312541770524,
      (5, 4): -0.04721187230404641,
      (6, 1): -7.502846399306121, (6, 2): 2.561846144803919, (6, 3): -11.627539656261098,
      (6, 4): -0.18268767659942256, (6, 5): 0.030198172008377946}
_C = {(2, 1): -14.155112264123755, (3, 1): -17.97296035885952, (3, 2): -2.859693295451294,
      (4, 1): 147.12150275711716, (4, 2): -1.41221402718213, (4, 3): 71.68940251302358,
      (5, 1): 165.43517024871676, (5, 2): -0.4592823456491126, (5, 3): 42.90938336958603,
      (5, 4): -5.961986721573306,
      (6, 1): 24.854864614690072, (6, 2): -3.0009227002832186, (6, 3): 47.4931110020768,
      (6, 4): 5.5814197821558125, (6, 5): -0.6610691825249471,
      (7, 1): 30.91273214028599, (7, 2): -3.1208243349937974, (7, 3): 77.79954646070892,
      (7, 4): 34.28646028294783, (7, 5): -19.097331116725623, (7, 6): -28.087943162872662,
      (8, 1): 37.80277123390563, (8, 2): -3.2571969029072276, (8, 3): 112.26918849496327,
      (8, 4): 66.9347231244047, (8, 5): -40.06618937091002, (8, 6): -54.66780262877968,
      (8, 7): -9.48861652309627}
_H = ((25.948786856663858, -2.5579724845846235, 10.433815404888879, -2.3679251022685204, 0.524948541321073,
       1.1241088310450404, 0.4272876194431874, -0.17202221070155493),
      (-9.91568850695171, -0.9689944594115154, 3.0438037242978453, -24.495224566215796, 20.176138334709044,
       15.98066361424651, -6.789040303419874, -6.710236069923372),
      (11.419903575922262, 2.8879645146136994, 72.92137995996029, 80.12511834622643, -52.072871366152654,
       -59.78993625266729, -0.15582684282751913, 4.883087185713722))


def _rodas_rows():
    """A (8 x 8, 0-based stage and k indices) with the stiffly accurate tail: stage 7 evaluates
    at y + (row 6) + k6, stage 8 at that + k7, the solution is that + k8."""
    A = [[0.0] * 8 for _ in range(8)]
    for (s, j), v in _a.items():
        A[s - 1][j - 1] = v
    for s in (6, 7):  # stages 7 and 8 (0-based 6, 7)
        A[s] = list(A[s - 1])
        A[s][s - 1] = 1.0
    C = [[0.0] * 8 for _ in range(8)]
    for (s, j), v in _C.items():
        C[s - 1][j - 1] = v
    B = list(A[7])
    B[7] = 1.0
    E = [0.0] * 7 + [1.0]
    return tuple(map(tuple, A)), tuple(map(tuple, C)), tuple(B), tuple(E)


_RA, _RC, _RB, _RE = _rodas_rows()
RODAS5P = StiffMethod(
    "Rodas5P", "Steinebach's Rodas5P, Rosenbrock 5(4), stiffly accurate, L-stable", 5, 4, "rodas", _g,
    stages=9, fsal=False, dense="rodas", messages=_MESSAGES, A=_RA, C=_RC,
    c=(0.0, 0.6358126895828704, 0.4095798393397535, 0.9769306725060716, 0.4288403609558664, 1.0, 1.0, 1.0),
    D=(_g, -0.42387512638858027, -0.3384627126235924, 1.8046452872882734, 2.325825639765069, 0.0, 0.0, 0.0),
    B=_RB, E=_RE, H=_H)

# ---------------------------------------------------------------- Kvaerno5 (ESDIRK 5(4))
_kg = 0.26
_KA = ((0.0,),
       (_kg,),
       (0.13, 0.84033320996790809),
       (0.22371961478320505, 0.47675532319799699, -0.06470895363112615),
       (0.16648564323248321, 0.10450018841591720, 0.03631482272098715, -0.13090704451073998),
       (0.13855640231268224, 0.0, -0.04245337201752043, 0.02446657898003141, 0.61943039072480676),
       (0.13659751177640291, 0.0, -0.05496908796538376, -0.04118626728321046, 0.62993304899016403,
        0.06962479448202728))
_KB = _KA[6] + (_kg,)
_KBH = _KA[5] + (_kg, 0.0)  # the embedded 4th-order solution: stage 6's
# predictors of each stage's derivative from the earlier ones (rows sum to 1)
_KP = ((), (1.0,), (-1.366025403784441, 2.3660254037844357),
       (-0.19650552613122207, 0.8113579546496623, 0.38514757148155954),
       (0.10375304369958693, 0.937994698066431, -0.04174774176601781, 0.0),
       (-0.17281112873898072, 0.6235784481025847, 0.5492326806363959, 0.0, 0.0),
       _KA[5][:5] + (_kg,))
KVAERNO5 = StiffMethod(
    "Kvaerno5", "Kvaerno's ESDIRK 5(4), stiffly accurate, L-stable", 5, 4, "esdirk", _kg,
    stages=6, fsal=True, dense="hermite", messages=_MESSAGES, A=_KA,
    c=(0.0, 0.52, 1.230333209967908, 0.8957659843500759, 0.43639360985864756, 1.0, 1.0),
    B=_KB, E=tuple(b - bh for b, bh in zip(_KB, _KBH)), P=_KP)

STIFF_METHODS = {m.name: m for m in (ROSENBROCK23, RODAS5P, KVAERNO5)}

# ---------------------------------------------------------------- Radau IIA (3 stages, order 5)
# scipy.integrate.Radau's algorithm (Hairer and Wanner's RADAU5): the collocation system solved by
# simplified Newton in the eigenbasis of the coefficient matrix (one real and one complex LU).
_S6 = math.sqrt(6.0)
_MU_REAL = 3.0 + 3.0 ** (2.0 / 3.0) - 3.0 ** (1.0 / 3.0)
_MU_COMPLEX = (3.0 + 0.5 * (3.0 ** (1.0 / 3.0) - 3.0 ** (2.0 / 3.0)), -0.5 * (3.0 ** (5.0 / 6.0) + 3.0 ** (7.0 / 6.0)))
RADAU = StiffMethod(
    "Radau", "Radau IIA, 3 stages, order 5 (scipy's Radau); stiffly accurate, L-stable", 5, 3, "radau", _MU_REAL,
    stages=4, fsal=False, dense="radau", messages=_MESSAGES,
    c=((4.0 - _S6) / 10.0, (4.0 + _S6) / 10.0, 1.0),
    E=((-13.0 - 7.0 * _S6) / 3.0, (-13.0 + 7.0 * _S6) / 3.0, -1.0 / 3.0),
    # T, TI (the eigenbasis), then MU_COMPLEX as (re, im): in A and C for want of named fields
    A=((0.09443876248897524, -0.14125529502095421, 0.03002919410514742),
       (0.25021312296533332, 0.20412935229379994, -0.38294211275726192),
       (1.0, 1.0, 0.0)),
    C=((4.17871859155190428, 0.32768282076106237, 0.52337644549944951),
       (-4.17871859155190428, -0.32768282076106237, 0.47662355450055044),
       (0.50287263494578682, -2.57192694985560522, 0.59603920482822492)),
    D=_MU_COMPLEX,
    H=((13.0 / 3.0 + 7.0 * _S6 / 3.0, -23.0 / 3.0 - 22.0 * _S6 / 3.0, 10.0 / 3.0 + 5.0 * _S6),
       (13.0 / 3.0 - 7.0 * _S6 / 3.0, -23.0 / 3.0 + 22.0 * _S6 / 3.0, 10.0 / 3.0 - 5.0 * _S6),
       (1.0 / 3.0, -8.0 / 3.0, 10.0 / 3.0)))

STIFF_METHODS["Radau"] = RADAU
