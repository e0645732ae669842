"""The public names that code built on eagle's core uses: ``eagle.distributed``, a layer of your
own. Everything here is also what eagle itself uses, re-exported from the module that owns it, so
an extension reads the same arrays, refuses the same arguments and resolves backends as eagle does,
without importing eagle's private modules (tests/test_layers.py). The benchmarks' knobs (raw cffi
objects, the hot path's internals) live in :mod:`eagle.benchknobs`.

Arrays
    ``address_of(obj) -> ArrayInfo`` (pointer, size, device, read-only flag and the object to keep
    alive, of any array eagle accepts) and ``is_host(obj)`` (the host can read it directly);
    ``order_before(obj, stream)`` orders ``stream`` after the array library's pending work on it.
Backends
    ``resolve(arrays, backend=, streams=, what=)`` -> ``(Backend, device)``, the one resolver
    eagle's calls use.
Kinds
    ``HOST_DEVICE_TYPES`` (DLPack device types the host can read), ``VISIBILITY_ENV`` (kind -> the
    environment variable that limits the devices a process sees).
Argument checks
    ``integer(value, what, minimum=, maximum=)`` and ``real(value, what)``, which raise eagle's
    own errors naming ``what``; ``INT32_MAX``, ``INT64_MIN``, ``UINT32_MAX``."""
from ._alloc import is_host, order_before
from ._arrays import ArrayInfo, address_of
from ._device_kind import HOST_DEVICE_TYPES, VISIBILITY_ENV
from ._resolve import resolve
from ._validate import INT32_MAX, INT64_MIN, UINT32_MAX, integer, real

__all__ = ["ArrayInfo", "address_of", "is_host", "order_before", "resolve", "HOST_DEVICE_TYPES", "VISIBILITY_ENV",
           "integer", "real", "INT32_MAX", "INT64_MIN", "UINT32_MAX"]
