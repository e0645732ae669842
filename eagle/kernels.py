"""Kernels for a kind, as the integer handles :func:`eagle.run` takes.

- ``cpu``: C source (text or a ``.c`` path) compiled once with the system C compiler into a
  cached shared library (or an existing ``.so``), opened, and each name resolved to its
  function-pointer address. A cpu kernel is
  ``void k(void* const* params, int64_t base, int64_t count, int64_t n_samples)``.
- ``cuda``: a cubin, fatbin or PTX image (bytes or a path) loaded through the driver API
  (``cuModuleLoadData``, ``cuModuleGetFunction`` on ``libcuda.so.1``, via ctypes) into the
  device's primary context; each name becomes a ``CUfunction`` value. A ``.cu`` path is first
  compiled with ``nvcc`` (when on PATH) into a cached fatbin.

The returned :class:`Kernels` maps names to ints and keeps the library/module loaded."""
import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

from .errors import EagleValueError

_CACHE_ENV = "EAGLE_KERNEL_CACHE"
_loaded = {}  # cache key -> Kernels (libraries stay loaded for the life of the process)


class Kernels(dict):
    """name -> kernel handle (int). ``keepalive`` holds the loaded library or module."""

    def __init__(self, kind, handles, keepalive, origin):
        super().__init__(handles)
        self.kind, self.keepalive, self.origin = kind, keepalive, origin

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"eagle.kernels: no kernel '{name}' was loaded from {self.origin}") from None

    def __repr__(self):
        return f"<eagle.Kernels {self.kind} {sorted(self)} from {self.origin}>"


def cache_dir():
    """Where compiled kernels are kept: ``$EAGLE_KERNEL_CACHE`` or a per-user temp folder."""
    d = os.environ.get(_CACHE_ENV) or os.path.join(tempfile.gettempdir(), f"eagle-kernels-{os.getuid()}")
    os.makedirs(d, exist_ok=True)
    return d


def _read_source(source, include_dirs):
    """(source bytes, include dirs): a path's own folder is searched for its headers."""
    dirs = [os.path.abspath(d) for d in (include_dirs or [])]
    if isinstance(source, bytes):
        return source, dirs
    if "\n" not in source and os.path.exists(source):
        with open(source, "rb") as f:
            return f.read(), [os.path.dirname(os.path.abspath(source))] + dirs
    return source.encode(), dirs


def _headers_digest(dirs):
    h = hashlib.sha256()
    for d in dirs:
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if name.endswith((".h", ".cuh", ".hpp")):
                with open(os.path.join(d, name), "rb") as f:
                    h.update(name.encode() + f.read())
    return h.hexdigest().encode()


def _compile(cmd_of, source, suffix, tag):
    source_bytes, dirs = source
    incs = [f"-I{d}" for d in dirs]
    base_cmd = cmd_of
    cmd_of = lambda src, out: base_cmd(src, out) + incs  # noqa: E731
    key = hashlib.sha256(source_bytes + repr(cmd_of("SRC", "OUT")).encode() + tag.encode()
                         + _headers_digest(dirs)).hexdigest()[:20]
    out = os.path.join(cache_dir(), f"k_{key}{suffix}")
    if os.path.exists(out):
        return out
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        src = os.path.join(tmp, "kernels" + (".cu" if tag == "cuda" else ".c"))
        with open(src, "wb") as f:
            f.write(source_bytes)
        tmp_out = os.path.join(tmp, "out" + suffix)
        cmd = cmd_of(src, tmp_out)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"eagle.kernels: compiling failed ({' '.join(cmd)}):\n{proc.stderr.strip()}")
        os.replace(tmp_out, out)
    return out


def compile_c(source, *, cflags=None, cc=None, include_dirs=None):
    """Compile C ``source`` (text, bytes or a path) into a cached shared library; returns its path.

    Defaults: ``$CC`` or ``cc``, ``-O3 -ffp-contract=off -fPIC -shared`` (no fused multiply-add,
    so results do not depend on the compiler's contraction choices)."""
    cc = cc or os.environ.get("CC") or "cc"
    flags = list(cflags) if cflags is not None else ["-O3", "-ffp-contract=off"]
    ext = ".dylib" if sys.platform == "darwin" else ".so"
    return _compile(lambda src, out: [cc, *flags, "-fPIC", "-shared", "-o", out, src],
                    _read_source(source, include_dirs), ext, "cpu")


def load_cpu(source, names, *, cflags=None, cc=None, include_dirs=None):
    """cpu kernels ``names`` from C ``source`` (text, ``.c`` path) or a prebuilt ``.so`` path."""
    names = [names] if isinstance(names, str) else list(names)
    if isinstance(source, str) and source.endswith((".so", ".dylib", ".dll")) and os.path.exists(source):
        path = os.path.abspath(source)
    else:
        path = compile_c(source, cflags=cflags, cc=cc, include_dirs=include_dirs)
    key = ("cpu", path, tuple(names))
    if key in _loaded:
        return _loaded[key]
    lib = ctypes.CDLL(path)
    handles = {}
    for name in names:
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise EagleValueError(f"eagle.kernels: '{path}' has no kernel named '{name}'") from None
        handles[name] = ctypes.cast(fn, ctypes.c_void_p).value
    k = _loaded[key] = Kernels("cpu", handles, lib, path)
    return k


# ---------------------------------------------------------------------------------------- cuda

class _Driver:
    """The few driver-API calls kernel loading needs, on libcuda.so.1 through ctypes."""

    def __init__(self):
        name = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
        try:
            self.lib = ctypes.CDLL(name)
        except OSError as e:
            from .errors import BackendUnavailable
            raise BackendUnavailable(f"eagle.kernels: cannot load the CUDA driver {name}: {e}") from None
        self.check("cuInit", self.lib.cuInit(0))
        self.contexts = {}

    def check(self, what, status):
        if status:
            msg = ctypes.c_char_p()
            self.lib.cuGetErrorString(status, ctypes.byref(msg))
            text = msg.value.decode() if msg.value else "unknown error"
            raise RuntimeError(f"eagle.kernels: {what} failed with CUresult {status}: {text}")

    def context(self, device):
        """Make the primary context of ``device`` current (as the cuda backend uses it)."""
        ctx = self.contexts.get(device)
        if ctx is None:
            dev = ctypes.c_int()
            self.check("cuDeviceGet", self.lib.cuDeviceGet(ctypes.byref(dev), int(device)))
            ctx = ctypes.c_void_p()
            self.check("cuDevicePrimaryCtxRetain", self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
            self.contexts[device] = ctx
        self.check("cuCtxSetCurrent", self.lib.cuCtxSetCurrent(ctx))
        return ctx

    def load(self, image, names, device):
        self.context(device)
        module = ctypes.c_void_p()
        buf = ctypes.create_string_buffer(image + (b"\0" if not image.endswith(b"\0") else b""))
        self.check("cuModuleLoadData", self.lib.cuModuleLoadData(ctypes.byref(module), buf))
        handles = {}
        for name in names:
            fn = ctypes.c_void_p()
            status = self.lib.cuModuleGetFunction(ctypes.byref(fn), module, name.encode())
            if status:
                raise EagleValueError(f"eagle.kernels: the CUDA image has no kernel named '{name}' (CUresult {status})")
            handles[name] = int(fn.value)
        return handles, module


_driver = None


def compile_cuda(source, *, arch="sm_90", nvcc=None, flags=None, include_dirs=None):
    """Compile CUDA ``source`` (text or a ``.cu`` path) with nvcc into a cached fatbin holding
    ``arch`` code and its PTX; returns the fatbin's path."""
    nvcc = nvcc or os.environ.get("NVCC") or shutil.which("nvcc")
    if not nvcc:
        raise RuntimeError("eagle.kernels: nvcc is not on PATH; pass a prebuilt cubin/fatbin/PTX instead")
    virt = "compute_" + arch.split("_", 1)[1]
    extra = list(flags) if flags is not None else ["-O3"]
    return _compile(lambda src, out: [nvcc, "-fatbin", *extra, f"-gencode=arch={virt},code=[{arch},{virt}]",
                                      "-o", out, src], _read_source(source, include_dirs), ".fatbin", "cuda")


def load_cuda(image, names, *, device=0, arch="sm_90", include_dirs=None):
    """cuda kernels ``names`` from a cubin/fatbin/PTX image (bytes or path) or a ``.cu`` path."""
    global _driver
    names = [names] if isinstance(names, str) else list(names)
    origin = image if isinstance(image, str) else f"<{len(image)}-byte image>"
    if isinstance(image, str):
        if image.endswith(".cu"):
            image = compile_cuda(image, arch=arch, include_dirs=include_dirs)
        with open(image, "rb") as f:
            image = f.read()
    key = ("cuda", hashlib.sha256(image).hexdigest(), int(device), tuple(names))
    if key in _loaded:
        return _loaded[key]
    if _driver is None:
        _driver = _Driver()
    handles, module = _driver.load(image, names, int(device))
    k = _loaded[key] = Kernels("cuda", handles, module, origin)
    return k


_LOADERS = {"cpu": load_cpu, "cuda": load_cuda}


def load(kind, source, names, **kw):
    """Kernels ``names`` of ``kind`` (a kind name or an :class:`eagle.Backend`) from ``source``."""
    kind = getattr(kind, "kind", kind)
    try:
        loader = _LOADERS[kind]
    except KeyError:
        raise EagleValueError(f"eagle.kernels: no kernel loader for the {kind!r} kind "
                         f"(known: {', '.join(sorted(_LOADERS))})") from None
    return loader(source, names, **kw)
