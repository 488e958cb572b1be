"""One scan of one node, from its inputs to the result document and what could not be read.

The inputs: a source of API objects (a live cluster or a snapshot: only this node's pods and its
Node are listed, and the claims its pods or the kubelet involve), the node options given, and the
host paths (:class:`HostPaths`). The result: the NodeEnforcementReport and the problems to say on
stderr. Printing, exit codes, publishing and metrics stay with each caller.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from datetime import datetime

from kubectl_dra.errors import ApiError, NotFoundError
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.nodescan.cgroupfs import DEFAULT_ROOT, CgroupFS
from kubectl_dra.nodescan.kubeletstate import read_kubelet_state
from kubectl_dra.nodescan.nodedra import PodResourcesClient, read_node_dra
from kubectl_dra.nodescan.scan import scan
from kubectl_dra.nodestate.reconcile import claim_keys_to_read
from kubectl_dra.verify.crosscheck import pods_on
from kubectl_dra.verify.report import NodeEnforcementReport

UNUSABLE_SOURCE = ("absent", "unreadable", "corrupt")  # README: each is said on stderr


@dataclass(frozen=True)
class HostPaths:
    """Where this node's own state is read. ``kubelet_root`` None: no kubelet files (and no DRA
    checkpoint or PodResources socket); ``cdi_dirs`` None: the runtime's defaults; ``proc_root``:
    the host's /proc, for naming the processes of a diverged container (None: not named)."""

    cgroup_root: str = DEFAULT_ROOT
    sys_root: str | None = None
    kubelet_root: str | None = None
    cdi_dirs: tuple[str, ...] | None = None
    proc_root: str | None = None


@dataclass
class NodeScanResult:
    report: NodeEnforcementReport
    inventory: Inventory  # what was read from the API (the pods, the Node, and their problems)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (severity, line): what the node did not give


def node_requests(node: str) -> list[ReadRequest]:
    """Only this node's pods (fieldSelector) and its Node object: two lists from a live source (the
    agent's service answers both from its watches: node_agent/cache.py)."""
    return [ReadRequest(Pod, None, field_selector=f"spec.nodeName={node}", keep_raw=False),
            ReadRequest(Node, field_selector=f"metadata.name={node}", required=False, keep_raw=False)]


def read_claims(source, keys) -> tuple[dict, list[str]]:
    """The API's answer for each claim the node involves: the object, None when the list came back
    without it (it does not exist), or no entry when it could not be read. One small read per claim
    (fieldSelector metadata.name, which the agent's service lists once and then watches), never
    every claim of the cluster."""
    claims, problems = {}, []
    for namespace, name in keys:
        inventory = source.read([ReadRequest(ResourceClaim, namespace, field_selector=f"metadata.name={name}",
                                             keep_raw=False)])
        if "ResourceClaim" in inventory.read_kinds and not inventory.problems:
            claims[(namespace, name)] = inventory.get(ResourceClaim, namespace, name)
        else:
            problems += [p.message for p in inventory.problems if p.message not in problems]
    return claims, problems


def choose_node(given: str | None, environ) -> tuple[str, str]:
    """The node to check and where its name came from: --node, $NODE_NAME, or this host's name."""
    if given:
        return given, "--node"
    if environ.get("NODE_NAME"):
        return environ["NODE_NAME"], "NODE_NAME"
    return socket.gethostname(), "hostname"


def check_node(inventory: Inventory, name: str, source: str, where: str) -> None:
    """A node name that is no Node is an error, never "0 pods, all match". (When Nodes could not
    be read at all, that problem is reported instead and the name is taken as given.)"""
    if "Node" not in inventory.read_kinds or inventory.get(Node, None, name) is not None:
        return
    if source == "hostname":
        raise NotFoundError(f'this host\'s name "{name}" is not a Node in {where}: pass --node NAME (or set NODE_NAME '
                            "to the node's name)")
    raise NotFoundError(f'node "{name}" not found in {where} (from {source})')


class NodeScan:
    """One node's scan, run once (a node shell, ``verify``) or again and again (the service, which
    passes a ``cache`` so unchanged pods are not predicted again). ``name_source`` says where the
    node's name came from, for the error when it is no Node. ``list_pod_resources``: the agent's
    PodResources client; without it that source is not read (``verify``: no gRPC in kubectl-dra)."""

    def __init__(self, source, node: str, node_flags: dict, host: HostPaths, *, name_source: str = "--node",
                 list_pod_resources: PodResourcesClient | None = None, cache: dict | None = None):
        self.source, self.node, self.node_flags, self.host = source, node, node_flags, host
        self.name_source = name_source
        self.list_pod_resources = list_pod_resources
        self.cache = cache
        self.fs = CgroupFS(host.cgroup_root, host.sys_root)
        self.inventory: Inventory | None = None  # the last read, kept when the scan then fails


    def run(self, now: datetime | None = None) -> NodeScanResult:
        """Read the node and judge it. API failures raise (DRAError); a node name that is no Node
        raises NotFoundError; what the host does not give is in ``problems``, never a verdict."""
        inventory = self.inventory = self.source.read(node_requests(self.node))
        if "Pod" not in inventory.read_kinds:
            # Not read is never "none": without the node's pods every claim the kubelet holds would
            # look prepared for a gone pod. A freshly restarted API server answers 403 until its
            # authorizer has synced (seen on the real one); the scan fails and the last report stays.
            why = next((p.message for p in inventory.problems if p.kind == "Pod"), "the list did not succeed")
            raise ApiError(f"cannot read the pods of node {self.node}: {why} (nothing is concluded without them)")
        check_node(inventory, self.node, self.name_source, self.source.description)
        kubelet = read_kubelet_state(self.host.kubelet_root)
        state = read_node_dra(self.host.kubelet_root, self.host.cdi_dirs, list_pod_resources=self.list_pod_resources)
        claims, claim_problems = {}, []
        if state.usable:
            claims, claim_problems = read_claims(self.source, claim_keys_to_read(pods_on(inventory, self.node), state))
        report = scan(self.node, inventory, self.fs, self.node_flags, now=now, cache=self.cache,
                      proc_root=self.host.proc_root, kubelet=kubelet, node_dra=state, claims=claims)
        problems = [("warning", problem) for problem in kubelet.problems]
        problems += [("error" if s.state == "corrupt" else "warning", f"{s.path}: {s.message}")
                     for s in report.status.sources if s.state in UNUSABLE_SOURCE]
        problems += [("warning", f"claims not compared with the node: {problem}") for problem in claim_problems]
        return NodeScanResult(report=report, inventory=inventory, problems=problems)
