// device_intrinsics.h -- the kernel-side half of the mapping in runtime.h, for .cu files only.
//
// Device code works in groups of 32 lanes (a CUDA warp; half of a 64-lane AMD wavefront). HIP 5.2
// has no *_sync intrinsics: its shuffles take a width, and its ballot covers the whole wavefront,
// so the group's 32 bits are taken from the half this lane is in.
#pragma once

#if defined(EAGLE_GPU_HIP)
#include <hip/hip_runtime.h>
__device__ __forceinline__ unsigned gpu_shfl_up32(unsigned v, int d) { return __shfl_up(v, d, 32); }
__device__ __forceinline__ unsigned gpu_shfl_down32(unsigned v, int d) { return __shfl_down(v, d, 32); }
__device__ __forceinline__ unsigned gpu_shfl32(unsigned v, int src) { return __shfl(v, src, 32); }
__device__ __forceinline__ unsigned gpu_ballot32(bool p) {
    return static_cast<unsigned>(static_cast<unsigned long long>(__ballot(p)) >> (threadIdx.x & 32u));
}
#else
__device__ __forceinline__ unsigned gpu_shfl_up32(unsigned v, int d) { return __shfl_up_sync(0xffffffffu, v, d); }
__device__ __forceinline__ unsigned gpu_shfl_down32(unsigned v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
__device__ __forceinline__ unsigned gpu_shfl32(unsigned v, int src) { return __shfl_sync(0xffffffffu, v, src); }
__device__ __forceinline__ unsigned gpu_ballot32(bool p) { return __ballot_sync(0xffffffffu, p); }
#endif
