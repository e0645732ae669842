"""Child process: open one backend and run the checks named on the command line.

    python -m eagle.check._worker LIBRARY CHECK_ID...

Writes one JSON object a line to stdout: {"begin": id} before each check, then its result.
The parent (eagle/check/_runner.py) turns a death or a silence into crash / timeout."""
import faulthandler
import json
import os
import sys
import time
import traceback


def _emit(obj):
    sys.__stdout__.write(json.dumps(obj) + "\n")
    sys.__stdout__.flush()


def run(path, ids):
    from ._all import all_checks
    from ._registry import REGISTRY, CheckFailure, NotSupported, Skip
    from ._seam import Session

    all_checks()
    session, open_error = None, None
    try:
        session = Session(path)
    except Skip as e:
        open_error = str(e)
    crumb_path = os.environ.get("EAGLE_CHECK_BREADCRUMB")
    if session is not None and crumb_path:
        import mmap
        with open(crumb_path, "r+b") as f:
            session.breadcrumb = mmap.mmap(f.fileno(), 64)
    no_exports = session is not None and not session.exports_any_seam_symbol()
    declared = None   # the backend's version() minor, read once
    for cid in ids:
        chk = REGISTRY[cid]
        _emit({"begin": cid})
        t0 = time.monotonic()
        before = dict(session.calls) if session else {}
        result, message = "pass", ""
        try:
            if session is None:
                if cid == "static.loadable":
                    raise CheckFailure(open_error)
                raise Skip(open_error)
            if no_exports and cid not in ("static.loadable", "static.exports_seam"):
                # One cause, said once (static.exports_seam), not a failure per check.
                raise Skip("not run: the library exports no seam symbol (see static.exports_seam)")
            if chk.kind == "behaviour":
                session.require(chk.group, own=True)
            # A rule the header added after the minor the backend declares is not imposed on it.
            if chk.since:
                if declared is None:
                    declared = int(session.raw("version")) & 0xFFFF if session.has("version") else 0
                if declared < chk.since:
                    raise Skip(f"the rule it checks applies from seam minor {chk.since}; the backend "
                               f"declares eagle-backend/1.{declared}")
            if chk.kind == "behaviour":
                for need in chk.needs:
                    session.require(need)
            message = chk.fn(session) or ""
        except CheckFailure as e:
            result, message = ("advice", f"advice (not required by the header): {e}") if chk.advice \
                else ("fail", str(e))
        except Skip as e:
            result, message = "skip", str(e)
        except NotSupported as e:
            result, message = "not_supported", str(e)
        except Exception as e:  # noqa: BLE001 - a check that breaks is a failure, with its place
            tb = traceback.extract_tb(e.__traceback__)[-1]
            result = "fail"
            message = (f"{type(e).__name__}: {e} (at {os.path.basename(tb.filename)}:{tb.lineno})")
            if chk.advice:
                result, message = "advice", "advice (not required by the header): " + message
        calls = {}
        if session:
            calls = {k: v - before.get(k, 0) for k, v in session.calls.items() if v - before.get(k, 0)}
        _emit({"id": cid, "result": result, "message": message, "kind": chk.kind,
               "duration_s": time.monotonic() - t0, "calls": calls})
    if session:
        session.close()


def _die_with_parent():
    """End this child when the checker that started it dies, even of SIGKILL (which leaves it no
    chance to kill the child's process group): $EAGLE_CHECK_PARENT_FD is the read end of a pipe
    whose only write end the checker holds; a thread waits on it and ends the process when it
    reads end-of-file (the checker is gone). It needs no help from the check: cffi releases the
    GIL in seam calls, and a check spinning in Python gives it up every switch interval."""
    try:
        fd = int(os.environ.get("EAGLE_CHECK_PARENT_FD", ""))
    except ValueError:
        return  # started by hand: nothing to watch
    import threading

    def watch():
        try:
            while os.read(fd, 1):
                pass
        except OSError:
            pass
        os._exit(1)
    threading.Thread(target=watch, name="eagle.check parent watch", daemon=True).start()


def main(argv):
    _die_with_parent()
    faulthandler.enable()
    # Nothing but the protocol goes to stdout: a backend's own printing goes to stderr.
    sys.stdout = sys.stderr
    try:
        os.dup2(2, 1)
    except OSError:
        pass
    run(argv[0], argv[1:])


if __name__ == "__main__":
    # stdout is re-opened on the saved descriptor before fd 1 is pointed at stderr.
    sys.__stdout__ = os.fdopen(os.dup(1), "w", buffering=1)
    main(sys.argv[1:])
    sys.__stdout__.flush()
    os._exit(0)
