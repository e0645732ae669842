"""The one place eagle.distributed imports mpi4py: a clear error naming what is missing."""
from ..errors import BackendUnavailable


class MPIUnavailable(BackendUnavailable):
    """mpi4py, or the MPI library under it, is not installed or cannot be loaded."""


def mpi():
    """The ``mpi4py.MPI`` module, or :class:`MPIUnavailable` saying what is missing and how to get it."""
    try:
        import mpi4py  # noqa: F401
    except ImportError as e:
        raise MPIUnavailable(f"eagle.distributed needs mpi4py, which is not installed ({e}); "
                             "install it with `pip install mpi4py` (eagle's mpi extra) and an MPI library "
                             "(your cluster's, or `pip install mpich`)") from None
    try:
        from mpi4py import MPI
    except (ImportError, RuntimeError, OSError) as e:
        raise MPIUnavailable(f"eagle.distributed: mpi4py is installed but no MPI library could be loaded "
                             f"({type(e).__name__}: {e}); install one (your cluster's module, "
                             "`apt-get install openmpi-bin libopenmpi-dev` or `pip install mpich`) or "
                             "point $MPI4PY_LIBMPI at its libmpi") from None
    return MPI


def world(comm=None):
    """``comm``, or ``MPI.COMM_WORLD`` when None."""
    return mpi().COMM_WORLD if comm is None else comm
