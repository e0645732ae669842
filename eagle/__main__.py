"""python -m eagle (--cmake-dir | --include-dir | --package-dir | new-backend DIR KIND)

Where eagle's installed backend author kit lives, and a skeleton backend to start from:
  --cmake-dir     the folder of eagleConfig.cmake (cmake -Deagle_DIR="$(python -m eagle --cmake-dir)")
  --include-dir   the folder that holds eagle_backend.h and eagle/backend_kit.h
  --package-dir   the installed eagle package, where libeagle_<kind>.so backends are found
  new-backend DIR KIND   write a minimal backend of KIND into the new folder DIR
With no argument it prints this. The kit is eagle/kit/; see docs/add_a_backend.md."""
import argparse
import os
import sys

USAGE = "python -m eagle [-h] (--cmake-dir | --include-dir | --package-dir | new-backend DIR KIND)"


_FLAGS = ("--cmake-dir", "--include-dir", "--package-dir")
_VERBS = ("new-backend",)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    from ._stdout import printing
    from .kit import kit_dir, new_backend
    if argv and argv[0] == "new-backend":
        return new_backend(argv[1:])
    with printing("python -m eagle"):
        if not argv:  # nothing asked: say what can be asked, as -h does
            print(__doc__)
            return 0
        ap = argparse.ArgumentParser(prog="python -m eagle", usage=USAGE, description=__doc__.split("\n\n")[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
        # what is not a flag or verb of eagle's is named first (argparse would only say that one of
        # the flags is required), with the nearest known one
        for a in argv:
            if a not in _FLAGS and a not in ("-h", "--help"):
                import difflib
                near = difflib.get_close_matches(a, _FLAGS + _VERBS, n=1, cutoff=0.6)
                ap.error(f"unknown {'option' if a.startswith('-') else 'command'} {a!r}"
                         + (f" (did you mean {near[0]!r}?)" if near else "")
                         + f"; give one of {', '.join(_FLAGS)} or new-backend DIR KIND")
        what = ap.add_mutually_exclusive_group(required=True)
        what.add_argument("--cmake-dir", action="store_true", help="print the folder of eagleConfig.cmake")
        what.add_argument("--include-dir", action="store_true", help="print the kit's include folder")
        what.add_argument("--package-dir", action="store_true", help="print the installed package folder")
        args = ap.parse_args(argv)
        kit = kit_dir()
        if args.cmake_dir:
            print(os.path.join(kit, "cmake"))
        elif args.include_dir:
            print(os.path.join(kit, "include"))
        else:
            print(os.path.dirname(kit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
