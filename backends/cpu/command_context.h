// The command the calling thread is running for a stream, if any: a stream's worker sets it around
// each command it runs, and a replay carries it to the TaskRunner threads that run its concurrent
// branches. A host function (or anything else running inside a command) that waits on a stream
// uses it so that it never waits for its own command (see Stream::wait_as_caller).
#pragma once

#include <cstdint>

namespace eagle::cpu {

class Stream;

struct CommandContext {
    Stream* stream = nullptr;  // null: the thread runs no command (an application thread)
    uint64_t seq = 0;          // the command's sequence number on `stream` (1, 2, ...)
};

// The calling thread's context (a thread-local).
CommandContext current_command() noexcept;

// Sets the calling thread's context for its lifetime and restores the previous one.
class CommandScope {
public:
    explicit CommandScope(CommandContext ctx) noexcept;
    ~CommandScope();
    CommandScope(const CommandScope&) = delete;
    CommandScope& operator=(const CommandScope&) = delete;

private:
    CommandContext saved_;
};

}  // namespace eagle::cpu
