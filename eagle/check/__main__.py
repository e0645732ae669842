"""python -m eagle.check [PATH|KIND ...] [--json] [--junit FILE] [--group G] [--timeout S]

The conformance run for a backend library: static checks of the file and its handshake, then
behavioural checks per group where probe() says a device is usable. Each check runs in a child
process, so a crash or a hang is reported (crash with the signal, timeout) and the rest runs.
Exit status: 0 when nothing failed, crashed or timed out; 1 when something did; 2 when a
library or kind named cannot be found or loaded (nothing is checked then)."""
import argparse
import os
import signal
import sys

from ._registry import FAILING, GROUP_ORDER

EXIT_PASS, EXIT_FAIL, EXIT_NOT_LOADED = 0, 1, 2


class NotLoaded(Exception):
    """A library or kind named on the command line cannot be found or loaded."""


def _targets(names):
    """(label, absolute path) for each PATH or KIND; none = every installed backend."""
    from .._loader import _resolve, backends
    if not names:
        found = backends()
        if not found:
            raise NotLoaded("eagle.check: no backend is installed (and none named); pass a path "
                            "to a libeagle_<kind>.so or set $EAGLE_BACKEND_<KIND>")
        return [(k, p) for k, p in sorted(found.items())]
    out = []
    for name in names:
        if os.sep in name or "." in os.path.basename(name) or os.path.exists(name):
            path = os.path.abspath(name)
            if not os.path.exists(path):
                raise NotLoaded(f"eagle.check: no file at '{path}'")
            out.append((name, path))
        else:
            try:
                _kind, path, _how = _resolve(name)
            except Exception as e:  # noqa: BLE001 - shown to the user as is
                raise NotLoaded(f"eagle.check: {e}") from None
            out.append((name, path))
    return out


def _loads(path):
    """'' when `path` opens with dlopen in a child process, else why not (a crash included)."""
    import subprocess
    code = ("import sys\nfrom eagle._seam_ffi import ffi\ntry:\n    ffi.dlopen(sys.argv[1])\n"
            "except OSError as e:\n    print(e); sys.exit(3)\n")
    from ._runner import _child_env
    try:
        proc = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                              env=_child_env(), timeout=60, start_new_session=True)
    except subprocess.TimeoutExpired:
        return f"opening '{path}' did not finish within 60 s"
    if proc.returncode == 0:
        return ""
    if proc.returncode == 3:
        return f"'{path}' does not load: {proc.stdout.strip()}"
    how = (f"was killed by signal {-proc.returncode}" if proc.returncode < 0
           else f"exited with status {proc.returncode}")
    return f"opening '{path}' {how}: {proc.stderr.strip()[-300:]}"


def _on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m eagle.check", description=__doc__.split("\n\n")[1])
    ap.add_argument("targets", nargs="*", metavar="PATH|KIND",
                    help="backend library paths or kinds (none: every installed backend)")
    ap.add_argument("--json", action="store_true", help="machine-readable results on stdout")
    ap.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    ap.add_argument("--group", action="append", metavar="G", choices=GROUP_ORDER,
                    help="run only this group (repeatable)")
    ap.add_argument("--timeout", type=float, default=20.0, metavar="S",
                    help="per-check timeout in seconds (default 20)")
    ap.add_argument("-v", "--verbose", action="store_true", help="list skipped checks too")
    args = ap.parse_args(argv)
    # SIGTERM unwinds like SIGINT, so that the running check's child process group is killed
    # (eagle/check/_runner.py) and no worker is left behind.
    signal.signal(signal.SIGTERM, _on_sigterm)

    from . import report
    from ._runner import run_backend

    try:
        targets = _targets(args.targets)
        for _label, path in targets:
            why = _loads(path)
            if why:
                raise NotLoaded(f"eagle.check: {why}")
    except NotLoaded as e:
        print(e, file=sys.stderr)
        return EXIT_NOT_LOADED
    runs = []
    for _label, path in targets:
        results = run_backend(path, set(args.group) if args.group else None, args.timeout)
        runs.append((path, {}, results))
    if args.json:
        print(report.to_json(runs))
    else:
        print(report.table(runs, args.verbose))
    if args.junit:
        report.junit(runs, args.junit)
    bad = any(r.result in FAILING for _, _, rs in runs for r in rs)
    return EXIT_FAIL if bad else EXIT_PASS


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("eagle.check: interrupted", file=sys.stderr)
        sys.exit(128 + signal.SIGINT)
