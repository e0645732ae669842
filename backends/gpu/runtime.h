// runtime.h -- the one place where the shared GPU sources meet a vendor runtime.
//
// backends/gpu/ is written once against the names below. EAGLE_GPU_HIP selects HIP (hipcc); otherwise
// CUDA (nvcc or a host compiler with the CUDA include path). Only calls whose semantics match on both
// runtimes are mapped; what one runtime lacks is decided at compile time by EAGLE_GPU_HAS_* switches.
#pragma once

#include <cstdint>
#include <vector>

#if defined(EAGLE_GPU_HIP)
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime_api.h>

#define EAGLE_GPU_KIND "hip"
#define EAGLE_GPU_HAS_CONDITIONAL 0
#define EAGLE_GPU_HAS_NODE_ENABLE 0
#define EAGLE_GPU_HAS_STREAM_GET_DEVICE 0
#define EAGLE_GPU_WARP 64

using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuEvent_t = hipEvent_t;
using gpuGraph_t = hipGraph_t;
using gpuGraphExec_t = hipGraphExec_t;
using gpuGraphNode_t = hipGraphNode_t;
using gpuGraphNodeType = hipGraphNodeType;
using gpuStreamCaptureStatus = hipStreamCaptureStatus;
using gpuMemcpyKind = hipMemcpyKind;
using gpuHostFn_t = hipHostFn_t;
using gpuFunction_t = hipFunction_t;
using gpuKernelNodeParams = hipKernelNodeParams;

#define gpuSuccess hipSuccess
#define gpuErrorNotReady hipErrorNotReady
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamDefault hipStreamDefault
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuStreamCaptureModeRelaxed hipStreamCaptureModeRelaxed
#define gpuStreamCaptureStatusNone hipStreamCaptureStatusNone
#define gpuStreamCaptureStatusActive hipStreamCaptureStatusActive
#define gpuStreamCaptureStatusInvalidated hipStreamCaptureStatusInvalidated
#define gpuGraphNodeTypeKernel hipGraphNodeTypeKernel
#define gpuGraphNodeTypeMemcpy hipGraphNodeTypeMemcpy
#define gpuGraphNodeTypeMemset hipGraphNodeTypeMemset
#define gpuGraphNodeTypeGraph hipGraphNodeTypeGraph
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuMemcpyHostToHost hipMemcpyHostToHost
#define gpuHostAllocDefault hipHostMallocDefault
#define gpuStreamLegacy ((hipStream_t)0)
#define gpuStreamPerThread hipStreamPerThread

#define gpuGetErrorString hipGetErrorString
#define gpuGetErrorName hipGetErrorName
#define gpuGetLastError hipGetLastError
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuDriverGetVersion hipDriverGetVersion
#define gpuRuntimeGetVersion hipRuntimeGetVersion
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamQuery hipStreamQuery
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuStreamIsCapturing hipStreamIsCapturing
#define gpuStreamBeginCapture hipStreamBeginCapture
#define gpuStreamEndCapture hipStreamEndCapture
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuGraphCreate hipGraphCreate
#define gpuGraphDestroy hipGraphDestroy
#define gpuGraphGetNodes hipGraphGetNodes
#define gpuGraphNodeGetType hipGraphNodeGetType
#define gpuGraphAddChildGraphNode hipGraphAddChildGraphNode
#define gpuGraphAddEmptyNode hipGraphAddEmptyNode
#define gpuGraphGetEdges(g, from, to, n) hipGraphGetEdges((g), (from), (to), (n))
#define gpuGraphChildGraphNodeGetGraph hipGraphChildGraphNodeGetGraph
#define gpuGraphKernelNodeGetParams hipGraphKernelNodeGetParams
#define gpuGraphInstantiate(exec, graph) hipGraphInstantiate((exec), (graph), nullptr, nullptr, 0)
#define gpuGraphExecDestroy hipGraphExecDestroy
#define gpuGraphLaunch hipGraphLaunch
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemsetAsync hipMemsetAsync
#define gpuHostAlloc(p, n, f) hipHostMalloc((p), (n), (f))
#define gpuFreeHost hipHostFree
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuLaunchHostFunc hipLaunchHostFunc
// ROCm 5.2's capture-info call reports the graph and its current dependencies.
#define gpuStreamGetCaptureInfo(s, st, id, g, deps, n) hipStreamGetCaptureInfo_v2((s), (st), (id), (g), (deps), (n))

#else  // CUDA
#include <cuda_runtime_api.h>
#include <cuda.h>

#define EAGLE_GPU_KIND "cuda"
#define EAGLE_GPU_HAS_CONDITIONAL 1
#define EAGLE_GPU_HAS_NODE_ENABLE 1
#define EAGLE_GPU_HAS_STREAM_GET_DEVICE 1
#define EAGLE_GPU_WARP 32

using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuEvent_t = cudaEvent_t;
using gpuGraph_t = cudaGraph_t;
using gpuGraphExec_t = cudaGraphExec_t;
using gpuGraphNode_t = cudaGraphNode_t;
using gpuGraphNodeType = cudaGraphNodeType;
using gpuStreamCaptureStatus = cudaStreamCaptureStatus;
using gpuMemcpyKind = cudaMemcpyKind;
using gpuHostFn_t = cudaHostFn_t;
using gpuFunction_t = CUfunction;
using gpuKernelNodeParams = cudaKernelNodeParams;

#define gpuSuccess cudaSuccess
#define gpuErrorNotReady cudaErrorNotReady
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamDefault cudaStreamDefault
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuStreamCaptureModeRelaxed cudaStreamCaptureModeRelaxed
#define gpuStreamCaptureStatusNone cudaStreamCaptureStatusNone
#define gpuStreamCaptureStatusActive cudaStreamCaptureStatusActive
#define gpuStreamCaptureStatusInvalidated cudaStreamCaptureStatusInvalidated
#define gpuGraphNodeTypeKernel cudaGraphNodeTypeKernel
#define gpuGraphNodeTypeMemcpy cudaGraphNodeTypeMemcpy
#define gpuGraphNodeTypeMemset cudaGraphNodeTypeMemset
#define gpuGraphNodeTypeGraph cudaGraphNodeTypeGraph
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuMemcpyHostToHost cudaMemcpyHostToHost
#define gpuHostAllocDefault cudaHostAllocDefault
#define gpuStreamLegacy cudaStreamLegacy
#define gpuStreamPerThread cudaStreamPerThread

#define gpuGetErrorString cudaGetErrorString
#define gpuGetErrorName cudaGetErrorName
#define gpuGetLastError cudaGetLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#define gpuDriverGetVersion cudaDriverGetVersion
#define gpuRuntimeGetVersion cudaRuntimeGetVersion
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamQuery cudaStreamQuery
#define gpuStreamWaitEvent(s, e, f) cudaStreamWaitEvent((s), (e), (f))
#define gpuStreamIsCapturing cudaStreamIsCapturing
#define gpuStreamBeginCapture cudaStreamBeginCapture
#define gpuStreamEndCapture cudaStreamEndCapture
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuGraphCreate cudaGraphCreate
#define gpuGraphDestroy cudaGraphDestroy
#define gpuGraphGetNodes cudaGraphGetNodes
#define gpuGraphNodeGetType cudaGraphNodeGetType
#define gpuGraphAddChildGraphNode cudaGraphAddChildGraphNode
#define gpuGraphAddEmptyNode cudaGraphAddEmptyNode
#if CUDART_VERSION >= 13000
// CUDA 13 added the edge-data argument to the plain name; a list query passes a buffer for it (a
// NULL one is refused as lossy when an edge carries data), a count query needs none.
inline cudaError_t gpuGraphGetEdges(cudaGraph_t g, cudaGraphNode_t* from, cudaGraphNode_t* to, size_t* n) {
    if (!from) return cudaGraphGetEdges(g, nullptr, nullptr, nullptr, n);
    std::vector<cudaGraphEdgeData> data(*n);
    return cudaGraphGetEdges(g, from, to, data.data(), n);
}
#else
#define gpuGraphGetEdges(g, from, to, n) cudaGraphGetEdges((g), (from), (to), (n))
#endif
#define gpuGraphChildGraphNodeGetGraph cudaGraphChildGraphNodeGetGraph
#define gpuGraphKernelNodeGetParams cudaGraphKernelNodeGetParams
#define gpuGraphInstantiate(exec, graph) cudaGraphInstantiate((exec), (graph), 0)
#define gpuGraphExecDestroy cudaGraphExecDestroy
#define gpuGraphLaunch cudaGraphLaunch
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemsetAsync cudaMemsetAsync
#define gpuHostAlloc(p, n, f) cudaHostAlloc((p), (n), (f))
#define gpuFreeHost cudaFreeHost
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuLaunchHostFunc cudaLaunchHostFunc
#define gpuStreamGetCaptureInfo(s, st, id, g, deps, n) \
    cudaStreamGetCaptureInfo((s), (st), (id), (g), (deps), nullptr, (n))
#endif

// Kernel launch syntax: both compilers take the triple-chevron form; this keeps call sites uniform.
#define EAGLE_GPU_LAUNCH(kernel, grid, block, stream, ...) kernel<<<(grid), (block), 0, (stream)>>>(__VA_ARGS__)

#if defined(EAGLE_GPU_HIP)
using gpuDeviceAttr = hipDeviceAttribute_t;
#else
using gpuDeviceAttr = cudaDeviceAttr;
#endif

