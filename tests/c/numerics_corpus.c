/* Ordinary numeric C that uses every name <eagle/numerics.h> promises (through <eagle/kernel.h>),
 * written once for every kind. tests/test_kernel_numerics.py compiles it for cpu (and runs it),
 * for cuda through NVRTC with no GPU, and on a GPU compares the two kinds bit for bit.
 * Plane layout: out[k * n + i] is result k of sample i. No other header is included. */
#include <eagle/kernel.h>

/* The step an adaptive integrator takes towards t_end: never past it, never below the spacing of
 * doubles at t (the user code that found INFINITY missing under NVRTC did exactly this). */
EAGLE_FN double clipped_step(double t, double h, double t_end) {
    const double min_h = 16.0 * (nextafter(t, INFINITY) - t);
    if (isnan(h) || h <= 0.0) h = min_h;
    h = fmax(h, min_h);
    if (t + h > t_end) h = t_end - t;
    return h;
}

#define D_RESULTS 25
EAGLE_KERNEL(numerics_d, (const double*, a), (const double*, b), (const double*, c), (double*, out))
{
    const double x = a[i], y = b[i], z = c[i];
    double r[D_RESULTS];
    r[0] = fmin(x, y);
    r[1] = fmax(x, y);
    r[2] = fabs(x);
    r[3] = copysign(x, y);
    r[4] = nextafter(x, y);
    r[5] = fma(x, y, z);
    r[6] = fmod(x, y);
    r[7] = trunc(x);
    r[8] = round(x);
    r[9] = isnan(x) ? 1.0 : 0.0;
    r[10] = isinf(x) ? 1.0 : 0.0;
    r[11] = isfinite(x) ? 1.0 : 0.0;
    r[12] = signbit(x) ? 1.0 : 0.0;
    r[13] = x / y;
    r[14] = sqrt(x);
    r[15] = x * y;
    r[16] = x + y;
    r[17] = x - y;
    r[18] = floor(x);
    r[19] = ceil(x);
    r[20] = x * y + z;  /* two roundings when exact (x * y is shared with r[15], so no
                           * mode fuses it: test_kernel_numerics.py's MUL_ADD is alone) */
    r[21] = clipped_step(fabs(x), y, fabs(x) + 1.0);
    /* C converts every argument of a double function to double: a float or an int argument too */
    const float xf = (float)fmod(x, 1000.0), af = (float)fmod(fabs(x), 1000.0);
    r[22] = nextafter(xf, INFINITY);  /* the double after xf, not nextafterf's float */
    r[23] = sqrt(af);                 /* the double square root of af */
    r[24] = fmax(x, 0);
    for (int k = 0; k < D_RESULTS; ++k) out[(int64_t)k * n + i] = r[k];
}

#define F_RESULTS 17
EAGLE_KERNEL(numerics_f, (const float*, a), (const float*, b), (const float*, c), (float*, out))
{
    const float x = a[i], y = b[i], z = c[i];
    float r[F_RESULTS];
    r[0] = fminf(x, y);
    r[1] = fmaxf(x, y);
    r[2] = fabsf(x);
    r[3] = copysignf(x, y);
    r[4] = nextafterf(x, y);
    r[5] = fmaf(x, y, z);
    r[6] = fmodf(x, y);
    r[7] = truncf(x);
    r[8] = roundf(x);
    r[9] = isnan(x) ? 1.0f : 0.0f;
    r[10] = isinf(x) ? 1.0f : 0.0f;
    r[11] = isfinite(x) ? 1.0f : 0.0f;
    r[12] = signbit(x) ? 1.0f : 0.0f;
    r[13] = x / y;
    r[14] = x * y;
    r[15] = x + y;
    r[16] = x * y + z;
    for (int k = 0; k < F_RESULTS; ++k) out[(int64_t)k * n + i] = r[k];
}

/* The constants, once (sample 0): doubles, floats as floats, and integers as uint64_t bits. */
EAGLE_KERNEL(numerics_consts, (double*, d), (float*, f), (uint64_t*, u))
{
    (void)n;
    if (i != 0) return;
    const double dc[] = {INFINITY, -INFINITY, NAN, HUGE_VAL, HUGE_VALF,
                         M_E, M_LOG2E, M_LOG10E, M_LN2, M_LN10, M_PI, M_PI_2, M_PI_4, M_1_PI, M_2_PI,
                         M_2_SQRTPI, M_SQRT2, M_SQRT1_2,
                         DBL_EPSILON, DBL_MAX, DBL_MIN, DBL_TRUE_MIN, FLT_EPSILON, FLT_MAX, FLT_MIN, FLT_TRUE_MIN};
    const float fc[] = {INFINITY, NAN, HUGE_VALF, FLT_EPSILON, FLT_MAX, FLT_MIN, FLT_TRUE_MIN};
    const double* none = NULL;
    bool yes = true, no = false;
    const size_t dsize = sizeof(double);
    const ptrdiff_t gap = &dc[3] - &dc[1];
    const uint64_t uc[] = {
        (uint64_t)INT8_MIN, (uint64_t)INT8_MAX, (uint64_t)UINT8_MAX,
        (uint64_t)INT16_MIN, (uint64_t)INT16_MAX, (uint64_t)UINT16_MAX,
        (uint64_t)INT32_MIN, (uint64_t)INT32_MAX, (uint64_t)UINT32_MAX,
        (uint64_t)INT64_MIN, (uint64_t)INT64_MAX, (uint64_t)UINT64_MAX,
        (uint64_t)INTPTR_MIN, (uint64_t)INTPTR_MAX, (uint64_t)UINTPTR_MAX,
        (uint64_t)INTMAX_MIN, (uint64_t)INTMAX_MAX, (uint64_t)UINTMAX_MAX,
        (uint64_t)SIZE_MAX, (uint64_t)PTRDIFF_MIN, (uint64_t)PTRDIFF_MAX,
        (uint64_t)INT64_C(-5000000000), UINT64_C(18000000000000000000), (uint64_t)UINT32_C(4000000000),
        /* C's types: INFINITY, NAN, HUGE_VALF, FLT_* are float; HUGE_VAL, M_*, DBL_* double */
        sizeof(INFINITY), sizeof(NAN), sizeof(HUGE_VAL), sizeof(HUGE_VALF), sizeof(M_PI), sizeof(FLT_MAX),
        sizeof(DBL_MAX), sizeof(INT32_MAX), sizeof(INT64_MAX), sizeof(UINT32_MAX), sizeof(UINT64_MAX),
        sizeof(int8_t), sizeof(uint8_t), sizeof(int16_t), sizeof(uint16_t), sizeof(int32_t), sizeof(uint32_t),
        sizeof(int64_t), sizeof(uint64_t), sizeof(intptr_t), sizeof(uintptr_t), sizeof(intmax_t),
        sizeof(uintmax_t), sizeof(size_t), sizeof(ptrdiff_t), sizeof(bool),
        (uint64_t)(UINT32_MAX + 1u), (uint64_t)(INT32_MIN < 0), (uint64_t)((uint8_t)(UINT8_MAX + 1)),
        (uint64_t)(none == NULL), (uint64_t)yes, (uint64_t)no, (uint64_t)dsize, (uint64_t)gap,
        (uint64_t)DBL_MANT_DIG, (uint64_t)DBL_DIG, (uint64_t)DBL_DECIMAL_DIG, (uint64_t)DBL_MIN_EXP,
        (uint64_t)DBL_MAX_EXP, (uint64_t)DBL_MIN_10_EXP, (uint64_t)DBL_MAX_10_EXP,
        (uint64_t)FLT_MANT_DIG, (uint64_t)FLT_DIG, (uint64_t)FLT_DECIMAL_DIG, (uint64_t)FLT_MIN_EXP,
        (uint64_t)FLT_MAX_EXP, (uint64_t)FLT_MIN_10_EXP, (uint64_t)FLT_MAX_10_EXP, (uint64_t)FLT_RADIX};
    for (size_t k = 0; k < sizeof dc / sizeof dc[0]; ++k) d[k] = dc[k];
    for (size_t k = 0; k < sizeof fc / sizeof fc[0]; ++k) f[k] = fc[k];
    for (size_t k = 0; k < sizeof uc / sizeof uc[0]; ++k) u[k] = uc[k];
}
