"""Is a range of host memory really there? Checked against the process's own mappings
(``/proc/self/maps``) for the arrays whose size eagle cannot take from a trusted library: a
foreign object's ``__array_interface__`` may claim 200 MB over 8 bytes. Where the mappings
cannot be read (not Linux), the claim is taken as given. Host-readable memory eagle allocated
itself (``eagle.empty`` on a host kind) is registered here while it lives and needs no check:
reading the mappings costs about a millisecond, which ``eagle.run`` would pay per array."""
from .errors import EagleValueError

_MAPS = "/proc/self/maps"
_owned = {}  # address -> bytes of live host-readable allocations of eagle's own


def own(ptr, nbytes):
    """Register [ptr, ptr + nbytes), writable memory eagle allocated, until :func:`disown`."""
    _owned[ptr] = nbytes


def disown(ptr):
    """Forget an allocation registered by :func:`own` (before it is freed)."""
    _owned.pop(ptr, None)


def owned(ptr, nbytes):
    """True when [ptr, ptr + nbytes) lies in a live allocation registered by :func:`own` at ptr."""
    n = _owned.get(ptr)
    return n is not None and nbytes <= n


def _mappings():
    """[(start, end, writable)] of the process's mappings, sorted; None where unknown."""
    try:
        with open(_MAPS, encoding="ascii", errors="replace") as f:
            out = []
            for line in f:
                span, perms = line.split(None, 2)[:2]
                lo, hi = span.split("-")
                out.append((int(lo, 16), int(hi, 16), "w" in perms))
            return out
    except OSError:
        return None


def _covering(ptr, nbytes):
    """The mappings covering [ptr, ptr + nbytes) in order, or None when a byte is unmapped (or
    the mappings are unknown: [])."""
    maps = _mappings()
    if maps is None:
        return []
    end, at, used = ptr + nbytes, ptr, []
    for lo, hi, w in maps:
        if hi <= at or lo > at:
            continue
        used.append(w)
        at = hi
        if at >= end:
            return used
    return None


def check_range(ptr, nbytes, what):
    """Refuse [ptr, ptr + nbytes) unless every byte of it is mapped in this process; returns whether
    every byte of it is writable (or the mappings are unknown)."""
    used = _covering(ptr, nbytes)
    if used is None:
        raise EagleValueError(f"eagle: the {what} claims {nbytes} bytes at 0x{ptr:x}, but that memory is not "
                              "(all) mapped in this process; its array interface is wrong")
    return all(used)

