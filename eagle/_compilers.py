"""Where pip wheels put runtime compilers, for module_from_source's search list.

The backend knows its own compiler's library names (libnvrtc, libhiprtc) and the system's search;
what it cannot know is where Python packages live. The NVIDIA wheels (eagle's ``cuda`` extra, ``nvidia-cuda-nvrtc``
brings ``nvidia-cuda-nvrtc``) unpack their libraries into ``site-packages/nvidia/<part>/lib``; those
directories are handed to every backend, which looks there for its own compiler only."""
import glob
import os
import sys

#: Glob patterns, relative to a ``sys.path`` entry, of wheel library directories.
WHEEL_LIBRARY_GLOBS = ("nvidia/*/lib", "nvidia/*/lib64")


def wheel_library_dirs():
    """Existing library directories of installed compiler wheels, in ``sys.path`` order."""
    out = []
    for entry in sys.path:
        base = os.path.abspath(entry or ".")
        for pattern in WHEEL_LIBRARY_GLOBS:
            for d in sorted(glob.glob(os.path.join(base, pattern))):
                if os.path.isdir(d) and d not in out:
                    out.append(d)
    return out
