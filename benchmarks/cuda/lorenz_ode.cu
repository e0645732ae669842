/* The hand-written single-kernel peers of benchmarks/bench_ode.py: one CUDA thread per Lorenz
 * trajectory, the whole integration in registers (the methods are benchmarks/kernels/lorenz_methods.h,
 * shared with the OpenMP loop). bench_ode.py compiles this file with CuPy's RawKernel (NVRTC,
 * --fmad=true), putting the header's text in place of its #include lines; it also compiles with
 * `nvcc -arch=sm_90 -I benchmarks/kernels -c`.
 *
 * Layout: rho (n,), out (3, n) component-major, so that thread i's loads and stores coalesce.
 * method: 0 Dormand-Prince 5(4) (RK45), 1 Tsitouras 5(4) (Tsit5), 2 classic RK4 (fixed only). */

#define LZ_FN __device__ __forceinline__

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

/* u0 = (1, 0, 0), nsteps steps of h from t = 0 */
#define LZ_FIXED_KERNEL(SFX, T)                                                                       \
    extern "C" __global__ void lorenz_fixed_##SFX(int method, const T* rho, T* out, long long n,     \
                                                  int nsteps, T h) {                                 \
        const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;                         \
        if (i >= n) return;                                                                           \
        T y[3] = {(T)1, (T)0, (T)0};                                                                  \
        const T r = rho[i];                                                                           \
        if (method == 2) lz_rk4_##SFX(r, y, nsteps, h);                                               \
        else lz_pair_fixed_##SFX(method, r, y, nsteps, h);                                            \
        out[i] = y[0]; out[n + i] = y[1]; out[2 * n + i] = y[2];                                      \
    }

/* u0 = (1, 0, 0), adaptive from t0 to t1; status (0 / -1) and step counts per trajectory */
#define LZ_ADAPTIVE_KERNEL(SFX, T)                                                                    \
    extern "C" __global__ void lorenz_adaptive_##SFX(int method, const T* rho, T* out, int* status,   \
                                                     int* n_acc, int* n_rej, long long n, T t0, T t1, \
                                                     T rtol, T atol, int max_steps) {                 \
        const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;                         \
        if (i >= n) return;                                                                           \
        T y[3] = {(T)1, (T)0, (T)0};                                                                  \
        int acc, rej;                                                                                 \
        status[i] = lz_pair_adaptive_##SFX(method, rho[i], y, t0, t1, rtol, atol, max_steps, &acc, &rej); \
        n_acc[i] = acc; n_rej[i] = rej;                                                               \
        out[i] = y[0]; out[n + i] = y[1]; out[2 * n + i] = y[2];                                      \
    }

LZ_FIXED_KERNEL(f64, double)
LZ_FIXED_KERNEL(f32, float)
LZ_ADAPTIVE_KERNEL(f64, double)
LZ_ADAPTIVE_KERNEL(f32, float)
