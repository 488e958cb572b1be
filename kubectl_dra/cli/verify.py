"""``kubectl dra verify``: do the nodes enforce what the scheduler counted?"""

from __future__ import annotations

import click

from kubectl_dra.cli.options import check_label_selector
from kubectl_dra.flags.completion import object_names
from kubectl_dra.flags.connection import kube_options
from kubectl_dra.flags.host import cdi_dir_option, check_cgroup_root
from kubectl_dra.flags.node import node_options
from kubectl_dra.flags.output import output_options

VERIFY_EPILOG = ("Exit codes, the first that applies: 2 usage error (a bad flag value, a --cgroup-root that is no "
                 "cgroup v2 tree); 3 nothing to show (no reports, POD or node not found, POD on another node); 1 a "
                 "divergence was found (stale verdicts do not count; it outranks 4); 4 partial: some pods could not be "
                 "read, changed since the scan (stale), or run on nodes without a report; 0 every pod checked matches "
                 "(or there is none to check).")


@click.command("verify", epilog=VERIFY_EPILOG)
@kube_options
@node_options
@click.option("--node", "nodes", metavar="NODE", multiple=True, shell_complete=object_names("Node"), help="Only this node (repeatable).")
@click.option("-l", "--selector", metavar="SELECTOR", callback=check_label_selector, help="Only nodes with these labels.")
@click.option("--cgroup-root", metavar="DIR", type=click.Path(file_okay=False), callback=check_cgroup_root,
              help="Check the local node directly, without an agent (a node shell or debug pod): scan it as "
                   "dra-node-agent scan --once does, reading this cgroup v2 tree, e.g. /sys/fs/cgroup or "
                   "/host/sys/fs/cgroup.")
@click.option("--kubelet-root", metavar="DIR", type=click.Path(file_okay=False, readable=False), default="/var/lib/kubelet", show_default=True,
              help="With --cgroup-root: the kubelet's root directory, for cpu_manager_state (CPU manager policy and "
                   "exclusive CPUs) and dra_manager_state (the claims it prepared, compared with the API). Each "
                   "is optional: what is missing is skipped and said. The kubelet's PodResources API is read only "
                   "by dra-node-agent scan --once (gRPC).")
@cdi_dir_option
@output_options(formats=("table", "wide", "json", "yaml"))
@click.argument("pod", required=False, shell_complete=object_names("Pod"))
@click.pass_context
def verify(ctx: click.Context, kube, node_flags, nodes, selector, cgroup_root, kubelet_root, cdi_dirs, output,
           pod) -> None:
    """Compare what the nodes enforce with what the scheduler counted.

    \b
    Cluster-wide it reads the NodeEnforcementReports the dra-node-agent
    publishes (one list call) and re-checks each against the pods now: a pod
    that changed since the agent's scan is shown as stale, not trusted. Nodes
    without a report are listed. With --cgroup-root it scans the local node
    itself, as the agent does (its DRA state too, with --kubelet-root and
    --cdi-dir). POD narrows to one pod (in -n's namespace).

    \b
    Columns: NAMESPACE POD CONTAINER FILE EXPECTED OBSERVED CAUSE (-o wide
    adds NODE and SEVERITY), then the node's DRA claims with findings (-o
    wide: every claim).
    Causes: KubeletDRADisabled, DRAAmountMissing, WeightFormula, DriverOverride,
    RuntimeHugetlbDisabled, ResizePending, PodLevelResources, CgroupMissing,
    CgroupUnreadable, InvalidField, Unexplained (see the README).

    \b
    Examples:
      kubectl dra verify -A
      kubectl dra verify --node worker-gpu-1
      kubectl dra verify -A --snapshot examples/cluster
      kubectl dra verify --cgroup-root /sys/fs/cgroup --node "$(hostname)"
    """
    from kubectl_dra.commands.inputs import open_for
    from kubectl_dra.nodescan.node import HostPaths
    from kubectl_dra.printers.verify import print_verify
    from kubectl_dra.verify.result import verify_result

    env = ctx.obj
    env.color = output.color
    if cgroup_root and len(nodes) > 1:
        raise click.UsageError("--cgroup-root checks one node: give at most one --node")
    opened = open_for(env, kube)
    # verify is node-oriented: every namespace unless -n, or a POD in the context's namespace, narrows it
    if kube.all_namespaces:
        namespace = None
    elif kube.namespace:
        namespace = kube.namespace
    else:
        namespace = opened.default_namespace if pod else None
    if cgroup_root:
        host = HostPaths(cgroup_root=cgroup_root, kubelet_root=kubelet_root, cdi_dirs=cdi_dirs)
        reports, inventory = _scan_here(env, opened, nodes[0] if nodes else None, host, node_flags)
        missing: dict[str, int] = {}
    else:
        reports, inventory, missing = _from_reports(env, opened, nodes, selector, namespace, pod, kube)
    _check_pod(env, inventory, pod, namespace, nodes, kube, here=bool(cgroup_root))
    result = verify_result(reports, inventory, namespace, pod, list(missing))
    print_verify(env, result, output, missing)
    if output.format not in ("json", "yaml"):
        for report in reports:
            if report.status.message:  # why the node could not be checked: a reason, for stderr
                env.error(f"warning: {report.metadata.name}: {report.status.message}")
    ctx.exit(_exit_status(env, inventory, reports, missing))


def _scan_here(env, opened, node: str | None, host, node_flags: dict):
    """The node scan of ``dra-node-agent scan --once``, on this node: its report, and what was read."""
    from kubectl_dra.nodescan.node import NodeScan, choose_node

    name, name_source = choose_node(node, env.environ)
    result = NodeScan(opened.source, name, node_flags, host, name_source=name_source).run()
    for severity, problem in result.problems:
        env.error(f"{severity}: {problem}")
    return [result.report], result.inventory


def _from_reports(env, opened, nodes, selector, namespace, pod, kube):
    """The agents' reports, re-checked against the pods now, and the nodes asked about that have none."""
    from kubectl_dra.commands.inputs import report_problems
    from kubectl_dra.errors import NotFoundError
    from kubectl_dra.kube.reads import ReadRequest
    from kubectl_dra.model.node import Node
    from kubectl_dra.model.pod import Pod
    from kubectl_dra.model.registry import NodeEnforcementReportObject
    from kubectl_dra.verify.result import checked_reports, pods_without_report

    node_field = f"metadata.name={nodes[0]}" if len(nodes) == 1 else None
    requests = [ReadRequest(NodeEnforcementReportObject, field_selector=node_field),
                ReadRequest(Pod, namespace), ReadRequest(Node, label_selector=selector, required=False)]
    inventory = opened.source.read(requests)
    if pod is not None and namespace is None and not kube.all_namespaces:
        _one_namespace(env, inventory, pod)
    known_nodes = {n.name for n in inventory.all(Node)}
    for name in nodes:
        unsure = any(p.kind == "Node" and p.severity == "error" for p in inventory.problems)  # a file not read
        if "Node" in inventory.read_kinds and name not in known_nodes and not unsure:
            report_problems(env, inventory)
            raise NotFoundError(f'node "{name}" not found')
    reports = checked_reports(inventory, nodes, known_nodes if selector else None, namespace)
    missing = pods_without_report(inventory, reports, known_nodes, nodes, namespace, pod)
    if not reports:
        report_problems(env, inventory)
        where = f" for {', '.join(nodes)}" if nodes else ""
        if "NodeEnforcementReport" not in inventory.read_kinds:
            if not any(p.not_served for p in inventory.problems if p.kind == "NodeEnforcementReport"):
                raise NotFoundError(f"no NodeEnforcementReport could be read{where} (see the errors above)")
            raise NotFoundError("this cluster has no NodeEnforcementReport API (its CRD is not installed): "
                                "dra-node-agent is not deployed (kubectl apply -k manifests/), or use "
                                "--cgroup-root on a node")
        raise NotFoundError(f"no NodeEnforcementReport found{where}: is dra-node-agent deployed? "
                            "(kubectl apply -k manifests/), or use --cgroup-root on a node")
    return reports, inventory, missing


def _check_pod(env, inventory, pod: str | None, namespace: str | None, nodes, kube, *, here: bool) -> None:
    """A POD that is not there, or runs on another node than --node, is an error (exit 3), never
    "no pods to check"."""
    from kubectl_dra.commands.inputs import report_problems
    from kubectl_dra.errors import NotFoundError
    from kubectl_dra.model.pod import Pod

    if pod is None:
        return
    if namespace is None and not kube.all_namespaces:
        _one_namespace(env, inventory, pod)
    pods_unsure = any(p.kind == "Pod" and p.severity == "error" for p in inventory.problems)  # a file not read
    if "Pod" in inventory.read_kinds and not pods_unsure and not any(
            p.name == pod and (namespace is None or p.namespace == namespace) for p in inventory.all(Pod)):
        report_problems(env, inventory)
        where = f" in namespace {namespace}" if namespace else ""
        on = f" on node {nodes[0]}" if here and nodes else ""  # only that node's pods were read
        raise NotFoundError(f'pod "{pod}" not found{where}{on}')
    if nodes:
        elsewhere = sorted({p.node_name or "<unscheduled>" for p in inventory.all(Pod)
                            if p.name == pod and (namespace is None or p.namespace == namespace)} - set(nodes))
        if elsewhere and not any(p.name == pod and p.node_name in nodes for p in inventory.all(Pod)):
            report_problems(env, inventory)  # never "no pods to check": the two flags disagree
            raise NotFoundError(f'pod "{pod}" runs on node {", ".join(elsewhere)}, not on {", ".join(nodes)}: '
                                "drop --node, or name that node")


def _exit_status(env, inventory, reports, missing: dict[str, int]) -> int:
    """The first that applies: 1 a trusted divergence or claim finding; 4 pods not verified (named on
    stderr) or a read that failed; else 0."""
    from kubectl_dra.exitcodes import ExitStatus
    from kubectl_dra.commands.inputs import report_problems
    from kubectl_dra.printers.reports import unverified_pods
    from kubectl_dra.text import plural

    status = report_problems(env, inventory)
    if any(r.trusted_divergences() or r.status.summary.claim_findings for r in reports):
        return ExitStatus.DIVERGED
    unchecked = sum(1 for r in reports for p in r.status.pods if p.stale or p.verdict == "Unknown") + \
        sum(len(r.status.unreported_pods) for r in reports) + sum(missing.values())
    if unchecked:
        which = unverified_pods(reports)
        env.error(f"warning: {plural(unchecked, 'pod')} {'was' if unchecked == 1 else 'were'} not verified (unknown, stale, "
                  "or on a node without a report): the result is partial" + (f": {which}" if which else ""))
        return ExitStatus.PARTIAL
    return status


def _one_namespace(env, inventory, pod: str) -> None:
    """A POD named without -n in a snapshot (every namespace) must be in one of them."""
    from kubectl_dra.commands.inputs import report_problems
    from kubectl_dra.errors import InputError
    from kubectl_dra.model.pod import Pod

    holding = sorted({p.namespace or "" for p in inventory.all(Pod) if p.name == pod})
    if len(holding) > 1:
        report_problems(env, inventory)
        raise InputError(f'pod "{pod}" exists in namespaces {", ".join(holding)}: choose one with -n')
