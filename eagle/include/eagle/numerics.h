/*
 * eagle/numerics.h -- the C numerics vocabulary, the same on every kind.
 *
 * <eagle/kernel.h> includes this header; a kernel source may include it on its own too. It gives
 * every kind what ordinary numeric C uses, with C's meaning:
 *
 *   from <math.h>    INFINITY NAN (float) HUGE_VAL (double) HUGE_VALF (float); the constants
 *                    M_E M_LOG2E M_LOG10E M_LN2 M_LN10 M_PI M_PI_2 M_PI_4 M_1_PI M_2_PI M_2_SQRTPI
 *                    M_SQRT2 M_SQRT1_2 (double); isnan isinf isfinite signbit (nonzero when true),
 *                    and the functions: fmin fmax fabs copysign nextafter fma fmod trunc round
 *                    floor ceil sqrt exp log pow sin cos ... with their float `f` versions
 *   from <float.h>   DBL_/FLT_ EPSILON MAX MIN TRUE_MIN MANT_DIG DIG DECIMAL_DIG MIN_EXP MAX_EXP
 *                    MIN_10_EXP MAX_10_EXP, FLT_RADIX
 *   from <stdint.h>  int8_t .. int64_t, uint8_t .. uint64_t, intptr_t, uintptr_t, intmax_t,
 *                    uintmax_t; their limits INTn_MIN INTn_MAX UINTn_MAX, INTPTR_MIN/MAX,
 *                    UINTPTR_MAX, INTMAX_MIN/MAX, UINTMAX_MAX, SIZE_MAX, PTRDIFF_MIN/MAX; the
 *                    constant macros INTn_C UINTn_C
 *   from <stdbool.h> bool true false;   from <stddef.h> size_t ptrdiff_t NULL
 *
 * Where they come from, per kind:
 *   opencl (OpenCL C, __OPENCL_VERSION__): the language's own built-ins, each double function
 *       made to take doubles and each float one floats as in C (OpenCL C overloads them as C++
 *       does; see the opencl block below); the fixed-width types are typedefs here, FP64 is
 *       enabled by cl_khr_fp64.
 *   cpu (the system C compiler): the C library's own headers. A strict -std=c11 hides the M_
 *       constants in glibc's <math.h>; they are then defined here, with the same values.
 *   cuda by NVRTC (__CUDACC_RTC__) and hip by hiprtc (__HIPCC_RTC__): a runtime compiler has no C
 *       library headers. The functions are the kind's device math library (CUDA's and HIP's math
 *       builtins), present without a header; every macro and type above is defined here, each
 *       under #ifndef so a definition the compiler already has wins (a source that brings its own
 *       fixed-width types defines EAGLE_HAVE_STDINT first). INFINITY, NAN, HUGE_VAL(F) are
 *       constant expressions of the exact IEEE bits (NAN: the quiet NaN with a clear sign bit and
 *       payload, as glibc's).
 *   cuda by nvcc, hip by hipcc (offline): the C headers the toolkit brings, then the same
 *       fallbacks.
 *   On every GPU kind and on opencl the double functions (sqrt, nextafter, fmax, ...) convert their
 *   arguments to double as C does, rather than picking a float overload (see below).
 * Every kind eagle ships offers every name above. A kind that cannot offer one must say so here,
 * at compile time, by name (a declaration that fails to compile only where it is used), never by a
 * silent different meaning.
 *
 * Semantics worth knowing. The operations IEEE 754 defines exactly -- + - * / sqrt fma fmod fabs
 * copysign trunc round floor ceil nextafter, comparisons and the classifications -- give the same
 * bits on every kind when the source is compiled bit-exact (eagle.compile(..., exact=True)); so
 * do fmin and fmax, except that the sign of a zero from fmin(-0.0, +0.0) is left open by C. exp,
 * log, pow, sin and the other library functions come from each kind's math library and may differ
 * in the last place. Under C++ (every GPU kind) isnan/isinf/isfinite/signbit return bool rather
 * than int: test them as truth values, as C allows.
 */
#ifndef EAGLE_NUMERICS_H
#define EAGLE_NUMERICS_H

#if defined(__OPENCL_VERSION__) || defined(__OPENCL_C_VERSION__)
/* ---- OpenCL C (the opencl kind, by the platform's clBuildProgram): no C library headers. size_t,
 * ptrdiff_t, intptr_t, uintptr_t, bool/true/false, NULL, INFINITY, NAN, HUGE_VAL(F), the FLT_ and
 * DBL_ limits, M_PI & co. and the math functions are the language's own; the fixed-width types
 * are ours (long is 64 bits in OpenCL C), and FP64 is switched on (cl_khr_fp64). */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#if !defined(EAGLE_HAVE_STDINT)
typedef char int8_t;
typedef uchar uint8_t;
typedef short int16_t;
typedef ushort uint16_t;
typedef int int32_t;
typedef uint uint32_t;
typedef long int64_t;
typedef ulong uint64_t;
typedef long intmax_t;
typedef ulong uintmax_t;
#endif
/* NAN is the quiet NaN with a clear sign bit and payload (0x7fc00000), as glibc's and the GPU
 * kinds' (PoCL's own is 0x7fffffff). */
#undef NAN
#define NAN as_float(0x7fc00000u)
/* OpenCL C has no long long: the 64-bit limits and constant macros use long. */
#define INT64_MAX 9223372036854775807l
#define INT64_MIN (-9223372036854775807l - 1)
#define UINT64_MAX 18446744073709551615ul
#define INT8_C(c) c
#define INT16_C(c) c
#define INT32_C(c) c
#define INT64_C(c) c##l
#define UINT8_C(c) c
#define UINT16_C(c) c
#define UINT32_C(c) c##u
#define UINT64_C(c) c##ul
#define INTMAX_C(c) c##l
#define UINTMAX_C(c) c##ul
/* C's <math.h> functions with C's meaning. OpenCL C's math functions are overloaded for float and
 * double (as C++'s are): nextafter(t, INFINITY) (a double and a float) matches two overloads and
 * does not compile, sqrt(2) neither, and sqrt(x) of a float is the float square root. So, as on
 * the GPU kinds below, each double function f takes doubles (an argument of another type is
 * converted, as a C prototype converts it) and each float function ff (sqrtf, ...) floats: both
 * are macros that call an eagle_ocl_ function of fixed types, defined here while f is still the
 * platform's own name (some platforms, PoCL among them, define their built-ins as macros, which
 * is why f cannot simply call itself). The classifications (isnan, isinf, isfinite, signbit) are
 * type-generic in C too and stay the platform's. The C functions OpenCL C lacks are written with
 * the ones it has (the same result in the default rounding mode). */
#define EAGLE_OCL_MATH1(fn) \
    static inline double eagle_ocl_##fn(double x) { return fn(x); } \
    static inline float eagle_ocl_##fn##f(float x) { return fn(x); }
#define EAGLE_OCL_MATH2(fn) \
    static inline double eagle_ocl_##fn(double x, double y) { return fn(x, y); } \
    static inline float eagle_ocl_##fn##f(float x, float y) { return fn(x, y); }

EAGLE_OCL_MATH1(acos)
EAGLE_OCL_MATH1(asin)
EAGLE_OCL_MATH1(atan)
EAGLE_OCL_MATH1(cos)
EAGLE_OCL_MATH1(sin)
EAGLE_OCL_MATH1(tan)
EAGLE_OCL_MATH1(acosh)
EAGLE_OCL_MATH1(asinh)
EAGLE_OCL_MATH1(atanh)
EAGLE_OCL_MATH1(cosh)
EAGLE_OCL_MATH1(sinh)
EAGLE_OCL_MATH1(tanh)
EAGLE_OCL_MATH1(exp)
EAGLE_OCL_MATH1(exp2)
EAGLE_OCL_MATH1(expm1)
EAGLE_OCL_MATH1(log)
EAGLE_OCL_MATH1(log10)
EAGLE_OCL_MATH1(log1p)
EAGLE_OCL_MATH1(log2)
EAGLE_OCL_MATH1(logb)
EAGLE_OCL_MATH1(cbrt)
EAGLE_OCL_MATH1(fabs)
EAGLE_OCL_MATH1(sqrt)
EAGLE_OCL_MATH1(erf)
EAGLE_OCL_MATH1(erfc)
EAGLE_OCL_MATH1(lgamma)
EAGLE_OCL_MATH1(tgamma)
EAGLE_OCL_MATH1(ceil)
EAGLE_OCL_MATH1(floor)
EAGLE_OCL_MATH1(rint)
EAGLE_OCL_MATH1(round)
EAGLE_OCL_MATH1(trunc)
EAGLE_OCL_MATH2(atan2)
EAGLE_OCL_MATH2(hypot)
EAGLE_OCL_MATH2(pow)
EAGLE_OCL_MATH2(fmod)
EAGLE_OCL_MATH2(remainder)
EAGLE_OCL_MATH2(copysign)
EAGLE_OCL_MATH2(nextafter)
EAGLE_OCL_MATH2(fdim)
EAGLE_OCL_MATH2(fmax)
EAGLE_OCL_MATH2(fmin)
static inline double eagle_ocl_fma(double x, double y, double z) { return fma(x, y, z); }
static inline float eagle_ocl_fmaf(float x, float y, float z) { return fma(x, y, z); }
static inline double eagle_ocl_ldexp(double x, int e) { return ldexp(x, e); }
static inline float eagle_ocl_ldexpf(float x, int e) { return ldexp(x, e); }
static inline int eagle_ocl_ilogb(double x) { return ilogb(x); }
static inline int eagle_ocl_ilogbf(float x) { return ilogb(x); }
#undef EAGLE_OCL_MATH1
#undef EAGLE_OCL_MATH2
#undef acos
#define acos(x) eagle_ocl_acos(x)
#undef acosf
#define acosf(x) eagle_ocl_acosf(x)
#undef asin
#define asin(x) eagle_ocl_asin(x)
#undef asinf
#define asinf(x) eagle_ocl_asinf(x)
#undef atan
#define atan(x) eagle_ocl_atan(x)
#undef atanf
#define atanf(x) eagle_ocl_atanf(x)
#undef cos
#define cos(x) eagle_ocl_cos(x)
#undef cosf
#define cosf(x) eagle_ocl_cosf(x)
#undef sin
#define sin(x) eagle_ocl_sin(x)
#undef sinf
#define sinf(x) eagle_ocl_sinf(x)
#undef tan
#define tan(x) eagle_ocl_tan(x)
#undef tanf
#define tanf(x) eagle_ocl_tanf(x)
#undef acosh
#define acosh(x) eagle_ocl_acosh(x)
#undef acoshf
#define acoshf(x) eagle_ocl_acoshf(x)
#undef asinh
#define asinh(x) eagle_ocl_asinh(x)
#undef asinhf
#define asinhf(x) eagle_ocl_asinhf(x)
#undef atanh
#define atanh(x) eagle_ocl_atanh(x)
#undef atanhf
#define atanhf(x) eagle_ocl_atanhf(x)
#undef cosh
#define cosh(x) eagle_ocl_cosh(x)
#undef coshf
#define coshf(x) eagle_ocl_coshf(x)
#undef sinh
#define sinh(x) eagle_ocl_sinh(x)
#undef sinhf
#define sinhf(x) eagle_ocl_sinhf(x)
#undef tanh
#define tanh(x) eagle_ocl_tanh(x)
#undef tanhf
#define tanhf(x) eagle_ocl_tanhf(x)
#undef exp
#define exp(x) eagle_ocl_exp(x)
#undef expf
#define expf(x) eagle_ocl_expf(x)
#undef exp2
#define exp2(x) eagle_ocl_exp2(x)
#undef exp2f
#define exp2f(x) eagle_ocl_exp2f(x)
#undef expm1
#define expm1(x) eagle_ocl_expm1(x)
#undef expm1f
#define expm1f(x) eagle_ocl_expm1f(x)
#undef log
#define log(x) eagle_ocl_log(x)
#undef logf
#define logf(x) eagle_ocl_logf(x)
#undef log10
#define log10(x) eagle_ocl_log10(x)
#undef log10f
#define log10f(x) eagle_ocl_log10f(x)
#undef log1p
#define log1p(x) eagle_ocl_log1p(x)
#undef log1pf
#define log1pf(x) eagle_ocl_log1pf(x)
#undef log2
#define log2(x) eagle_ocl_log2(x)
#undef log2f
#define log2f(x) eagle_ocl_log2f(x)
#undef logb
#define logb(x) eagle_ocl_logb(x)
#undef logbf
#define logbf(x) eagle_ocl_logbf(x)
#undef cbrt
#define cbrt(x) eagle_ocl_cbrt(x)
#undef cbrtf
#define cbrtf(x) eagle_ocl_cbrtf(x)
#undef fabs
#define fabs(x) eagle_ocl_fabs(x)
#undef fabsf
#define fabsf(x) eagle_ocl_fabsf(x)
#undef sqrt
#define sqrt(x) eagle_ocl_sqrt(x)
#undef sqrtf
#define sqrtf(x) eagle_ocl_sqrtf(x)
#undef erf
#define erf(x) eagle_ocl_erf(x)
#undef erff
#define erff(x) eagle_ocl_erff(x)
#undef erfc
#define erfc(x) eagle_ocl_erfc(x)
#undef erfcf
#define erfcf(x) eagle_ocl_erfcf(x)
#undef lgamma
#define lgamma(x) eagle_ocl_lgamma(x)
#undef lgammaf
#define lgammaf(x) eagle_ocl_lgammaf(x)
#undef tgamma
#define tgamma(x) eagle_ocl_tgamma(x)
#undef tgammaf
#define tgammaf(x) eagle_ocl_tgammaf(x)
#undef ceil
#define ceil(x) eagle_ocl_ceil(x)
#undef ceilf
#define ceilf(x) eagle_ocl_ceilf(x)
#undef floor
#define floor(x) eagle_ocl_floor(x)
#undef floorf
#define floorf(x) eagle_ocl_floorf(x)
#undef rint
#define rint(x) eagle_ocl_rint(x)
#undef rintf
#define rintf(x) eagle_ocl_rintf(x)
#undef round
#define round(x) eagle_ocl_round(x)
#undef roundf
#define roundf(x) eagle_ocl_roundf(x)
#undef trunc
#define trunc(x) eagle_ocl_trunc(x)
#undef truncf
#define truncf(x) eagle_ocl_truncf(x)
#undef atan2
#define atan2(x, y) eagle_ocl_atan2(x, y)
#undef atan2f
#define atan2f(x, y) eagle_ocl_atan2f(x, y)
#undef hypot
#define hypot(x, y) eagle_ocl_hypot(x, y)
#undef hypotf
#define hypotf(x, y) eagle_ocl_hypotf(x, y)
#undef pow
#define pow(x, y) eagle_ocl_pow(x, y)
#undef powf
#define powf(x, y) eagle_ocl_powf(x, y)
#undef fmod
#define fmod(x, y) eagle_ocl_fmod(x, y)
#undef fmodf
#define fmodf(x, y) eagle_ocl_fmodf(x, y)
#undef remainder
#define remainder(x, y) eagle_ocl_remainder(x, y)
#undef remainderf
#define remainderf(x, y) eagle_ocl_remainderf(x, y)
#undef copysign
#define copysign(x, y) eagle_ocl_copysign(x, y)
#undef copysignf
#define copysignf(x, y) eagle_ocl_copysignf(x, y)
#undef nextafter
#define nextafter(x, y) eagle_ocl_nextafter(x, y)
#undef nextafterf
#define nextafterf(x, y) eagle_ocl_nextafterf(x, y)
#undef fdim
#define fdim(x, y) eagle_ocl_fdim(x, y)
#undef fdimf
#define fdimf(x, y) eagle_ocl_fdimf(x, y)
#undef fmax
#define fmax(x, y) eagle_ocl_fmax(x, y)
#undef fmaxf
#define fmaxf(x, y) eagle_ocl_fmaxf(x, y)
#undef fmin
#define fmin(x, y) eagle_ocl_fmin(x, y)
#undef fminf
#define fminf(x, y) eagle_ocl_fminf(x, y)
#undef fma
#define fma(x, y, z) eagle_ocl_fma(x, y, z)
#undef fmaf
#define fmaf(x, y, z) eagle_ocl_fmaf(x, y, z)
#undef ldexp
#define ldexp(x, e) eagle_ocl_ldexp(x, e)
#undef ldexpf
#define ldexpf(x, e) eagle_ocl_ldexpf(x, e)
#undef ilogb
#define ilogb(x) eagle_ocl_ilogb(x)
#undef ilogbf
#define ilogbf(x) eagle_ocl_ilogbf(x)
/* frexp, modf and remquo write through a pointer: they stay OpenCL C's overloads (a float
 * argument picks the float one, which is what frexpf and the others are). */
#ifndef frexpf
#define frexpf(x, e) frexp((float)(x), e)
#endif
#ifndef modff
#define modff(x, ip) modf((float)(x), ip)
#endif
#ifndef remquof
#define remquof(x, y, q) remquo((float)(x), (float)(y), q)
#endif
#define scalbnf(x, e) eagle_ocl_ldexpf(x, (int)(e))
#define scalbn(x, e) eagle_ocl_ldexp(x, (int)(e))
#define nearbyintf(x) eagle_ocl_rintf(x)
#define nearbyint(x) eagle_ocl_rint(x)
#define lrintf(x) ((long)eagle_ocl_rintf(x))
#define lrint(x) ((long)eagle_ocl_rint(x))
#define llrintf(x) ((long)eagle_ocl_rintf(x))
#define llrint(x) ((long)eagle_ocl_rint(x))
#define lroundf(x) ((long)eagle_ocl_roundf(x))
#define lround(x) ((long)eagle_ocl_round(x))
#define llroundf(x) ((long)eagle_ocl_roundf(x))
#define llround(x) ((long)eagle_ocl_round(x))
#elif defined(__CUDACC_RTC__) || defined(__HIPCC_RTC__)
/* ---- a runtime compiler: no C library headers; the types are ours */
#if !defined(EAGLE_HAVE_STDINT)
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef long intptr_t;            /* LP64: every GPU kind's device ABI */
typedef unsigned long uintptr_t;
typedef long long intmax_t;
typedef unsigned long long uintmax_t;
#endif
/* size_t, ptrdiff_t, bool, true, false and NULL are the compiler's own (C++). */
#define EAGLE_NUMERICS_BITS_F(u) __builtin_bit_cast(float, (unsigned int)(u))
#define EAGLE_NUMERICS_BITS_D(u) __builtin_bit_cast(double, (unsigned long long)(u))
#ifndef INFINITY
#define INFINITY EAGLE_NUMERICS_BITS_F(0x7f800000u)
#endif
#ifndef NAN
#define NAN EAGLE_NUMERICS_BITS_F(0x7fc00000u)
#endif
#ifndef HUGE_VALF
#define HUGE_VALF EAGLE_NUMERICS_BITS_F(0x7f800000u)
#endif
#ifndef HUGE_VAL
#define HUGE_VAL EAGLE_NUMERICS_BITS_D(0x7ff0000000000000ull)
#endif
#else
/* ---- a C or offline C++ compiler: the C library's headers */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif
#endif

/* ---- C's <math.h> functions on a GPU kind. In C they take and return double: an argument of
 * another type is converted, as a prototype converts it. Every GPU compiler (NVRTC, hiprtc, nvcc,
 * hipcc) is C++, whose math functions are overloaded for float too: there nextafter(t, INFINITY)
 * (a double and a float) matches two overloads and does not compile, and sqrt(x) of a float is
 * the float square root. Each double function is therefore a macro that converts its
 * floating-point arguments to double and calls the double function (a macro does not expand
 * inside its own expansion), so a call means what it means in C. The float versions (sqrtf,
 * fminf, ...) take only floats already, and the classifications (isnan, isinf, isfinite,
 * signbit) are type-generic in C too: they are the compiler's own. Define EAGLE_CXX_MATH before
 * the include to keep C++'s overloads (then a source that includes <cmath> after this header
 * compiles too; with the macros it must include <cmath> first). */
#if (defined(__CUDACC_RTC__) || defined(__HIPCC_RTC__) || defined(__CUDACC__) || defined(__HIPCC__)) && \
    !defined(EAGLE_CXX_MATH)
#define EAGLE_NUMERICS_D1(x) ((double)(x))
#define acos(x) acos(EAGLE_NUMERICS_D1(x))
#define asin(x) asin(EAGLE_NUMERICS_D1(x))
#define atan(x) atan(EAGLE_NUMERICS_D1(x))
#define atan2(y, x) atan2(EAGLE_NUMERICS_D1(y), EAGLE_NUMERICS_D1(x))
#define cos(x) cos(EAGLE_NUMERICS_D1(x))
#define sin(x) sin(EAGLE_NUMERICS_D1(x))
#define tan(x) tan(EAGLE_NUMERICS_D1(x))
#define acosh(x) acosh(EAGLE_NUMERICS_D1(x))
#define asinh(x) asinh(EAGLE_NUMERICS_D1(x))
#define atanh(x) atanh(EAGLE_NUMERICS_D1(x))
#define cosh(x) cosh(EAGLE_NUMERICS_D1(x))
#define sinh(x) sinh(EAGLE_NUMERICS_D1(x))
#define tanh(x) tanh(EAGLE_NUMERICS_D1(x))
#define exp(x) exp(EAGLE_NUMERICS_D1(x))
#define exp2(x) exp2(EAGLE_NUMERICS_D1(x))
#define expm1(x) expm1(EAGLE_NUMERICS_D1(x))
#define log(x) log(EAGLE_NUMERICS_D1(x))
#define log10(x) log10(EAGLE_NUMERICS_D1(x))
#define log1p(x) log1p(EAGLE_NUMERICS_D1(x))
#define log2(x) log2(EAGLE_NUMERICS_D1(x))
#define logb(x) logb(EAGLE_NUMERICS_D1(x))
#define ilogb(x) ilogb(EAGLE_NUMERICS_D1(x))
#define frexp(x, e) frexp(EAGLE_NUMERICS_D1(x), e)
#define ldexp(x, e) ldexp(EAGLE_NUMERICS_D1(x), e)
#define scalbn(x, e) scalbn(EAGLE_NUMERICS_D1(x), e)
#define modf(x, ip) modf(EAGLE_NUMERICS_D1(x), ip)
#define cbrt(x) cbrt(EAGLE_NUMERICS_D1(x))
#define fabs(x) fabs(EAGLE_NUMERICS_D1(x))
#define hypot(x, y) hypot(EAGLE_NUMERICS_D1(x), EAGLE_NUMERICS_D1(y))
#define pow(x, y) pow(EAGLE_NUMERICS_D1(x), EAGLE_NUMERICS_D1(y))
#define sqrt(x) sqrt(EAGLE_NUMERICS_D1(x))
#define erf(x) erf(EAGLE_NUMERICS_D1(x))
#define erfc(x) erfc(EAGLE_NUMERICS_D1(x))
#define lgamma(x) lgamma(EAGLE_NUMERICS_D1(x))
#define tgamma(x) tgamma(EAGLE_NUMERICS_D1(x))
#define ceil(x) ceil(EAGLE_NUMERICS_D1(x))
#define floor(x) floor(EAGLE_NUMERICS_D1(x))
#define nearbyint(x) nearbyint(EAGLE_NUMERICS_D1(x))
#define rint(x) rint(EAGLE_NUMERICS_D1(x))
#define lrint(x) lrint(EAGLE_NUMERICS_D1(x))
#define llrint(x) llrint(EAGLE_NUMERICS_D1(x))
#define round(x) round(EAGLE_NUMERICS_D1(x))
#define lround(x) lround(EAGLE_NUMERICS_D1(x))
#define llround(x) llround(EAGLE_NUMERICS_D1(x))
#define trunc(x) trunc(EAGLE_NUMERICS_D1(x))
#define fmod(x, y) fmod(EAGLE_NUMERICS_D1(x), EAGLE_NUMERICS_D1(y))
#define remainder(x, y) remainder(EAGLE_NUMERICS_D1(x), EAGLE_NUMERICS_D1(y))
#define remquo(x, y, q) remquo(EAGLE_NUMERICS_D1(x), EAGLE_NUMERICS_D1(y), q)
#define copysign(x, y) copysign(EAGLE_NUMERICS_D1(x), EAGLE_NUMERICS_D1(y))
#define nextafter(x, y) nextafter(EAGLE_NUMERICS_D1(x), EAGLE_NUMERICS_D1(y))
#define fdim(x, y) fdim(EAGLE_NUMERICS_D1(x), EAGLE_NUMERICS_D1(y))
#define fmax(x, y) fmax(EAGLE_NUMERICS_D1(x), EAGLE_NUMERICS_D1(y))
#define fmin(x, y) fmin(EAGLE_NUMERICS_D1(x), EAGLE_NUMERICS_D1(y))
#define fma(x, y, z) fma(EAGLE_NUMERICS_D1(x), EAGLE_NUMERICS_D1(y), EAGLE_NUMERICS_D1(z))
#endif

/* ---- <math.h>'s M_ constants (POSIX / XSI; glibc hides them under a strict -std=c11) */
#ifndef M_E
#define M_E 2.7182818284590452354
#endif
#ifndef M_LOG2E
#define M_LOG2E 1.4426950408889634074
#endif
#ifndef M_LOG10E
#define M_LOG10E 0.43429448190325182765
#endif
#ifndef M_LN2
#define M_LN2 0.69314718055994530942
#endif
#ifndef M_LN10
#define M_LN10 2.30258509299404568402
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#ifndef M_PI_2
#define M_PI_2 1.57079632679489661923
#endif
#ifndef M_PI_4
#define M_PI_4 0.78539816339744830962
#endif
#ifndef M_1_PI
#define M_1_PI 0.31830988618379067154
#endif
#ifndef M_2_PI
#define M_2_PI 0.63661977236758134308
#endif
#ifndef M_2_SQRTPI
#define M_2_SQRTPI 1.12837916709551257390
#endif
#ifndef M_SQRT2
#define M_SQRT2 1.41421356237309504880
#endif
#ifndef M_SQRT1_2
#define M_SQRT1_2 0.70710678118654752440
#endif

/* ---- <float.h> (IEEE binary32 and binary64 on every kind), as exact hexadecimal literals */
#ifndef FLT_RADIX
#define FLT_RADIX 2
#endif
#ifndef DBL_EPSILON
#define DBL_EPSILON 0x1p-52
#endif
#ifndef DBL_MAX
#define DBL_MAX 0x1.fffffffffffffp+1023
#endif
#ifndef DBL_MIN
#define DBL_MIN 0x1p-1022
#endif
#ifndef DBL_TRUE_MIN
#define DBL_TRUE_MIN 0x1p-1074
#endif
#ifndef DBL_MANT_DIG
#define DBL_MANT_DIG 53
#endif
#ifndef DBL_DIG
#define DBL_DIG 15
#endif
#ifndef DBL_DECIMAL_DIG
#define DBL_DECIMAL_DIG 17
#endif
#ifndef DBL_MIN_EXP
#define DBL_MIN_EXP (-1021)
#endif
#ifndef DBL_MAX_EXP
#define DBL_MAX_EXP 1024
#endif
#ifndef DBL_MIN_10_EXP
#define DBL_MIN_10_EXP (-307)
#endif
#ifndef DBL_MAX_10_EXP
#define DBL_MAX_10_EXP 308
#endif
#ifndef FLT_EPSILON
#define FLT_EPSILON 0x1p-23F
#endif
#ifndef FLT_MAX
#define FLT_MAX 0x1.fffffep+127F
#endif
#ifndef FLT_MIN
#define FLT_MIN 0x1p-126F
#endif
#ifndef FLT_TRUE_MIN
#define FLT_TRUE_MIN 0x1p-149F
#endif
#ifndef FLT_MANT_DIG
#define FLT_MANT_DIG 24
#endif
#ifndef FLT_DIG
#define FLT_DIG 6
#endif
#ifndef FLT_DECIMAL_DIG
#define FLT_DECIMAL_DIG 9
#endif
#ifndef FLT_MIN_EXP
#define FLT_MIN_EXP (-125)
#endif
#ifndef FLT_MAX_EXP
#define FLT_MAX_EXP 128
#endif
#ifndef FLT_MIN_10_EXP
#define FLT_MIN_10_EXP (-37)
#endif
#ifndef FLT_MAX_10_EXP
#define FLT_MAX_10_EXP 38
#endif

/* ---- <stdint.h>'s limits and constant macros (types as C gives them: int, unsigned, long long) */
#ifndef INT8_MAX
#define INT8_MAX 127
#endif
#ifndef INT8_MIN
#define INT8_MIN (-128)
#endif
#ifndef UINT8_MAX
#define UINT8_MAX 255
#endif
#ifndef INT16_MAX
#define INT16_MAX 32767
#endif
#ifndef INT16_MIN
#define INT16_MIN (-32767 - 1)
#endif
#ifndef UINT16_MAX
#define UINT16_MAX 65535
#endif
#ifndef INT32_MAX
#define INT32_MAX 2147483647
#endif
#ifndef INT32_MIN
#define INT32_MIN (-2147483647 - 1)
#endif
#ifndef UINT32_MAX
#define UINT32_MAX 4294967295u
#endif
#ifndef INT64_MAX
#define INT64_MAX 9223372036854775807ll
#endif
#ifndef INT64_MIN
#define INT64_MIN (-9223372036854775807ll - 1)
#endif
#ifndef UINT64_MAX
#define UINT64_MAX 18446744073709551615ull
#endif
#ifndef INTPTR_MAX
#define INTPTR_MAX 9223372036854775807l
#endif
#ifndef INTPTR_MIN
#define INTPTR_MIN (-9223372036854775807l - 1)
#endif
#ifndef UINTPTR_MAX
#define UINTPTR_MAX 18446744073709551615ul
#endif
#ifndef INTMAX_MAX
#define INTMAX_MAX INT64_MAX
#endif
#ifndef INTMAX_MIN
#define INTMAX_MIN INT64_MIN
#endif
#ifndef UINTMAX_MAX
#define UINTMAX_MAX UINT64_MAX
#endif
#ifndef SIZE_MAX
#define SIZE_MAX 18446744073709551615ul
#endif
#ifndef PTRDIFF_MAX
#define PTRDIFF_MAX 9223372036854775807l
#endif
#ifndef PTRDIFF_MIN
#define PTRDIFF_MIN (-9223372036854775807l - 1)
#endif
#ifndef INT8_C
#define INT8_C(c) c
#define INT16_C(c) c
#define INT32_C(c) c
#define INT64_C(c) c##ll
#define UINT8_C(c) c
#define UINT16_C(c) c
#define UINT32_C(c) c##u
#define UINT64_C(c) c##ull
#define INTMAX_C(c) c##ll
#define UINTMAX_C(c) c##ull
#endif

#endif /* EAGLE_NUMERICS_H */
