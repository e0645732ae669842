"""Per-sample dense linear algebra, generated as C for the stiff steppers: the iteration matrix
W = c_diag I + c_jac J formed from the Jacobian's sparsity pattern, its LU factorization with
partial pivoting in place (in the lane's own memory: D*D reals and D ints), and the solve.

The size is bounded: :data:`MAX_D` components. Above it the per-lane matrices (D*D reals each,
two to four of them) would spill far past any GPU's registers and local cache and one lane's LU costs
D^3/3 multiply-adds; such a system is refused with :class:`EagleValueError` (solve it with an
explicit method, or a dedicated sparse solver) rather than run slowly in silence.

The matrices are ``ODE_LD`` x ``ODE_LD``: the state's size D, or -- a Rosenbrock method solving y
with its forward sensitivities (eagle/ode/_sensitivity.py) -- y's size d alone. The augmented
system's iteration matrix is block lower triangular, D / d diagonal blocks all equal to y's W and
the first block column's J-derivative blocks below them, so one d x d LU serves it
(:func:`solve_w`), never a D x D one.

The C needs ``D``, ``ODE_LD``, ``ode_real``, ``ODE_FABS`` and ``ode_finite`` (eagle/ode/_frame.py's)."""
from ..errors import EagleValueError

MAX_D = 64
UNROLL_NNZ = 256  # a pattern up to this many entries forms W in straight-line code; above, a loop


def check_size(d, method):
    if d > MAX_D:
        raise EagleValueError(f"eagle.ode: method={method!r} is implicit and factors a {d} x {d} matrix per sample; "
                              f"the implicit methods take at most {MAX_D} state components (n_state = {d}). Use an "
                              f"explicit method (Tsit5, DOP853) if the problem is not stiff, or split the system")


def form_w(pattern, d):
    """C of ``ode_form_w(JT, cd, cj, Wm)``: Wm = cd I + cj J (d = ODE_LD square), where J is JT's
    first d rows (row-major, rows of d) and zero outside ``pattern`` (a list of (i, j); None:
    every entry may be nonzero)."""
    out = ["/* The iteration matrix Wm = cd I + cj J; J's structural zeros are not read. */",
           "ODE_LA_FN void ode_form_w(const ode_real* JT, const ode_real cd, const ode_real cj, ode_real* Wm)",
           "{"]
    if pattern is not None:
        pattern = [(i, j) for i, j in pattern if i < d and j < d]
    if pattern is None or len(pattern) > UNROLL_NNZ:
        out += ["    for (int q = 0; q < ODE_LD * ODE_LD; ++q) Wm[q] = cj * JT[q];",
                "    for (int k = 0; k < ODE_LD; ++k) Wm[k * ODE_LD + k] += cd;",
                "}"]
        return "\n".join(out)
    diag = {i for i, j in pattern if i == j}
    out.append("    for (int q = 0; q < ODE_LD * ODE_LD; ++q) Wm[q] = 0;")
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
#if EAGLE_KIND_GPU && ODE_LD <= ODE_GPU_INLINE_MAX_D
#define ODE_LA_FN EAGLE_FN
#elif EAGLE_KIND_GPU
#define ODE_LA_FN static __device__ __noinline__
#elif EAGLE_KIND_OPENCL
#define ODE_LA_FN static
#else
#define ODE_LA_FN static __attribute__((noinline))
#endif
/* LU with partial pivoting of the ODE_LD x ODE_LD row-major Wm, in place (L below the diagonal, unit
 * diagonal implied; U on and above); piv[k] is the row exchanged with row k at step k. A zero
 * multiplier skips its row update (structural zeros cost a compare). Returns 0 when a pivot is
 * zero or not finite: the matrix is singular to working precision (or J was not finite). */
ODE_LA_FN int ode_lu(ode_real* Wm, int* piv)
{
    for (int k = 0; k < ODE_LD; ++k) {
        int p = k;
        ode_real big = ODE_FABS(Wm[k * ODE_LD + k]);
        for (int r = k + 1; r < ODE_LD; ++r) {
            const ode_real v = ODE_FABS(Wm[r * ODE_LD + k]);
            if (v > big) { big = v; p = r; }
        }
        piv[k] = p;
        if (!(big > 0) || !ode_finite(big)) return 0;
        if (p != k) {
            for (int c = 0; c < ODE_LD; ++c) {
                const ode_real s = Wm[k * ODE_LD + c];
                Wm[k * ODE_LD + c] = Wm[p * ODE_LD + c];
                Wm[p * ODE_LD + c] = s;
            }
        }
        const ode_real inv = 1 / Wm[k * ODE_LD + k];
        for (int r = k + 1; r < ODE_LD; ++r) {
            const ode_real l = Wm[r * ODE_LD + k] * inv;
            Wm[r * ODE_LD + k] = l;
            if (l != 0) {
                for (int c = k + 1; c < ODE_LD; ++c) Wm[r * ODE_LD + c] -= l * Wm[k * ODE_LD + c];
            }
        }
    }
    return 1;
}
/* x = Wm^-1 b in place of b, from ode_lu's factors. */
ODE_LA_FN void ode_lu_solve(const ode_real* LUm, const int* piv, ode_real* b)
{
    for (int k = 0; k < ODE_LD; ++k) {
        const int p = piv[k];
        if (p != k) { const ode_real s = b[k]; b[k] = b[p]; b[p] = s; }
    }
    for (int r = 1; r < ODE_LD; ++r) {
        ode_real acc = b[r];
        for (int c = 0; c < r; ++c) acc -= LUm[r * ODE_LD + c] * b[c];
        b[r] = acc;
    }
    for (int r = ODE_LD - 1; r >= 0; --r) {
        ode_real acc = b[r];
        for (int c = r + 1; c < ODE_LD; ++c) acc -= LUm[r * ODE_LD + c] * b[c];
        b[r] = acc / LUm[r * ODE_LD + r];
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


LU_COMPLEX = r"""/* The complex counterpart (Radau IIA's second system): Wr + i Wi, ODE_LD x ODE_LD row-major, LU with
 * partial pivoting (by |w|^2) in place; every complex operation written in real arithmetic, so
 * every kind rounds it the same. Returns 0 when a pivot is zero or not finite. */
ODE_LA_FN int ode_lu_c(ode_real* Wr, ode_real* Wi, int* piv)
{
    for (int k = 0; k < ODE_LD; ++k) {
        int p = k;
        ode_real big = Wr[k * ODE_LD + k] * Wr[k * ODE_LD + k] + Wi[k * ODE_LD + k] * Wi[k * ODE_LD + k];
        for (int r = k + 1; r < ODE_LD; ++r) {
            const ode_real v = Wr[r * ODE_LD + k] * Wr[r * ODE_LD + k] + Wi[r * ODE_LD + k] * Wi[r * ODE_LD + k];
            if (v > big) { big = v; p = r; }
        }
        piv[k] = p;
        if (!(big > 0) || !ode_finite(big)) return 0;
        if (p != k) {
            for (int c = 0; c < ODE_LD; ++c) {
                ode_real s = Wr[k * ODE_LD + c]; Wr[k * ODE_LD + c] = Wr[p * ODE_LD + c]; Wr[p * ODE_LD + c] = s;
                s = Wi[k * ODE_LD + c]; Wi[k * ODE_LD + c] = Wi[p * ODE_LD + c]; Wi[p * ODE_LD + c] = s;
            }
        }
        const ode_real ir = Wr[k * ODE_LD + k] / big, ii = -Wi[k * ODE_LD + k] / big;   /* 1 / pivot */
        for (int r = k + 1; r < ODE_LD; ++r) {
            const ode_real ar = Wr[r * ODE_LD + k], ai = Wi[r * ODE_LD + k];
            const ode_real lr = ar * ir - ai * ii, li = ar * ii + ai * ir;
            Wr[r * ODE_LD + k] = lr;
            Wi[r * ODE_LD + k] = li;
            if (lr != 0 || li != 0) {
                for (int c = k + 1; c < ODE_LD; ++c) {
                    const ode_real ur = Wr[k * ODE_LD + c], ui = Wi[k * ODE_LD + c];
                    Wr[r * ODE_LD + c] -= lr * ur - li * ui;
                    Wi[r * ODE_LD + c] -= lr * ui + li * ur;
                }
            }
        }
    }
    return 1;
}
/* (br + i bi) = (LUr + i LUi)^-1 (br + i bi) in place, from ode_lu_c's factors. */
ODE_LA_FN void ode_lu_solve_c(const ode_real* LUr, const ode_real* LUi, const int* piv, ode_real* br, ode_real* bi)
{
    for (int k = 0; k < ODE_LD; ++k) {
        const int p = piv[k];
        if (p != k) {
            ode_real s = br[k]; br[k] = br[p]; br[p] = s;
            s = bi[k]; bi[k] = bi[p]; bi[p] = s;
        }
    }
    for (int r = 1; r < ODE_LD; ++r) {
        ode_real sr = br[r], si = bi[r];
        for (int c = 0; c < r; ++c) {
            const ode_real lr = LUr[r * ODE_LD + c], li = LUi[r * ODE_LD + c];
            sr -= lr * br[c] - li * bi[c];
            si -= lr * bi[c] + li * br[c];
        }
        br[r] = sr; bi[r] = si;
    }
    for (int r = ODE_LD - 1; r >= 0; --r) {
        ode_real sr = br[r], si = bi[r];
        for (int c = r + 1; c < ODE_LD; ++c) {
            const ode_real ur = LUr[r * ODE_LD + c], ui = LUi[r * ODE_LD + c];
            sr -= ur * br[c] - ui * bi[c];
            si -= ur * bi[c] + ui * br[c];
        }
        const ode_real dr = LUr[r * ODE_LD + r], di = LUi[r * ODE_LD + r], den = dr * dr + di * di;
        br[r] = (sr * dr + si * di) / den;
        bi[r] = (si * dr - sr * di) / den;
    }
}"""



def solve_w(pattern, d, n_blocks):
    """C of ``ode_solve_w(LUm, piv, JT, cj, b)``: b = W^-1 b in place for W = cd I + cj J of the
    (n_blocks d)-state system whose Jacobian's first block column JT holds (rows of d; J's other
    blocks: y's J on the diagonal, zero elsewhere -- a system with its forward sensitivities).
    Block forward substitution: x_0 = W0^-1 b_0, x_p = W0^-1 (b_p - cj M_p x_0) with W0 = LUm's
    factors and M_p the p-th block of that column (``pattern``: its nonzeros (i, j), None: dense).
    One block (n_blocks = 1) is the plain solve."""
    head = ["/* W^-1 b in place: one d x d LU serves the block lower triangular W of y and its sensitivities. */",
            "ODE_LA_FN void ode_solve_w(const ode_real* LUm, const int* piv, const ode_real* JT, const ode_real cj,",
            "                           ode_real* b)",
            "{"]
    if n_blocks == 1:
        return "\n".join(head + ["    (void)JT; (void)cj;", "    ode_lu_solve(LUm, piv, b);", "}"])
    out = head + ["    ode_lu_solve(LUm, piv, b);"]
    below = None if pattern is None else [(i, j) for i, j in pattern if i >= d and j < d]
    if below is None or len(below) > UNROLL_NNZ:
        out += ["    for (int r = ODE_LD; r < D; ++r) {",
                "        ode_real acc = 0;",
                "        for (int c = 0; c < ODE_LD; ++c) acc += JT[r * ODE_LD + c] * b[c];",
                "        b[r] -= cj * acc;",
                "    }"]
    else:
        rows = {}
        for i, j in below:
            rows.setdefault(i, []).append(j)
        for i in sorted(rows):
            acc = " + ".join(f"JT[{i * d + j}] * b[{j}]" for j in sorted(rows[i]))
            out.append(f"    b[{i}] -= cj * ({acc});")
    out += [f"    for (int p = 1; p < {n_blocks}; ++p) ode_lu_solve(LUm, piv, b + p * ODE_LD);", "}"]
    return "\n".join(out)
