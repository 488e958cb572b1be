"""``kubectl dra explain claim|pod|node NAME``: read one object and what it needs, run its core
(``claims``, ``pods``, ``nodes``), print the result document."""

from __future__ import annotations

from pathlib import Path

import click

from kubectl_dra.flags.completion import object_names
from kubectl_dra.exitcodes import EPILOG
from kubectl_dra.flags.node import node_options
from kubectl_dra.flags.output import output_options
from kubectl_dra.flags.connection import kube_options, root_kube_options
from kubectl_dra.flags.catalog import catalog_option


@click.group("explain", epilog=EPILOG)
@root_kube_options  # connection flags before or after "claim|pod|node", as on the root
def explain() -> None:
    """Explain one object: what it got, who holds it, what is wrong."""


@explain.command("claim", epilog=EPILOG)
@kube_options
@output_options(formats=("tree", "json", "yaml"), default="tree")
@click.option("--pod", "pod_name", metavar="POD", shell_complete=object_names("Pod"),
              help="Find the claim through this pod: NAME is then the pod's claim name (optional when the pod "
                   "has one claim).")
@click.option("--node", "only_node", metavar="NODE", shell_complete=object_names("Node"),
              help="For a claim that is not allocated: explain the allocation on this node only.")
@click.argument("name", required=False, shell_complete=object_names("ResourceClaim"))
@click.pass_context
def claim(ctx: click.Context, kube, output, pod_name: str | None, only_node: str | None, name: str | None) -> None:
    """Explain a ResourceClaim: devices, reservations, consumers and findings.

    \b
    Every status.reservedFor entry is resolved: pods by UID (exists, missing,
    uidMismatch = replaced pod, done = finished), PodGroups by name, other
    objects by resource and name. Consumers are the pods that reference the
    claim. Findings have stable codes (see the README).

    \b
    Examples:
      kubectl dra explain claim trainer-gpus-hd295 -n ml
      kubectl dra explain claim trainer-gpus-hd295 -n ml -o json
      kubectl dra explain claim --pod embedder gpu -n ml   # the claim behind pod embedder's claim "gpu"
      kubectl dra explain claim trainer-gpus-hd295 -A      # whichever namespace holds it (one must)
    """
    from kubectl_dra.claims.explain import explain_claim
    from kubectl_dra.commands.inputs import fetch_named, open_for, read_around, report_problems, slice_requests
    from kubectl_dra.kube.reads import ReadRequest
    from kubectl_dra.model.pod import Pod
    from kubectl_dra.model.registry import models
    from kubectl_dra.model.claim import ResourceClaim
    from kubectl_dra.model.resource import DeviceClass
    from kubectl_dra.model.scheduling import PodGroup
    from kubectl_dra.model.workloads import ReplicaSet
    from kubectl_dra.printers.claim_tree import claim_tree
    from kubectl_dra.printers.output import emit
    from kubectl_dra.printers.style import Style

    env = ctx.obj
    env.color = output.color
    opened = open_for(env, kube)
    namespace = None if kube.all_namespaces else kube.namespace or opened.default_namespace  # None: find it
    if pod_name:
        name, namespace = _claim_of_pod(env, opened, namespace, pod_name, name)
    elif not name:
        raise click.UsageError("give a claim NAME, or --pod POD [CLAIM-NAME]")
    _require_node(env, opened, only_node)
    found, first = fetch_named(env, opened, ResourceClaim, namespace, name)
    namespace = found.namespace
    from kubectl_dra.model.resource import DeviceTaintRule

    requests = [ReadRequest(Pod, namespace, keep_raw=False), *slice_requests([found]),
                ReadRequest(DeviceClass, required=False, keep_raw=False),
                ReadRequest(DeviceTaintRule, required=False, keep_raw=False)]
    refs = found.status.reserved_for
    if any(r.is_pod_group for r in refs):
        requests.append(ReadRequest(PodGroup, namespace, required=False))
    other = {(r.api_group or "", r.resource) for r in refs if not r.is_pod and not r.is_pod_group}
    for model in models():
        if (model.GROUP, model.PLURAL) in other:
            requests.append(ReadRequest(model, namespace if model.NAMESPACED else None, required=False))
            if model.KIND == "Deployment":
                requests.append(ReadRequest(ReplicaSet, namespace, required=False))
    from kubectl_dra.model.registry import NodeEnforcementReportObject

    # the node's view, when an agent reports on the claim's node (or its reserved pods' nodes)
    for node in sorted({found.node_name} - {None}):
        requests.append(ReadRequest(NodeEnforcementReportObject, field_selector=f"metadata.name={node}",
                                    required=False))
    inventory = read_around(opened, found, first, requests)
    result = explain_claim(found, inventory)
    if found.status.allocation is None and not found.deleted:  # why is it pending: the allocator, node by node
        from kubectl_dra.allocation.explain import allocation_findings, explain_allocation
        from kubectl_dra.commands.inputs import add_reads, allocation_requests

        add_reads(opened, inventory, allocation_requests(namespace, only_node))
        result.allocation = explain_allocation([found], inventory, only_node=only_node)
        # a verdict only when pods wait for it: otherwise nothing asks the scheduler to allocate it
        from kubectl_dra.claims.summary import waiting_pods

        waiting = waiting_pods(found, inventory)
        for nominated in sorted({p.status.nominated_node_name for p in waiting}, key=lambda n: n or ""):
            result.findings += [f for f in allocation_findings(result.allocation, nominated)
                                if f.code not in {x.code for x in result.findings}]
    emit(env, result, output, text=lambda: claim_tree(result, Style(env.use_color)))
    ctx.exit(report_problems(env, inventory))


def _require_node(env, opened, name: str | None) -> None:
    """``--node NAME`` must name a node that exists: a missing one would narrow the allocation to
    no nodes at all and read as "fits nowhere" (not found: exit 3; could not read: also exit 3)."""
    if name is not None:
        from kubectl_dra.commands.inputs import fetch_named
        from kubectl_dra.model.node import Node

        fetch_named(env, opened, Node, None, name)


def _claim_of_pod(env, opened, namespace: str | None, pod_name: str, pod_claim: str | None) -> tuple[str, str]:
    """The ResourceClaim object (name, namespace) behind one of a pod's claims, as the kubelet
    resolves it."""
    from kubectl_dra.commands.inputs import fetch_named
    from kubectl_dra.errors import NotFoundError
    from kubectl_dra.model.pod import Pod

    pod, _ = fetch_named(env, opened, Pod, namespace, pod_name)
    namespace = pod.namespace
    names = {k: v for k, v in pod.referenced_claim_names().items()}
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


@explain.command("pod", epilog=EPILOG)
@kube_options
@output_options(formats=("tree", "json", "yaml"), default="tree")
@node_options
@click.option("--node", "only_node", metavar="NODE", shell_complete=object_names("Node"),
              help="For a pod not bound to a node: show the scheduling and allocation on this node only.")
@click.option("--scheduler-config", metavar="FILE", type=click.Path(path_type=Path, allow_dash=True),
              help="For a pod not bound to a node: the KubeSchedulerConfiguration your kube-scheduler runs "
                   "with (its profiles, disabled plugins and plugin args). Default: kube-scheduler v1.37.2's "
                   "default profile.")
@click.argument("name", shell_complete=object_names("Pod"))
@click.pass_context
def pod(ctx: click.Context, kube, output, node_flags, only_node: str | None, scheduler_config: Path | None,
        name: str) -> None:
    """Explain a pod's DRA amounts and the cgroup values that should enforce them,
    or, for a pod not bound to a node, why it is Pending.

    \b
    The chain: the pod's claims -> their devices -> the node-allocatable
    amounts the scheduler recorded (KEP-5517) -> what the scheduler counts ->
    the pod cgroup and every container cgroup the kubelet and the runtime
    should write (cpu.weight, cpu.max, memory.max, hugetlb.*), each value
    with the reason for it. Node options (cgroup driver, runtime, weight
    formula, ...) come from the flags, else from the Node, else defaults.

    \b
    A pod not bound to a node gets "Scheduling": the message kube-scheduler
    would write now ("0/3 nodes are available: ..."), and node by node
    every filter's verdict in the scheduler's words, with the numbers
    behind each (requested, DRA amounts, overhead, allocatable, already
    requested). Whatever kubectl-dra cannot decide is listed under "not
    evaluated" and makes the node "cannot tell", never "fits".

    \b
    Examples:
      kubectl dra explain pod embedder -n ml
      kubectl dra explain pod risk-engine -n default --cgroup-driver cgroupfs -o json
      kubectl dra explain pod embedder -n ml --snapshot examples/cluster --memory-qos legacy
    """
    from kubectl_dra.cgroups.options import resolve
    from kubectl_dra.commands.inputs import fetch_named, open_for, read_around, report_problems, slice_requests
    from kubectl_dra.kube.reads import ReadRequest
    from kubectl_dra.model.node import Node
    from kubectl_dra.model.pod import Pod
    from kubectl_dra.model.claim import ResourceClaim
    from kubectl_dra.model.resource import ResourceSlice
    from kubectl_dra.pods.explain import explain_pod
    from kubectl_dra.printers.output import emit
    from kubectl_dra.printers.pods import pod_tree
    from kubectl_dra.printers.style import Style

    env = ctx.obj
    env.color = output.color
    opened = open_for(env, kube)
    namespace = None if kube.all_namespaces else kube.namespace or opened.default_namespace  # None: find it
    found, first = fetch_named(env, opened, Pod, namespace, name)
    namespace = found.namespace
    _require_node(env, opened, only_node)
    from kubectl_dra.model.resource import DeviceTaintRule

    requests = [ReadRequest(ResourceClaim, namespace, keep_raw=False),
                ReadRequest(DeviceTaintRule, required=False, keep_raw=False)]
    if found.node_name:
        requests.append(ReadRequest(Node, field_selector=f"metadata.name={found.node_name}", required=False))
    inventory = read_around(opened, found, first, requests)
    claims = [c for name in found.referenced_claim_names().values()
              if name and (c := inventory.get(ResourceClaim, namespace, name)) is not None]
    slices = slice_requests(claims)  # then only the pools its claims' devices came from
    if slices:
        more = opened.source.read(slices)
        inventory.extend(more.all(ResourceSlice))
        inventory.problems += more.problems
        inventory.read_kinds |= more.read_kinds
    node = inventory.get(Node, None, found.node_name) if found.node_name else None
    options, sources = resolve(node_flags, node)
    result = explain_pod(found, inventory, options, sources)
    if not found.node_name and not found.is_done:  # why is it pending
        _scheduling(opened, found, inventory, result, scheduler_config, only_node)
    if not found.node_name and found.spec.resource_claims and not found.is_done:
        from kubectl_dra.allocation.explain import allocation_findings, explain_allocation, pod_claims
        from kubectl_dra.commands.inputs import add_reads, allocation_requests

        if result.scheduling is None:
            add_reads(opened, inventory, allocation_requests(namespace, only_node))
        pending, allocated, problems = pod_claims(found, inventory)
        for problem in problems:
            inventory.problem(problem, kind="ResourceClaim")
        result.allocation = explain_allocation(pending, inventory, allocated=allocated, only_node=only_node)
        if not result.allocation.feasible_nodes and only_node is None:
            result.allocation.proposals = _proposals(opened, pending, inventory)
        result.findings += allocation_findings(result.allocation, found.status.nominated_node_name)
    emit(env, result, output, text=lambda: pod_tree(result, Style(env.use_color)))
    ctx.exit(report_problems(env, inventory))


def _scheduling(opened, found, inventory, result, scheduler_config: Path | None, only_node: str | None) -> None:
    """Every filter of the scheduler's profile on every node, into ``result.scheduling``."""
    from kubectl_dra.commands.inputs import add_reads
    from kubectl_dra.scheduling.explain import explain_scheduling, unschedulable_finding
    from kubectl_dra.scheduling.reads import scheduling_reads

    profile = _profile(scheduler_config, found, opened)
    add_reads(opened, inventory, scheduling_reads(found))
    inventory.add(found)  # the pod as fetched first (a later list may hold an older copy)
    scheduling = explain_scheduling(found, inventory, profile)
    finding = unschedulable_finding(found, scheduling)
    if only_node is not None:
        scheduling.nodes = [n for n in scheduling.nodes if n.node == only_node]
    result.scheduling = scheduling
    if finding is not None:
        result.findings.insert(0, finding)


def _profile(path: Path | None, pod, opened):
    from kubectl_dra.errors import InputError
    from kubectl_dra.kube.snapshot import read_documents
    from kubectl_dra.scheduling.profile import ProfileError, from_config

    if path is None:
        return None
    if str(path) == "-" and getattr(opened.source, "path", None) == "-":
        raise InputError("--scheduler-config - and --snapshot - both read standard input: give one of them a file")
    documents = [d for d in read_documents(path, allow_stdin=True) if d is not None]
    if len(documents) != 1:
        raise InputError(f"{path}: expected one KubeSchedulerConfiguration document, found {len(documents)}")
    try:
        return from_config(documents[0], pod.spec.scheduler_name, str(path))
    except ProfileError as exc:
        raise InputError(str(exc)) from None


def _proposals(opened, claims, inventory) -> list:
    """Would Karpenter launch a node for it: the claims on each NodePool x instance type with the
    slices the NodeOverlay templates predict (none without NodePools or templates)."""
    from kubectl_dra.allocation.explain import explain_proposals
    from kubectl_dra.commands.inputs import read_overlay_inputs
    from kubectl_dra.model.karpenter import NodeOverlay, NodePool
    from kubectl_dra.overlays.explain import evaluate

    more, types = read_overlay_inputs(opened, None, require_overlays=False)
    if not more.all(NodePool) or not more.all(NodeOverlay):
        return []
    views = evaluate(more.all(NodeOverlay), more.all(NodePool), types).instance_types
    return explain_proposals(claims, inventory, views)


@explain.command("node", epilog=EPILOG)
@kube_options
@output_options(formats=("tree", "json", "yaml"), default="tree")
@catalog_option
@click.argument("name", shell_complete=object_names("Node"))
@click.pass_context
def node(ctx: click.Context, kube, output, catalog, feature_gate, name: str) -> None:
    """Explain a node: its devices, what is allocated on it, and what Karpenter predicted.

    \b
    The node's ResourceSlices and devices (with node-allocatable mappings),
    the claims allocated on it and their pods, what the scheduler counts on
    it including DRA against its allocatable, the NodeOverlays that matched
    its NodePool x instance type, and predicted vs actual: capacity an
    overlay promised that the node lacks, and (proposal) predicted
    ResourceSlices vs the published ones.

    \b
    Examples:
      kubectl dra explain node worker-gpu-1
      kubectl dra explain node worker-cpu-1 --snapshot examples/cluster -o json
    """
    from kubectl_dra.commands.inputs import read_overlay_inputs
    from kubectl_dra.commands.inputs import fetch_named, join_first, open_for, report_problems
    from kubectl_dra.kube.reads import ReadRequest
    from kubectl_dra.model.node import Node
    from kubectl_dra.model.pod import Pod
    from kubectl_dra.model.claim import ResourceClaim
    from kubectl_dra.model.resource import ResourceSlice
    from kubectl_dra.nodes.explain import explain_node
    from kubectl_dra.printers.nodes import node_tree
    from kubectl_dra.printers.output import emit
    from kubectl_dra.printers.style import Style

    env = ctx.obj
    env.color = output.color
    opened = open_for(env, kube)
    found, first = fetch_named(env, opened, Node, None, name)
    # every slice: a node also reaches slices by nodeSelector, allNodes and per-device selection
    inventory, types = read_overlay_inputs(opened, catalog, [
        ReadRequest(ResourceSlice), ReadRequest(ResourceClaim),
        ReadRequest(Pod, None, field_selector=f"spec.nodeName={name}")], require_overlays=False)
    join_first(inventory, found, first)
    result = explain_node(found, inventory, types, feature_gate)
    emit(env, result, output, text=lambda: node_tree(result, Style(env.use_color)))
    ctx.exit(report_problems(env, inventory))
