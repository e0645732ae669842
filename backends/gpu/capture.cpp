// capture.cpp -- capturer (bit 1) and captured (bit 2): stream capture into a graph.
#include "gpu.h"

using namespace eagle;
using namespace eagle::gpu;

EAGLE_EXPORT eagle_backend_status eagle_backend_capturer_create(const struct eagle_backend_capturer_desc* desc,
                                                                eagle_backend_capturer* out) {
    return guarded("eagle_backend_capturer_create", [&] {
        auto d = read_desc(desc, "desc");
        require(out, "out");
        check_flags(d.flags, 0, "capturer desc->flags");
        if (d.stream == 0)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the legacy default stream (0) cannot be captured; use a created stream");
        auto c = std::make_unique<Capturer>();
        c->device = resolve_device(d.device, d.stream, true);
        c->s = as_stream(d.stream);
        *out = publish<eagle_backend_capturer>(c);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_capturer_begin(eagle_backend_capturer capturer) {
    return guarded("eagle_backend_capturer_begin", [&] {
        auto* c = from_handle<Capturer>(capturer, "capturer");
        if (c->begun || is_capturing(c->s)) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the stream is already being captured");
        DeviceGuard guard(c->device);
        check(gpuStreamBeginCapture(c->s, gpuStreamCaptureModeRelaxed), "streamBeginCapture");
        c->begun = true;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_capturer_end(eagle_backend_capturer capturer,
                                                             eagle_backend_captured* out) {
    return guarded("eagle_backend_capturer_end", [&] {
        auto* c = from_handle<Capturer>(capturer, "capturer");
        require(out, "out");
        if (!c->begun) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capture was not begun");
        DeviceGuard guard(c->device);
        gpuGraph_t g = nullptr;
        gpuError_t e = gpuStreamEndCapture(c->s, &g);
        c->begun = false;
        if (e != gpuSuccess || !g) {
            (void)gpuGetLastError();
            if (g) (void)gpuGraphDestroy(g);
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, std::string("the capture was broken by misuse: ") + gpuGetErrorName(e) +
                                                     ": " + gpuGetErrorString(e));
        }
        auto cap = std::make_unique<Captured>();
        cap->g = g;
        cap->device = c->device;
        *out = publish<eagle_backend_captured>(cap);
        finish_deferred_launchers();
    });
}

EAGLE_EXPORT void eagle_backend_capturer_release(eagle_backend_capturer capturer) {
    guarded_void([&] {
        std::unique_ptr<Capturer> c(retire<Capturer>(capturer));
        if (!c) return;  // NULL, released or foreign
        if (c->begun) {
            DeviceGuard guard(c->device);
            // An abandoned conditional body may have ended the capture already: end only one
            // that is still open (no API error left behind for a sanitizer or the next call).
            gpuStreamCaptureStatus status = gpuStreamCaptureStatusNone;
            if (gpuStreamIsCapturing(c->s, &status) == gpuSuccess && status != gpuStreamCaptureStatusNone) {
                gpuGraph_t g = nullptr;
                if (gpuStreamEndCapture(c->s, &g) == gpuSuccess && g) {
                    forget_nodes(g);
                    (void)gpuGraphDestroy(g);
                }
            }
            (void)gpuGetLastError();
        }
        finish_deferred_launchers();
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_captured_is_valid(eagle_backend_captured captured, int32_t* valid) {
    return guarded("eagle_backend_captured_is_valid", [&] {
        auto* c = from_handle<Captured>(captured, "captured");
        require(valid, "valid");
        size_t n = 0;
        check(gpuGraphGetNodes(c->g, nullptr, &n), "graphGetNodes");
        *valid = n > 0 ? 1 : 0;
    });
}

EAGLE_EXPORT void eagle_backend_captured_release(eagle_backend_captured captured) {
    guarded_void([&] {
        std::unique_ptr<Captured> c(retire<Captured>(captured));
        if (!c) return;  // NULL, released, consumed or foreign
        DeviceGuard guard(c->device);
        c.reset();
    });
}
