"""One toleration against one taint, as ``resourceclaim.ToleratesTaint`` decides it (shared by the
allocator, which keeps tolerated devices, and the eviction controller, which spares tolerated pods)."""

from __future__ import annotations

from kubectl_dra.model.claim import DeviceToleration


def tolerates(toleration: DeviceToleration, key: str, value: str, effect: str) -> bool:
    """An empty effect or key in the toleration matches any; ``Exists`` matches any value, ``Equal``
    (the default) only the same one; any other operator matches nothing."""
    if toleration.effect and toleration.effect != effect:
        return False
    if toleration.key and toleration.key != key:
        return False
    operator = toleration.operator or "Equal"
    return operator == "Exists" or (operator == "Equal" and toleration.value == (value or ""))
