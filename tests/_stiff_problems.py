"""Stiff test problems of the Test Set for IVP Solvers (Mazzia-Magherini) and classics, as
traced right-hand sides (numpy-compatible: each also runs on floats, for scipy references)."""
import numpy as np

from eagle.ode import math as em


def rober(t, y, k1, k2, k3):
    return [-k1 * y[0] + k3 * y[1] * y[2],
            k1 * y[0] - k2 * y[1] ** 2 - k3 * y[1] * y[2],
            k2 * y[1] ** 2]


ROBER = dict(fun=rober, y0=[1.0, 0.0, 0.0], args=(0.04, 3e7, 1e4), t1=1e5, d=3)


def hires(t, y):
    y1, y2, y3, y4, y5, y6, y7, y8 = y
    r = 280.0 * y6 * y8
    return [-1.71 * y1 + 0.43 * y2 + 8.32 * y3 + 0.0007,
            1.71 * y1 - 8.75 * y2,
            -10.03 * y3 + 0.43 * y4 + 0.035 * y5,
            8.32 * y2 + 1.71 * y3 - 1.12 * y4,
            -1.745 * y5 + 0.43 * y6 + 0.43 * y7,
            -r + 0.69 * y4 + 1.71 * y5 - 0.43 * y6 + 0.69 * y7,
            r - 1.81 * y7,
            -r + 1.81 * y7]


HIRES = dict(fun=hires, y0=[1.0, 0, 0, 0, 0, 0, 0, 0.0057], args=(), t1=321.8122, d=8)


def orego(t, y):
    return [77.27 * (y[1] + y[0] * (1 - 8.375e-6 * y[0] - y[1])),
            (y[2] - (1 + y[0]) * y[1]) / 77.27,
            0.161 * (y[0] - y[2])]


OREGO = dict(fun=orego, y0=[1.0, 2.0, 3.0], args=(), t1=360.0, d=3)


def vdp(t, y, mu):
    return [y[1], mu * ((1 - y[0] ** 2) * y[1] - y[0])]


def hostile_mix(t, y, a):
    """Every kind of traced node the derivative rules cover."""
    return [np.sin(y[0] * y[1]) + np.exp(-t * y[2]) + em.atan2(y[0], y[1] + 2.0),
            em.where(y[0] > 0.3, y[1] ** 2.5, y[2] / y[0]) + np.log1p(y[1] ** 2) + np.cbrt(y[2] + 2.0),
            a * np.power(np.abs(y[1]) + 1, y[2]) + em.max(y[0], y[2]) + np.tanh(y[0]) * np.sqrt(y[2] ** 2 + 1)
            + em.hypot(y[0], y[2]) + np.arctan(y[1]) + em.erf(y[0]) + np.cosh(y[2]) * np.cos(t)
            + np.minimum(y[1], 0.5) + em.clip(y[2], 0.2, 0.7) + np.arcsin(y[0] / 2) + np.exp2(y[1])]
