"""Kernels from source through the seam (minor 7): one source, compiled by each kind's own compiler.

``compile(source, backend=...)`` hands the source to the backend (``module_from_source``): the cpu
kind compiles it with the system C compiler, cuda with NVRTC, hip with hiprtc. The result is a
:class:`Module` whose named :class:`Kernel` objects are what :func:`eagle.run`, a stream's ``run``
and the steps of ``Graph.build`` launch. Compiles are cached in the process, keyed by the source,
the options, the floating-point mode, the backend's library and kind and the device's architecture;
a second compile of the same source is a cache hit (``Module.cached``).

Sources include ``<eagle/kernel.h>`` (:func:`include_dir` is always on the include path) to write
the per-sample step once for every kind."""
import hashlib
import os
import re
import threading
import time
import weakref

import numpy as np

from . import _kernel_handles, _signature, _validate
from . import exec as _exec
from ._inflight import submit
from ._compilers import wheel_library_dirs
from ._device_kind import COMPILER_DEFINES_OF_KIND
from ._seam_ffi import ffi
from ._seam_meta import CONSTANTS as _C
from .errors import CompileError, CompileTimeout, EagleTypeError, EagleValueError, HandleError

_FAST_MATH = _C["EAGLE_BACKEND_MODULE_FAST_MATH"]
_CONTRACT = _C["EAGLE_BACKEND_MODULE_CONTRACT"]  # seam minor 8
_CONTRACT_MINOR = 8  # the minor that added it: an older backend refuses the flag
_SRC = "eagle_backend_module_from_source"
_IMG = "eagle_backend_module_from_image"

_cache = {}
_cache_lock = threading.Lock()


def include_dir():
    """The directory holding ``eagle/kernel.h``; on every compile's include path."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")


def _take_log(backend, logp):
    """The log a module call handed back, freed with eagle_backend_free ('' when none)."""
    if logp[0] == ffi.NULL:
        return ""
    try:
        return ffi.string(logp[0]).decode("utf-8", "replace")
    finally:
        backend._f.free(logp[0])
        logp[0] = ffi.NULL


# The entries eagle/kernel.h makes of one EAGLE_KERNEL(name, ...), and the arguments each takes
# after the declared ones, as (C type, name) pairs: what eagle/kernel.h declares them as.
_ENTRY_EXTRAS = {
    "": (),
    "_active": (("const int32_t*", "index_map"), ("EAGLE_BUFFER const uint32_t*", "live_count")),
    # the drain's index map and count may be NULL (0): ActiveSet.drain(compacted=False) visits every sample
    "_drain": (("EAGLE_NULLABLE const int32_t*", "index_map"), ("EAGLE_NULLABLE EAGLE_BUFFER const uint32_t*", "live_count"),
               ("const uint8_t*", "drop_mask"), ("EAGLE_BUFFER uint32_t*", "queue"), ("int64_t", "rounds"),
               ("int64_t", "workers")),
}
_COMMENT_OPENERS = re.compile(rb"/\*|//")
_DECL = re.compile(rb"\bEAGLE_KERNEL\s*\(\s*([A-Za-z_]\w*)\s*((?:,\s*\([^()]*\)\s*)*)\)")
_PAIR = re.compile(rb"\(([^()]*)\)")


def _strip_comments(source):
    """``source`` with each comment replaced by a space, in one pass (linear in its length: an
    unterminated ``/*`` ends the text, however many there are)."""
    out, at = [], 0
    while True:
        m = _COMMENT_OPENERS.search(source, at)
        if m is None:
            out.append(source[at:])
            break
        out.append(source[at:m.start()])
        out.append(b" ")
        if m.group() == b"//":
            end = source.find(b"\n", m.end())
        else:
            end = source.find(b"*/", m.end())
            end = -1 if end < 0 else end + 2
        if end < 0:
            break
        at = end
    return b"".join(out)


_TYPEDEF = re.compile(rb"\btypedef\s+([A-Za-z_][\w \t*]*?)\s*\b([A-Za-z_]\w*)\s*;")
_WORD = re.compile(r"[A-Za-z_]\w*")


def _typedefs(text, twice=False):
    """{name: type} of the simple typedefs ``text`` makes (``typedef double real;``), each
    resolved through the earlier ones, so a parameter declared with one is checked as its type.
    ``twice``: also the set of names made twice with different types (under #if, say)."""
    out, made_twice = {}, set()
    for m in _TYPEDEF.finditer(text):
        target = m.group(1).decode(errors="replace")
        name = m.group(2).decode()
        resolved = _WORD.sub(lambda w: out.get(w.group(), w.group()), target)
        if name in out and out[name] != resolved:
            made_twice.add(name)
        out[name] = resolved
    return (out, made_twice) if twice else out


def declared_parameters(source, *, preprocessed=False, unseen=None):
    """{entry name: ((C type, parameter name), ...)} of the kernels ``source`` declares with
    EAGLE_KERNEL, for every entry kernel.h makes of them (``name``, ``name_active``,
    ``name_drain``, with the arguments eagle appends); a type named by a simple typedef of the
    source (``typedef float real;``) is given as what it names. ``preprocessed``: ``source`` is
    the preprocessor's output of a source (see :func:`read_declarations`). A declaration this
    reading cannot follow (a type written with parentheses) is left out: eagle then can neither
    count nor check that kernel's arguments, as for any foreign kernel. A name declared twice,
    or declared with a typedef the source makes twice (under #if, say), is in ``unseen`` (a dict
    given by the caller) with why, when the preprocessor could not choose the branch."""
    text = source if preprocessed else _strip_comments(source)
    if preprocessed:
        aliases, twice = _typedefs(_main_file_text(text), twice=True)
        decls = ((m.group(1), m.group(2)) for m in _MARK.finditer(text))
    else:
        aliases, twice = _typedefs(text, twice=True)
        decls = ((m.group(1), m.group(2)) for m in _DECL.finditer(text))
    found, seen_twice = {}, set()
    for raw_name, raw_params in decls:
        name = raw_name.decode()
        params = []
        for pair in _PAIR.findall(raw_params):
            parts = pair.decode(errors="replace").rsplit(",", 1)
            if preprocessed:
                parts[0] = parts[0].replace("eagle_buffer__", "EAGLE_BUFFER")
            words = set(_WORD.findall(parts[0]))
            if unseen is not None and words & twice:
                unseen[name] = (f"its parameter {parts[-1].strip()!r} has the type {parts[0].strip()!r}, which the "
                                f"source defines twice (typedef {sorted(words & twice)[0]})")
            ctype = _WORD.sub(lambda w: aliases.get(w.group(), w.group()), parts[0].strip())
            params.append((ctype, parts[1].strip()) if len(parts) == 2 else ("?", "?"))
        if not params:
            raise EagleValueError(f"eagle.compile: EAGLE_KERNEL({name}) declares no parameters; a kernel takes "
                                  "1 to 24 (type, name) pairs (eagle/kernel.h): give it at least the array it works on")
        if name in found and found[name] != tuple(params):
            seen_twice.add(name)
        found[name] = tuple(params)
    out = {}
    for name, params in found.items():
        if name in seen_twice:
            if unseen is not None:
                unseen[name] = "it is declared twice with different parameters (under #if, say)"
            continue
        if unseen is not None and name in unseen:
            continue
        for suffix, extras in _ENTRY_EXTRAS.items():
            out[name + suffix] = params + extras
    return out


# A marker of eagle/kernel.h's EAGLE_READ_DECLARATIONS mode, and what makes a source need it.
_MARK = re.compile(rb"\beagle_declared__\s+([A-Za-z_]\w*)\s*\(((?:\s*\([^()]*\)\s*,?)*)\s*\)\s*eagle_declared_end__")
_NEEDS_PREPROCESSOR = re.compile(rb"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|define)\b", re.M)
_EMPTY_DECL = re.compile(rb"\bEAGLE_KERNEL\s*\(\s*([A-Za-z_]\w*)\s*,?\s*\)")
_LINE_MARKER = re.compile(rb'^# \d+ "([^"]*)"', re.M)


def _main_file_text(pre):
    """The parts of the preprocessor's output ``pre`` that come from the source itself (stdin),
    not from headers: the typedefs that count are the source's own."""
    out, current, at = [], None, 0
    for m in _LINE_MARKER.finditer(pre):
        if current == b"<stdin>":
            out.append(pre[at:m.start()])
        current, at = m.group(1), m.end()
    if current == b"<stdin>":
        out.append(pre[at:])
    return b"\n".join(out)


def _preprocess(data, dirs, options, kind):
    """The host C preprocessor's output of ``data`` in eagle/kernel.h's EAGLE_READ_DECLARATIONS
    mode (the include directories, the -D/-U/-I of ``options``, the kind's own defines), or None
    when there is no preprocessor or it fails (a header only the kind's compiler has, say)."""
    import shlex
    import shutil
    import subprocess
    cc = None
    for cand in ([shlex.split(os.environ["CC"])[0]] if os.environ.get("CC", "").strip() else []) + ["cc", "gcc", "clang"]:
        cc = shutil.which(cand)
        if cc:
            break
    if not cc:
        return None
    args = [cc, "-E", "-x", "c", "-DEAGLE_READ_DECLARATIONS", *COMPILER_DEFINES_OF_KIND.get(kind, [])]
    args += ["-I" + d for d in dirs]
    it = iter(options)
    for o in it:
        if o in ("-D", "-U", "-I"):
            args += [o, next(it, "")]
        elif o.startswith(("-D", "-U", "-I")):
            args.append(o)
    args.append("-")
    try:
        done = subprocess.run(args, input=data, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def read_declarations(data, dirs=(), options=(), kind="cpu"):
    """:func:`declared_parameters` of a source as its compile sees it: a source with #if, #ifdef,
    #define or a -D option is read after the host's C preprocessor, so the branch the compile takes
    and its macros and typedefs are what eagle checks launches against. Where it cannot be
    preprocessed, kernels whose declaration depends on a branch (declared twice, or with a
    typedef made twice) are declared *unseen*: their launches are refused, naming why, rather
    than checked against the wrong branch. Returns ``(declared, unseen)``."""
    text = _strip_comments(data)
    m = _EMPTY_DECL.search(text)
    if m:
        raise EagleValueError(f"eagle.compile: EAGLE_KERNEL({m.group(1).decode()}) declares no parameters; a kernel "
                              "takes 1 to 24 (type, name) pairs (eagle/kernel.h): give it at least the array it works on")
    unseen = {}
    if _NEEDS_PREPROCESSOR.search(text) or any(str(o).startswith(("-D", "-U")) for o in options):
        pre = _preprocess(data, dirs, options, kind)
        if pre is not None and b"eagle_declared__" in pre:
            return declared_parameters(pre, preprocessed=True), {}
    declared = declared_parameters(data, unseen=unseen)
    return declared, unseen


class Kernel:
    """One named kernel of a :class:`Module`. ``handle`` is the kind's kernel value that
    ``launch_desc.function`` takes; reading it (so launching the kernel) raises HandleError once
    the module is closed. ``loaded`` is the module's loaded code while it is open, None after
    :meth:`Module.close`: every launch keeps it until the launch has run, and a recording as long
    as it lives. ``params``: the names of the arguments it takes when its source declared it with
    EAGLE_KERNEL, else None; ``types``: their declared C types. A declared kernel's launch is
    checked against the declaration before it reaches the kernel (eagle/_signature.py: the
    number of arguments, each one's type, writability and samples); a kernel with no declaration
    (an image, a foreign source) is launched unchecked.

    Call ``kernel.run(args, n, ...)`` (see :func:`eagle.run`) or pass the kernel to
    ``eagle.run`` / ``Stream.run`` yourself."""

    __slots__ = ("name", "module", "params", "types", "signature", "loaded", "_handle")

    def __init__(self, module, name, handle, declared, loaded):
        self.module, self.name, self.loaded, self._handle = module, name, loaded, int(handle)
        if declared is None:
            self.params = self.types = self.signature = None
        elif isinstance(declared, str):  # a declaration eagle could not see through: launches refused
            self.params = self.types = None
            self.signature = _signature.Unseen(name, declared)
        else:
            self.types = tuple(t for t, _ in declared)
            self.params = tuple(p for _, p in declared)
            indexed = name.endswith(("_active", "_drain")) and "index_map" in self.params
            self.signature = _signature.Signature(name, self.params, self.types, indexed)

    @property
    def handle(self):
        if self.loaded is None:
            raise HandleError(f"eagle: kernel {self.name}: its module {self.module.name} was closed "
                              "(Module.close()); compile or load the module again to launch it")
        return self._handle

    def run(self, args, n, *, stream=None, **kw):
        """Launch over lanes on the module's backend, enqueued on ``stream=``; with no stream,
        on eagle's own stream, done before this returns (keywords as for :func:`eagle.run`)."""
        return submit(self.module.backend, stream, _exec.enqueue_run, self, args, n, **kw)

    def __int__(self):
        return self.handle

    def __repr__(self):
        closed = "" if self.loaded is not None else ", closed"
        return f"<eagle.Kernel {self.name} of {self.module.name} ({self.module.backend.kind}{closed})>"


def _release(release_fn, handle, backend):
    release_fn(handle)  # `backend` is held so its library stays loaded until here


class _Loaded:
    """A module's loaded code: ``handle`` is unloaded when the last reference to this goes. The
    Module and its Kernels hold it until :meth:`Module.close`; each launch of a kernel holds it
    until the launch has run (eagle/exec.py puts it in the launch's references), and a recording
    as long as the recording (and graphs made of it) live. Code still held when the interpreter
    exits is left to the process's end (no unload at exit: a stream may still be running it)."""

    __slots__ = ("handle", "__weakref__")

    def __init__(self, backend, handle):
        self.handle = handle
        weakref.finalize(self, _release, backend._f.module_release, handle, backend).atexit = False


class Module:
    """A loaded module of one backend: ``module['name']`` / ``module.name`` are its
    :class:`Kernel` objects. Make one with :func:`eagle.compile` or :func:`load_image`.

    Attributes
    ----------
    backend : Backend
    name : str
        The source's name in messages and logs.
    log : str
        What the compiler said (warnings), '' when nothing.
    cached : bool
        True when this module came from the compile cache.
    """

    def __init__(self, backend, handle, name, log, names, declared=None):
        self.backend, self.name, self.log, self.cached = backend, name, log, False
        self._declared = declared or {}
        self._loaded = _Loaded(backend, handle)  # None once closed
        self._kernels = {}
        for kname in names:
            self.kernel(kname)

    def kernel(self, name):
        """The :class:`Kernel` ``name``; EagleValueError naming it when the module has none or when
        no C symbol can be named so (a NUL, a lone surrogate), EagleTypeError when it is no str."""
        loaded = self._loaded
        if loaded is None:
            raise EagleValueError(f"eagle: module {self.name} is closed")
        k = self._kernels.get(name) if isinstance(name, str) else None
        if k is None:
            symbol = _c_string(name, f"eagle: module {self.name}: the kernel name")
            out = ffi.new("uint64_t*")
            self.backend._check("eagle_backend_module_function",
                                self.backend._f.module_function(loaded.handle, symbol, out))
            k = self._kernels[name] = Kernel(self, name, int(out[0]), self._declared.get(name), loaded)
            _kernel_handles.issued(k._handle, loaded, self.name, k.signature)
        return k

    __getitem__ = kernel

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.kernel(name)
        except EagleValueError as e:
            raise AttributeError(str(e)) from None

    def __contains__(self, name):
        try:
            self.kernel(name)
            return True
        except EagleValueError:
            return False

    def close(self):
        """Close the module (idempotent): its kernels can no longer be looked up or launched (a
        launch raises HandleError). The code is unloaded as soon as nothing uses it: at once when
        no launch of its kernels is pending, else when the last launch enqueued before the close
        has run and every recording of one (a captured graph, an ``eagle.Graph``) is gone, so
        work already queued or recorded still runs. Dropping the module acts the same way."""
        self._loaded = None
        for k in list(self._kernels.values()):
            k.loaded = None
        _kernel_handles.closed(k._handle for k in self._kernels.values())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return f"<eagle.Module {self.name} ({self.backend.kind}) kernels={sorted(self._kernels)}>"


def _read(source):
    """(bytes, name, own directory or None) of a source given as text, bytes or a path."""
    if isinstance(source, bytes):
        return source, None, None
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source
                                          and os.path.isfile(source)):
        path = os.path.abspath(os.fspath(source))
        with open(path, "rb") as f:
            return f.read(), os.path.basename(path), os.path.dirname(path)
    if isinstance(source, str):
        try:
            return source.encode(), None, None
        except UnicodeEncodeError as e:
            raise EagleValueError(f"eagle.compile: the source text holds a lone surrogate ({source[e.start:e.end]!r} "
                                  f"at character {e.start}), which is no text a compiler can be given") from None
    raise EagleTypeError(f"eagle.compile: source must be text, bytes or a path, got {type(source).__name__}")


def _c_string(value, what, *, path=False):
    """``value`` as the bytes of a C string for the seam, or an eagle error naming ``what`` and
    the value: a str (with ``path``, also bytes or an os.PathLike, encoded as the file system
    does, undecodable bytes included) holding no NUL, where C would cut it short."""
    if not isinstance(value, (str, bytes, os.PathLike) if path else str):
        raise EagleTypeError(f"{what} must be a str{' or a path' if path else ''}, got a "
                             f"{type(value).__name__} ({value!r:.60})")
    try:
        data = os.fsencode(value) if path else value.encode()
    except UnicodeEncodeError:
        raise EagleValueError(f"{what} {value!r:.60} holds a lone surrogate, which is no text "
                              "C can be given") from None
    if b"\0" in data:
        raise EagleValueError(f"{what} {value!r:.60} holds a NUL character, where C would end it")
    return data


def _file(path, what, hint=""):
    """The absolute path of the regular file ``path`` (str, bytes or os.PathLike) names, or
    EagleValueError naming ``what``, the path and why it names none, then ``hint``."""
    _c_string(path, what, path=True)
    full = os.path.abspath(os.fspath(path))
    if not os.path.isfile(full):  # follows links
        why = ("is a directory" if os.path.isdir(full) else
               "is not a regular file" if os.path.exists(full) else "does not exist")
        raise EagleValueError(f"{what} '{os.fsdecode(full)}' {why}{hint}")
    return full


#: The endings of source files' names: a one-line str ending so is a path, never source text.
_SOURCE_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".cu", ".cuh", ".hip", ".inc")


def _reads_as_path(text):
    """Whether str ``text`` is meant as the path of a source file, there or not: one line (as
    _read takes a path) that ends in a source file's suffix, or that is not blank and holds none
    of '{', ';', '#', without which no one-line text declares or includes a kernel."""
    return "\n" not in text and (text.rstrip().endswith(_SOURCE_SUFFIXES)
                                 or (text.strip() != "" and not any(c in text for c in "{;#")))


def _items(value, what, kinds=None):
    """``value``, a sequence, as a list; each item one of ``kinds`` when given. A single str,
    bytes or path is refused: iterated, it would be one item per character."""
    if isinstance(value, (str, bytes, os.PathLike)):
        raise EagleTypeError(f"{what} must be a sequence of str, got a single {type(value).__name__} "
                             f"({value!r:.60}); write [{value!r:.60}]")
    try:
        items = list(value)
    except TypeError:
        raise EagleTypeError(f"{what} must be a sequence of str, got a {type(value).__name__}") from None
    for item in items if kinds else ():
        if not isinstance(item, kinds):
            raise EagleTypeError(f"{what} must be a sequence of str, got an item of type "
                                 f"{type(item).__name__} ({item!r:.40})")
    return items


_INCLUDE = re.compile(rb"^[ \t]*#[ \t]*include[ \t]*([<\"])([^>\"\n]+)[>\"]", re.M)
_MAX_INCLUDES = 4096


def _includes_digest(data, dirs):
    """A digest of every file the source includes, found as the compiler finds it (a ``"..."``
    include beside the file that names it first, then the include directories in order; an
    absolute path as it is), whatever its extension, and of the files they include in turn: an
    edited header misses the cache. Headers found in none of ``dirs`` (the system's) are left out."""
    h = hashlib.sha256()
    seen = set()
    todo = [(data, None)]
    while todo and len(seen) < _MAX_INCLUDES:
        text, here = todo.pop()
        for quote, name in _INCLUDE.findall(_strip_comments(text)):
            name = os.fsdecode(name.strip())
            if os.path.isabs(name):
                candidates = [name]
            else:
                candidates = ([os.path.join(here, name)] if quote == b'"' and here else []) + \
                    [os.path.join(d, name) for d in dirs]
            for c in candidates:
                if os.path.isfile(c):
                    c = os.path.realpath(c)
                    if c not in seen:
                        seen.add(c)
                        try:
                            with open(c, "rb") as f:
                                body = f.read()
                        except OSError:
                            break
                        h.update(os.fsencode(c) + b"\0" + hashlib.sha256(body).digest())
                        todo.append((body, os.path.dirname(c)))
                    break
    return h.hexdigest()


def _arch(backend, device):
    """The device's architecture for the cache key: (cc_major, cc_minor, name) where the
    backend can say, else ()."""
    if not backend.provides("device"):
        return ()
    try:
        p = backend.device_props(max(int(device), 0))
        return (p.cc_major, p.cc_minor, p.name)
    except Exception:  # noqa: BLE001 - no device: the compile itself will say why
        return ()


def _compiler_search(compiler):
    """desc.compiler: the caller's paths, then where pip wheels put runtime compilers."""
    paths = [] if compiler is None else ([compiler] if isinstance(compiler, (str, os.PathLike)) else list(compiler))
    return ":".join([os.fspath(p) for p in paths] + wheel_library_dirs())


def _mode_flag(backend, exact, fast_math):
    """(mode name, module_desc.flags) of eagle.compile's ``exact`` / ``fast_math``: 'exact' 0,
    'fast' FAST_MATH, else 'default' CONTRACT -- or 0 for a backend older than seam minor 8, which
    knows no CONTRACT (bit-exact code is one of the results contraction allows)."""
    for value, what in ((exact, "exact"), (fast_math, "fast_math")):
        if not isinstance(value, (bool, np.bool_)):
            raise EagleTypeError(f"eagle.compile: {what} must be a bool, got a {type(value).__name__} ({value!r:.40})")
    if exact and fast_math:
        raise EagleValueError("eagle.compile: exact=True and fast_math=True ask for two floating-point modes; "
                              "give at most one (neither: the default, which contracts multiply-adds)")
    if exact:
        return "exact", 0
    if fast_math:
        return "fast", _FAST_MATH
    return "default", _CONTRACT if backend.version[1] >= _CONTRACT_MINOR else 0


def _desc(caller, device, name, include_dirs, options, compiler, flags, keep):
    """The module_desc of ``caller``'s compile or image load; each argument is checked here, where
    it enters C (eagle errors naming ``caller``): ``device`` an integer -1..INT32_MAX, ``compiler``
    None, a path or a sequence of paths, and every string (name, include_dirs, options, the
    compiler search) free of NUL. ``keep`` holds the C memory the desc points to."""
    desc = ffi.new("struct eagle_backend_module_desc*")
    desc.struct_size = ffi.sizeof("struct eagle_backend_module_desc")
    desc.flags = flags
    desc.device = _validate.integer(device, f"{caller}: device", minimum=-1, maximum=_validate.INT32_MAX)

    def cstr(s, what):
        c = ffi.new("char[]", _c_string(s, what, path=True))
        keep.append(c)
        return c

    def clist(items, what):
        cs = [cstr(s, what) for s in items]
        arr = ffi.new("const char*[]", cs or [ffi.NULL])
        keep.append(arr)
        return arr, len(cs)

    desc.name = cstr(name, f"{caller}: name")
    desc.include_dirs, desc.include_dir_count = clist(include_dirs, f"{caller}: include_dirs item")
    desc.options, desc.option_count = clist(options, f"{caller}: options item")
    if compiler is not None and not isinstance(compiler, (str, os.PathLike)):
        _items(compiler, f"{caller}: compiler (a path, or a sequence of paths)", (str, os.PathLike))
    search = _compiler_search(compiler)
    desc.compiler = cstr(search, f"{caller}: compiler search path") if search else ffi.NULL
    return desc


def compile(backend, source, *, kernels=(), name=None, include_dirs=(), options=(), exact=False,
            fast_math=False, device=-1, compiler=None, cache=True, timeout=None):
    """Compile ``source`` for ``backend`` with the kind's own compiler and load it.

    Parameters
    ----------
    source : str, bytes or path
        C source (cpu) / CUDA C++ (cuda) / HIP (hip); with ``<eagle/kernel.h>`` one source serves
        every kind. A path's own directory is searched for its headers.
    backend : Backend
        The backend to compile for (``eagle.compile`` takes a kind or ``'gpu'`` too).
    kernels : sequence of str
        Names looked up at once (a missing one raises now); others are looked up on first use.
        A single str is refused (EagleTypeError), as for ``include_dirs`` and ``options``.
    name : str, optional
        The source's name in the compiler's log (default: the file name, or ``"kernel.c"``).
    include_dirs, options : sequences of str
        More ``#include`` directories, and options passed to the compiler as they are.
    exact, fast_math : bool
        The floating-point mode; at most one of them is True (both: EagleValueError).

        * neither (the default): multiply-adds are contracted into fused multiply-adds as each
          kind's compiler does by default (cpu: ``-ffp-contract=fast``, with ``-mfma`` where the
          host CPU has FMA; cuda: NVRTC's ``--fmad=true``; hip: ``-ffp-contract=fast``), with IEEE
          division and square root and no flush to zero. Results may differ between kinds in the
          last place of a multiply-add. A backend older than seam minor 8 has no such mode and
          compiles bit-exact instead, which is one of the results contraction allows.
        * ``exact=True``: bit-exact. No contraction on any kind, IEEE division and square root,
          denormals kept: + - * / and sqrt (and fma, fmod, nextafter, ... of <eagle/kernel.h>)
          give the same bits on every kind, so cpu and cuda agree bit for bit.
        * ``fast_math=True``: the compiler may also reassociate, use approximate division and
          square root and flush denormals (``-ffast-math``, ``--use_fast_math``).
    device : int
        -1: the current device.
    compiler : str or sequence of str, optional
        Where to find the kind's compiler first (a C compiler, libnvrtc, libhiprtc or a folder).
    cache : bool
        Reuse an identical compile of this process (keyed on the source, every file it includes
        from the include directories or by absolute path, the options, the backend and the device).
    timeout : float, optional
        Seconds the compile may take; past them the compiler is stopped and
        :class:`eagle.CompileTimeout` is raised. None (default): no limit.

    On the main thread (and whenever ``timeout`` is given) the compile runs on a helper thread
    while the caller waits in Python, so Ctrl-C stops it (KeyboardInterrupt, the compiler killed
    where it is a process of its own, as on cpu; an in-process compiler, NVRTC or hiprtc, finishes
    in the background and its module is dropped). ``device=-1`` then names the device current on
    that helper thread (device 0 on cuda): pass the device to compile for another.

    Returns
    -------
    Module

    Raises
    ------
    eagle.CompileError
        The source did not compile; ``.log`` is the compiler's log, with line numbers.
    eagle.CompileTimeout
        The compile ran past ``timeout`` (a CompileError and a TimeoutError).
    eagle.EagleTypeError
        ``kernels``, ``include_dirs`` or ``options`` is a single str (or path), not a sequence;
        ``exact`` or ``fast_math`` is not a bool.
    eagle.EagleValueError
        ``exact=True`` and ``fast_math=True`` together.
    eagle.BackendUnavailable
        The kind's compiler is not there (the message names what to install), or the backend
        predates seam minor 7.
    """
    b = backend
    b.require(_SRC)
    kernels = _items(kernels, "eagle.compile: kernels", str)
    include_dirs = _items(include_dirs, "eagle.compile: include_dirs", (str, os.PathLike))
    options = [str(o) for o in _items(options, "eagle.compile: options")]
    if isinstance(source, os.PathLike) or (isinstance(source, str) and _reads_as_path(source)):
        _file(source, "eagle.compile: the source file",  # a missing one is no source text
              " (a str of one line is read as a path when it ends in a source file's suffix or "
              "holds none of '{', ';', '#'; give source text with its newlines, or as bytes)")
    if timeout is not None:
        timeout = _validate.real(timeout, "eagle.compile: timeout (seconds)")
        if not timeout > 0:
            raise EagleValueError(f"eagle.compile: timeout must be a number of seconds > 0, got {timeout!r}")
    data, fname, own_dir = _read(source)
    name = name or fname or "kernel.c"
    dirs = [include_dir()] + ([own_dir] if own_dir else []) + [os.path.abspath(os.fspath(d)) for d in include_dirs]
    keep = []
    mode, flags = _mode_flag(b, exact, fast_math)
    desc = _desc("eagle.compile", device, name, dirs, options, compiler, flags, keep)
    key = (hashlib.sha256(data).hexdigest(), name, tuple(dirs), _includes_digest(data, dirs), tuple(options),
           mode, flags, str(compiler), b.path, b.kind, desc.device, _arch(b, desc.device))
    if cache:
        with _cache_lock:
            mod = _cache.get(key)
        if mod is not None and mod._loaded is not None:
            for k in kernels:
                mod.kernel(k)
            mod.cached = True
            return mod
    declared, unseen = read_declarations(data, dirs, options, b.kind)
    for k, why in unseen.items():  # launches refused, naming why (eagle/exec.py)
        for suffix in _ENTRY_EXTRAS:
            declared[k + suffix] = why
    mod = _compile_waiting(b, desc, keep, data, name, kernels, declared, timeout)
    if cache:
        with _cache_lock:
            _cache[key] = mod
    return mod


def _compile_waiting(b, desc, keep, data, name, kernels, declared, timeout):
    """module_from_source, waited for in Python: on a helper thread when this is the main thread
    (where Ctrl-C lands) or a timeout is given, the caller polling it every 50 ms. A timeout or an
    interrupt sets desc.cancel's word, which a kind whose compiler is a process stops within
    20 ms; the compile's module, should it still come, is dropped."""
    cancel = ffi.new("uint32_t*")
    desc.cancel = int(ffi.cast("uintptr_t", cancel))
    if timeout is None and threading.current_thread() is not threading.main_thread():
        return _load(b, _SRC, b._f.module_from_source, desc, data, name, kernels, declared)
    box = {}

    def work(hold=(desc, keep, data, cancel)):  # `hold`: the C memory the call reads, until it ends
        try:
            box["module"] = _load(b, _SRC, b._f.module_from_source, desc, data, name, kernels, declared)
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = e

    worker = threading.Thread(target=work, name=f"eagle-compile {name}", daemon=True)
    worker.start()
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while worker.is_alive():
            left = 0.05 if deadline is None else min(0.05, deadline - time.monotonic())
            if left <= 0:
                cancel[0] = 1
                worker.join(1.0)
                raise CompileTimeout(f"eagle.compile: {name} did not compile within the timeout of {timeout:g} s; "
                                     "the compile was stopped (raise timeout= for a longer one)")
            worker.join(left)
    except BaseException:
        cancel[0] = 1  # Ctrl-C (or the timeout): the compiler is stopped where the kind can
        raise
    if "error" in box:
        raise box.pop("error")
    return box["module"]


def load_image(backend, image, *, kernels=(), name=None, device=-1):
    """Load a binary image (cpu: a shared object; cuda: cubin, fatbin or PTX; hip: a code object),
    any bytes-like object or the path of a file, as a :class:`Module` of ``backend``. A path that
    names no regular file, or a str of several lines (source text: see :func:`compile`), is
    refused with EagleValueError; any other type with EagleTypeError. An image carries no
    EAGLE_KERNEL declaration: its kernels' launches are not checked (count nor types). A shared
    object that is truncated or not for this machine is refused (CompileError naming the path)
    before the loader maps it."""
    b = backend
    b.require(_IMG)
    kernels = _items(kernels, "eagle.load_image: kernels", str)
    if isinstance(image, str) and "\n" in image:
        raise EagleValueError(f"eagle.load_image: image is text of several lines ({image!r:.40}), not "
                              "an image's bytes or path; compile a kernel source with eagle.compile")
    path = None
    if isinstance(image, (str, os.PathLike)):
        path = _file(image, "eagle.load_image: the image file")
        name = name or os.path.basename(path)
        with open(path, "rb") as f:
            image = f.read()
    else:
        try:
            image = image if type(image) is bytes else memoryview(image).tobytes()
        except TypeError:
            raise EagleTypeError("eagle.load_image: image must be bytes-like (bytes, bytearray, memoryview, "
                                 f"...) or a path, got a {type(image).__name__}") from None
    keep = []
    desc = _desc("eagle.load_image", device, name or "image", (), (), None, 0, keep)
    try:
        return _load(b, _IMG, b._f.module_from_image, desc, image, name or "image", kernels)
    except CompileError as e:
        if path is None:
            raise
        raise CompileError(f"eagle.load_image: '{os.fsdecode(path)}': {e}", log=e.log) from None


def _load(b, symbol, fn, desc, data, name, kernels, declared=None):
    """Call ``fn`` (module_from_source or module_from_image) and wrap its module, looking up
    ``kernels`` at once; the compiler's log rides on a CompileError, or on the Module."""
    out = ffi.new("eagle_backend_module*")
    logp = ffi.new("char**")
    status = fn(desc, data, len(data), out, logp)
    log = _take_log(b, logp)
    try:
        b._check(symbol, status)
    except CompileError as e:
        raise CompileError(f"{e}\n{log}" if log else str(e), log=log) from None
    mod = Module(b, out[0], name, log, (), declared)
    try:
        for k in kernels:
            mod.kernel(k)
    except BaseException:
        mod.close()
        raise
    return mod
