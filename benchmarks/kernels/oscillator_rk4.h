/* The CuPy peer's RK4 step of the oscillator card (benchmarks/oscillators.py peer_cupy), written as
 * the peer's own code: eagle's kernels take theirs from the one source examples/oscillator/oscillator.c,
 * and the bench reports the peer's max relative difference from eagle's result.
 * x'' = -2 zeta omega x' - omega^2 x, classic RK4, dt = 1e-3, FP64. OSC_FN marks the function for
 * the including file's language (__device__ for the peer). */
#ifndef OSC_FN
#define OSC_FN static inline
#endif
#define OSC_DT 1e-3

OSC_FN void osc_rk4(double* px, double* pv, double c1, double c2) {
    const double h = OSC_DT, h2 = 0.5 * OSC_DT, h6 = OSC_DT / 6.0;
    const double x = *px, v = *pv;
    const double k1x = v, k1v = -c1 * v - c2 * x;
    const double x2 = x + h2 * k1x, v2 = v + h2 * k1v;
    const double k2x = v2, k2v = -c1 * v2 - c2 * x2;
    const double x3 = x + h2 * k2x, v3 = v + h2 * k2v;
    const double k3x = v3, k3v = -c1 * v3 - c2 * x3;
    const double x4 = x + h * k3x, v4 = v + h * k3v;
    const double k4x = v4, k4v = -c1 * v4 - c2 * x4;
    *px = x + h6 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x);
    *pv = v + h6 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v);
}
