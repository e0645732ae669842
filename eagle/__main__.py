"""python -m eagle [--cmake-dir | --include-dir | --package-dir] | new-backend DIR KIND

Where eagle's installed backend author kit lives, and a skeleton backend to start from:
  --cmake-dir     the folder of eagleConfig.cmake (cmake -Deagle_DIR="$(python -m eagle --cmake-dir)")
  --include-dir   the folder that holds eagle_backend.h and eagle/backend_kit.h
  --package-dir   the installed eagle package, where libeagle_<kind>.so backends are found
  new-backend DIR KIND   write a minimal backend of KIND into the new folder DIR
See docs/add_a_backend.md."""
import argparse
import os
import sys


def kit_dir():
    """The installed ``backend_kit`` folder (beside the generated modules), or SystemExit."""
    import eagle
    for d in list(eagle.__path__):
        cand = os.path.join(os.path.abspath(d), "backend_kit")
        if os.path.isfile(os.path.join(cand, "cmake", "eagleConfig.cmake")):
            return cand
    raise SystemExit("eagle: the backend author kit is not installed with this eagle (looked for "
                     "backend_kit/cmake/eagleConfig.cmake in " + ", ".join(eagle.__path__) +
                     "); install eagle with `pip install .` from a checkout, or build the backends "
                     "with -DEAGLE_INSTALL_KIT=ON")


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "new-backend":
        ap = argparse.ArgumentParser(prog="python -m eagle new-backend",
                                     description="Write a minimal backend (the seven required symbols "
                                                 "and the stream group) into a new folder.")
        ap.add_argument("dir", help="the folder to create (must not exist, or be empty)")
        ap.add_argument("kind", help="the backend's kind, e.g. mykind (gives libeagle_mykind.so)")
        args = ap.parse_args(argv[1:])
        from .check import skeleton
        try:
            written = skeleton.write(args.dir, args.kind)
        except OSError as e:
            # skeleton.write's own refusals are sentences; the OS's errors name a path and a reason
            print(e if e.filename is None else f"eagle new-backend: cannot write '{e.filename}': "
                  f"{e.strerror or e}", file=sys.stderr)
            return 2
        except ValueError as e:
            print(e, file=sys.stderr)
            return 2
        for path in written:
            print(path)
        return 0
    ap = argparse.ArgumentParser(prog="python -m eagle", description=__doc__.split("\n\n")[1])
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
