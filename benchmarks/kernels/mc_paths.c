/* Monte-Carlo paths for benchmarks/bench_mc.py, one source for every kind: geometric Brownian
 * motion in log space, x <- x + a + b Z (a = (r - sigma^2/2) dt, b = sigma sqrt(dt)), S = s0 exp(x),
 * with Z from <eagle/random.h> (Philox4x32-10, Box-Muller): step t of path i takes the first normal
 * of draw t/2 for even t, its second for odd t. */
#include <eagle/kernel.h>
#include <eagle/random.h>

/* The whole path of sample i in one lane: s_T[i] = s0 exp(x_steps). */
EAGLE_KERNEL(mc_gbm, (double*, s_T), (int64_t, steps), (double, a), (double, b), (double, s0), (int64_t, seed))
{
    (void)n;
    double x = 0.0;
    for (int64_t d = 0; 2 * d < steps; ++d) {
        const eagle_rng_double2 z = eagle_rng_normal2((uint64_t)seed, (uint64_t)i, (uint64_t)d);
        x += a + b * z.x;
        if (2 * d + 1 < steps) x += a + b * z.y;
    }
    s_T[i] = s0 * exp(x);
}

/* The generator alone, into memory: z[i] and z[n + i] are the two normals of draw 0 of sample i
 * (2 n normals from n lanes; neighbouring lanes write neighbouring words). */
EAGLE_KERNEL(mc_fill_normals, (double*, z), (int64_t, seed))
{
    const eagle_rng_double2 p = eagle_rng_normal2((uint64_t)seed, (uint64_t)i, 0u);
    z[i] = p.x;
    z[n + i] = p.y;
}

/* ---- an up-and-out call: a path stops at the first step where x >= lb (knocked out, payoff 0),
 * else pays disc * max(s0 exp(x) - strike, 0) at step T. */
EAGLE_KERNEL(ko_reset, (double*, x), (int32_t*, t), (double*, payoff), (uint8_t*, mask))
{
    (void)n;
    x[i] = 0.0;
    t[i] = 0;
    payoff[i] = 0.0;
    mask[i] = 0;
}

/* Up to K more steps of path i (the drained ActiveSet calls it until mask[i] != 0). */
EAGLE_KERNEL(ko_steps, (double*, x), (int32_t*, t), (double*, payoff), (uint8_t*, mask), (double, a), (double, b),
             (double, lb), (double, s0), (double, strike), (double, disc), (int64_t, T), (int64_t, K), (int64_t, seed))
{
    (void)n;
    double xi = x[i];
    int64_t ti = t[i];
    const int64_t stop = T - ti < K ? T : ti + K;
    int knocked = 0;
    eagle_rng_double2 z;
    z.x = z.y = 0.0;
    if (ti & 1) z = eagle_rng_normal2((uint64_t)seed, (uint64_t)i, (uint64_t)(ti >> 1));
    while (ti < stop) {
        if ((ti & 1) == 0) z = eagle_rng_normal2((uint64_t)seed, (uint64_t)i, (uint64_t)(ti >> 1));
        xi += a + b * ((ti & 1) ? z.y : z.x);
        ti += 1;
        if (xi >= lb) {
            knocked = 1;
            break;
        }
    }
    x[i] = xi;
    t[i] = (int32_t)ti;
    if (knocked) {
        payoff[i] = 0.0;
        mask[i] = 1;
    } else if (ti >= T) {
        const double s = s0 * exp(xi);
        payoff[i] = s > strike ? disc * (s - strike) : 0.0;
        mask[i] = 1;
    }
}
