"""The checker's own view of one backend library: raw cffi calls, counted, with every returned
status validated against the seam. Nothing here goes through eagle's loader, so a library the
loader would refuse is still diagnosed call by call."""
import os
import re
from collections import Counter

from .. import _seam_meta as meta
from .._loader import EXTENDS  # per-symbol entries that need a group (their checks need it too)
from .._seam_ffi import ffi
from ._registry import CheckFailure, NotSupported, Skip

PREFIX = "eagle_backend_"
OK = 0
STATUS = {name[len(PREFIX):]: value for name, value in meta.CONSTANTS.items()
          if name[len(PREFIX):] in meta.STATUS_NAMES.values()}


def status_name(st):
    return meta.STATUS_NAMES.get(int(st), f"undefined status {int(st)}")


def kind_from_filename(path):
    m = re.match(r"^(?:lib)?eagle_([A-Za-z0-9_]+)\.(?:so|dylib|dll)", os.path.basename(path))
    return m.group(1) if m else None


class Session:
    """One dlopen of the library under check, shared by the checks of one child process."""

    def __init__(self, path, kind=None):
        self.path = os.path.abspath(path)
        self.calls = Counter()
        self.breadcrumb = None
        try:
            self.lib = ffi.dlopen(self.path)
        except OSError as e:
            raise Skip(f"the library does not load: {e}") from None
        self._kind = kind
        self._caps = None
        self._probe = None
        self.mem = None
        self.kernels = None

    # -- raw calls ---------------------------------------------------------------------------
    def has(self, short):
        try:
            getattr(self.lib, PREFIX + short)
            return True
        except (AttributeError, ffi.error):
            return False

    def exports_any_seam_symbol(self):
        """True when at least one eagle_backend_* symbol of the seam resolves with dlsym."""
        return any(self.has(sym[len(PREFIX):]) for sym in meta.SYMBOLS)

    def raw(self, short, *args):
        """Call eagle_backend_<short>; a status outside the seam's list is a failure naming it."""
        full = PREFIX + short
        try:
            fn = getattr(self.lib, full)
        except (AttributeError, ffi.error):
            raise CheckFailure(f"{full} is not exported") from None
        self.calls[full] += 1
        if self.breadcrumb is not None:  # read by the parent when this process dies in the call
            self.breadcrumb[:64] = full.encode()[:64].ljust(64, b"\0")
        out = fn(*args)
        if ffi.typeof(fn).result.cname == "int32_t" and int(out) not in meta.STATUS_NAMES:
            raise CheckFailure(f"{full} returned status {int(out)}, which the seam does not define "
                               f"(defined: 0..{max(meta.STATUS_NAMES)})")
        return out

    def last_error(self):
        self.calls[PREFIX + "last_error"] += 1
        p = self.lib.eagle_backend_last_error()
        if p == ffi.NULL:
            raise CheckFailure("eagle_backend_last_error returned NULL (it must never be NULL)")
        return ffi.string(p).decode("utf-8", "replace")

    def ok(self, short, *args):
        """Call and require OK."""
        st = self.raw(short, *args)
        if st != OK:
            raise CheckFailure(f"{PREFIX}{short} failed with {status_name(st)}: {self.last_error()!r}")
        return st

    def expect(self, short, want, *args, why=""):
        """Call and require status ``want`` (a name like 'INDEX', or a tuple of names: any of
        them); returns last_error's text."""
        wants = (want,) if isinstance(want, str) else tuple(want)
        st = self.raw(short, *args)
        if st not in [STATUS[w] for w in wants]:
            extra = f": {self.last_error()!r}" if st else ""
            raise CheckFailure(f"{PREFIX}{short} returned {status_name(st)}{extra}, expected {' or '.join(wants)}"
                               + (f" ({why})" if why else ""))
        want = status_name(st)
        msg = self.last_error()
        if st != OK and not msg.strip():
            raise CheckFailure(f"{PREFIX}{short} returned {want}"
                               + (f" ({why})" if why else "")
                               + " but left last_error empty; a failed call leaves a message")
        return msg

    # -- what the backend says about itself ----------------------------------------------------
    @property
    def caps(self):
        if self._caps is None:
            p = ffi.new("uint64_t*")
            self.ok("capabilities", p)
            self._caps = int(p[0])
        return self._caps

    def provides(self, entry):
        """True for a group whose bit is set, or a per-symbol entry that is exported."""
        if entry == "required" or entry == "static":
            return True
        if entry in meta.GROUP_BITS:
            return bool(self.caps >> meta.GROUP_BITS[entry] & 1)
        group = EXTENDS.get(entry)
        if group is not None and not self.provides(group):
            return False
        return self.has(entry)

    def require(self, entry, own=False):
        if not self.provides(entry):
            what = (f"{entry} (capability bit {meta.GROUP_BITS[entry]} clear)"
                    if entry in meta.GROUP_BITS else f"{PREFIX}{entry}")
            if own:
                raise NotSupported(f"the backend does not provide {what}")
            raise Skip(f"needs {what}, which the backend does not provide")

    @property
    def kind(self):
        if self._kind is None:
            info = ffi.new("struct eagle_backend_build_info*")
            info.struct_size = ffi.sizeof(info[0])
            st = self.raw("build_info", info)
            kind = ffi.string(info.backend_kind).decode("ascii", "replace") if st == OK else ""
            self._kind = kind or kind_from_filename(self.path) or "unknown"
        return self._kind

    def probe(self):
        """(True, '') when a device is usable, else (False, the probe's own message)."""
        if self._probe is None:
            st = self.raw("probe")
            if st == OK:
                self._probe = (True, "")
            elif st == STATUS["UNAVAILABLE"]:
                self._probe = (False, self.last_error() or "(probe left no message)")
            else:
                raise CheckFailure(f"{PREFIX}probe returned {status_name(st)}; it returns OK or "
                                   f"UNAVAILABLE: {self.last_error()!r}")
        return self._probe

    def need_device(self):
        usable, why = self.probe()
        if not usable:
            raise Skip(f"no usable device: {why}")

    def device(self):
        """Device memory and kernels for this kind (Skip for a kind the checker carries none for)."""
        self.need_device()
        if self.mem is None:
            from . import _device
            self.mem, self.kernels = _device.for_kind(self)
        return self.mem

    # -- small helpers used by many checks -------------------------------------------------------
    def new_stream(self, flags=0, device=-1):
        desc = ffi.new("struct eagle_backend_stream_desc*")
        desc.struct_size = ffi.sizeof(desc[0])
        desc.flags = flags
        desc.device = device
        out = ffi.new("eagle_backend_stream*")
        self.ok("stream_create", desc, out)
        raw = ffi.new("uint64_t*")
        self.ok("stream_ptr", out[0], raw)
        return out[0], int(raw[0])

    def sync(self, handle):
        self.ok("stream_synchronize", handle)

    def launch(self, kernel, stream_raw, args, n, base=0, count=None, n_samples=None, flags=0):
        """run_device of one of the checker's kernels; returns *launched."""
        return self.kernels.launch(kernel, stream_raw, args, n, base, count, n_samples, flags)

    def close(self):
        if self.kernels is not None:
            self.kernels.close()
        if self.mem is not None:
            self.mem.close()
