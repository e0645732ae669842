"""The linker version script every backend links with: the seam's symbols global, all else local."""

from __future__ import annotations

import os

from .model import Model
from .pins import pinned


def render(model: Model) -> str:
    """`EAGLE_BACKEND_<major> { global: <every seam symbol>; local: *; };`, symbols C-sorted."""
    out = [f"/* generated from {os.path.basename(model.path)} by: python -m build_tools version-script;"
           " do not edit */",
           f"EAGLE_BACKEND_{model.version_major} {{",
           "  global:"]
    out += [f"    {name};" for name in pinned(model)]
    out += ["  local: *;", "};"]
    return "\n".join(out) + "\n"
