"""Stopping the drains an interrupted wait was for.

A drained launch (``ActiveSet.drain``, and so every ``eagle.ode`` solve) reads a cancel word in
its queue words (eagle/kernel.h, ``name_drain``): while it is nonzero every lane stops at its next
round. When a signal handler interrupts a wait on the main thread (Ctrl-C's KeyboardInterrupt, an
alarm's exception), the compiled wait (backends/python/hotcall.c) or the cffi one calls
:func:`on_interrupted` with the wait's owner (a Stream or a Launcher, or the keeper eagle/_handle.py
gives its bound calls), before the exception leaves
the wait. The drains that wait was for are stopped:

- a Stream's: the ActiveSets whose last drain was enqueued on that stream (its raw value);
- a Launcher's (a Graph's replay): the ActiveSets whose drains the graph recorded (eagle/_recording.py
  collects them; ``Graph.build`` keeps them on the launcher, with the Graph itself when it has
  WHILE loops: ``Graph._cancel`` ends them), and those of its stream.

Each one's cancel word is set at once (out of stream order: a host write for host memory, a copy
on a stream of its own elsewhere) and cleared again in stream order on the interrupted stream,
so the stopped launch ends within a round and anything enqueued after it runs normally. The work
then finishes by itself: the next solve starts at once and the exit drain (eagle/_inflight/exit.py)
has nothing left to wait for. Work whose wait was not interrupted is never stopped; a kernel
that is not a drain (a user's loop that never ends) is not stopped either, and the exit still
waits for it at most ``$EAGLE_EXIT_WAIT_S`` seconds.

Samples a stopped drain leaves are where it stopped (not finished, and not reported as finished
by anything that waits for them, since the wait raised). Draining them again continues them."""
import weakref

from .. import _hotcall

#: ActiveSets (anything with ``_cancel(stream)``, ``backend`` and ``_drain_stream``) that have drained.
_sets = weakref.WeakSet()


def register(aset):
    """``aset`` has drained (or recorded a drain): an interrupted wait may have to stop it."""
    _sets.add(aset)


def on_interrupted(owner):
    """Stop the drains the interrupted wait of ``owner`` (a Stream or a Launcher) was for.
    Never raises (a second interrupt landing here only stops the stopping)."""
    try:
        keeper_of = getattr(owner, "owner", None)  # the bound call reports to the owner's keeper
        if callable(keeper_of) and not hasattr(owner, "_backend"):
            owner = keeper_of()
        backend = getattr(owner, "_backend", None)
        stream = getattr(owner, "_raw", None)           # a Stream (or StreamRef)
        recorded_sets = ()
        if stream is None:                              # a Launcher: the stream it replays on
            stream = getattr(owner, "_cancel_stream", None)
            recorded_sets = [r() for r in getattr(owner, "_cancel_sets", None) or ()]
        if stream is None or backend is None:
            return
        targets = [a for a in recorded_sets if a is not None]
        targets += [a for a in list(_sets) if a.backend is backend and a._drain_stream == stream
                    and a not in targets]
        for a in targets:
            a._cancel(stream)
    except BaseException:  # noqa: BLE001 - see the docstring
        pass


if on_interrupted not in _hotcall.ON_INTERRUPT:
    _hotcall.ON_INTERRUPT.append(on_interrupted)
