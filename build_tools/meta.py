"""`eagle/_seam_meta.py`: the seam's numbers and symbol table as plain Python data.

The module defines exactly HEADER_SHA256, VERSION_MAJOR, VERSION_MINOR, VERSION, CONSTANTS,
GROUP_BITS, RESERVED_BITS_MASK, SYMBOLS, REQUIRED, GROUP_SYMBOLS, PER_SYMBOL, EXTENDS, STATUS_NAMES
and STRUCT_SIZES, and imports nothing. Every table eagle's Python side needs about the seam (statuses,
flags, constants, the group order, which per-symbol entry extends which group) is read from here.
"""

from __future__ import annotations

import hashlib
import os

from .layout import layouts
from .model import GROUP_PER_SYMBOL, GROUP_REQUIRED, Model

ALL_BITS = 2**64 - 1


def data(model: Model) -> dict[str, object]:
    """The module's names and values, in the order they are written."""
    group_bits = model.group_bits
    symbols = {f.name: (f.group, f.since) for f in model.functions}
    with open(model.path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return {
        "HEADER_SHA256": digest,
        "VERSION_MAJOR": model.version_major,
        "VERSION_MINOR": model.version_minor,
        "VERSION": model.version,
        "CONSTANTS": {c.name: c.value for c in model.constants},
        "GROUP_BITS": group_bits,
        "RESERVED_BITS_MASK": ALL_BITS & ~sum(1 << bit for bit in group_bits.values()),
        "SYMBOLS": symbols,
        "REQUIRED": tuple(n for n, (g, _) in symbols.items() if g == GROUP_REQUIRED),
        "GROUP_SYMBOLS": {g: tuple(n for n, (sg, since) in symbols.items() if sg == g and since == 0)
                          for g in group_bits},
        "PER_SYMBOL": tuple(n for n, (g, _) in symbols.items() if g == GROUP_PER_SYMBOL),
        "EXTENDS": {f.name: f.extends for f in model.functions if f.extends},
        "STATUS_NAMES": model.statuses,
        "STRUCT_SIZES": {tag: lay.size for tag, lay in layouts(model).items()},
    }


def render(model: Model) -> str:
    """Source text of the module, one dict entry or tuple item a line."""
    out = [f"# generated from {os.path.basename(model.path)} by: python -m build_tools meta; do not edit"]
    for name, value in data(model).items():
        if isinstance(value, dict):
            out.append(f"{name} = {{")
            out += [f"    {k!r}: {v!r}," for k, v in value.items()]
            out.append("}")
        elif isinstance(value, tuple):
            out.append(f"{name} = (")
            out += [f"    {v!r}," for v in value]
            out.append(")")
        elif name == "RESERVED_BITS_MASK":
            out.append(f"{name} = {value:#018x}")
        else:
            out.append(f"{name} = {value!r}")
    return "\n".join(out) + "\n"
