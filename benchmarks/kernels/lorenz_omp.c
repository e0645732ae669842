/* The cpu peer of benchmarks/bench_ode.py: an OpenMP loop over Lorenz trajectories, each integrated
 * by the same hand-written methods as the CUDA kernel (lorenz_methods.h). Compiled at run time with
 * `cc -O3 -fopenmp -march=native -shared -fPIC` and called through ctypes.
 * Layout and method codes as benchmarks/cuda/lorenz_ode.cu: rho (n,), out (3, n); 0 RK45, 1 Tsit5, 2 RK4. */
#include <math.h>
#include <omp.h>

#define LZ_FN static inline

#define LZ_REAL double
#define LZ_SUFFIX f64
#define LZ_SINGLE 0
#include "lorenz_methods.h"
#undef LZ_REAL
#undef LZ_SUFFIX
#undef LZ_SINGLE

#define LZ_REAL float
#define LZ_SUFFIX f32
#define LZ_SINGLE 1
#include "lorenz_methods.h"
#undef LZ_REAL
#undef LZ_SUFFIX
#undef LZ_SINGLE

#define EXPORT __attribute__((visibility("default")))

#define LZ_OMP(SFX, T)                                                                                \
    EXPORT void omp_lorenz_fixed_##SFX(int method, const T* rho, T* out, long long n, int nsteps, T h) { \
        _Pragma("omp parallel for schedule(static)")                                                  \
        for (long long i = 0; i < n; ++i) {                                                           \
            T y[3] = {(T)1, (T)0, (T)0};                                                              \
            if (method == 2) lz_rk4_##SFX(rho[i], y, nsteps, h);                                      \
            else lz_pair_fixed_##SFX(method, rho[i], y, nsteps, h);                                   \
            out[i] = y[0]; out[n + i] = y[1]; out[2 * n + i] = y[2];                                  \
        }                                                                                             \
    }                                                                                                 \
    EXPORT void omp_lorenz_adaptive_##SFX(int method, const T* rho, T* out, int* status, int* n_acc,  \
                                          int* n_rej, long long n, T t0, T t1, T rtol, T atol,        \
                                          int max_steps) {                                            \
        _Pragma("omp parallel for schedule(dynamic, 64)")                                             \
        for (long long i = 0; i < n; ++i) {                                                           \
            T y[3] = {(T)1, (T)0, (T)0};                                                              \
            int acc, rej;                                                                             \
            status[i] = lz_pair_adaptive_##SFX(method, rho[i], y, t0, t1, rtol, atol, max_steps, &acc, &rej); \
            n_acc[i] = acc; n_rej[i] = rej;                                                           \
            out[i] = y[0]; out[n + i] = y[1]; out[2 * n + i] = y[2];                                  \
        }                                                                                             \
    }

LZ_OMP(f64, double)
LZ_OMP(f32, float)

EXPORT int omp_lorenz_threads(void) { return omp_get_max_threads(); }
