// Groups capturer (bit 1) and captured (bit 2): record a stream's work into a graph.
#include "runtime.h"

using namespace eagle;
using namespace eagle::cpu;

namespace eagle::cpu {

class Capturer : public Object {
public:
    static constexpr Kind kKind = Kind::Capturer;
    explicit Capturer(std::shared_ptr<Stream> s) : Object(kKind), stream(std::move(s)) {}
    std::shared_ptr<Stream> stream;
    std::shared_ptr<CaptureState> cap;  // while begun
};

class Captured : public Object {
public:
    static constexpr Kind kKind = Kind::Captured;
    explicit Captured(std::shared_ptr<Graph> g) : Object(kKind), graph(std::move(g)) {}
    std::shared_ptr<Graph> graph;
};

// Used by graph.cpp: takes the captured work (consuming the handle) once the caller has checked it.
std::shared_ptr<Graph> captured_graph(eagle_backend_captured captured) {
    auto c = lookup<Captured>(captured, "captured");
    if (c->graph->size() == 0)
        fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capture is empty (it recorded no node)");
    return c->graph;
}

void consume_captured(eagle_backend_captured captured) noexcept { unregister_object(captured); }

}  // namespace eagle::cpu

EAGLE_EXPORT eagle_backend_status eagle_backend_capturer_create(const eagle_backend_capturer_desc* desc,
                                                                eagle_backend_capturer* out) {
    return guarded("eagle_backend_capturer_create", [&] {
        const auto d = read_desc(desc, "desc");
        require(out, "out");
        check_flags(d.flags, 0, "desc->flags");
        check_device(d.device, "desc->device");
        auto s = resolve_stream(d.stream, "desc->stream");
        if (s->role == Stream::Role::Body)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->stream is a conditional body stream; it is captured already");
        auto c = make_object<Capturer>(std::move(s));
        register_object(c);
        *out = reinterpret_cast<eagle_backend_capturer>(c.get());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_capturer_begin(eagle_backend_capturer capturer) {
    return guarded("eagle_backend_capturer_begin", [&] {
        auto c = lookup<Capturer>(capturer, "capturer");
        std::lock_guard<std::recursive_mutex> lock(capture_mutex());
        if (c->cap) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capturer has already begun");
        Stream& s = *c->stream;
        if (s.capture && !s.capture->ended)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the stream is already being captured");
        if (!find_stream(s.raw())) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capturer's stream was released");
        auto cap = std::make_shared<CaptureState>();
        cap->graph = std::make_shared<Graph>();
        s.capture = cap;
        s.tail.clear();
        c->cap = std::move(cap);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_capturer_end(eagle_backend_capturer capturer,
                                                             eagle_backend_captured* out) {
    return guarded("eagle_backend_capturer_end", [&] {
        require(out, "out");
        auto c = lookup<Capturer>(capturer, "capturer");
        std::shared_ptr<CaptureState> cap;
        {
            std::lock_guard<std::recursive_mutex> lock(capture_mutex());
            if (!c->cap) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capture was not begun");
            cap = std::move(c->cap);
            c->cap.reset();
            Stream& s = *c->stream;
            if (s.capture == cap) {
                s.capture.reset();
                s.tail.clear();
            }
            cap->ended = true;
            if (cap->attached_branches > 0) cap->brk("a fork forked during the capture was not joined");
            if (cap->open_bodies > 0) cap->brk("a conditional body was still open");
            if (cap->broken) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capture was broken: " + cap->why);
        }
        cap->graph->finalize();
        auto captured = make_object<Captured>(cap->graph);
        register_object(captured);
        *out = reinterpret_cast<eagle_backend_captured>(captured.get());
    });
}

EAGLE_EXPORT void eagle_backend_capturer_release(eagle_backend_capturer capturer) {
    guarded_void([&] {
        auto c = take<Capturer>(capturer);
        if (!c) return;
        std::lock_guard<std::recursive_mutex> lock(capture_mutex());
        if (c->cap) {
            c->cap->brk("the capturer was released during the capture");
            c->cap->ended = true;
            if (c->stream->capture == c->cap) {
                c->stream->capture.reset();
                c->stream->tail.clear();
            }
            c->cap.reset();
        }
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_captured_is_valid(eagle_backend_captured captured,
                                                                  int32_t* valid) {
    return guarded("eagle_backend_captured_is_valid", [&] {
        require(valid, "valid");
        auto c = lookup<Captured>(captured, "captured");
        *valid = c->graph->size() > 0 ? 1 : 0;
    });
}

EAGLE_EXPORT void eagle_backend_captured_release(eagle_backend_captured captured) {
    guarded_void([&] {
        take<Captured>(captured);
    });
}
