"""build_tools: everything eagle and its backends need, generated from eagle_backend.h.

Run as ``python -m build_tools <command>`` (see ``build_tools.__main__``). Needs pycparser and cffi,
at build time only. The Python API:

- ``build_tools.parse.load(path) -> Model``: parse the header (``parse.parse_text(text, path)`` for
  a string); raises ``build_tools.errors.SeamError`` ("file:line: reason") on anything not
  understood. ``Model`` holds ``constants``, ``typedefs``, ``structs`` and ``functions`` in source
  order, each with its source line (lines take no part in equality).
- ``build_tools.cdef.emit(model) -> str``: the model as C declarations; reparsing that text gives an
  equal model. ``cdef.module_source(model)``: the cffi ABI module ``eagle._seam_ffi``.
- ``build_tools.meta.render``, ``version_script.render``, ``layout.manifest``, ``pins.render``:
  the other artefacts.

One concept per module: errors, model, preprocess (comments, markers, directives), macros
(#define evaluation), parse (pycparser AST -> Model), cdef, meta, version_script, layout, pins.
Imports point one way: model and preprocess import no sibling but errors; macros reads model; parse
reads model, preprocess and macros; the generators read model (pins reads parse for the committed
header). tests/test_build_tools_model.py checks there is no cycle.
"""
