"""Struct layout on LP64 (x86-64, aarch64): natural alignment, pointers 8, double 8, float 4.

The seam's rule is that padding is explicit, so a layout that needs implicit padding (between
fields or at the tail) stops the generator at the offending field.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import SeamError
from .model import Array, Builtin, CType, FunctionType, Model, Pointer, StructType, TypedefName

_SIZES = {"char": 1, "int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4,
          "uint32_t": 4, "float": 4, "int64_t": 8, "uint64_t": 8, "double": 8}
POINTER_SIZE = 8


@dataclass(frozen=True)
class StructLayout:
    size: int
    align: int
    offsets: dict[str, int]


def layouts(model: Model) -> dict[str, StructLayout]:
    """Layout of every struct, by tag, in source order."""
    done: dict[str, StructLayout] = {}
    for s in model.structs:
        offset, align, offsets = 0, 1, {}
        for f in s.fields:
            size, field_align = _size_align(model, f.type, done)
            if offset % field_align:
                pad = field_align - offset % field_align
                raise SeamError(model.path, f.line, f"{pad} bytes of implicit padding before {s.tag}.{f.name};"
                                                    " the seam's padding is explicit (add a reserved field)")
            offsets[f.name] = offset
            offset += size
            align = max(align, field_align)
        if offset % align:
            raise SeamError(model.path, s.fields[-1].line,
                            f"{align - offset % align} bytes of implicit tail padding after {s.tag}."
                            f"{s.fields[-1].name}; the seam's padding is explicit (add a reserved field)")
        done[s.tag] = StructLayout(offset, align, offsets)
    return done


def manifest(model: Model) -> dict[str, dict]:
    """The layout manifest: {struct: {"sizeof": n, "fields": {field: offset}}}."""
    return {tag: {"sizeof": lay.size, "fields": dict(lay.offsets)} for tag, lay in layouts(model).items()}


def _size_align(model: Model, ctype: CType, done: dict[str, StructLayout]) -> tuple[int, int]:
    """sizeof and alignof of a field type."""
    match ctype:
        case Builtin(name=name) if name in _SIZES:
            return _SIZES[name], _SIZES[name]
        case TypedefName(name=name):
            return _size_align(model, model.typedef(name).type, done)
        case Pointer():
            return POINTER_SIZE, POINTER_SIZE
        case Array(element=element, length=length):
            size, align = _size_align(model, element, done)
            return size * length, align
        case StructType(tag=tag) if tag in done:
            return done[tag].size, done[tag].align
        case StructType() | FunctionType() | Builtin():
            pass
    raise ValueError(f"no layout for {ctype!r}")  # the parser admits no such field
