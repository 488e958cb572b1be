"""``kubectl dra explain pod``: the pod, ``--node`` and ``--scheduler-config`` checked, the pod's claims
and the pools of their devices read, ``pods/explain.py`` run; for a pod not bound to a node also the
scheduler's view (``scheduling/``) and the allocation of its claims (``allocation/``, with Karpenter
proposals when no node fits), loaded only then; one ``PodExplanation`` printed as a tree, JSON or
YAML."""

from __future__ import annotations

from pathlib import Path

from kubectl_dra.cgroups.options import resolve
from kubectl_dra.commands.inputs import (add_reads, fetch_named, open_for, read_around, read_overlay_inputs,
                                         read_versions, report_problems, slice_requests)
from kubectl_dra.env import Environment
from kubectl_dra.errors import InputError
from kubectl_dra.exitcodes import ExitStatus
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.kube.snapshot import read_documents
from kubectl_dra.kube.sources import Opened
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.resource import DeviceClass, DeviceTaintRule
from kubectl_dra.pods.document import PodExplanation
from kubectl_dra.pods.explain import explain_pod, pod_versions
from kubectl_dra.printers.options import OutputOptions
from kubectl_dra.printers.output import emit
from kubectl_dra.printers.pods import pod_tree
from kubectl_dra.printers.style import Style
from kubectl_dra.versions import SCHEDULER, minor_of, older


def run(env: Environment, *, kube: KubeOptions, output: OutputOptions, node_flags: dict, only_node: str | None,
        scheduler_config: Path | None, name: str, catalog: Path | None = None,
        feature_gate: bool | None = None, ignore_dra_requests: bool | None = None) -> ExitStatus:
    env.color = output.color
    opened = open_for(env, kube)
    namespace = None if kube.all_namespaces else kube.namespace or opened.default_namespace  # None: find it
    # validate: the pod and --node must exist; --scheduler-config is read and checked whenever it is
    # given (a file named on the command line is never ignored), used for a pod not bound to a node
    found, first = fetch_named(env, opened, Pod, namespace, name)
    namespace = found.namespace
    if only_node is not None:  # a missing node would narrow the scheduling to none: "fits nowhere"
        fetch_named(env, opened, Node, None, only_node)
    pending = not found.node_name and not found.is_done
    release = minor_of(opened.source.server_version()[0])  # the scheduler's, taken to be the API server's
    profile = _scheduler_profile(opened, scheduler_config, found, release) if scheduler_config else None
    # gather: its claims, its node, then only the pools its claims' devices came from
    inventory = read_around(opened, found, first, [
        ReadRequest(ResourceClaim, namespace, keep_raw=False), ReadRequest(DeviceTaintRule, required=False, keep_raw=False),
        *([ReadRequest(Node, field_selector=f"metadata.name={found.node_name}", required=False)]
          if found.node_name else [])])
    claims = [c for name in found.referenced_claim_names().values()
              if name and (c := inventory.get(ResourceClaim, namespace, name)) is not None]
    slices = slice_requests(claims, opened.source)
    if slices:
        add_reads(opened, inventory, slices)
    # the core
    node = inventory.get(Node, None, found.node_name) if found.node_name else None
    options, sources = resolve(node_flags, node)
    result = explain_pod(found, inventory, options, sources)
    if pending:
        _why_pending(opened, found, inventory, result, profile, only_node, release)
        scheduling = result.scheduling
        # Karpenter provisions for a pod the scheduler marked Unschedulable: only when no node fits
        # for certain (a node that cannot be told might take it)
        if only_node is None and scheduling is not None and not scheduling.feasible_nodes \
                and scheduling.message_known and scheduling.error is None:
            _karpenter_launch(opened, found, inventory, result, catalog, feature_gate, ignore_dra_requests)
    result.versions = pod_versions(read_versions(opened, [node] if node else inventory.all(Node)), found, result,
                                   options)
    emit(env, result, output, text=lambda: pod_tree(result, Style(env.use_color)))
    return report_problems(env, inventory)


def _scheduler_profile(opened: Opened, path: Path, pod: Pod, release: int | None):
    """The profile of the pod's scheduler in the KubeSchedulerConfiguration file (a bad file: exit 3)."""
    # start-up: pending - the scheduler's profile, only when --scheduler-config is given
    from kubectl_dra.scheduling.profile import from_documents

    if str(path) == "-" and getattr(opened.source, "path", None) == "-":
        raise InputError("--scheduler-config - and --snapshot - both read standard input: give one of them a file")
    return from_documents(read_documents(path, allow_stdin=True, flag="--scheduler-config"), pod.spec.scheduler_name,
                          str(path), release)


def _karpenter_launch(opened: Opened, pod: Pod, inventory: Inventory, result: PodExplanation,
                      catalog: Path | None, feature_gate: bool | None, ignore_dra_requests: bool | None) -> None:
    """What Karpenter would launch for a pod no node can take (``result.karpenter``); nothing
    without NodePools. What could not be read joins the pod's problems."""
    # start-up: pending - Karpenter's NodePools, only for a pod no node can take
    from kubectl_dra.model.karpenter import NodeOverlay, NodePool
    from kubectl_dra.scheduling.launch import dra_answer, has_claims, launch_findings

    if has_claims(pod):  # Karpenter's answer needs no overlay evaluation: only whether it is there
        if opened.source.read([ReadRequest(NodePool, required=False)]).all(NodePool):
            result.karpenter = dra_answer(ignore_dra_requests)
            result.findings += launch_findings(result.karpenter, pod)
        return
    # start-up: pending - the overlay evaluation loads only for a pod without claims no node can take
    from kubectl_dra.overlays.explain import evaluate
    from kubectl_dra.scheduling.launch import predict_launch

    # the scheduling has read the Nodes already
    karpenter, instance_types = read_overlay_inputs(opened, catalog, require_overlays=False,
                                                    nodes=inventory.all(Node))
    inventory.problems += [p for p in karpenter.problems if p.kind not in ("NodeOverlay", "NodePool", "NodeClaim")]
    pools = karpenter.all(NodePool)
    if not pools:
        return
    views = evaluate(karpenter.all(NodeOverlay), pools, instance_types, gate_enabled=feature_gate).instance_types
    result.karpenter = predict_launch(pod, pools, views, instance_types)
    # NodeOverlays that could not be read are not "none" (a CRD not served is): say so, and exit 4
    unread = [p for p in karpenter.problems if p.kind == "NodeOverlay" and not p.not_served]
    if unread and "NodeOverlay" not in karpenter.read_kinds:
        inventory.problems += [p.model_copy(update={"severity": "error"}) for p in unread]
        result.karpenter.assumptions.append("NodeOverlays could not be read: capacity and prices without them")
    result.findings += launch_findings(result.karpenter, pod)


def _why_pending(opened: Opened, pod: Pod, inventory: Inventory, result: PodExplanation, profile,
                 only_node: str | None, release: int | None) -> None:
    """What the scheduler's cache holds read, every filter on every node (``result.scheduling``), and
    for a pod with claims their allocation (``result.allocation``), with Karpenter's proposals when no
    node fits; the findings of both join the pod's."""
    # start-up: pending - the scheduler's filters and the allocator load only for a pod not bound to a node
    from kubectl_dra.allocation.explain import allocation_findings, explain_allocation, pod_claims, wants_proposals
    from kubectl_dra.scheduling.explain import pod_scheduling
    from kubectl_dra.scheduling.extended import claim_view, claims_on, pod_demand
    from kubectl_dra.scheduling.profile import default_profile
    from kubectl_dra.scheduling.reads import scheduling_reads

    profile = profile or default_profile(release)
    add_reads(opened, inventory, scheduling_reads(pod))
    inventory.add(pod)  # the pod as fetched first (a later list may hold an older copy)
    result.scheduling, unschedulable = pod_scheduling(pod, inventory, profile, only_node)
    result.findings[:0] = unschedulable
    demand = pod_demand(pod, inventory) if "DeviceClass" in inventory.read_kinds and "ResourceSlice" in \
        inventory.read_kinds and not older(SCHEDULER, "DRAExtendedResource", profile.release) else None
    if not pod.spec.resource_claims and (demand is None or demand.undecided):
        return
    pending, allocated, problems = pod_claims(pod, inventory)
    for problem in problems:
        inventory.problem(problem, kind="ResourceClaim")
    # nodes only the claims keep the pod from (or that cannot be decided) are the ones worth showing
    relevant = frozenset(n.node for n in result.scheduling.nodes
                         if n.fits is not False or n.plugin == "DynamicResources")
    usable = demand is not None and not demand.undecided
    result.allocation = explain_allocation(pending, inventory, allocated=allocated, only_node=only_node,
                                           bound=profile.search_bound(), first=relevant,
                                           extended=claims_on(demand) if usable else None)
    if usable:
        result.allocation.extended = claim_view(demand, inventory.all(Node))
    if wants_proposals(result.allocation, only_node):
        # start-up: pending - Karpenter's overlay evaluation (~45 ms) loads only when no node can take the claims
        from kubectl_dra.allocation.proposals import karpenter_proposals

        karpenter, instance_types = read_overlay_inputs(opened, None, require_overlays=False)
        result.allocation.proposals = karpenter_proposals(pending, inventory, karpenter, instance_types)
    result.findings += allocation_findings(result.allocation, pod.status.nominated_node_name)
