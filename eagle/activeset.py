"""ActiveSet: the samples still running, as an ascending int32 index map and a count on the device.

``compact()`` only enqueues work (it is capturable, no host sync): the count word it writes is a
single-writer guard for a WHILE that runs until no sample is live. With ``reorder=theta`` the
owned planes are physically reordered (live samples first) whenever the live samples have thinned
to ``theta`` of the live region (DESIGN.md §3): kernels then index the planes by *position*, the
index map holds positions, and :meth:`ActiveSet.restore` puts the planes back in sample order."""
import threading
import warnings

import numpy as np

from . import _alloc, _kernel_handles, _recording, _validate
from . import exec as _exec
from . import filtering as _filtering
from . import module as _module
from ._inflight import cancel as _cancelling, in_turn, submit
from ._arrays import address_of, dlpack_device
from ._resolve import resolve
from ._stream_arg import backend_of_stream
from .errors import BackendUnavailable, EagleError, EagleTypeError, EagleValueError, RanOutWarning

_THETA_RANGE = (0.25, 0.75)

# restore() on the device: one source for every kind (eagle/kernel.h), compiled once per backend
# and device by the kind's own compiler. Sample i sits at position inv[i]: each plane is copied into
# a buffer, then gathered back from it by one kernel, which also records in `done` how many planes
# are back in sample order. That count is exact whatever interrupts the host between enqueues (the
# record and the gather are one launch), so a restore() interrupted by Ctrl-C and called again
# goes on from there instead of gathering a plane twice.
_RESTORE_SOURCE = r"""
#include <eagle/kernel.h>

/* dst[r, i] = src[r, inv[i]] for the `rows` rows of n elements of `words` words each; *done = step.
 * dst is the plane and src the buffer, as arrays of any dtype (void*: eagle checks their being
 * arrays, the words are T's). */
#define EAGLE_RESTORE_GATHER(name, T)                                                              \
    EAGLE_KERNEL(name, (EAGLE_BUFFER void*, dst_), (EAGLE_BUFFER const void*, src_), (const int32_t*, inv), \
                 (int64_t, rows), (int64_t, words), (EAGLE_BUFFER uint32_t*, done), (uint32_t, step)) { \
        EAGLE_GLOBAL T* dst = (EAGLE_GLOBAL T*)dst_;                                               \
        EAGLE_GLOBAL const T* src = (EAGLE_GLOBAL const T*)src_;                                   \
        const int64_t p = inv[i];                                                                  \
        for (int64_t r = 0; r < rows; ++r)                                                         \
            for (int64_t k = 0; k < words; ++k) dst[(r * n + i) * words + k] = src[(r * n + p) * words + k]; \
        if (i == 0) *done = step;                                                                  \
    }
EAGLE_RESTORE_GATHER(eagle_restore_gather1, uint8_t)
EAGLE_RESTORE_GATHER(eagle_restore_gather2, uint16_t)
EAGLE_RESTORE_GATHER(eagle_restore_gather4, uint32_t)
EAGLE_RESTORE_GATHER(eagle_restore_gather8, uint64_t)

/* perm and inv back to the identity; the span to n, the trigger off, no plane restored. */
EAGLE_KERNEL(eagle_restore_identity, (int32_t*, perm), (int32_t*, inv), (EAGLE_BUFFER uint32_t*, span),
             (EAGLE_BUFFER uint32_t*, fire), (EAGLE_BUFFER uint32_t*, done)) {
    perm[i] = (int32_t)i;
    inv[i] = (int32_t)i;
    if (i == 0) {
        *span = (uint32_t)n;
        *fire = 0u;
        *done = 0u;
    }
}
"""
_RESTORE_KERNELS = ("eagle_restore_gather1", "eagle_restore_gather2", "eagle_restore_gather4",
                    "eagle_restore_gather8", "eagle_restore_identity")
_restore_modules = {}  # (library path, kind, device) -> Module, or None where the kind cannot compile
_restore_lock = threading.Lock()


def _restore_module(backend, device):
    """The restore kernels of ``backend`` on ``device``; None when the kind has no compiler
    (or its backend predates seam minor 7): restore() then gathers through the host."""
    key = (backend.path, backend.kind, device)
    with _restore_lock:
        if key in _restore_modules:
            return _restore_modules[key]
    try:
        mod = _module.compile(backend, _RESTORE_SOURCE, kernels=_RESTORE_KERNELS, name="eagle_restore.c",
                              device=device)
    except BackendUnavailable:
        mod = None
    with _restore_lock:
        return _restore_modules.setdefault(key, mod)


class PermutedError(EagleError, RuntimeError):
    """An owned plane was exported while its samples are out of sample order."""


class OwnedPlane:
    """A plane owned by an :class:`ActiveSet` with reordering. Kernels take :attr:`address`;
    exporting the data (``__dlpack__``, ``__array__``, array interfaces, :attr:`data`) is refused
    while the planes are permuted: call :meth:`ActiveSet.restore` first."""

    __slots__ = ("_aset", "_array", "address", "shape", "dtype")

    def __init__(self, aset, array):
        self._aset, self._array = aset, array
        self.address = address_of(array).ptr
        self.shape, self.dtype = tuple(array.shape), array.dtype

    def _export(self, what):
        if self._aset.permuted:
            raise PermutedError(f"eagle: this plane of an ActiveSet is reordered (live samples first); "
                                f"{what} would show positions, not samples. Call ActiveSet.restore() "
                                "first; kernels take the plane itself (or plane.address)")
        return self._array

    @property
    def data(self):
        """The underlying array, in sample order (refused while permuted)."""
        return self._export(".data")

    def __array__(self, dtype=None, copy=None):
        arr = np.asarray(self._export("__array__"))
        return arr if dtype is None else arr.astype(dtype)

    @property
    def __array_interface__(self):
        return self._export("__array_interface__").__array_interface__

    @property
    def __cuda_array_interface__(self):
        return self._export("__cuda_array_interface__").__cuda_array_interface__

    def __dlpack__(self, *args, **kw):
        return self._export("__dlpack__").__dlpack__(*args, **kw)

    def __dlpack_device__(self):
        return dlpack_device(self._array)  # checked: two integers, or (1, 0) for host memory

    def __eagle_array__(self):
        """(ArrayInfo, dtype, shape) of the plane, for a kernel's typed pointer parameter: a
        kernel indexes the planes by position, so it takes one in whatever order it is."""
        return address_of(self._array), self.dtype, self.shape

    def __repr__(self):
        return f"<eagle.OwnedPlane shape={self.shape} dtype={self.dtype} permuted={self._aset.permuted}>"


class ActiveSet:
    """The live samples of a drop mask.

    Parameters
    ----------
    mask : array of uint8, shape (n,)
        Nonzero = the sample is finished (dropped); on the device the work runs on.
    reorder : float, optional
        theta in [0.25, 0.75]: reorder the owned planes when ``count <= theta * span``.
    planes : sequence of arrays, optional
        Per-sample planes (shape (n,) or (w, n), C-contiguous) to reorder with the samples.
    backend : Backend or kind, optional
        Default: from where the mask lives.
    stream : eagle Stream, optional
        Used for host reads of the words (``permuted``, ``live``) and for ``restore``.

    Attributes
    ----------
    index_map : int32[n] device array (positions of the live samples, ascending, first ``count``)
    count : uint32[1] device array (number live; a WHILE guard ``(count, None)``: run while != 0)
    """

    def __init__(self, mask, reorder=None, *, planes=(), backend=None, stream=None):
        if isinstance(mask, int) or not hasattr(mask, "shape"):
            raise EagleTypeError(f"eagle.ActiveSet: the mask must be an array (uint8, one byte per sample), "
                                 f"got a {type(mask).__name__}")
        planes = list(planes)
        for i, p in enumerate(planes):
            if isinstance(p, (int, list, tuple)) or not hasattr(p, "shape"):
                raise EagleTypeError(f"eagle.ActiveSet: plane {i} must be an array, got a {type(p).__name__}")
        b, _ = resolve([mask, *planes], backend=backend, streams=(stream,), what="eagle.ActiveSet",
                       noun="array")
        self.backend = b
        info = address_of(mask)
        if info.nbytes is None:
            raise EagleTypeError("eagle.ActiveSet: the mask must be an array (uint8, one byte per sample)")
        if getattr(mask, "dtype", None) is not None and np.dtype(str(mask.dtype).split(".")[-1]).itemsize != 1:
            raise EagleTypeError(f"eagle.ActiveSet: the mask must hold 1-byte items, got {mask.dtype}")
        self.n = n = info.nbytes
        b.require("filtering")
        self.mask = mask
        self._stream = stream
        self.index_map = _alloc.zeros(n, "int32", mask)
        self.count = _alloc.zeros(1, "uint32", mask)
        self._scratch = _alloc.zeros(max(b.compact_scratch_bytes(n), 1), "uint8", mask)
        self.theta = None
        self._queue = None    # the drain's queue words (allocated at the first drain; [2]: cancel)
        self._drain_stream = None  # raw value of the stream the last drain was enqueued on
        self._workers = None  # the drain's default lane count (from the device, at the first drain)
        self._drained = None  # (kernel, rounds) of a drain the next compaction counts after
        self._counted = None  # the same, once a compaction has counted after it (read by .live)
        self._planes = []
        if reorder is not None:
            theta = _validate.real(reorder, "eagle.ActiveSet: reorder (theta)")
            if not _THETA_RANGE[0] <= theta <= _THETA_RANGE[1]:
                raise EagleValueError(f"eagle.ActiveSet: reorder (theta) must be in [0.25, 0.75], got {reorder}")
            b.require("eagle_backend_reorder_device")
            _validate.writable(info, "eagle.ActiveSet: the mask (reorder= moves it with the samples)")
            self.theta = theta
            ident = np.arange(n, dtype=np.int32)
            self.perm = _alloc.zeros(n, "int32", mask)
            self.inv = _alloc.zeros(n, "int32", mask)
            self.span = _alloc.zeros(1, "uint32", mask)
            self.fire = _alloc.zeros(1, "uint32", mask)
            self._rscratch = None
            self._restore_buf = None  # restore()'s gather buffer on the device (the largest plane)
            self._restore_done = _alloc.zeros(1, "uint32", mask)  # planes restore() has put back so far
            self._host_done = 0  # the same, for restore() through the host
            self._write(self.perm, ident, "int32")
            self._write(self.inv, ident, "int32")
            self._write(self.span, [n], "uint32")
            self._planes.append(mask)  # the mask moves with the samples (it is indexed by position)
        elif planes:
            raise EagleValueError("eagle.ActiveSet: planes= are only reordered with reorder=theta")
        self.owned = tuple(self.own(p) for p in planes)
        if self.theta is not None and self._rscratch is None:
            self._size_scratch()

    def _size_scratch(self):
        """Reorder scratch for the planes owned now (its size may depend on them)."""
        need = self.backend.reorder_scratch_bytes(self.n, planes=self._planes)
        if self._rscratch is None or _nbytes(self._rscratch) < need:
            self._rscratch = _alloc.zeros(max(need, 1), "uint8", self.mask)

    # -- words --------------------------------------------------------------------------------
    def _io_stream(self):
        if self._stream is None:
            self._stream = self.backend.stream()
        return self._stream

    def _write(self, arr, values, dtype):
        _alloc.write(arr, values, dtype, self.backend, None if _alloc.is_host(arr) else self._io_stream())

    def _read(self, arr, dtype, count):
        return _alloc.read(arr, dtype, count, self.backend, None if _alloc.is_host(arr) else self._io_stream())

    # -- planes -------------------------------------------------------------------------------
    def own(self, plane):
        """Reorder ``plane`` (shape (n,) or (w, n)) with the samples; returns its :class:`OwnedPlane`."""
        if self.theta is None:
            raise EagleValueError("eagle.ActiveSet: only an ActiveSet with reorder=theta owns planes")
        shape = tuple(plane.shape)
        if len(shape) not in (1, 2) or shape[-1] != self.n:
            raise EagleValueError(f"eagle.ActiveSet: a plane must have shape ({self.n},) or (w, {self.n}), got {shape}")
        # contiguous, addressable, and writable: every reorder rewrites it in place (its index
        # counts the owned planes, as planes= lists them; the mask is _planes[0])
        _validate.writable(address_of(plane), f"eagle.ActiveSet: plane {len(self._planes) - 1}")
        self._planes.append(plane)
        if self._rscratch is not None:
            self._size_scratch()  # own() after construction: before recording the compaction
        return OwnedPlane(self, plane)

    # -- the work -----------------------------------------------------------------------------
    def compact(self, stream=None):
        """On ``stream``: (with reorder) the reorder the last compaction fired, then the
        compaction of the mask into ``index_map``/``count`` and the next trigger. Capturable. With
        no stream both run on eagle's own stream, done before this returns (eagle/_inflight.py)."""
        submit(self.backend, stream, self._enqueue_compact)

    def _enqueue_compact(self, b, *, stream):
        """:meth:`compact`'s one enqueue: ``(None, raw stream, refs)``."""
        self._counted, self._drained = self._drained, None
        if self.theta is None:
            return _filtering.enqueue_compact(b, self.mask, self.index_map, self.count, self._scratch, n=self.n,
                                              drop=True, stream=stream)
        _, raw, refs = in_turn(
            b, (_filtering.enqueue_reorder, (self._planes, self.mask, self.perm, self.inv, self.span, self._rscratch),
                dict(n=self.n, fire=self.fire, drop=True)),
            (_filtering.enqueue_compact, (self.mask, self.index_map, self.count, self._scratch),
             dict(n=self.n, drop=True, span=self.span, fire=self.fire, theta=self.theta)), stream=stream)
        return None, raw, refs

    __call__ = compact  # an ActiveSet is itself a step: eagle.Graph.build([..., aset])

    def drain(self, stream, kernel, args, rounds, *, workers=None, compacted=True):
        """Enqueue on ``stream`` the drained form of ``rounds`` iterations of
        (``kernel``'s ``_active`` entry; :meth:`compact`): one launch of the ``_drain`` entry that
        eagle/kernel.h makes (``mod.step_drain`` for ``EAGLE_KERNEL(step, ...)``), in which every
        live sample's body is called until its mask byte drops it or it was called ``rounds``
        times, and a lane that is done takes the next live sample. Each sample ends exactly as
        after that loop (bit for bit), with no synchronisation between the rounds and no kernel
        per round, so unequal samples keep every lane busy. Valid when sample i's body reads and
        writes only sample i's data. Capturable; the index map must be current (compact first),
        and is stale afterwards (compact again to count what is left). Like :meth:`compact`, one
        ActiveSet's drains run on one stream at a time: they share its queue words.

        ``compacted=False`` drains with no index map: every sample 0..n-1 is visited and those whose
        mask byte drops them are skipped, so no compaction is needed before it. That is the form
        for a drain straight after a reset, when every sample is live and the compaction would
        only write the identity map (the card: [reset, drain] instead of [reset, compact, drain]);
        with many samples already dropped, compact first, so that no lane claims a dropped one.

        ``args`` are the kernel's declared arguments; eagle appends the index map, the count (both
        NULL when ``compacted=False``), the mask, its queue words, ``rounds`` and ``workers``. ``workers`` (lanes launched, at most n)
        defaults to ``sm_count`` x 512 on a GPU: enough warps to keep the FP64 pipes busy while
        every lane stays resident (lanes that wait for a second wave start their samples late, and
        the last samples to start set the end). On the H200 the card (K = 16) ran 0.68 ms with 512
        lanes a multiprocessor against 0.82 / 0.74 / 1.01 ms with 256 / 1024 / 2048, and (K = 32)
        0.61 ms against 0.69 / 0.65 / 0.71 ms with 384 / 768 / 1024 (benchmarks/RESULTS.md). A body that waits on memory more than on arithmetic may want more:
        pass ``workers``. Where lanes run one at a time (warp_size 1, the cpu kind) the default is
        n: one lane a sample, balanced over the threads by the backend's chunking.

        Interrupted: when a signal interrupts the wait for this drain (Ctrl-C, an alarm's
        exception; the stream's or a graph's synchronize), every lane stops at its next round and
        the work ends (eagle/_inflight/cancel.py); samples are left where they stopped, as when
        ``rounds`` runs out, and draining again continues them.

        Lanes take samples in index order, so the last long samples to start set the end. Where
        the samples' costs are known, store them longest first. On the H200 that takes the card
        from 1.54x to 0.97x a kernel over samples sorted by step count (docs/guide.md)."""
        if self.theta is not None:
            raise EagleValueError("eagle.ActiveSet.drain: an ActiveSet with reorder= indexes its planes by "
                                  "position; drain one without reorder")
        if backend_of_stream(stream) is None:  # the launch is the stream's own (stream.run)
            raise EagleTypeError(f"eagle.ActiveSet.drain: stream must be an eagle stream (Backend.stream()), "
                                 f"got a {type(stream).__name__}")
        name = getattr(kernel, "name", None)
        if name is not None and not str(name).endswith("_drain"):
            raise EagleValueError(f"eagle.ActiveSet.drain: kernel {name!r} is not a drain entry; pass the "
                                  f"'{name}_drain' entry that eagle/kernel.h makes (compile with kernels=[..., "
                                  f"'{name}_drain'])")
        rounds = _validate.integer(rounds, "eagle.ActiveSet.drain: rounds", minimum=1, maximum=(1 << 62))
        if not isinstance(args, (list, tuple)):
            raise EagleTypeError(f"eagle.ActiveSet.drain: args must be a list or tuple, got a {type(args).__name__}")
        params = getattr(kernel, "params", None)
        if params is None and not hasattr(kernel, "signature"):  # a raw handle: eagle's own is known
            signature = _kernel_handles.code_of(_exec.kernel_handle(kernel))[2]
            params = getattr(signature, "names", None)
            name = name or getattr(signature, "kernel", None)
        if params is not None and len(args) != len(params) - 6:
            raise EagleValueError(f"eagle.ActiveSet.drain: kernel {name} takes {len(params) - 6} arguments of its "
                                  f"own ({', '.join(params[:-6])}), got {len(args)}; eagle appends the other 6")
        if workers is None:
            workers = self._default_workers()
        workers = _validate.integer(workers, "eagle.ActiveSet.drain: workers", minimum=1, maximum=1 << 31)
        workers = min(workers, max(self.n, 1))
        if self._queue is None:  # [0..1] the claim queue, [2] the cancel word (eagle/kernel.h), [3] spare
            self._queue = _alloc.zeros(4, "uint32", self.mask)
        if not isinstance(compacted, (bool, np.bool_)):
            raise EagleTypeError(f"eagle.ActiveSet.drain: compacted must be a bool, got a {type(compacted).__name__}")
        index = (self.index_map, self.count) if compacted else (0, 0)  # NULL, NULL: every sample
        full = [*args, *index, self.mask, self._queue, rounds, workers]
        if self.n == 0:
            return False
        launched = stream.run(kernel, full, workers, n_samples=self.n)
        self._drained = (name or "kernel", rounds)
        # an interrupted wait for this drain stops it (eagle/_inflight/cancel.py)
        self._drain_stream = int(stream._raw_for(self.backend))
        _cancelling.register(self)
        _recording.note_drain(self)
        return launched

    def _cancel(self, stream):
        """Stop this ActiveSet's drains that run now or are enqueued before the work on ``stream``
        (a raw stream value) that has not run yet: the cancel word (the queue's word 2) is set at
        once, then cleared in stream order on ``stream``. Called on the main thread by
        eagle/_inflight/cancel.py when a wait for them is interrupted."""
        q = self._queue
        if q is None:
            return
        # the clear is ordered after the set wherever the set lands (write_now's fence): a set
        # that lands late never outlives it
        _alloc.write_now(q, 2, 1, self.backend, before=stream)
        _alloc.write_in_order(q, 2, 0, self.backend, stream)

    def _default_workers(self):
        if self._workers is None:
            dev = dlpack_device(self.mask)[1]
            props = self.backend.device_props(int(dev))
            if props.warp_size > 1:
                self._workers = max(1, int(props.sm_count)) * 512
            else:
                # lanes one at a time (the cpu kind): one lane per sample, and the backend's own
                # chunking balances the threads, as for any launch
                self._workers = max(self.n, 1)
        return self._workers

    @property
    def __name__(self):
        return "compact" if self.theta is None else f"compact+reorder({self.theta:g})"

    @property
    def guard(self):
        """``(count, None)``: holds while any sample is live."""
        return (self.count, None)

    @property
    def live(self):
        """Number of live samples (host read; synchronize the work that computed it first).

        Read after a :meth:`drain` and the :meth:`compact` that followed it, a count above 0
        means the drain ran out of ``rounds`` with those samples unfinished: an
        :class:`eagle.RanOutWarning` says so, naming the kernel and how many were left (filter
        it where draining in slices of rounds is the plan)."""
        live = int(self._read(self.count, np.uint32, 1)[0])
        if self._counted is not None:
            (name, rounds), self._counted = self._counted, None
            if live:
                warnings.warn(f"eagle: ActiveSet.drain of {name} ran out of its rounds={rounds} with {live} "
                              "samples still live: they are left unfinished where they stopped; drain again "
                              "or raise rounds", RanOutWarning, stacklevel=2)
        return live

    def indices(self):
        """The live samples' ids (sample order ids, even while permuted), ascending by position."""
        k = self.live
        pos = self._read(self.index_map, np.int32, k)
        if self.theta is None:
            return pos
        return self._read(self.perm, np.int32, self.n)[pos]

    @property
    def permuted(self):
        """True while the owned planes are out of sample order (host read)."""
        if self.theta is None:
            return False
        # a reorder only fires when it drops samples, so the span shrinks below n until restore()
        return int(self._read(self.span, np.uint32, 1)[0]) != self.n

    def restore(self):
        """Put the owned planes back in sample order, reset the permutation, and recompact.

        Host-driven (not capturable): synchronize the work on the planes first. The planes are
        gathered where they live, by small kernels compiled once per backend and device with the
        kind's own compiler; where the kind has no compiler, through the host with numpy.

        Safe to call again after an interrupt (Ctrl-C) stopped it: it goes on with the planes not
        yet put back (on the device path exactly; through the host, host planes exactly)."""
        if self.theta is None:
            return
        n = self.n
        st = self._io_stream()
        st.synchronize()  # what an interrupted restore() left enqueued has run: its count is final
        if self.permuted:  # a reorder has fired since the last restore (the span is below n)
            dev = -1 if _alloc.is_host(self.mask) else int(dlpack_device(self.mask)[1])
            mod = _restore_module(self.backend, dev)
            if mod is not None:
                self._restore_on_device(mod, st)
            else:
                inv = self._read(self.inv, np.int32, n)
                for k in range(self._host_done, len(self._planes)):
                    self._gather(self._planes[k], inv)
                    self._host_done = k + 1
                ident = np.arange(n, dtype=np.int32)
                self._write(self.perm, ident, "int32")
                self._write(self.inv, ident, "int32")
                self._write(self.span, [n], "uint32")
                self._write(self.fire, [0], "uint32")
                self._host_done = 0
        else:
            self._write(self.fire, [0], "uint32")  # a fired trigger whose reorder has not run yet
        self.backend.compact(self.mask, self.index_map, self.count, self._scratch, n=n, drop=True, stream=st)
        st.synchronize()

    def _restore_on_device(self, mod, st):
        """Enqueue on ``st``, for each plane not yet put back (``_restore_done``, read after the
        stream has run everything): the plane copied into a buffer, then gathered back from it by
        inv, one launch that also counts it done; then perm, inv, span, fire and the count reset (a
        kernel). Nothing crosses to the host but the count."""
        n = self.n
        infos = [address_of(p) for p in self._planes]
        need = max(info.nbytes for info in infos)
        if self._restore_buf is None or _nbytes(self._restore_buf) < need:
            self._restore_buf = _alloc.zeros(need, "uint8", self.mask)
        buf = self._restore_buf
        done = int(self._read(self._restore_done, np.uint32, 1)[0])
        for k in range(done, len(self._planes)):
            p, info = self._planes[k], infos[k]
            _alloc.order_before(p, st)
            rows = int(p.shape[0]) if len(p.shape) == 2 else 1
            esize = info.nbytes // (rows * n)
            word = next(w for w in (8, 4, 2, 1) if esize % w == 0)
            st.copy(buf, p, info.nbytes)
            st.run(mod[f"eagle_restore_gather{word}"],
                   [p, buf, self.inv, rows, esize // word, self._restore_done, np.uint32(k + 1)], n)
        st.run(mod["eagle_restore_identity"], [self.perm, self.inv, self.span, self.fire, self._restore_done], n)

    def _gather(self, plane, inv):
        """plane[..., i] = plane[..., inv[i]] (sample i sits at position inv[i]). Device planes
        go through the host: restore() is host-driven and rare, and this needs nothing of the
        plane's array library but its address, dtype and shape."""
        if _alloc.is_host(plane):
            arr = plane if isinstance(plane, np.ndarray) else np.from_dlpack(plane)
            arr[...] = arr[..., inv]
            return
        dtype = np.dtype(str(plane.dtype).split(".")[-1])
        host = np.empty(tuple(plane.shape), dtype)
        s = self._io_stream()
        _alloc.order_before(plane, s)
        address = address_of(plane).ptr
        self.backend.copy(host, address, host.nbytes, stream=s, direction="d2h")
        s.synchronize()
        host = np.ascontiguousarray(host[..., inv])
        self.backend.copy(address, host, host.nbytes, stream=s, direction="h2d")
        s.synchronize()

    def __repr__(self):
        return (f"<eagle.ActiveSet n={self.n} {self.backend.kind}"
                f"{'' if self.theta is None else f' reorder={self.theta:g}'}>")


def _nbytes(arr):
    return address_of(arr).nbytes

