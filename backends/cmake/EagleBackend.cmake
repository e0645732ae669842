# eagle_add_backend(<kind> SOURCES <src>...
#                   [INCLUDE_DIRS <dir>...] [LINK_LIBRARIES <lib>...] [COMPILE_DEFINITIONS <def>...]
#                   [COMPILER <command>... [COMPILER_FLAGS <flag>...] [OFFLOAD_SOURCES <src>...]
#                    [OFFLOAD_FLAGS <flag>...]])
#
# Builds libeagle_<kind>.so (target eagle_<kind>) with the shape every backend shares:
#   - hidden visibility; only functions marked EAGLE_EXPORT (eagle/backend_kit.h) are candidates,
#     and the linker version script generated from eagle_backend.h keeps exactly the seam;
#   - PIC, C++17, -Wall -Wextra;
#   - hardening: -fstack-protector-strong, -z now, -z relro, -z noexecstack, --no-undefined;
#   - the seam header and eagle/backend_kit.h on the include path (target eagle::backend_kit);
#   - installed to EAGLE_INSTALL_DIR (beside the eagle package when found through
#     find_package(eagle CONFIG)).
# Sources in a language CMake knows (C, C++, CUDA) are compiled by CMake. COMPILER names a compiler
# CMake has no language for (e.g. hipcc): then every source is compiled by it, with the same
# flags, include directories and definitions; OFFLOAD_SOURCES (device code) get OFFLOAD_FLAGS too.
#
# Expects, set by the caller (eagle's backends/CMakeLists.txt, or eagleConfig.cmake):
#   EAGLE_VERSION_SCRIPT          the linker version script
#   EAGLE_VERSION_SCRIPT_TARGET   (optional) the target that generates it
#   target eagle::backend_kit     include directories of eagle_backend.h and eagle/backend_kit.h
#   EAGLE_INSTALL_DIR             where `cmake --install` puts the library
#   EAGLE_SANITIZE                (optional) build with AddressSanitizer + UBSan
include_guard(GLOBAL)

set(EAGLE_SANITIZE_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer
    -fno-sanitize-recover=undefined)
set(EAGLE_HARDENING_COMPILE_FLAGS -fstack-protector-strong)
set(EAGLE_HARDENING_LINK_FLAGS
    "LINKER:-z,now" "LINKER:-z,relro" "LINKER:-z,noexecstack" "LINKER:--no-undefined")

# Flags shared by every target that goes into a backend library.
function(eagle_apply_common_flags target)
  target_compile_features(${target} PRIVATE cxx_std_17)
  set_target_properties(${target} PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra ${EAGLE_HARDENING_COMPILE_FLAGS}>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-fstack-protector-strong>)
  if(EAGLE_SANITIZE)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C,CXX>:${EAGLE_SANITIZE_FLAGS}>)
    target_link_options(${target} PUBLIC ${EAGLE_SANITIZE_FLAGS})
  endif()
endfunction()

# Compiles `sources` with `compiler` into objects under the current binary dir; the object paths
# go to the variable named by `out_var`. Header dependencies come from the compiler's depfile.
function(_eagle_compile_with target compiler out_var)
  cmake_parse_arguments(PARSE_ARGV 3 ARG "" "" "SOURCES;OFFLOAD_SOURCES;FLAGS;OFFLOAD_FLAGS;INCLUDE_DIRS;DEFINITIONS")
  set(flags -std=c++17 -O2 -fPIC -fvisibility=hidden -fvisibility-inlines-hidden -Wall
      ${EAGLE_HARDENING_COMPILE_FLAGS} ${ARG_FLAGS})
  if(EAGLE_SANITIZE)
    list(APPEND flags ${EAGLE_SANITIZE_FLAGS})
  endif()
  foreach(d IN LISTS ARG_INCLUDE_DIRS)
    list(APPEND flags "-I${d}")
  endforeach()
  foreach(d IN LISTS ARG_DEFINITIONS)
    list(APPEND flags "-D${d}")
  endforeach()
  set(objects "")
  foreach(src IN LISTS ARG_SOURCES ARG_OFFLOAD_SOURCES)
    get_filename_component(abs "${src}" ABSOLUTE)
    get_filename_component(name "${src}" NAME)
    set(obj "${CMAKE_CURRENT_BINARY_DIR}/${target}.objs/${name}.o")
    set(extra "")
    if(src IN_LIST ARG_OFFLOAD_SOURCES)
      set(extra ${ARG_OFFLOAD_FLAGS})
    endif()
    add_custom_command(OUTPUT "${obj}"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${CMAKE_CURRENT_BINARY_DIR}/${target}.objs"
      COMMAND ${compiler} ${flags} ${extra} -MD -MF "${obj}.d" -c "${abs}" -o "${obj}"
      DEPENDS "${abs}"
      DEPFILE "${obj}.d"
      COMMENT "${target}: compiling ${name} with ${compiler}"
      VERBATIM COMMAND_EXPAND_LISTS)
    list(APPEND objects "${obj}")
  endforeach()
  set_source_files_properties(${objects} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  set(${out_var} ${objects} PARENT_SCOPE)
endfunction()

function(eagle_add_backend kind)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" ""
    "COMPILER;SOURCES;INCLUDE_DIRS;LINK_LIBRARIES;COMPILE_DEFINITIONS;COMPILER_FLAGS;OFFLOAD_SOURCES;OFFLOAD_FLAGS")
  if(NOT ARG_SOURCES AND NOT ARG_OFFLOAD_SOURCES)
    message(FATAL_ERROR "eagle_add_backend(${kind}): no SOURCES given")
  endif()
  if(NOT kind MATCHES "^[a-z][a-z0-9_]*$")
    message(FATAL_ERROR "eagle_add_backend(${kind}): a kind is lower-case letters, digits and '_'")
  endif()
  if(NOT EAGLE_VERSION_SCRIPT)
    message(FATAL_ERROR "eagle_add_backend(${kind}): EAGLE_VERSION_SCRIPT is not set "
                        "(use find_package(eagle CONFIG) first)")
  endif()
  if(NOT TARGET eagle::backend_kit)
    message(FATAL_ERROR "eagle_add_backend(${kind}): the target eagle::backend_kit does not exist "
                        "(use find_package(eagle CONFIG) first)")
  endif()
  if((ARG_OFFLOAD_SOURCES OR ARG_COMPILER_FLAGS OR ARG_OFFLOAD_FLAGS) AND NOT ARG_COMPILER)
    message(FATAL_ERROR "eagle_add_backend(${kind}): OFFLOAD_SOURCES, COMPILER_FLAGS and "
                        "OFFLOAD_FLAGS need COMPILER")
  endif()
  set(target eagle_${kind})
  set(sources ${ARG_SOURCES})
  if(ARG_COMPILER)
    get_target_property(kit_dirs eagle::backend_kit INTERFACE_INCLUDE_DIRECTORIES)
    _eagle_compile_with(${target} "${ARG_COMPILER}" sources
      SOURCES ${ARG_SOURCES} OFFLOAD_SOURCES ${ARG_OFFLOAD_SOURCES}
      FLAGS ${ARG_COMPILER_FLAGS} OFFLOAD_FLAGS ${ARG_OFFLOAD_FLAGS}
      INCLUDE_DIRS ${ARG_INCLUDE_DIRS} ${kit_dirs}
      DEFINITIONS ${ARG_COMPILE_DEFINITIONS})
  endif()
  add_library(${target} SHARED ${sources})
  eagle_apply_common_flags(${target})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME eagle_${kind}
    LINK_DEPENDS "${EAGLE_VERSION_SCRIPT}")
  if(ARG_COMPILER)
    set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX)
  endif()
  if(EAGLE_VERSION_SCRIPT_TARGET)
    add_dependencies(${target} ${EAGLE_VERSION_SCRIPT_TARGET})
  endif()
  target_include_directories(${target} PRIVATE ${ARG_INCLUDE_DIRS})
  target_compile_definitions(${target} PRIVATE ${ARG_COMPILE_DEFINITIONS})
  target_link_libraries(${target} PRIVATE eagle::backend_kit ${ARG_LINK_LIBRARIES})
  target_link_options(${target} PRIVATE
    "LINKER:--version-script=${EAGLE_VERSION_SCRIPT}" ${EAGLE_HARDENING_LINK_FLAGS})
  install(TARGETS ${target} LIBRARY DESTINATION "${EAGLE_INSTALL_DIR}"
                            RUNTIME DESTINATION "${EAGLE_INSTALL_DIR}")
endfunction()
