"""What the kubelet's PodResources API (``List``) says each running container holds through DRA,
flattened to one row per claim resource. The agent fills it from the gRPC reply; the core only
reads it, so it never needs gRPC."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ClaimResourceRow:
    pod_namespace: str
    pod_name: str
    container: str
    claim_namespace: str
    claim_name: str
    driver: str = ""
    pool: str = ""
    device: str = ""
    share_id: str | None = None
    cdi_ids: tuple[str, ...] = ()

    @property
    def device_key(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(frozen=True, slots=True)
class PodResourcesView:
    pods: frozenset[tuple[str, str]]  # (namespace, name) of every pod the kubelet listed
    rows: tuple[ClaimResourceRow, ...]

    @property
    def reports_dynamic_resources(self) -> bool:
        """Whether this kubelet fills ``dynamic_resources`` at all (the feature gate
        KubeletPodResourcesDynamicResources, on by default since 1.34): without a single row an
        empty list proves nothing about a claim."""
        return bool(self.rows)
