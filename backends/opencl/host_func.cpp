// host_func of the opencl backend: fn runs in stream order on the platform's callback thread. A
// marker event's completion callback runs fn, then completes a user event; a barrier that waits
// for the user event holds back the work enqueued after it (and clFinish) until fn has returned.
#include <memory>

#include "common.h"

namespace {
struct HostCall {
    std::function<void()> fn;
    cl_event gate;  // the user event the barrier waits for
};

void CL_CALLBACK run_host_call(cl_event marker, cl_int status, void* data) {
    std::unique_ptr<HostCall> call(static_cast<HostCall*>(data));
    if (status == CL_COMPLETE) {
        try {
            call->fn();
        } catch (...) {
        }
    }
    // An earlier command failed: fn is not run and the work after it fails as well.
    clSetUserEventStatus(call->gate, status == CL_COMPLETE ? CL_COMPLETE : -1);
    clReleaseEvent(call->gate);
    clReleaseEvent(marker);
}
}  // namespace

namespace eagle_opencl {
void enqueue_host_call(Stream& s, std::function<void()> fn) {
    Runtime& rt = runtime();
    cl_int err = CL_SUCCESS;
    cl_event gate = clCreateUserEvent(rt.context, &err);
    cl_check(err, "clCreateUserEvent");
    cl_event marker = nullptr;
    err = clEnqueueMarkerWithWaitList(s.queue, 0, nullptr, &marker);
    if (err != CL_SUCCESS) {
        clReleaseEvent(gate);
        cl_check(err, "clEnqueueMarkerWithWaitList");
    }
    err = clEnqueueBarrierWithWaitList(s.queue, 1, &gate, nullptr);
    auto call = std::make_unique<HostCall>(HostCall{std::move(fn), gate});
    if (err == CL_SUCCESS) err = clSetEventCallback(marker, CL_COMPLETE, run_host_call, call.get());
    if (err != CL_SUCCESS) {
        clSetUserEventStatus(gate, -1);  // the barrier, if enqueued, fails rather than waiting forever
        clReleaseEvent(gate);
        clReleaseEvent(marker);
        cl_check(err, "host_func");
    }
    call.release();  // run_host_call owns it now
}
}  // namespace eagle_opencl

using namespace eagle_opencl;

EAGLE_EXPORT eagle_backend_status eagle_backend_host_func(uint64_t stream, eagle_backend_host_fn fn, void* user_data) {
    return eagle::guarded("eagle_backend_host_func", [&] {
        eagle::require(reinterpret_cast<void*>(fn), "fn");
        enqueue_host_call(stream_of_raw(stream, "stream"), [fn, user_data] { fn(user_data); });
    });
}
