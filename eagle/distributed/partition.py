"""The partition triple of one rank: contiguous, balanced, deterministic.

Rank ``r`` of ``size`` holds samples ``[base, base + count)`` of ``n_samples``; the first
``n_samples % size`` ranks hold one sample more than the others, so counts differ by at most one,
and ranks past ``n_samples`` hold none. The split depends on nothing but ``(n_samples, size, r)``:
every rank computes every other rank's share without communicating."""
from typing import NamedTuple

from ..errors import EagleTypeError, EagleValueError


class Partition(NamedTuple):
    """``(base, count, n_samples)``: this share's first global sample, its number of samples,
    and the run's total, as kernels receive them."""
    base: int
    count: int
    n_samples: int

    @property
    def stop(self):
        """One past the last global sample of this share."""
        return self.base + self.count

    def slice(self):
        """``slice(base, base + count)``: this share of an array over all samples."""
        return slice(self.base, self.base + self.count)


def _check_n(n_samples):
    if isinstance(n_samples, bool) or not hasattr(n_samples, "__index__"):
        raise EagleTypeError(f"eagle.distributed: n_samples must be an integer, got {type(n_samples).__name__}")
    n = int(n_samples)
    if n < 0:
        raise EagleValueError(f"eagle.distributed: n_samples must be >= 0, got {n}")
    return n


def split(n_samples, size, rank):
    """The :class:`Partition` of ``rank`` among ``size`` ranks (pure arithmetic, no MPI)."""
    n = _check_n(n_samples)
    size, rank = int(size), int(rank)
    if size < 1:
        raise EagleValueError(f"eagle.distributed: size must be >= 1, got {size}")
    if not 0 <= rank < size:
        raise EagleValueError(f"eagle.distributed: rank must be in [0, {size}), got {rank}")
    q, r = divmod(n, size)
    return Partition(rank * q + min(rank, r), q + (1 if rank < r else 0), n)


def counts(n_samples, size):
    """Every rank's count, in rank order (the ``counts`` of a Gatherv)."""
    return [split(n_samples, size, r).count for r in range(int(size))]


def partition(n_samples, comm=None):
    """This rank's ``(base, count, n_samples)`` in ``comm`` (default ``MPI.COMM_WORLD``).

    Parameters
    ----------
    n_samples : int
        The run's total number of samples (>= 0); it may be smaller than the number of ranks,
        in which case the last ranks get ``count == 0``.
    comm : mpi4py communicator, optional

    Returns
    -------
    Partition
        A named tuple ``(base, count, n_samples)``, identical to what every other rank computes
        for this rank. Not collective: no message is exchanged.
    """
    from ._mpi import world
    comm = world(comm)
    return split(n_samples, comm.Get_size(), comm.Get_rank())
