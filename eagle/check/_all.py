"""Every registered check: importing the group modules (eagle/check/groups/) registers their
checks (they import the registry; the registry imports none of them, so there is no import
cycle). The order here does not matter: all_checks() orders by group, and each group's checks
live in one module, in the order they run."""
from .groups import (attribution, capture, conditional, device, exec, filtering, fork,  # noqa: F401
                     graph, interop, launcher, memory, module, required, static, stream)
from ._registry import GROUP_ORDER, REGISTRY


def all_checks():
    """Every registered check, groups in GROUP_ORDER, checks in registration order."""
    order = {g: i for i, g in enumerate(GROUP_ORDER)}
    return sorted(REGISTRY.values(), key=lambda c: order[c.group])
