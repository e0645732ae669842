/* An up-and-out barrier call by Monte Carlo, written once for every kind. Path i follows
 * S <- S + drift + vol * Z (arithmetic Brownian motion, one step per time step) from S0; it is
 * knocked out, with payoff 0, at the first step where S >= barrier, else pays max(S - strike, 0) at
 * step T. Paths stop at different times: an ActiveSet keeps only the live ones running.
 *
 * Random numbers are counter-based: the 12 uniforms of path i at step t are a hash of
 * (seed, i, t, k), so every kind draws the same numbers for the same path, whatever the order in
 * which lanes run. Z is their Irwin-Hall sum minus 6 (mean 0, variance 1), which needs no math
 * library, so the result is the same bit for bit on every kind compiled bit-exact
 * (eagle.compile(..., exact=True), as barrier.py does). */
#include <eagle/kernel.h>

/* splitmix64's finaliser: a bijective 64-bit mix. */
EAGLE_FN uint64_t mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A uniform double in [0, 1) from the counter (seed, path, step, k). */
EAGLE_FN double uniform(uint64_t seed, uint64_t path, uint64_t step, uint64_t k)
{
    const uint64_t h = mix64(seed ^ mix64(path ^ mix64((step << 4) | k)));
    return (double)(h >> 11) * (1.0 / 9007199254740992.0);
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
 * has reached step T. */
EAGLE_KERNEL(barrier_steps, (double*, s), (int32_t*, t), (double*, payoff), (uint8_t*, mask),
             (double, drift), (double, vol), (double, barrier), (double, strike), (int64_t, T), (int64_t, K),
             (int64_t, seed))
{
    (void)n;
    double si = s[i];
    int64_t ti = t[i];
    const int64_t stop = T - ti < K ? T : ti + K;
    int knocked = 0;
    while (ti < stop) {
        double z = -6.0;
        for (int64_t k = 0; k < 12; ++k) z += uniform((uint64_t)seed, (uint64_t)i, (uint64_t)ti, (uint64_t)k);
        si = si + drift + vol * z;
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
