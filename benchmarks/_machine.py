"""The machine line every benchmark prints beside its figures, the header it opens with, the
switch onto eagle's cffi fallback, and the interleaving of paired cases."""
import datetime
import os
import platform
import sys


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
    np = sys.modules.get("numpy")
    return line + (f", numpy {np.__version__}" if np is not None else "")


def header(*env, **env_unset):
    """Print the machine, date and command lines. The command line ends with the environment
    variables named: `env` show '' when unset, `env_unset` (NAME=text) show their text."""
    shown = {name: os.environ.get(name, "") for name in env}
    shown.update({name: os.environ.get(name, text) for name, text in env_unset.items()})
    print(f"machine: {machine()}")
    print(f"date:    {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"command: {' '.join([os.path.basename(sys.executable)] + sys.argv)}  "
          f"({', '.join(f'{k}={v}' for k, v in shown.items())})")


def cffi_fallback():
    """Bound calls made inside take eagle's cffi fallback, as a build without eagle's compiled
    hot path does (eagle.benchknobs.cffi_fallback)."""
    from eagle.benchknobs import cffi_fallback as fallback
    return fallback()


def interleave_pairs(pairs, rounds):
    """``{name: ([a samples], [b samples])}`` for ``pairs`` (name -> (a, b), each a callable
    returning one figure) over ``rounds`` rounds: the order of the names rotates each round, and
    a and b alternate which goes first, so no case always follows the same one."""
    samples = {k: ([], []) for k in pairs}
    names = list(pairs)
    for r in range(rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            a, b = pairs[k]
            if r % 2:
                samples[k][1].append(b())
                samples[k][0].append(a())
            else:
                samples[k][0].append(a())
                samples[k][1].append(b())
    return samples
