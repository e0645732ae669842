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


#: Where the checks and their helpers live: a faulthandler frame in this folder is the check's.
_GROUPS_DIR = os.path.join("", "check", "groups", "")


def _frame_of_check(stderr_text):
    """'stream.py:123 in stream_order' (the innermost frame in eagle/check/groups/) from a
    faulthandler dump, or ''."""
    for line in stderr_text.splitlines():
        line = line.strip()
        if line.startswith("File ") and _GROUPS_DIR in line:
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


#: Seam calls every behavioural check makes before its own (the handshake): a check that hangs in
#: one of them means every later group would hang there too.
HANDSHAKE = ("eagle_backend_capabilities", "eagle_backend_probe", "eagle_backend_version",
             "eagle_backend_build_info")


class RunDeadline:
    """The whole run's deadline (--total-timeout): a monotonic time, or None for none."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.at = None if seconds is None else time.monotonic() + seconds

    def left(self):
        return float("inf") if self.at is None else self.at - time.monotonic()


def run_ids(path, ids, timeout, on_result=None, run_deadline=None):
    """Run the checks `ids` (in order) against the library at `path`; returns Results.

    Each check has `timeout` seconds from its start. Once one of them has timed out, the rest
    share what is left of 2 x `timeout` from the first start: a library that hangs in every call
    costs a group less than 2 x `timeout`, and the checks not reached are reported as timeout
    (not run). `run_deadline` (a RunDeadline) bounds the whole run: past it nothing more runs, and
    what is left is reported as timeout. The child runs in its own process group, which is killed
    on timeout, on crash clean-up and when this process is interrupted (KeyboardInterrupt,
    SystemExit from SIGTERM)."""
    results, pending = [], list(ids)
    group_start = time.monotonic()
    deadline = None   # set once a check of this group has timed out
    run_deadline = run_deadline or RunDeadline(None)
    advice_ids = {c.id for c in all_checks() if c.advice}

    def emit(r):
        _as_advice([r], advice_ids)
        results.append(r)
        if r.id in pending:
            pending.remove(r.id)
        if on_result:
            on_result(r)

    while pending:
        if run_deadline.left() <= 0:
            for cid in list(pending):
                emit(Result(cid, "timeout", f"not run: the run's time (--total-timeout = "
                                            f"{run_deadline.seconds:g} s) ran out"))
            break
        if deadline is not None and time.monotonic() >= deadline:
            for cid in list(pending):
                emit(Result(cid, "timeout", "not run: an earlier check of this group hung and the "
                                            f"group's time (2 x --timeout = {2 * timeout:g} s) ran out"))
            break
        with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile(prefix="eagle-check-") as crumb:
            crumb.write(b"\0" * 64)
            crumb.flush()
            env = _child_env()
            env["EAGLE_CHECK_BREADCRUMB"] = crumb.name
            # the child ends when this process dies, even of SIGKILL: it watches a pipe whose
            # write end only this process holds (eagle/check/_worker.py)
            alive_r, alive_w = os.pipe()
            env["EAGLE_CHECK_PARENT_FD"] = str(alive_r)
            try:
                proc = subprocess.Popen([sys.executable, "-m", "eagle.check._worker", path, *pending],
                                        stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                        env=env, start_new_session=True, pass_fds=(alive_r,))
            except BaseException:
                os.close(alive_w)
                raise
            finally:
                os.close(alive_r)
            try:
                ended = _drive(proc, err, crumb, pending, timeout, deadline, emit, run_deadline)
            finally:
                # Whatever happened (an interrupt included), the child's process group goes.
                try:
                    proc.stdout.close()
                except OSError:
                    pass
                if proc.poll() is None:
                    _kill(proc)
                os.close(alive_w)
            if ended == "timeout" and deadline is None:
                deadline = group_start + 2 * timeout - 0.5
    kinds = {c.id: c.kind for c in all_checks()}
    return _with_kinds(results, kinds)


def _drive(proc, err, crumb, pending, timeout, deadline, emit, run_deadline=None):
    """Read one child's results until it exits ('exit') or a check times out ('timeout')."""
    current, started, buf = None, time.monotonic(), b""
    run_end = run_deadline.at if run_deadline is not None and run_deadline.at is not None else None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        while True:
            limit = timeout if current else max(timeout, 10.0)
            end = started + limit
            if deadline is not None:
                end = min(end, deadline)
            if run_end is not None:
                end = min(end, run_end)
            # Waits of at most a minute: select() cannot take the wait of a huge --timeout
            # (epoll's limit is about 24 days); the loop waits again until `end`.
            left = min(end - time.monotonic(), 60.0)
            events = sel.select(timeout=left) if left > 0 else []
            if not events:
                if time.monotonic() < end:
                    continue
                _kill(proc)
                if not pending:
                    return "exit"
                victim = current or pending[0]
                last = _last_call(crumb.name)
                if end - started >= limit - 1e-6:
                    why = f"no result within {limit:g} s (per-check --timeout)"
                elif run_end is not None and end >= run_end - 1e-6:
                    why = f"no result before the run's time (--total-timeout = {run_deadline.seconds:g} s) ran out"
                else:
                    why = "no result before the group's time ran out (an earlier check hung)"
                emit(Result(victim, "timeout", why + "; the child was killed"
                            + (f"; its last seam call was {last}" if last else "")))
                return "timeout"
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                rc = proc.wait()
                how = f"killed by {_signal_name(rc)}" if rc < 0 else f"exited with status {rc}"
                if pending and current is not None:
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
                    emit(Result(current, "crash", msg))
                elif pending:
                    # died before starting any check: every pending check shares the crash
                    tail = _stderr_tail(err)
                    for cid in list(pending):
                        emit(Result(cid, "crash", f"the checker's child {how} before this check"
                                    + (f"; stderr: {tail}" if tail else "")))
                return "exit"
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
                    emit(Result(msg["id"], msg["result"], msg.get("message", ""), msg.get("kind", ""),
                                msg.get("duration_s", 0.0), msg.get("calls", {})))
                    current, started = None, time.monotonic()
    finally:
        sel.close()


def _as_advice(results, advice_ids):
    """A crash or hang inside an advice check (e.g. a backend that dereferences a released handle,
    which the header leaves undefined) is advice too: it says so, and never fails the run."""
    for r in results:
        if r.id in advice_ids and r.result in ("crash", "timeout"):
            r.message = f"advice (not required by the header): {r.result}: {r.message}"
            r.result = "advice"
    return results


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


def _handshake_hung(results):
    """The handshake call a timed-out check was in (its last seam call), or ''."""
    for r in results:
        if r.result == "timeout":
            for name in HANDSHAKE:
                if f"its last seam call was {name}" in r.message:
                    return name
    return ""


def run_backend(path, groups=None, timeout=20.0, on_result=None, total_timeout=None):
    """Every check (or those of `groups`) against one library, group by group. The whole run ends
    within `total_timeout` seconds (None: no bound but the per-group one), what is left reported as
    timeout; and once a check hangs in a handshake call (capabilities, probe, version,
    build_info: HANDSHAKE), which every later check would make first, the groups after it are not
    run but reported as timeout, naming that call."""
    checks = all_checks()
    wanted = [c for c in checks if groups is None or c.group in groups]
    by_group = {}
    for c in wanted:
        by_group.setdefault(c.group, []).append(c.id)
    results = []
    run_deadline = RunDeadline(total_timeout)
    hung = ""
    for group in GROUP_ORDER:
        if group not in by_group:
            continue
        if hung:
            for cid in by_group[group]:
                r = Result(cid, "timeout", f"not run: an earlier check hung in {hung}, which every check calls "
                                           "first (the handshake)")
                _with_kinds([r], {c.id: c.kind for c in checks})
                results.append(r)
                if on_result:
                    on_result(r)
            continue
        got = run_ids(path, by_group[group], timeout, on_result, run_deadline)
        results += got
        if group in ("static", "required"):
            hung = _handshake_hung(got)
    order = {c.id: i for i, c in enumerate(checks)}
    results.sort(key=lambda r: order.get(r.id, 1 << 30))
    return results
