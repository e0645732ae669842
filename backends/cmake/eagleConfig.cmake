# find_package(eagle CONFIG): eagle's installed backend author kit.
#   cmake -S . -B build -Deagle_DIR="$(python -m eagle --cmake-dir)"
# Gives
#   eagle_add_backend(<kind> SOURCES ...)   the function eagle's own backends are built with
#   eagle::backend_kit                      include dirs of eagle_backend.h and eagle/backend_kit.h
#   EAGLE_VERSION_SCRIPT                    the generated linker version script
#   EAGLE_INCLUDE_DIR                       the folder that holds eagle_backend.h
#   EAGLE_PACKAGE_DIR                       the installed eagle package (where backends are found)
#   EAGLE_SEAM_VERSION_MAJOR/_MINOR         the seam the kit's header describes
# No eagle checkout, no Python packages and no particular generator are needed.
# `cmake --install` puts libeagle_<kind>.so into EAGLE_INSTALL_DIR, by default EAGLE_PACKAGE_DIR
# (beside the package, where eagle.backend("<kind>") finds it).
include_guard(GLOBAL)
include(CMakeFindDependencyMacro)

get_filename_component(_eagle_kit "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
get_filename_component(EAGLE_PACKAGE_DIR "${_eagle_kit}/.." ABSOLUTE)
set(EAGLE_INCLUDE_DIR "${_eagle_kit}/include")
set(EAGLE_VERSION_SCRIPT "${_eagle_kit}/eagle_backend.map")
foreach(_f "${EAGLE_INCLUDE_DIR}/eagle_backend.h" "${EAGLE_INCLUDE_DIR}/eagle/backend_kit.h"
           "${EAGLE_VERSION_SCRIPT}")
  if(NOT EXISTS "${_f}")
    set(${CMAKE_FIND_PACKAGE_NAME}_FOUND FALSE)
    set(${CMAKE_FIND_PACKAGE_NAME}_NOT_FOUND_MESSAGE "eagle's backend kit is incomplete: ${_f} is missing")
    return()
  endif()
endforeach()
file(STRINGS "${EAGLE_INCLUDE_DIR}/eagle_backend.h" _eagle_v REGEX "^#define EAGLE_BACKEND_VERSION_M(AJOR|INOR) ")
string(REGEX REPLACE ".*MAJOR ([0-9]+)u.*" "\\1" EAGLE_SEAM_VERSION_MAJOR "${_eagle_v}")
string(REGEX REPLACE ".*MINOR ([0-9]+)u.*" "\\1" EAGLE_SEAM_VERSION_MINOR "${_eagle_v}")

set(EAGLE_INSTALL_DIR "${EAGLE_PACKAGE_DIR}" CACHE PATH
    "Where cmake --install puts libeagle_<kind>.so (default: beside the eagle package)")

find_dependency(Threads)
if(NOT TARGET eagle::backend_kit)
  add_library(eagle::backend_kit INTERFACE IMPORTED)
  set_target_properties(eagle::backend_kit PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${EAGLE_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
include("${CMAKE_CURRENT_LIST_DIR}/EagleBackend.cmake")
