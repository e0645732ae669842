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
    """``comm``, or ``MPI.COMM_WORLD`` when None; anything but an mpi4py intracommunicator is
    refused (EagleTypeError, raised where it is given: no collective can be run over it)."""
    MPI = mpi()
    if comm is None:
        return MPI.COMM_WORLD
    if not isinstance(comm, MPI.Intracomm) or comm == MPI.COMM_NULL:  # Split(UNDEFINED) gives a null Intracomm
        from ..errors import EagleTypeError
        null = isinstance(comm, MPI.Comm) and comm == MPI.COMM_NULL
        got = "MPI.COMM_NULL" if null else f"a value of type {type(comm).__name__}"
        raise EagleTypeError(f"eagle.distributed: comm must be an mpi4py intracommunicator (MPI.COMM_WORLD, "
                             f"comm.Split(...)), got {got}")
    return comm
