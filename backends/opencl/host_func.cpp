// host_func of the opencl backend: fn runs in stream order on the stream's host thread. The host
// call is handed to that thread at once; it waits for a marker event enqueued before it
// (clWaitForEvents), runs fn, and then completes a user event; a barrier that waits for the user
// event holds back the work enqueued after it (and clFinish) until fn has returned. The stream's
// host calls run one after another in the order they were enqueued, as their markers complete.
//
// An earlier form handed fn over from the marker's completion callback (clSetEventCallback). On
// NVIDIA's OpenCL (H200, session 12) the callback came intermittently ~18 ms after the marker
// completed, and the barrier behind it stalled the stream that long: the oscillator card took
// 2.8 ms or 20 ms a launch. A blocking wait on the marker wakes as clFinish does.
#include <memory>

#include "common.h"

namespace {
struct HostCall {
    std::function<void()> fn;
    cl_event marker;  // completes when the work enqueued before the host call has
    cl_event gate;    // the user event the barrier waits for
};

void run_host_call(const std::shared_ptr<HostCall>& call) {
    cl_int status = clWaitForEvents(1, &call->marker);
    if (status == CL_SUCCESS)
        clGetEventInfo(call->marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    else
        status = -1;
    clReleaseEvent(call->marker);
    if (status == CL_COMPLETE) {  // else an earlier command failed: fn is not run, the work after it fails too
        try {
            call->fn();
        } catch (...) {
        }
    }
    clSetUserEventStatus(call->gate, status == CL_COMPLETE ? CL_COMPLETE : -1);
    clReleaseEvent(call->gate);
}
}  // namespace

namespace eagle_opencl {
void Stream::post_host(std::function<void()> call) {
    std::lock_guard<std::mutex> lock(host_mu);
    host_calls.push_back(std::move(call));
    if (!host_thread.joinable()) {
        host_thread = std::thread([this] {
            std::unique_lock<std::mutex> lk(host_mu);
            for (;;) {
                host_cv.wait(lk, [this] { return host_stop || !host_calls.empty(); });
                if (host_calls.empty()) return;  // stopped and drained
                auto next = std::move(host_calls.front());
                host_calls.pop_front();
                lk.unlock();
                next();
                lk.lock();
            }
        });
    }
    host_cv.notify_one();
}

void Stream::stop_host() noexcept {
    {
        std::lock_guard<std::mutex> lock(host_mu);
        host_stop = true;
    }
    host_cv.notify_one();
    if (host_thread.joinable()) host_thread.join();
    host_thread = std::thread();
    host_stop = false;
}
}  // namespace eagle_opencl

namespace eagle_opencl {
void enqueue_host_call(Stream& s, std::function<void()> fn, cl_event* done) {
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
    err = clEnqueueBarrierWithWaitList(s.queue, 1, &gate, done);
    if (err == CL_SUCCESS) err = clFlush(s.queue);  // the marker must reach the device for the wait to end
    if (err != CL_SUCCESS) {
        clSetUserEventStatus(gate, -1);  // the barrier, if enqueued, fails rather than waiting forever
        clReleaseEvent(gate);
        clReleaseEvent(marker);
        cl_check(err, "host_func");
    }
    auto call = std::make_shared<HostCall>(HostCall{std::move(fn), marker, gate});
    s.post_host([call] { run_host_call(call); });
}
}  // namespace eagle_opencl

using namespace eagle_opencl;

EAGLE_EXPORT eagle_backend_status eagle_backend_host_func(uint64_t stream, eagle_backend_host_fn fn, void* user_data) {
    return eagle::guarded("eagle_backend_host_func", [&] {
        eagle::require(reinterpret_cast<void*>(fn), "fn");
        Target t(stream, "stream", Node::Kind::Host);  // under capture: a host node run at every replay
        t.host([fn, user_data](Stream&) { fn(user_data); });
        t.commit();
    });
}
