"""The machine line every benchmark prints beside its figures."""
import os
import platform


def machine():
    """CPU model, logical CPUs, OS and Python (and numpy, when imported) of this machine."""
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    line = (f"{cpu}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}")
    import sys
    np = sys.modules.get("numpy")
    return line + (f", numpy {np.__version__}" if np is not None else "")
