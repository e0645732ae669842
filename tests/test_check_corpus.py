"""python -m eagle.check against a corpus of deliberately broken backends.

Every backend of the corpus is tests/check_corpus/shim.c, compiled with `cc -shared` and one
-DDEFECT_<NAME> switch; the shim forwards every seam symbol to the real cpu backend and breaks
exactly one promise. The check must fail (or report crash / timeout for) the check that names
the defect, and pass the shim without a switch."""
import json
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIM = os.path.join(REPO, "tests", "check_corpus", "shim.c")

# switch -> (groups to run, {check id: expected result}, text the failing message must contain)
DEFECTS = {
    # advice: the header forbids neither extra exports nor a NEEDED entry beyond the driver
    "EXTRA_EXPORT": (["static"], {"static.exports_pinned": "advice"}, "eagle_backend_debug_dump"),
    "MISSING_SYMBOL": (["static"], {"static.exports_promised": "fail"}, "eagle_backend_fork_size"),
    "MISSING_SYMBOL_BITS": (["required"], {"required.groups_whole": "fail"}, "eagle_backend_fork_size"),
    "NEEDED": (["static"], {"static.needed": "advice"}, "libeagle_check_dummy.so"),
    "MAJOR_2": (["required"], {"required.version_major": "fail"}, "major 2"),
    "RESERVED_BIT": (["required"], {"required.reserved_bits": "fail"}, "reserved bit(s) 8"),
    "SHORT_STRUCT": (["required"], {"required.build_info_struct_size": "fail"}, "beyond"),
    "LONG_STRUCT": (["required"], {"required.build_info_struct_size": "fail"}, "wrote back"),
    "CAP_IGNORED": (["required"], {"required.device_types_cap": "fail"}, "beyond cap"),
    "LAST_ERROR_GLOBAL": (["required"], {"required.last_error_thread_local": "fail"}, "not thread-local"),
    "LAST_ERROR_EMPTY": (["required"], {"required.last_error_after_failure": "fail"}, "empty"),
    "RELEASE_NULL_CRASH": (["stream"], {"stream.release_null": "crash"},
                           "SIGSEGV in or after its last seam call, eagle_backend_stream_release"),
    "IGNORE_FLAGS": (["stream"], {"stream.unknown_flags": "fail"}, "eagle_backend_stream_create"),
    "COMPACT_FLAGS": (["filtering"], {"filtering.unknown_flags": "fail"}, "eagle_backend_compact_device"),
    "STATUS_42": (["fork"], {"fork.queries": "fail"}, "eagle_backend_fork_size returned status 42"),
    "COMPACT_OFF_BY_ONE": (["filtering"], {"filtering.compact_matches_numpy": "fail"}, "compaction"),
    "IF_IGNORES_GUARD": (["conditional"], {"conditional.if_guard": "fail"}, "skipped"),
    "UNORDERED_STREAM": (["stream"], {"stream.order": "fail"}, "ordered"),
    "CRASH_SYNC": (["stream"], {"stream.order": "crash", "stream.synchronize_waits": "crash"},
                   "SIGSEGV in or after its last seam call, eagle_backend_stream_synchronize"),
    "HANG_JOIN": (["fork"], {"fork.branches_run_and_join": "timeout"},
                  "its last seam call was eagle_backend_fork_join"),
    "HOST_FUNC_EAGER": (["host_func"], {"host_func.stream_order": "fail"}, "stream order"),
    "MEMCPY_EAGER": (["memcpy"], {"memcpy.stream_order": "fail"}, "after a slow kernel"),
    "LOGICAL_SIZE_IGNORED": (["launcher"], {"launcher.logical_size": "fail"}, "logical size 10"),
    "FENCE_NOOP": (["interop"], {"interop.fence_orders": "fail", "interop.fence_codes": "fail"},
                   "producer"),
    "PROPS_OVERWRITE": (["device"], {"device.props_struct_size": "fail"}, "beyond"),
    "WHILE_CAP_IGNORED": (["conditional"], {"conditional.while_guard": "fail"}, "loop_cap=10"),
    "WHILE_BODY_PARTIAL": (["module_from_source"], {"module_from_source.while_body": "fail",
                                                    "module_from_source.compile_and_launch": "pass"},
                           "lanes called"),
    "SWITCH_ALWAYS_CASE0": (["conditional_begin_case"], {"conditional_begin_case.switch": "fail"}, "SWITCH"),
    "REORDER_INVERTED": (["reorder_device"], {"reorder_device.matches_numpy": "fail"}, "reorder"),
    "CAPTURER_RELEASE_KEEPS_CAPTURE": (["capturer"], {"capturer.release_abandons": "fail",
                                                      "capturer.misuse": "pass"}, "abandoned"),
    # a thread that outlives its release: the measured check waits for exiting threads, not this
    "FORK_LEAKS_THREAD": (["fork"], {"fork.release_frees": "fail"}, "threads"),
}
# Both MISSING_SYMBOL rows use the same library.
SWITCH = {"MISSING_SYMBOL_BITS": "MISSING_SYMBOL"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, cpu_backend_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc) to build the corpus")
    real = cpu_backend_path
    root = tmp_path_factory.mktemp("check_corpus")
    dummy_dir = root / "dep"
    dummy_dir.mkdir()
    dummy_c = dummy_dir / "dummy.c"
    dummy_c.write_text("int eagle_check_dummy(void) { return 1; }\n")
    subprocess.run([cc, "-shared", "-fPIC", str(dummy_c), "-o", str(dummy_dir / "libeagle_check_dummy.so")],
                   check=True)
    built = {}
    for name in ["CORRECT"] + sorted(set(SWITCH.get(d, d) for d in DEFECTS)):
        out_dir = root / name.lower()
        out_dir.mkdir()
        lib = out_dir / "libeagle_cpu.so"   # the kind is cpu: it forwards to the cpu backend
        cmd = [cc, "-shared", "-fPIC", "-fvisibility=hidden", "-O1", f"-I{REPO}",
               f'-DSHIM_TARGET="{real}"', SHIM, "-o", str(lib), "-ldl"]
        if name != "CORRECT":
            cmd.insert(1, f"-DDEFECT_{name}")
        if name == "NEEDED":
            cmd += [f"-L{dummy_dir}", "-Wl,--no-as-needed", "-leagle_check_dummy", f"-Wl,-rpath,{dummy_dir}"]
        subprocess.run(cmd, check=True, capture_output=True)
        built[name] = str(lib)
    return built


def run_check(lib, groups=(), timeout=None):
    cmd = [sys.executable, "-m", "eagle.check", lib, "--json"]
    for g in groups:
        cmd += ["--group", g]
    if timeout:
        cmd += ["--timeout", str(timeout)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.stdout.strip(), f"no JSON on stdout; stderr: {proc.stderr[-2000:]}"
    runs = json.loads(proc.stdout)
    return proc.returncode, {r["id"]: r for r in runs[0]["results"]}


@pytest.mark.slow  # about 15 s with its shim build
def test_correct_shim_passes_every_group(corpus):
    rc, results = run_check(corpus["CORRECT"])
    bad = {i: (r["result"], r["message"]) for i, r in results.items() if r["result"] != "pass"}
    assert not bad
    assert rc == 0


# The default run takes every fourth defect (and not HANG_JOIN, which waits out its timeout: 8 s);
# CI's slow step runs the rest, so every defect is checked there.
@pytest.mark.parametrize("defect", [pytest.param(d, marks=pytest.mark.slow) if d == "HANG_JOIN" or k % 4 else d
                                    for k, d in enumerate(sorted(DEFECTS))])
def test_check_names_the_defect(corpus, defect):
    groups, expected, text = DEFECTS[defect]
    rc, results = run_check(corpus[SWITCH.get(defect, defect)], groups,
                            timeout=4 if defect == "HANG_JOIN" else None)
    for cid, want in expected.items():
        assert cid in results, f"{cid} did not run; ran {sorted(results)}"
        got = results[cid]
        assert got["result"] == want, f"{cid}: {got['result']}: {got['message']}"
        assert got["group"] == cid.split(".")[0]
    first = next(iter(expected))
    assert text in results[first]["message"], results[first]["message"]
    # advice never fails the run
    assert rc == (1 if set(expected.values()) & {"fail", "crash", "timeout"} else 0)


def test_a_crash_names_the_innermost_frame_in_the_check_group_modules():
    # faulthandler's dump, most recent call first: the frame reported is the first one inside
    # eagle/check/groups/ (a group module or the helpers), not the session's or the worker's
    from eagle.check._runner import _frame_of_check
    dump = ("Fatal Python error: Segmentation fault\n\nCurrent thread 0x7f (most recent call first):\n"
            '  File "/x/eagle/check/_seam.py", line 80 in raw\n'
            '  File "/x/eagle/check/groups/_helpers.py", line 64 in fn\n'
            '  File "/x/eagle/check/groups/stream.py", line 45 in stream_order\n'
            '  File "/x/eagle/check/_worker.py", line 60 in run\n')
    assert _frame_of_check(dump) == "_helpers.py:64 in fn"
    assert _frame_of_check(dump.replace("groups/_helpers.py", "_other.py")) == "stream.py:45 in stream_order"
    assert _frame_of_check('  File "/x/eagle/check/_worker.py", line 60 in run\n') == ""
