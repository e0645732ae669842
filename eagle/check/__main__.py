"""python -m eagle.check [PATH|KIND ...] [--json] [--junit FILE] [--group G] [--timeout S]

The conformance run for a backend library: static checks of the file and its handshake, then
behavioural checks per group where probe() says a device is usable. Each check runs in a child
process, so a crash or a hang is reported (crash with the signal, timeout) and the rest runs.
Exit status 0 only when nothing failed, crashed or timed out."""
import argparse
import os
import sys

from ._registry import FAILING, GROUP_ORDER


def _targets(names):
    """(label, absolute path) for each PATH or KIND; none = every installed backend."""
    from .._loader import _resolve, backends
    if not names:
        found = backends()
        if not found:
            raise SystemExit("eagle.check: no backend is installed (and none named); pass a path "
                             "to a libeagle_<kind>.so or set $EAGLE_BACKEND_<KIND>")
        return [(k, p) for k, p in sorted(found.items())]
    out = []
    for name in names:
        if os.sep in name or "." in os.path.basename(name) or os.path.exists(name):
            path = os.path.abspath(name)
            if not os.path.exists(path):
                raise SystemExit(f"eagle.check: no file at '{path}'")
            out.append((name, path))
        else:
            try:
                _kind, path, _how = _resolve(name)
            except Exception as e:  # noqa: BLE001 - shown to the user as is
                raise SystemExit(f"eagle.check: {e}") from None
            out.append((name, path))
    return out


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

    from . import report
    from ._runner import run_backend

    runs = []
    for label, path in _targets(args.targets):
        if not args.json:
            print(f"checking {label} ({path}) ...", file=sys.stderr, flush=True)
        results = run_backend(path, set(args.group) if args.group else None, args.timeout)
        runs.append((path, {}, results))
    if args.json:
        print(report.to_json(runs))
    else:
        print(report.table(runs, args.verbose))
    if args.junit:
        report.junit(runs, args.junit)
    bad = any(r.result in FAILING for _, _, rs in runs for r in rs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
