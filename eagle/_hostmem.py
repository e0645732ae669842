"""Is a range of host memory really there? Checked against the process's own mappings
(``/proc/self/maps``) for the arrays whose size eagle cannot take from a trusted library: a
foreign object's ``__array_interface__`` may claim 200 MB over 8 bytes. Where the mappings
cannot be read (not Linux), the claim is taken as given."""
from .errors import EagleValueError

_MAPS = "/proc/self/maps"


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
    """Refuse [ptr, ptr + nbytes) unless every byte of it is mapped in this process."""
    if _covering(ptr, nbytes) is None:
        raise EagleValueError(f"eagle: the {what} claims {nbytes} bytes at 0x{ptr:x}, but that memory is not "
                              "(all) mapped in this process; its array interface is wrong")


def is_writable(ptr, nbytes):
    """True when every byte of [ptr, ptr + nbytes) is in a writable mapping (or unknown)."""
    used = _covering(ptr, nbytes)
    return used is None or all(used)
