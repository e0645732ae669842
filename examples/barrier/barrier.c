/* An up-and-out barrier call by Monte Carlo, written once for every kind. Path i follows
 * S <- S + drift + vol * Z (arithmetic Brownian motion, one step per time step, Z ~ N(0, 1)) from
 * S0; it is knocked out, with payoff 0, at the first step where S >= barrier, else pays
 * max(S - strike, 0) at step T. Paths stop at different times: an ActiveSet keeps only the live
 * ones running.
 *
 * Random numbers come from <eagle/random.h>: Z of path i at step t is a normal of draw t / 2 of
 * sample i (its first normal for even t, its second for odd t), a function of (seed, i, t) alone,
 * so every kind draws the same numbers for the same path, whatever the order in which lanes run
 * or where a launch of K steps begins. The normals are Box-Muller on eagle's own log, sin and cos
 * (+ - * / and sqrt only), so the result is the same bit for bit on every kind compiled bit-exact
 * (eagle.compile(..., exact=True), as barrier.py does). */
#include <eagle/kernel.h>
#include <eagle/random.h>

/* Z of path i at step t. */
EAGLE_FN double path_normal(uint64_t seed, int64_t i, int64_t t)
{
    const eagle_rng_double2 z = eagle_rng_normal2(seed, (uint64_t)i, (uint64_t)(t >> 1));
    return (t & 1) ? z.y : z.x;
}

/* Every path at S0, at step 0, live. */
EAGLE_KERNEL(barrier_reset, (double*, s), (int32_t*, t), (double*, payoff), (uint8_t*, mask), (double, s0))
{
    (void)n;
    s[i] = s0;
    t[i] = 0;
    payoff[i] = 0.0;
    mask[i] = 0;
}

/* Up to K more steps of path i; mask[i] = 1 once it is knocked out (t[i]: the step it crossed) or
 * has reached step T. A draw gives two normals: an even step draws them both and keeps the
 * second for the odd step after it. */
EAGLE_KERNEL(barrier_steps, (double*, s), (int32_t*, t), (double*, payoff), (uint8_t*, mask),
             (double, drift), (double, vol), (double, barrier), (double, strike), (int64_t, T), (int64_t, K),
             (int64_t, seed))
{
    (void)n;
    double si = s[i];
    int64_t ti = t[i];
    const int64_t stop = T - ti < K ? T : ti + K;
    int knocked = 0;
    eagle_rng_double2 z;
    z.x = z.y = 0.0;
    if (ti & 1) z = eagle_rng_normal2((uint64_t)seed, (uint64_t)i, (uint64_t)(ti >> 1));  /* resuming mid-draw */
    while (ti < stop) {
        if ((ti & 1) == 0) z = eagle_rng_normal2((uint64_t)seed, (uint64_t)i, (uint64_t)(ti >> 1));
        si = si + drift + vol * ((ti & 1) ? z.y : z.x);
        ti += 1;
        if (si >= barrier) {
            knocked = 1;
            break;
        }
    }
    s[i] = si;
    t[i] = (int32_t)ti;
    if (knocked) {
        payoff[i] = 0.0;
        mask[i] = 1;
    } else if (ti >= T) {
        payoff[i] = si > strike ? si - strike : 0.0;
        mask[i] = 1;
    }
}

/* z[t n + i] = Z of path i at step t, for t < T: the normals the paths draw, for a reference that
 * steps them elsewhere (barrier.py's numpy_reference). */
EAGLE_KERNEL(barrier_normals, (double*, z), (int64_t, T), (int64_t, seed))
{
    for (int64_t t = 0; t < T; ++t) z[t * n + i] = path_normal((uint64_t)seed, i, t);
}
