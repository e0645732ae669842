"""Fork/join: branch streams that start after their origin's work so far and that the
origin waits for at the join. Works eagerly and under capture."""
from ._handle import Owner
from ._seam_ffi import ffi
from ._stream_arg import raw_stream
from .stream import StreamRef
from .errors import EagleValueError


class Fork(Owner):
    """``branch_count`` branch streams beside an origin stream.

    ``fork()`` starts the branches after the origin's work so far; ``join()`` makes the origin
    wait for every branch. As a context manager it forks on entry and joins on exit."""

    __slots__ = ("_origin_raw", "_branches")
    _what = "fork"

    def __init__(self, backend, origin, branch_count, device=-1):
        b = backend
        if int(branch_count) < 1:
            raise EagleValueError(f"eagle: a fork needs branch_count >= 1, got {branch_count}")
        self._origin_raw = raw_stream(b, origin)
        desc = ffi.new("struct eagle_backend_fork_desc*")
        desc.struct_size = ffi.sizeof(desc[0])
        desc.device = device
        desc.origin = self._origin_raw
        desc.branch_count = int(branch_count)
        out = ffi.new("eagle_backend_fork*")
        b.call.fork_create(desc, out)
        self._own(b, out[0], "fork_release")
        self._branches = None

    def fork(self):
        b = self._backend
        b.call.fork_fork(self._live())
        cap = b._capturing.get(self._origin_raw)
        if cap is not None:
            for br in self.branches:
                cap.adopt_stream(br.handle)

    def join(self):
        b = self._backend
        b.call.fork_join(self._live())

    def branch(self, i):
        """Branch ``i`` as a :class:`StreamRef` (IndexError when out of range)."""
        b = self._backend
        out = ffi.new("uint64_t*")
        b.call.fork_branch(self._live(), int(i), out)
        return StreamRef(b, out[0])

    @property
    def branches(self):
        if self._branches is None:
            self._branches = tuple(self.branch(i) for i in range(len(self)))
        return self._branches

    @property
    def origin(self):
        b = self._backend
        out = ffi.new("uint64_t*")
        b.call.fork_origin(self._live(), out)
        return StreamRef(b, out[0])

    @property
    def forked(self):
        b = self._backend
        out = ffi.new("int32_t*")
        b.call.fork_forked(self._live(), out)
        return bool(out[0])

    def __len__(self):
        b = self._backend
        out = ffi.new("uint64_t*")
        b.call.fork_size(self._live(), out)
        return int(out[0])

    def __enter__(self):
        self.fork()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.join()
        self.close()
        return False
