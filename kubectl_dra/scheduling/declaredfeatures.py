"""NodeDeclaredFeatures (GA and locked on in 1.37), as kube-scheduler v1.37.2 runs it with
component-helpers v0.37.2 ``nodedeclaredfeatures``.

The pod's required features are inferred from its spec alone (``InferForPodScheduling``); every
registered feature's inference reads only spec fields, so each is decided exactly:

- RestartAllContainersOnContainerExits: a container or init container with a restartPolicyRules
  action RestartAllContainers;
- UserNamespacesHostNetworkSupport: hostNetwork with hostUsers false;
- VolumeBindMountOptions: any container, init or ephemeral container mount with bindMountOptions.

The six other registered features are never required for scheduling. A node's
``status.declaredFeatures`` is read as ``FeatureMapper.TryMap`` reads it: a merge walk that
assumes the sorted list the API server enforces (unknown names are ignored). A node that declares
nothing (a kubelet older than 1.35, or a node object without a kubelet) satisfies no requirement:
it is refused, UnschedulableAndUnresolvable, for any pod that needs a feature.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from kubectl_dra.scheduling.checks import rejected, resize_deferred, resize_pre_filter, undetermined, unreadable
from kubectl_dra.scheduling.framework import SKIP, Cycle, NodeInfo, Plugin, PreFilterResult, Status

NAME = "NodeDeclaredFeatures"
# pkg/scheduler/framework/plugins/nodedeclaredfeatures/nodedeclaredfeatures.go (errReasonUnsatisfiedRequirements)
ERR_REASON = "node(s) didn't match Pod's required features"
SCHEDULER_VERSION = (1, 37, 2)


@dataclass(frozen=True)
class Feature:
    """A registered declared feature: its name, ``InferForScheduling`` and ``MaxVersion`` (None: none)."""
    name: str
    infer: Callable[[Any], bool]
    max_version: tuple[int, int, int] | None = None


def _never(spec: Any) -> bool:
    return False


def _restart_all_containers(spec: Any) -> bool:
    return any(rule.action == "RestartAllContainers"
               for c in (*spec.containers, *spec.init_containers) for rule in c.restart_policy_rules)


def _user_namespaces_host_network(spec: Any) -> bool:
    return spec.host_network and spec.host_users is False


def _bind_mount_options(spec: Any) -> bool:
    return any(m.bind_mount_options for c in (*spec.containers, *spec.init_containers, *spec.ephemeral_containers)
               for m in c.volume_mounts)


# component-helpers nodedeclaredfeatures/features/registry.go (AllFeatures)
REGISTRY = (
    Feature("RestartAllContainersOnContainerExits", _restart_all_containers),
    Feature("InPlacePodLevelResourcesVerticalScaling", _never),
    Feature("ExtendWebSocketsToKubelet", _never),
    Feature("InPlacePodVerticalScalingInitContainers", _never),
    Feature("InPlacePodVerticalScalingMemoryBackedVolumes", _never),
    Feature("UserNamespacesHostNetworkSupport", _user_namespaces_host_network),
    Feature("DRANodeAllocatableResources", _never),
    Feature("VolumeBindMountOptions", _bind_mount_options),
    Feature("DRAOptionalNodeOperations", _never),  # claims: checked by DynamicResources, not here
)
# What the inferences read, for the unreadable check: a container's rules and mounts, or the container
# itself (one dropped whole leaves only its path), and the two pod fields.
_POD_FIELDS = ("spec.containers", "spec.initContainers", "spec.ephemeralContainers", "spec.hostNetwork",
               "spec.hostUsers")
_READ = re.compile(r"spec(\.hostNetwork|\.hostUsers|\.(initContainers|containers|ephemeralContainers)"
                   r"(\[\d+\](\.(restartPolicyRules|volumeMounts|name)([.\[].*)?)?)?)?")


def try_map(registered: list[str], declared: list[str]) -> set[str]:
    """``FeatureMapper.TryMap``: the registered names found by walking both lists in step (an
    unsorted ``declared`` loses what comes after a larger name, as upstream's does)."""
    found, i, j = set(), 0, 0
    while i < len(declared) and j < len(registered):
        if declared[i] == registered[j]:
            found.add(registered[j])
            i, j = i + 1, j + 1
        elif declared[i] < registered[j]:
            i += 1
        else:
            j += 1
    return found


class NodeDeclaredFeatures(Plugin):
    NAME = NAME

    def __init__(self, *, registry: tuple[Feature, ...] = REGISTRY, version: tuple[int, int, int] = SCHEDULER_VERSION,
                 enabled: bool = True, resize_preemption: bool = False) -> None:
        self.registry = sorted(registry, key=lambda f: f.name)
        self.names = [f.name for f in self.registry]  # NewFeatureMapper sorts too (by byte order, as Go)
        self.version = version
        self.enabled = enabled  # the NodeDeclaredFeatures gate: locked on in 1.37
        self.resize_preemption = resize_preemption  # InPlacePodVerticalScalingSchedulerPreemption

    def required(self, pod: Any) -> list[str]:
        """``InferForPodScheduling``: features whose max version is not below ours and that the pod needs."""
        return [f.name for f in self.registry
                if (f.max_version is None or self.version <= f.max_version) and f.infer(pod.spec)]

    def pre_filter(self, cycle: Cycle) -> PreFilterResult:
        pod = cycle.pod.pod
        if self.resize_preemption and (early := resize_pre_filter(NAME, pod)) is not None:
            return PreFilterResult(status=early)
        if not self.enabled:
            return PreFilterResult(status=self._status(Status(SKIP)))
        bad = [p for p in unreadable(pod, *_POD_FIELDS) if _READ.fullmatch(p)]
        if bad:
            return PreFilterResult(status=undetermined(NAME, "the pod's", bad))
        required = self.required(pod)
        if not required:
            return PreFilterResult(status=self._status(Status(SKIP)))
        return PreFilterResult(state=required)

    def filter(self, cycle: Cycle, state: Any, node: NodeInfo) -> Status:
        if self.resize_preemption and resize_deferred(cycle.pod.pod):
            return Status()
        if not self.enabled:
            return Status()
        if state is None:
            return self._status(Status.error(f'error reading "PreFilter{NAME}" from cycle-state: not found'))
        bad = unreadable(node.node, "status.declaredFeatures")
        if bad:
            return undetermined(NAME, f"node {node.name}'s", bad)
        declared = try_map(self.names, node.node.status.declared_features)
        missing = [name for name in state if name not in declared]
        if not missing:
            return Status()
        declares = ", ".join(node.node.status.declared_features) or "no features"
        return rejected(NAME, ERR_REASON, f"missing {', '.join(missing)} (the node declares {declares})",
                        unresolvable=True)

    @staticmethod
    def _status(status: Status) -> Status:
        status.plugin = NAME
        return status
