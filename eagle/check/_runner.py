"""Parent side: run each group of checks in a child process; a child that dies gives `crash`
(with the signal) for the check it was in, one that goes silent past the per-check timeout gives
`timeout`; either way a fresh child carries on with the rest of the group."""
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time

from ._all import all_checks
from ._registry import GROUP_ORDER, Result


def _signal_name(rc):
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def _last_call(path):
    """The seam symbol the dead child called last (the worker's breadcrumb), or ''."""
    try:
        with open(path, "rb") as f:
            return f.read(64).split(b"\0", 1)[0].decode("ascii", "replace")
    except OSError:
        return ""


def _frame_of_check(stderr_text):
    """'behaviour.py:123 in stream_order' from a faulthandler dump, or ''."""
    for line in stderr_text.splitlines():
        line = line.strip()
        if line.startswith("File ") and ("behaviour.py" in line or "static.py" in line):
            try:
                fname = line.split('"')[1]
                parts = line.split('"')[2].strip(" ,").split()   # line N in func
                return f"{os.path.basename(fname)}:{parts[1]} in {parts[3]}"
            except IndexError:
                return ""
    return ""


def _child_env():
    env = dict(os.environ)
    # The child must import this same eagle (source checkout or installed).
    pkg_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [pkg_parent] + [p for p in sys.path if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env.setdefault("PYTHONFAULTHANDLER", "1")
    return env


def _stderr_tail(f, limit=300):
    f.flush()
    f.seek(0)
    text = f.read().decode("utf-8", "replace").strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    tail = " | ".join(lines[-3:])
    return tail[-limit:]


def run_ids(path, ids, timeout, on_result=None):
    """Run the checks `ids` (in order) against the library at `path`; returns Results."""
    results, pending = [], list(ids)
    while pending:
        with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile(prefix="eagle-check-") as crumb:
            crumb.write(b"\0" * 64)
            crumb.flush()
            env = _child_env()
            env["EAGLE_CHECK_BREADCRUMB"] = crumb.name
            proc = subprocess.Popen([sys.executable, "-m", "eagle.check._worker", path, *pending],
                                    stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                    env=env, start_new_session=True)
            current, started, buf = None, time.monotonic(), b""
            sel = selectors.DefaultSelector()
            sel.register(proc.stdout, selectors.EVENT_READ)
            ended = None
            while ended is None:
                limit = timeout if current else max(timeout, 30.0)
                left = limit - (time.monotonic() - started)
                events = sel.select(timeout=max(left, 0.01)) if left > 0 else []
                if not events:
                    if time.monotonic() - started < limit:
                        continue
                    _kill(proc)
                    victim = current or pending[0]
                    last = _last_call(crumb.name)
                    r = Result(victim, "timeout", f"no result within {limit:g} s (per-check "
                                                  "--timeout); the child was killed"
                               + (f"; its last seam call was {last}" if last else ""))
                    results.append(r)
                    pending.remove(victim)
                    if on_result:
                        on_result(r)
                    ended = "timeout"
                    break
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    rc = proc.wait()
                    if pending and current is not None:
                        how = f"killed by {_signal_name(rc)}" if rc < 0 else f"exited with status {rc}"
                        err.seek(0)
                        where = _frame_of_check(err.read().decode("utf-8", "replace"))
                        last = _last_call(crumb.name)
                        msg = f"the child running this check was {how}"
                        if last:
                            msg += f" in or after its last seam call, {last}"
                        if where:
                            msg += f" (check at {where})"
                        elif _stderr_tail(err):
                            msg += f"; stderr: {_stderr_tail(err)}"
                        r = Result(current, "crash", msg)
                        results.append(r)
                        pending.remove(current)
                        if on_result:
                            on_result(r)
                    elif pending:
                        # died before starting any check: every pending check shares the crash
                        how = f"killed by {_signal_name(rc)}" if rc < 0 else f"exited with status {rc}"
                        tail = _stderr_tail(err)
                        for cid in pending:
                            r = Result(cid, "crash", f"the checker's child {how} before this check"
                                       + (f"; stderr: {tail}" if tail else ""))
                            results.append(r)
                            if on_result:
                                on_result(r)
                        pending = []
                    ended = "exit"
                    break
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        continue
                    if "begin" in msg:
                        current, started = msg["begin"], time.monotonic()
                    else:
                        r = Result(msg["id"], msg["result"], msg.get("message", ""), msg.get("kind", ""),
                                   msg.get("duration_s", 0.0), msg.get("calls", {}))
                        results.append(r)
                        if r.id in pending:
                            pending.remove(r.id)
                        current, started = None, time.monotonic()
                        if on_result:
                            on_result(r)
            sel.close()
            proc.stdout.close()
            if proc.poll() is None:
                _kill(proc)
    kinds = {c.id: c.kind for c in all_checks()}
    return _with_kinds(results, kinds)


def _with_kinds(results, kinds):
    for r in results:
        r.kind = r.kind or kinds.get(r.id, "")
    return results


def _kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def run_backend(path, groups=None, timeout=20.0, on_result=None):
    """Every check (or those of `groups`) against one library, group by group."""
    checks = all_checks()
    wanted = [c for c in checks if groups is None or c.group in groups]
    by_group = {}
    for c in wanted:
        by_group.setdefault(c.group, []).append(c.id)
    results = []
    for group in GROUP_ORDER:
        if group in by_group:
            results += run_ids(path, by_group[group], timeout, on_result)
    order = {c.id: i for i, c in enumerate(checks)}
    results.sort(key=lambda r: order.get(r.id, 1 << 30))
    return results
