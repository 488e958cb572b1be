"""``kubectl dra explain claim|pod|node``: the three subcommands as click declares them (flags, help,
the usage checks the flags alone decide); each runs its ``commands/explain_*.py`` module."""

from __future__ import annotations

from pathlib import Path

import click

from kubectl_dra.flags.completion import object_names
from kubectl_dra.exitcodes import EPILOG
from kubectl_dra.flags.node import node_options
from kubectl_dra.flags.output import output_options
from kubectl_dra.flags.names import typed_name
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
@click.argument("name", required=False, shell_complete=object_names("ResourceClaim"), callback=typed_name("ResourceClaim"))
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
    if not name and not pod_name:
        raise click.UsageError("give a claim NAME, or --pod POD [CLAIM-NAME]")
    # start-up: help
    from kubectl_dra.commands.explain_claim import run

    ctx.exit(run(ctx.obj, kube=kube, output=output, pod_name=pod_name, only_node=only_node, name=name))


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
@catalog_option
@click.option("--karpenter-ignore-dra-requests", "ignore_dra_requests", type=click.Choice(["true", "false"]),
              callback=lambda _ctx, _param, value: None if value is None else value == "true",
              help="Karpenter's --ignore-dra-requests (IGNORE_DRA_REQUESTS): true skips pods with ResourceClaims; "
                   "false simulates them against its cloud provider's device templates, which kubectl-dra "
                   "cannot read [default: assumed true, Karpenter v1.14.1's default].")
@click.argument("name", shell_complete=object_names("Pod"), callback=typed_name("Pod"))
@click.pass_context
def pod(ctx: click.Context, kube, output, node_flags, only_node: str | None, scheduler_config: Path | None,
        catalog: Path | None, feature_gate: bool | None, ignore_dra_requests: bool | None, name: str) -> None:
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
    When no node can take it and the cluster has Karpenter NodePools,
    "Karpenter" says what Karpenter would launch: NodePool by NodePool
    (weight order), the instance types the NodeClaim would allow (after
    NodeOverlays: --catalog, --feature-gate), the requests, and the
    offering the provider picks by its own price.

    \b
    Examples:
      kubectl dra explain pod embedder -n ml
      kubectl dra explain pod risk-engine -n default --cgroup-driver cgroupfs -o json
      kubectl dra explain pod embedder -n ml --snapshot examples/cluster --memory-qos legacy
    """
    # start-up: help
    from kubectl_dra.commands.explain_pod import run

    ctx.exit(run(ctx.obj, kube=kube, output=output, node_flags=node_flags, only_node=only_node,
                 scheduler_config=scheduler_config, catalog=catalog, feature_gate=feature_gate,
                 ignore_dra_requests=ignore_dra_requests, name=name))


@explain.command("node", epilog=EPILOG)
@kube_options
@output_options(formats=("tree", "json", "yaml"), default="tree")
@catalog_option
@click.argument("name", shell_complete=object_names("Node"), callback=typed_name("Node"))
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
    # start-up: help
    from kubectl_dra.commands.explain_node import run

    ctx.exit(run(ctx.obj, kube=kube, output=output, catalog=catalog, feature_gate=feature_gate, name=name))
