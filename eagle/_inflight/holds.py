"""Per-stream holds: the arrays of a stream's enqueued work, kept alive until the stream has run it.

While the stream is captured they go with the recording (its Capture's ``keep``). Otherwise a
release marker (eagle/_inflight/markers.py) enqueued behind the work carries them, and they go
when the enqueuing thread sees the marker ran (its attention list, eagle/_inflight/attention.py),
or when eagle itself has waited for the stream (:func:`released_by_sync`), or when the stream is
released (:func:`stream_released`). At most one marker is in flight per stream, so a tight loop
of calls on one stream costs one host function per round trip of the stream, not one per call.

State: the backend's :class:`eagle._inflight.per_backend.Flight` ``streams``, raw stream ->
:class:`StreamHolds` (:func:`streams_of`)."""
from _thread import get_ident

from .attention import attention_list, drop_finished, settle_of
from .markers import Marker
from .per_backend import by_id as _by_id, flight_of


class StreamHolds:
    """The arrays of one stream's enqueued work: ``waiting`` (enqueued since the last release
    marker) and the marker in flight, if any."""

    __slots__ = ("waiting", "in_flight")

    def __init__(self):
        self.waiting, self.in_flight = [], None


def streams_of(backend):
    """``backend``'s streams that hold arrays: raw stream -> :class:`StreamHolds` (read it, do not
    change it)."""
    f = _by_id.get(id(backend))
    return {} if f is None else f.streams


def _holds_of(backend, raw):
    streams = flight_of(backend).streams
    holds = streams.get(raw)
    if holds is None:
        holds = streams[raw] = StreamHolds()
    return holds


def hold_until_done(backend, raw, refs):
    """Keep ``refs`` (the arrays enqueued work reads and writes) alive until the stream ``raw``
    has run that work: in the recording while the stream is captured; else until a release marker
    enqueued behind the work has run and this thread has seen it (its next eagle call or
    synchronize). While a marker is in flight, later refs wait for the next call on the stream to
    enqueue theirs (or for :func:`released_by_sync`). A backend without host functions keeps them
    until :func:`released_by_sync` or :func:`stream_released`."""
    thread = get_ident()
    drop_finished(backend, thread)
    cap = backend._capturing.get(raw)
    if cap is not None:
        cap.keep(refs)
        return
    holds = _holds_of(backend, raw)
    holds.waiting.append(refs)
    if not backend.provides("eagle_backend_host_func"):
        return
    flying = holds.in_flight
    if flying is not None and not flying.ran():
        return
    batch, holds.waiting = holds.waiting, []
    marker = Marker(batch)
    try:
        status = marker.enqueue(backend, raw)
    except BaseException:  # the host function may be enqueued: its word stays lent for good
        holds.waiting[:0] = batch
        raise
    if status:
        marker.abandon()
        holds.waiting[:0] = batch
        backend._check("eagle_backend_host_func", status)
    holds.in_flight = marker
    attention_list(backend, thread).append(marker)  # its batch goes when this thread sees it ran


def keep_until_sync(backend, raw, refs):
    """Keep ``refs`` with the stream ``raw`` until :func:`released_by_sync`, with no marker: for
    work whose stream eagle itself waits for (a wait that failed)."""
    _holds_of(backend, raw).waiting.append(refs)


def stream_released(backend, raw):
    """The stream ``raw`` was released, which waits for its work: every ref it was holding goes
    (a stream dropped after eager calls used to keep their arrays for good)."""
    f = _by_id.get(id(backend))
    if f is not None:
        f.streams.pop(raw, None)


def released_by_sync(backend, raw):
    """The stream ``raw`` has been synchronized: its work so far is done, so the refs it was
    holding (not those a marker in flight carries, which goes by itself) can go."""
    f = _by_id.get(id(backend))
    if f is not None:
        holds = f.streams.get(raw)
        if holds is not None:
            holds.waiting = []
        if f.ended or f.threads.get(get_ident()):  # settle_of's own test, without its call (every eager wait)
            settle_of(f, get_ident())

