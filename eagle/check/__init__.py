"""``python -m eagle.check``: the conformance run for backend libraries.

See ``docs/add_a_backend.md``. The programmatic entry is :func:`run`, which returns the list of
results (each with ``id``, ``group``, ``result``, ``message``) for one library.

Layout: ``groups/`` holds the checks, one module per seam group (``groups/stream.py`` every check
whose ID starts with ``stream.`` or ``stream_query.``, ...; the table is in groups/__init__.py),
and ``groups/_helpers.py`` what several groups share; a group module imports no other. Around
them: ``_registry`` (IDs, results, the group order), ``citations`` (the header sentences each
check enforces), ``_seam`` (the raw session a check calls through) and ``_device`` (the checker's
own device memory and kernels), ``_runner`` / ``_worker`` (each group in a child process; crash
and timeout), ``report`` and ``__main__`` (the table, ``--json``, ``--junit``)."""


def run(path, groups=None, timeout=20.0):
    """Run the checks against the library at ``path``; a list of results."""
    from ._runner import run_backend
    return run_backend(path, groups, timeout)
