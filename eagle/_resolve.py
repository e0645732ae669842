"""The one resolver: which backend a public call that takes arrays works on.

Rules, in order:

1. ``backend=`` (a kind, ``'gpu'``, a path or an :class:`eagle.Backend`) overrides, but the
   arrays must still live where that backend serves (refused naming both otherwise).
2. Otherwise the arrays name it by their DLPack device (``__dlpack_device__``; numpy arrays are
   host memory). All device arrays must live on one device, else :class:`eagle.EagleValueError`
   names both devices. An eagle stream given as ``stream=`` names its backend too.
3. Only when every argument lives on the host (or there is none) is the answer the kind that
   serves host memory.

``host_ok``: host arrays may sit beside device arrays (a copy between host and device); elsewhere
(kernel arguments, planes) host and device arrays together are refused, since a kernel on one
cannot read the other's memory."""
import numpy as np

from ._arrays import dlpack_device, fast_infos
from ._device_kind import HOST_DEVICE, HOST_DEVICE_TYPES, KIND_OF_DEVICE_TYPE, describe_device, kind_of_device_type
from ._stream_arg import backend_of_stream
from ._backend import backend as open_backend
from .errors import EagleTypeError, EagleValueError

# Values passed by value (a kernel's scalar arguments) and raw addresses (ints): they say nothing
# about where memory lives, so they name no device. A numpy scalar has __array_interface__ but is
# a value, not host memory a kernel would read.
_VALUES = (int, float, bytes, bytearray, np.generic)


def devices_of(arrays, what, noun="argument"):
    """[(index, (device_type, device_id))] of every array in ``arrays`` (values such as ints,
    floats, bytes and numpy scalars are skipped; a call that needs an array there refuses them
    when it reads their address)."""
    out = []
    for i, a in enumerate(arrays):
        if a is None or isinstance(a, _VALUES):
            continue
        try:
            out.append((i, dlpack_device(a)))
        except EagleTypeError as e:  # keeps what the object itself raised, if anything
            raise EagleTypeError(f"{what}: {noun} {i}: {e}") from e.__cause__
    return out


def device_of(arrays, what, host_ok=False, noun="argument"):
    """The one device the arrays live on, ``(device_type, device_id)``; the host when none is
    given. Refuses arrays on two devices, naming both (the first two neighbours that differ)."""
    devs = devices_of(arrays, what, noun)
    found = None  # (index, device) of the last array on a device that counts
    for i, d in devs:
        if host_ok and d[0] in HOST_DEVICE_TYPES:
            continue
        if found is not None and found[1] != d:
            raise EagleValueError(f"{what}: the arrays live on different devices: {noun} {found[0]} on "
                                  f"{describe_device(found[1])}, {noun} {i} on {describe_device(d)}; "
                                  "put them on one device")
        found = (i, d)
    if found is not None:
        return found[1]
    return devs[0][1] if devs else None


def resolve(arrays=(), *, backend=None, streams=(), what="eagle", host_ok=False, noun="argument"):
    """``(Backend, device)`` for a call on ``arrays``: see the module docstring.

    ``device`` is the arrays' device id (None when no array names one)."""
    where = device_of(arrays, what, host_ok, noun)
    named = [b for b in (backend_of_stream(s) for s in streams if s is not None) if b is not None]
    if backend is not None:
        b = open_backend(backend)
    elif named:
        b = named[0]
    else:
        b = open_backend(kind_of_device_type((where or HOST_DEVICE)[0]))
    for other in named:
        if other is not b:
            raise EagleValueError(f"{what}: the stream belongs to the {other.kind} backend '{other.path}', "
                                  f"the call works on the {b.kind} backend '{b.path}'")
    if where is not None and where[0] not in b.device_types:
        if not (host_ok and where[0] in HOST_DEVICE_TYPES):
            if backend is None:
                raise EagleValueError(f"{what}: the stream belongs to the {b.kind} backend '{b.path}', "
                                      f"which does not serve where the arrays live: {describe_device(where)}")
            raise EagleValueError(f"{what}: the arrays live on {describe_device(where)}, which the {b.kind} "
                                  f"backend '{b.path}' does not serve (it serves DLPack device types "
                                  f"{list(b.device_types)}); pass backend=None to infer it")
    return b, (None if where is None else where[1])


def resolve_exact(arrays):
    """``(Backend, device, infos)`` for a call on ``arrays`` with no ``backend=``, no stream and
    host arrays not allowed beside device arrays, when every array is of an exact type whose
    :class:`ArrayInfo` is known without asking it (:func:`eagle._arrays.fast_infos`: eagle's
    DeviceArray, a C-contiguous numpy array) and they all live on one device that the backend of
    its kind serves. ``infos`` are their ArrayInfos, in order.

    The answer is :func:`resolve`'s for those arrays; anything else (another type, arrays on two
    devices, a device no backend serves) is None, and the caller takes :func:`resolve`, which
    decides it or names what is wrong."""
    infos = fast_infos(arrays)
    if not infos:
        return None
    device_type, device_id = infos[0].device_type, infos[0].device_id
    for info in infos:
        if info.device_type != device_type or info.device_id != device_id:
            return None
    kind = KIND_OF_DEVICE_TYPE.get(device_type)
    if kind is None:
        return None
    b = open_backend(kind)
    if device_type not in b.device_types:
        return None
    return b, device_id, infos
