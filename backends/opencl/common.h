// State shared by the files of the opencl backend (one concept per file: required.cpp the seven
// required symbols, runtime.cpp the platform, device and context, stream.cpp the stream group,
// memory.cpp device and host memory and copies, host_func.cpp host functions, module.cpp
// kernels from source, exec.cpp run_device, device.cpp device_props, interop.cpp fences,
// filtering.cpp compaction, fork.cpp branch streams; recording.h what a capture records,
// capture.cpp the capturer and captured groups, graph.cpp graphs, launcher.cpp their replays on
// cl_khr_command_buffer, attribution.cpp node snapshots).
//
// Device memory is coarse-grained SVM (clSVMAlloc): eagle hands device addresses to kernels as
// uint64 values and does arithmetic on them (plane offsets, eagle.copy with int addresses), and an
// SVM address is one number that means the same on the host and the device, where a cl_mem buffer
// is an opaque object that no integer can name. Every kernel is told the live allocations
// (CL_KERNEL_EXEC_INFO_SVM_PTRS), since it receives them as integers, not as SVM arguments.
#pragma once

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>
// cl_khr_command_buffer's 0.9.0 values, for headers of later revisions that dropped them (the
// simultaneous-use flag; launcher.cpp retries without it where a platform refuses it).
#ifndef CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR
#define CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR (1 << 0)
#endif
#ifndef CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR
#define CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR (1 << 2)
#endif

#include <cstring>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "eagle/backend_kit.h"

namespace eagle_opencl {

// "what: CL_ERROR_NAME (code)".
std::string cl_error(cl_int err, const char* what);
// Throws eagle::Error(status, cl_error(err, what)) unless err is CL_SUCCESS.
void cl_check(cl_int err, const char* what, eagle_backend_status status = EAGLE_BACKEND_ERROR);

// The one device this backend drives: the first device of the first platform with one, or of the
// first platform whose name contains $EAGLE_OPENCL_PLATFORM. Made once, on first use.
struct Runtime {
    cl_platform_id platform = nullptr;
    cl_device_id device = nullptr;
    cl_context context = nullptr;
    std::string platform_name, device_name;
    bool svm_coarse = false;         // CL_DEVICE_SVM_COARSE_GRAIN_BUFFER
    bool fp32_correct_div = false;   // CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT for float
    // Compaction by chunks walked serially (a CPU device, e.g. PoCL: barriers cost more than the
    // bytes there) or by tiles of work-groups (a GPU); $EAGLE_OPENCL_COMPACT=chunks|tiles forces one.
    bool compact_chunks = false;
    unsigned compute_units = 1;      // CL_DEVICE_MAX_COMPUTE_UNITS
    // The -cl-std kernels are built with (runtime.cpp says how it is chosen), and whether
    // module.cpp tells kernel.h which declared parameters are pointers, to be __global (where an
    // unqualified pointer is private: no generic address space).
    std::string cl_std = "-cl-std=CL2.0";
    bool qualify = false;
    // cl_khr_command_buffer (provisional; 0.9.x), what the capture groups replay on. `used` where
    // the device offers a 0.9 version, its entry points resolve, it needs no queue properties
    // and $EAGLE_OPENCL_COMMAND_BUFFER is not 0; else `why_not` says which failed.
    struct CommandBuffers {
        bool used = false;
        std::string why_not;
        std::string version;        // e.g. "0.9.0"
        bool simultaneous = false;  // CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR
        clCreateCommandBufferKHR_fn create = nullptr;
        clFinalizeCommandBufferKHR_fn finalize = nullptr;
        clReleaseCommandBufferKHR_fn release = nullptr;
        clEnqueueCommandBufferKHR_fn enqueue = nullptr;
        clCommandNDRangeKernelKHR_fn ndrange = nullptr;
        clGetCommandBufferInfoKHR_fn info = nullptr;
    } command_buffer;
};
// The runtime, or UNAVAILABLE with the reason (no ICD, no platform, no device, no SVM).
Runtime& runtime();
// OK, or the reason runtime() would fail (never throws).
bool runtime_usable(std::string* why) noexcept;
// Device 0 or -1, else INDEX naming `name`.
void check_device(int32_t device, const char* name);

struct CaptureState;

// A stream: one in-order command queue. `failure` is set by work that failed after it was
// enqueued (an event that completed with an error) and reported by the next synchronize.
struct Stream {
    cl_command_queue queue = nullptr;
    std::mutex mu;
    std::string failure;
    // The default stream's semantics (as CUDA's legacy default stream): a blocking stream's work
    // starts after the default stream's earlier work, and the default stream's after every
    // blocking stream's. Epochs count enqueues, so an order is added only when new work is there.
    bool blocking = false;
    uint64_t epoch = 0;             // enqueues so far
    uint64_t seen_default = 0;      // a blocking stream: the default stream's epoch it is ordered after
    // stream_query: commands submitted so far (work and barriers), how many are known finished,
    // and the marker that will tell when `query_through` of them are (under mu).
    std::atomic<uint64_t> submitted{0};
    uint64_t done_through = 0;
    cl_event query_event = nullptr;
    uint64_t query_through = 0;
    // The stream's host thread (made on its first host function, joined when the stream goes):
    // host functions run there, in order, never on the platform's callback thread, which a
    // host function that blocks would stall for every queue.
    std::thread host_thread;
    std::mutex host_mu;
    std::condition_variable host_cv;
    std::deque<std::function<void()>> host_calls;
    bool host_stop = false;
    // The capture its work is recorded into, while one is (capture_mutex guards it): its own,
    // or, for a fork branch forked under capture, its origin's.
    std::shared_ptr<CaptureState> capture;
    void post_host(std::function<void()> call);
    void stop_host() noexcept;
};
Stream* register_stream(bool blocking);
Stream* lookup_stream(eagle_backend_stream handle, const char* name);
// The stream of a raw value: a live stream's, or the default stream's for 0; BAD_HANDLE otherwise.
Stream& stream_of_raw(uint64_t raw, const char* name);
// stream_of_raw for a call that enqueues work on it: orders it with the default stream first.
Stream& enqueue_stream(uint64_t raw, const char* name);
bool unregister_stream(eagle_backend_stream handle) noexcept;
// Blocks until the stream's work is done; ERROR with the failure of its work.
void finish(Stream& s, const char* what);
// True when s's work so far is done (then nothing is finished yet: see query_into); never waits.
bool query(Stream& s);
// stream_query and launcher_query: *done = 1 when s's work so far is done, then synchronize's
// status and effects (ERROR, reported once, for failed work: *done stays 1); else *done = 0, OK.
void query_into(Stream& s, int32_t* done, const char* what);

// Live SVM allocations: the base address eagle got and the pointer clSVMAlloc gave.
std::vector<void*> live_allocations();
// Counts mem_alloc and mem_free calls: a recorded kernel's list of live allocations is current
// while this is unchanged.
uint64_t allocation_generation();
}  // namespace eagle_opencl

namespace eagle_opencl {
struct Module;
// A kernel of a module: the handle module_function writes is this object's address. Setting the
// arguments and enqueueing is one step under `mu` (a cl_kernel holds its arguments).
struct Kernel {
    cl_kernel kernel = nullptr;
    cl_uint nargs = 0;
    std::vector<char> svm_arg;  // 1: a __global/__constant pointer argument (clSetKernelArgSVMPointer)
    std::mutex mu;
    Module* module = nullptr;
};
// The live kernel of a raw handle, else INVALID_ARGUMENT naming `name`.
Kernel& kernel_of(uint64_t function, const char* name);
}  // namespace eagle_opencl

namespace eagle_opencl {
// Work enqueued on `waiter` from now on starts after the work enqueued on `producer` so far (a
// marker on producer, a barrier waiting for it on waiter); counts the event for event_pool_created.
void order_after(Stream& waiter, Stream& producer);
}  // namespace eagle_opencl

#include <functional>
namespace eagle_opencl {
// Enqueues fn on s in stream order (see host_func.cpp): work after it, and clFinish, wait for it.
// *done (when given) receives an event that completes once fn has returned.
void enqueue_host_call(Stream& s, std::function<void()> fn, cl_event* done = nullptr);
// Builds an OpenCL C source of the backend's own (compaction, reorder) once; its kernel `name`.
cl_kernel own_kernel(const char* source, const char* name);
class Target;
// Sets 8-byte arguments (and 4-byte ones where sizes[i] is 4) and hands k to t (Target::kernel):
// `global` work-items in work-groups of `local` (0: the platform's choice); the caller holds the
// lock that serialises k.
void launch_own(Target& t, cl_kernel k, const std::vector<std::pair<const void*, size_t>>& args, size_t global,
                size_t local = 0);
}  // namespace eagle_opencl

#include "recording.h"
