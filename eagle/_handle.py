"""Ownership of one seam handle: close() idempotent, context manager, freed on garbage
collection by a finalizer that keeps the backend library loaded, thread-affine use."""
import weakref
from _thread import get_ident

from . import _hotcall
from ._inflight import raise_host_error, release_parked, wait_done, query_done, waiters
from ._inflight import releases as _releases
from ._seam_ffi import ffi
from .errors import EagleTypeError, HandleError


class _Keeper:
    """What the release of one handle hangs on. The owner holds it, and so does every bound call
    made from the owner: ``b.stream().synchronize()`` keeps the handle alive for the call even
    though the Stream object is gone at once. Bound calls report failures to it (calling it
    returns itself); it passes them to the owner while the owner lives."""

    __slots__ = ("backend", "thread", "owner", "query", "handle", "__weakref__")

    def __init__(self, owner):
        self.backend, self.thread, self.owner = owner._backend, owner._thread, weakref.ref(owner)
        self.query, self.handle = None, owner._h

    def done(self):
        """True unless the owner's work is still running (its completion query says so)."""
        return self.query is None or query_done(self.query, self.handle)

    def __call__(self):
        return self

    def _hot_failed(self, symbol, status):
        owner = self.owner()
        if owner is not None:
            return owner._hot_failed(symbol, status)
        if self.thread != get_ident():
            raise HandleError("eagle: this handle belongs to the thread that created it, or has been "
                              "closed; handles are thread-affine")
        if status == 0:
            raise_host_error(self.backend, self.thread)
        self.backend._check(symbol, status)

    def _hot_bad_args(self, symbol, args):
        owner = self.owner()
        if owner is not None:
            return owner._hot_bad_args(symbol, args)
        raise EagleTypeError(f"eagle: {symbol} was called with arguments it does not take: {args!r}")


class Owner:
    """Base of every object that owns (or borrows) one seam handle.

    Subclasses call :meth:`_own` once with the raw cffi handle and the short name of its
    release function. Every use goes through :meth:`_live`, which refuses use after close,
    after a consuming call, and from a thread other than the creator's."""

    __slots__ = ("_h", "_backend", "_thread", "_finalizer", "_armed", "_gone", "_bound", "_keeper", "__weakref__")
    _what = "handle"

    def _own(self, backend, handle, release_name, after_release=None, query=None, ends_capture=False):
        """``query``: the short name of the completion query of the handle's work (seam minor 8,
        ``"stream_query"``) for an owner whose release waits for that work: close() then waits
        interruptibly, a dropped one never hangs the garbage collector (eagle._inflight.releases
        parks it), and the exit drain (eagle._inflight.exit) waits for it with a bound.
        ``ends_capture``: the release ends a capture, and is never put off (eagle._inflight.releases.arm)."""
        self._backend = backend
        self._h = handle
        self._thread = get_ident()
        self._gone = None
        self._bound = []  # bound calls made by _bind
        self._keeper = keeper = _Keeper(self)
        query_fn = None
        if query is not None and release_name is not None and backend.provides("eagle_backend_" + query):
            query_fn = keeper.query = getattr(backend._f, query)
            if _releases.parked:
                release_parked()
            waiters.add(keeper)
        if release_name is None:
            self._finalizer = self._armed = None  # borrowed: someone else releases it
        else:
            # the release, armed on the keeper (eagle._inflight.releases: made once, even when an
            # interrupt lands in it); the finalizer makes it as soon as the keeper goes
            self._armed, self._finalizer = _releases.arm(keeper, getattr(backend._f, release_name), handle,
                                                         backend, after_release, query_fn, ends_capture)
        if _releases.due:
            _releases.settle_due()

    def _bind(self, name, watch=None, counted=False, gil=_hotcall.GIL_RELEASE, partner=None, query=None):
        """A bound call (eagle._hotcall) of ``eagle_backend_<name>`` on this live handle; it is
        disarmed when the handle goes (closed, consumed or collected). ``partner``: the index in
        ``self._bound`` of an earlier bound call; ``query``: the wait's completion query (see
        eagle._hotcall.bind)."""
        bound = _hotcall.bind(self, name, watch, counted, gil,
                              None if partner is None else self._bound[partner], query)
        self._bound.append(bound)
        return _hotcall.hot(bound)

    @property
    def backend(self):
        return self._backend

    def _live(self):
        """The raw handle, or a HandleError saying why it cannot be used."""
        if self._thread != get_ident():  # also true once closed or consumed (_thread is None)
            self._refuse()
        return self._h

    def _hot_failed(self, symbol, status):
        """Raises for a bound call (eagle._hotcall) that could not succeed quietly: nothing called
        (the wrong thread, a closed or consumed handle), a failing status, or (status 0) a pending
        host-function error."""
        if self._thread != get_ident():
            self._refuse()
        if status == 0:
            raise_host_error(self._backend, self._thread)
        self._backend._check(symbol, status)

    def _hot_bad_args(self, symbol, args):
        """Raises for a bound call given arguments it does not take (args: a tuple or a dict)."""
        if isinstance(args, dict):
            raise EagleTypeError(f"eagle: {self._what} calls take no keyword arguments, got {sorted(args)}")
        raise EagleTypeError(f"eagle: this {self._what} call takes no arguments "
                             f"({len(args)} given: {symbol} is called on the {self._what}'s handle)")

    def _refuse(self):
        if self._h is None:
            raise HandleError(f"eagle: this {self._what} {self._gone or 'is closed'}; "
                              f"create a new one")
        raise HandleError(f"eagle: this {self._what} belongs to the thread that created it; "
                          "handles are thread-affine, create one on this thread instead")

    def _consumed(self, by):
        """Ownership moved into the backend by a CONSUMING call (`by`)."""
        if self._armed is not None:
            _releases.disown(self._armed)
        self._disarm()
        if self._finalizer is not None:
            self._finalizer.detach()
        self._h = None
        self._thread = None  # hot paths test only the thread: a gone handle matches no thread
        self._gone = f"was consumed by {by}"

    def _disarm(self):
        for bound in self._bound:
            bound.disarm()
        self._keeper.thread = None
        waiters.discard(self._keeper)

    def close(self):
        """Release the handle now. Idempotent. Closing from another thread is refused."""
        if self._h is None:
            return
        if self._thread != get_ident():
            self._refuse()
        keeper = self._keeper
        if keeper.query is not None and get_ident() == _hotcall.MAIN_THREAD:
            wait_done(keeper.query, self._h)  # the release waits for the work: wait here, interruptibly
        self._disarm()
        fin = self._finalizer
        if fin is not None:
            # from here on an interrupt leaves the release due (made at the next safe point once
            # this owner counts as closed, the next line, or has gone), not lost
            _releases.due.add(self._armed)
        self._h = None
        self._thread = None  # hot paths test only the thread: a closed handle matches no thread
        if fin is not None:
            fin()

    @property
    def closed(self):
        return self._h is None

    def __enter__(self):
        self._live()
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def raw_int(cdata_or_int):
    """The integer value of a raw value (handle pointer or uint64)."""
    if isinstance(cdata_or_int, int):
        return cdata_or_int
    return int(ffi.cast("uintptr_t", cdata_or_int))
