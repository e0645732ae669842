"""What ``stream=`` means for a call that does work on arrays, in one place.

Every public entry point that enqueues work (``eagle.copy/run/compact``, ``Backend.copy/run/
compact/reorder``, ``Stream.copy/run``, ``Kernel.run``, ``ActiveSet.compact``) hands the one
enqueue of its seam object to :func:`submit`, which applies the one policy:

- ``stream=None``: the work runs on eagle's own stream of this thread (:func:`own_stream`) and
  the call returns when it is done. The caller's arguments were alive throughout,
  so nothing is held and no release marker is enqueued.
- an explicit stream: the work is enqueued there and the call returns at once; the stream keeps
  the arrays the work uses alive until it has run them (eagle/_inflight/holds.py).

Seam-object modules only say how to enqueue an operation (``enqueue_copy``, ``enqueue_run``,
``enqueue_compact``, ``enqueue_reorder``); none of them decides this. A measured fast path that
already holds a checked desc (eagle.api's eager ``compact``) takes the same two steps itself:
:func:`own_stream`, then :func:`call_and_wait` of its one seam call."""
import threading

from .._recording import refuse_eager
from .._stream_arg import raw_stream
from ..errors import EagleError
from . import holds as _holds
from .holds import keep_until_sync, released_by_sync

_own = threading.local()


def own_stream(backend, what="a call given no stream="):
    """eagle's own stream of ``backend`` for this thread: where a call given no stream runs its
    work before it waits for it. A blocking stream, so on kinds with a legacy default stream
    (cuda, and cpu's stream 0) it is ordered after the work other code enqueued there.

    Every call given no stream comes through here, so this is where such a call (``what`` names
    it) is refused while ``Graph.build`` records a step on this thread or the backend's default
    stream is being captured (eagle/_recording.py): it would run once and never be replayed."""
    refuse_eager(what, backend)
    streams = getattr(_own, "streams", None)
    if streams is None:
        streams = _own.streams = {}
    s = streams.get(id(backend))
    if s is None:
        s = streams[id(backend)] = backend.stream()
    return s


def _door(enqueue, args):
    """The public call an enqueue serves, for a refusal's message: ``enqueue_copy`` ->
    ``eagle.copy``, ``ActiveSet._enqueue_compact`` -> ``ActiveSet.compact``; :func:`in_turn`
    names its first step's."""
    if enqueue is in_turn and args:
        enqueue = args[0][0]
    name = getattr(enqueue, "__name__", "a call").lstrip("_").removeprefix("enqueue_")
    owner = getattr(enqueue, "__self__", None)
    return f"{type(owner).__name__}.{name}" if owner is not None else f"eagle.{name}"


def submit(backend, stream, enqueue, *args, **kw):
    """``enqueue(backend, *args, stream=..., **kw) -> (result, raw stream, refs)``, under the
    policy of the module docstring: on ``stream``, whose stream then holds ``refs`` (None: nothing
    to hold) until it has run the work; with no stream on :func:`own_stream`, then wait for it.
    Returns ``result``.

    A signal's exception (Ctrl-C) can arrive at any instruction, also after the seam call has
    enqueued the work and before its references are held: whenever anything but an EagleError
    (a refusal, made before anything is enqueued) leaves the call before its work is held or
    waited for, the stream keeps what the call was given (``args``, ``kw``, and ``refs`` when
    known) until a later wait of that stream, so the work never runs on freed memory."""
    s = stream if stream is not None else own_stream(backend, _door(enqueue, args))
    refs, settled = None, False
    try:
        out, raw, refs = enqueue(backend, *args, stream=s, **kw)
        if stream is not None:
            if refs is not None:
                _holds.hold_until_done(backend, raw, refs)
            settled = True
            return out
        s.synchronize()
        settled = True
    except EagleError:
        settled = settled or refs is None  # refused before the seam call: nothing was enqueued
        raise
    finally:
        if not settled:
            keep_until_sync(backend, raw_stream(backend, s), (args, kw, refs))
    released_by_sync(backend, raw)
    return out


def in_turn(backend, *steps, stream):
    """Several enqueues as one, for :func:`submit` (``submit(b, stream, in_turn, step, ...)``):
    each step ``(enqueue, args, kw)`` is enqueued on ``stream`` after the one before. Returns
    ``(results, raw stream, refs)`` with every step's result and refs. Should a step fail, the
    steps before it are enqueued: the stream holds what they use until it has run them, and the
    error propagates."""
    results, refs, raw = [], [], None
    for enqueue, args, kw in steps:
        try:
            out, raw, r = enqueue(backend, *args, stream=stream, **kw)
        except BaseException:
            if refs:
                _holds.hold_until_done(backend, raw, tuple(refs))
            raise
        results.append(out)
        refs.append(r)
    return results, raw, tuple(refs)


def call_and_wait(backend, s, raw, refs, seam_call, *call_args):
    """A fast path's one seam call that enqueues on ``s`` (eagle's own stream, raw value ``raw``),
    then the wait for it, as :func:`submit` does them: should anything but the seam
    call's own refusal (EagleError) end it before the wait returns -- Ctrl-C between the call and
    the wait, say -- the stream keeps ``refs`` until a later wait."""
    called = settled = False
    try:
        seam_call(*call_args)
        called = True
        s.synchronize()
        settled = True
    except EagleError:
        settled = not called
        raise
    finally:
        if not settled:
            keep_until_sync(backend, raw, refs)
    released_by_sync(backend, raw)
