"""Checks, their results and the registry that orders them.

A check is a function ``fn(ctx)`` registered with a stable ID whose first dotted part is its group.
It passes by returning (optionally a message), and ends otherwise by raising one of the
exceptions below. Every check produces exactly one result. Every check cites the header sentences
it enforces (eagle/check/citations.py); an ``advice`` check's CheckFailure is reported as
``advice``, not ``fail``."""
from dataclasses import dataclass, field

from .. import _seam_meta as meta

meta_prefix = "eagle_backend_"

RESULTS = ("pass", "fail", "advice", "skip", "not_supported", "crash", "timeout")
#: Results that make the run fail (exit status 1). ``advice`` never does: it reports good practice
#: the header does not require (e.g. recognising a released handle).
FAILING = frozenset({"fail", "crash", "timeout"})

#: Groups in the order they run: the static ELF checks, the required symbols, the capability
#: groups in bit order, then the per-symbol entries (short names) in header order. Taken from the
#: generated eagle._seam_meta, so a group or entry added to the header is a group here.
GROUP_ORDER = ("static", "required",
               *sorted(meta.GROUP_BITS, key=meta.GROUP_BITS.get),
               *(sym[len(meta_prefix):] for sym in meta.PER_SYMBOL))


class CheckFailure(Exception):
    """The backend broke a promise; the message says which."""


class Skip(Exception):
    """The check cannot run here (no device, no kernel for this kind, ...); the message says why."""


class NotSupported(Exception):
    """The backend does not provide the group or per-symbol entry the check is about."""


@dataclass
class Check:
    id: str
    fn: object
    kind: str            # 'static' (no device needed) or 'behaviour'
    needs: tuple = ()    # groups / per-symbol entries the check uses besides its own
    doc: str = ""
    advice: bool = False  # good practice the header does not require: findings are advice

    @property
    def cites(self):
        """The header sentences this check enforces (eagle/check/citations.py)."""
        from .citations import cites_of
        return cites_of(self.id)

    @property
    def since(self):
        """The seam minor from which the check applies (the largest since of its cites)."""
        from .citations import since_of
        return since_of(self.id)

    @property
    def group(self):
        return self.id.split(".", 1)[0]


@dataclass
class Result:
    id: str
    result: str
    message: str = ""
    kind: str = "behaviour"
    duration_s: float = 0.0
    calls: dict = field(default_factory=dict)   # seam symbol -> times called by this check

    @property
    def group(self):
        return self.id.split(".", 1)[0]

    def to_json(self):
        from .citations import cites_of
        return {"id": self.id, "group": self.group, "result": self.result, "message": self.message,
                "kind": self.kind, "duration_s": round(self.duration_s, 4),
                "symbols_called": sorted(self.calls),
                "cites": [{"where": c.where, "quote": c.quote, "since": c.since} for c in cites_of(self.id)]}


REGISTRY = {}


def check(check_id, *, kind="behaviour", needs=(), advice=False):
    """Register ``fn`` under ``check_id`` (``<group>.<name>``); IDs are stable, never reused.
    ``advice``: the check tests good practice the header does not require; a CheckFailure (or a
    crash or hang) is then reported as ``advice`` and never fails the run."""
    group = check_id.split(".", 1)[0]
    if group not in GROUP_ORDER:
        raise ValueError(f"eagle.check: {check_id!r} does not start with a known group")

    def register(fn):
        if check_id in REGISTRY:
            raise ValueError(f"eagle.check: duplicate check id {check_id!r}")
        REGISTRY[check_id] = Check(check_id, fn, kind, tuple(needs), (fn.__doc__ or "").strip(), advice)
        return fn
    return register
