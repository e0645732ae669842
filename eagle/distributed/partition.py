"""The partition triple of one rank: contiguous, balanced, deterministic.

Rank ``r`` of ``size`` holds samples ``[base, base + count)`` of ``n_samples``; the first
``n_samples % size`` ranks hold one sample more than the others, so counts differ by at most one,
and ranks past ``n_samples`` hold none. The split depends on nothing but ``(n_samples, size, r)``:
every rank computes every other rank's share without communicating."""
from typing import NamedTuple

from ..extend import integer
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
    """``n_samples`` as an int in [0, 2**63 - 1]: kernels receive it as an int64."""
    return integer(n_samples, "eagle.distributed: n_samples", minimum=0)


def check_part(part, n_samples, what):
    """``part`` as a :class:`Partition` of samples inside ``[0, n_samples)`` of this run: a
    Partition or a ``(base, count, n_samples)`` tuple of integers."""
    if not isinstance(part, tuple) or len(part) != 3:
        raise EagleTypeError(f"{what}: a chunk must be a Partition (base, count, n_samples), as chunks() yields, "
                             f"got {type(part).__name__} {part!r:.60}")
    base, count, n = (integer(v, f"{what}: the chunk's {k}", minimum=0) for k, v in zip(Partition._fields, part))
    if n != n_samples or base + count > n_samples:
        raise EagleValueError(f"{what}: the chunk {tuple(part)} (base, count, n_samples) is not inside this run's "
                              f"samples [0, {n_samples})")
    return Partition(base, count, n)


def split(n_samples, size, rank):
    """The :class:`Partition` of ``rank`` among ``size`` ranks (pure arithmetic, no MPI)."""
    n = _check_n(n_samples)
    size = integer(size, "eagle.distributed: size", minimum=1)
    rank = integer(rank, "eagle.distributed: rank", minimum=0)
    if rank >= size:
        raise EagleValueError(f"eagle.distributed: rank must be in [0, {size}), got {rank}")
    q, r = divmod(n, size)
    return Partition(rank * q + min(rank, r), q + (1 if rank < r else 0), n)


def counts(n_samples, size):
    """Every rank's count, in rank order (the ``counts`` of a Gatherv)."""
    size = integer(size, "eagle.distributed: size", minimum=1)
    return [split(n_samples, size, r).count for r in range(size)]


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
