# Installs the backend author's kit beside the eagle package (EAGLE_INSTALL_DIR/backend_kit):
#   include/eagle_backend.h          the seam
#   include/eagle/backend_kit.h      the author helpers (and eagle/ExecGraph.h)
#   eagle_backend.map                the linker version script generated from the header
#   cmake/eagleConfig.cmake          find_package(eagle CONFIG) -> eagle_add_backend(), eagle::backend_kit
#   cmake/eagleConfigVersion.cmake, cmake/EagleBackend.cmake
# `python -m eagle --cmake-dir` prints the cmake/ folder. Included by backends/CMakeLists.txt.
include_guard(GLOBAL)
include(CMakePackageConfigHelpers)

set(_kit "${EAGLE_INSTALL_DIR}/backend_kit")
install(FILES "${EAGLE_HEADER}" DESTINATION "${_kit}/include")
install(FILES "${CMAKE_CURRENT_SOURCE_DIR}/include/eagle/backend_kit.h"
              "${CMAKE_CURRENT_SOURCE_DIR}/include/eagle/ExecGraph.h"
        DESTINATION "${_kit}/include/eagle")
install(FILES "${EAGLE_VERSION_SCRIPT}" DESTINATION "${_kit}")
write_basic_package_version_file("${CMAKE_BINARY_DIR}/kit/eagleConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMajorVersion ARCH_INDEPENDENT)
install(FILES "${CMAKE_CURRENT_SOURCE_DIR}/cmake/eagleConfig.cmake"
              "${CMAKE_BINARY_DIR}/kit/eagleConfigVersion.cmake"
              "${CMAKE_CURRENT_SOURCE_DIR}/cmake/EagleBackend.cmake"
        DESTINATION "${_kit}/cmake")
