"""Per-sample dense linear algebra, generated as C for the stiff steppers: the iteration matrix
W = c_diag I + c_jac J formed from the Jacobian's sparsity pattern, its LU factorization with
partial pivoting in place (in the lane's own memory: D*D reals and D ints), and the solve.

The size is bounded: :data:`MAX_D` components. Above it the per-lane matrices (D*D reals each,
two to four of them) would spill far past any GPU's registers and local cache and one lane's LU costs
D^3/3 multiply-adds; such a system is refused with :class:`EagleValueError` (solve it with an
explicit method, or a dedicated sparse solver) rather than run slowly in silence.

The C needs ``D``, ``ode_real``, ``ODE_FABS`` and ``ode_finite`` (eagle/ode/_frame.py's)."""
from ..errors import EagleValueError

MAX_D = 64
UNROLL_NNZ = 256  # a pattern up to this many entries forms W in straight-line code; above, a loop


def check_size(d, method):
    if d > MAX_D:
        raise EagleValueError(f"eagle.ode: method={method!r} is implicit and factors a {d} x {d} matrix per sample; "
                              f"the implicit methods take at most {MAX_D} state components (n_state = {d}). Use an "
                              f"explicit method (Tsit5, DOP853) if the problem is not stiff, or split the system")


def form_w(pattern, d):
    """C of ``ode_form_w(JT, cd, cj, Wm)``: Wm = cd I + cj J, where J (row-major, D*D) is zero
    outside ``pattern`` (a list of (i, j); None: every entry may be nonzero)."""
    out = ["/* The iteration matrix Wm = cd I + cj J; J's structural zeros are not read. */",
           "ODE_LA_FN void ode_form_w(const ode_real* JT, const ode_real cd, const ode_real cj, ode_real* Wm)",
           "{"]
    if pattern is None or len(pattern) > UNROLL_NNZ:
        out += ["    for (int q = 0; q < D * D; ++q) Wm[q] = cj * JT[q];",
                "    for (int k = 0; k < D; ++k) Wm[k * D + k] += cd;",
                "}"]
        return "\n".join(out)
    diag = {i for i, j in pattern if i == j}
    out.append("    for (int q = 0; q < D * D; ++q) Wm[q] = 0;")
    for i, j in pattern:
        q = i * d + j
        out.append(f"    Wm[{q}] = cj * JT[{q}]{' + cd' if i == j else ''};")
    for k in range(d):
        if k not in diag:
            out.append(f"    Wm[{k * d + k}] = cd;")
    out.append("}")
    return "\n".join(out)


LU = r"""/* The linear algebra and the implicit attempt are called, not inlined at every use (EAGLE_FN
 * inlines): the compile stays short and the code small; a call costs little beside O(D^2) work.
 * On a GPU a small system is inlined (D <= ODE_GPU_INLINE_MAX_D): its matrices can then live in
 * registers rather than in the lane's local memory. */
#ifndef ODE_GPU_INLINE_MAX_D
#define ODE_GPU_INLINE_MAX_D 4
#endif
#if EAGLE_KIND_GPU && D <= ODE_GPU_INLINE_MAX_D
#define ODE_LA_FN EAGLE_FN
#elif EAGLE_KIND_GPU
#define ODE_LA_FN static __device__ __noinline__
#elif EAGLE_KIND_OPENCL
#define ODE_LA_FN static
#else
#define ODE_LA_FN static __attribute__((noinline))
#endif
/* LU with partial pivoting of the D x D row-major Wm, in place (L below the diagonal, unit
 * diagonal implied; U on and above); piv[k] is the row exchanged with row k at step k. A zero
 * multiplier skips its row update (structural zeros cost a compare). Returns 0 when a pivot is
 * zero or not finite: the matrix is singular to working precision (or J was not finite). */
ODE_LA_FN int ode_lu(ode_real* Wm, int* piv)
{
    for (int k = 0; k < D; ++k) {
        int p = k;
        ode_real big = ODE_FABS(Wm[k * D + k]);
        for (int r = k + 1; r < D; ++r) {
            const ode_real v = ODE_FABS(Wm[r * D + k]);
            if (v > big) { big = v; p = r; }
        }
        piv[k] = p;
        if (!(big > 0) || !ode_finite(big)) return 0;
        if (p != k) {
            for (int c = 0; c < D; ++c) {
                const ode_real s = Wm[k * D + c];
                Wm[k * D + c] = Wm[p * D + c];
                Wm[p * D + c] = s;
            }
        }
        const ode_real inv = 1 / Wm[k * D + k];
        for (int r = k + 1; r < D; ++r) {
            const ode_real l = Wm[r * D + k] * inv;
            Wm[r * D + k] = l;
            if (l != 0) {
                for (int c = k + 1; c < D; ++c) Wm[r * D + c] -= l * Wm[k * D + c];
            }
        }
    }
    return 1;
}
/* x = Wm^-1 b in place of b, from ode_lu's factors. */
ODE_LA_FN void ode_lu_solve(const ode_real* LUm, const int* piv, ode_real* b)
{
    for (int k = 0; k < D; ++k) {
        const int p = piv[k];
        if (p != k) { const ode_real s = b[k]; b[k] = b[p]; b[p] = s; }
    }
    for (int r = 1; r < D; ++r) {
        ode_real acc = b[r];
        for (int c = 0; c < r; ++c) acc -= LUm[r * D + c] * b[c];
        b[r] = acc;
    }
    for (int r = D - 1; r >= 0; --r) {
        ode_real acc = b[r];
        for (int c = r + 1; c < D; ++c) acc -= LUm[r * D + c] * b[c];
        b[r] = acc / LUm[r * D + r];
    }
}"""


def flops(d, nnz=None):
    """Floating-point operations (an FMA = 2) of forming W, one LU and one solve, for a dense
    d x d (``nnz``: J's nonzeros, for forming W): (W, LU, solve)."""
    nnz = d * d if nnz is None else nnz
    w = nnz + d
    lu = sum((d - k - 1) * (1 + 2 * (d - k - 1)) for k in range(d)) + d  # multipliers + updates + 1/pivot
    solve = 2 * d * d
    return w, lu, solve


LU_COMPLEX = r"""/* The complex counterpart (Radau IIA's second system): Wr + i Wi, D x D row-major, LU with
 * partial pivoting (by |w|^2) in place; every complex operation written in real arithmetic, so
 * every kind rounds it the same. Returns 0 when a pivot is zero or not finite. */
ODE_LA_FN int ode_lu_c(ode_real* Wr, ode_real* Wi, int* piv)
{
    for (int k = 0; k < D; ++k) {
        int p = k;
        ode_real big = Wr[k * D + k] * Wr[k * D + k] + Wi[k * D + k] * Wi[k * D + k];
        for (int r = k + 1; r < D; ++r) {
            const ode_real v = Wr[r * D + k] * Wr[r * D + k] + Wi[r * D + k] * Wi[r * D + k];
            if (v > big) { big = v; p = r; }
        }
        piv[k] = p;
        if (!(big > 0) || !ode_finite(big)) return 0;
        if (p != k) {
            for (int c = 0; c < D; ++c) {
                ode_real s = Wr[k * D + c]; Wr[k * D + c] = Wr[p * D + c]; Wr[p * D + c] = s;
                s = Wi[k * D + c]; Wi[k * D + c] = Wi[p * D + c]; Wi[p * D + c] = s;
            }
        }
        const ode_real ir = Wr[k * D + k] / big, ii = -Wi[k * D + k] / big;   /* 1 / pivot */
        for (int r = k + 1; r < D; ++r) {
            const ode_real ar = Wr[r * D + k], ai = Wi[r * D + k];
            const ode_real lr = ar * ir - ai * ii, li = ar * ii + ai * ir;
            Wr[r * D + k] = lr;
            Wi[r * D + k] = li;
            if (lr != 0 || li != 0) {
                for (int c = k + 1; c < D; ++c) {
                    const ode_real ur = Wr[k * D + c], ui = Wi[k * D + c];
                    Wr[r * D + c] -= lr * ur - li * ui;
                    Wi[r * D + c] -= lr * ui + li * ur;
                }
            }
        }
    }
    return 1;
}
/* (br + i bi) = (LUr + i LUi)^-1 (br + i bi) in place, from ode_lu_c's factors. */
ODE_LA_FN void ode_lu_solve_c(const ode_real* LUr, const ode_real* LUi, const int* piv, ode_real* br, ode_real* bi)
{
    for (int k = 0; k < D; ++k) {
        const int p = piv[k];
        if (p != k) {
            ode_real s = br[k]; br[k] = br[p]; br[p] = s;
            s = bi[k]; bi[k] = bi[p]; bi[p] = s;
        }
    }
    for (int r = 1; r < D; ++r) {
        ode_real sr = br[r], si = bi[r];
        for (int c = 0; c < r; ++c) {
            const ode_real lr = LUr[r * D + c], li = LUi[r * D + c];
            sr -= lr * br[c] - li * bi[c];
            si -= lr * bi[c] + li * br[c];
        }
        br[r] = sr; bi[r] = si;
    }
    for (int r = D - 1; r >= 0; --r) {
        ode_real sr = br[r], si = bi[r];
        for (int c = r + 1; c < D; ++c) {
            const ode_real ur = LUr[r * D + c], ui = LUi[r * D + c];
            sr -= ur * br[c] - ui * bi[c];
            si -= ur * bi[c] + ui * br[c];
        }
        const ode_real dr = LUr[r * D + r], di = LUi[r * D + r], den = dr * dr + di * di;
        br[r] = (sr * dr + si * di) / den;
        bi[r] = (si * dr - sr * di) / den;
    }
}"""
