/* cpu kernels of the oscillator card: void k(void* const* params, int64_t base, int64_t count,
 * int64_t n_samples); params[i] points at the i-th argument (8 bytes: a pointer or an int64). */
#include <stdint.h>

#include "oscillator_rk4.h"

#define ARG(T, i) (*(T const*)params[i])

/* x = 1, v = 0, done = 0, mask = 0 (live) for every sample. */
void osc_reset(void* const* params, int64_t base, int64_t count, int64_t n) {
    double* x = ARG(double*, 0);
    double* v = ARG(double*, 1);
    int32_t* done = ARG(int32_t*, 2);
    uint8_t* mask = ARG(uint8_t*, 3);
    (void)n;
    for (int64_t i = base; i < base + count; ++i) {
        x[i] = 1.0; v[i] = 0.0; done[i] = 0; mask[i] = 0;
    }
}

/* Up to K steps for each live lane l < *cnt (sample at position idx[l]); marks finished ones. */
void osc_steps(void* const* params, int64_t base, int64_t count, int64_t n) {
    const int32_t* idx = ARG(const int32_t*, 0);
    const uint32_t* cnt = ARG(const uint32_t*, 1);
    double* x = ARG(double*, 2);
    double* v = ARG(double*, 3);
    const double* omega = ARG(const double*, 4);
    const double* zeta = ARG(const double*, 5);
    int32_t* done = ARG(int32_t*, 6);
    const int32_t* target = ARG(const int32_t*, 7);
    uint8_t* mask = ARG(uint8_t*, 8);
    const int64_t K = ARG(int64_t, 9);
    const int64_t live = (int64_t)*cnt;
    (void)n;
    int64_t hi = base + count < live ? base + count : live;
    for (int64_t l = base; l < hi; ++l) osc_advance(idx[l], x, v, omega, zeta, done, target, mask, K);
}

/* The single-kernel reference: each sample integrated from (1, 0) to its own end. */
void osc_single(void* const* params, int64_t base, int64_t count, int64_t n) {
    double* x = ARG(double*, 0);
    double* v = ARG(double*, 1);
    const double* omega = ARG(const double*, 2);
    const double* zeta = ARG(const double*, 3);
    const int32_t* target = ARG(const int32_t*, 4);
    (void)n;
    for (int64_t i = base; i < base + count; ++i) osc_integrate(i, x, v, omega, zeta, target);
}
