/* The oscillator card, written once for every kind: N damped harmonic oscillators
 * x'' = -2 zeta omega x' - omega^2 x, classic RK4 with dt = 1e-3 in FP64, sample i stopping after its
 * own target[i] steps. Compiled bit-exact (eagle.compile(..., exact=True), as oscillator.py does),
 * cpu and cuda give the same bits; eagle's default mode fuses the multiply-adds instead. */
#include <eagle/kernel.h>

#define DT 1e-3

/* One RK4 step of (x, v) with c1 = 2 zeta omega, c2 = omega^2. */
EAGLE_FN void rk4(double* px, double* pv, double c1, double c2)
{
    const double h = DT, h2 = 0.5 * DT, h6 = DT / 6.0;
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

/* Every sample starts at (1, 0), with no steps done and live (mask 0). */
EAGLE_KERNEL(osc_reset, (double*, x), (double*, v), (int32_t*, done), (uint8_t*, mask))
{
    (void)n;
    x[i] = 1.0;
    v[i] = 0.0;
    done[i] = 0;
    mask[i] = 0;
}

/* The single-kernel reference: sample i integrated from (1, 0) to its own end in one go. */
EAGLE_KERNEL(osc_single, (double*, x), (double*, v), (const double*, omega), (const double*, zeta),
             (const int32_t*, target))
{
    (void)n;
    const double w = omega[i], c1 = 2.0 * zeta[i] * w, c2 = w * w;
    double xi = 1.0, vi = 0.0;
    for (int32_t s = 0; s < target[i]; ++s) rk4(&xi, &vi, c1, c2);
    x[i] = xi;
    v[i] = vi;
}

/* Sample i advances by up to K steps towards its own end; mask[i] = 1 once it is there.
 * Launched as osc_steps_active over an ActiveSet, only the live samples run. */
EAGLE_KERNEL(osc_steps, (double*, x), (double*, v), (const double*, omega), (const double*, zeta),
             (int32_t*, done), (const int32_t*, target), (uint8_t*, mask), (int64_t, K))
{
    (void)n;
    const double w = omega[i], c1 = 2.0 * zeta[i] * w, c2 = w * w;
    double xi = x[i], vi = v[i];
    int32_t d = done[i];
    const int32_t t = target[i];
    const int32_t stop = (int64_t)t - d < K ? t : (int32_t)(d + K);
    for (; d < stop; ++d) rk4(&xi, &vi, c1, c2);
    x[i] = xi;
    v[i] = vi;
    done[i] = d;
    mask[i] = d >= t;
}
