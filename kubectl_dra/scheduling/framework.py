"""The filter half of kube-scheduler v1.37.2's framework: what a plugin sees and returns.

A plugin is a class with ``NAME``, ``pre_filter`` (once per pod: a state object, or a rejection,
or a narrowed node set), ``filter`` (once per node) and ``add_pod`` (the PreFilterExtensions
AddPod the framework calls for nominated pods). :mod:`kubectl_dra.scheduling.cycle` runs them in
the profile's order, stops at a node's first rejection as ``RunFilterPlugins`` does, and writes
the FitError message. Nothing here reads a cluster: the snapshot is built from an inventory.

Units are the scheduler's (``framework.Resource``): cpu in millicores (``MilliValue``), every
other resource in ``Value()`` (rounded up), the pod count as ``pods``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.scheduling.document import Evidence
from kubectl_dra.scheduling.resources import Resource, scheduler_requests, to_resource
from kubectl_dra.versions import MODELLED_MINOR

SUCCESS = "Success"
UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"
ERROR = "Error"
SKIP = "Skip"



@dataclass
class Status:
    """``fwk.Status``: a code, the reasons in the scheduler's words, the plugin that said so.

    ``undetermined`` is ours: this tool cannot decide (a plugin not modelled, input it cannot
    read); such a status is never a "fits" and never a scheduler reason.
    """

    code: str = SUCCESS
    reasons: list[str] = field(default_factory=list)
    plugin: str = ""
    evidence: list[Evidence] = field(default_factory=list)
    undetermined: str | None = None
    possible_error: str | None = None  # with ``undetermined``: the Error the plugin may return instead

    @property
    def success(self) -> bool:
        return self.code == SUCCESS and self.undetermined is None

    @property
    def rejected(self) -> bool:
        """``IsRejected``: Unschedulable or UnschedulableAndUnresolvable."""
        return self.code in (UNSCHEDULABLE, UNRESOLVABLE)

    @property
    def message(self) -> str:
        """``Status.Message()``: the reasons joined by ", "."""
        return ", ".join(self.reasons)

    @classmethod
    def unschedulable(cls, *reasons: str, evidence: list[Evidence] | None = None,
                      unresolvable: bool = False) -> "Status":
        return cls(UNRESOLVABLE if unresolvable else UNSCHEDULABLE, list(reasons), evidence=evidence or [])

    @classmethod
    def unknown(cls, why: str, possible_error: str | None = None) -> "Status":
        """This tool cannot decide (see :attr:`undetermined`); ``possible_error``: the plugin's own
        Error message, should it fail that way."""
        return cls(SUCCESS, undetermined=why, possible_error=possible_error)

    @classmethod
    def error(cls, message: str) -> "Status":
        """The scheduler itself fails with an error (the pod is retried; no FitError)."""
        return cls(ERROR, [message])


@dataclass
class PreFilterResult:
    """What ``PreFilter`` returns: a status (Skip: the plugin's Filter is not run for this pod),
    optionally the only nodes worth filtering (``PreFilterResult.NodeNames``; None = all), and the
    plugin's state for Filter and AddPod."""

    status: Status = field(default_factory=Status)
    node_names: set[str] | None = None
    state: Any = None


class PodInfo:
    """A pod as the scheduler's cache holds it, with what filters ask of it often, computed once."""

    __slots__ = ("pod", "_requests", "_ports")

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self._requests: Resource | None = None
        self._ports: list[tuple[str, str, int]] | None = None

    @property
    def requests(self) -> Resource:
        """``CalculateResource``: what the pod counts for on its node (DRA statuses included)."""
        if self._requests is None:
            self._requests = scheduler_requests(self.pod)
        return self._requests

    @property
    def host_ports(self) -> list[tuple[str, str, int]]:
        """``GetHostPorts``: (hostIP, protocol, hostPort) of every container port with a host port."""
        if self._ports is None:
            self._ports = [(p.host_ip, p.protocol or "TCP", p.host_port) for c in self.pod.spec.containers
                           for p in c.ports if p.host_port > 0]
            self._ports += [(p.host_ip, p.protocol or "TCP", p.host_port) for c in self.pod.spec.init_containers
                            if c.restart_policy == "Always" for p in c.ports if p.host_port > 0]
        return self._ports

    @property
    def priority(self) -> int:
        """``corev1.PodPriority``: spec.priority, 0 when unset."""
        return self.pod.spec.priority or 0

    @property
    def has_affinity(self) -> bool:
        a = self.pod.spec.affinity
        return a is not None and (a.pod_affinity is not None or a.pod_anti_affinity is not None)

    @property
    def has_required_anti_affinity(self) -> bool:
        a = self.pod.spec.affinity
        return a is not None and a.pod_anti_affinity is not None and \
            bool(a.pod_anti_affinity.required_during_scheduling_ignored_during_execution)


class NodeInfo:
    """``framework.NodeInfo``: a node, the pods on it, and what they request and use."""

    __slots__ = ("node", "pods", "requested", "used_ports", "_allocatable")

    def __init__(self, node: Node, pods: list[PodInfo] | None = None) -> None:
        self.node = node
        self.pods: list[PodInfo] = []
        self.requested: Resource = {}
        self.used_ports: list[tuple[str, str, int]] = []
        self._allocatable: Resource | None = None
        for pod in pods or ():
            self.add_pod(pod)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def allocatable(self) -> Resource:
        """``NewResource(node.status.allocatable)``."""
        if self._allocatable is None:
            self._allocatable = to_resource(self.node.status.allocatable)
        return self._allocatable

    def add_pod(self, pod: PodInfo) -> None:
        self.pods.append(pod)
        for name, amount in pod.requests.items():
            self.requested[name] = self.requested.get(name, 0) + amount
        self.used_ports.extend(pod.host_ports)

    def with_pods(self, pods: list[PodInfo]) -> "NodeInfo":
        """A copy with ``pods`` added (``nodeInfo.Snapshot()`` then ``AddPodInfo``)."""
        copy = NodeInfo(self.node)
        copy.pods = list(self.pods)
        copy.requested = dict(self.requested)
        copy.used_ports = list(self.used_ports)
        copy._allocatable = self._allocatable
        for pod in pods:
            copy.add_pod(pod)
        return copy

    @property
    def pods_with_affinity(self) -> list[PodInfo]:
        return [p for p in self.pods if p.has_affinity]

    @property
    def pods_with_required_anti_affinity(self) -> list[PodInfo]:
        return [p for p in self.pods if p.has_required_anti_affinity]


@dataclass
class Cycle:
    """One scheduling attempt of one pod: the pod, every node (the snapshot), the nominated pods
    per node, the inventory (for objects beyond pods and nodes: claims, slices, PVCs, ...) and the
    profile's plugin arguments."""

    pod: PodInfo
    nodes: list[NodeInfo]
    nominated: dict[str, list[PodInfo]] = field(default_factory=dict)
    inventory: Any = None  # kubectl_dra.model.inventory.Inventory
    args: dict[str, dict] = field(default_factory=dict)  # plugin name -> its pluginConfig args
    namespaces: dict[str, dict[str, str]] | None = None  # namespace -> labels (None: not read)
    bound: Any = None  # kubectl_dra.allocation.bound.SearchBound: the profile's filterTimeout, shared
    release: int = MODELLED_MINOR  # the scheduler's minor: its default gates (docs/kubernetes/versions.md §4)

    def node(self, name: str) -> NodeInfo | None:
        return self._by_name().get(name)

    def _by_name(self) -> dict[str, NodeInfo]:
        index = self.__dict__.get("_index")
        if index is None:
            index = self.__dict__["_index"] = {n.name: n for n in self.nodes}
        return index


class Plugin:
    """A filter plugin. Subclasses set ``NAME`` and override what they implement."""

    NAME: ClassVar[str] = ""

    def pre_filter(self, cycle: Cycle) -> PreFilterResult:
        return PreFilterResult()

    def filter(self, cycle: Cycle, state: Any, node: NodeInfo) -> Status:
        return Status()

    def add_pod(self, cycle: Cycle, state: Any, pod: PodInfo, node: NodeInfo) -> Any:
        """``PreFilterExtensions.AddPod``: the state with ``pod`` (nominated onto ``node``) counted;
        a new object, never the one given (the framework keeps the original for the next node)."""
        return state
