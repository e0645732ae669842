# eagle_add_backend(<kind> SOURCES <src>... [INCLUDE_DIRS <dir>...] [LINK_LIBRARIES <lib>...]
#                   [COMPILE_DEFINITIONS <def>...])
#
# Builds libeagle_<kind>.so with the shape every backend shares: hidden visibility, the linker
# version script generated from eagle_backend.h (exports exactly the seam), -z now / -z relro,
# --no-undefined, PIC, C++17, linked with eagle_backend_common, installed to EAGLE_INSTALL_DIR.
include_guard(GLOBAL)

set(EAGLE_HEADER "${EAGLE_SOURCE_ROOT}/eagle_backend.h")
if(NOT EXISTS "${EAGLE_HEADER}")
  message(FATAL_ERROR "eagle: the seam header was not found at ${EAGLE_HEADER} "
                      "(set EAGLE_SOURCE_ROOT to the eagle repository root)")
endif()
if(NOT EXISTS "${EAGLE_SOURCE_ROOT}/build_tools/__main__.py")
  message(FATAL_ERROR "eagle: build_tools was not found at ${EAGLE_SOURCE_ROOT}/build_tools "
                      "(needed to generate the linker version script; set EAGLE_SOURCE_ROOT)")
endif()

find_package(Python COMPONENTS Interpreter REQUIRED)

# One version script for every backend, regenerated when the header or build_tools change.
set(EAGLE_VERSION_SCRIPT "${CMAKE_BINARY_DIR}/eagle_backend.map")
file(GLOB _eagle_build_tools_sources CONFIGURE_DEPENDS "${EAGLE_SOURCE_ROOT}/build_tools/*.py")
add_custom_command(
  OUTPUT "${EAGLE_VERSION_SCRIPT}"
  COMMAND "${Python_EXECUTABLE}" -m build_tools version-script
          --header "${EAGLE_HEADER}" -o "${EAGLE_VERSION_SCRIPT}"
  WORKING_DIRECTORY "${EAGLE_SOURCE_ROOT}"
  DEPENDS "${EAGLE_HEADER}" ${_eagle_build_tools_sources}
  COMMENT "Generating the eagle linker version script from ${EAGLE_HEADER}"
  VERBATIM)
add_custom_target(eagle_version_script DEPENDS "${EAGLE_VERSION_SCRIPT}")

set(EAGLE_SANITIZE_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer
    -fno-sanitize-recover=undefined)

# Flags shared by the common library and every backend.
function(eagle_apply_common_flags target)
  target_compile_features(${target} PRIVATE cxx_std_17)
  set_target_properties(${target} PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra>)
  if(EAGLE_SANITIZE)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C,CXX>:${EAGLE_SANITIZE_FLAGS}>)
    target_link_options(${target} PUBLIC ${EAGLE_SANITIZE_FLAGS})
  endif()
endfunction()

function(eagle_add_backend kind)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "SOURCES;INCLUDE_DIRS;LINK_LIBRARIES;COMPILE_DEFINITIONS")
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "eagle_add_backend(${kind}): no SOURCES given")
  endif()
  set(target eagle_${kind})
  add_library(${target} SHARED ${ARG_SOURCES})
  eagle_apply_common_flags(${target})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME eagle_${kind}
    LINK_DEPENDS "${EAGLE_VERSION_SCRIPT}")
  add_dependencies(${target} eagle_version_script)
  target_include_directories(${target} PRIVATE ${ARG_INCLUDE_DIRS})
  target_compile_definitions(${target} PRIVATE ${ARG_COMPILE_DEFINITIONS})
  target_link_libraries(${target} PRIVATE eagle_backend_common ${ARG_LINK_LIBRARIES})
  target_link_options(${target} PRIVATE
    "LINKER:--version-script=${EAGLE_VERSION_SCRIPT}"
    "LINKER:-z,now" "LINKER:-z,relro" "LINKER:--no-undefined")
  install(TARGETS ${target} LIBRARY DESTINATION "${EAGLE_INSTALL_DIR}"
                            RUNTIME DESTINATION "${EAGLE_INSTALL_DIR}")
endfunction()
