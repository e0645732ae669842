"""The integration methods of eagle.ode, as data: each is a Butcher tableau with its error
weights and its dense output. Nothing here knows about devices or C; eagle/ode/_rk.py turns
a method into the stepper that runs on the device.

Conventions (those of scipy.integrate's RungeKutta, so the numbers read the same):
- ``A``, ``C`` are the stage coefficients (stage s evaluates f at t + C[s] h, y + h sum_j A[s][j] K_j),
  ``B`` the weights of the solution (y_new = y + h sum_s B[s] K_s).
- ``fsal``: stage ``len(B)`` is f(t + h, y_new), evaluated after every step and reused as the
  next step's first stage (so a step costs len(B) evaluations after the first).
- ``E``: error weights over the stages and the FSAL stage (err = h sum_s E[s] K_s).
- ``dense``: "P" (y(t + theta h) = y + h sum_s K_s sum_j P[s][j] theta^(j+1)), "dop853" (Hairer's
  7th-order interpolant, three more stages), "hermite" (cubic Hermite from y, f at both ends) or
  "linear".
- ``C_extra``, ``A_extra``: stages the dense output needs beyond the step's (DOP853's three, Verner's
  6 and 10), evaluated only for a step whose dense output is asked for. They take the stage slots
  after the step's stages and its FSAL stage; A_extra's columns and P's rows number every slot.
- ``order`` is the order of the solution, ``error_order`` the order of the embedded estimate that
  sets the step-size exponent (None for a fixed-step-only method).
"""
from dataclasses import dataclass
from typing import Optional, Tuple

from ..errors import EagleValueError
from . import _verner as _v


@dataclass(frozen=True)
class Method:
    name: str
    description: str
    order: int
    error_order: Optional[int]
    C: Tuple[float, ...]
    A: Tuple[Tuple[float, ...], ...]
    B: Tuple[float, ...]
    fsal: bool
    dense: str
    E: Optional[Tuple[float, ...]] = None
    P: Optional[Tuple[Tuple[float, ...], ...]] = None
    # the dense output's extra stages (DOP853, Vern7, Vern9)
    C_extra: Optional[Tuple[float, ...]] = None
    A_extra: Optional[Tuple[Tuple[float, ...], ...]] = None
    # DOP853 only: the second error estimate and the interpolant's matrix
    E3: Optional[Tuple[float, ...]] = None
    D: Optional[Tuple[Tuple[float, ...], ...]] = None

    @property
    def stages(self):
        """Stages of one step, the FSAL stage not counted."""
        return len(self.B)

    @property
    def adaptive(self):
        return self.error_order is not None

    def evaluations_per_step(self):
        """Right-hand-side evaluations of one accepted step (FSAL: the last stage is the next
        step's first, so it is counted once)."""
        return self.stages


EULER = Method("Euler", "explicit Euler", 1, None, C=(0.0,), A=((0.0,),), B=(1.0,), fsal=False,
               dense="linear")

RK4 = Method("RK4", "classic 4th-order Runge-Kutta", 4, None,
             C=(0.0, 0.5, 0.5, 1.0),
             A=((0.0, 0.0, 0.0), (0.5, 0.0, 0.0), (0.0, 0.5, 0.0), (0.0, 0.0, 1.0)),
             B=(1 / 6, 1 / 3, 1 / 3, 1 / 6), fsal=False, dense="hermite")

RK23 = Method("RK23", "Bogacki-Shampine 3(2)", 3, 2,
              C=(0.0, 1 / 2, 3 / 4),
              A=((0.0, 0.0), (1 / 2, 0.0), (0.0, 3 / 4)),
              B=(2 / 9, 1 / 3, 4 / 9), fsal=True, dense="P",
              E=(5 / 72, -1 / 12, -1 / 9, 1 / 8),
              P=((1.0, -4 / 3, 5 / 9), (0.0, 1.0, -2 / 3), (0.0, 4 / 3, -8 / 9), (0.0, -1.0, 1.0)))

RK45 = Method("RK45", "Dormand-Prince 5(4)", 5, 4,
              C=(0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0),
              A=((0.0,) * 5,
                 (1 / 5, 0.0, 0.0, 0.0, 0.0),
                 (3 / 40, 9 / 40, 0.0, 0.0, 0.0),
                 (44 / 45, -56 / 15, 32 / 9, 0.0, 0.0),
                 (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0.0),
                 (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656)),
              B=(35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84), fsal=True, dense="P",
              E=(-71 / 57600, 0.0, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525, 1 / 40),
              # Shampine's 4th-order free interpolant (as scipy's RK45 uses)
              P=((1.0, -8048581381 / 2820520608, 8663915743 / 2820520608, -12715105075 / 11282082432),
                 (0.0, 0.0, 0.0, 0.0),
                 (0.0, 131558114200 / 32700410799, -68118460800 / 10900136933, 87487479700 / 32700410799),
                 (0.0, -1754552775 / 470086768, 14199869525 / 1410260304, -10690763975 / 1880347072),
                 (0.0, 127303824393 / 49829197408, -318862633887 / 49829197408, 701980252875 / 199316789632),
                 (0.0, -282668133 / 205662961, 2019193451 / 616988883, -1453857185 / 822651844),
                 (0.0, 40617522 / 29380423, -110615467 / 29380423, 69997945 / 29380423)))

# Tsitouras 5(4) (Ch. Tsitouras, "Runge-Kutta pairs of order 5(4) satisfying only the first column
# simplifying assumption", Comput. Math. Appl. 62 (2011) 770-775), with its 4th-order interpolant.
TSIT5 = Method("Tsit5", "Tsitouras 5(4)", 5, 4,
               C=(0.0, 0.161, 0.327, 0.9, 0.9800255409045097, 1.0),
               A=((0.0,) * 5,
                  (0.161, 0.0, 0.0, 0.0, 0.0),
                  (-0.008480655492356989, 0.335480655492357, 0.0, 0.0, 0.0),
                  (2.8971530571054935, -6.359448489975075, 4.3622954328695815, 0.0, 0.0),
                  (5.325864828439257, -11.748883564062828, 7.4955393428898365, -0.09249506636175525, 0.0),
                  (5.86145544294642, -12.92096931784711, 8.159367898576159, -0.071584973281401,
                   -0.028269050394068383)),
               B=(0.09646076681806523, 0.01, 0.4798896504144996, 1.379008574103742, -3.290069515436081,
                  2.324710524099774), fsal=True, dense="P",
               # error weights: b minus the embedded 4th-order weights
               E=tuple(b - bh for b, bh in zip(
                   (0.09646076681806523, 0.01, 0.4798896504144996, 1.379008574103742, -3.290069515436081,
                    2.324710524099774, 0.0),
                   (0.09468075576583945, 0.009183565540343254, 0.4877705284247616, 1.234297566930479,
                    -2.7077123499835256, 1.866628418170587, 0.015151515151515152))),
               P=((1.0, -2.763706197274826, 2.9132554618219126, -1.0530884977290216),
                  (0.0, 0.13169999999999998, -0.2234, 0.1017),
                  (0.0, 3.9302962368947516, -5.941033872131505, 2.490627285651253),
                  (0.0, -12.411077166933676, 30.33818863028232, -16.548102889244902),
                  (0.0, 37.50931341651104, -88.1789048947664, 47.37952196281928),
                  (0.0, -27.896526289197286, 65.09189467479366, -34.87065786149661),
                  (0.0, 1.5, -4.0, 2.5)))
# DOP853 (Hairer, Norsett & Wanner, 'Solving ODEs I', 2nd ed.; the coefficients of Hairer's dop853.f),
# 12 stages + the FSAL stage; 3 more stages (rows 13-15) for the 7th-order dense output.
DOP853_C = (0.0, 0.05260015195876773, 0.0789002279381516, 0.1183503419072274, 0.2816496580927726, 0.3333333333333333, 0.25, 0.3076923076923077, 0.6512820512820513, 0.6, 0.8571428571428571, 1.0, 1.0, 0.1, 0.2, 0.7777777777777778)
DOP853_A = (
    (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    (0.05260015195876773, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    (0.0197250569845379, 0.0591751709536137, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    (0.02958758547680685, 0.0, 0.08876275643042054, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    (0.2413651341592667, 0.0, -0.8845494793282861, 0.924834003261792, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    (0.037037037037037035, 0.0, 0.0, 0.17082860872947386, 0.12546768756682242, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    (0.037109375, 0.0, 0.0, 0.17025221101954405, 0.06021653898045596, -0.017578125, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    (0.03709200011850479, 0.0, 0.0, 0.17038392571223998, 0.10726203044637328, -0.015319437748624402, 0.008273789163814023, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    (0.6241109587160757, 0.0, 0.0, -3.3608926294469414, -0.868219346841726, 27.59209969944671, 20.154067550477894, -43.48988418106996, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    (0.47766253643826434, 0.0, 0.0, -2.4881146199716677, -0.590290826836843, 21.230051448181193, 15.279233632882423, -33.28821096898486, -0.020331201708508627, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    (-0.9371424300859873, 0.0, 0.0, 5.186372428844064, 1.0914373489967295, -8.149787010746927, -18.52006565999696, 22.739487099350505, 2.4936055526796523, -3.0467644718982196, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    (2.273310147516538, 0.0, 0.0, -10.53449546673725, -2.0008720582248625, -17.9589318631188, 27.94888452941996, -2.8589982771350235, -8.87285693353063, 12.360567175794303, 0.6433927460157636, 0.0, 0.0, 0.0, 0.0, 0.0),
    (0.054293734116568765, 0.0, 0.0, 0.0, 0.0, 4.450312892752409, 1.8915178993145003, -5.801203960010585, 0.3111643669578199, -0.1521609496625161, 0.20136540080403034, 0.04471061572777259, 0.0, 0.0, 0.0, 0.0),
    (0.056167502283047954, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25350021021662483, -0.2462390374708025, -0.12419142326381637, 0.15329179827876568, 0.00820105229563469, 0.007567897660545699, -0.008298, 0.0, 0.0, 0.0),
    (0.03183464816350214, 0.0, 0.0, 0.0, 0.0, 0.028300909672366776, 0.053541988307438566, -0.05492374857139099, 0.0, 0.0, -0.00010834732869724932, 0.0003825710908356584, -0.00034046500868740456, 0.1413124436746325, 0.0, 0.0),
    (-0.42889630158379194, 0.0, 0.0, 0.0, 0.0, -4.697621415361164, 7.683421196062599, 4.06898981839711, 0.3567271874552811, 0.0, 0.0, 0.0, -0.0013990241651590145, 2.9475147891527724, -9.15095847217987, 0.0),
)
DOP853_B = (0.054293734116568765, 0.0, 0.0, 0.0, 0.0, 4.450312892752409, 1.8915178993145003, -5.801203960010585, 0.3111643669578199, -0.1521609496625161, 0.20136540080403034, 0.04471061572777259)
DOP853_E3 = (-0.18980075407240762, 0.0, 0.0, 0.0, 0.0, 4.450312892752409, 1.8915178993145003, -5.801203960010585, -0.4226823213237919, -0.1521609496625161, 0.20136540080403034, 0.02265179219836082, 0.0)
DOP853_E5 = (0.01312004499419488, 0.0, 0.0, 0.0, 0.0, -1.2251564463762044, -0.4957589496572502, 1.6643771824549864, -0.35032884874997366, 0.3341791187130175, 0.08192320648511571, -0.022355307863886294, 0.0)
DOP853_D = (
    (-8.428938276109013, 0.0, 0.0, 0.0, 0.0, 0.5667149535193777, -3.0689499459498917, 2.38466765651207, 2.117034582445028, -0.871391583777973, 2.2404374302607883, 0.6315787787694688, -0.08899033645133331, 18.148505520854727, -9.194632392478356, -4.436036387594894),
    (10.427508642579134, 0.0, 0.0, 0.0, 0.0, 242.28349177525817, 165.20045171727028, -374.5467547226902, -22.113666853125306, 7.733432668472264, -30.674084731089398, -9.332130526430229, 15.697238121770845, -31.139403219565178, -9.35292435884448, 35.81684148639408),
    (19.985053242002433, 0.0, 0.0, 0.0, 0.0, -387.0373087493518, -189.17813819516758, 527.8081592054236, -11.57390253995963, 6.8812326946963, -1.0006050966910838, 0.7777137798053443, -2.778205752353508, -60.19669523126412, 84.32040550667716, 11.99229113618279),
    (-25.69393346270375, 0.0, 0.0, 0.0, 0.0, -154.18974869023643, -231.5293791760455, 357.6391179106141, 93.40532418362432, -37.45832313645163, 104.0996495089623, 29.8402934266605, -43.53345659001114, 96.32455395918828, -39.17726167561544, -149.72683625798564),
)

DOP853 = Method("DOP853", "Dormand-Prince 8(5,3)", 8, 7,
                C=DOP853_C[:12], A=tuple(row[:11] for row in DOP853_A[:12]), B=DOP853_B, fsal=True,
                dense="dop853", E=DOP853_E5, E3=DOP853_E3,
                C_extra=DOP853_C[13:16], A_extra=tuple(row[:16] for row in DOP853_A[13:16]), D=DOP853_D)

# Verner's 7(6) and 9(8) pairs (eagle/ode/_verner.py: the numbers and their source): not FSAL, 10 and
# 16 stages a step, interpolants of orders 7 and 9 from 6 and 10 more stages.
VERN7 = Method("Vern7", "Verner 7(6)", 7, 6, C=_v.VERN7_C[:10], A=_v.VERN7_A[:10], B=_v.VERN7_B, fsal=False,
               dense="P", E=_v.VERN7_E, P=_v.VERN7_P, C_extra=_v.VERN7_C[10:], A_extra=_v.VERN7_A[10:])
VERN9 = Method("Vern9", "Verner 9(8)", 9, 8, C=_v.VERN9_C[:16], A=_v.VERN9_A[:16], B=_v.VERN9_B, fsal=False,
               dense="P", E=_v.VERN9_E, P=_v.VERN9_P, C_extra=_v.VERN9_C[16:], A_extra=_v.VERN9_A[16:])

METHODS = {m.name: m for m in (EULER, RK4, RK23, RK45, TSIT5, DOP853, VERN7, VERN9)}


from ._stiff_methods import STIFF_METHODS, StiffMethod  # noqa: E402 -- the implicit methods, data too

METHODS.update(STIFF_METHODS)


def method(name):
    """The Method called ``name`` (case-insensitive: 'rk45', 'Tsit5', 'DOP853', 'Rodas5P', ...)."""
    if isinstance(name, (Method, StiffMethod)):
        return name
    if not isinstance(name, str):
        raise EagleValueError(f"eagle.ode: method must be a str, one of {', '.join(METHODS)}; got a {type(name).__name__}")
    for k, m in METHODS.items():
        if k.lower() == name.lower():
            return m
    raise EagleValueError(f"eagle.ode: unknown method {name!r}; the methods are {', '.join(METHODS)}")
