"""Seam descs filled in one C call, for the paths that make one on every call.

``ffi.new(type, {...})`` from a dict costs about a microsecond and field-by-field assignment about
70 ns a field; :class:`Packer` writes every field of a fresh zeroed desc with one
``struct.pack_into``. Its layout is read from cffi (offsets and types of the generated cdef), so
it follows the header: a field it is not told about stays zero, as the seam's zero-fill rule
wants, and a type it cannot pack is refused when the packer is made, not on a call."""
import struct

from ._seam_ffi import ffi

_FORMAT = {"uint8_t": "B", "int8_t": "b", "uint16_t": "H", "int16_t": "h", "uint32_t": "I", "int32_t": "i",
           "uint64_t": "Q", "int64_t": "q", "float": "f", "double": "d"}


class Packer:
    """Makes ``struct <name>`` descs: ``new(*values)`` is a fresh cdata pointer (owning its memory)
    whose ``fields`` (named in the struct's order) hold ``values``, every other byte zero.

    A value ``struct`` refuses (out of the field's range, not a number) is assigned by cffi
    instead, field by field, so it raises what cffi raises (OverflowError, TypeError) and a value
    cffi takes that ``struct`` does not is still written."""

    __slots__ = ("fields", "size", "_ptr", "_pack")

    def __init__(self, name, fields):
        ctype = ffi.typeof(name)
        by_name = dict(ctype.fields)
        unknown = [f for f in fields if f not in by_name]
        if unknown:
            raise KeyError(f"eagle: {name} has no field(s) {unknown}")
        self.fields, self.size = tuple(fields), ffi.sizeof(ctype)
        fmt, at = "=", 0
        for f in fields:
            offset = by_name[f].offset
            if offset < at:
                raise ValueError(f"eagle: name the fields of {name} in its order ({f} comes earlier)")
            cname = by_name[f].type.cname
            if cname not in _FORMAT:
                raise TypeError(f"eagle: {name}.{f} is a {cname}, which Packer does not pack")
            fmt += "x" * (offset - at) + _FORMAT[cname]
            at = offset + ffi.sizeof(by_name[f].type)
        self._pack = struct.Struct(fmt).pack_into
        self._ptr = ffi.typeof(name + "*")

    def new(self, *values):
        """A zeroed desc with ``fields`` set to ``values``."""
        desc = ffi.new(self._ptr)
        try:
            self._pack(ffi.buffer(desc), 0, *values)
        except struct.error:
            for f, v in zip(self.fields, values, strict=True):
                setattr(desc, f, v)
        return desc
