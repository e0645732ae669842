"""python -m eagle.check [PATH|KIND ...] [--json] [--junit FILE] [--group G] [--timeout S] [--total-timeout S]
python -m eagle.check --coverage [--uncited] [--json]

The conformance run for a backend library: static checks of the file and its handshake, then
behavioural checks per group where probe() says a device is usable. Each check runs in a child
process, so a crash or a hang is reported (crash with the signal, timeout) and the rest runs.
Every check cites the header sentences it enforces; advice (good practice the header does not
require) is reported beside pass and fail and never fails the run.
Exit status: 0 when nothing failed, crashed or timed out; 1 when something did; 2 when a
library or kind named cannot be found or loaded, or an option is refused (a --timeout that is
not a positive number, an output file that cannot be written): nothing is checked then (an
output file that can no longer be written after the run gives 2 too, after the table). With
--json, a library that cannot be found or loaded still gives a JSON document on stdout, of the
usual shape: that library with an "error", zero checks.

Time is bounded: each check by --timeout, each group by twice that once a check in it hung, and
the whole run of one library by --total-timeout (default 30 x --timeout); a check that hangs in
the handshake (capabilities, probe, version, build_info) ends the run of that library at once,
the rest reported as timeout. --coverage lists the header's sentences and the checks that cite
them (eagle/check/coverage.py) instead of running anything."""
import argparse
import math
import os
import signal
import sys

from ._registry import FAILING, GROUP_ORDER

EXIT_PASS, EXIT_FAIL, EXIT_NOT_LOADED = 0, 1, 2


class NotLoaded(Exception):
    """A library or kind named on the command line cannot be found or loaded. ``library``: the
    absolute path when known, else the kind as named, None when nothing was named; ``str()``:
    why, without the ``eagle.check:`` prefix."""

    def __init__(self, library, why):
        super().__init__(why)
        self.library = library


def _positive_seconds(text):
    """argparse type of --timeout: a positive, finite number of seconds. Zero, a negative value,
    NaN or infinity is refused while parsing (exit status 2): each would make every check time out
    or the run fail, after minutes of work."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


def _output_file(text):
    """argparse type of an option naming a file the checker writes after the run (--junit): the
    path as given, refused while parsing (exit status 2, naming the path and why) when it is a
    folder, when its folder is missing, or when it cannot really be written, so that no run is
    lost to a path that cannot be written. Writability is tried, not asked (``os.access`` says
    yes to root for /proc and for read-only mounts): an existing file is opened for appending
    (nothing in it changes), a new one is created and removed again."""
    path = os.path.abspath(text)
    folder = os.path.dirname(path)
    if os.path.isdir(path):
        why = "it is a folder"
    elif not os.path.isdir(folder):
        why = (f"'{folder}' is not a folder" if os.path.exists(folder)
               else f"the folder '{folder}' does not exist")
    else:
        why = _cannot_write(path, folder)
        if why is None:
            return text
    raise argparse.ArgumentTypeError(f"cannot write {text!r}: {why}")


def _cannot_write(path, folder):
    """Why ``path`` cannot be written (tried: see _output_file), or None when it can."""
    existed = os.path.lexists(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND if existed else os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError as e:
        where = f"'{path}' is not writable" if existed else f"the folder '{folder}' is not writable"
        return f"{where} ({e.strerror or e})"
    os.close(fd)
    if not existed:
        try:
            os.unlink(path)
        except OSError:
            pass
    return None


def _targets(names):
    """(label, absolute path) for each PATH or KIND; none = every installed backend."""
    from .._loader import _resolve, backends
    if not names:
        found = backends()
        if not found:
            raise NotLoaded(None, "no backend is installed (and none named); pass a path "
                                  "to a libeagle_<kind>.so or set $EAGLE_BACKEND_<KIND>")
        return [(k, p) for k, p in sorted(found.items())]
    out = []
    for name in names:
        if os.sep in name or "." in os.path.basename(name) or os.path.exists(name):
            path = os.path.abspath(name)
            if not os.path.exists(path):
                raise NotLoaded(path, f"no file at '{path}'")
            out.append((name, path))
        else:
            try:
                _kind, path, _how = _resolve(name)
            except Exception as e:  # noqa: BLE001 - shown to the user as is
                raise NotLoaded(name, str(e)) from None
            out.append((name, path))
    return out


def _loads(path):
    """'' when `path` opens, else why not. First eagle's own ELF check (eagle/_elf_check.py, the
    one eagle.backend() runs before dlopen), here in this process: a truncated or foreign file is
    named by its defect, where dlopen would die of SIGBUS. Then dlopen in a child process, which
    reports a crash (a constructor that aborts, ...) as such."""
    import subprocess

    from .._elf_check import IS_ELF_PLATFORM, defect
    if IS_ELF_PLATFORM:
        try:
            why = defect(path)
        except OSError as e:
            return f"'{path}' cannot be read: {e}"
        if why:
            return f"'{path}' does not load: {why}"
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
    ap.add_argument("--junit", metavar="FILE", type=_output_file, help="also write JUnit XML to FILE")
    ap.add_argument("--group", action="append", metavar="G", choices=GROUP_ORDER,
                    help="run only this group (repeatable)")
    ap.add_argument("--timeout", type=_positive_seconds, default=20.0, metavar="S",
                    help="per-check timeout in seconds (default 20)")
    ap.add_argument("--total-timeout", type=_positive_seconds, default=None, metavar="S",
                    help="bound on the whole run, per library, in seconds (default 30 x --timeout: 600 s); "
                         "what is left when it runs out is reported as timeout")
    ap.add_argument("--coverage", action="store_true",
                    help="list every sentence of eagle_backend.h with the checks citing it (or why none can), "
                         "and check nothing; exit status 1 when a normative sentence has neither")
    ap.add_argument("--uncited", action="store_true", help="with --coverage: list only the uncited sentences")
    ap.add_argument("-v", "--verbose", action="store_true", help="list skipped checks too")
    args = ap.parse_args(argv)
    if args.coverage:
        from . import coverage
        return coverage.main(as_json=args.json, only_uncited=args.uncited)
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
                raise NotLoaded(path, why)
    except NotLoaded as e:
        print(f"eagle.check: {e}", file=sys.stderr)
        if args.json:  # a JSON consumer still gets a document: this library, why, no checks
            print(report.not_loaded_json(e.library, str(e)))
        return EXIT_NOT_LOADED
    runs = []
    for _label, path in targets:
        total = args.total_timeout if args.total_timeout is not None else 30 * args.timeout
        results = run_backend(path, set(args.group) if args.group else None, args.timeout, total_timeout=total)
        runs.append((path, {}, results))
    if args.json:
        print(report.to_json(runs))
    else:
        print(report.table(runs, args.verbose))
    if args.junit:
        try:
            report.junit(runs, args.junit)
        except OSError as e:  # it could be written before the run (_output_file): say why not now
            print(f"eagle.check: cannot write --junit {args.junit!r}: {e.strerror or e}", file=sys.stderr)
            return EXIT_NOT_LOADED
    bad = any(r.result in FAILING for _, _, rs in runs for r in rs)
    return EXIT_FAIL if bad else EXIT_PASS


if __name__ == "__main__":
    from .._stdout import printing
    try:
        with printing("python -m eagle.check"):  # into a closed pipe or a full disk: one line, no traceback
            rc = main()
        sys.exit(rc)
    except KeyboardInterrupt:
        print("eagle.check: interrupted", file=sys.stderr)
        sys.exit(128 + signal.SIGINT)
