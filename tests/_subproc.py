"""Run a Python snippet in a fresh interpreter and report how it ended, for tests whose failure
mode may be a crash or a hang (hostile inputs, misuse, broken libraries).

A crash in the child is then a failing test with a readable reason, not a dead test run. Use::

    from _subproc import run_snippet

    out = run_snippet('''
        import eagle
        eagle.backend(PATH)
    ''', env={"EAGLE_TRACE_CALLS": "0"}, globals={"PATH": str(lib)})
    out.expect_raises("BackendLoadError", match="truncated")

The child imports eagle from this repository (the repo root is put first on ``PYTHONPATH``;
the rest of the environment is inherited, so sanitizer preloads and ``$EAGLE_BACKEND_*``
set by the caller reach it). ``faulthandler`` is on in the child, so a fatal signal leaves a
Python traceback in ``stderr``.

How a run ends (``Outcome.status``):

``"ok"``       the snippet ran to its end (``result``: the JSON value of the snippet's global
               ``result``, when it set one);
``"raised"``   an exception escaped it (``exc_type``: the class's qualified name, ``exc_mro``: the
               qualified names of its classes in method-resolution order, ``exc_message``: ``str(exc)``,
               ``eagle_error``: whether it is an ``eagle.errors.EagleError``);
``"signal"``   the process died of a signal (``signal_name``: ``"SIGSEGV"``, ``"SIGBUS"``, ...);
``"exit"``     it exited by itself with a nonzero status and no exception (``returncode``),
               e.g. ``os._exit(3)`` or a C ``abort()`` handled as exit;
``"hang"``     it ran past ``timeout`` seconds; its whole process group was killed.

Every outcome carries ``stdout``, ``stderr`` and ``seconds``, and ``describe()`` gives all of it
for an assertion message. Keep this helper generic: categories of hostile input live in the
test files that use it (one parametrized entry per case).
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs in the child: exec the snippet, then write how it ended to the report file (argv[1]).
_RUNNER = r'''
import faulthandler, json, sys
faulthandler.enable()
_report_path, _snippet_path, _globals_json = sys.argv[1], sys.argv[2], sys.argv[3]
def _report(obj):
    with open(_report_path, "w") as fh:
        json.dump(obj, fh)
def _qualname(cls):
    return f"{cls.__module__}.{cls.__qualname__}"
_g = {"__name__": "__main__"}
_g.update(json.loads(_globals_json))
with open(_snippet_path) as fh:
    _code = compile(fh.read(), "<snippet>", "exec")
try:
    exec(_code, _g)
except BaseException as e:
    try:
        from eagle.errors import EagleError
        is_eagle = isinstance(e, EagleError)
    except Exception:
        is_eagle = False
    _report({"status": "raised", "exc_type": _qualname(type(e)),
             "exc_mro": [_qualname(c) for c in type(e).__mro__], "exc_message": str(e),
             "eagle_error": is_eagle})
    import traceback
    traceback.print_exc()
    del e
    sys.exit(70)  # through the normal teardown, so a crash at exit still shows as a signal
try:
    _result = json.loads(json.dumps(_g.get("result"), default=repr))
except Exception as e:
    _result = repr(e)
_report({"status": "ok", "result": _result})
'''


@dataclass
class Outcome:
    """How one snippet run ended; see the module docstring for the fields per ``status``."""

    status: str
    returncode: int = None
    signal_name: str = None
    exc_type: str = None
    exc_mro: list = field(default_factory=list)
    exc_message: str = None
    eagle_error: bool = False
    result: object = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0

    @property
    def exc_name(self):
        """The exception class's bare name (``'BackendLoadError'``), or None."""
        return self.exc_type.rsplit(".", 1)[-1] if self.exc_type else None

    def raised(self, name):
        """True when the snippet raised an exception that is a ``name`` (bare or qualified class name,
        matched against every class of its MRO)."""
        return self.status == "raised" and any(c == name or c.rsplit(".", 1)[-1] == name for c in self.exc_mro)

    def describe(self):
        """Everything about the run, for an assertion message."""
        head = {"ok": lambda: f"ran to its end (result {self.result!r})",
                "raised": lambda: f"raised {self.exc_type}: {self.exc_message}",
                "signal": lambda: f"died of {self.signal_name}",
                "exit": lambda: f"exited with status {self.returncode} and no Python exception",
                "hang": lambda: f"hung (killed after {self.seconds:.1f} s)"}[self.status]()
        tail = lambda s: s[-3000:] if s else "(empty)"
        return f"the snippet {head}\n--- stdout:\n{tail(self.stdout)}\n--- stderr:\n{tail(self.stderr)}"

    # -- assertions: each fails with describe() ----------------------------------------------
    def expect_ok(self):
        """Assert the snippet ran to its end; returns its ``result``."""
        assert self.status == "ok", self.describe()
        return self.result

    def expect_raises(self, name, match=None):
        """Assert the snippet raised a ``name`` (see :meth:`raised`) whose message contains every
        string of ``match`` (a string or a list of strings)."""
        assert self.raised(name), f"expected {name}; {self.describe()}"
        for part in [match] if isinstance(match, str) else (match or []):
            assert part in self.exc_message, f"expected {part!r} in the message; {self.describe()}"

    def expect_no_crash(self):
        """Assert the snippet neither died of a signal, nor exited by itself, nor hung, and that
        anything it raised is an EagleError (a refusal, not a bare Python exception)."""
        assert self.status in ("ok", "raised"), self.describe()
        if self.status == "raised":
            assert self.eagle_error, f"expected an EagleError; {self.describe()}"


def run_snippet(code, *, timeout=60.0, env=None, globals=None, cwd=None):
    """Run ``code`` (dedented) in a fresh Python interpreter and return its :class:`Outcome`.

    Parameters
    ----------
    code : str
        The snippet; may set a global ``result`` (any JSON-able value; others become ``repr``).
    timeout : float
        Seconds before the run counts as a hang; the child's process group is then killed.
    env : dict, optional
        Variables to set (a value of None removes the variable) over the inherited environment.
    globals : dict, optional
        JSON-able values the snippet sees as globals (paths, sizes), so the code needs no formatting.
    cwd : str, optional
        Working directory of the child (default: a fresh temporary directory).
    """
    child_env = dict(os.environ)
    child_env["PYTHONPATH"] = ROOT + (os.pathsep + child_env["PYTHONPATH"] if child_env.get("PYTHONPATH") else "")
    child_env.setdefault("PYTHONFAULTHANDLER", "1")
    for k, v in (env or {}).items():
        if v is None:
            child_env.pop(k, None)
        else:
            child_env[k] = str(v)
    with tempfile.TemporaryDirectory(prefix="eagle-snippet-") as tmp:
        report = os.path.join(tmp, "report.json")
        snippet = os.path.join(tmp, "snippet.py")
        with open(snippet, "w") as fh:
            fh.write(textwrap.dedent(code))
        args = [sys.executable, "-c", _RUNNER, report, snippet, json.dumps(globals or {})]
        start = time.monotonic()
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                errors="replace", cwd=cwd or tmp, env=child_env, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
            hung = False
        except subprocess.TimeoutExpired:
            hung = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the child and anything it started
            except ProcessLookupError:
                pass
            stdout, stderr = proc.communicate()
        seconds = time.monotonic() - start
        rc = proc.returncode
        if hung:
            return Outcome("hang", returncode=rc, stdout=stdout, stderr=stderr, seconds=seconds)
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            return Outcome("signal", returncode=rc, signal_name=name, stdout=stdout, stderr=stderr,
                           seconds=seconds)
        try:
            with open(report) as fh:
                rep = json.load(fh)
        except (OSError, ValueError):
            rep = None
        if rep is None or (rep["status"] == "ok" and rc != 0):
            # no report, or a clean run whose exit (interpreter teardown) failed afterwards
            return Outcome("exit", returncode=rc, stdout=stdout, stderr=stderr, seconds=seconds,
                           result=rep.get("result") if rep else None)
        return Outcome(**rep, returncode=rc, stdout=stdout, stderr=stderr, seconds=seconds)
