"""What the cluster's claims already hold, gathered as claims stream by (a claims list fills it for
every claim and needs the allocator only when a claim waits)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.quantity import Quantity


@dataclass(slots=True)
class AllocatedState:
    """Devices the cluster's claims hold (``GatherAllocatedState``): exclusive ones, shared ones
    by share ID, and the capacity consumed on shared devices. Admin-access results hold nothing."""

    exclusive: dict[tuple[str, str, str], str] = field(default_factory=dict)  # device -> claim holding it
    shared: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)  # device -> claims sharing it
    consumed: dict[tuple[str, str, str], dict[str, Quantity]] = field(default_factory=dict)

    @classmethod
    def of(cls, claims: list[ResourceClaim], skip: set[str] = frozenset()) -> "AllocatedState":
        state = cls()
        for claim in claims:
            if claim.uid not in skip:
                state.add(claim)
        return state

    def add(self, claim: ResourceClaim) -> None:
        """What one claim's allocation holds (taken as claims stream by; nothing else of it is kept)."""
        if claim.status.allocation is None:
            return
        who = f"{claim.namespace}/{claim.name}"
        for r in claim.status.allocation.devices.results:
            if r.admin_access:
                continue
            key = (r.driver, r.pool, r.device)
            if r.share_id is None:
                self.exclusive[key] = who
                continue
            self.shared.setdefault(key, []).append(who)
            total = self.consumed.setdefault(key, {})
            for name, value in (r.consumed_capacity or {}).items():
                total[name] = total[name] + value if name in total else value

    def is_allocated(self, key) -> bool:
        return key in self.exclusive or key in self.shared or key in self.consumed
