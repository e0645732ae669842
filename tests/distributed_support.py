"""Shared by the eagle.distributed tests and the MPI worker scripts they launch."""
import functools
import os
import shutil
import subprocess
import sys

import pytest

#: A cpu kernel whose result depends on the global sample index i and on n_samples, with a
#: per-sample amount of work: a wrong base, count or n_samples on any rank changes the result.
KERNEL_SOURCE = r"""
#include <math.h>
#include <stdint.h>
#define ARG(T, i) (*(T const*)params[i])

static double value(int64_t i, int64_t n) {
    uint64_t z = (uint64_t)i + 0x9E3779B97F4A7C15ull * (uint64_t)(n + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    double acc = (double)(z >> 11) * (1.0 / 9007199254740992.0);
    const int64_t steps = 1 + (int64_t)(z % 50);
    for (int64_t s = 0; s < steps; ++s) acc = acc * 0.999 + sqrt(acc + (double)s);
    return acc;
}

/* x[i] = value(i, n), ids[i] = i over the lanes [base, base + count). */
void mix(void* const* params, int64_t base, int64_t count, int64_t n) {
    double* x = ARG(double*, 0);
    int64_t* ids = ARG(int64_t*, 1);
    for (int64_t i = base; i < base + count; ++i) { x[i] = value(i, n); ids[i] = i; }
}

/* A (2, stride) component-major plane: row 0 = value(i, n), row 1 = -i. */
void mix_rows(void* const* params, int64_t base, int64_t count, int64_t n) {
    double* y = ARG(double*, 0);
    const int64_t stride = ARG(int64_t, 1);
    for (int64_t i = base; i < base + count; ++i) { y[i] = value(i, n); y[stride + i] = -(double)i; }
}
"""


def mpi_or_skip():
    """mpi4py's MPI module, or skip the calling test module naming what is missing."""
    from eagle.distributed import MPIUnavailable, mpi
    try:
        return mpi()
    except MPIUnavailable as e:
        pytest.skip(str(e), allow_module_level=True)


@functools.lru_cache(maxsize=None)
def _mpiexec_check():
    """(mpiexec path, extra flags) after a 2-rank job saw 2 ranks, or (None, why)."""
    exe = next((c for c in (os.environ.get("MPIEXEC"), shutil.which("mpiexec"),
                            os.path.join(os.path.dirname(sys.executable), "mpiexec")) if c and os.path.exists(c)), None)
    if exe is None:
        return None, "no mpiexec found (set $MPIEXEC, or put an MPI's bin/ on PATH)"
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    flags = ["--oversubscribe", "--allow-run-as-root"] if "Open MPI" in version.stdout + version.stderr else []
    code = "from mpi4py import MPI; print('size', MPI.COMM_WORLD.Get_size())"
    try:
        r = subprocess.run([exe, "-n", "2", *flags, sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=120)
    except subprocess.TimeoutExpired:
        return None, f"{exe} -n 2 did not finish a trivial job in 120 s"
    if r.stdout.split().count("2") != 2:
        return None, (f"{exe} -n 2 did not start one 2-rank job (mpiexec and mpi4py of different MPIs?): "
                      f"{(r.stdout + r.stderr).strip()[:300]!r}")
    return exe, tuple(flags)


def mpiexec_or_skip(n=2):
    """``[mpiexec, -n, N, flags...]`` for an MPI that starts real multi-rank jobs with this
    Python's mpi4py, or skip naming what is missing."""
    mpi_or_skip()
    exe, flags = _mpiexec_check()
    if exe is None:
        pytest.skip(flags)
    return [exe, "-n", str(n), *flags]
