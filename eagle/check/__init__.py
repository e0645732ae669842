"""``python -m eagle.check``: the conformance run for backend libraries.

See ``docs/add_a_backend.md``. The programmatic entry is :func:`run`, which returns the list of
results (each with ``id``, ``group``, ``result``, ``message``) for one library."""


def run(path, groups=None, timeout=20.0):
    """Run the checks against the library at ``path``; a list of results."""
    from ._runner import run_backend
    return run_backend(path, groups, timeout)
