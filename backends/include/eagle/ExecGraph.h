// ExecGraph: what every backend's C++ graph executor provides.
//
// An executor graph is move-only; it owns a scratch byte arena (`arena().allocate(bytes, align)`)
// for node parameters and tables, a native-node dependency table (`dependencies()[i]` lists the
// nodes node i waits for; `add_node(deps)` appends a node and returns its index), and
// `finalize()`, which commits the arena: after it the graph is ready to replay and its arena
// hands out no more memory. Under C++20 this is a concept; under C++17 the trait
// `eagle::is_exec_graph_v<T>` checks the same (detection idiom).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace eagle {

// A bump allocator of stable byte blocks. commit() freezes it; reset() empties and reopens it.
class ByteArena {
public:
    explicit ByteArena(std::size_t chunk_bytes = 4096) : chunk_bytes_(chunk_bytes) {}
    ByteArena(ByteArena&&) noexcept = default;
    ByteArena& operator=(ByteArena&&) noexcept = default;
    ByteArena(const ByteArena&) = delete;
    ByteArena& operator=(const ByteArena&) = delete;

    // Returns `bytes` bytes aligned to `align` (a power of two), valid until reset() or destruction.
    void* allocate(std::size_t bytes, std::size_t align = alignof(std::max_align_t)) {
        if (committed_) throw std::logic_error("ByteArena: allocate after commit");
        if (align == 0 || (align & (align - 1)) != 0) throw std::invalid_argument("ByteArena: bad alignment");
        if (bytes == 0) bytes = 1;
        std::size_t pad = chunks_.empty() ? 0 : (align - (offset_ % align)) % align;
        if (chunks_.empty() || offset_ + pad + bytes > capacity_) {
            const std::size_t cap = std::max(chunk_bytes_, bytes + align);
            chunks_.emplace_back(new unsigned char[cap]);
            capacity_ = cap;
            offset_ = 0;
            const auto base = reinterpret_cast<std::uintptr_t>(chunks_.back().get());
            pad = (align - (base % align)) % align;
        }
        unsigned char* p = chunks_.back().get() + offset_ + pad;
        offset_ += pad + bytes;
        used_ += bytes;
        return p;
    }
    template <class T>
    T* allocate_array(std::size_t n) {
        static_assert(std::is_trivially_copyable_v<T>, "arena arrays hold POD");
        return static_cast<T*>(allocate(sizeof(T) * (n ? n : 1), alignof(T)));
    }
    void commit() noexcept { committed_ = true; }
    bool committed() const noexcept { return committed_; }
    void reset() noexcept {
        chunks_.clear();
        capacity_ = offset_ = used_ = 0;
        committed_ = false;
    }
    std::size_t used() const noexcept { return used_; }

private:
    std::vector<std::unique_ptr<unsigned char[]>> chunks_;
    std::size_t chunk_bytes_;
    std::size_t capacity_ = 0;
    std::size_t offset_ = 0;
    std::size_t used_ = 0;
    bool committed_ = false;
};

namespace detail {
template <class T, class = void>
struct has_exec_graph_api : std::false_type {};

template <class T>
struct has_exec_graph_api<
    T, std::void_t<decltype(std::declval<T&>().arena().allocate(std::size_t{}, std::size_t{})),
                   decltype(std::declval<const T&>().dependencies()),
                   decltype(std::declval<const T&>().dependencies()[std::size_t{}]),
                   decltype(std::declval<T&>().add_node(std::declval<const std::vector<std::uint32_t>&>())),
                   decltype(std::declval<T&>().finalize())>> : std::true_type {};
}  // namespace detail

// True when T is move-only and offers arena(), dependencies(), add_node(deps) and finalize().
template <class T>
inline constexpr bool is_exec_graph_v =
    detail::has_exec_graph_api<T>::value && std::is_move_constructible_v<T> &&
    std::is_move_assignable_v<T> && !std::is_copy_constructible_v<T> && !std::is_copy_assignable_v<T>;

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
}  // namespace eagle
#include <concepts>
namespace eagle {
template <class T>
concept ExecGraph = is_exec_graph_v<T> && requires(T& g, const T& cg, const std::vector<std::uint32_t>& deps) {
    { g.arena().allocate(std::size_t{}, std::size_t{}) } -> std::same_as<void*>;
    cg.dependencies();
    { g.add_node(deps) } -> std::convertible_to<std::size_t>;
    g.finalize();
};
#define EAGLE_CHECK_EXEC_GRAPH(T) static_assert(::eagle::ExecGraph<T>, #T " must satisfy eagle::ExecGraph")
#else
#define EAGLE_CHECK_EXEC_GRAPH(T) static_assert(::eagle::is_exec_graph_v<T>, #T " must satisfy eagle::ExecGraph")
#endif

}  // namespace eagle
