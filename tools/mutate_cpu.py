#!/usr/bin/env python3
"""Mutation run of eagle.check against the cpu backend (on demand, not in CI).

Each mutant is one systematic single-point change to backends/cpu/*.cpp (or its runtime header):
a check removed, a status changed, a bound off by one, an out-parameter written wrong, a release
that frees nothing, work run eagerly or not waited for. For each mutant the script copies the
backends and the header into a temporary folder (the worktree is never touched), applies the
change, rebuilds libeagle_cpu.so there (cmake, -j2, incremental) and runs
`python -m eagle.check <that library>`. A mutant is caught when any check fails, crashes or
times out. Mutants that break advice only (ADVICE_ONLY: the header does not require what they
break) are scored apart: "advised" when an advice check flags them.

    python tools/mutate_cpu.py [--only ID ...] [--timeout S] [--json OUT.json] [--keep DIR]
    python tools/mutate_cpu.py --round4 [--backend cpu kit opencl] [--only ID ...]   (issue 43's batch)

Needs cmake, a C++ compiler and pycparser (the in-tree build generates the version script).
Takes about 12 s a mutant on 2 cores. The score and the survivors are in docs/add_a_backend.md."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (id, group, file under backends/cpu, old text (unique in the file), new text)
MUTANTS = [
    # required
    ("version_major", "required", "required.cpp", "{ return EAGLE_BACKEND_VERSION; }",
     "{ return EAGLE_BACKEND_VERSION + (1u << 16); }"),
    ("abi_version_zero", "required", "required.cpp", "b.abi_version = EAGLE_BACKEND_VERSION;", "b.abi_version = 0;"),
    ("kind_empty", "required", "required.cpp", 'copy_string(b.backend_kind, "cpu");',
     'copy_string(b.backend_kind, "");'),
    ("cap_negative_ok", "required", "required.cpp",
     'if (cap < 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "cap is negative");', ""),
    ("cap_ignored", "required", "required.cpp", "i < cap && i < 1; ++i", "i < 1; ++i"),
    ("why_stale", "required", "required.cpp", 'set_last_error("");', 'set_last_error("fork: left out");'),
    ("bit_dropped_no_why", "required", "required.cpp", "EAGLE_BACKEND_CAP_DEVICE | EAGLE_BACKEND_CAP_INTEROP",
     "EAGLE_BACKEND_CAP_INTEROP"),
    ("status_without_message", "required", "required.cpp",
     "eagle_backend_capabilities(uint64_t* groups) {\n",
     "eagle_backend_capabilities(uint64_t* groups) {\n"
     "    if (!groups) { eagle::clear_last_error(); return EAGLE_BACKEND_INVALID_ARGUMENT; }\n"),
    # stream
    ("stream_flags_ignored", "stream", "stream.cpp",
     'check_flags(d.flags, EAGLE_BACKEND_STREAM_NON_BLOCKING, "desc->flags");',
     'check_flags(d.flags, ~0u, "desc->flags");'),
    ("stream_device_unchecked", "stream", "stream.cpp", 'check_device(d.device, "desc->device");', ""),
    ("sync_does_not_wait", "stream", "stream.cpp", "s->drain_and_check();", ""),
    ("stream_release_keeps_handle", "stream", "stream.cpp", "retire_stream(s);", "s->shutdown();"),
    ("stream_ptr_null_out", "stream", "stream.cpp", 'require(raw, "raw");', ""),
    ("failed_work_silent", "stream", "runtime.cpp",
     'fail(EAGLE_BACKEND_ERROR, "work enqueued on the stream failed: " + msg);', "(void)msg;"),
    ("null_handle_wrong_status", "stream", "runtime.h",
     'if (!handle) fail(EAGLE_BACKEND_BAD_HANDLE, std::string(name) + " is NULL");',
     'if (!handle) fail(EAGLE_BACKEND_INVALID_ARGUMENT, std::string(name) + " is NULL");'),
    ("stale_handle_wrong_status", "stream", "runtime.h",
     'fail(EAGLE_BACKEND_BAD_HANDLE, std::string(name) + " is not a live "',
     'fail(EAGLE_BACKEND_ERROR, std::string(name) + " is not a live "'),
    # capturer / captured
    # Deleting the "already begun" test is an equivalent mutant: a second begin then still fails,
    # INVALID_ARGUMENT, on "the stream is already being captured". So begin twice returns OK here.
    ("begin_twice_ok", "capturer", "capture.cpp",
     'if (c->cap) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capturer has already begun");', "if (c->cap) return;"),
    ("begin_stream_captured_ok", "capturer", "capture.cpp",
     'if (s.capture && !s.capture->ended)\n            fail(EAGLE_BACKEND_INVALID_ARGUMENT, '
     '"the stream is already being captured");', ""),
    # Not breaking the capture a release abandons is an equivalent mutant (only capturer_end reads
    # the broken flag, and the released capturer cannot end it). Not abandoning it is a defect:
    ("capturer_release_keeps_capture", "capturer", "capture.cpp", "if (c->cap) {", "if (false) {"),
    ("capturer_release_stream_attached", "capturer", "capture.cpp",
     "if (c->stream->capture == c->cap) {", "if (false) {"),
    ("is_valid_always", "captured", "capture.cpp", "*valid = c->graph->size() > 0 ? 1 : 0;", "*valid = 1;"),
    ("captured_release_noop", "captured", "capture.cpp", "take<Captured>(captured);", "(void)captured;"),
    ("consumed_stays_live", "captured", "capture.cpp",
     "noexcept { unregister_object(captured); }", "noexcept { (void)captured; }"),
    # fork
    ("zero_branches_ok", "fork", "fork.cpp",
     'if (d.branch_count < 1) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->branch_count is 0 (needs >= 1)");', ""),
    ("branch_index_off_by_one", "fork", "fork.cpp", "if (i >= f->branches.size())", "if (i > f->branches.size())"),
    ("forked_always_0", "fork", "fork.cpp", '*forked = lookup<Fork>(fork, "fork")->forked ? 1 : 0;', "*forked = 0;"),
    ("fork_unordered", "fork", "fork.cpp", "for (auto& b : f->branches) enqueue_wait(*b, f->origin);", ""),
    ("join_unordered", "fork", "fork.cpp", "for (auto& b : branches) enqueue_wait(*origin, b);", ""),
    ("fork_release_leaks_branches", "fork", "fork.cpp",   # the release's loop, not the one in create
     "        for (auto& b : f->branches) retire_stream(b);\n    });", "    });"),
    ("fork_size_minus_one", "fork", "fork.cpp", '->branches.size();\n    });\n}\n\nEAGLE_EXPORT void',
     '->branches.size() - 1;\n    });\n}\n\nEAGLE_EXPORT void'),
    # conditional
    ("if_guard_greater", "conditional", "conditional.cpp", "return count != baseline;", "return count > baseline;"),
    ("baseline_ignored", "conditional", "conditional.cpp",
     "const uint32_t baseline = d_.baseline_ptr ? load_word(d_.baseline_ptr) : 0u;", "const uint32_t baseline = 0u;"),
    ("while_cap_plus_one", "conditional", "conditional.cpp", "store_word(remaining, d_.loop_cap);",
     "store_word(remaining, d_.loop_cap + 1);"),
    ("case_index_wrong_status", "conditional_begin_case", "conditional.cpp", 'fail(EAGLE_BACKEND_INDEX, "case "',
     'fail(EAGLE_BACKEND_INVALID_ARGUMENT, "case "'),
    ("switch_case0_never", "conditional_begin_case", "conditional.cpp",
     "if (sel < d_.case_count) bodies_[sel]->run(rs);", "if (sel < d_.case_count && sel > 0) bodies_[sel]->run(rs);"),
    ("cond_begin_twice_ok", "conditional", "conditional.cpp",
     'if (c->begun) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the conditional has already begun");', ""),
    # attribution
    ("snapshot_skips_first", "attribution", "attribution.cpp", "for (size_t i = 0; i < g.size(); ++i) raw.push_back",
     "for (size_t i = 1; i < g.size(); ++i) raw.push_back"),
    ("toggleable_always_0", "attribution", "attribution.cpp", "*toggleable = t;", "*toggleable = 0;"),
    # graph
    ("from_captured_last_off", "graph", "graph.cpp", "g->last = static_cast<int64_t>(body->size()) - 1;",
     "g->last = static_cast<int64_t>(body->size());"),
    ("empty_graph_launcher_ok", "graph", "graph.cpp",
     'if (g->graph->size() == 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the graph is empty");', ""),
    ("graph_stream_ignored", "graph", "graph.cpp",
     'g->stream = stream ? resolve_stream(stream, "stream") : nullptr;', "g->stream = nullptr;"),
    # launcher
    ("logical_size_limit", "launcher", "launcher.cpp", "if (size > INT32_MAX)", "if (size > INT64_MAX - 1)"),
    ("logical_size_ignored", "launcher", "launcher.cpp", "next->logical_size = size < 0 ? -1 : size;",
     "next->logical_size = -1;"),
    ("kernel_count_plus_one", "launcher", "launcher.cpp", '*count = lookup<Launcher>(launcher, "launcher")->kernels;',
     '*count = lookup<Launcher>(launcher, "launcher")->kernels + 1;'),
    ("launcher_release_no_wait", "launcher", "launcher.cpp", "if (auto s = w.lock()) (void)s->wait_as_caller(seq);",
     "(void)w, (void)seq;"),
    ("foreign_node_ok", "launcher", "launcher.cpp", "if (!l->members.count(n))", "if (false)"),
    # exec
    ("partition_unchecked", "exec", "exec.cpp", 'check_partition(d.base, d.count, d.n_samples, "desc");', ""),
    ("tile_n_samples_wrong", "exec", "exec.cpp", "fn(args, base + b, std::min(chunk, count - b), n);",
     "fn(args, base + b, std::min(chunk, count - b), count);"),
    ("launched_always_1", "exec", "exec.cpp", "*launched = 0;\n            return;", "*launched = 1;\n            return;"),
    ("nparams_limit", "exec", "exec.cpp", "if (d.nparams < 0 || d.nparams > 64)", "if (d.nparams < 0)"),
    # device
    ("warp_size_zero", "device", "device.cpp", "p.warp_size = 1;", "p.warp_size = 0;"),
    ("props_device_unchecked", "device", "device.cpp", 'check_device(device, "device");', ""),
    # interop
    ("fence_any_device_type", "interop", "interop.cpp", "if (dl_device_type != 1)", "if (dl_device_type == 0)"),
    ("fence_noop", "interop", "interop.cpp", "enqueue_wait(*c, p);", ""),
    ("pool_count_negative", "interop", "interop.cpp", "*created = fence_objects_created();", "*created = -1;"),
    # filtering
    ("compact_mask_null_ok", "filtering", "filtering.cpp",
     'if (d.n > 0 && !d.mask) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "desc->mask is 0");', ""),
    ("fire_le_to_lt", "filtering", "filtering.cpp",
     "static_cast<float>(count) <= d_.theta", "static_cast<float>(count) < d_.theta"),
    ("live32_not_written", "filtering", "filtering.cpp", "if (d_.live32) *at<uint32_t>(d_.live32) = count;", ""),
    ("reorder_span_plus_one", "reorder_device", "filtering.cpp", "*span_p = static_cast<uint32_t>(kept);",
     "*span_p = static_cast<uint32_t>(kept) + 1;"),
    # memory
    ("memcpy_one_short", "memcpy", "memory.cpp",
     "reinterpret_cast<const void*>(src_), bytes_);", "reinterpret_cast<const void*>(src_), bytes_ - 1);"),
    ("memcpy_direction_unchecked", "memcpy", "memory.cpp",
     "if (direction < EAGLE_BACKEND_MEMCPY_H2D || direction > EAGLE_BACKEND_MEMCPY_H2H)", "if (direction < 0)"),
    ("host_free_leaks", "host_free", "memory.cpp", "        std::free(ptr);\n    });", "    });"),
    ("host_func_eager", "host_func", "memory.cpp", "submit(*s, std::make_shared<HostNode>(fn, user_data));",
     "fn(user_data);"),
    ("host_alloc_zero_ok", "host_alloc", "memory.cpp", 'if (bytes == 0) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "bytes is 0");', ""),
]

# ------------------------------------------------------------------------------ issue 29
# Written FIRST, from the header's sentences alone (eagle_backend.h; the sentence each one breaks is
# quoted), before the checks that catch them were written, and committed on their own: so the
# mutants say what the header promises, not what a check happens to test. Each is the most direct
# single-point way to break that sentence in the cpu backend (the file and line are the only thing
# read from the code). A mutant the author found equivalent after the fact is marked so, not dropped.
MUTANTS += [
    # module_from_source: "last_error gives the first error line; the log has them all"
    ("compile_failed_first_line", "module_from_source", "../common/module_common.h",
     'if (line.find("error") != std::string::npos) return line;', "if (false) return line;"),
    # module_desc.name: "the source's name in the log (e.g. "step.c")"
    ("log_names_temp_path", "module_from_source", "module.cpp",
     "for (size_t at; (at = text.find(src)) != std::string::npos;) text.replace(at, src.size(), in.name);", ""),
    # module_desc.options: "extra options passed to the compiler as they are"
    ("options_dropped", "module_from_source", "module.cpp",
     "for (const auto& o : in.options) argv.push_back(o);", ""),
    # module_from_source: "`source` (source_bytes bytes; it need not be NUL-terminated)"
    ("source_cut_at_nul", "module_from_source", "module.cpp", "write_file(src, source, source_bytes);",
     "write_file(src, source, source ? strnlen(source, source_bytes) : 0);"),
    # FAST_MATH: "Without FAST_MATH a module is compiled bit-exact"
    ("fast_math_inverted", "module_from_source", "module.cpp",
     "if (in.flags & EAGLE_BACKEND_MODULE_FAST_MATH) {", "if (!(in.flags & EAGLE_BACKEND_MODULE_FAST_MATH)) {"),
    # module_from_image: "*log as for module_from_source" -- "(NULL when the compiler said nothing)"
    ("image_log_stale", "module_from_image", "module.cpp",
     "eagle_backend_module* out, char** log) {\n    if (log) *log = nullptr;\n    return guarded(\"eagle_backend_module_from_image\"",
     "eagle_backend_module* out, char** log) {\n    return guarded(\"eagle_backend_module_from_image\""),
    # module_release: "Unloads the module"
    ("module_release_no_unload", "module_release", "module.cpp", "if (m->handle) dlclose(m->handle);", ""),
    # mem_free: "Frees memory from mem_alloc at once."
    ("mem_free_leaks", "mem_free", "module.cpp",
     "if (!allocations().take(p, any_entry)) return;  // not ours: never freed\n        std::free(p);",
     "if (!allocations().take(p, any_entry)) return;  // not ours: never freed"),
    # mem_free: "an address mem_alloc did not return is ignored, never freed"
    ("mem_free_foreign", "mem_free", "module.cpp",
     "if (!allocations().take(p, any_entry)) return;  // not ours: never freed",
     "(void)allocations().take(p, any_entry);"),
    # last_error: "The string is owned by the backend and valid until the next seam call on this thread."
    ("last_error_process_wide", "required", "required.cpp",
     "EAGLE_EXPORT const char* eagle_backend_last_error(void) { return eagle::last_error(); }",
     "EAGLE_EXPORT const char* eagle_backend_last_error(void) {\n"
     "    static std::string copy;  // one copy for every thread: the defect\n"
     "    copy = eagle::last_error();\n    return copy.c_str();\n}"),
    # capabilities: "On OK it also sets last_error to a note ... or to "" when nothing is left out"
    ("capabilities_stale_error", "required", "required.cpp",
     'set_last_error("");  // the reference leaves nothing out', "// the reference leaves nothing out"),
    # general: "the callee reads only the fields that fit and takes the rest as zero"
    ("desc_read_past_struct_size", "stream", "../include/eagle/backend_kit.h",
     "std::memcpy(&out, in, std::min<size_t>(caller, sizeof(Desc)));", "std::memcpy(&out, in, sizeof(Desc));"),
    # set_logical_size: "size < 0 restores the recorded sizes" (so 0 is a size: zero lanes)
    ("logical_size_zero_restores", "launcher", "launcher.cpp",
     "next->logical_size = size < 0 ? -1 : size;", "next->logical_size = size <= 0 ? -1 : size;"),
    # set_logical_size: "every kernel node that was recorded over a whole run (base 0, count == n_samples)"
    ("logical_size_resizes_partial", "launcher", "exec.cpp",
     "if (rs && rs->logical_size >= 0 && base_ == 0 && count_ == n_samples_) count = n = rs->logical_size;",
     "if (rs && rs->logical_size >= 0) {\n        n = rs->logical_size;\n"
     "        if (base_ == 0 && count_ == n_samples_) count = n;\n    }"),
    # set_logical_size: "INVALID_ARGUMENT for size > 2^31-1" (so 2^31-1 itself is a size)
    ("logical_size_max_refused", "launcher", "launcher.cpp", "if (size > INT32_MAX)", "if (size >= INT32_MAX)"),
    # launcher_stream: "Sets the raw stream later launches go on."
    ("launcher_stream_ignored", "launcher", "launcher.cpp",
     'l->stream = stream ? resolve_stream(stream, "stream") : nullptr;',
     '(void)(stream ? resolve_stream(stream, "stream") : nullptr);'),
    # kernel_node_count: "the number of kernel nodes (run_device launches) in the launcher, bodies included"
    ("kernel_count_case0_only", "launcher", "conditional.cpp",
     "for (auto& b : bodies_) total += b->kernel_count();",
     "if (!bodies_.empty()) total += bodies_[0]->kernel_count();"),
    # graph_add_node: "appends it as one node after the graph's last node"
    ("add_node_no_dependency", "graph", "graph.cpp",
     "if (g->last >= 0) deps.push_back(static_cast<uint32_t>(g->last));", ""),
    # STREAM_NON_BLOCKING: "the stream does not synchronise with the kind's default stream"
    ("non_blocking_ignored", "stream", "stream.cpp",
     "(d.flags & EAGLE_BACKEND_STREAM_NON_BLOCKING) == 0", "true"),
    # STREAM_NON_BLOCKING (minor 8): "work enqueued on the default stream waits for the stream's earlier work"
    ("default_ignores_blocking", "stream", "runtime.cpp",
     "for (auto& u : blocking_user_streams()) enqueue_wait(s, u);", ""),
    # STREAM_NON_BLOCKING (minor 8): "work enqueued on the stream waits for the default stream's earlier work"
    ("blocking_ignores_default", "stream", "runtime.cpp", "            enqueue_wait(s, d);\n", ""),
    # capturer_end: "INVALID_ARGUMENT when the capture ... was broken by misuse (then nothing is returned)"
    ("end_broken_ok", "capturer", "capture.cpp",
     'if (cap->broken) fail(EAGLE_BACKEND_INVALID_ARGUMENT, "the capture was broken: " + cap->why);', ""),
    # conditional_begin_case: "Each case may be opened once"
    ("case_opened_twice_ok", "conditional_begin_case", "conditional.cpp",
     "if (c->opened[index])\n            fail(EAGLE_BACKEND_INVALID_ARGUMENT, \"case \" + std::to_string(index) + "
     "\" was already opened\");", ""),
    # is_node_toggleable: "*toggleable = 1 when launcher_set_node_enabled can switch this raw node, else 0"
    ("toggleable_always_1", "attribution", "exec_graph.cpp", "return (*it)->toggleable() ? 1 : 0;", "return 1;"),
]

#: Mutants whose defect breaks advice only (the header defines BAD_HANDLE but does not require a
#: backend to recognise NULL, released or consumed handles): scored apart, "advised" when an advice
#: check flags them, never counted as contract mutants.
#: source_cut_at_nul joined them when the checks were written: re-read, the header says the source
#: "need not be NUL-terminated", not that a NUL inside source_bytes is kept (NVRTC and hiprtc take a
#: C string and stop there; eagle's own gpu backend does), so module_from_source.embedded_nul is advice.
ADVICE_ONLY = frozenset({"null_handle_wrong_status", "stale_handle_wrong_status", "stream_release_keeps_handle",
                         "consumed_stays_live", "source_cut_at_nul"})


def _sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def setup(work):
    """Copy what the cpu build needs into `work` and configure it; returns the build dir."""
    for sub in ("backends", "build_tools"):
        shutil.copytree(os.path.join(REPO, sub), os.path.join(work, sub),
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(REPO, "eagle_backend.h"), work)
    build = os.path.join(work, "build")
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    p = _sh(["cmake", "-S", os.path.join(work, "backends"), "-B", build, *gen, "-DEAGLE_BACKENDS=cpu",
             f"-DPython_EXECUTABLE={sys.executable}"])
    if p.returncode:
        raise SystemExit(f"cmake configure failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return build


def build(build_dir):
    p = _sh(["cmake", "--build", build_dir, "-j2"])
    return p.returncode == 0, (p.stdout + p.stderr)[-1500:]


def check(lib, timeout):
    p = _sh([sys.executable, "-m", "eagle.check", lib, "--json", "--timeout", str(timeout)], cwd=REPO)
    try:
        results = json.loads(p.stdout)[0]["results"]
    except (ValueError, IndexError, KeyError):
        return p.returncode, [("(no results)", p.returncode, p.stderr.strip()[-300:])], []
    bad = [(r["id"], r["result"], r["message"][:200]) for r in results if r["result"] in ("fail", "crash", "timeout")]
    advice = [(r["id"], r["result"], r["message"][:200]) for r in results if r["result"] == "advice"]
    return p.returncode, bad, advice


def try_mutant(path, old, new, bdir, lib, timeout):
    """Write one mutation (``old`` -> ``new``, which must occur once) into ``path``, rebuild
    ``bdir``, run eagle.check on ``lib`` and put the file back: ({"status": "stale" |
    "build_error" | "checked", "detail" | "rc", "bad", "advice"}, seconds)."""
    with open(path) as f:
        text = f.read()
    if text.count(old) != 1:
        return {"status": "stale", "detail": f"the text to mutate occurs {text.count(old)} times in "
                                             f"{os.path.basename(path)}"}, 0.0
    t0 = time.monotonic()
    with open(path, "w") as f:
        f.write(text.replace(old, new))
    try:
        ok, log = build(bdir)
        if not ok:
            out = {"status": "build_error", "detail": log[-300:]}
        else:
            rc, bad, advice = check(lib, timeout)
            out = {"status": "checked", "rc": rc, "bad": bad, "advice": advice}
    finally:
        with open(path, "w") as f:
            f.write(text)
    return out, round(time.monotonic() - t0, 1)


def setup_opencl(work):
    """Copy backends/opencl into `work` and configure it against the installed kit (as an author
    builds it, .ci/run); returns the build dir, or None when no OpenCL headers/loader are here."""
    src = os.path.join(work, "backends", "opencl")
    if not os.path.isdir(src):
        shutil.copytree(os.path.join(REPO, "backends", "opencl"), src,
                        ignore=shutil.ignore_patterns("__pycache__"))
    build = os.path.join(work, "build-opencl")
    cmake_dir = _sh([sys.executable, "-m", "eagle", "--cmake-dir"]).stdout.strip()
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    p = _sh(["cmake", "-S", src, "-B", build, *gen, f"-Deagle_DIR={cmake_dir}"])
    if p.returncode:
        print(f"opencl: cmake configure failed (no OpenCL headers or loader?): {p.stderr[-500:]}", flush=True)
        return None
    return build


def run_round4(args):
    """Round 4's fresh batch (tools/mutants_round4.py): cpu and kit mutants rebuild the cpu backend,
    opencl mutants rebuild backends/opencl against the installed kit; each library is checked in
    full. Prints the score per backend and in all."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from mutants_round4 import EQUIVALENT, MUTANTS_ROUND4
    mutants = [m for m in MUTANTS_ROUND4 if (not args.only or m[0] in args.only)
               and (not args.backend or m[1] in args.backend)]
    work = args.keep or tempfile.mkdtemp(prefix="eagle-mutate4-")
    os.makedirs(work, exist_ok=True)
    t_start = time.monotonic()
    rows = []
    try:
        libs = {}
        if any(m[1] in ("cpu", "kit") for m in mutants):
            bdir = setup(work)
            ok, log = build(bdir)
            if not ok:
                raise SystemExit(f"the unmutated cpu backend does not build:\n{log}")
            libs["cpu"] = (bdir, os.path.join(bdir, "cpu", "libeagle_cpu.so"))
            libs["kit"] = libs["cpu"]
        if any(m[1] == "opencl" for m in mutants):
            if not os.path.isdir(os.path.join(work, "backends")):
                os.makedirs(os.path.join(work, "backends"))
            odir = setup_opencl(work)
            if odir is not None:
                ok, log = build(odir)
                if not ok:
                    raise SystemExit(f"the unmutated opencl backend does not build:\n{log}")
                libs["opencl"] = (odir, os.path.join(odir, "libeagle_opencl.so"))
        for which in sorted({m[1] for m in mutants} & set(libs)):
            rc, bad, _advice = check(libs[which][1], args.timeout)
            if rc != 0:
                raise SystemExit(f"the unmutated {which} backend does not pass eagle.check: {bad}")
        print(f"baseline: {', '.join(sorted(libs))} build and pass ({time.monotonic() - t_start:.0f} s)", flush=True)
        for mid, backend, fname, old, new, _why in mutants:
            if backend not in libs:
                rows.append({"id": mid, "backend": backend, "status": "not_run", "detail": "no such build here"})
                print(f"{mid:40} NOT RUN (no {backend} build here)", flush=True)
                continue
            bdir, lib = libs[backend]
            got, sec = try_mutant(os.path.join(work, "backends", fname), old, new, bdir, lib, args.timeout)
            if got["status"] == "stale":
                rows.append({"id": mid, "backend": backend, "status": "stale", "detail": got["detail"]})
                print(f"{mid:40} STALE ({got['detail']})", flush=True)
                continue
            if got["status"] == "build_error":
                row = {"id": mid, "backend": backend, "status": "build_error", "detail": got["detail"]}
            else:
                row = {"id": mid, "backend": backend, "status": "caught" if got["bad"] else "survived",
                       "caught_by": got["bad"][:5], "advice": got["advice"][:3], "equivalent": mid in EQUIVALENT}
            row["seconds"] = sec
            rows.append(row)
            by = ", ".join(f"{i} ({r})" for i, r, _ in row.get("caught_by", [])[:3])
            print(f"{mid:40} {row['status'].upper():12} {row['seconds']:5.1f}s {by}", flush=True)
        for bdir, _lib in set(libs.values()):
            build(bdir)   # leave the builds unmutated
        ran = [r for r in rows if r["status"] in ("caught", "survived")]
        print()
        for label, sel in (("cpu", {"cpu"}), ("kit", {"kit"}), ("opencl", {"opencl"}),
                           ("all", {"cpu", "kit", "opencl"})):
            rs = [r for r in ran if r["backend"] in sel]
            scored = [r for r in rs if not r["equivalent"]]
            caught = sum(r["status"] == "caught" for r in scored)
            if rs:
                print(f"{label:7} {caught}/{len(scored)} caught ({100.0 * caught / max(len(scored), 1):.1f} %)"
                      f"{'' if len(scored) == len(rs) else f'; {len(rs) - len(scored)} equivalent mutant(s) not scored'}")
        print(f"{len(rows) - len(ran)} not scored (stale text, build error or no build); "
              f"{time.monotonic() - t_start:.0f} s")
        for r in ran:
            if r["status"] != "caught":
                print(f"  {r['status']}{' (equivalent)' if r['equivalent'] else ''}: {r['id']} ({r['backend']})")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
        return rows
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--round4", action="store_true",
                    help="run round 4's fresh batch (tools/mutants_round4.py: cpu, kit and opencl)")
    ap.add_argument("--backend", nargs="*", choices=("cpu", "kit", "opencl"),
                    help="with --round4: only these mutants (default: all)")
    ap.add_argument("--only", nargs="*", help="mutant ids to run (default: all)")
    ap.add_argument("--timeout", type=float, default=20.0, help="eagle.check --timeout (default 20)")
    ap.add_argument("--json", help="write the per-mutant results here")
    ap.add_argument("--keep", help="work in this folder and keep it")
    args = ap.parse_args(argv)
    if args.round4:
        run_round4(args)
        return 0
    mutants = [m for m in MUTANTS if not args.only or m[0] in args.only]
    work = args.keep or tempfile.mkdtemp(prefix="eagle-mutate-")
    os.makedirs(work, exist_ok=True)
    t_start = time.monotonic()
    try:
        bdir = setup(work)
        lib = os.path.join(bdir, "cpu", "libeagle_cpu.so")
        ok, log = build(bdir)
        if not ok:
            raise SystemExit(f"the unmutated cpu backend does not build:\n{log}")
        rc, bad, _advice = check(lib, args.timeout)
        if rc != 0:
            raise SystemExit(f"the unmutated cpu backend does not pass eagle.check: {bad}")
        print(f"baseline: builds and passes ({time.monotonic() - t_start:.0f} s)", flush=True)
        rows = []
        for mid, group, fname, old, new in mutants:
            got, sec = try_mutant(os.path.join(work, "backends", "cpu", fname), old, new, bdir, lib, args.timeout)
            if got["status"] == "stale":
                rows.append({"id": mid, "group": group, "status": "stale", "detail": got["detail"]})
                print(f"{mid:30} STALE ({got['detail']})", flush=True)
                continue
            if got["status"] == "build_error":
                row = {"id": mid, "group": group, "status": "build_error", "detail": got["detail"]}
            else:
                bad, advice = got["bad"], got["advice"]
                status = "caught" if bad else "advised" if advice else "survived"
                row = {"id": mid, "group": group, "status": status, "caught_by": (bad or advice)[:5],
                       "advice_only": mid in ADVICE_ONLY}
            row["seconds"] = sec
            rows.append(row)
            by = ", ".join(f"{i} ({r})" for i, r, _ in row.get("caught_by", [])[:3])
            print(f"{mid:30} {row['status'].upper():12} {row['seconds']:5.1f}s {by}", flush=True)
        build(bdir)   # leave the build unmutated
        ran = [r for r in rows if r["status"] in ("caught", "advised", "survived")]
        scored = [r for r in ran if not r["advice_only"]]
        caught = sum(r["status"] == "caught" for r in scored)
        advice = [r for r in ran if r["advice_only"]]
        advised = sum(r["status"] != "survived" for r in advice)
        print(f"\n{caught}/{len(scored)} contract mutants caught ({100.0 * caught / max(len(scored), 1):.1f} %); "
              f"{advised}/{len(advice)} advice-only mutants flagged; "
              f"{len(rows) - len(ran)} not scored (stale text or build error); "
              f"{time.monotonic() - t_start:.0f} s")
        for r in ran:
            if r["status"] != "caught" and not r["advice_only"]:
                print(f"  {r['status']}: {r['id']} ({r['group']})")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
