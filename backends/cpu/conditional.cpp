// Group conditional (bit 4) and conditional_begin_case (minor 4): IF, WHILE and SWITCH nodes whose
// guard words are read from (host) memory every time the node is reached in a replay.
#include <atomic>

#include "runtime.h"

using namespace eagle;
using namespace eagle::cpu;

namespace eagle::cpu {

// ---------------------------------------------------------------- the node

ConditionalNode::ConditionalNode(const eagle_backend_conditional_desc& d) : Node(Type::Conditional), d_(d) {
    const size_t n = d.case_count ? d.case_count : 1;
    for (size_t i = 0; i < n; ++i) {
        bodies_.push_back(std::make_shared<Graph>());
        bodies_.back()->finalize();
    }
}

ConditionalNode::~ConditionalNode() = default;

namespace {
inline uint32_t load_word(uint64_t addr) {
    return reinterpret_cast<const std::atomic<uint32_t>*>(addr)->load(std::memory_order_acquire);
}
inline void store_word(uint64_t addr, uint32_t v) {
    reinterpret_cast<std::atomic<uint32_t>*>(addr)->store(v, std::memory_order_release);
}
}  // namespace

bool ConditionalNode::guard() const {
    const uint32_t count = load_word(d_.count_ptr);
    const uint32_t baseline = d_.baseline_ptr ? load_word(d_.baseline_ptr) : 0u;
    return count != baseline;
}

void ConditionalNode::run(const RunSettings* rs) const {
    if (is_switch()) {
        const uint32_t sel = load_word(d_.count_ptr);
        if (sel < d_.case_count) bodies_[sel]->run(rs);
        return;
    }
    if (!is_loop()) {
        if (guard()) bodies_[0]->run(rs);
        return;
    }
    const uint64_t remaining = d_.counter_ptr;
    const uint64_t ran = d_.counter_ptr + sizeof(uint32_t);
    store_word(remaining, d_.loop_cap);
    store_word(ran, 0);
    while (guard() && load_word(remaining) > 0) {
        bodies_[0]->run(rs);
        store_word(remaining, load_word(remaining) - 1);
        store_word(ran, load_word(ran) + 1);
    }
}

int64_t ConditionalNode::kernel_count() const {
    int64_t total = 0;
    for (auto& b : bodies_) total += b->kernel_count();
    return total;
}

void ConditionalNode::collect(std::unordered_set<const Node*>& out) const {
    out.insert(this);
    for (auto& b : bodies_) b->collect(out);
}

// ---------------------------------------------------------------- the handle

class Conditional : public Object {
public:
    static constexpr Kind kKind = Kind::Conditional;
    Conditional() : Object(kKind) {}
    std::shared_ptr<ConditionalNode> node;
    std::shared_ptr<CaptureState> origin_cap;  // the capture the node was recorded in
    std::shared_ptr<Stream> body;              // one body stream, re-targeted per case
    std::shared_ptr<CaptureState> body_cap;    // the open body, if any
    std::vector<bool> opened;
    bool begun = false;
    bool ended = false;

    // Closes the open body (capture_mutex held).
    void close_body() {
        if (!body_cap) return;
        if (body_cap->attached_branches > 0) body_cap->brk("a fork forked in a conditional body was not joined");
        if (body_cap->open_bodies > 0) body_cap->brk("a nested conditional body was still open");
        body_cap->ended = true;
        body_cap->graph->finalize();
        --origin_cap->open_bodies;
        body->capture.reset();
        body->tail.clear();
        body_cap.reset();
    }

    // Opens body `i` (capture_mutex held) and returns the body stream's raw value.
    uint64_t open_case(uint32_t i) {
        if (ended) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the conditional has ended");
        if (origin_cap->ended)
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capture the conditional was recorded in has ended");
        close_body();
        auto cap = std::make_shared<CaptureState>();
        cap->graph = node->body(i);
        cap->parent = origin_cap;
        ++origin_cap->open_bodies;
        body->capture = cap;
        body->tail.clear();
        body_cap = std::move(cap);
        opened[i] = true;
        begun = true;
        return body->raw();
    }
};

}  // namespace eagle::cpu

EAGLE_EXPORT eagle_backend_status eagle_backend_conditional_create(const eagle_backend_conditional_desc* desc,
                                                                   eagle_backend_conditional* out) {
    return guarded("eagle_backend_conditional_create", [&] {
        const auto d = read_desc(desc, "desc");
        require(out, "out");
        check_flags(d.flags, 0, "desc->flags");
        check_device(d.device, "desc->device");
        if (!d.count_ptr) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->count_ptr is 0");
        if (d.case_count) {
            if (d.baseline_ptr || d.counter_ptr)
                fail(EAGLE_BACKEND_INVALID_ARGUMENT, "a SWITCH (case_count > 0) needs baseline_ptr == counter_ptr == 0");
            if (d.case_count > 65536)
                fail(EAGLE_BACKEND_UNSUPPORTED, "desc->case_count exceeds the cpu backend's limit of 65536");
        } else if (d.counter_ptr && d.loop_cap < 1) {
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "a WHILE needs desc->loop_cap >= 1");
        }
        auto origin = resolve_stream(d.origin, "desc->origin");
        auto c = make_object<Conditional>();
        c->node = std::make_shared<ConditionalNode>(d);
        c->opened.assign(c->node->body_count(), false);
        std::lock_guard<std::recursive_mutex> lock(capture_mutex());
        auto cap = active_capture(*origin);
        if (!cap) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->origin is not being captured");
        c->body = make_stream(Stream::Role::Body, false);
        record(*origin, *cap, c->node);
        c->origin_cap = std::move(cap);
        register_object(c);
        *out = reinterpret_cast<eagle_backend_conditional>(c.get());
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_conditional_begin(eagle_backend_conditional conditional,
                                                                  uint64_t* body_stream) {
    return guarded("eagle_backend_conditional_begin", [&] {
        require(body_stream, "body_stream");
        auto c = lookup<Conditional>(conditional, "conditional");
        std::lock_guard<std::recursive_mutex> lock(capture_mutex());
        if (c->begun) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the conditional has already begun");
        *body_stream = c->open_case(0);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_conditional_begin_case(eagle_backend_conditional conditional,
                                                                       uint32_t index, uint64_t* body_stream) {
    return guarded("eagle_backend_conditional_begin_case", [&] {
        require(body_stream, "body_stream");
        auto c = lookup<Conditional>(conditional, "conditional");
        if (!c->node->is_switch())
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "begin_case needs a SWITCH; this conditional is an IF or WHILE");
        if (index >= c->node->body_count())
            fail(EAGLE_BACKEND_INDEX, "case " + std::to_string(index) + " of a SWITCH of " +
                                          std::to_string(c->node->body_count()));
        std::lock_guard<std::recursive_mutex> lock(capture_mutex());
        if (c->opened[index])
            fail(EAGLE_BACKEND_INVALID_ARGUMENT, "case " + std::to_string(index) + " was already opened");
        *body_stream = c->open_case(index);
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_conditional_body_stream(eagle_backend_conditional conditional,
                                                                        uint64_t* body_stream) {
    return guarded("eagle_backend_conditional_body_stream", [&] {
        require(body_stream, "body_stream");
        auto c = lookup<Conditional>(conditional, "conditional");
        std::lock_guard<std::recursive_mutex> lock(capture_mutex());
        if (!c->body_cap) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "no body of the conditional is open");
        *body_stream = c->body->raw();
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_conditional_is_loop(eagle_backend_conditional conditional,
                                                                    int32_t* is_loop) {
    return guarded("eagle_backend_conditional_is_loop", [&] {
        require(is_loop, "is_loop");
        *is_loop = lookup<Conditional>(conditional, "conditional")->node->is_loop() ? 1 : 0;
    });
}

EAGLE_EXPORT eagle_backend_status eagle_backend_conditional_end(eagle_backend_conditional conditional) {
    return guarded("eagle_backend_conditional_end", [&] {
        auto c = lookup<Conditional>(conditional, "conditional");
        std::lock_guard<std::recursive_mutex> lock(capture_mutex());
        if (c->ended) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the conditional has already ended");
        c->close_body();
        c->ended = true;
    });
}

EAGLE_EXPORT void eagle_backend_conditional_release(eagle_backend_conditional conditional) {
    guarded_void([&] {
        auto c = take<Conditional>(conditional);
        if (!c) return;
        {
            std::lock_guard<std::recursive_mutex> lock(capture_mutex());
            if (c->body_cap) {
                c->body_cap->brk("a conditional was released with its body open");
                c->close_body();
            }
            c->ended = true;
        }
        retire_stream(c->body);
    });
}
