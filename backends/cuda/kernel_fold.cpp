// kernel_fold.cpp -- the kernel WHILE fold (cuda): a WHILE body whose last word is a kernel
// compiled from EAGLE_KERNEL ends with that kernel's `eagle_while_end_<N>_<name>` entry
// (eagle/kernel.h), which takes the loop's decision itself, instead of with a setter kernel: one
// node an iteration fewer.
//
// How: module.cpp tells us each kernel handle it hands out whose module also has that entry.
// run_device offers every such node it captures into a WHILE body (conditional.cu keeps the
// bodies being captured); when the body ends and that node is its last word, the node is rewritten
// to launch that entry with five hidden arguments after the partition triple: the condition
// handle, the guard words, the [remaining, ran] cell and a ticket word (how a grid of several
// blocks finds its last block). Its kernel record is replaced too, so a launcher that re-partitions
// the node keeps the entry and its hidden arguments.
//
// Ticket words are device memory, 4096 to a slab, zero-filled once; a slab is never freed. A word
// is lent to one folded node for as long as any graph or exec holds that node: a CUDA user object
// retained by the graph of the outermost capture owns the loan (instantiation and cloning take
// references too), and its destructor -- host-only, as the runtime requires -- puts the word back.
// The entry leaves its word at zero after every launch, so a word is zero whenever it is lent.
#include <cuda_runtime.h>

#include <cstring>

#include "gpu.h"

namespace eagle::gpu {
namespace {

// ---------------------------------------------------------------- kernels with a WHILE-end variant
std::mutex g_variants_mu;
struct Variant {
    uint64_t entry = 0;  // eagle_while_end_<N>_<name>
    int64_t nargs = 0;   // N: the kernel's declared arguments
};
std::unordered_map<uint64_t, Variant> g_variants;  // by kernel handle
std::atomic<size_t> g_variant_count{0};            // g_variants.size(), read without the lock

Variant variant_of(uint64_t function) {
    if (g_variant_count.load(std::memory_order_relaxed) == 0) return {};
    std::lock_guard<std::mutex> lk(g_variants_mu);
    auto it = g_variants.find(function);
    return it == g_variants.end() ? Variant{} : it->second;
}

// ---------------------------------------------------------------- ticket words
constexpr size_t kSlabWords = 4096;

struct TicketPool {
    // `mu` guards `free` only and is never held across a CUDA call: the runtime may run a user
    // object's destructor (give_back, which takes `mu`) inside another thread's CUDA call.
    std::mutex mu;
    std::unordered_map<int, std::vector<uint32_t*>> free;  // by device
    std::mutex grow_mu;                                    // one slab fill at a time
    std::unordered_map<int, cudaStream_t> zeroing;         // a private stream per device (grow_mu)
};
// Never destroyed: the runtime may run a user object's destructor while the process exits.
TicketPool& pool() {
    static TicketPool* p = new TicketPool;
    return *p;
}

// Adds a zero-filled slab to `device`'s free words. The fill goes through a private non-blocking
// stream, so it neither joins nor breaks a capture in progress on another stream.
void grow(TicketPool& p, int device) {
    std::lock_guard<std::mutex> grow_lock(p.grow_mu);
    DeviceGuard guard(device);
    cudaStream_t& z = p.zeroing[device];
    if (!z) check(cudaStreamCreateWithFlags(&z, cudaStreamNonBlocking), "streamCreateWithFlags(ticket fill)");
    void* slab = nullptr;
    check(cudaMalloc(&slab, kSlabWords * sizeof(uint32_t)), "malloc(ticket slab)");
    gpuError_t e = cudaMemsetAsync(slab, 0, kSlabWords * sizeof(uint32_t), z);
    if (e == cudaSuccess) e = cudaStreamSynchronize(z);
    if (e != cudaSuccess) {
        (void)cudaFree(slab);
        check(e, "memset(ticket slab)");
    }
    auto* words = static_cast<uint32_t*>(slab);
    std::lock_guard<std::mutex> lk(p.mu);
    std::vector<uint32_t*>& f = p.free[device];
    for (size_t i = kSlabWords; i-- > 0;) f.push_back(words + i);
}

// Grows `device`'s words to at least one free (learn time: outside captures as a rule).
void ensure_words(int device) {
    TicketPool& p = pool();
    {
        std::lock_guard<std::mutex> lk(p.mu);
        if (!p.free[device].empty()) return;
    }
    grow(p, device);
}

uint32_t* take_word(int device) {
    TicketPool& p = pool();
    for (;;) {
        {
            std::lock_guard<std::mutex> lk(p.mu);
            std::vector<uint32_t*>& f = p.free[device];
            if (!f.empty()) {
                uint32_t* w = f.back();
                f.pop_back();
                return w;
            }
        }
        grow(p, device);
    }
}

struct Loan {
    uint32_t* word;
    int device;
};

// The user object's destructor: the word goes back to its device's free words.
void give_back(void* raw) {
    auto* loan = static_cast<Loan*>(raw);
    {
        TicketPool& p = pool();
        std::lock_guard<std::mutex> lk(p.mu);
        p.free[loan->device].push_back(loan->word);
    }
    delete loan;
}

// Lends a ticket word to the graph `owner` (a user object it retains); nullptr on failure, with
// the runtime's last error cleared.
uint32_t* lend_word(int device, gpuGraph_t owner) noexcept {
    Loan* loan = nullptr;
    try {
        loan = new Loan{take_word(device), device};
    } catch (...) {
        (void)cudaGetLastError();
        return nullptr;
    }
    cudaUserObject_t obj{};
    if (cudaUserObjectCreate(&obj, loan, give_back, 1, cudaUserObjectNoDestructorSync) != cudaSuccess) {
        (void)cudaGetLastError();
        give_back(loan);
        return nullptr;
    }
    uint32_t* word = loan->word;
    if (cudaGraphRetainUserObject(owner, obj, 1, cudaGraphUserObjectMove) != cudaSuccess) {
        (void)cudaGetLastError();
        (void)cudaUserObjectRelease(obj, 1);  // its destructor gives the word back
        return nullptr;
    }
    return word;
}

// Rewrites an offered node to launch the WHILE-end entry (FoldEnabler, gpu.h).
struct KernelFold final : FoldEnabler {
    KernelFold(gpuGraphNode_t n, KernelRecordPtr r, uint64_t v, const WhileFold& l, int d)
        : node(n), rec(std::move(r)), variant(v), loop(l), device(d) {}

    gpuError_t enable() noexcept override {
        uint32_t* ticket = lend_word(device, loop.root);
        if (!ticket) return cudaErrorMemoryAllocation;
        try {
            auto folded = std::make_shared<KernelRecord>(*rec);
            folded->function = variant;
            const uint64_t hidden[5] = {loop.handle, reinterpret_cast<uintptr_t>(loop.count),
                                        reinterpret_cast<uintptr_t>(loop.baseline),
                                        reinterpret_cast<uintptr_t>(loop.cell), reinterpret_cast<uintptr_t>(ticket)};
            size_t off = (folded->storage.size() + 7) / 8 * 8;
            folded->storage.resize(off + sizeof hidden);
            for (int k = 0; k < 5; ++k) {
                folded->offsets.push_back(static_cast<uint32_t>(off));
                std::memcpy(folded->storage.data() + off, &hidden[k], 8);
                off += 8;
            }
            folded->hidden = 5;
            std::vector<void*> args(folded->offsets.size());
            for (size_t i = 0; i < args.size(); ++i) args[i] = folded->storage.data() + folded->offsets[i];
            const int64_t blocks = (folded->count + folded->block - 1) / folded->block;
            const int r = native::graph_set_kernel(node, variant, static_cast<uint32_t>(blocks), folded->block,
                                                   args.data());
            if (r != 0) return cudaErrorInvalidValue;  // the word stays lent to the graph, unused
            record_kernel(node, std::move(folded));
            return cudaSuccess;
        } catch (...) {
            return cudaErrorMemoryAllocation;
        }
    }

    gpuGraphNode_t node;
    KernelRecordPtr rec;
    uint64_t variant;
    WhileFold loop;
    int device;
};

}  // namespace

void kernel_fold_learn(uint64_t function, uint64_t while_end, int64_t nargs, int device) noexcept {
    try {
        // The entry must be the header's: the kernel's nargs + 3 parameters, then five 8-byte words
        // (a kernel of the user's that merely has the name is never launched with eagle's words).
        if (nargs < 0 || nargs > 64) return;
        for (int64_t i = nargs + 3; i < nargs + 8; ++i)
            if (native::param_size(while_end, i) != 8) return;
        ensure_words(device);
        std::lock_guard<std::mutex> lk(g_variants_mu);
        g_variants[function] = Variant{while_end, nargs};
        g_variant_count.store(g_variants.size(), std::memory_order_relaxed);
    } catch (...) {  // no fold for this kernel then
        (void)cudaGetLastError();
    }
}

void kernel_fold_forget(uint64_t function) noexcept {
    std::lock_guard<std::mutex> lk(g_variants_mu);
    g_variants.erase(function);
    g_variant_count.store(g_variants.size(), std::memory_order_relaxed);
}

void offer_kernel_fold(gpuStream_t s, gpuGraphNode_t node, const KernelRecordPtr& rec, int device) noexcept {
    WhileFold loop;  // first: one relaxed atomic load when no WHILE body is open anywhere
    if (!while_body_target(s, &loop) || !loop.root) return;
    const Variant v = variant_of(rec->function);
    // Only a launch with the kernel's own arguments (the entry's hidden words follow them).
    if (!v.entry || rec->hidden != 0 || rec->offsets.size() != static_cast<size_t>(v.nargs) + 3) return;
    try {
        while_fold_offer(loop.body, node, std::make_unique<KernelFold>(node, rec, v.entry, loop, device));
    } catch (...) {  // no fold: the body ends with the setter
    }
}

}  // namespace eagle::gpu
