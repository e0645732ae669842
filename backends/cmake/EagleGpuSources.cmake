# The GPU implementation shared by the cuda and hip backends (backends/gpu), listed once.
#   EAGLE_GPU_DIR        backends/gpu
#   EAGLE_GPU_SOURCES    host sources of the shared implementation
#   EAGLE_GPU_DEVICE_SOURCES   sources with device code (kernels)
# Each kind adds its own native.cpp (and cuda its conditional.cu).
include_guard(GLOBAL)
get_filename_component(EAGLE_GPU_DIR "${CMAKE_CURRENT_LIST_DIR}/../gpu" ABSOLUTE)
set(EAGLE_GPU_SOURCES "")
foreach(_s core at_fork required stream capture fork attribution exec_graph graph launcher exec device interop memory module)
  list(APPEND EAGLE_GPU_SOURCES "${EAGLE_GPU_DIR}/${_s}.cpp")
endforeach()
set(EAGLE_GPU_DEVICE_SOURCES "${EAGLE_GPU_DIR}/filtering.cu")
