"""What each check enforces: the sentences of eagle_backend.h it cites.

Every registered check has an entry here: one or more ``Cite(where, quote, since)``. ``where`` is
the declaration the sentence is written beside -- a function's short name (``stream_create``), a
struct (``struct stream_desc``), a macro (``EAGLE_BACKEND_BAD_HANDLE``) or ``general`` (the general
rules at the top of the header) -- and ``quote`` is a short passage of that comment, as written
(whitespace and comment leaders aside). ``since`` is the minor from which the sentence applies: 0
for the 1.0 text, or the N of a ``(since minor N)`` the sentence itself carries, for a behavioural
rule added later. The checker applies a check only to a backend whose ``version()`` minor is at
least the largest ``since`` of its cites (an older backend gets ``skip``, naming the minor).

tests/test_check_citations.py parses the header and fails when a check cites nothing, when a quote
is not in the comment of its ``where``, or when ``since`` disagrees with the sentence.

A check registered with ``advice=True`` cites the sentence its advice starts from; its findings
are reported as ``advice``, never as a failure."""
from typing import NamedTuple


class Cite(NamedTuple):
    where: str
    quote: str
    since: int = 0


def _c(where, *quotes, since=0):
    return tuple(Cite(where, q, since) for q in quotes)


# -- sentences many checks cite ----------------------------------------------------------------
MESSAGE = _c("general", "A failed call leaves a message in the thread-local eagle_backend_last_error()")
DESC = _c("general", "the callee reads only the fields that fit and takes the rest as zero")
OUT_STRUCT = _c("general", "the callee writes min(caller size, callee size) bytes, never beyond, and "
                           "writes that size back into struct_size")
FLAGS = _c("general", "A flag bit the backend does not know is refused with UNSUPPORTED, never ignored.")
RELEASE_NULL = _c("general", "Every *_release is NULL-safe and returns nothing.")
CONSUMING = _c("general", "takes ownership of it on OK only; on any other status the caller still owns it")
FREE = _c("general", "Buffers the backend allocates for the caller are freed with eagle_backend_free().")
BAD_ARG = _c("EAGLE_BACKEND_INVALID_ARGUMENT", "An argument is out of its documented domain "
                                               "(NULL output pointer, bad size, bad value).")
RELEASED_HANDLE = _c("EAGLE_BACKEND_BAD_HANDLE", "A handle is not one this backend made, or has been released or consumed.")
STATUSES = _c("general", "Every function returns an eagle_backend_status unless stated.")
GROUP_WHOLE = _c("EAGLE_BACKEND_CAP_STREAM", "A set bit promises every 1.0 symbol of its group.")
PER_SYMBOL = _c("EAGLE_BACKEND_CAP_STREAM", "Symbols added after 1.0 are bound one by one: their presence is the capability.")
STREAM_ORDER = _c("stream_create", "Creates an in-order stream on desc->device.")
SYNC_WAITS = _c("stream_synchronize", "Blocks until all work enqueued on the stream has finished.")
RECORDED = _c("capturer_begin", "From now on work enqueued on the stream is recorded, not run.")
LAUNCH = _c("launcher_launch", "Enqueues one replay on the launcher's stream and returns without waiting.")
RUN_DEVICE = _c("run_device", "One launch of desc->function over [base, base + count) on desc->stream, "
                              "enqueued (or captured).")
GUARD = _c("struct conditional_desc", "the region runs iff *count != (*baseline, or 0 when baseline_ptr is 0)",
           "read when the node is reached in a replay, never by the host at record time")
KERNEL_HANDLE = _c("module_function", "Writes the kernel handle of the kernel `name` in `module` to *function.")
MEM = _c("mem_alloc", "writes its device address, aligned to at least 256 bytes, to *address")
MEMCPY = _c("memcpy", "Enqueues a copy of `bytes` from src to dst in `direction` (EAGLE_BACKEND_MEMCPY_*) on raw "
                      "`stream`")
COMPILE = _c("module_from_source", "Compiles `source` (source_bytes bytes; it need not be NUL-terminated) with "
                                   "the kind's own compiler")


def _release_null(fn):
    return RELEASE_NULL + _c(fn, "NULL-safe")


CITES = {
    # ---------------------------------------------------------------- static
    "static.loadable": _c("general", "eagle (the Python core) talks to a backend library `libeagle_<kind>.so` "
                                     "only through the functions declared here."),
    "static.exports_seam": _c("general", "eagle (the Python core) talks to a backend library `libeagle_<kind>.so` "
                                         "only through the functions declared here."),
    "static.exports_promised": GROUP_WHOLE + PER_SYMBOL,
    # advice: extra exports and NEEDED entries do not stop eagle from loading a backend
    "static.exports_pinned": _c("general", "the pinned symbol list, every backend's linker version script"),
    "static.needed": _c("probe", "never crashes when the driver is absent"),
    # ---------------------------------------------------------------- required
    "required.symbols": _c("version", "Returns EAGLE_BACKEND_VERSION as the backend was built"),
    "required.version_major": _c("version", "(major << 16) | minor"),
    "required.reserved_bits": _c("EAGLE_BACKEND_CAP_STREAM", "Bit 8 and bits 13..62 are reserved and must be "
                                                             "clear; bit 63 is never assigned."),
    "required.groups_whole": GROUP_WHOLE,
    "required.build_info_struct_size": OUT_STRUCT + _c("build_info", "Fills *info (output struct rules)."),
    "required.build_info_null": _c("build_info", "INVALID_ARGUMENT for NULL or struct_size < 4."),
    "required.build_info_fields": _c("struct build_info", "Strings are NUL-terminated and truncated to fit.",
                                     "the EAGLE_BACKEND_VERSION the backend was built against",
                                     'the kind, e.g. "cpu", "cuda", "hip"'),
    "required.device_types_cap": _c("device_types", "nothing is written past types[cap-1]",
                                    "INVALID_ARGUMENT for a NULL count or a negative cap."),
    "required.capabilities_null": _c("capabilities", "INVALID_ARGUMENT for NULL."),
    "required.last_error_after_failure": MESSAGE + _c("last_error", 'Returns the calling thread\'s message of '
                                                                    'the last failed call, "" if none.'),
    "required.last_error_thread_local": MESSAGE + _c("last_error", "Returns the calling thread's message"),
    "required.last_error_pointer_kept": _c("last_error", "The string is owned by the backend and valid until "
                                                         "the next seam call on this thread."),
    "required.capabilities_note_on_ok": _c("capabilities", "On OK it also sets last_error to a note",
                                           'or to "" when nothing is left out'),
    "required.free_null": _c("free", "NULL is a no-op."),
    "required.left_out_reasons": _c("capabilities", "one `name: reason` line each"),
    "required.handshake": _c("probe", "OK when a device of this kind is usable; UNAVAILABLE with the reason "
                                      "otherwise.") + _c("version", "Never fails."),
    # ---------------------------------------------------------------- stream
    "stream.release_null": _release_null("stream_release"),
    "stream.unknown_flags": FLAGS + _c("stream_create", "UNSUPPORTED for an unknown flag"),
    "stream.order": STREAM_ORDER,
    "stream.synchronize_waits": SYNC_WAITS,
    "stream.release_waits": _c("stream_release", "Waits for the stream's work, then destroys it."),
    "stream.create_and_ptr": _c("stream_ptr", "Writes the stream's raw value (e.g. a cudaStream_t) to *raw; "
                                              "valid while the stream lives.")
                             + _c("stream_create", "INDEX for a device that does not exist."),
    "stream.bad_handle": RELEASED_HANDLE,
    "stream.null_out": BAD_ARG + DESC,
    "stream.desc_read_to_struct_size": DESC,
    "stream.non_blocking": _c("EAGLE_BACKEND_STREAM_NON_BLOCKING",
                              "the stream does not synchronise with the kind's default stream."),
    "stream.default_stream_order": _c("EAGLE_BACKEND_STREAM_NON_BLOCKING",
                                      "Without it, where the kind has a default stream (raw value 0), work "
                                      "enqueued on the stream waits for the default stream's earlier work, and "
                                      "work enqueued on the default stream waits for the stream's earlier work "
                                      "(since minor 8)", since=8),
    "stream.failed_work_surfaces": _c("stream_synchronize", "ERROR when that work failed"),
    "stream.release_frees": _c("stream_release", "Waits for the stream's work, then destroys it."),
    # ---------------------------------------------------------------- capturer / captured
    "capturer.release_null": _release_null("capturer_release"),
    "capturer.unknown_flags": FLAGS + _c("struct capturer_desc", "No flags are defined."),
    "capturer.replay_matches_eager": RECORDED + LAUNCH,
    "capturer.misuse": _c("capturer_begin", "INVALID_ARGUMENT when the stream is already being captured.")
                       + _c("capturer_end", "INVALID_ARGUMENT when the capture was not begun")
                       + _c("stream_synchronize", "INVALID_ARGUMENT while the stream is being captured."),
    "capturer.release_abandons": _c("capturer_release", "a capture still in progress is abandoned."),
    "capturer.end_broken": _c("capturer_end", "or was broken by misuse (then nothing is returned)")
                           + _c("conditional_release", "an open body is abandoned, breaking the capture"),
    "capturer.bad_handle": RELEASED_HANDLE,
    "captured.release_null": _release_null("captured_release"),
    "captured.is_valid": _c("captured_is_valid", "*valid = 1 when the captured work can become a graph (it "
                                                 "recorded at least one node), else 0."),
    "captured.bad_handle": RELEASED_HANDLE,
    # ---------------------------------------------------------------- fork
    "fork.release_null": _release_null("fork_release"),
    "fork.unknown_flags": FLAGS + _c("struct fork_desc", "No flags are defined."),
    "fork.branches_run_and_join": _c("fork_fork", "Every branch starts after the work enqueued on origin so far.")
                                  + _c("fork_join", "Work enqueued on origin from now on starts after every "
                                                    "branch's work."),
    "fork.under_capture": _c("fork_fork", "Works eagerly and under capture."),
    "fork.queries": _c("fork_size", "Writes branch_count to *size.")
                    + _c("fork_origin", "Writes the origin's raw stream to *origin.")
                    + _c("fork_forked", "*forked = 1 between fork and join, else 0.")
                    + _c("fork_branch", "INDEX when i >= branch_count.")
                    + _c("fork_join", "INVALID_ARGUMENT when not forked.")
                    + _c("fork_fork", "INVALID_ARGUMENT when already forked."),
    "fork.bad_handle": RELEASED_HANDLE,
    "fork.null_out": BAD_ARG + _c("struct fork_desc", ">= 1"),
    "fork.release_frees": _c("fork_release", "Releases the fork and its branch streams"),
    # ---------------------------------------------------------------- conditional
    "conditional.release_null": _release_null("conditional_release"),
    "conditional.unknown_flags": FLAGS + _c("struct conditional_desc", "No flags are defined."),
    "conditional.if_guard": GUARD,
    "conditional.if_zero_baseline": GUARD,
    "conditional.while_guard": _c("struct conditional_desc", "On entry the backend writes [loop_cap, 0]; before "
                                  "each iteration it re-reads the guard, and runs the body iff the guard holds "
                                  "and remaining > 0, then remaining -= 1 and ran += 1.")
                               + _c("conditional_is_loop", "*is_loop = 1 for a WHILE, else 0."),
    "conditional.queries": _c("conditional_is_loop", "*is_loop = 1 for a WHILE, else 0.")
                           + _c("conditional_body_stream", "INVALID_ARGUMENT when no body is open.")
                           + _c("conditional_begin", "INVALID_ARGUMENT when already begun.")
                           + _c("conditional_create", "which must be being captured (INVALID_ARGUMENT otherwise)"),
    "conditional.desc_read_to_struct_size": DESC,
    "conditional.bad_handle": RELEASED_HANDLE,
    "conditional_begin_case.switch": _c("struct conditional_desc", "*count selects the case to run; a value >= "
                                                                   "case_count runs none.")
                                     + _c("conditional_begin_case", "INDEX when index >= case_count"),
    "conditional_begin_case.once": _c("conditional_begin_case", "Each case may be opened once",
                                      "INVALID_ARGUMENT for an IF or WHILE or a case already opened."),
    # ---------------------------------------------------------------- attribution
    "attribution.snapshot_nodes": _c("capture_snapshot_nodes", "in record order, as raw node values",
                                     "freed with eagle_backend_free (NULL when *count is 0)",
                                     "INVALID_ARGUMENT when not capturing."),
    "attribution.toggleable_means_toggles": _c("is_node_toggleable", "*toggleable = 1 when "
                                               "launcher_set_node_enabled can switch this raw node, else 0."),
    # ---------------------------------------------------------------- graph
    "graph.release_null": _release_null("graph_release"),
    "graph.unknown_flags": FLAGS + _c("struct graph_desc", "No flags are defined."),
    "graph.add_node_chain": _c("graph_create", "Creates an empty graph built node by node with graph_add_node.")
                            + _c("graph_last_node", "Writes the index of the last node added (-1 when none)")
                            + _c("graph_release", "launchers made from it stay valid.")
                            + _c("graph_launcher", "INVALID_ARGUMENT for an empty graph."),
    "graph.add_node_after_last": _c("graph_add_node", "appends it as one node after the graph's last node"),
    "graph.empty_capture_refused": _c("graph_from_captured", "INVALID_ARGUMENT for an empty capture.")
                                   + _c("graph_add_node", "INVALID_ARGUMENT for an empty capture.") + CONSUMING,
    "graph.last_node_from_captured": _c("graph_last_node", "Writes the index of the last node added (-1 when none)"),
    "graph.stream_orders": _c("graph_stream", "Sets the raw stream the graph's launchers launch on"),
    "graph.bad_handle": RELEASED_HANDLE,
    "graph.null_out": BAD_ARG,
    # ---------------------------------------------------------------- launcher
    "launcher.release_null": _release_null("launcher_release"),
    "launcher.replays_and_stream": LAUNCH + _c("launcher_kernel_node_count",
                                               "Writes the number of kernel nodes (run_device launches)"),
    "launcher.stream_honoured": _c("launcher_stream", "Sets the raw stream later launches go on."),
    "launcher.kernel_count_bodies": _c("launcher_kernel_node_count", "bodies included"),
    "launcher.logical_size": _c("launcher_set_logical_size",
                                "Later replays run every kernel node that was recorded over a whole run (base 0, "
                                "count == n_samples) over `size` lanes instead: count = n_samples = size.",
                                "size < 0 restores the recorded sizes; INVALID_ARGUMENT for size > 2^31-1."),
    "launcher.node_toggle": _c("launcher_set_node_enabled", "a disabled node does nothing in later replays",
                               "INVALID_ARGUMENT for a node not in this launcher"),
    "launcher.release_waits": _c("launcher_release", "Waits for the launcher's replays, then releases it."),
    "launcher.bad_handle": RELEASED_HANDLE,
    "launcher.failed_replay_surfaces": _c("launcher_synchronize", "ERROR when its work failed."),
    "launcher.release_frees": _c("launcher_release", "Waits for the launcher's replays, then releases it.")
                              + _c("captured_release", "Releases captured work that was not consumed."),
    # ---------------------------------------------------------------- exec
    "exec.unknown_flags": FLAGS + _c("run_device", "UNSUPPORTED for an unknown flag."),
    "exec.partition": RUN_DEVICE + _c("run_device", "*launched = 1, or 0 for an empty partition (count 0).")
                      + _c("struct launch_desc", "The kernel receives the nparams arguments, then (int64 base, "
                                                 "int64 count, int64 n_samples)."),
    "exec.bad_arguments": _c("run_device", "INVALID_ARGUMENT for a bad partition or nparams;")
                          + _c("struct launch_desc", "the run's true total, >= base + count"),
    # ---------------------------------------------------------------- device
    "device.props_sane": _c("struct device_props", "Figures the kind cannot know are 0.",
                            "peak_flops_dp / peak_flops_sp (0 when unknown)", "1 on the cpu kind")
                         + _c("device_props", "INDEX for a device that does not exist."),
    "device.props_struct_size": OUT_STRUCT + _c("device_props", "Fills *props for `device` (output struct rules)."),
    # ---------------------------------------------------------------- interop
    "interop.fence_orders": _c("fence", "Orders the consumer stream after the work enqueued so far on the "
                                        "producer stream, without blocking the host."),
    "interop.fence_codes": _c("fence", "EAGLE_BACKEND_STREAM_NONE: none given; nothing to order",
                              "INTEROP for a device type this kind does not serve")
                           + _c("event_pool_created", "Writes how many events (or fence objects) the backend's "
                                                      "pool has created so far."),
    # ---------------------------------------------------------------- filtering
    "filtering.unknown_flags": FLAGS + _c("struct compact_desc", "EAGLE_BACKEND_COMPACT_MASK_IS_DROP"),
    "filtering.compact_matches_numpy": _c("struct compact_desc", "kept indices ascending, the tail untouched",
                                          "nonzero keeps (or drops, with MASK_IS_DROP)"),
    "filtering.reorder_trigger": _c("struct compact_desc", "*fire = (count < *span && count <= theta * *span) ? 1 : 0"),
    "filtering.compact_limits": _c("compact_device", "UNSUPPORTED for n >= 2^31; INVALID_ARGUMENT for a NULL "
                                                     "address with n > 0 or too little scratch."),
    "filtering.compact_captured": _c("struct compact_desc", "so it can be captured"),
    "reorder_device.unknown_flags": FLAGS + _c("struct reorder_desc", "EAGLE_BACKEND_COMPACT_MASK_IS_DROP"),
    "reorder_device.matches_numpy": _c("struct reorder_desc", "a stable in-place partition of every plane over "
                                                              "positions [0, *span) so the kept samples come first",
                                       since=2),
    "reorder_device.fire_gate": _c("struct reorder_desc", "When `fire` is given the reorder happens only where "
                                                          "*fire != 0 (read on the device), and *fire is reset to 0."),
    # ---------------------------------------------------------------- memory
    "memcpy.directions": MEMCPY + _c("EAGLE_BACKEND_MEMCPY_H2D", "Other values are INVALID_ARGUMENT."),
    "memcpy.stream_order": MEMCPY,
    "memcpy.every_byte": MEMCPY,
    "host_alloc.unknown_flags": FLAGS + _c("host_alloc", "No flags are defined."),
    "host_alloc.roundtrip": _c("host_alloc", "Allocates `bytes` (> 0) of page-locked host memory to *out, freed "
                                             "with host_free."),
    "host_alloc.too_large": _c("host_alloc", "UNAVAILABLE when it cannot be had.", "`bytes` (> 0)"),
    "host_free.release_null": _c("host_free", "NULL-safe."),
    "host_free.many": _c("host_free", "Frees memory from host_alloc."),
    "host_free.frees": _c("host_free", "Frees memory from host_alloc."),
    "host_func.stream_order": _c("host_func", "Enqueues fn(user_data) on raw `stream` in stream order"),
    "host_func.replayed": _c("host_func", "under capture it becomes a host node that runs at every replay"),
    # ---------------------------------------------------------------- minor 7: modules, device memory
    "module_from_source.compile_and_launch": COMPILE + KERNEL_HANDLE + MEM,
    "module_from_source.syntax_error": _c("module_from_source", "COMPILE_FAILED when the source does not compile",
                                          "*log receives the compiler's messages"),
    "module_from_source.first_error_line": _c("module_from_source", "last_error gives the first error line"),
    "module_from_source.log_names_source": _c("struct module_desc", 'the source\'s name in the log (e.g. "step.c")'),
    "module_from_source.options": _c("struct module_desc", "option_count extra options passed to the compiler "
                                                           "as they are"),
    "module_from_source.source_bytes": COMPILE,
    # advice: the header says the source need not be NUL-terminated, not that a NUL inside it is kept
    "module_from_source.embedded_nul": COMPILE,
    "module_from_source.bit_exact": _c("EAGLE_BACKEND_MODULE_FAST_MATH", "With no flag (0) a module is compiled "
                                       "bit-exact: no floating-point contraction"),
    "module_from_source.fp_modes": _c("EAGLE_BACKEND_MODULE_FAST_MATH", "With no flag (0) a module is compiled "
                                      "bit-exact: no floating-point contraction")
                                   + _c("EAGLE_BACKEND_MODULE_CONTRACT", "CONTRACT together with FAST_MATH is "
                                        "INVALID_ARGUMENT."),
    "stream_query.without_waiting": _c("stream_query", "Otherwise writes 0 to *done and returns OK, and nothing "
                                       "else changes.", "INVALID_ARGUMENT for a NULL done."),
    "launcher_query.without_waiting": _c("launcher_query", "Never waits; INVALID_ARGUMENT for a NULL done."),
    "module_from_source.refusals": _c("module_from_source", "UNSUPPORTED for an unknown flag.") + BAD_ARG,
    "module_from_source.while_body": COMPILE + _c("struct conditional_desc", "before each iteration it re-reads "
                                                                             "the guard"),
    "module_from_image.garbage": _c("module_from_image", "COMPILE_FAILED when the image cannot be loaded.") + BAD_ARG,
    "module_from_image.log_on_ok": _c("module_from_image", "*log as for module_from_source")
                                   + _c("module_from_source", "(NULL when the compiler said nothing)"),
    "module_function.unknown_name": _c("module_function", "INVALID_ARGUMENT when the module holds no kernel of "
                                                          "that name (the message names it).") + MESSAGE,
    "module_release.null_safe": _c("module_release", "NULL-safe."),
    "module_release.unloads": _c("module_release", "Unloads the module"),
    "mem_alloc.refusals": _c("mem_alloc", "Allocates `bytes` (> 0)", "No flags are defined.") + FLAGS + BAD_ARG,
    "mem_free.zero_and_foreign": _c("mem_free", "0 is a no-op; an address mem_alloc did not return is ignored, "
                                                "never freed."),
    "mem_free.frees": _c("mem_free", "Frees memory from mem_alloc at once."),
    "mem_free.not_ours_kept": _c("mem_free", "an address mem_alloc did not return is ignored, never freed."),
}


# ------------------------------------------------------------------------------ round 4 (issue 43)
_QUERY_DONE = _c("stream_query", "When every piece of work enqueued on the stream so far has finished, writes 1 "
                 "to *done and returns what eagle_backend_stream_synchronize would return now, with the same "
                 "effects (ERROR, reported once, when that work failed;")
CITES.update({
    "stream_query.failed_work": _QUERY_DONE + _c("stream_synchronize", "ERROR when that work failed"),
    "stream_query.while_capturing": _c("stream_query", "INVALID_ARGUMENT while the stream is being captured, which "
                                       "may break the capture as synchronize does)")
                                    + _c("capturer_end", "or was broken by misuse (then nothing is returned)"),
    "stream_query.inside_host_func": _c("stream_query", "Called from inside a host function (since minor 9)",
                                        "on another stream it answers as above, without waiting, except on a kind "
                                        "whose runtime allows no calls from host functions", since=9)
                                     + _c("stream_query", "Returns without waiting for the work"),
    "launcher_query.failed_replay": _c("launcher_query", "*done = 1 (and that synchronize's status and effects) "
                                       "when the launcher's stream has finished")
                                    + _QUERY_DONE + _c("launcher_synchronize", "ERROR when its work failed."),
    "launcher_query.while_capturing": _c("launcher_query", "eagle_backend_stream_query for "
                                         "eagle_backend_launcher_synchronize")
                                      + _c("stream_query", "INVALID_ARGUMENT while the stream is being captured"),
    "memcpy.direction_boundaries": _c("EAGLE_BACKEND_MEMCPY_H2D", "Other values are INVALID_ARGUMENT.") + MESSAGE,
    "memcpy.captured_as_node": _c("memcpy", "captured as a copy node under capture") + RECORDED,
    "host_alloc.limits": _c("host_alloc", "UNAVAILABLE when it cannot be had.", "`bytes` (> 0)"),
    "mem_alloc.devices_and_sizes": _c("mem_alloc", "UNAVAILABLE when the memory cannot be had",
                                      "INDEX for a device that does not exist", "Allocates `bytes` (> 0)")
                                   + _c("device_props", "INDEX for a device that does not exist.")
                                   + _c("stream_create", "INDEX for a device that does not exist."),
    "module_from_source.log_null_when_silent": _c("module_from_source", "(NULL when the compiler said nothing)",
                                                  "it is written on COMPILE_FAILED"),
    "module_from_source.cancel": _c("struct module_desc", "A kind whose compiler is a process of its own (cpu) "
                                    "polls it at least every 20 ms, then kills the compiler and its children and "
                                    "returns ERROR with \"cancelled\" in the message")
                                 + _c("struct module_desc", "since minor 8: stopping a compile", since=8),
    "module_from_source.contract_keeps_ieee": _c("EAGLE_BACKEND_MODULE_CONTRACT", "and keeps IEEE division and "
                                                 "square root and denormals"),
    "exec.partition_boundaries": _c("struct launch_desc", "the run's true total, >= base + count",
                                    "first global sample of this launch, >= 0", "lanes in this launch, >= 0",
                                    "0 launches nothing", "0..64")
                                 + _c("run_device", "INVALID_ARGUMENT for a bad partition or nparams;"),
    "required.abi_version_is_version": _c("struct build_info", "the EAGLE_BACKEND_VERSION the backend was built "
                                          "against")
                                       + _c("version", "Returns EAGLE_BACKEND_VERSION as the backend was built"),
    "required.last_error_never_null": _c("last_error", "Never NULL.", '"" if none'),
    "attribution.empty_snapshot": _c("capture_snapshot_nodes", "(NULL when *count is 0)"),
    "filtering.sample_count_boundaries": _c("struct compact_desc", "0 .. 2^31-1;", "larger is UNSUPPORTED",
                                            "out on query: bytes needed",
                                            "With scratch == 0 it is a query: scratch_bytes is written and nothing "
                                            "is enqueued.")
                                         + _c("compact_device", "UNSUPPORTED for n >= 2^31")
                                         + _c("reorder_device", "UNSUPPORTED for n >= 2^31"),
    "filtering.scratch_boundaries": _c("compact_device", "INVALID_ARGUMENT for a NULL address with n > 0 or too "
                                                         "little scratch.")
                                    + _c("struct compact_desc", "The scratch is zero-filled by the caller before its "
                                                                "first use;"),
    "conditional.is_loop_kinds": _c("conditional_is_loop", "*is_loop = 1 for a WHILE, else 0."),
    "conditional_begin_case.switch_pointers": _c("struct conditional_desc", "baseline_ptr and counter_ptr must be 0.")
                                              + BAD_ARG,
    "capturer.end_after_refused_wait": _c("capturer_end", "or was broken by misuse (then nothing is returned)")
                                       + _c("stream_synchronize", "INVALID_ARGUMENT while the stream is being captured.")
                                       + _c("stream_query", "which may break the capture as synchronize does"),
    "interop.event_pool_counts": _c("event_pool_created", "Writes how many events (or fence objects) the backend's "
                                                          "pool has created so far."),
})
CITES.update({
    "module_from_source.contract_contracts": _c("EAGLE_BACKEND_MODULE_CONTRACT", "With CONTRACT the compiler "
                                                "contracts multiply-adds into fused multiply-adds as the kind's "
                                                "compiler does by default (cpu: -ffp-contract=fast where the host "
                                                "CPU has FMA instructions"),
    "module_from_source.compiler_missing": _c("module_from_source", "UNAVAILABLE when the kind's compiler cannot be "
                                              "found or loaded (the message names what to install)"),
})
CITES["reorder_device.matches_numpy"] += _c("struct reorder_plane", "0 is taken as 1")


def cites_of(check_id):
    """The cites of a check (empty when it has none: tests/test_check_citations.py fails that)."""
    return CITES.get(check_id, ())


def since_of(check_id):
    """The minor from which a check applies: the largest ``since`` of its cites."""
    return max((c.since for c in cites_of(check_id)), default=0)
