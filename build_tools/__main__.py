"""`python -m build_tools <command>`: generate the seam's artefacts from eagle_backend.h.

Commands (each takes --header PATH, default: the repository's eagle_backend.h):
  ffi -o OUT.py               the cffi out-of-line ABI module eagle._seam_ffi
  meta -o OUT.py              eagle/_seam_meta.py
  version-script -o OUT.map   the linker version script
  layout -o OUT.json          the struct layout manifest
  generate --out-dir DIR      all four: _seam_ffi.py, _seam_meta.py, eagle_backend.map, layout.json
  pins --check | --write      tests/expected_backend_symbols.txt (--pin PATH to use another file)
Exit status: 0 done; 1 the header is not understood or disagrees with the pin; 2 usage or refusal.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from . import cdef, layout, meta, pins, version_script
from .errors import SeamError
from .model import Model
from .parse import load

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_HEADER = ROOT / "eagle_backend.h"
DEFAULT_PIN = ROOT / "tests" / "expected_backend_symbols.txt"


def _layout_json(model: Model) -> str:
    return json.dumps(layout.manifest(model), indent=2) + "\n"


# command -> (renderer, file name inside --out-dir)
ARTEFACTS = {
    "ffi": (cdef.module_source, "_seam_ffi.py"),
    "meta": (meta.render, "_seam_meta.py"),
    "version-script": (version_script.render, "eagle_backend.map"),
    "layout": (_layout_json, "layout.json"),
}


def write(path: Path, text: str) -> None:
    """Write text to path atomically, leaving the file (and its mtime) alone when unchanged."""
    path = Path(path)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m build_tools", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    header = argparse.ArgumentParser(add_help=False)
    header.add_argument("--header", type=Path, default=DEFAULT_HEADER, help="the seam header")
    for name in ARTEFACTS:
        sub = commands.add_parser(name, parents=[header])
        sub.add_argument("-o", "--output", type=Path, required=True)
    sub = commands.add_parser("generate", parents=[header])
    sub.add_argument("--out-dir", type=Path, required=True)
    sub = commands.add_parser("pins", parents=[header])
    mode = sub.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="exit 1 naming every symbol the pin lacks or has extra")
    mode.add_argument("--write", action="store_true", help="rewrite the pin (refused when CI is set)")
    sub.add_argument("--pin", type=Path, default=DEFAULT_PIN)
    return parser


def _pins(args: argparse.Namespace, model: Model) -> int:
    if args.write:
        if "CI" in os.environ:
            print(f"pins --write refused: CI is set; run `{pins.WRITE_COMMAND}` locally and commit the pin",
                  file=sys.stderr)
            return 2
        write(args.pin, pins.render(model))
        print(f"wrote {args.pin} ({len(model.symbols)} symbols)")
        return 0
    pin_text = args.pin.read_text(encoding="utf-8") if args.pin.exists() else ""
    d = pins.diff(model, pin_text)
    if d.ok:
        print(f"{args.pin}: {len(model.symbols)} symbols agree with {args.header}")
        return 0
    print(pins.report(model, d, args.pin, pins.references(args.header, DEFAULT_HEADER) if d.removed else []))
    return 1


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        model = load(args.header)
        if args.command == "pins":
            return _pins(args, model)
        if args.command == "generate":
            for render, name in ARTEFACTS.values():
                write(args.out_dir / name, render(model))
        else:
            render, _ = ARTEFACTS[args.command]
            write(args.output, render(model))
    except SeamError as e:
        print(e, file=sys.stderr)
        return 1
    except OSError as e:
        print(f"{e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
