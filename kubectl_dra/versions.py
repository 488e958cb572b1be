"""Which Kubernetes release the rules follow, which release each component of a cluster runs, and
what is known to differ between them (docs/kubernetes/versions.md).

Every rule in the core follows v1.37.2. A cluster names its own releases: the API server's
``gitVersion`` (``GET /version``, or the snapshot marker) and each node's
``status.nodeInfo.kubeletVersion``. kube-scheduler and kube-controller-manager show theirs through
no API, so they are taken to be the API server's (the skew policy allows them one minor older:
said as an assumption). Where a component runs an older supported minor (1.34 to 1.36), the
commands apply that release's rule where one is encoded here, and otherwise mark the answer as
modelled on 1.37 and not known for the cluster; a release outside 1.34 to 1.37 is modelled on
nothing, so nothing it predicts is claimed as that release's.

A leaf: no model, no I/O (the ``Versions`` part is a document part like any other).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import Field

from kubectl_dra.document import Part

MODELLED = "v1.37.2"
MODELLED_MINOR = 37
OLDEST_MINOR = 34  # resource.k8s.io/v1 (DRA GA) and the oldest release whose differences are encoded
SCHEDULER = "kube-scheduler"
KUBELET = "kubelet"
CONTROLLER_MANAGER = "kube-controller-manager"

_MINOR = re.compile(r"^v?1\.(\d+)(?:\.|$)")


def minor_of(version: str | None) -> int | None:
    """The minor of a Kubernetes version string (``v1.34.4``, ``v1.34.4-eks-1a2b``, ``1.35``), or None."""
    match = _MINOR.match((version or "").strip())
    return int(match.group(1)) if match else None


def known(minor: int | None) -> bool:
    """Whether the rules of this minor are encoded (its differences from 1.37 listed below)."""
    return minor is not None and OLDEST_MINOR <= minor <= MODELLED_MINOR


@dataclass(frozen=True, slots=True)
class Difference:
    """One rule a component of an older release runs differently from v1.37.2 (with that
    release's default feature gates). ``until`` is the last minor it applies to; ``applied``: the
    commands follow the older rule (else they mark the answer as not known)."""

    component: str
    until: int
    rule: str
    text: str
    applied: bool
    section: str  # where docs/kubernetes/versions.md gives the upstream files


_d = Difference


DIFFERENCES: tuple[Difference, ...] = (
    # kube-scheduler (docs/kubernetes/versions.md §4)
    _d(SCHEDULER, 36, "NodeName order", "NodeUnschedulable filters before NodeName (1.37 swapped them)", True,
       "docs/kubernetes/versions.md §4.1"),
    _d(SCHEDULER, 35, "NodeDeclaredFeatures", "NodeDeclaredFeatures is not in the default profile (its gate is "
       "alpha, off)", True,
       "docs/kubernetes/versions.md §4.1"),
    _d(SCHEDULER, 35, "DRAExtendedResource", "extended resources are never handed to DRA (DRAExtendedResource is "
       "alpha, off): NodeResourcesFit counts them", True,
       "docs/kubernetes/versions.md §4.2"),
    _d(SCHEDULER, 36, "VolumeLimitScaling", "NodeVolumeLimits does not refuse a node without the CSI driver "
       "(VolumeLimitScaling is alpha, off)", True,
       "docs/kubernetes/versions.md §4.2"),
    _d(SCHEDULER, 35, "DRA filter timeout", "an allocation search that times out makes the node unschedulable "
       "(\"timed out trying to allocate devices\"), not a scheduling error", False,
       "docs/kubernetes/versions.md §4.3"),
    _d(SCHEDULER, 34, "invalid pools", "an invalid resource pool met in the search is a scheduling error "
       "(\"pool X is invalid: ...\"), not \"invalid resource pools were encountered\"", False,
       "docs/kubernetes/versions.md §4.3"),
    _d(SCHEDULER, 35, "claim owner", "a claim another pod owns is refused as \"... (pod is not owner)\"", False,
       "docs/kubernetes/versions.md §4.3"),
    _d(SCHEDULER, 36, "DRA PostFilter", "the message goes on with DynamicResources' PostFilter reason (\"no new "
       "claims to deallocate\" or \"still not schedulable\") before \" preemption:\"", True,
       "docs/kubernetes/versions.md §4.3"),
    _d(SCHEDULER, 36, "allocator errors", "the allocator's CEL runtime errors and claim-size limit are worded "
       "differently", False,
       "docs/kubernetes/versions.md §4.3"),
    # kubelet (docs/kubernetes/versions.md §5)
    _d(KUBELET, 36, "DRA in cgroups", "the kubelet adds no DRA node-allocatable amounts to cgroups "
       "(KEP-5517's kubelet side is 1.37's)", True,
       "docs/kubernetes/versions.md §5"),
    _d(KUBELET, 36, "limits declared", "a pod's cgroup limit counts an init container as limited when it or a "
       "sidecar before it has a limit (PodLimits' container callback)", True,
       "docs/kubernetes/versions.md §5"),
    _d(KUBELET, 36, "Memory QoS", "MemoryQoS is alpha and off by default; with it on, memoryThrottlingFactor "
       "defaults to 0.9 (--memory-qos legacy before 1.36)", True,
       "docs/kubernetes/versions.md §5"),
    _d(KUBELET, 34, "systemd quota", "under the systemd driver the pod's cpu.max quota is written unrounded "
       "(verify accepts both)", True,
       "docs/kubernetes/versions.md §5"),
    # kube-controller-manager (docs/kubernetes/versions.md §6)
    _d(CONTROLLER_MANAGER, 35, "device taint eviction", "no device taint eviction (DRADeviceTaints is alpha, "
       "off: the API server keeps no device taints)", True,
       "docs/kubernetes/versions.md §6"),
)


def older(component: str, rule: str, minor: int | None) -> bool:
    """Whether ``component`` of that minor runs the ``rule`` of DIFFERENCES otherwise than 1.37: the
    one place each release boundary is written."""
    return any(d.rule == rule for d in differences(component, minor))


def differences(component: str, minor: int | None) -> list[Difference]:
    """What ``component`` of that minor does otherwise (none for 1.37 or a release not known)."""
    if not known(minor) or minor == MODELLED_MINOR:
        return []
    return [d for d in DIFFERENCES if d.component == component and minor <= d.until]


class Versions(Part):
    """The releases an answer was modelled on and found, said once per answer."""

    modelled_on: str = MODELLED
    api_server: str | None = None  # its gitVersion; None: not known (``api_server_source`` says why)
    api_server_source: str = ""
    kubelets: dict[str, int] = Field(default_factory=dict)  # kubelet version -> nodes read that report it
    assumed: list[str] = Field(default_factory=list)  # what could not be read and was taken as given
    applied: list[str] = Field(default_factory=list)  # an older release's rules followed instead of 1.37's
    not_known: list[str] = Field(default_factory=list)  # rules modelled on 1.37 that differ here: not claimed

    def differs(self) -> bool:
        """A component of the cluster runs a release other than the modelled one (or one not known)."""
        minors = [minor_of(self.api_server)] if self.api_server else []
        minors += [minor_of(v) for v in self.kubelets]
        return any(m != MODELLED_MINOR for m in minors) or bool(self.not_known)

    def scheduler_minor(self) -> int | None:
        """kube-scheduler's (and kube-controller-manager's) minor: the API server's; None if not known."""
        return minor_of(self.api_server)


def cluster_versions(api_server: str | None, source: str, kubelet_versions: list[str]) -> Versions:
    """The releases of a cluster, before any command adds what it applied or could not claim."""
    kubelets: dict[str, int] = {}
    for version in kubelet_versions:
        if version:  # a Node without a kubelet's report (made by hand, kwok) says nothing of one
            kubelets[version] = kubelets.get(version, 0) + 1
    versions = Versions(api_server=api_server, api_server_source=source, kubelets=dict(sorted(kubelets.items())))
    if api_server is None:
        versions.assumed.append(f"the API server's release is not known ({source}): rules of {MODELLED}")
    else:
        versions.assumed.append(f"{SCHEDULER} and {CONTROLLER_MANAGER} run {api_server}'s minor (no API shows "
                                "theirs; the skew policy allows one minor older)")
    for version in kubelets:
        minor = minor_of(version)
        if not known(minor):
            versions.not_known.append(f"kubelet {version}: kubectl-dra models kubelets of 1.{OLDEST_MINOR} to "
                                      f"1.{MODELLED_MINOR}; its cgroup values follow {MODELLED}")
    minor = minor_of(api_server)
    if api_server is not None and not known(minor):
        versions.not_known.append(f"API server {api_server}: kubectl-dra models 1.{OLDEST_MINOR} to "
                                  f"1.{MODELLED_MINOR}; what its scheduler and controllers do is not claimed")
    return versions


def note(versions: Versions, component: str, minor: int | None, rules: set[str] | None = None) -> None:
    """Record on ``versions`` the differences of ``component`` at ``minor`` that bear on the answer
    (``rules``: their names; None: all): applied ones and the ones not claimed, once each."""
    for d in differences(component, minor):
        if rules is not None and d.rule not in rules:
            continue
        line = f"{component} 1.{minor}: {d.text} ({d.section})"
        target = versions.applied if d.applied else versions.not_known
        if line not in target:
            target.append(line)


def kubelet_notes(versions: Versions) -> Versions:
    """The kubelet rules a prediction of these nodes' cgroups followed (verify, the agent's scan):
    each kubelet's differences from 1.37 are where a mismatch may come from."""
    for version in versions.kubelets:
        note(versions, KUBELET, minor_of(version), {"DRA in cgroups", "limits declared", "systemd quota"})
    return versions
