"""What a command asks to read: one :class:`ReadRequest` per kind."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from kubectl_dra.model.base import KubeObject


@dataclass(frozen=True)
class ReadRequest:
    model: type[KubeObject]
    namespace: str | None = None  # None = every namespace (ignored for cluster-scoped kinds)
    label_selector: str | None = None
    field_selector: str | None = None
    required: bool = True  # False: a cluster without this API is normal (e.g. Karpenter kinds)
    keep_raw: bool = True  # False: drop the server's dicts once parsed (lists of 100,000 pods)
    keep: Callable[[KubeObject], bool] | None = None  # only objects the command reports on are held
    # a view that validates only objects ``keep`` would drop (tried first, so those are never built in full)
    skip: type | None = None
    # a lighter view of the same kind to parse a server's list into (e.g. CachedPod for Pod: 100,000
    # pods read for their requests only); a snapshot holds the full objects and yields those
    view: type[KubeObject] | None = None

    @property
    def resource(self) -> str:
        """``resourceclaims.resource.k8s.io`` — how RBAC messages and kubectl name a resource."""
        return f"{self.model.PLURAL}.{self.model.GROUP}" if self.model.GROUP else self.model.PLURAL
