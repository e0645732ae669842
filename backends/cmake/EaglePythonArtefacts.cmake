# Generates the Python side of the seam from eagle_backend.h and installs it beside the backends:
#   _seam_ffi.py   the cffi out-of-line ABI module (imported at run time, parses nothing)
#   _seam_meta.py  groups, bits, symbols and constants as plain Python data
# Enabled by EAGLE_PYTHON_ARTEFACTS=ON (pyproject.toml sets it for `pip install .`).
include_guard(GLOBAL)

set(_eagle_py_out "${CMAKE_BINARY_DIR}/python")
set(_eagle_py_files "${_eagle_py_out}/_seam_ffi.py" "${_eagle_py_out}/_seam_meta.py")
# EAGLE_HEADER, Python_EXECUTABLE and _eagle_build_tools_sources (the CONFIGURE_DEPENDS glob of
# build_tools/*.py) come from EagleBackend.cmake, included before this file in the same scope.
add_custom_command(
  OUTPUT ${_eagle_py_files}
  COMMAND ${CMAKE_COMMAND} -E make_directory "${_eagle_py_out}"
  COMMAND "${Python_EXECUTABLE}" -m build_tools ffi --header "${EAGLE_HEADER}" -o "${_eagle_py_out}/_seam_ffi.py"
  COMMAND "${Python_EXECUTABLE}" -m build_tools meta --header "${EAGLE_HEADER}" -o "${_eagle_py_out}/_seam_meta.py"
  WORKING_DIRECTORY "${EAGLE_SOURCE_ROOT}"
  DEPENDS "${EAGLE_HEADER}" ${_eagle_build_tools_sources}
  COMMENT "Generating eagle's cffi module and seam metadata from ${EAGLE_HEADER}"
  VERBATIM)
add_custom_target(eagle_python_artefacts ALL DEPENDS ${_eagle_py_files})
install(FILES ${_eagle_py_files} DESTINATION "${EAGLE_INSTALL_DIR}")
