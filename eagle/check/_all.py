"""Every registered check: importing the modules that hold checks registers them (they import
the registry; the registry imports none of them, so there is no import cycle)."""
from . import behaviour, contracts, kernels, queries, static  # noqa: F401  (registration happens on import)
from ._registry import GROUP_ORDER, REGISTRY


def all_checks():
    """Every registered check, groups in GROUP_ORDER, checks in registration order."""
    order = {g: i for i, g in enumerate(GROUP_ORDER)}
    return sorted(REGISTRY.values(), key=lambda c: order[c.group])
