"""The typed model of eagle_backend.h: C types, functions, structs, typedefs and constants.

Source lines ride along for error messages but take no part in equality, so a model reparsed from
its own cdef compares equal to the model of the header.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

GROUP_REQUIRED = "required"
GROUP_PER_SYMBOL = "per-symbol"
CAP_PREFIX = "EAGLE_BACKEND_CAP_"
SYMBOL_PREFIX = "eagle_backend_"
STATUS_FIRST = "EAGLE_BACKEND_OK"
MACRO_PREFIX = "EAGLE_BACKEND_"

# The C types a seam declaration may name besides its own typedefs and structs.
BUILTIN_TYPES = (
    "void", "char", "float", "double",
    "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
)


@dataclass(frozen=True)
class Builtin:
    name: str
    const: bool = False


@dataclass(frozen=True)
class TypedefName:
    name: str
    const: bool = False


@dataclass(frozen=True)
class StructType:
    tag: str
    const: bool = False


@dataclass(frozen=True)
class Pointer:
    target: "CType"
    const: bool = False


@dataclass(frozen=True)
class Array:
    element: "CType"
    length: int


@dataclass(frozen=True)
class Param:
    name: str
    type: "CType"


@dataclass(frozen=True)
class FunctionType:
    returns: "CType"
    params: tuple[Param, ...]


CType = Union[Builtin, TypedefName, StructType, Pointer, Array, FunctionType]


@dataclass(frozen=True)
class Function:
    name: str
    returns: CType
    params: tuple[Param, ...]
    group: str
    since: int
    line: int = field(default=0, compare=False)
    #: A per-symbol entry that works on a capability group's handles names that group: it is
    #: usable only when the group is provided too (header marker ``extends=<group>``).
    extends: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Field:
    name: str
    type: CType
    line: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Struct:
    tag: str
    fields: tuple[Field, ...]
    line: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Typedef:
    name: str
    type: CType
    line: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Constant:
    name: str
    value: int
    line: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Model:
    """Everything the header declares, each kind in source order."""

    path: str = field(compare=False)
    constants: tuple[Constant, ...]
    typedefs: tuple[Typedef, ...]
    structs: tuple[Struct, ...]
    functions: tuple[Function, ...]

    def constant(self, name: str) -> int:
        """The value of the #define `name` (KeyError when absent)."""
        for c in self.constants:
            if c.name == name:
                return c.value
        raise KeyError(name)

    @property
    def version_major(self) -> int:
        return self.constant("EAGLE_BACKEND_VERSION_MAJOR")

    @property
    def version_minor(self) -> int:
        return self.constant("EAGLE_BACKEND_VERSION_MINOR")

    @property
    def version(self) -> int:
        return self.constant("EAGLE_BACKEND_VERSION")

    @property
    def group_bits(self) -> dict[str, int]:
        """Capability group -> bit index, from the EAGLE_BACKEND_CAP_<GROUP> macros, in source order."""
        return {c.name[len(CAP_PREFIX):].lower(): c.value.bit_length() - 1
                for c in self.constants if c.name.startswith(CAP_PREFIX)}

    @property
    def groups(self) -> tuple[str, ...]:
        """Every group name a marker may give: required, the capability groups, per-symbol."""
        return (GROUP_REQUIRED, *self.group_bits, GROUP_PER_SYMBOL)

    @property
    def statuses(self) -> dict[int, str]:
        """Status value -> name: the run of #defines from EAGLE_BACKEND_OK (0) counting up by one."""
        names = [c.name for c in self.constants]
        out: dict[int, str] = {}
        for c in self.constants[names.index(STATUS_FIRST):]:
            if c.value != len(out):
                break
            out[c.value] = c.name[len(MACRO_PREFIX):]
        return out

    @property
    def symbols(self) -> tuple[str, ...]:
        """Every function name, in source order."""
        return tuple(f.name for f in self.functions)

    def struct(self, tag: str) -> Struct:
        """The struct definition with this tag (KeyError when absent)."""
        for s in self.structs:
            if s.tag == tag:
                return s
        raise KeyError(tag)

    def typedef(self, name: str) -> Typedef:
        """The typedef with this name (KeyError when absent)."""
        for t in self.typedefs:
            if t.name == name:
                return t
        raise KeyError(name)

