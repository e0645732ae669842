"""A process killed while eagle compiles leaves no compiler running and no temporary directory
behind (issue 42): the cpu kind's compiler runs in the process's group under a guardian that
dies with the process and kills the compiler's whole tree (backends/cpu/module.cpp, Linux).

A child interpreter compiles a source that takes gcc many seconds (its name carries a tag that
every compiler process's command line shows); once a compiler process is seen, the child is
killed: SIGTERM, SIGKILL, or SIGKILL to its whole process group. Within a few seconds no process
may show the tag, and the child's $TMPDIR must be empty (but after SIGKILL of the whole group,
where nothing is left to clean up: only the processes are checked). Linux only (/proc)."""
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = r'''
import sys, eagle
tag = sys.argv[1]
body = "\n".join(f"  v = v * 1.{k % 97 + 1} + sin(v + {k}.0) * cos(v * {k % 13 + 1}.0);" for k in range(40000))
src = "#include <eagle/kernel.h>\nEAGLE_KERNEL(k, (double*, y)) { (void)n; double v = y[i];\n" + body + "\n y[i] = v; }\n"
eagle.compile(src, backend="cpu", name=tag + ".c", cache=False)
print("compiled")
'''


def _with_tag(tag):
    """Pids of the processes whose command line shows ``tag``."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if tag.encode() in fh.read():
                    out.append(int(pid))
        except OSError:
            pass
    return out


def _wait_for(cond, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the guardian and /proc are Linux's")
@pytest.mark.parametrize("how", ["sigterm", pytest.param("sigkill", marks=pytest.mark.slow),
                                 pytest.param("killpg", marks=pytest.mark.slow)])
def test_a_killed_compile_leaves_no_compiler_and_no_temporary_directory(tmp_path, how):
    tag = f"eagle_dies_with_parent_{uuid.uuid4().hex[:12]}"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen([sys.executable, "-c", CHILD, tag], env=env, cwd=ROOT, start_new_session=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # a compiler process (the driver or cc1) shows the tag: the compile is under way
        assert _wait_for(lambda: [p for p in _with_tag(tag) if p != child.pid], 60), "the compile never started"
        if how == "sigterm":
            child.send_signal(signal.SIGTERM)
        elif how == "sigkill":
            child.kill()
        else:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait(30)
        gone = _wait_for(lambda: not _with_tag(tag), 10)
        assert gone, f"compiler processes outlived the killed process ({how}): {_with_tag(tag)}"
        if how != "killpg":
            assert _wait_for(lambda: not any(tmp.iterdir()), 10), f"left behind: {list(tmp.iterdir())}"
    finally:
        for pid in _with_tag(tag):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if child.poll() is None:
            child.kill()
            child.wait()


def test_a_compile_that_fails_or_succeeds_still_reports_as_before():
    # the guardian passes the compiler's status through: an error is a CompileError with its log
    code = r'''
import eagle, numpy as np
try:
    eagle.compile("int x = ;", backend="cpu", cache=False, name="bad.c")
    print("no error")
except eagle.EagleError as e:
    print(type(e).__name__, "error" in str(e))
m = eagle.compile("#include <eagle/kernel.h>\nEAGLE_KERNEL(k, (double*, y)) { (void)n; y[i] = 2.0; }\n",
                  backend="cpu", cache=False, name="good.c")
y = np.zeros(2); eagle.run(m.k, [y], 2); print(y.tolist())
'''
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.split("\n")[:2] == ["CompileError True", "[2.0, 2.0]"], out.stdout + out.stderr
