"""One GPU per rank, chosen from the rank's place on its node.

The ranks on one node are found with an MPI shared-memory split
(``comm.Split_type(MPI.COMM_TYPE_SHARED)``); node-local rank ``l`` takes device ``l`` of the
devices this process sees, or device 0 when the launcher already gave every rank exactly one
device (``srun --gpus-per-task=1`` sets ``CUDA_VISIBLE_DEVICES`` per rank). An explicit choice
wins: the ``device`` argument or ``$EAGLE_DEVICE`` (one ordinal for this rank, or a comma list
indexed by node-local rank, e.g. ``EAGLE_DEVICE=2,3``).

Two ranks on one GPU is refused (:class:`SharedDeviceError`, raised on every rank so none
hangs): they would share its memory and time-slice its multiprocessors, and each would run at
half speed or worse. Devices are told apart by node and by the physical ordinal behind the
kind's visibility variable, so two ranks that each see "device 0" of a different
``CUDA_VISIBLE_DEVICES`` are not taken for one."""
import os
import socket
import warnings

from ..extend import HOST_DEVICE_TYPES, INT32_MAX, VISIBILITY_ENV, integer
from ..errors import EagleError, EagleValueError
from . import liveness

ENV = "EAGLE_DEVICE"



class SharedDeviceError(EagleError, RuntimeError):
    """Two or more ranks of one node were given the same device."""


def node_comm(comm):
    """The ranks of ``comm`` that share this rank's node (memory), as a new communicator."""
    from ._mpi import mpi
    MPI = mpi()
    return comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())


def is_host_backend(backend):
    """True when every device type the backend serves is host memory (no device to choose)."""
    types = tuple(getattr(backend, "device_types", ()) or ())
    return bool(types) and all(int(t) in HOST_DEVICE_TYPES for t in types)


def count_devices(backend, limit=256):
    """How many devices ``backend`` sees (``device_props(i)`` answers for i < count); None where
    the backend cannot say (no ``device`` group)."""
    if not backend.provides("device"):
        return None
    n = 0
    while n < limit:
        try:
            backend.device_props(n)
        except EagleError:
            break
        n += 1
    return n


def _parse_choices(value, what, minimum=0):
    """The ordinals of a device choice: an int, or a comma list (a str or a sequence of ints)."""
    if isinstance(value, str):
        items = [p.strip() for p in value.split(",") if p.strip()]
    elif hasattr(value, "__iter__") and getattr(value, "ndim", 1) >= 1:  # a list, a tuple, a numpy array
        items = list(value)
    else:
        items = [value]
    if not items:
        raise EagleValueError(f"eagle.distributed: {what} is empty")
    out = []
    for item in items:
        if isinstance(item, str):
            try:
                item = int(item)
            except ValueError:
                raise EagleValueError(f"eagle.distributed: {what} must hold device ordinals, got {item!r}") from None
        out.append(integer(item, f"eagle.distributed: {what} (a device ordinal)", minimum=minimum,
                           maximum=INT32_MAX))
    return out


def _parse_choice(value, local_rank, what):
    """An ordinal from an int, or from a comma list (str or sequence) indexed by local rank."""
    parts = _parse_choices(value, what)
    if len(parts) > 1 and local_rank >= len(parts):
        raise EagleValueError(f"eagle.distributed: {what} lists {len(parts)} devices, but this rank is "
                              f"node-local rank {local_rank}; list one device per rank on the node")
    return parts[0] if len(parts) == 1 else parts[local_rank]


def physical_id(kind, ordinal):
    """The device behind ``ordinal`` as the whole node names it: the entry of the kind's
    visibility variable at that position when one is set, else the ordinal itself."""
    for var in VISIBILITY_ENV.get(kind, ()):
        listed = os.environ.get(var)
        if listed:
            items = [s.strip() for s in listed.split(",") if s.strip()]
            if 0 <= ordinal < len(items):
                return f"{var}={items[ordinal]}"
    return str(ordinal)


def select_device(backend, comm=None, *, device=None, allow_shared=False):
    """Choose this rank's device: one GPU per rank, from the node-local rank. Collective.

    Parameters
    ----------
    backend : Backend or kind
        The backend the rank will run on. A host backend (cpu) has no device to choose: the
        result is -1 (the calling thread's device, as everywhere in eagle).
    comm : mpi4py communicator, optional
        Default ``MPI.COMM_WORLD``.
    device : int, str or sequence of int, optional
        Override: this rank's ordinal, or one ordinal per node-local rank. Default: ``$EAGLE_DEVICE``
        if set, else the node-local rank (or 0 when each rank sees exactly one device). A host
        backend ignores it, but a malformed one is refused there too.
    allow_shared : bool
        Warn instead of refusing when two ranks of a node get one device. Must be the same on
        every rank, as must the backend's kind.

    Returns
    -------
    int
        The device ordinal for this rank (-1 for a host backend).

    Raises
    ------
    SharedDeviceError
        On every rank, when two ranks of one node would share a device (or a node has more
        ranks than devices), unless ``allow_shared``.
    RankFailed
        On every rank, when a rank's backend or device choice is refused, or when the ranks
        disagree on the backend's kind or on ``allow_shared``.
    """
    from ._mpi import world
    from .. import backend as _backend
    from .failure import check
    comm = world(comm)
    err, same, b = None, None, None
    try:  # checked here, then agreed: a host backend returns on every rank, or on none
        # a Backend or a kind; any object with kind/device_types/provides/device_props also serves
        b = backend if hasattr(backend, "device_props") and hasattr(backend, "kind") else _backend(backend)
        host_backend = is_host_backend(b)
        if device is not None and host_backend:  # ignored, but well formed: -1 (a Job's device) too
            _parse_choices(device, "device=", minimum=-1)
        same = {"backend": b.kind, "allow_shared": bool(allow_shared)}
    except Exception as e:  # noqa: BLE001 - reported on every rank by check()
        err = e
    check(comm, err, what="choosing a device", same=same)
    if host_backend:
        return -1
    local = node_comm(comm)
    try:
        lrank, lsize = local.Get_rank(), local.Get_size()
        err, dev = None, None
        try:
            if device is not None:
                dev = _parse_choice(device, lrank, "device=")
            elif os.environ.get(ENV):
                dev = _parse_choice(os.environ[ENV], lrank, f"${ENV}")
            else:
                seen = count_devices(b)
                if seen is None or seen >= lsize:
                    dev = lrank
                elif seen == 1:
                    dev = 0  # the launcher gave each rank its own device
                elif seen == 0:
                    raise EagleValueError(f"eagle.distributed: the {b.kind} backend sees no device on this node")
                else:
                    dev = lrank % seen
            seen = count_devices(b)
            if seen is not None and dev >= seen:
                raise EagleValueError(f"eagle.distributed: device {dev} does not exist for the {b.kind} "
                                      f"backend on this node ({seen} device(s) visible)")
        except Exception as e:  # noqa: BLE001 - reported on every rank by check()
            err = e
        check(comm, err, what="choosing a device")
        host = socket.gethostname()
        mine = physical_id(b.kind, dev)
        ids = liveness.allgather(local, mine, 'Job (devices)')
        sharing = [r for r, other in enumerate(ids) if other == mine]
        clash = None
        if len(sharing) > 1:
            clash = (f"node {host}: node-local ranks {sharing} would all use {b.kind} device {dev} "
                     f"({mine}); run one rank per device (mpiexec -n <devices per node> per node, "
                     f"srun --gpus-per-task=1) or set ${ENV}")
        if allow_shared:
            if clash:
                warnings.warn(f"eagle.distributed: {clash}; each rank will run at a fraction of the device",
                              RuntimeWarning, stacklevel=2)
        else:
            clashes = [c for c in liveness.allgather(comm, clash if lrank == min(sharing) else None, 'Job (devices)') if c]
            if clashes:
                raise SharedDeviceError("eagle.distributed: two ranks on one device is refused (pass "
                                        "allow_shared=True to run anyway): " + "; ".join(clashes))
        return dev
    finally:
        local.Free()
