"""Work in flight: everything eagle keeps between enqueuing work and seeing it done, in one home
on the ground floor (it imports nothing that issues work; the modules that issue work call it).

One concept per file:

- ``policy``: what ``stream=`` means -- :func:`submit` (the one policy every public entry point
  that does work on arrays goes through), :func:`own_stream`, :func:`call_and_wait`, and :func:`in_turn`
  (several enqueues submitted as one);
- ``holds``: per-stream holds, the arrays of a stream's enqueued work kept alive until it has run
  (:func:`hold_until_done`, :func:`keep_until_sync`, :func:`released_by_sync`,
  :func:`stream_released`);
- ``markers``: release markers, the host function behind a stream's work that says it ran;
- ``attention``: per backend and enqueuing thread, the host-function errors, finished host calls
  and markers in flight that thread must see to (:func:`attention_list`, the list a synchronize
  watches; :func:`raise_host_error`), and the sweep of threads that have ended;
- ``host_calls``: Python host functions pending until they have run (:func:`enqueue_host_call`);
- ``releases``: every handle's release, made once even when an interrupt lands in it, and the
  handles whose release waits for their work (parked when dropped while it runs);
- ``exit``: the bounded exit drain and the fork handler, registered on import;
- ``cancel``: stopping the drains an interrupted wait was for (its hook, registered on import).

Seam-object modules only say how to enqueue an operation and hand it to :func:`submit`; eagle's
handles (eagle/_handle.py) and bound calls report here. The state is keyed by backend: nothing of
it sits on the Backend."""
from . import exit as _exit  # noqa: F401 - registers the exit drain and the fork handler
from . import cancel  # noqa: F401 - registers the interrupted-wait hook
from .attention import attention_list, raise_host_error
from .holds import hold_until_done, keep_until_sync, released_by_sync, stream_released
from .host_calls import enqueue_host_call
from .policy import call_and_wait, in_turn, own_stream, submit
from .releases import query_done, release_parked, wait_done, waiters

__all__ = ["attention_list", "call_and_wait", "enqueue_host_call", "hold_until_done", "in_turn", "keep_until_sync", "own_stream",
           "query_done", "raise_host_error", "release_parked", "released_by_sync",
           "stream_released", "submit", "wait_done", "waiters"]
