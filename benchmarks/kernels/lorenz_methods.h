/* Hand-written reference integrators of the Lorenz ensemble (DiffEqGPU's problem, issue 26), the
 * peers eagle.ode is measured against: one sample per call, the whole integration in registers.
 * benchmarks/cuda/lorenz_ode.cu (one CUDA thread per trajectory) and benchmarks/kernels/lorenz_omp.c
 * (an OpenMP loop over trajectories) both include this file, once per precision.
 *
 *   x' = sigma (y - x),  y' = x (rho - z) - y,  z' = x y - beta z,  sigma = 10, beta = 8/3.
 *
 * The including file defines, before each inclusion:
 *   LZ_REAL    double or float
 *   LZ_SUFFIX  f64 or f32 (pasted onto every name: lz_rk4_f64, lz_dp5_f32, ...)
 *   LZ_SINGLE  1 for float (the float maths functions), 0 for double
 *   LZ_FN      the function qualifiers of the language (static inline; __device__ __forceinline__)
 * There is no include guard on purpose. Nothing here includes a system header: a C includer
 * includes <math.h> first; NVRTC has the maths functions built in.
 *
 * The adaptive steppers are scipy's RK45 step written out (scipy/integrate/_ivp/rk.py): the error
 * norm is the RMS of err / (atol + rtol max(|y|, |y_new|)); the I controller takes
 * factor = 0.9 err^(-1/(q+1)) with q = 4 (the embedded order), bounded to [0.2, 10], and no growth
 * on the step after a rejection; the first step is scipy's select_initial_step; the step floor is
 * 10 |nextafter(t, +inf) - t|; the last step is clipped to t1. A sample that needs more than
 * max_steps attempts, or falls below the floor, or turns non-finite, returns status -1.
 *
 * Flop counts (benchmarks/bench_ode.py FLOPS): each stage is written y + h (a1 k1 + ... + am km),
 * 2m + 1 operations a component; the right-hand side is 8 (sub, mul; sub, mul, sub; mul, mul, sub). */

#define LZ_CAT2(a, b) a##_##b
#define LZ_CAT(a, b) LZ_CAT2(a, b)
#define LZ(name) LZ_CAT(name, LZ_SUFFIX)

#undef LZ_SQRT
#undef LZ_POW
#undef LZ_ABS
#undef LZ_MAX
#undef LZ_MIN
#undef LZ_NEXT
#undef LZ_ISFINITE
#if LZ_SINGLE
#define LZ_SQRT sqrtf
#define LZ_POW powf
#define LZ_ABS fabsf
#define LZ_MAX fmaxf
#define LZ_MIN fminf
#define LZ_NEXT(t) nextafterf((t), 3.0e38f)
#else
#define LZ_SQRT sqrt
#define LZ_POW pow
#define LZ_ABS fabs
#define LZ_MAX fmax
#define LZ_MIN fmin
#define LZ_NEXT(t) nextafter((t), 1.0e308)
#endif
/* finite: not NaN and not +-inf, without isfinite's type-generic macro (C vs C++ vs NVRTC) */
#define LZ_ISFINITE(v) ((v) - (v) == (v) - (v))

#define LZ_R(x) ((LZ_REAL)(x))

LZ_FN void LZ(lz_rhs)(LZ_REAL rho, const LZ_REAL* y, LZ_REAL* f) {
    f[0] = LZ_R(10.0) * (y[1] - y[0]);
    f[1] = y[0] * (rho - y[2]) - y[1];
    f[2] = y[0] * y[1] - LZ_R(8.0 / 3.0) * y[2];
}

/* ------------------------------------------------------------------ classic RK4, fixed step */

LZ_FN void LZ(lz_rk4)(LZ_REAL rho, LZ_REAL* y, int nsteps, LZ_REAL h) {
    const LZ_REAL h2 = LZ_R(0.5) * h, h6 = h / LZ_R(6.0);
    LZ_REAL k1[3], k2[3], k3[3], k4[3], u[3];
    for (int s = 0; s < nsteps; ++s) {
        LZ(lz_rhs)(rho, y, k1);
        for (int c = 0; c < 3; ++c) u[c] = y[c] + h2 * k1[c];
        LZ(lz_rhs)(rho, u, k2);
        for (int c = 0; c < 3; ++c) u[c] = y[c] + h2 * k2[c];
        LZ(lz_rhs)(rho, u, k3);
        for (int c = 0; c < 3; ++c) u[c] = y[c] + h * k3[c];
        LZ(lz_rhs)(rho, u, k4);
        for (int c = 0; c < 3; ++c) y[c] = y[c] + h6 * (k1[c] + LZ_R(2.0) * k2[c] + LZ_R(2.0) * k3[c] + k4[c]);
    }
}

/* ------------------------------------------------- the 7-stage FSAL pairs: Dormand-Prince, Tsitouras */

/* Dormand-Prince 5(4) (scipy's RK45 tableau: A, B, E). */
#define DP_A21 LZ_R(1.0 / 5.0)
#define DP_A31 LZ_R(3.0 / 40.0)
#define DP_A32 LZ_R(9.0 / 40.0)
#define DP_A41 LZ_R(44.0 / 45.0)
#define DP_A42 LZ_R(-56.0 / 15.0)
#define DP_A43 LZ_R(32.0 / 9.0)
#define DP_A51 LZ_R(19372.0 / 6561.0)
#define DP_A52 LZ_R(-25360.0 / 2187.0)
#define DP_A53 LZ_R(64448.0 / 6561.0)
#define DP_A54 LZ_R(-212.0 / 729.0)
#define DP_A61 LZ_R(9017.0 / 3168.0)
#define DP_A62 LZ_R(-355.0 / 33.0)
#define DP_A63 LZ_R(46732.0 / 5247.0)
#define DP_A64 LZ_R(49.0 / 176.0)
#define DP_A65 LZ_R(-5103.0 / 18656.0)
#define DP_B1 LZ_R(35.0 / 384.0)
#define DP_B3 LZ_R(500.0 / 1113.0)
#define DP_B4 LZ_R(125.0 / 192.0)
#define DP_B5 LZ_R(-2187.0 / 6784.0)
#define DP_B6 LZ_R(11.0 / 84.0)
#define DP_E1 LZ_R(-71.0 / 57600.0)
#define DP_E3 LZ_R(71.0 / 16695.0)
#define DP_E4 LZ_R(-71.0 / 1920.0)
#define DP_E5 LZ_R(17253.0 / 339200.0)
#define DP_E6 LZ_R(-22.0 / 525.0)
#define DP_E7 LZ_R(1.0 / 40.0)

/* Tsitouras 5(4) (Tsitouras 2011, the coefficients of DifferentialEquations.jl and diffrax). */
#define TS_A21 LZ_R(0.161)
#define TS_A31 LZ_R(-0.008480655492356988544426874250230774675121177393430391537369234245294192976164141156943)
#define TS_A32 LZ_R(0.3354806554923569885444268742502307746751211773934303915373692342452941929761641411569)
#define TS_A41 LZ_R(2.897153057105493432130432594192938764924887287701866490314866693455023795137503079289)
#define TS_A42 LZ_R(-6.359448489975074843148159912383825625952700647415626703305928850207288721235210244366)
#define TS_A43 LZ_R(4.362295432869581411017727318190886861027813359713760212991062156752264926097707165077)
#define TS_A51 LZ_R(5.325864828439256604428877920840511317836476253097040101202360397727981648835607691791)
#define TS_A52 LZ_R(-11.74888356406282787774717033978577296188744178259862899288666928009020615663593781589)
#define TS_A53 LZ_R(7.495539342889836208304604784564358155658679161518186721010132816213648793440552049753)
#define TS_A54 LZ_R(-0.09249506636175524925650207933207191611349983406029535244034750452930469056411389539635)
#define TS_A61 LZ_R(5.861455442946420028659251486982647890394337666164814434818157239052507339770711679748)
#define TS_A62 LZ_R(-12.92096931784710929170611868178335939541780751955743459166312250439928519268343184452)
#define TS_A63 LZ_R(8.159367898576158643180400794539253485181918321135053305748355423955009222648673734986)
#define TS_A64 LZ_R(-0.07158497328140099722453054252582973869127213147363544882721139659546372402303777878835)
#define TS_A65 LZ_R(-0.02826905039406838290900305721271224146717633626879770007617876201276764571291579142206)
#define TS_B1 LZ_R(0.09646076681806522951816731316512876333711995238157997181903319145764851595234062815396)
#define TS_B2 LZ_R(0.01)
#define TS_B3 LZ_R(0.4798896504144995747752495322905965199130404621990332488332634944254542060153074523509)
#define TS_B4 LZ_R(1.379008574103741893192274821856872770756462643091360525934940067397245698027561293331)
#define TS_B5 LZ_R(-3.290069515436080679901047585711363850115683290894936158531296799594813811049925401677)
#define TS_B6 LZ_R(2.324710524099773982415355918398765796109060233222962411944060046314465391054716027841)
/* error weights b - b_hat, as diffrax states them to double precision (the last one multiplies
 * f(t + h, y_new)) */
#define TS_E1 LZ_R(0.0017800110522257773)
#define TS_E2 LZ_R(0.0008164344596567463)
#define TS_E3 LZ_R(-0.007880878010261994)
#define TS_E4 LZ_R(0.1447110071732629)
#define TS_E5 LZ_R(-0.5823571654525552)
#define TS_E6 LZ_R(0.45808210592918686)
#define TS_E7 LZ_R(-1.0 / 66.0)

/* One step of the pair `m` (0 Dormand-Prince, 1 Tsitouras) from y with k1 = f(y): y_new, and when
 * `err` is not NULL the error estimate (which needs k7 = f(y_new), returned for the next step). */
LZ_FN void LZ(lz_pair_step)(int m, LZ_REAL rho, const LZ_REAL* y, const LZ_REAL* k1, LZ_REAL h,
                            LZ_REAL* ynew, LZ_REAL* k7, LZ_REAL* err) {
    LZ_REAL k2[3], k3[3], k4[3], k5[3], k6[3], u[3];
    if (m == 0) {
        for (int c = 0; c < 3; ++c) u[c] = y[c] + h * (DP_A21 * k1[c]);
        LZ(lz_rhs)(rho, u, k2);
        for (int c = 0; c < 3; ++c) u[c] = y[c] + h * (DP_A31 * k1[c] + DP_A32 * k2[c]);
        LZ(lz_rhs)(rho, u, k3);
        for (int c = 0; c < 3; ++c) u[c] = y[c] + h * (DP_A41 * k1[c] + DP_A42 * k2[c] + DP_A43 * k3[c]);
        LZ(lz_rhs)(rho, u, k4);
        for (int c = 0; c < 3; ++c)
            u[c] = y[c] + h * (DP_A51 * k1[c] + DP_A52 * k2[c] + DP_A53 * k3[c] + DP_A54 * k4[c]);
        LZ(lz_rhs)(rho, u, k5);
        for (int c = 0; c < 3; ++c)
            u[c] = y[c] + h * (DP_A61 * k1[c] + DP_A62 * k2[c] + DP_A63 * k3[c] + DP_A64 * k4[c] + DP_A65 * k5[c]);
        LZ(lz_rhs)(rho, u, k6);
        for (int c = 0; c < 3; ++c)
            ynew[c] = y[c] + h * (DP_B1 * k1[c] + DP_B3 * k3[c] + DP_B4 * k4[c] + DP_B5 * k5[c] + DP_B6 * k6[c]);
        if (err) {
            LZ(lz_rhs)(rho, ynew, k7);
            for (int c = 0; c < 3; ++c)
                err[c] = h * (DP_E1 * k1[c] + DP_E3 * k3[c] + DP_E4 * k4[c] + DP_E5 * k5[c] + DP_E6 * k6[c]
                              + DP_E7 * k7[c]);
        }
    } else {
        for (int c = 0; c < 3; ++c) u[c] = y[c] + h * (TS_A21 * k1[c]);
        LZ(lz_rhs)(rho, u, k2);
        for (int c = 0; c < 3; ++c) u[c] = y[c] + h * (TS_A31 * k1[c] + TS_A32 * k2[c]);
        LZ(lz_rhs)(rho, u, k3);
        for (int c = 0; c < 3; ++c) u[c] = y[c] + h * (TS_A41 * k1[c] + TS_A42 * k2[c] + TS_A43 * k3[c]);
        LZ(lz_rhs)(rho, u, k4);
        for (int c = 0; c < 3; ++c)
            u[c] = y[c] + h * (TS_A51 * k1[c] + TS_A52 * k2[c] + TS_A53 * k3[c] + TS_A54 * k4[c]);
        LZ(lz_rhs)(rho, u, k5);
        for (int c = 0; c < 3; ++c)
            u[c] = y[c] + h * (TS_A61 * k1[c] + TS_A62 * k2[c] + TS_A63 * k3[c] + TS_A64 * k4[c] + TS_A65 * k5[c]);
        LZ(lz_rhs)(rho, u, k6);
        for (int c = 0; c < 3; ++c)
            ynew[c] = y[c] + h * (TS_B1 * k1[c] + TS_B2 * k2[c] + TS_B3 * k3[c] + TS_B4 * k4[c] + TS_B5 * k5[c]
                                  + TS_B6 * k6[c]);
        if (err) {
            LZ(lz_rhs)(rho, ynew, k7);
            for (int c = 0; c < 3; ++c)
                err[c] = h * (TS_E1 * k1[c] + TS_E2 * k2[c] + TS_E3 * k3[c] + TS_E4 * k4[c] + TS_E5 * k5[c]
                              + TS_E6 * k6[c] + TS_E7 * k7[c]);
        }
    }
}

/* Fixed step of a pair (no error estimate): nsteps steps of h; k1 of the next step is f(y_new). */
LZ_FN void LZ(lz_pair_fixed)(int m, LZ_REAL rho, LZ_REAL* y, int nsteps, LZ_REAL h) {
    LZ_REAL k1[3], ynew[3];
    for (int s = 0; s < nsteps; ++s) {
        LZ(lz_rhs)(rho, y, k1);
        LZ(lz_pair_step)(m, rho, y, k1, h, ynew, 0, 0);
        for (int c = 0; c < 3; ++c) y[c] = ynew[c];
    }
}

/* RMS norm of v / scale over the 3 components */
LZ_FN LZ_REAL LZ(lz_rms3)(const LZ_REAL* v, const LZ_REAL* scale) {
    LZ_REAL s = 0;
    for (int c = 0; c < 3; ++c) {
        const LZ_REAL q = v[c] / scale[c];
        s += q * q;
    }
    return LZ_SQRT(s / LZ_R(3.0));
}

/* scipy's select_initial_step for an error estimator of order 4, from t0 to t1 (> t0). */
LZ_FN LZ_REAL LZ(lz_first_step)(LZ_REAL rho, const LZ_REAL* y0, const LZ_REAL* f0, LZ_REAL span,
                                LZ_REAL rtol, LZ_REAL atol) {
    LZ_REAL scale[3], y1[3], f1[3], df[3];
    for (int c = 0; c < 3; ++c) scale[c] = atol + LZ_ABS(y0[c]) * rtol;
    const LZ_REAL d0 = LZ(lz_rms3)(y0, scale), d1 = LZ(lz_rms3)(f0, scale);
    LZ_REAL h0 = (d0 < LZ_R(1e-5) || d1 < LZ_R(1e-5)) ? LZ_R(1e-6) : LZ_R(0.01) * d0 / d1;
    h0 = LZ_MIN(h0, span);
    for (int c = 0; c < 3; ++c) y1[c] = y0[c] + h0 * f0[c];
    LZ(lz_rhs)(rho, y1, f1);
    for (int c = 0; c < 3; ++c) df[c] = f1[c] - f0[c];
    const LZ_REAL d2 = LZ(lz_rms3)(df, scale) / h0;
    const LZ_REAL h1 = (d1 <= LZ_R(1e-15) && d2 <= LZ_R(1e-15)) ? LZ_MAX(LZ_R(1e-6), h0 * LZ_R(1e-3))
                                                         : LZ_POW(LZ_R(0.01) / LZ_MAX(d1, d2), LZ_R(1.0 / 5.0));
    return LZ_MIN(LZ_MIN(LZ_R(100.0) * h0, h1), span);
}

/* Adaptive integration of one trajectory from t0 to t1 with the pair m; y in, y(t1) out.
 * Returns 0 (reached t1) or -1 (failed); *n_acc, *n_rej count the accepted and rejected steps. */
LZ_FN int LZ(lz_pair_adaptive)(int m, LZ_REAL rho, LZ_REAL* y, LZ_REAL t0, LZ_REAL t1, LZ_REAL rtol,
                               LZ_REAL atol, int max_steps, int* n_acc, int* n_rej) {
    const LZ_REAL exponent = LZ_R(-1.0 / 5.0), safety = LZ_R(0.9), min_factor = LZ_R(0.2), max_factor = LZ_R(10.0);
    LZ_REAL k1[3], k7[3], ynew[3], err[3], scale[3];
    int acc = 0, rej = 0, status = 0;
    LZ(lz_rhs)(rho, y, k1);
    LZ_REAL t = t0;
    LZ_REAL h = LZ(lz_first_step)(rho, y, k1, t1 - t0, rtol, atol);
    while (t < t1) {
        const LZ_REAL min_step = LZ_R(10.0) * LZ_ABS(LZ_NEXT(t) - t);
        if (h < min_step) h = min_step;
        int rejected = 0;
        for (;;) {
            if (h < min_step || acc + rej >= max_steps) { status = -1; break; }
            LZ_REAL t_new = t + h;
            if (t_new > t1) t_new = t1;
            const LZ_REAL hs = t_new - t;
            LZ(lz_pair_step)(m, rho, y, k1, hs, ynew, k7, err);
            for (int c = 0; c < 3; ++c) scale[c] = atol + LZ_MAX(LZ_ABS(y[c]), LZ_ABS(ynew[c])) * rtol;
            const LZ_REAL en = LZ(lz_rms3)(err, scale);
            if (!LZ_ISFINITE(en)) { status = -1; break; }
            if (en < LZ_R(1.0)) {
                LZ_REAL factor = en == LZ_R(0.0) ? max_factor : LZ_MIN(max_factor, safety * LZ_POW(en, exponent));
                if (rejected) factor = LZ_MIN(LZ_R(1.0), factor);
                h = hs * factor;
                t = t_new;
                for (int c = 0; c < 3; ++c) { y[c] = ynew[c]; k1[c] = k7[c]; }
                ++acc;
                break;
            }
            h = hs * LZ_MAX(min_factor, safety * LZ_POW(en, exponent));
            rejected = 1;
            ++rej;
        }
        if (status) break;
    }
    *n_acc = acc;
    *n_rej = rej;
    return status;
}

#undef LZ_R
