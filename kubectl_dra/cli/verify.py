"""``kubectl dra verify``: do the nodes enforce what the scheduler counted?"""

from __future__ import annotations

import click

from kubectl_dra.cli.nodeflags import node_options
from kubectl_dra.cli.options import kube_options

VERIFY_EPILOG = ("Exit codes: 0 every pod matches; 1 a divergence was found (stale verdicts do not count); "
                 "2 usage error; 3 error (no reports, unreadable input); 4 partial result.")


@click.command("verify", epilog=VERIFY_EPILOG)
@kube_options
@node_options
@click.option("--node", "nodes", metavar="NODE", multiple=True, help="Only this node (repeatable).")
@click.option("-l", "--selector", metavar="SELECTOR", help="Only nodes with these labels.")
@click.option("--cgroup-root", metavar="DIR", type=click.Path(),
              help="Check the local node directly, without an agent (a node shell or debug pod): read this "
                   "cgroup v2 tree, e.g. /sys/fs/cgroup or /host/sys/fs/cgroup.")
@click.option("-o", "--output", "output_format", type=click.Choice(["table", "wide", "json", "yaml"]),
              default="table", show_default=True, help="Output format.")
@click.option("--no-headers", is_flag=True, help="Print the table without the header line.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True)
@click.argument("pod", required=False)
@click.pass_context
def verify(ctx: click.Context, kube, node_flags, nodes, selector, cgroup_root, output_format, no_headers, color,
           pod) -> None:
    """Compare what the nodes enforce with what the scheduler counted.

    \b
    Cluster-wide it reads the NodeEnforcementReports the dra-node-agent
    publishes (one list call) and re-checks each against the pods now: a pod
    that changed since the agent's scan is shown as stale, not trusted. Nodes
    without a report are listed. With --cgroup-root it predicts and reads the
    local node itself. POD narrows to one pod (in -n's namespace).

    \b
    Columns: NODE NAMESPACE POD CONTAINER FILE EXPECTED OBSERVED CAUSE.
    Causes: KubeletDRADisabled, DRAAmountMissing, WeightFormula, DriverOverride,
    ResizePending, PodLevelResources, CgroupMissing, CgroupUnreadable,
    Unexplained (see the README).

    \b
    Examples:
      kubectl dra verify -A
      kubectl dra verify --node worker-gpu-1
      kubectl dra verify -A --snapshot examples/cluster
      kubectl dra verify --cgroup-root /sys/fs/cgroup --node "$(hostname)"
    """
    from kubectl_dra.cli.runtime import open_source, report_problems
    from kubectl_dra.errors import NotFoundError
    from kubectl_dra.kube.reads import ReadRequest
    from kubectl_dra.model.node import Node
    from kubectl_dra.model.pod import Pod
    from kubectl_dra.model.registry import NodeEnforcementReportObject
    from kubectl_dra.printers.documents import to_json, to_yaml
    from kubectl_dra.printers.reports import divergence_table, summary_line
    from kubectl_dra.printers.style import Style
    from kubectl_dra.verify.crosscheck import crosscheck, parse_report

    env = ctx.obj
    env.color = color
    opened = open_source(kube)
    # verify is node-oriented: every namespace unless -n, or a POD in the context's namespace, narrows it
    if kube.all_namespaces:
        namespace = None
    elif kube.namespace:
        namespace = kube.namespace
    else:
        namespace = opened.default_namespace if pod else None
    if cgroup_root:
        reports, inventory = _local(opened, nodes, cgroup_root, node_flags)
        missing: list[str] = []
    else:
        node_field = f"metadata.name={nodes[0]}" if len(nodes) == 1 else None
        requests = [ReadRequest(NodeEnforcementReportObject, field_selector=node_field),
                    ReadRequest(Pod, namespace), ReadRequest(Node, label_selector=selector, required=False)]
        inventory = opened.source.read(requests)
        known_nodes = {n.name for n in inventory.all(Node)}
        reports = []
        for obj in inventory.all(NodeEnforcementReportObject):
            if nodes and obj.name not in nodes or selector and obj.name not in known_nodes:
                continue
            try:
                reports.append(parse_report(obj.raw))
            except Exception as exc:  # one bad report must not hide the others
                inventory.problem(str(exc), kind="NodeEnforcementReport")
        for report in reports:
            crosscheck(report, inventory, namespace=namespace)
        reported = {r.metadata.name for r in reports}
        missing = sorted(n for n in known_nodes if n not in reported and (not nodes or n in nodes))
        if not reports:
            report_problems(env, inventory)
            where = f" for {', '.join(nodes)}" if nodes else ""
            raise NotFoundError(f"no NodeEnforcementReport found{where}: is dra-node-agent deployed? "
                                "(kubectl apply -k manifests/), or use --cgroup-root on a node")
    for report in reports:
        report.status.pods = [p for p in report.status.pods
                              if (namespace is None or p.namespace == namespace) and (pod is None or p.name == pod)]
        report.summarize()
    if output_format in ("json", "yaml"):
        document = reports[0] if len(reports) == 1 and not missing else {
            "apiVersion": "v1", "kind": "List",
            "items": [r.model_dump(mode="json", by_alias=True) for r in reports],
            "nodesWithoutReport": missing}
        env.write(to_json(document) if output_format == "json" else to_yaml(document))
    else:
        env.write(divergence_table(reports, no_headers=no_headers, wide=output_format == "wide",
                                   style=Style(env.use_color)))
        env.write(summary_line(reports) + "\n")
        for report in reports:
            if report.status.message:
                env.write(f"{report.metadata.name}: {report.status.message}\n")
            if report.status.unreported_pods:
                env.write(f"{report.metadata.name}: not in the report (created after its scan): "
                          f"{', '.join(report.status.unreported_pods)}\n")
        if missing:
            env.write(f"Nodes without a report: {', '.join(missing)}\n")
    status = report_problems(env, inventory)
    if any(r.trusted_divergences() for r in reports):
        ctx.exit(1)
    if any(r.status.cgroup_version != "v2" for r in reports) and cgroup_root:
        ctx.exit(3)
    ctx.exit(status)


def _local(opened, nodes, cgroup_root: str, node_flags: dict):
    """Scan this node's cgroup tree directly, as the agent would."""
    import os
    import socket

    from node_agent.cgroupfs import CgroupFS
    from node_agent.scan import scan
    from node_agent.service import node_requests

    node = nodes[0] if nodes else os.environ.get("NODE_NAME") or socket.gethostname()
    inventory = opened.source.read(node_requests(node))
    return [scan(node, inventory, CgroupFS(cgroup_root), node_flags)], inventory
