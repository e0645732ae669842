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


def van_der_pol(t, y, mu):
    """The unscaled form, x'' = mu (1 - x^2) x' - x: stiff for large mu on times of order mu."""
    return [y[1], mu * (1 - y[0] * y[0]) * y[1] - y[0]]


def hostile_mix(t, y, a):
    """Every kind of traced node the derivative rules cover."""
    return [np.sin(y[0] * y[1]) + np.exp(-t * y[2]) + em.atan2(y[0], y[1] + 2.0),
            em.where(y[0] > 0.3, y[1] ** 2.5, y[2] / y[0]) + np.log1p(y[1] ** 2) + np.cbrt(y[2] + 2.0),
            a * np.power(np.abs(y[1]) + 1, y[2]) + em.max(y[0], y[2]) + np.tanh(y[0]) * np.sqrt(y[2] ** 2 + 1)
            + em.hypot(y[0], y[2]) + np.arctan(y[1]) + em.erf(y[0]) + np.cosh(y[2]) * np.cos(t)
            + np.minimum(y[1], 0.5) + em.clip(y[2], 0.2, 0.7) + np.arcsin(y[0] / 2) + np.exp2(y[1])]


_POLLU_K = (0.35, 0.266e2, 0.123e5, 0.86e-3, 0.82e-3, 0.15e5, 0.13e-3, 0.24e5, 0.165e5, 0.9e4, 0.22e-1, 0.12e5,
            0.188e1, 0.163e5, 0.48e7, 0.35e-3, 0.175e-1, 0.1e9, 0.444e12, 0.124e4, 0.21e1, 0.578e1, 0.474e-1,
            0.178e4, 0.312e1)


def pollu(t, y):
    """POLLU (Test Set): the Dutch National Institute's air pollution model, 20 species, 25 reactions."""
    k = _POLLU_K
    y1, y2, y3, y4, y5, y6, y7, y8, y9, y10, y11, y12, y13, y14, y15, y16, y17, y18, y19, y20 = y
    r = [k[0] * y1, k[1] * y2 * y4, k[2] * y5 * y2, k[3] * y7, k[4] * y7, k[5] * y7 * y6, k[6] * y9,
         k[7] * y9 * y6, k[8] * y11 * y2, k[9] * y11 * y1, k[10] * y13, k[11] * y10 * y2, k[12] * y14,
         k[13] * y1 * y6, k[14] * y3, k[15] * y4, k[16] * y4, k[17] * y16, k[18] * y16, k[19] * y17 * y6,
         k[20] * y19, k[21] * y19, k[22] * y1 * y4, k[23] * y19 * y1, k[24] * y20]
    r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15, r16, r17, r18, r19, r20, r21, r22, r23, r24, r25 = r
    return [-r1 - r10 - r14 - r23 - r24 + r2 + r3 + r9 + r11 + r12 + r22 + r25,
            -r2 - r3 - r9 - r12 + r1 + r21,
            -r15 + r1 + r17 + r19 + r22,
            -r2 - r16 - r17 - r23 + r15,
            -r3 + r4 + r4 + r6 + r7 + r13 + r20,
            -r6 - r8 - r14 - r20 + r3 + r18 + r18,
            -r4 - r5 - r6 + r13,
            r4 + r5 + r6 + r7,
            -r7 - r8,
            -r12 + r7 + r9,
            -r9 - r10 + r8 + r11,
            r9,
            -r11 + r10,
            -r13 + r12,
            r14,
            -r18 - r19 + r16,
            -r20,
            r20,
            -r21 - r22 - r24 + r23 + r25,
            -r25 + r24]


POLLU_Y0 = [0.0, 0.2, 0.0, 0.04, 0.0, 0.0, 0.1, 0.3, 0.01, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.007, 0.0, 0.0, 0.0]
POLLU = dict(fun=pollu, y0=POLLU_Y0, args=(), t1=60.0, d=20)
