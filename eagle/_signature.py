"""A declared kernel's parameters as C types, and the launch packer made of them.

A kernel declared with ``EAGLE_KERNEL(name, (T, a), ...)`` (eagle/include/eagle/kernel.h) names
the C type of each parameter. :func:`parse_type` reads one type; :class:`Signature` is made once
per kernel (when the kernel is looked up, not per launch) and packs a launch's arguments into the
argument buffer, checking each against its declaration as it goes:

- a floating scalar (``double``, ``float``) takes a real number; a Python int is converted, a
  bool is refused (``True`` for a step size is a mistake, not a value), and so is an array;
- an integer scalar (``int8_t`` .. ``uint64_t``, ``int``, ``long``, ``size_t``, ...) takes an
  integer (a bool counts as 0 or 1) in the type's range; a float is refused, even an integral one;
- ``bool`` takes a bool or the integers 0 and 1;
- a pointer takes an array (eagle's, numpy's on a host kind, anything exporting DLPack or an
  array interface) of the declared element type (``double*`` float64, ``float*`` float32,
  ``int32_t*`` int32, ...), writable unless the element is ``const``, with at least the run's
  samples along its last axis (the sample axis: ``(N,)`` or ``(w, N)``) unless the type carries
  ``EAGLE_BUFFER``; ``void*``, a pointer to a pointer and a pointer to a type eagle does not know
  take any array of any length; never a scalar, a Python int (an address eagle cannot check) or
  a 0-d array;
- a type eagle does not know (a typedef, a struct, a vector type) without a ``*`` is passed as
  :mod:`eagle.exec` passes a foreign kernel's argument: unchecked.

Scalars are written at their declared width (a ``float`` as 4 bytes, an ``int32_t`` as 4), so
every kind's kernel reads what was meant. Every refusal is an EagleTypeError or EagleValueError
naming the kernel, the parameter, its declared type and what was given."""
import numbers
import re
import struct

import numpy as np

from ._arrays import describe, fast_info
from .errors import EagleTypeError, EagleValueError

#: C base types eagle checks: spelling (qualifiers removed, words joined by one space) -> the
#: numpy dtype character of an element (None: ``void``, any element).
_BASE = {
    "double": "f8", "float": "f4",
    "int8_t": "i1", "signed char": "i1", "char": "i1",
    "uint8_t": "u1", "unsigned char": "u1",
    "int16_t": "i2", "short": "i2", "short int": "i2", "signed short": "i2",
    "uint16_t": "u2", "unsigned short": "u2", "unsigned short int": "u2",
    "int32_t": "i4", "int": "i4", "signed": "i4", "signed int": "i4",
    "uint32_t": "u4", "unsigned": "u4", "unsigned int": "u4",
    "int64_t": "i8", "long": "i8", "long int": "i8", "long long": "i8", "long long int": "i8",
    "signed long": "i8", "signed long long": "i8", "ptrdiff_t": "i8", "ssize_t": "i8", "intptr_t": "i8",
    "uint64_t": "u8", "unsigned long": "u8", "unsigned long int": "u8", "unsigned long long": "u8",
    "unsigned long long int": "u8", "size_t": "u8", "uintptr_t": "u8",
    "bool": "b1", "_Bool": "b1",
    "void": None,
}
#: Words that qualify a type without changing what it holds.
_QUALIFIERS = frozenset({"const", "volatile", "restrict", "__restrict", "__restrict__", "EAGLE_BUFFER",
                         "EAGLE_NULLABLE"})
#: struct formats of a scalar of each element kind, at its declared width.
_SCALAR_FORMAT = {"f8": "d", "f4": "f", "i1": "b", "u1": "B", "i2": "h", "u2": "H", "i4": "i", "u4": "I",
                  "i8": "q", "u8": "Q", "b1": "?"}
_SLOT = 16  # every argument in its own 16-byte slot (aligned for any scalar a kernel declares)
_TOKEN = re.compile(r"[A-Za-z_]\w*|\*|\S")


class CType:
    """One declared parameter type. ``kind``: 'pointer', 'scalar' or 'unknown' (passed
    unchecked); ``element``: numpy dtype character of the element or scalar (None: any);
    ``const``: the pointed-to data is const; ``buffer``: EAGLE_BUFFER (no length check);
    ``nullable``: 0 is taken as NULL (only eagle's own appended arguments are so declared)."""

    __slots__ = ("text", "kind", "element", "const", "buffer", "nullable")

    def __init__(self, text, kind, element=None, const=False, buffer=False, nullable=False):
        self.text, self.kind, self.element, self.const, self.buffer = text, kind, element, const, buffer
        self.nullable = nullable

    def __repr__(self):
        return f"CType({self.text!r}, {self.kind}, {self.element}, const={self.const}, buffer={self.buffer})"


def parse_type(text):
    """The :class:`CType` of a declared parameter type such as ``const double*`` or
    ``EAGLE_BUFFER uint32_t*``."""
    text = " ".join(text.split())
    tokens = _TOKEN.findall(text)
    stars = [k for k, t in enumerate(tokens) if t == "*"]
    words = [t for t in tokens if t != "*"]
    buffer = "EAGLE_BUFFER" in words
    base = " ".join(t for t in words if t not in _QUALIFIERS)
    known = base in _BASE and all(t == "*" or t in _QUALIFIERS or t.isidentifier() for t in tokens)
    if stars:
        # const before the first '*' qualifies the element; after it, the pointer itself
        const = "const" in tokens[:stars[0]]
        element = _BASE[base] if known and len(stars) == 1 else None  # T**: an array of addresses
        return CType(text, "pointer", element, const, buffer, "EAGLE_NULLABLE" in words)
    if known and _BASE[base] is not None:
        return CType(text, "scalar", _BASE[base])
    return CType(text, "unknown")


_FLOATING = frozenset("f")


def _describe_value(value):
    """A short description of a value for messages: its type, and its dtype and shape for arrays."""
    name = type(value).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    try:
        shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    except Exception:  # noqa: BLE001 - only for the message
        shape = dtype = None
    if shape is not None and dtype is not None and not isinstance(value, np.generic):
        return f"{article} {name} of dtype {dtype} and shape {tuple(shape)}"
    return f"{article} {name} ({value!r:.40})"


def _dtype_char(dtype):
    """numpy dtype character code of kind and size ('f8', 'i4', 'b1', ...) of ``dtype`` (a numpy
    dtype, or a framework's dtype spelled like one, e.g. torch.float64), None when it has none."""
    if not isinstance(dtype, np.dtype):
        try:
            dtype = np.dtype(str(dtype).rpartition(".")[2])
        except TypeError:
            return None
    if not dtype.isnative or dtype.fields is not None or dtype.subdtype is not None:
        return None
    return f"{dtype.kind}{dtype.itemsize}"


_CHAR_NAME = {"f8": "float64", "f4": "float32", "i1": "int8", "u1": "uint8", "i2": "int16", "u2": "uint16",
              "i4": "int32", "u4": "uint32", "i8": "int64", "u8": "uint64", "b1": "bool"}


class Signature:
    """The declared parameters of one kernel entry, made once per kernel: :meth:`pack` checks a
    launch's arguments and writes the argument buffer."""

    __slots__ = ("kernel", "names", "types", "indexed", "_checks", "_fixed", "_sizes", "_offsets")

    def __init__(self, kernel, names, types, indexed=False):
        self.kernel, self.names = kernel, tuple(names)
        # an ActiveSet entry (``_active``, ``_drain``) indexes the planes by the samples of its
        # index map, any of the run's n_samples; a plain entry by its lanes [base, base + count)
        self.indexed = bool(indexed)
        self.types = tuple(parse_type(t) for t in types)
        self._checks = tuple(self._check_of(k, t) for k, t in enumerate(self.types))
        fixed = all(t.kind != "unknown" for t in self.types)
        # every argument of a fully known signature packs into one struct of fixed layout
        self._fixed = struct.Struct("<" + "".join(
            ("Q8x" if t.kind == "pointer" else _SCALAR_FORMAT[t.element] + f"{_SLOT - struct.calcsize(_SCALAR_FORMAT[t.element])}x")
            for t in self.types)) if fixed else None
        self._sizes = tuple(8 if t.kind == "pointer" else struct.calcsize(_SCALAR_FORMAT[t.element])
                            for t in self.types) if fixed else None
        self._offsets = tuple(range(0, _SLOT * len(self.types), _SLOT))

    # -- refusals -------------------------------------------------------------------------------
    def _what(self, k):
        return (f"eagle.run: kernel {self.kernel}: argument {k} ({self.names[k]}, declared "
                f"{self.types[k].text!r})")

    def _scalar_check(self, k, t):
        fmt = struct.Struct("<" + _SCALAR_FORMAT[t.element])
        what = self._what
        if t.element[0] in _FLOATING:
            double = t.element == "f8"  # a Python float is a double: no range to check

            def check(value, need):
                if double and type(value) is float:
                    return value
                v = value[()] if isinstance(value, np.ndarray) and value.shape == () else value
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.integer, np.floating)):
                    raise EagleTypeError(f"{what(k)} takes a real number, got {_describe_value(value)}"
                                         + ("; a bool is not converted to a number" if isinstance(
                                             v, (bool, np.bool_)) else ""))
                try:
                    out = float(v)
                    fmt.pack(out)
                except (OverflowError, struct.error) as e:
                    raise EagleValueError(f"{what(k)}: {value!r:.40} does not fit a {t.text} ({e})") from None
                return out
        else:
            lo, hi = (0, 1) if t.element == "b1" else _int_range(t.element)

            def check(value, need):
                if type(value) is int and lo <= value <= hi:
                    return value
                if isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "iub":
                    value = value[()]
                if isinstance(value, (float, np.floating, np.complexfloating)) or not (
                        isinstance(value, (int, np.integer, np.bool_))):
                    raise EagleTypeError(f"{what(k)} takes an integer, got {_describe_value(value)}"
                                         + ("; a float is not converted to an integer (round it yourself)"
                                            if isinstance(value, (float, np.floating)) else ""))
                out = int(value)
                if not lo <= out <= hi:
                    raise EagleValueError(f"{what(k)}: {out} is out of its range {lo} .. {hi}")
                return out
        return check

    def _pointer_check(self, k, t):
        # an element eagle does not know (void, T**, a typedef) has no samples to count
        want, const, buffer, what = t.element, t.const, t.buffer or t.element is None, self._what

        exact = None if want is None else np.dtype(want)  # numpy's dtypes of native types are singletons

        nullable = t.nullable

        def check(value, need):
            if nullable and type(value) is int and value == 0:
                return 0  # NULL, which the entry takes (eagle's own appended arguments only)
            info = fast_info(value)
            if info is not None:
                dtype, shape = value.dtype, value.shape
                if dtype is exact and shape and (buffer or shape[-1] >= need) and (const or not info.readonly):
                    return info.ptr  # the common case, decided without building a message
            elif getattr(type(value), "__eagle_array__", None) is not None:  # an OwnedPlane, a GlobalPlane
                info, dtype, shape = type(value).__eagle_array__(value)
            else:
                if isinstance(value, (bool, int, float, complex, str, bytes, bytearray, list, tuple, dict)) \
                        or value is None or isinstance(value, (np.generic,)):
                    hint = ("; a Python int is an address eagle cannot check: pass the array"
                            if isinstance(value, int) and not isinstance(value, bool) else "")
                    raise EagleTypeError(f"{what(k)} takes an array, got {_describe_value(value)}{hint}")
                info, dtype, shape = describe(value, what(k))
            if not shape:
                raise EagleTypeError(f"{what(k)} takes an array, got a 0-d {type(value).__name__} (a scalar)")
            if want is not None:
                got = _dtype_char(dtype)
                if got != want:
                    raise EagleTypeError(f"{what(k)} takes an array of {_CHAR_NAME[want]}, got "
                                         f"{_describe_value(value)}")
            if info.readonly and not const:
                raise EagleValueError(f"{what(k)}: the {type(value).__name__} is read-only and the kernel may "
                                      "write it (declare the element const if it does not)")
            if not buffer and shape[-1] < need:
                raise EagleValueError(
                    f"{what(k)}: a plane of shape {tuple(shape)} holds {shape[-1]} samples along its last "
                    f"axis, fewer than the {need} this launch indexes; declare it (EAGLE_BUFFER {t.text}, {self.names[k]}) "
                    "if it is a buffer of another length")
            return info.ptr
        return check

    def _check_of(self, k, t):
        if t.kind == "scalar":
            return self._scalar_check(k, t)
        if t.kind == "pointer":
            return self._pointer_check(k, t)
        return None

    def arrays(self, args):
        """The arguments of ``args`` in pointer positions (those that say where memory lives,
        for the resolver); all of them when their number is not the declared one."""
        if len(args) != len(self.types):
            return list(args)
        return [a for t, a in zip(self.types, args) if t.kind == "pointer"]

    # -- the launch -------------------------------------------------------------------------------
    def pack(self, args, need, legacy):
        """``(buffer bytes, offset of each argument in it, size of each argument)`` of ``args``
        checked against the declaration for a run that indexes ``need`` samples; ``legacy(arg)``
        gives the bytes of an argument of a type eagle does not know."""
        checks = self._checks
        values = [c(a, need) if c is not None else a for c, a in zip(checks, args)]
        if self._fixed is not None:
            return self._fixed.pack(*values), self._offsets, self._sizes
        blobs = []
        for t, c, v in zip(self.types, checks, values):
            if c is None:
                blobs.append(legacy(v))
            elif t.kind == "pointer":
                blobs.append(struct.pack("<Q", v))
            else:
                blobs.append(struct.pack("<" + _SCALAR_FORMAT[t.element], v))
        slots = [bl.ljust((max(len(bl), 8) + _SLOT - 1) & ~(_SLOT - 1), b"\0") for bl in blobs]
        offsets, at = [], 0
        for sl in slots:
            offsets.append(at)
            at += len(sl)
        return b"".join(slots), offsets, [len(bl) for bl in blobs]


def _int_range(element):
    bits = int(element[1:]) * 8
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if element[0] == "i" else (0, (1 << bits) - 1)


class Unseen:
    """The signature of a kernel whose declaration eagle could not read through the preprocessor
    (eagle/module.py's read_declarations): every launch is refused, naming why, since checking
    it against the wrong branch would pass arguments the kernel does not read."""

    def __init__(self, name, why):
        self.kernel, self.why = name, why
        self.names = None

    def refuse(self):
        raise EagleValueError(f"eagle.run: kernel {self.kernel} cannot be launched: eagle could not read its "
                              f"declaration ({self.why}) and the host's C preprocessor (cc -E) could not be run "
                              "on the source to choose the branch; declare it once, or install a C compiler")
