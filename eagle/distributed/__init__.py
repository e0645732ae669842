"""eagle.distributed: samples partitioned over MPI ranks (one process per GPU), via mpi4py.

An optional part of eagle (its ``mpi`` extra: ``pip install ".[mpi]"`` in an eagle checkout, or ``pip install mpi4py``); nothing in eagle's core imports it,
and importing it needs no MPI: mpi4py is imported on first use, and a missing mpi4py or MPI
library raises :class:`MPIUnavailable` naming what is missing.

- :func:`partition` / :func:`split`: a rank's ``(base, count, n_samples)``.
- :func:`select_device`: one GPU per rank from the node-local rank.
- :class:`Job`: a rank's part of a run (partition, device, launching over the share with the
  global sample index, gathering, saving).
- :func:`gather`, :func:`save`: results to one rank or all, and to one ``.npz`` file.
- :func:`chunks`, :class:`SharedCounter`, :class:`Collector`: dynamic load balance from a shared
  counter (MPI one-sided fetch-and-op).
- :func:`fail_fast`, :func:`agree`, :class:`RankFailed`: a failing rank ends the job with its message.
- ``liveness``: eagle's collectives never wait for ever for a rank that is gone (it ended, raised
  or exited outside ``fail_fast``): the job is ended, naming it.

See docs/distributed.md for launching on one node and on a cluster."""
from ._mpi import MPIUnavailable, mpi
from .device import SharedDeviceError, select_device
from .dynamic import Collector, SharedCounter, chunk_table, chunks
from .failure import RankFailed, agree, check, fail_fast
from .gather import gather, save, to_host
from .job import GlobalPlane, Job
from .partition import Partition, counts, partition, split
from . import liveness as _liveness

_liveness.register_leaving()  # a rank's end is visible to the ranks still waiting for it

__all__ = ["MPIUnavailable", "mpi", "SharedDeviceError", "select_device", "Collector", "SharedCounter",
           "chunk_table", "chunks", "RankFailed", "agree", "check", "fail_fast", "gather", "save", "to_host",
           "GlobalPlane", "Job", "Partition", "counts", "partition", "split"]
