// CUDA kernels of the oscillator card. Each kernel takes its arguments, then eagle's partition
// triple (int64 base, count, n_samples); lane = base + global thread index, < base + count.
#include <stdint.h>

#define OSC_FN __device__ __forceinline__
#include "oscillator_rk4.h"

#define LANE() (base + (int64_t)blockIdx.x * blockDim.x + threadIdx.x)

extern "C" __global__ void osc_reset(double* x, double* v, int32_t* done, uint8_t* mask,
                                     int64_t base, int64_t count, int64_t n) {
    const int64_t i = LANE();
    if (i >= base + count) return;
    x[i] = 1.0; v[i] = 0.0; done[i] = 0; mask[i] = 0;
}

extern "C" __global__ void osc_steps(const int32_t* __restrict__ idx, const uint32_t* __restrict__ cnt,
                                     double* __restrict__ x, double* __restrict__ v,
                                     const double* __restrict__ omega, const double* __restrict__ zeta,
                                     int32_t* __restrict__ done, const int32_t* __restrict__ target,
                                     uint8_t* __restrict__ mask, int64_t K,
                                     int64_t base, int64_t count, int64_t n) {
    const int64_t l = LANE();
    if (l >= base + count || l >= (int64_t)*cnt) return;
    osc_advance(idx[l], x, v, omega, zeta, done, target, mask, K);
}

extern "C" __global__ void osc_single(double* __restrict__ x, double* __restrict__ v,
                                      const double* __restrict__ omega, const double* __restrict__ zeta,
                                      const int32_t* __restrict__ target,
                                      int64_t base, int64_t count, int64_t n) {
    const int64_t i = LANE();
    if (i >= base + count) return;
    osc_integrate(i, x, v, omega, zeta, target);
}
