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
 *   opencl (OpenCL C, __OPENCL_VERSION__): the language's own built-ins (its math functions are
 *       overloaded for float and double as C++'s are, and some platforms (PoCL) define them as
 *       macros already, so the double-converting macros below are NOT applied: a call that mixes
 *       float and double arguments (nextafter(t, INFINITY)) may be ambiguous there -- write
 *       (double)INFINITY); the fixed-width types are typedefs here, FP64 is enabled by cl_khr_fp64.
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
 *   On every GPU kind the double functions (sqrt, nextafter, fmax, ...) convert their arguments
 *   to double as C does, rather than picking a C++ float overload (see below).
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
/* C's float functions (sqrtf, ...) are OpenCL C's overloads at float; the C functions OpenCL C
 * lacks are written with the ones it has (the same result in the default rounding mode). */
#ifndef acosf
#define acosf(x) acos((float)(x))
#endif
#ifndef asinf
#define asinf(x) asin((float)(x))
#endif
#ifndef atanf
#define atanf(x) atan((float)(x))
#endif
#ifndef cosf
#define cosf(x) cos((float)(x))
#endif
#ifndef sinf
#define sinf(x) sin((float)(x))
#endif
#ifndef tanf
#define tanf(x) tan((float)(x))
#endif
#ifndef acoshf
#define acoshf(x) acosh((float)(x))
#endif
#ifndef asinhf
#define asinhf(x) asinh((float)(x))
#endif
#ifndef atanhf
#define atanhf(x) atanh((float)(x))
#endif
#ifndef coshf
#define coshf(x) cosh((float)(x))
#endif
#ifndef sinhf
#define sinhf(x) sinh((float)(x))
#endif
#ifndef tanhf
#define tanhf(x) tanh((float)(x))
#endif
#ifndef expf
#define expf(x) exp((float)(x))
#endif
#ifndef exp2f
#define exp2f(x) exp2((float)(x))
#endif
#ifndef expm1f
#define expm1f(x) expm1((float)(x))
#endif
#ifndef logf
#define logf(x) log((float)(x))
#endif
#ifndef log10f
#define log10f(x) log10((float)(x))
#endif
#ifndef log1pf
#define log1pf(x) log1p((float)(x))
#endif
#ifndef log2f
#define log2f(x) log2((float)(x))
#endif
#ifndef logbf
#define logbf(x) logb((float)(x))
#endif
#ifndef cbrtf
#define cbrtf(x) cbrt((float)(x))
#endif
#ifndef fabsf
#define fabsf(x) fabs((float)(x))
#endif
#ifndef sqrtf
#define sqrtf(x) sqrt((float)(x))
#endif
#ifndef erff
#define erff(x) erf((float)(x))
#endif
#ifndef erfcf
#define erfcf(x) erfc((float)(x))
#endif
#ifndef lgammaf
#define lgammaf(x) lgamma((float)(x))
#endif
#ifndef tgammaf
#define tgammaf(x) tgamma((float)(x))
#endif
#ifndef ceilf
#define ceilf(x) ceil((float)(x))
#endif
#ifndef floorf
#define floorf(x) floor((float)(x))
#endif
#ifndef rintf
#define rintf(x) rint((float)(x))
#endif
#ifndef roundf
#define roundf(x) round((float)(x))
#endif
#ifndef truncf
#define truncf(x) trunc((float)(x))
#endif
#ifndef atan2f
#define atan2f(x, y) atan2((float)(x), (float)(y))
#endif
#ifndef hypotf
#define hypotf(x, y) hypot((float)(x), (float)(y))
#endif
#ifndef powf
#define powf(x, y) pow((float)(x), (float)(y))
#endif
#ifndef fmodf
#define fmodf(x, y) fmod((float)(x), (float)(y))
#endif
#ifndef remainderf
#define remainderf(x, y) remainder((float)(x), (float)(y))
#endif
#ifndef copysignf
#define copysignf(x, y) copysign((float)(x), (float)(y))
#endif
#ifndef nextafterf
#define nextafterf(x, y) nextafter((float)(x), (float)(y))
#endif
#ifndef fdimf
#define fdimf(x, y) fdim((float)(x), (float)(y))
#endif
#ifndef fmaxf
#define fmaxf(x, y) fmax((float)(x), (float)(y))
#endif
#ifndef fminf
#define fminf(x, y) fmin((float)(x), (float)(y))
#endif
#ifndef fmaf
#define fmaf(x, y, z) fma((float)(x), (float)(y), (float)(z))
#endif
#ifndef ilogbf
#define ilogbf(x) ilogb((float)(x))
#endif
#ifndef frexpf
#define frexpf(x, e) frexp((float)(x), e)
#endif
#ifndef ldexpf
#define ldexpf(x, e) ldexp((float)(x), (int)(e))
#endif
#ifndef modff
#define modff(x, ip) modf((float)(x), ip)
#endif
#ifndef remquof
#define remquof(x, y, q) remquo((float)(x), (float)(y), q)
#endif
#ifndef scalbnf
#define scalbnf(x, e) ldexp((float)(x), (int)(e))
#endif
#ifndef scalbn
#define scalbn(x, e) ldexp((double)(x), (int)(e))
#endif
#ifndef nearbyintf
#define nearbyintf(x) rint((float)(x))
#endif
#ifndef nearbyint
#define nearbyint(x) rint((double)(x))
#endif
#ifndef lrintf
#define lrintf(x) ((long)rint((float)(x)))
#endif
#ifndef lrint
#define lrint(x) ((long)rint((double)(x)))
#endif
#ifndef llrintf
#define llrintf(x) ((long)rint((float)(x)))
#endif
#ifndef llrint
#define llrint(x) ((long)rint((double)(x)))
#endif
#ifndef lroundf
#define lroundf(x) ((long)round((float)(x)))
#endif
#ifndef lround
#define lround(x) ((long)round((double)(x)))
#endif
#ifndef llroundf
#define llroundf(x) ((long)round((float)(x)))
#endif
#ifndef llround
#define llround(x) ((long)round((double)(x)))
#endif
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
