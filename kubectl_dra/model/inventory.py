"""The set of objects one command works on, from a cluster or a snapshot, with indexes.

The core takes an :class:`Inventory` and never asks where the objects came from. Reads that
failed (a forbidden kind, an invalid object) are recorded as :class:`Problem` entries so a result
can say what it could not see instead of silently pretending.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Callable, Iterable, Literal, TypeVar

from pydantic import BaseModel

from kubectl_dra.model.base import KubeObject

if TYPE_CHECKING:  # only for annotations: the indexes go by kind name (see of_kind)
    from kubectl_dra.model.pod import Pod
    from kubectl_dra.model.claim import ResourceClaim

T = TypeVar("T", bound=KubeObject)
V = TypeVar("V")


class Problem(BaseModel):
    """Something that could not be read; ``kind`` names what is missing from the result."""

    severity: Literal["error", "warning"] = "error"
    message: str
    kind: str | None = None
    not_served: bool = False  # the API server does not serve the kind at all (e.g. its CRD is not installed)


class Inventory:
    def __init__(self) -> None:
        self._by_type: dict[type, list[KubeObject]] = defaultdict(list)
        self._by_key: dict[tuple[type, str | None, str], KubeObject] = {}
        self._by_uid: dict[str, KubeObject] = {}
        self.documents: dict[str, list[dict]] = defaultdict(list)  # our own kinds, raw
        self.document_files: dict[int, str] = {}  # id(document) -> the snapshot file it came from
        self.problems: list[Problem] = []
        self.read_kinds: set[str] = set()  # kinds that were actually read (even if empty)
        self._said: set[tuple] = set()  # the problems recorded through problem()
        self._cache: dict[str, object] = {}  # derived indexes (see index), dropped whenever an object is added

    def add(self, obj: KubeObject | dict) -> None:
        self._cache.clear()
        if isinstance(obj, dict):
            self.documents[obj["kind"]].append(obj)
            return
        key = (type(obj), obj.namespace, obj.name)
        if key in self._by_key:  # the same object twice (overlapping snapshot files): last wins
            self._by_type[type(obj)].remove(self._by_key[key])
        self._by_type[type(obj)].append(obj)
        self._by_key[key] = obj
        if obj.uid:
            self._by_uid[obj.uid] = obj

    def extend(self, objects: Iterable[KubeObject | dict]) -> None:
        for obj in objects:
            self.add(obj)

    def problem(self, message: str, *, kind: str | None = None, severity: str = "error",
                not_served: bool = False) -> None:
        key = (message, kind, severity)
        if key in self._said:  # a kind read twice (by two parts of one answer) is said once
            return
        self._said.add(key)
        self.problems.append(Problem(message=message, kind=kind, severity=severity, not_served=not_served))

    def objects(self) -> Iterable[KubeObject]:
        for objects in self._by_type.values():
            yield from objects

    def all(self, model: type[T]) -> list[T]:
        return list(self._by_type.get(model, ()))  # type: ignore[arg-type]

    def of_kind(self, kind: str) -> list:
        """``all`` by kind name: the indexes below use it so that a command that read no pods
        never imports (and so never builds) the Pod view."""
        return next((list(objects) for model, objects in self._by_type.items() if model.KIND == kind), [])

    def every(self, kind: str) -> list:
        """Every object of ``kind`` whatever view it was read into (a Pod fetched in full and the
        rest of the cluster's pods as CachedPod), each (namespace, name) once, the full view first."""
        seen: set[tuple[str | None, str]] = set()
        out = []
        buckets = sorted((m for m in self._by_type if m.KIND == kind), key=lambda m: m.__name__ != kind)
        for model in buckets:
            for obj in self._by_type[model]:
                key = (obj.namespace, obj.name)
                if key not in seen:
                    seen.add(key)
                    out.append(obj)
        return out

    def get(self, model: type[T], namespace: str | None, name: str) -> T | None:
        return self._by_key.get((model, namespace, name))  # type: ignore[return-value]

    def by_uid(self, uid: str) -> KubeObject | None:
        return self._by_uid.get(uid)

    def count(self) -> int:
        return sum(len(v) for v in self._by_type.values()) + sum(len(v) for v in self.documents.values())

    def index(self, name: str, build: Callable[[], V]) -> V:
        """A derived index (``build()``), built once and kept until an object is added: what a
        per-claim question would otherwise recompute over every object for every claim."""
        if name not in self._cache:
            self._cache[name] = build()
        return self._cache[name]

    # Indexes the claim analysis needs often; computed on demand and cached.
    def pods_by_claim(self) -> dict[tuple[str, str], list[Pod]]:
        """(namespace, ResourceClaim name) -> pods that reference it."""
        return self.index("pods_by_claim", self._pods_by_claim)

    def _pods_by_claim(self) -> dict[tuple[str, str], list[Pod]]:
        index: dict[tuple[str, str], list[Pod]] = defaultdict(list)
        for pod in self.of_kind("Pod"):
            for claim_name in set(pod.referenced_claim_names().values()):
                if claim_name:
                    index[(pod.namespace, claim_name)].append(pod)
        return index

    def pods_by_group(self) -> dict[tuple[str, str], list[Pod]]:
        """(namespace, PodGroup name) -> its member pods (a claim reserved for a group lists them)."""
        return self.index("pods_by_group", lambda: self._grouped(
            "Pod", lambda pod: (pod.namespace, group) if (group := pod.pod_group_name) else None))

    def controlled_by(self, kind: str) -> dict[str, list]:
        """Controller UID -> the objects of ``kind`` it controls (pods of a workload, its ReplicaSets)."""
        return self.index(f"controlled:{kind}", lambda: self._grouped(
            kind, lambda obj: ctl.uid if (ctl := obj.metadata.controller()) is not None else None))

    def pods_by_node(self) -> dict[str, list[Pod]]:
        """Node name -> pods bound to it (every verify of a node would otherwise scan every pod)."""
        return self.index("pods_by_node", lambda: self._grouped("Pod", lambda pod: pod.node_name or None))

    def _grouped(self, kind: str, key: Callable) -> dict:
        """The objects of ``kind`` by ``key(obj)``, in inventory order (None: not indexed)."""
        index: dict = defaultdict(list)
        for obj in self.of_kind(kind):
            if (k := key(obj)) is not None:
                index[k].append(obj)
        return index

    def claims(self) -> list[ResourceClaim]:
        return self.of_kind("ResourceClaim")
