"""The backend author's kit: where the installed kit lives (``eagle_backend.h``,
``eagle/backend_kit.h``, the version script and ``eagleConfig.cmake``, installed under
``eagle/backend_kit/``) and the skeleton backend that ``python -m eagle new-backend DIR KIND``
writes (eagle/kit/skeleton.py). See docs/add_a_backend.md.

Nothing here loads or runs a backend: ``python -m eagle.check`` does that. The kit reads only the
ground floor (the generated seam metadata, the kinds' table)."""
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


def new_backend(argv):
    """``python -m eagle new-backend DIR KIND``: write the skeleton and print the files written.
    Returns the exit status: 0, or 2 with one line on stderr for a refusal (a reserved or malformed
    kind, a folder the OS will not let it write)."""
    import argparse
    from . import skeleton
    ap = argparse.ArgumentParser(prog="python -m eagle new-backend",
                                 description="Write a minimal backend (the seven required symbols "
                                             "and the stream group) into a new folder.")
    ap.add_argument("dir", help="the folder to create (must not exist, or be empty)")
    ap.add_argument("kind", help="the backend's kind, e.g. mykind (gives libeagle_mykind.so)")
    args = ap.parse_args(argv)
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
