"""Finding, opening and checking backend libraries (the ground floor: see eagle/README.md).

A backend of kind ``K`` is ``libeagle_K.so`` beside the installed package (the directory that
holds the generated ``_seam_ffi`` module), or the exact file named by ``$EAGLE_BACKEND_K``.
Opening runs the handshake of DESIGN.md §5 and refuses, naming the problem, any library that
breaks its promises.

:class:`Library` is one opened library: its bound seam functions, its capabilities, and the
per-library state seam objects share. Its seam calls come in two forms: ``lib.call.<name>(...)``
raises the mapped eagle exception (naming the symbol once) on a nonzero status; ``lib._f.<name>``
is the raw cffi function, for the few places that read a status themselves. This module imports
nothing above the ground floor: :class:`eagle.Backend` (eagle/_backend.py) adds the factories.
What a backend's work in flight leaves (holds, attention lists, pending host calls) is kept by
eagle/_inflight/, keyed by backend, not on the library."""
import os
import sys
import threading
import weakref
from collections import Counter

from . import _seam_meta as meta
from ._device_kind import GPU_KINDS
from ._elf_check import refuse_if_broken
from ._inflight.releases import due as _releases_due, settle_due
from ._seam_ffi import ffi
from ._status import exception_for
from .errors import BackendLoadError, BackendUnavailable, EagleTypeError, EagleValueError

_PREFIX = "eagle_backend_"
_SUFFIX = {"darwin": ".dylib", "win32": ".dll"}.get(sys.platform, ".so")
_LIB_PREFIX = "" if sys.platform == "win32" else "lib"

#: Per-symbol entries (short names) that extend a group: they need the group too. From the header's
#: ``extends=`` markers; shared with the checker (eagle/check/_seam.py).
EXTENDS = {sym[len("eagle_backend_"):]: group for sym, group in meta.EXTENDS.items()}

#: Calls per seam symbol, counted while tracing is on (``EAGLE_TRACE_CALLS=1`` when a backend
#: is opened, or ``backend(..., trace=True)``). Keys are full symbol names.
TRACE_COUNTS = Counter()

_lock = threading.Lock()
_opened = {}
_by_kind = {}  # kind -> (cls, reader of $EAGLE_BACKEND_<KIND>, its value, $EAGLE_TRACE_CALLS, library)


def _package_dirs():
    """Directories that hold installed backends: where the generated modules were installed."""
    from . import _seam_ffi
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = [os.path.dirname(os.path.abspath(_seam_ffi.__file__))]
    if here not in dirs:
        dirs.append(here)
    return dirs


def _env_var(kind):
    return "EAGLE_BACKEND_" + kind.upper()


def backends():
    """Every installed backend: kind -> absolute path, opening none of them.

    A kind named by ``$EAGLE_BACKEND_<KIND>`` maps to that exact file; the others are the
    ``libeagle_<kind>`` libraries beside the package."""
    found = {}
    for d in _package_dirs():
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for name in names:
            if name.startswith(_LIB_PREFIX + "eagle_") and name.endswith(_SUFFIX):
                kind = name[len(_LIB_PREFIX + "eagle_"):-len(_SUFFIX)]
                found.setdefault(kind, os.path.join(d, name))
    for var, value in os.environ.items():
        if var.startswith("EAGLE_BACKEND_") and value:
            found[var[len("EAGLE_BACKEND_"):].lower()] = os.path.abspath(value)
    return found


def _resolve(name):
    """(kind or None, absolute path, how it was found) for a kind, 'gpu' or a path."""
    if os.sep in name or name.endswith(_SUFFIX):
        path = os.path.abspath(name)
        if not os.path.exists(path):
            raise BackendLoadError(f"eagle: no backend library at '{path}'")
        return None, path, f"the path '{path}'"
    kind = name.lower()
    if kind == "gpu":
        gpus = sorted(k for k in backends() if k in GPU_KINDS)
        if len(gpus) > 1:
            raise BackendUnavailable(f"eagle: backend='gpu' is ambiguous, {', '.join(gpus)} are "
                                     "installed; name one of them as the backend")
        if not gpus:
            raise BackendUnavailable("eagle: backend='gpu' asked for, but no GPU backend (cuda, hip, "
                                     "metal) is installed; build one (docs/add_a_backend.md) or set "
                                     "$EAGLE_BACKEND_CUDA to its path")
        kind = gpus[0]
    var = _env_var(kind)
    value = os.environ.get(var)
    if value:
        path = os.path.abspath(value)
        if not os.path.isfile(path):
            # refused, named as what it is: a folder, another non-file, or nothing (isfile follows links)
            what = ("is a directory, not a library file" if os.path.isdir(path)
                    else "is not a regular file" if os.path.exists(path) else "does not exist")
            raise BackendLoadError(f"eagle: ${var} names '{path}', which {what} "
                                   "(no fall-back to the installed backend)")
        return kind, path, f"${var}='{path}'"
    for d in _package_dirs():
        path = os.path.join(d, f"{_LIB_PREFIX}eagle_{kind}{_SUFFIX}")
        if os.path.isfile(path):
            return kind, path, f"'{path}'"
    raise BackendUnavailable(f"eagle: no {kind} backend is installed (looked for "
                             f"{_LIB_PREFIX}eagle_{kind}{_SUFFIX} in {', '.join(_package_dirs())} "
                             f"and ${var})")


def open_library(name, cls, *, trace=None):
    """Open (once per path and tracing) the library named by a kind, ``'gpu'`` or a path, as an
    instance of ``cls`` (a :class:`Library` subclass).

    Raises :class:`eagle.BackendLoadError` when the library is refused and
    :class:`eagle.BackendUnavailable` when no such backend is installed."""
    by_env = trace is None  # tracing as $EAGLE_TRACE_CALLS says
    if by_env and type(name) is str:
        # the fast path of a kind opened before: valid while the two variables that decided it
        # (its $EAGLE_BACKEND_<KIND> and $EAGLE_TRACE_CALLS) read as they did then
        hit = _by_kind.get(name)
        if hit is not None and hit[0] is cls and hit[1]() == hit[2] and _trace_env() == hit[3]:
            return hit[4]
    if not isinstance(name, (str, os.PathLike)):
        raise EagleTypeError(f"eagle: a backend is named by a kind ('cpu', 'cuda', 'gpu', ...), a path or "
                             f"an eagle.Backend, not a {type(name).__name__}")
    kind, path, how = _resolve(os.fspath(name))
    if trace is None:
        trace = os.environ.get("EAGLE_TRACE_CALLS") == "1"
    key = (path, bool(trace))
    with _lock:
        lib = _opened.get(key)
        if lib is None:
            lib = cls(path, kind, how, trace=bool(trace))
            _opened[key] = lib
    if kind and lib.kind.lower() != kind.lower():  # opened before as another kind (see Library)
        raise BackendLoadError(f"eagle: the {kind} backend was looked for at {how}, but that library is a "
                               f"{lib.kind} backend (its build_info says backend_kind '{lib.kind}'); point "
                               f"${_env_var(kind)} at {'an' if kind[:1] in 'aeiou' else 'a'} {kind} backend, or load "
                               f"this one as eagle.backend('{lib.kind}') or by its path")
    if by_env and type(name) is str and name == kind:  # a kind by name: not 'gpu', not a path
        probe = _env_probe(_env_var(kind))
        _by_kind[name] = (cls, probe, probe(), _trace_env(), lib)
    return lib


def _env_probe(var):
    """A reader of ``os.environ[var]`` (None when unset) for the hot path. ``os.environ.get``
    raises and catches a KeyError for every unset variable (a microsecond); this reads the
    mapping behind ``os.environ`` (its raw values: compare them only with each other)."""
    env = os.environ
    encode = getattr(env, "encodekey", None)
    if encode is None or not isinstance(getattr(env, "_data", None), dict):
        return lambda: env.get(var)
    key = encode(var)
    return lambda: env._data.get(key)


_trace_env = _env_probe("EAGLE_TRACE_CALLS")


class _Functions:
    """The bound seam functions of one backend, one attribute per short name
    (``stream_create`` for ``eagle_backend_stream_create``)."""


def _raising(lib, full, fn):
    """``fn`` (a seam function returning a status) as a call that raises on a nonzero status.
    Every such call is a safe point: releases an interrupt cut short are made first (a dropped
    capture's, say, before work is given to the stream it was capturing)."""
    def call(*args):
        if _releases_due:
            settle_due()
        status = fn(*args)
        if status:
            raise lib._exception(full, status)
    call.__name__ = call.__qualname__ = full
    return call


def _returns_status(fn):
    """True when the bound cffi function returns eagle_backend_status (int32_t)."""
    return ffi.typeof(fn).result.cname == "int32_t"


def _unavailable_fn(message):
    def raiser(*_args):
        raise BackendUnavailable(message)
    raiser.unavailable = message
    return raiser


def _traced(name, fn):
    def counted(*args):
        TRACE_COUNTS[name] += 1
        return fn(*args)
    return counted


class _CaptureRecord(weakref.WeakValueDictionary):
    """raw stream -> the Capture recording it. A closed capture counts as gone at once: closing
    makes its release due in the same step (eagle._handle.Owner.close), and every seam call
    makes a due release before it runs (_raising), so this record and the backend agree at each
    call whatever step of the close an interrupt landed in."""

    def get(self, key, default=None):
        cap = super().get(key)
        return default if cap is None or cap.closed else cap

    def __contains__(self, key):
        return self.get(key) is not None


class Library:
    """One opened backend library. Get it (as an :class:`eagle.Backend`) from :func:`eagle.backend`.

    Attributes
    ----------
    kind : str
        ``'cpu'``, ``'cuda'``, ``'hip'``, ... (from the library's build info when opened by path).
    path : str
        Absolute path of the library.
    version : tuple of int
        ``(major, minor)`` of the seam the library was built against.
    groups : frozenset of str
        The capability groups it provides.
    unavailable : dict
        Every group and per-symbol entry -> ``''`` when provided, else the reason.
    build_info : dict
        The fields the backend wrote back.
    device_types : tuple of int
        DLPack device-type codes it serves.
    """

    def __init__(self, path, kind, how, trace=False):
        self.path = path
        # raw stream -> Capture recording it (fork branches, bodies too). Weak: a capture dropped
        # between begin() and end() is collected, and its release ends the recording, instead of
        # being kept here with its stream capturing for good.
        self._capturing = _CaptureRecord()

        refuse_if_broken(path, how)  # a truncated file would SIGBUS inside dlopen
        try:
            self._lib = ffi.dlopen(path)
        except OSError as e:
            raise BackendLoadError(f"eagle: cannot load the backend library {how}: {e}") from None
        lib = self._lib
        f = self._f = _Functions()
        call = self.call = _Functions()
        self._traced = trace

        def bind(name, required_because=None):
            full = _PREFIX + name
            try:
                fn = getattr(lib, full)
            except (AttributeError, ffi.error):
                if required_because:
                    raise BackendLoadError(f"eagle: the backend '{path}' does not export {full}, "
                                           f"which {required_because}") from None
                return None
            raises = _returns_status(fn)
            if trace:
                fn = _traced(full, fn)
            setattr(f, name, fn)
            if raises:
                setattr(call, name, _raising(self, full, fn))
            return fn

        version = bind("version", "every backend must export")()
        major, minor = version >> 16, version & 0xFFFF
        if major != meta.VERSION_MAJOR:
            raise BackendLoadError(f"eagle: the backend '{path}' speaks eagle-backend/{major}.{minor}, "
                                   f"eagle speaks eagle-backend/{meta.VERSION_MAJOR}.{meta.VERSION_MINOR}; "
                                   "only major 1 is accepted")
        self.version = (major, minor)
        for sym in meta.REQUIRED:
            bind(sym[len(_PREFIX):], "every backend must export")

        caps = ffi.new("uint64_t*")
        call.capabilities(caps)
        bits = int(caps[0])
        self.capability_bits = bits
        left_out = self._read_left_out_note()
        if bits & meta.RESERVED_BITS_MASK:
            bad = [i for i in range(64) if bits & meta.RESERVED_BITS_MASK & (1 << i)]
            raise BackendLoadError(f"eagle: the backend '{path}' sets reserved capability bit(s) "
                                   f"{', '.join(map(str, bad))}; reserved bits must be clear")

        self.build_info = self._read_build_info()
        reported = self.build_info.get("backend_kind") or None
        if kind and reported and reported.lower() != kind.lower():
            # asked for one kind, found another's library (EAGLE_BACKEND_OPENCL=.../libeagle_cpu.so):
            # its work would run on the other kind with no word said
            raise BackendLoadError(f"eagle: the {kind} backend was looked for at {how}, but that library is a "
                                   f"{reported} backend (its build_info says backend_kind '{reported}'); point "
                                   f"${_env_var(kind)} at {'an' if kind[:1] in 'aeiou' else 'a'} {kind} backend, or load this one as "
                                   f"eagle.backend('{reported}') or by its path")
        self.kind = kind or reported or os.path.basename(path)
        self.device_types = self._read_device_types()

        def lacks(what):
            return f"the {self.kind} backend '{path}' does not provide {what}"

        groups = set()
        unavailable = {}
        for group, bit in sorted(meta.GROUP_BITS.items(), key=lambda kv: kv[1]):
            names = [s[len(_PREFIX):] for s in meta.GROUP_SYMBOLS[group]]
            if bits & (1 << bit):
                for name in names:
                    bind(name, f"its capability bit {bit} ({group}) promises")
                groups.add(group)
                unavailable[group] = ""
            else:
                reason = lacks(group)
                if group in left_out:
                    reason += f" ({left_out[group]})"
                unavailable[group] = reason
                for name in names:
                    setattr(f, name, _unavailable_fn(reason))
                    setattr(call, name, _unavailable_fn(reason))
        for sym in meta.PER_SYMBOL:
            name = sym[len(_PREFIX):]
            group = EXTENDS.get(name)
            if group is not None and group not in groups:
                reason = lacks(group)
            elif bind(name) is not None and sym not in left_out:
                unavailable[sym] = ""
                continue
            else:
                reason = lacks(sym)
            if sym in left_out:
                reason += f" ({left_out[sym]})"
            unavailable[sym] = reason
            setattr(f, name, _unavailable_fn(reason))
            setattr(call, name, _unavailable_fn(reason))
        for name, why in left_out.items():  # options a provided group leaves out
            unavailable.setdefault(name, f"{lacks(name)} ({why})")
        self.groups = frozenset(groups)
        self.unavailable = unavailable

    def _forget_capture(self, capture):
        for raw in [r for r, c in self._capturing.items() if c is capture]:
            del self._capturing[raw]

    def __repr__(self):
        return (f"<eagle.Backend {self.kind} {self.version[0]}.{self.version[1]} '{self.path}' "
                f"groups={sorted(self.groups)}>")

    # -- status handling ------------------------------------------------------------------
    def _check(self, symbol, status):
        """Raise the exception for a failed call (copying last_error at once)."""
        if status:
            raise self._exception(symbol, status)

    def _exception(self, symbol, status):
        return exception_for(symbol, int(status), self.last_error())

    def last_error(self):
        """This thread's last error message of the library ('' when it left none or NULL)."""
        raw = self._f.last_error()
        return "" if raw == ffi.NULL else ffi.string(raw).decode("utf-8", "replace")

    def provides(self, entry):
        """True when the group (``'fork'``) or per-symbol entry (``'eagle_backend_memcpy'``) is there."""
        return self.unavailable.get(entry, None) == ""

    def require(self, entry):
        """Raise BackendUnavailable naming the entry unless the backend provides it."""
        reason = self.unavailable.get(entry)
        if reason:
            raise BackendUnavailable(reason)
        if reason is None:
            raise EagleValueError(f"eagle: '{entry}' is neither a group nor a per-symbol entry of the seam")

    # -- handshake reads --------------------------------------------------------------------
    def _read_build_info(self):
        info = ffi.new("struct eagle_backend_build_info*")
        size = ffi.sizeof("struct eagle_backend_build_info")
        info.struct_size = size
        self.call.build_info(info)
        written = int(info.struct_size)
        if written > size:
            raise BackendLoadError(f"eagle: the backend '{self.path}' claims to have written {written} "
                                   f"bytes of build_info into a {size}-byte struct")
        out = {"struct_size": written}
        for field, ctype in ffi.typeof(info[0]).fields:
            end = ctype.offset + ffi.sizeof(ctype.type)
            if field == "struct_size" or end > written:
                continue
            value = getattr(info, field)
            if ctype.type.kind == "array":
                value = ffi.string(value).decode("utf-8", "replace")
            out[field] = value
        return out

    def _read_left_out_note(self):
        """The `name: reason` lines capabilities() leaves in last_error (see the header)."""
        note = self.last_error()
        out = {}
        for line in note.splitlines():
            name, sep, why = line.partition(":")
            name = name.strip()
            known = name in meta.GROUP_BITS or name in meta.SYMBOLS or _PREFIX + name in meta.SYMBOLS
            if sep and known and why.strip():
                if _PREFIX + name in meta.PER_SYMBOL:
                    name = _PREFIX + name  # a per-symbol entry's short name keys like its full one
                out[name] = why.strip()
        return out

    def _read_device_types(self):
        count = ffi.new("int32_t*")
        self.call.device_types(ffi.NULL, 0, count)
        n = int(count[0])
        if n < 0 or n > 256:
            raise BackendLoadError(f"eagle: the backend '{self.path}' reports {n} device types")
        types = ffi.new("int32_t[]", max(n, 1))
        self.call.device_types(types, n, count)
        return tuple(int(types[i]) for i in range(min(n, int(count[0]))))

    # -- device -------------------------------------------------------------------------------
    def probe(self):
        """Raise :class:`eagle.BackendUnavailable` with the backend's own message when no device
        of its kind is usable; return None otherwise."""
        self.call.probe()

    def is_usable(self):
        """True when :meth:`probe` succeeds."""
        return self._f.probe() == 0
