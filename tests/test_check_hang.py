"""python -m eagle.check against a library whose every call hangs (issue 14): each group ends
within 2 x --timeout, the hangs are reported as timeout, and interrupting or terminating the
checker leaves none of its worker processes behind."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HANG_C = r"""
#include <stdint.h>
#include <unistd.h>
#define EXPORT __attribute__((visibility("default")))
static void hang(void) { for (;;) pause(); }
EXPORT uint32_t eagle_backend_version(void) { hang(); return 0; }
EXPORT const char* eagle_backend_last_error(void) { hang(); return ""; }
EXPORT int32_t eagle_backend_build_info(void* p) { (void)p; hang(); return 0; }
EXPORT int32_t eagle_backend_probe(void) { hang(); return 0; }
EXPORT void eagle_backend_free(void* p) { (void)p; hang(); }
EXPORT int32_t eagle_backend_capabilities(uint64_t* g) { (void)g; hang(); return 0; }
EXPORT int32_t eagle_backend_device_types(int32_t* t, int32_t c, int32_t* n) { (void)t; (void)c; (void)n; hang(); return 0; }
"""


@pytest.fixture(scope="module")
def hanging_lib(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc) to build the hanging library")
    d = tmp_path_factory.mktemp("hang")
    (d / "hang.c").write_text(HANG_C)
    lib = d / "libeagle_hangs.so"
    subprocess.run([cc, "-shared", "-fPIC", str(d / "hang.c"), "-o", str(lib)], check=True)
    return str(lib)


def _workers_of(lib):
    """Pids of live processes whose command line names `lib` (the checker's workers)."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if lib.encode() in cmd and state != "Z":
            pids.append(int(pid))
    return pids


@pytest.mark.slow  # about 17 s: waits out every group's timeout
def test_every_group_of_a_hanging_library_ends_within_twice_the_timeout(hanging_lib):
    timeout = 3.0
    groups = ["static", "required", "stream"]
    cmd = [sys.executable, "-m", "eagle.check", hanging_lib, "--json", "--timeout", str(timeout)]
    for g in groups:
        cmd += ["--group", g]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)
    took = time.monotonic() - t0
    results = json.loads(proc.stdout)[0]["results"]
    assert proc.returncode == 1
    timed_out = [r for r in results if r["result"] == "timeout"]
    assert timed_out and any("per-check --timeout" in r["message"] for r in timed_out)
    # the preflight dlopen and Python start-up aside, each group costs under 2 x timeout
    assert took < len(groups) * 2 * timeout + 5, f"{took:.1f} s for {len(groups)} groups"
    assert not _workers_of(hanging_lib)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupting_the_checker_leaves_no_worker_behind(hanging_lib, sig):
    # SIGINT at its default in the checker: a test run started as a background job of a shell
    # without job control inherits SIGINT ignored, and Python then keeps it ignored
    proc = subprocess.Popen([sys.executable, "-m", "eagle.check", hanging_lib, "--timeout", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:   # wait until a worker hangs in the library
            workers = [p for p in _workers_of(hanging_lib) if p != proc.pid]
            if workers:
                break
            time.sleep(0.1)
        assert workers, "no worker process was started"
        time.sleep(1.0)
        proc.send_signal(sig)
        rc = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 128 + sig
    time.sleep(0.5)
    left = _workers_of(hanging_lib)
    assert not left, f"{len(left)} worker process(es) left behind after {sig.name}: {left}"


def test_killing_the_checker_with_sigkill_leaves_no_worker_behind(hanging_lib):
    # SIGKILL gives the checker no chance to kill its workers' process groups: the worker asks for
    # a parent-death signal (eagle/check/_worker.py) and ends with its parent
    proc = subprocess.Popen([sys.executable, "-m", "eagle.check", hanging_lib, "--timeout", "60"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        workers = []
        while time.monotonic() < deadline and not workers:
            workers = [p for p in _workers_of(hanging_lib) if p != proc.pid]
            time.sleep(0.1)
        assert workers, "no worker process was started"
        time.sleep(0.5)
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _workers_of(hanging_lib):
        time.sleep(0.1)
    left = _workers_of(hanging_lib)
    for pid in left:  # do not leave them to spin in the test run either
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not left, f"{len(left)} worker process(es) outlived the SIGKILLed checker: {left}"


# Issue 42: a library whose capabilities() never returns kept eagle.check running past 600 s (each
# group waited out its own 2 x --timeout). Only capabilities hangs here; the rest answers.
CAPS_HANG_C = r"""
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#define EXPORT __attribute__((visibility("default")))
EXPORT uint32_t eagle_backend_version(void) { return (1u << 16) | 9u; }
EXPORT const char* eagle_backend_last_error(void) { return ""; }
EXPORT int32_t eagle_backend_build_info(uint32_t* p) { if (!p || *p < 4) return 2; return 0; }
EXPORT int32_t eagle_backend_probe(void) { return 0; }
EXPORT void eagle_backend_free(void* p) { (void)p; }
EXPORT int32_t eagle_backend_capabilities(uint64_t* g) { (void)g; for (;;) pause(); return 0; }
EXPORT int32_t eagle_backend_device_types(int32_t* t, int32_t c, int32_t* n) {
    if (!n || c < 0) return 2;
    if (c > 0 && t) t[0] = 1;
    *n = 1;
    return 0;
}
"""


@pytest.fixture(scope="module")
def caps_hang_lib(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc) to build the library")
    d = tmp_path_factory.mktemp("capshang")
    (d / "capshang.c").write_text(CAPS_HANG_C)
    lib = d / "libeagle_capshang.so"
    subprocess.run([cc, "-shared", "-fPIC", str(d / "capshang.c"), "-o", str(lib)], check=True)
    return str(lib)


def _run(lib, *args):
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "eagle.check", lib, "--json", *args], capture_output=True,
                          text=True, timeout=300, cwd=REPO)
    took = time.monotonic() - t0
    return proc, json.loads(proc.stdout)[0]["results"], took


def test_a_hung_capabilities_ends_the_whole_run_within_a_bound(caps_hang_lib):
    # every group, default total: the run ends after the required group's 2 x --timeout, not
    # after every group's; the groups not run say which handshake call hung
    timeout = 1.5
    proc, results, took = _run(caps_hang_lib, "--timeout", str(timeout))
    assert proc.returncode == 1
    assert took < 2 * (2 * timeout) + 15, f"{took:.1f} s"
    by = {r["id"]: r for r in results}
    assert any(r["result"] == "timeout" and "eagle_backend_capabilities" in r["message"]
               for r in results if r["group"] == "required")
    later = [r for r in results if r["group"] not in ("static", "required")]
    assert later and all(r["result"] == "timeout" for r in later)
    assert "hung in eagle_backend_capabilities" in later[0]["message"]
    assert by["static.loadable"]["result"] == "pass"
    assert not _workers_of(caps_hang_lib)


def test_total_timeout_bounds_the_run_of_a_library_that_hangs_in_every_call(hanging_lib):
    # --timeout alone would give each of static, required and stream up to 2 x 30 s
    proc, results, took = _run(hanging_lib, "--timeout", "30", "--total-timeout", "3",
                               "--group", "static", "--group", "required", "--group", "stream")
    assert proc.returncode == 1
    assert took < 3 + 12, f"{took:.1f} s"
    assert any("--total-timeout = 3 s" in r["message"] for r in results if r["result"] == "timeout")
    assert not _workers_of(hanging_lib)
