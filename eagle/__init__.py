"""eagle: run many small independent problems on any accelerator.

Record the stepping loop of a batch of samples once, with the loop decided on the device,
and replay it. eagle talks to a device kind through a backend library ``libeagle_<kind>.so``
that implements the plain-C seam ``eagle_backend.h``. The layers of this package are described
in eagle/README.md.

Importing eagle loads nothing but this module and its exceptions; the rest is imported on
first use."""
from .errors import (BackendLoadError, BackendUnavailable, CompileError, CompileTimeout, EagleAttributeError,
                     EagleBufferError, EagleError, EagleIndexError, EagleKeyError, EagleMemoryError, EagleTypeError, EagleValueError,
                     HandleError, InteropError, RanOutWarning, Unsupported)

__version__ = "0.1.0"

#: Where the generated modules and backends come from when this is a source checkout without them
#: (None for an installed eagle): the installed copy of eagle they are borrowed from.
BORROWED_FROM = None


def _find_generated_modules():
    """Running from a source checkout (its eagle/ first on sys.path), the generated modules and
    backends live in an installed copy: add that directory to this package's path
    (:data:`BORROWED_FROM` names it). The installed copy must have been generated from this
    checkout's eagle_backend.h: the SHA-256 of the header recorded when it was built
    (``_seam_meta.HEADER_SHA256``) must be the checkout's, else the import fails naming both. When
    they match there is nothing to warn about: the generated modules are what this checkout
    would generate."""
    import hashlib
    import os
    import sys
    global BORROWED_FROM
    here = os.path.dirname(os.path.abspath(__file__))
    if os.path.exists(os.path.join(here, "_seam_ffi.py")):
        return
    for entry in sys.path:
        cand = os.path.join(os.path.abspath(entry or "."), "eagle")
        if cand == here or not os.path.exists(os.path.join(cand, "_seam_meta.py")):
            continue
        header = os.path.join(os.path.dirname(here), "eagle_backend.h")
        if os.path.exists(header):
            with open(header, "rb") as f:
                mine = hashlib.sha256(f.read()).hexdigest()
            with open(os.path.join(cand, "_seam_meta.py"), encoding="utf-8") as f:
                theirs = next((line.split("=", 1)[1].strip().strip("'\"") for line in f
                               if line.startswith("HEADER_SHA256")), None)
            if theirs != mine:
                raise ImportError(f"eagle: this source checkout ({here}) has no generated modules, and "
                                  f"the installed eagle at {cand} was generated from another "
                                  "eagle_backend.h; reinstall it from this checkout (pip install .)")
        __path__.append(cand)
        BORROWED_FROM = cand
        return


_find_generated_modules()

_LAZY = {
    "backend": "._backend", "backends": "._backend", "Backend": "._backend",
    "Stream": ".stream", "StreamRef": ".stream",
    "Capture": ".capture", "Captured": ".capture",
    "Fork": ".fork", "Conditional": ".conditional",
    "GraphBuilder": ".launcher", "Launcher": ".launcher",
    "DeviceProps": ".device",
    "copy": ".api", "run": ".api", "compact": ".api", "pinned": ".api", "host_func": ".api",
    "fence": ".api",
    "STREAM_NONE": ".interop",
    "ActiveSet": ".activeset",
    "Graph": ".graph",
    "repeat_while": ".constructs", "skippable": ".constructs", "switch": ".constructs",
    "concurrent": ".constructs",
    "kind_of_array": "._device_kind",
    "compile": ".api", "load_image": ".api", "include_dir": ".module", "Module": ".module",
    "Kernel": ".module",
    "empty": ".api", "zeros": ".api", "asarray": ".api", "DeviceArray": ".array",
    "mean_var": ".reduce", "MeanVar": ".reduce",
}

__all__ = ["BackendLoadError", "BackendUnavailable", "CompileError", "CompileTimeout", "EagleAttributeError",
           "EagleBufferError",
           "EagleError", "EagleIndexError", "EagleKeyError", "EagleMemoryError", "EagleTypeError", "EagleValueError",
           "HandleError", "InteropError", "RanOutWarning", "Unsupported", *_LAZY]


#: Subpackages imported on first attribute access (``import eagle; eagle.ode.solve_ivp(...)``), as
#: numpy and scipy do. None of them imports mpi4py at import time: eagle.distributed loads it on first use.
_SUBMODULES = ("ode", "distributed", "check")


def __getattr__(name):
    import importlib
    if name in _SUBMODULES:
        return importlib.import_module("." + name, __name__)  # the import binds it in this namespace
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'eagle' has no attribute '{name}'")
    value = getattr(importlib.import_module(mod, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))
