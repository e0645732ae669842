"""eagle: run many small independent problems on any accelerator.

Record the stepping loop of a batch of samples once, with the loop decided on the device,
and replay it. eagle talks to a device kind through a backend library ``libeagle_<kind>.so``
that implements the plain-C seam ``eagle_backend.h``.

Importing eagle loads nothing but this module and its exceptions; the rest is imported on
first use."""
from .errors import (BackendLoadError, BackendUnavailable, CompileError, EagleError, HandleError,
                     InteropError, Unsupported)

__version__ = "0.1.0"


def _find_generated_modules():
    """Running from a source checkout (its eagle/ first on sys.path), the generated modules and
    backends live in the installed copy: add that directory to this package's path."""
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    if os.path.exists(os.path.join(here, "_seam_ffi.py")):
        return
    for entry in sys.path:
        cand = os.path.join(os.path.abspath(entry or "."), "eagle")
        if cand != here and os.path.exists(os.path.join(cand, "_seam_ffi.py")):
            __path__.append(cand)
            return


_find_generated_modules()

_LAZY = {
    "backend": "._loader", "backends": "._loader", "Backend": "._loader",
    "Stream": ".stream", "StreamRef": ".stream",
    "Capture": ".capture", "Captured": ".capture",
    "Fork": ".fork", "Conditional": ".conditional",
    "GraphBuilder": ".graph", "Launcher": ".graph",
    "run": ".exec", "DeviceProps": ".device",
    "copy": ".memory", "pinned": ".memory", "host_func": ".memory",
    "STREAM_NONE": ".interop",
    "ActiveSet": ".activeset",
    "Graph": ".build", "repeat_while": ".build", "skippable": ".build", "switch": ".build",
    "concurrent": ".build",
    "kind_of_array": "._device_kind",
    "compile": ".module", "load_image": ".module", "include_dir": ".module", "Module": ".module",
    "Kernel": ".module",
    "empty": ".array", "zeros": ".array", "asarray": ".array", "DeviceArray": ".array",
}

__all__ = ["BackendLoadError", "BackendUnavailable", "CompileError", "EagleError", "HandleError", "InteropError",
           "Unsupported", *_LAZY]


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'eagle' has no attribute '{name}'")
    import importlib
    value = getattr(importlib.import_module(mod, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def fence(producer, consumer, *, backend="cpu", device_type=None, device_id=0):
    """Order ``consumer`` after the work enqueued so far on ``producer`` without blocking the
    host. Streams are DLPack stream codes (or eagle streams); None means "no stream given"."""
    from ._loader import backend as _backend
    from .interop import fence as _fence
    return _fence(_backend(backend), producer, consumer, device_type, device_id)
