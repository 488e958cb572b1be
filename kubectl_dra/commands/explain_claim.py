"""``kubectl dra explain claim``: the claim (named, or found through ``--pod``) and ``--node`` checked
against what is read, the claim's surroundings read, ``claims/explain.py`` run, and for a claim not
allocated the allocation node by node (``allocation/``, loaded only then), one ``ClaimExplanation``
printed as a tree, JSON or YAML."""

from __future__ import annotations

import click

from kubectl_dra.claims.explain import explain_claim
from kubectl_dra.claims.summary import waiting_pods
from kubectl_dra.commands.inputs import (add_reads, allocation_requests, fetch_named, open_for, read_around,
                                         read_versions, report_problems, slice_requests)
from kubectl_dra.env import Environment
from kubectl_dra.errors import NotFoundError
from kubectl_dra.exitcodes import ExitStatus
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.kube.sources import Opened
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.registry import NodeEnforcementReportObject, models
from kubectl_dra.model.resource import DeviceClass, DeviceTaintRule
from kubectl_dra.model.scheduling import PodGroup
from kubectl_dra.model.workloads import ReplicaSet
from kubectl_dra.printers.claim_tree import claim_tree
from kubectl_dra.printers.options import OutputOptions
from kubectl_dra.printers.output import emit
from kubectl_dra.printers.style import Style
from kubectl_dra.scheduling.extended import is_extended_claim


def run(env: Environment, *, kube: KubeOptions, output: OutputOptions, pod_name: str | None, only_node: str | None,
        name: str | None) -> ExitStatus:
    env.color = output.color
    opened = open_for(env, kube)
    namespace = None if kube.all_namespaces else kube.namespace or opened.default_namespace  # None: find it
    # validate: what NAME, --pod and --node name must exist
    if pod_name:
        name, namespace = _claim_of_pod(env, opened, namespace, pod_name, name)
    if only_node is not None:  # a missing node would narrow the allocation to none: "fits nowhere"
        fetch_named(env, opened, Node, None, only_node)
    found, first = fetch_named(env, opened, ResourceClaim, namespace, name)
    namespace = found.namespace
    # gather: what the claim's devices, holders and nodes' agents say of it
    inventory = read_around(opened, found, first, _requests(found, namespace, opened.source))
    # the core; a claim not allocated: why, node by node
    result = explain_claim(found, inventory)
    if found.status.allocation is None and not found.deleted:
        # start-up: pending - the allocator (and CEL) load only for a claim not allocated
        from kubectl_dra.allocation.explain import explain_allocation, waiting_findings

        add_reads(opened, inventory, allocation_requests(namespace, only_node))
        result.allocation = explain_allocation([found], inventory, only_node=only_node)
        result.findings += waiting_findings(result.allocation, waiting_pods(found, inventory), result.findings)
    result.versions = read_versions(opened, inventory.of_kind("Node"))
    emit(env, result, output, text=lambda: claim_tree(result, Style(env.use_color)))
    return report_problems(env, inventory)


def _requests(claim: ResourceClaim, namespace: str, source) -> list[ReadRequest]:
    """The pods of its namespace, the pools of its devices, the classes and taint rules, what its
    ``status.reservedFor`` names (PodGroups, other kinds, a Deployment's ReplicaSets), and the agents'
    reports of its node."""
    requests = [ReadRequest(Pod, namespace, keep_raw=False), *slice_requests([claim], source),
                ReadRequest(DeviceClass, required=False, keep_raw=False),
                ReadRequest(DeviceTaintRule, required=False, keep_raw=False)]
    refs = claim.status.reserved_for
    if any(r.is_pod_group for r in refs):
        requests.append(ReadRequest(PodGroup, namespace, required=False))
    other = {(r.api_group or "", r.resource) for r in refs if not r.is_pod and not r.is_pod_group}
    for model in models():
        if (model.GROUP, model.PLURAL) in other:
            requests.append(ReadRequest(model, namespace if model.NAMESPACED else None, required=False))
            if model.KIND == "Deployment":
                requests.append(ReadRequest(ReplicaSet, namespace, required=False))
    # a claim the scheduler made for extended resources: does its node advertise them too?
    if is_extended_claim(claim) and claim.node_name:
        requests.append(ReadRequest(Node, field_selector=f"metadata.name={claim.node_name}", required=False,
                                    keep_raw=False))
    # the node's view, when an agent reports on the claim's node
    for node in sorted({claim.node_name} - {None}):
        requests.append(ReadRequest(NodeEnforcementReportObject, field_selector=f"metadata.name={node}",
                                    required=False))
    return requests


def _claim_of_pod(env: Environment, opened: Opened, namespace: str | None, pod_name: str,
                  pod_claim: str | None) -> tuple[str, str]:
    """The ResourceClaim object (name, namespace) behind one of a pod's claims, as the kubelet
    resolves it: CLAIM-NAME is the pod's name for it (optional when the pod has one) or the object's."""
    pod, _ = fetch_named(env, opened, Pod, namespace, pod_name)
    namespace = pod.namespace
    names = pod.referenced_claim_names()
    if not names:
        raise NotFoundError(f"pod {namespace}/{pod_name} references no ResourceClaim")
    if pod_claim is None:
        if len(names) > 1:
            raise click.UsageError(f"pod {pod_name} has claims {', '.join(sorted(names))}: name one")
        pod_claim = next(iter(names))
    if pod_claim not in names:
        if pod_claim in names.values():
            return pod_claim, namespace  # already the object name
        raise NotFoundError(f"pod {namespace}/{pod_name} has no claim {pod_claim} "
                            f"(its claims: {', '.join(sorted(names))})")
    if names[pod_claim] is None:
        raise NotFoundError(f"pod {namespace}/{pod_name}: claim {pod_claim} has no ResourceClaim yet "
                            "(status.resourceClaimStatuses names none)")
    return names[pod_claim], namespace
