/* The oscillator card's per-sample work (anchors_h200.md §3), shared by the cpu and cuda kernels,
 * which only map lanes to samples around it. x'' = -2 zeta omega x' - omega^2 x, classic RK4,
 * dt = 1e-3, FP64. OSC_FN marks the functions for the including file's language (static inline
 * for C, __device__ for CUDA). Both builds keep every operation separate (-ffp-contract=off,
 * -fmad=false), so cpu and cuda agree bit for bit. The per-sample functions need <stdint.h>;
 * define OSC_STEP_ONLY to take osc_rk4 alone (the CuPy peer does, where NVRTC has no <stdint.h>). */
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

#ifndef OSC_STEP_ONLY
/* Sample i advances by up to K steps from where it stopped (done[i]) towards its own end
 * (target[i]); mask[i] says whether it has reached it. */
OSC_FN void osc_advance(int32_t i, double* x, double* v, const double* omega, const double* zeta,
                        int32_t* done, const int32_t* target, uint8_t* mask, int64_t K) {
    const double w = omega[i], c1 = 2.0 * zeta[i] * w, c2 = w * w;
    double xi = x[i], vi = v[i];
    int32_t d = done[i];
    const int32_t t = target[i];
    const int32_t stop = (int64_t)t - d < K ? t : (int32_t)(d + K);
    for (; d < stop; ++d) osc_rk4(&xi, &vi, c1, c2);
    x[i] = xi;
    v[i] = vi;
    done[i] = d;
    mask[i] = d >= t;
}

/* Sample i integrated from (1, 0) to its own end in one go (the single-kernel reference). */
OSC_FN void osc_integrate(int64_t i, double* x, double* v, const double* omega, const double* zeta,
                          const int32_t* target) {
    const double w = omega[i], c1 = 2.0 * zeta[i] * w, c2 = w * w;
    double xi = 1.0, vi = 0.0;
    for (int32_t s = 0; s < target[i]; ++s) osc_rk4(&xi, &vi, c1, c2);
    x[i] = xi;
    v[i] = vi;
}
#endif /* OSC_STEP_ONLY */
