"""The cffi side: C declarations emitted from the model, and the out-of-line ABI module.

`emit(model)` writes the model back as C: `#define NAME <literal>` for every constant, then the
typedefs, the structs and the function prototypes, each prototype under its `@eagle` marker, so the
text reparses to the same model. `module_source(model)` is the cffi module eagle imports as
`eagle._seam_ffi`; it holds cffi's prebuilt tables and needs no pycparser at import.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile

from .model import Array, Builtin, CType, FunctionType, Model, Param, Pointer, StructType, TypedefName

MODULE_NAME = "eagle._seam_ffi"


def declare(ctype: CType, inner: str = "") -> str:
    """C text declaring `inner` (a name, or "" for an abstract declarator) with type ctype."""
    match ctype:
        case Builtin(name=name, const=const) | TypedefName(name=name, const=const):
            return _join(f"{'const ' if const else ''}{name}", inner)
        case StructType(tag=tag, const=const):
            return _join(f"{'const ' if const else ''}struct {tag}", inner)
        case Pointer(target=target, const=const):
            inner = f"*{'const ' if const else ''}{inner}"
            if isinstance(target, (Array, FunctionType)):
                inner = f"({inner})"
            return declare(target, inner)
        case Array(element=element, length=length):
            return declare(element, f"{inner}[{length}]")
        case FunctionType(returns=returns, params=params):
            return declare(returns, f"{inner}({parameters(params)})")
    raise TypeError(f"not a CType: {ctype!r}")


def parameters(params: tuple[Param, ...]) -> str:
    """A parameter list; `void` when empty."""
    return ", ".join(declare(p.type, p.name) for p in params) or "void"


def _join(base: str, inner: str) -> str:
    """`base inner`, the leading stars hugging the base: `uint64_t** p`."""
    rest = inner.lstrip("*")
    stars = inner[: len(inner) - len(rest)]
    return f"{base}{stars} {rest}" if rest else f"{base}{stars}"


def emit(model: Model) -> str:
    """The model as C declarations: constants, typedefs, structs, functions (with markers)."""
    out = [f"/* generated from {os.path.basename(model.path)} by build_tools; do not edit */"]
    out += [f"#define {c.name} {c.value}" for c in model.constants]
    out += [f"typedef {declare(t.type, t.name)};" for t in model.typedefs]
    for s in model.structs:
        out.append(f"struct {s.tag} {{")
        out += [f"    {declare(f.type, f.name)};" for f in s.fields]
        out.append("};")
    for f in model.functions:
        out.append(f"/* @eagle group={f.group} since={f.since} */")
        out.append(f"{declare(FunctionType(f.returns, f.params), f.name)};")
    return "\n".join(out) + "\n"


def module_source(model: Model) -> str:
    """Source of the out-of-line ABI-mode cffi module `eagle._seam_ffi` for this model."""
    import cffi

    builder = cffi.FFI()
    builder.cdef(emit(model))
    builder.set_source(MODULE_NAME, None)
    fd, tmp = tempfile.mkstemp(suffix=".py")
    os.close(fd)
    try:
        with contextlib.redirect_stdout(io.StringIO()):   # cffi prints 'generating <path>'
            builder.emit_python_code(tmp)
        with open(tmp, encoding="utf-8") as f:
            return f.read()
    finally:
        os.unlink(tmp)
