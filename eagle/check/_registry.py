"""Checks, their results and the registry that orders them.

A check is a function ``fn(ctx)`` registered with a stable ID whose first dotted part is its group.
It passes by returning (optionally a message), and ends otherwise by raising one of the
exceptions below. Every check produces exactly one result."""
from dataclasses import dataclass, field

RESULTS = ("pass", "fail", "skip", "not_supported", "crash", "timeout")
FAILING = frozenset({"fail", "crash", "timeout"})

#: Groups in the order they run: the static ELF checks, the required symbols, the capability
#: groups in bit order, then the per-symbol entries.
GROUP_ORDER = ("static", "required", "stream", "capturer", "captured", "fork", "conditional",
               "attribution", "graph", "launcher", "exec", "device", "interop", "filtering",
               "conditional_begin_case", "reorder_device", "memcpy", "host_alloc", "host_free",
               "host_func", "module_from_source", "module_from_image", "module_function", "module_release",
               "mem_alloc", "mem_free")


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
        return {"id": self.id, "group": self.group, "result": self.result, "message": self.message,
                "kind": self.kind, "duration_s": round(self.duration_s, 4),
                "symbols_called": sorted(self.calls)}


REGISTRY = {}


def check(check_id, *, kind="behaviour", needs=()):
    """Register ``fn`` under ``check_id`` (``<group>.<name>``); IDs are stable, never reused."""
    group = check_id.split(".", 1)[0]
    if group not in GROUP_ORDER:
        raise ValueError(f"eagle.check: {check_id!r} does not start with a known group")

    def register(fn):
        if check_id in REGISTRY:
            raise ValueError(f"eagle.check: duplicate check id {check_id!r}")
        REGISTRY[check_id] = Check(check_id, fn, kind, tuple(needs), (fn.__doc__ or "").strip())
        return fn
    return register


def all_checks():
    """Every registered check, groups in GROUP_ORDER, checks in registration order."""
    from . import behaviour, kernels, static  # noqa: F401  (registration happens on import)
    order = {g: i for i, g in enumerate(GROUP_ORDER)}
    return sorted(REGISTRY.values(), key=lambda c: order[c.group])
