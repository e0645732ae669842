"""Arguments are checked once, where they enter eagle, by these functions: type, writability,
size and range. Each raises an :class:`eagle.EagleError` (subclassing the matching builtin) that
names the argument and the value; none of them lets a value through on trust."""
import numbers
import operator

from .errors import EagleTypeError, EagleValueError

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
INT32_MAX = (1 << 31) - 1
UINT32_MAX = (1 << 32) - 1


def integer(value, what, *, minimum=None, maximum=INT64_MAX):
    """``value`` as an int: ints and integer scalars only (no bool, float, str), within range."""
    if type(value) is int and (minimum is None or value >= minimum) and (maximum is None or value <= maximum):
        return value
    if isinstance(value, bool):
        raise EagleTypeError(f"{what} must be an integer, got {value!r}")
    try:
        out = operator.index(value)
    except TypeError:
        raise EagleTypeError(f"{what} must be an integer, got a {type(value).__name__} ({value!r})") from None
    if minimum is not None and out < minimum:
        raise EagleValueError(f"{what} must be >= {minimum}, got {out}")
    if maximum is not None and out > maximum:
        raise EagleValueError(f"{what} must be <= {maximum}, got {out}")
    return out


def real(value, what):
    """``value`` as a float: ints, floats and real scalars only (no bool, str, complex)."""
    if type(value) is float:
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise EagleTypeError(f"{what} must be a real number, got a {type(value).__name__} ({value!r})")
    return float(value)


def size(value, info, caller, name, source):
    """A size argument ``name`` of ``caller``: ``value`` checked as an integer >= 0, or, when it
    is None, the byte size of the array ``source`` (its ArrayInfo ``info``); a raw address has
    none, so then the size must be given."""
    if value is not None:
        return integer(value, f"{caller}: {name}", minimum=0)
    if info.nbytes is None:
        raise EagleValueError(f"{caller}: give {name} when {source} is a raw address")
    return info.nbytes


def writable(info, what):
    """Refuse an array eagle's work would write when its memory is read-only."""
    if info.readonly:
        raise EagleValueError(f"{what} is read-only (writeable=False, an immutable buffer or a read-only "
                              "mapping); eagle would write it: pass a writable array")
    return info


def holds(info, nbytes, what):
    """Refuse an array that holds fewer than ``nbytes`` bytes."""
    if info.nbytes is not None and info.nbytes < nbytes:
        raise EagleValueError(f"{what} holds {info.nbytes} bytes, {nbytes} are needed")
    return info


def word(info, nbytes, what, *, written):
    """Refuse an array eagle's work reads ``nbytes`` bytes of when it holds fewer, and, when the
    work also writes it (``written``), when it is read-only."""
    holds(info, nbytes, what)
    return writable(info, what) if written else info


def shape(value, what):
    """``value`` as an array shape, a tuple of ints >= 0: a tuple or list of integers, or one
    integer for a 1-d shape; each dimension is checked as by :func:`integer` (no bool, float, str)."""
    dims = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if all(type(d) is int and 0 <= d <= INT64_MAX for d in dims):  # no message built on this path
        return dims
    dims = tuple(integer(d, f"{what}: dimension {i} of shape {value!r}") for i, d in enumerate(dims))
    if any(d < 0 for d in dims):
        raise EagleValueError(f"{what}: negative dimension in shape {dims}")
    return dims


_PAGE = None
_mincore = None


def host_range(ptr, nbytes, what):
    """A raw host address ``ptr`` given for ``nbytes`` bytes: refused when it cannot be memory of
    this process -- in the first 64 KiB (never mapped on Linux), past the user address space, or
    (Linux) with a page in the range that is not mapped (mincore). A mapped page that is read-only
    (or freed and mapped again by something else) cannot be told apart here: a raw address is the
    caller's promise, and eagle checks only what it can."""
    global _PAGE, _mincore
    if nbytes <= 0 or ptr == 0:  # NULL: the backend refuses it itself, naming it ("dst is 0")
        return
    if ptr < (1 << 16) or ptr + nbytes > (1 << 57):
        raise EagleValueError(f"{what}: the raw address 0x{ptr:x} (for {nbytes} bytes) cannot be memory of this "
                              "process; pass an array, or the address of one")
    import sys
    if not sys.platform.startswith("linux"):
        return
    if _mincore is None:
        import ctypes
        import mmap
        libc = ctypes.CDLL(None, use_errno=True)
        _mincore = libc.mincore
        _mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
        _mincore.restype = ctypes.c_int
        _PAGE = mmap.PAGESIZE
    start = ptr - ptr % _PAGE
    length = ptr + nbytes - start
    pages = -(-length // _PAGE)
    vec = bytes(pages)
    if _mincore(start, length, vec) != 0:
        import ctypes
        if ctypes.get_errno() == 12:  # ENOMEM: part of the range is not mapped
            raise EagleValueError(f"{what}: the raw address 0x{ptr:x} (for {nbytes} bytes) is not mapped memory of "
                                  "this process; pass an array, or the address of a live one")
