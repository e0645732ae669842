/*
 * eagle/random.h -- counter-based random numbers for kernels on every kind.
 *
 * Include it after <eagle/kernel.h>. Everything here is an EAGLE_FN: a pure function of its
 * arguments, with no state, no table and no library call but sqrt. A sample's numbers are a
 * function of (seed, sample, draw) alone, so they do not depend on the lane, the launch shape,
 * the order in which lanes run or the kind that runs them:
 *
 *     #include <eagle/kernel.h>
 *     #include <eagle/random.h>
 *
 *     EAGLE_KERNEL(walk, (double*, x), (int64_t, steps), (int64_t, seed))
 *     {
 *         (void)n;
 *         double xi = x[i];
 *         for (int64_t t = 0; t < steps; ++t) {
 *             const eagle_rng_double2 z = eagle_rng_normal2((uint64_t)seed, (uint64_t)i, (uint64_t)t);
 *             xi += z.x;              // z.y: a second, independent N(0, 1) of the same draw
 *         }
 *         x[i] = xi;
 *     }
 *
 * The generator. Philox4x32-10 (J. K. Salmon, M. A. Moraes, R. O. Dror, D. E. Shaw, "Parallel
 * random numbers: as easy as 1, 2, 3", SC'11): a 128-bit counter and a 64-bit key go through
 * ten rounds of two 32x32->64-bit multiplications (multipliers 0xD2511F53, 0xCD9E8D57) whose high
 * halves are xored with the other counter words and the round key; the key is bumped by the Weyl
 * increments (0x9E3779B9, 0xBB67AE85) between rounds. One call gives four 32-bit words.
 * eagle_philox4x32_10 is the bare function; its words are Random123's known-answer vectors
 * (tests/test_random.py reproduces them).
 *
 * The mapping. Draw `draw` of sample `sample` under `seed` is the block of four words
 *     eagle_philox4x32_10(counter = (draw_lo, draw_hi, sample_lo, sample_hi),
 *                         key     = (seed_lo, seed_hi))
 * (_lo, _hi: the low and high 32 bits of the 64-bit value). Every (seed, sample, draw) is a
 * distinct input, so 2^64 samples have 2^64 blocks each, with no overlap. A block gives
 *     4 words (eagle_rng_bits), 2 double uniforms (eagle_rng_uniform2), 2 double normals
 *     (eagle_rng_normal2), 4 float uniforms (eagle_rng_uniform4f), 4 float normals
 *     (eagle_rng_normal4f).
 * A path that needs more numbers per step than one block gives numbers its draws itself, e.g.
 * draw = step * blocks_per_step + j. Two different uses of one block are not independent: give
 * each its own draw (or seed).
 *
 * Uniforms are open at both ends and exact: the double one is (k + 1/2) 2^-52 for the top 52 bits
 * k of two words (w0 high, w1's first 20 bits low), in [2^-53, 1 - 2^-53]; the float one is
 * (k + 1/2) 2^-23 for a word's top 23 bits k, in [2^-24, 1 - 2^-24]. Every value is represented
 * exactly (no rounding, so never 0 or 1), they lie on a grid symmetric about 1/2 (u and 1 - u
 * are equally likely; the mean is exactly 1/2) and every cell of the grid is equally likely. (A
 * 53-bit grid cannot be both open and exact: (k + 1/2) 2^-53 needs 54 bits when k >= 2^52.)
 *
 * Normals are exact in law: Box-Muller, z0 = r cos(2 pi u2), z1 = r sin(2 pi u2), r =
 * sqrt(-2 log u1), with u1, u2 the block's two uniforms; both normals are returned, so nothing is
 * cached between calls. |z| <= sqrt(-2 log 2^-53) = 8.57 for double (the tails are cut at a
 * probability of 1e-16), 5.77 for float (at 2^-24: 6e-8).
 *
 * Bits. log, sin and cos are eagle's own (eagle_rng_log, eagle_rng_sincospi, and their float
 * twins), written in + - * / on IEEE values and integer operations only, and sqrt, which IEEE
 * rounds correctly everywhere. The words and the uniforms are integer work and exact conversions:
 * the same bits on every kind in every mode. The normals are the same bits on cpu, cuda and hip
 * when the source is compiled bit-exact (eagle.compile(..., exact=True): no contraction, IEEE
 * division and square root, no flush to zero), since every kind then evaluates the same
 * operations in the same order. eagle's default mode lets each compiler fuse multiply-adds, and
 * fast_math=True lets it reassociate too (and fold the exact splits that buy the last half ulp):
 * the normals stay as accurate in the default mode (tests/test_random.py checks the bounds below
 * there too) but may differ in the last bits between kinds.
 *
 * Accuracy, in ulp of the exact result in the result's format (tests/test_random.py checks
 * these bounds against numpy's long double over 2^20 points of each function's domain as the
 * draws use it, and spot-checks with mpmath; the largest errors seen there are in brackets):
 *     eagle_rng_log        <= 1 ulp (0.80)      eagle_rng_logf       <= 1 ulp (0.77)
 *     eagle_rng_sincospi   <= 1 ulp (0.79)      eagle_rng_sincospif  <= 1 ulp (0.75)
 *     eagle_rng_box_muller <= 3 ulp (2.3)       eagle_rng_box_mullerf <= 3 ulp (2.4)
 * The normals are measured against the exact Box-Muller transform of the same two uniforms.
 * log is tested over every binade of positive doubles too, sincospi for |x| < 2^40.
 *
 * Plain C99 on cpu (the system C compiler); CUDA C++ under NVRTC and nvcc; HIP. It needs nothing
 * but what <eagle/kernel.h> gives (its fixed-width integers, and on cpu <math.h>'s sqrt; NVRTC
 * and hiprtc know sqrt without a header). Its own names begin with eagle_rng_ / EAGLE_RNG_
 * (eagle_philox4x32_10: the generator's own name).
 */
#ifndef EAGLE_RANDOM_H
#define EAGLE_RANDOM_H

#ifndef EAGLE_KERNEL_H
#error "include <eagle/kernel.h> before <eagle/random.h>"
#endif

/* ------------------------------------------------------------------ types */
/* Four 32-bit words: one Philox block (counter in, random words out). */
typedef struct { uint32_t x, y, z, w; } eagle_rng_uint4;
/* Two doubles: two uniforms or two normals of one block; eagle_rng_sincospi: x = sin, y = cos. */
typedef struct { double x, y; } eagle_rng_double2;
/* Two floats: eagle_rng_sincospif's x = sin, y = cos. */
typedef struct { float x, y; } eagle_rng_float2;
/* Four floats: four uniforms or four normals of one block. */
typedef struct { float x, y, z, w; } eagle_rng_float4;

/* ------------------------------------------------------------------ constants */
#define EAGLE_RNG_PHILOX_M0 0xD2511F53u /* multiplier of counter word 0 */
#define EAGLE_RNG_PHILOX_M1 0xCD9E8D57u /* multiplier of counter word 2 */
#define EAGLE_RNG_PHILOX_W0 0x9E3779B9u /* key word 0's bump: 2^32 (golden ratio - 1) */
#define EAGLE_RNG_PHILOX_W1 0xBB67AE85u /* key word 1's bump: 2^32 (sqrt(3) - 1) */

#define EAGLE_RNG_TWO_M52 0x1p-52    /* the double uniform's grid step */
#define EAGLE_RNG_TWO_M23F 0x1p-23f  /* the float uniform's grid step */
/* ln 2 = LN2_HI + LN2_LO, LN2_HI with 40 significant bits (e * LN2_HI is exact for |e| < 2^13) */
#define EAGLE_RNG_LN2_HI 0x1.62e42fefa2000p-1
#define EAGLE_RNG_LN2_LO 0x1.9ef35793c7673p-41
/* the same for float: LN2F_HI with 15 significant bits (e * LN2F_HI is exact for |e| < 2^9) */
#define EAGLE_RNG_LN2F_HI 0x1.62e4p-1f
#define EAGLE_RNG_LN2F_LO 0x1.7f7d1cp-20f
#define EAGLE_RNG_SQRT2 0x1.6a09e667f3bcdp+0  /* sqrt(2) rounded */
#define EAGLE_RNG_SQRT2F 0x1.6a09e6p+0f

/* ------------------------------------------------------------------ bit casts */
#if EAGLE_KIND_GPU
EAGLE_FN uint64_t eagle_rng_bits_of(double x) { return (uint64_t)__double_as_longlong(x); }
EAGLE_FN double eagle_rng_double_of(uint64_t b) { return __longlong_as_double((long long)b); }
EAGLE_FN uint32_t eagle_rng_bits_off(float x) { return (uint32_t)__float_as_uint(x); }
EAGLE_FN float eagle_rng_float_of(uint32_t b) { return __uint_as_float(b); }
#else
EAGLE_FN uint64_t eagle_rng_bits_of(double x) { union { double d; uint64_t u; } c; c.d = x; return c.u; }
EAGLE_FN double eagle_rng_double_of(uint64_t b) { union { double d; uint64_t u; } c; c.u = b; return c.d; }
EAGLE_FN uint32_t eagle_rng_bits_off(float x) { union { float f; uint32_t u; } c; c.f = x; return c.u; }
EAGLE_FN float eagle_rng_float_of(uint32_t b) { union { float f; uint32_t u; } c; c.u = b; return c.f; }
#endif

/* ------------------------------------------------------------------ Philox4x32-10 */
/* One round: the two products' high halves are xored with the other two words and the round
 * key, and the words change places as the paper's permutation says. */
EAGLE_FN eagle_rng_uint4 eagle_rng_philox_round(eagle_rng_uint4 c, uint32_t k0, uint32_t k1)
{
    const uint64_t p0 = (uint64_t)EAGLE_RNG_PHILOX_M0 * (uint64_t)c.x;
    const uint64_t p1 = (uint64_t)EAGLE_RNG_PHILOX_M1 * (uint64_t)c.z;
    eagle_rng_uint4 o;
    o.x = (uint32_t)(p1 >> 32) ^ c.y ^ k0;
    o.y = (uint32_t)p1;
    o.z = (uint32_t)(p0 >> 32) ^ c.w ^ k1;
    o.w = (uint32_t)p0;
    return o;
}

/* Philox4x32-10 of `counter` under the key (k0, k1): ten rounds, the key bumped before each
 * round after the first. The known-answer vectors of Random123 (github.com/DEShawResearch/random123,
 * tests/kat_vectors, lines 27-29 at commit 9545ff6413f258be2f04c1d319d99aaef7521150), as
 * (counter words x y z w; key k0 k1) -> (x y z w):
 *     (0 0 0 0; 0 0)                          -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8
 *     (ffffffff x4; ffffffff ffffffff)        -> 408f276d 41c83b0e a20bc7c6 6d5451fd
 *     (243f6a88 85a308d3 13198a2e 03707344; a4093822 299f31d0)
 *                                             -> d16cfe09 94fdcceb 5001e420 24126ea1 */
EAGLE_FN eagle_rng_uint4 eagle_philox4x32_10(eagle_rng_uint4 counter, uint32_t k0, uint32_t k1)
{
    eagle_rng_uint4 c = eagle_rng_philox_round(counter, k0, k1);
    k0 += EAGLE_RNG_PHILOX_W0; k1 += EAGLE_RNG_PHILOX_W1; c = eagle_rng_philox_round(c, k0, k1);
    k0 += EAGLE_RNG_PHILOX_W0; k1 += EAGLE_RNG_PHILOX_W1; c = eagle_rng_philox_round(c, k0, k1);
    k0 += EAGLE_RNG_PHILOX_W0; k1 += EAGLE_RNG_PHILOX_W1; c = eagle_rng_philox_round(c, k0, k1);
    k0 += EAGLE_RNG_PHILOX_W0; k1 += EAGLE_RNG_PHILOX_W1; c = eagle_rng_philox_round(c, k0, k1);
    k0 += EAGLE_RNG_PHILOX_W0; k1 += EAGLE_RNG_PHILOX_W1; c = eagle_rng_philox_round(c, k0, k1);
    k0 += EAGLE_RNG_PHILOX_W0; k1 += EAGLE_RNG_PHILOX_W1; c = eagle_rng_philox_round(c, k0, k1);
    k0 += EAGLE_RNG_PHILOX_W0; k1 += EAGLE_RNG_PHILOX_W1; c = eagle_rng_philox_round(c, k0, k1);
    k0 += EAGLE_RNG_PHILOX_W0; k1 += EAGLE_RNG_PHILOX_W1; c = eagle_rng_philox_round(c, k0, k1);
    k0 += EAGLE_RNG_PHILOX_W0; k1 += EAGLE_RNG_PHILOX_W1; c = eagle_rng_philox_round(c, k0, k1);
    return c;
}

/* The four words of draw `draw` of sample `sample` under `seed` (the mapping above). */
EAGLE_FN eagle_rng_uint4 eagle_rng_bits(uint64_t seed, uint64_t sample, uint64_t draw)
{
    eagle_rng_uint4 c;
    c.x = (uint32_t)draw;
    c.y = (uint32_t)(draw >> 32);
    c.z = (uint32_t)sample;
    c.w = (uint32_t)(sample >> 32);
    return eagle_philox4x32_10(c, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* ------------------------------------------------------------------ uniforms */
/* A double in (0, 1) from two words: (k + 1/2) 2^-52, k = hi's 32 bits then lo's top 20. Exact. */
EAGLE_FN double eagle_rng_u01(uint32_t hi, uint32_t lo)
{
    const uint64_t k = ((uint64_t)hi << 20) | (uint64_t)(lo >> 12);
    return ((double)k + 0.5) * EAGLE_RNG_TWO_M52;
}

/* A float in (0, 1) from one word: (k + 1/2) 2^-23, k = the word's top 23 bits. Exact. */
EAGLE_FN float eagle_rng_u01f(uint32_t word)
{
    return ((float)(word >> 9) + 0.5f) * EAGLE_RNG_TWO_M23F;
}

/* Two double uniforms of a draw: x from words (x, y), y from words (z, w). */
EAGLE_FN eagle_rng_double2 eagle_rng_uniform2(uint64_t seed, uint64_t sample, uint64_t draw)
{
    const eagle_rng_uint4 b = eagle_rng_bits(seed, sample, draw);
    eagle_rng_double2 u;
    u.x = eagle_rng_u01(b.x, b.y);
    u.y = eagle_rng_u01(b.z, b.w);
    return u;
}

/* Four float uniforms of a draw, one from each word in order. */
EAGLE_FN eagle_rng_float4 eagle_rng_uniform4f(uint64_t seed, uint64_t sample, uint64_t draw)
{
    const eagle_rng_uint4 b = eagle_rng_bits(seed, sample, draw);
    eagle_rng_float4 u;
    u.x = eagle_rng_u01f(b.x);
    u.y = eagle_rng_u01f(b.y);
    u.z = eagle_rng_u01f(b.z);
    u.w = eagle_rng_u01f(b.w);
    return u;
}

/* ------------------------------------------------------------------ log */
/* log(2^k x) for a positive normal double x, <= 1 ulp. x = 2^e m with m in
 * [sqrt(2)/2, sqrt(2)), f = m - 1 (exact), s = f / (2 + f); log m = 2 atanh s = f - f^2/2 +
 * s (f^2/2 + R), R(z = s^2) = 2 z / 3 + 2 z^2 / 5 + ... for |s| <= 0.1716, here a degree-7
 * polynomial fitted to it (Chebyshev, with mpmath; its error on R is below 1e-17, 0.04 ulp of the
 * log); log x = (e + k) ln 2 + log m, with ln 2 in two parts so that (e + k) ln2_hi is exact. */
EAGLE_FN double eagle_rng_log_core(double x, int64_t k)
{
    const uint64_t b = eagle_rng_bits_of(x);
    int64_t e = (int64_t)(b >> 52) - 1023 + k;
    double m = eagle_rng_double_of((b & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);  /* [1, 2) */
    if (m > EAGLE_RNG_SQRT2) { m *= 0.5; e += 1; }
    const double f = m - 1.0;
    const double s = f / (2.0 + f);
    const double z = s * s;
    const double R = z * (0x1.5555555555558p-1 +      /* ~ 2/3 */
                     z * (0x1.99999999952e2p-2 +      /* ~ 2/5 */
                     z * (0x1.2492492df148dp-2 +      /* ~ 2/7 */
                     z * (0x1.c71c62e5800a1p-3 +      /* ~ 2/9 */
                     z * (0x1.7462b4ab2ef6cp-3 +      /* ~ 2/11 */
                     z * (0x1.39fe606542dbap-3 +      /* ~ 2/13 */
                     z * 0x1.2b584aae78c14p-3))))));  /* ~ 2/15 */
    const double hfsq = 0.5 * f * f;
    const double de = (double)e;
    return de * EAGLE_RNG_LN2_HI - ((hfsq - (s * (hfsq + R) + de * EAGLE_RNG_LN2_LO)) - f);
}

/* The natural logarithm, <= 1 ulp, for every double: subnormals are scaled first; log 0 = -inf,
 * log of a negative or NaN is NaN, log +inf = +inf. */
EAGLE_FN double eagle_rng_log(double x)
{
    if (!(x > 0.0) || x - x != 0.0) {                 /* 0, negative, NaN, +inf */
        if (x == 0.0) return -1.0 / (x * x);         /* -inf */
        return x < 0.0 ? (x - x) / (x - x) : x + x;  /* NaN (a negative, or NaN itself); +inf */
    }
    if (x < 0x1p-1022) return eagle_rng_log_core(x * 0x1p54, -54);   /* subnormal: made normal */
    return eagle_rng_log_core(x, 0);
}

/* The float twin of eagle_rng_log (R to 2 s^8 / 9), <= 1 ulp in float. */
EAGLE_FN float eagle_rng_logf(float x)
{
    if (!(x > 0.0f) || x - x != 0.0f) {
        if (x == 0.0f) return -1.0f / (x * x);
        return x < 0.0f ? (x - x) / (x - x) : x + x;
    }
    int32_t e = 0;
    if (x < 0x1p-126f) { x *= 0x1p25f; e = -25; }
    const uint32_t b = eagle_rng_bits_off(x);
    e += (int32_t)(b >> 23) - 127;
    float m = eagle_rng_float_of((b & 0x007FFFFFu) | 0x3F800000u);
    if (m > EAGLE_RNG_SQRT2F) { m *= 0.5f; e += 1; }
    const float f = m - 1.0f;
    const float s = f / (2.0f + f);
    const float z = s * s;
    const float R = z * (0x1.555556p-1f +          /* 2/3 */
                    z * (0x1.99999ap-2f +          /* 2/5 */
                    z * (0x1.24924ap-2f +          /* 2/7 */
                    z * 0x1.c71c72p-3f)));         /* 2/9 */
    const float hfsq = 0.5f * f * f;
    const float de = (float)e;
    return de * EAGLE_RNG_LN2F_HI - ((hfsq - (s * (hfsq + R) + de * EAGLE_RNG_LN2F_LO)) - f);
}

/* ------------------------------------------------------------------ sin and cos of pi x */
/* sin(pi r) and cos(pi r) for |r| <= 1/4: pi r + r z Q(z) and 1 - pi^2 z / 2 + z^2 W(z), z = r^2,
 * Q and W of degree 5 fitted to the series' rest (Chebyshev, with mpmath: errors below 1.3e-17
 * and 5e-19 relative, 0.1 and 0.005 ulp). sin's leading term pi r is the one that decides its
 * rounding, so it is summed last, as r_hi PI_HI (exact: 26 x 25 bits) plus the small rest:
 * r = r_hi + r_lo (r_hi: r's top 26 bits, cut by a mask, so that no compiler option can undo the
 * split), pi = PI_HI + PI_LO. */
#define EAGLE_RNG_PI_HI 0x1.921fb5p+1            /* pi's top 25 bits */
#define EAGLE_RNG_PI_LO 0x1.110b4611a6263p-25    /* pi - PI_HI, rounded */
EAGLE_FN double eagle_rng_sinpi_kernel(double r)
{
    const double z = r * r;
    const double r_hi = eagle_rng_double_of(eagle_rng_bits_of(r) & 0xFFFFFFFFF8000000ull);
    const double r_lo = r - r_hi;
    const double tail = r * z * (-0x1.4abbce625be52p+2 +    /* ~ -pi^3/3!   */
                            z * (0x1.466bc6775a476p+1 +     /* ~  pi^5/5!   */
                            z * (-0x1.32d2cce500387p-1 +    /* ~ -pi^7/7!   */
                            z * (0x1.50783208843ebp-4 +     /* ~  pi^9/9!   */
                            z * (-0x1.e3027dea82bd7p-8 +    /* ~ -pi^11/11! */
                            z * 0x1.e4a9d9166f052p-12)))));  /* ~ pi^13/13! */
    return r_hi * EAGLE_RNG_PI_HI + ((r_lo * EAGLE_RNG_PI_HI + r * EAGLE_RNG_PI_LO) + tail);
}

/* cos(pi r) = 1 + w, w = -pi^2 r^2 / 2 + ..., summed so that only the last addition rounds at
 * full size: w's leading term is C2_HI z_hi (exact: z_hi = r_hi^2 with r_hi r's top 13 bits, C2_HI
 * 27 bits), 1 + C2_HI z_hi is split into its rounded sum and the exact error (Fast2Sum), and the
 * small rest goes in last. */
#define EAGLE_RNG_C2_HI -0x1.3bd3cc8p+2              /* -pi^2/2's top 27 bits */
#define EAGLE_RNG_C2_LO -0x1.be45de5a4adc5p-26       /* -pi^2/2 - C2_HI, rounded */
EAGLE_FN double eagle_rng_cospi_kernel(double r)
{
    const double z = r * r;
    const double r_hi = eagle_rng_double_of(eagle_rng_bits_of(r) & 0xFFFFFF0000000000ull);
    const double r_lo = r - r_hi;
    const double z_hi = r_hi * r_hi;
    const double z_lo = r_lo * (r + r_hi);
    const double w_hi = EAGLE_RNG_C2_HI * z_hi;
    const double tail = z * z * (0x1.03c1f081b5ac4p+2 +   /* ~  pi^4/4!   */
                            z * (-0x1.55d3c7e3cbd74p+0 +  /* ~ -pi^6/6!   */
                            z * (0x1.e1f50688302c5p-3 +   /* ~  pi^8/8!   */
                            z * (-0x1.a6d1f0ab7905cp-6 +  /* ~ -pi^10/10! */
                            z * (0x1.f9cfc07738157p-10 +  /* ~  pi^12/12! */
                            z * -0x1.b38340f56931fp-14)))));  /* ~ -pi^14/14! */
    const double w_lo = (EAGLE_RNG_C2_HI * z_lo + EAGLE_RNG_C2_LO * z) + tail;
    const double t = 1.0 + w_hi;
    const double err = (1.0 - t) + w_hi;
    return t + (err + w_lo);
}

/* (sin(pi x), cos(pi x)) as (x, y) for finite |x| < 2^62, <= 1 ulp each. x = q/2 + r with q an
 * integer and |r| <= 1/4, found exactly (no rounding: r is x less a multiple of 1/2), so there
 * is no reduction error however close x is to a zero of sin or cos; then the quarter turn
 * q mod 4 picks the signs and which of sin(pi r), cos(pi r) is which. */
EAGLE_FN eagle_rng_double2 eagle_rng_sincospi_core(double x)
{
    eagle_rng_double2 out;
    int64_t q = (int64_t)(2.0 * x);                      /* 2x rounded towards zero */
    double r = x - 0.5 * (double)q;                      /* exact, |r| < 1/2 */
    if (r > 0.25) { r -= 0.5; q += 1; }                  /* exact (Sterbenz) */
    else if (r < -0.25) { r += 0.5; q -= 1; }
    const double s = eagle_rng_sinpi_kernel(r), c = eagle_rng_cospi_kernel(r);
    switch (q & 3) {
    case 0: out.x = s; out.y = c; break;
    case 1: out.x = c; out.y = -s; break;
    case 2: out.x = -s; out.y = -c; break;
    default: out.x = -c; out.y = s; break;
    }
    return out;
}

/* (sin(pi x), cos(pi x)) as (x, y) for every double, <= 1 ulp each: |x| >= 2^62 is an even
 * integer (sin 0, cos 1); infinities and NaN give NaN. */
EAGLE_FN eagle_rng_double2 eagle_rng_sincospi(double x)
{
    eagle_rng_double2 out;
    if (x - x != 0.0) { out.x = out.y = x - x; return out; }  /* inf, NaN */
    if (x >= 0x1p62 || x <= -0x1p62) { out.x = 0.0 * x; out.y = 1.0; return out; }
    return eagle_rng_sincospi_core(x);
}

/* The float twins: Taylor to r^9 and r^10 (remainders below 2e-9); r_hi: r's top 12 bits. */
#define EAGLE_RNG_PI_HIF 0x1.92p+1f        /* pi's top 8 bits */
#define EAGLE_RNG_PI_LOF 0x1.fb5444p-11f     /* pi - PI_HIF, rounded */
EAGLE_FN float eagle_rng_sinpi_kernelf(float r)
{
    const float z = r * r;
    const float r_hi = eagle_rng_float_of(eagle_rng_bits_off(r) & 0xFFFFF000u);
    const float r_lo = r - r_hi;
    const float tail = r * z * (-0x1.4abbcep+2f +   /* -pi^3/3! */
                           z * (0x1.466bc6p+1f +    /*  pi^5/5! */
                           z * (-0x1.32d2ccp-1f +   /* -pi^7/7! */
                           z * 0x1.507834p-4f)));   /*  pi^9/9! */
    return r_hi * EAGLE_RNG_PI_HIF + ((r_lo * EAGLE_RNG_PI_HIF + r * EAGLE_RNG_PI_LOF) + tail);
}

/* r_hi: r's top 6 bits; C2_HIF: 11 significant bits. */
#define EAGLE_RNG_C2_HIF -0x1.3bcp+2f           /* -pi^2/2 cut to 12 bits */
#define EAGLE_RNG_C2_LOF -0x1.3cc9bep-10f       /* -pi^2/2 - C2_HIF, rounded */
EAGLE_FN float eagle_rng_cospi_kernelf(float r)
{
    const float z = r * r;
    const float r_hi = eagle_rng_float_of(eagle_rng_bits_off(r) & 0xFFFC0000u);
    const float r_lo = r - r_hi;
    const float z_hi = r_hi * r_hi;
    const float z_lo = r_lo * (r + r_hi);
    const float w_hi = EAGLE_RNG_C2_HIF * z_hi;
    const float tail = z * z * (0x1.03c1f0p+2f +    /*  pi^4/4!   */
                           z * (-0x1.55d3c8p+0f +   /* -pi^6/6!   */
                           z * (0x1.e1f506p-3f +    /*  pi^8/8!   */
                           z * -0x1.a6d1f2p-6f)));  /* -pi^10/10! */
    const float w_lo = (EAGLE_RNG_C2_HIF * z_lo + EAGLE_RNG_C2_LOF * z) + tail;
    const float t = 1.0f + w_hi;
    const float err = (1.0f - t) + w_hi;
    return t + (err + w_lo);
}

/* (sin(pi x), cos(pi x)) in float, as eagle_rng_sincospi; |x| >= 2^30 is an even integer. */
EAGLE_FN eagle_rng_float2 eagle_rng_sincospif(float x)
{
    eagle_rng_float2 out;
    if (x - x != 0.0f) { out.x = out.y = x - x; return out; }
    if (x >= 0x1p30f || x <= -0x1p30f) { out.x = 0.0f * x; out.y = 1.0f; return out; }
    int32_t q = (int32_t)(2.0f * x);
    float r = x - 0.5f * (float)q;
    if (r > 0.25f) { r -= 0.5f; q += 1; }
    else if (r < -0.25f) { r += 0.5f; q -= 1; }
    const float s = eagle_rng_sinpi_kernelf(r), c = eagle_rng_cospi_kernelf(r);
    switch (q & 3) {
    case 0: out.x = s; out.y = c; break;
    case 1: out.x = c; out.y = -s; break;
    case 2: out.x = -s; out.y = -c; break;
    default: out.x = -c; out.y = s; break;
    }
    return out;
}

/* ------------------------------------------------------------------ normals */
/* Box-Muller of two uniforms in (0, 1): (r cos 2 pi u2, r sin 2 pi u2), r = sqrt(-2 log u1).
 * u1 must be a normal double (>= 2^-1022; every uniform here is), so the log needs no checks. */
EAGLE_FN eagle_rng_double2 eagle_rng_box_muller(double u1, double u2)
{
    const double r = sqrt(-2.0 * eagle_rng_log_core(u1, 0));
    const eagle_rng_double2 sc = eagle_rng_sincospi_core(2.0 * u2);
    eagle_rng_double2 z;
    z.x = r * sc.y;
    z.y = r * sc.x;
    return z;
}

EAGLE_FN eagle_rng_float2 eagle_rng_box_mullerf(float u1, float u2)
{
    const float r = sqrtf(-2.0f * eagle_rng_logf(u1));
    const eagle_rng_float2 sc = eagle_rng_sincospif(2.0f * u2);
    eagle_rng_float2 z;
    z.x = r * sc.y;
    z.y = r * sc.x;
    return z;
}

/* Two independent standard normals of a draw: Box-Muller of eagle_rng_uniform2's (x, y). */
EAGLE_FN eagle_rng_double2 eagle_rng_normal2(uint64_t seed, uint64_t sample, uint64_t draw)
{
    const eagle_rng_double2 u = eagle_rng_uniform2(seed, sample, draw);
    return eagle_rng_box_muller(u.x, u.y);
}

/* Four independent standard normals (float) of a draw: Box-Muller of eagle_rng_uniform4f's
 * (x, y) gives (x, y), of its (z, w) gives (z, w). */
EAGLE_FN eagle_rng_float4 eagle_rng_normal4f(uint64_t seed, uint64_t sample, uint64_t draw)
{
    const eagle_rng_float4 u = eagle_rng_uniform4f(seed, sample, draw);
    const eagle_rng_float2 a = eagle_rng_box_mullerf(u.x, u.y), b = eagle_rng_box_mullerf(u.z, u.w);
    eagle_rng_float4 z;
    z.x = a.x;
    z.y = a.y;
    z.z = b.x;
    z.w = b.y;
    return z;
}

#endif /* EAGLE_RANDOM_H */
