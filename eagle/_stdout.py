"""What a command-line entry point prints, when stdout is a closed pipe or a full disk
(``python -m eagle --cmake-dir | head -0``, ``> /dev/full``): no traceback, one line on stderr
(none for a closed pipe, as other tools do) and a nonzero exit status.

    from eagle._stdout import printing
    with printing("python -m eagle"):
        print(...)

The block's output is flushed inside it, so a failing write is seen there; stdout is then pointed
at /dev/null, so that the interpreter's own flush at exit does not fail again."""
import contextlib
import errno
import os
import sys


class _Exit(SystemExit):
    pass


@contextlib.contextmanager
def printing(prog):
    try:
        yield
        sys.stdout.flush()
    except (BrokenPipeError, OSError) as e:
        if not isinstance(e, BrokenPipeError) and e.errno not in (errno.EPIPE, errno.ENOSPC, errno.EDQUOT,
                                                                  errno.EIO, errno.EBADF):
            raise
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass
        if not isinstance(e, BrokenPipeError) and e.errno != errno.EPIPE:
            try:
                sys.stderr.write(f"{prog}: cannot write its output: {os.strerror(e.errno)}\n")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
        raise _Exit(1) from None
