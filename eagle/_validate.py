"""Arguments are checked once, where they enter eagle, by these functions: type, writability,
size and range. Each raises an :class:`eagle.EagleError` (subclassing the matching builtin) that
names the argument and the value; none of them lets a value through on trust."""
import operator

from .errors import EagleTypeError, EagleValueError

INT64_MAX = (1 << 63) - 1


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
