// fork() hooks of the parts of the cpu backend that own a lock or threads. runtime.cpp registers
// one set of pthread_atfork handlers when the library loads and calls each hook from them, in lock
// order (runtime.h, "fork()", says what a forked child gets).
#pragma once

namespace eagle::cpu {

enum class ForkPhase {
    Prepare,  // in the forking thread, before fork(): take the lock (no other thread is inside)
    Parent,   // in the parent after fork(): release it
    Child,    // in the child (its only thread is the forking one): release it, forget threads
};

void node_registry_at_fork(ForkPhase phase) noexcept;     // exec_graph.cpp
void host_allocations_at_fork(ForkPhase phase) noexcept;  // memory.cpp
void thread_pool_at_fork(ForkPhase phase) noexcept;       // thread_pool.cpp: the pool and the runner

}  // namespace eagle::cpu
