"""``kubectl dra verify``: do the nodes enforce what the scheduler counted?"""

from __future__ import annotations

import click

from kubectl_dra.flags.completion import object_names
from kubectl_dra.flags.node import node_options
from kubectl_dra.cli.options import check_label_selector
from kubectl_dra.flags.connection import kube_options
from kubectl_dra.text import plural

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
@click.option("--cgroup-root", metavar="DIR", type=click.Path(file_okay=False),
              help="Check the local node directly, without an agent (a node shell or debug pod): read this "
                   "cgroup v2 tree, e.g. /sys/fs/cgroup or /host/sys/fs/cgroup.")
@click.option("--kubelet-root", metavar="DIR", type=click.Path(file_okay=False, readable=False), default="/var/lib/kubelet", show_default=True,
              help="With --cgroup-root: the kubelet's root directory, for cpu_manager_state (CPU manager policy and "
                   "exclusive CPUs); a missing file is fine.")
@click.option("-o", "--output", "output_format", type=click.Choice(["table", "wide", "json", "yaml"]),
              default="table", show_default=True, help="Output format.")
@click.option("--no-headers", is_flag=True, help="Print the table without the header line.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True)
@click.argument("pod", required=False, shell_complete=object_names("Pod"))
@click.pass_context
def verify(ctx: click.Context, kube, node_flags, nodes, selector, cgroup_root, kubelet_root, output_format, no_headers,
           color, pod) -> None:
    """Compare what the nodes enforce with what the scheduler counted.

    \b
    Cluster-wide it reads the NodeEnforcementReports the dra-node-agent
    publishes (one list call) and re-checks each against the pods now: a pod
    that changed since the agent's scan is shown as stale, not trusted. Nodes
    without a report are listed. With --cgroup-root it predicts and reads the
    local node itself. POD narrows to one pod (in -n's namespace).

    \b
    Columns: NAMESPACE POD CONTAINER FILE EXPECTED OBSERVED CAUSE (-o wide
    adds NODE and SEVERITY).
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
    from kubectl_dra.cli.runtime import open_for, report_problems
    from kubectl_dra.errors import NotFoundError
    from kubectl_dra.kube.reads import ReadRequest
    from kubectl_dra.model.node import Node
    from kubectl_dra.model.pod import Pod
    from kubectl_dra.model.registry import NodeEnforcementReportObject
    from kubectl_dra.printers.documents import to_json, to_yaml
    from kubectl_dra.cli.exitcodes import ExitStatus
    from kubectl_dra.printers.reports import claims_table, divergence_table, options_lines, summary_line, unverified_pods
    from kubectl_dra.printers.style import Style
    from kubectl_dra.verify.crosscheck import crosscheck, parse_report
    from kubectl_dra.verify.report import VerifyResult

    env = ctx.obj
    env.color = color
    opened = open_for(env, kube)
    # verify is node-oriented: every namespace unless -n, or a POD in the context's namespace, narrows it
    if kube.all_namespaces:
        namespace = None
    elif kube.namespace:
        namespace = kube.namespace
    else:
        namespace = opened.default_namespace if pod else None
    if cgroup_root:
        if len(nodes) > 1:
            raise click.UsageError("--cgroup-root checks one node: give at most one --node")
        _check_cgroup_root(cgroup_root)
        reports, inventory = _local(opened, nodes, cgroup_root, kubelet_root, node_flags, env)
        missing: dict[str, int] = {}
    else:
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
        reports = []
        for obj in inventory.all(NodeEnforcementReportObject):
            if nodes and obj.name not in nodes or selector and obj.name not in known_nodes:
                continue
            try:
                reports.append(parse_report(obj.raw))
            except Exception as exc:  # one bad report must not hide the others
                where = inventory.document_files.get(id(obj))
                inventory.problem(f"{where}: {exc}" if where else str(exc), kind="NodeEnforcementReport")
        for report in reports:
            crosscheck(report, inventory, namespace=namespace)
        reported = {r.metadata.name for r in reports}
        pods_by_node = inventory.pods_by_node()
        missing = {n: sum(1 for p in pods_by_node.get(n, ()) if not p.is_done and _wanted(p, namespace, pod))
                   for n in sorted(known_nodes) if n not in reported and (not nodes or n in nodes)}
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
    if pod is not None and namespace is None and not kube.all_namespaces:
        _one_namespace(env, inventory, pod)
    pods_unsure = any(p.kind == "Pod" and p.severity == "error" for p in inventory.problems)  # a file not read
    if pod is not None and "Pod" in inventory.read_kinds and not pods_unsure and not any(
            p.name == pod and (namespace is None or p.namespace == namespace) for p in inventory.all(Pod)):
        report_problems(env, inventory)
        where = f" in namespace {namespace}" if namespace else ""
        on = f" on node {nodes[0]}" if cgroup_root and nodes else ""  # only that node's pods were read
        raise NotFoundError(f'pod "{pod}" not found{where}{on}')
    if pod is not None and nodes:
        elsewhere = sorted({p.node_name or "<unscheduled>" for p in inventory.all(Pod)
                            if p.name == pod and (namespace is None or p.namespace == namespace)} - set(nodes))
        if elsewhere and not any(p.name == pod and p.node_name in nodes for p in inventory.all(Pod)):
            report_problems(env, inventory)  # never "no pods to check": the two flags disagree
            raise NotFoundError(f'pod "{pod}" runs on node {", ".join(elsewhere)}, not on {", ".join(nodes)}: '
                                "drop --node, or name that node")
    for report in reports:
        report.status.pods = [p for p in report.status.pods if _wanted(p, namespace, pod)]
        report.status.unreported_pods = [key for key in report.status.unreported_pods
                                         if _wanted_key(key, namespace, pod)]
        report.status.claims = [c for c in report.status.claims if _wanted_claim(c, namespace, pod)]
        report.summarize()
    if output_format in ("json", "yaml"):
        document = VerifyResult(items=reports, nodes_without_report=sorted(missing),
                                problems=[p.message for p in inventory.problems])
        env.write(to_json(document) if output_format == "json" else to_yaml(document), encoded=True)
    else:
        env.write(divergence_table(reports, no_headers=no_headers, wide=output_format == "wide",
                                   style=Style(env.use_color)))
        claims = claims_table(reports, no_headers=no_headers, wide=output_format == "wide",
                              style=Style(env.use_color), only_findings=output_format != "wide")
        if claims:
            env.write(("\n" if any(p.divergences for r in reports for p in r.status.pods) else "") + claims)
        say = env.error if no_headers else env.write  # --no-headers output is for pipes: prose to stderr
        say(summary_line(reports) + "\n")
        for report in reports:
            if report.status.message:  # why the node could not be checked: a reason, for stderr
                env.error(f"warning: {report.metadata.name}: {report.status.message}")
            if report.status.unreported_pods:
                say(f"{report.metadata.name}: not in the report (created after its scan): "
                    f"{', '.join(report.status.unreported_pods)}\n")
        if missing:
            say("Nodes without a report: " + ", ".join(
                f"{n} ({plural(count, 'pod')} not checked)" if count else n
                for n, count in missing.items()) + "\n")
        if output_format == "wide" or len(reports) == 1:
            for line in options_lines(reports):
                say(line + "\n")
    status = report_problems(env, inventory)
    if any(r.trusted_divergences() or r.status.summary.claim_findings for r in reports):
        ctx.exit(ExitStatus.DIVERGED)
    unchecked = sum(1 for r in reports for p in r.status.pods if p.stale or p.verdict == "Unknown") + \
        sum(len(r.status.unreported_pods) for r in reports) + sum(missing.values())
    if unchecked:
        which = unverified_pods(reports)
        env.error(f"warning: {plural(unchecked, 'pod')} {'was' if unchecked == 1 else 'were'} not verified (unknown, stale, "
                  "or on a node without a report): the result is partial" + (f": {which}" if which else ""))
        ctx.exit(ExitStatus.PARTIAL)
    ctx.exit(status)


def _one_namespace(env, inventory, pod: str) -> None:
    """A POD named without -n in a snapshot (every namespace) must be in one of them."""
    from kubectl_dra.cli.runtime import report_problems
    from kubectl_dra.errors import InputError
    from kubectl_dra.model.pod import Pod

    holding = sorted({p.namespace or "" for p in inventory.all(Pod) if p.name == pod})
    if len(holding) > 1:
        report_problems(env, inventory)
        raise InputError(f'pod "{pod}" exists in namespaces {", ".join(holding)}: choose one with -n')


def _wanted_claim(claim, namespace: str | None, pod: str | None) -> bool:
    """A claim of the namespace; with a pod named, only the claims that pod uses or holds."""
    if namespace is not None and claim.namespace != namespace:
        return False
    return pod is None or any(ref.split("/", 1)[-1] == pod for ref in (*claim.pods, *claim.prepared_for))


def _wanted(p, namespace: str | None, pod: str | None) -> bool:
    return (namespace is None or p.namespace == namespace) and (pod is None or p.name == pod)


def _wanted_key(key: str, namespace: str | None, pod: str | None) -> bool:
    ns, _, name = key.partition("/")
    return (namespace is None or ns == namespace) and (pod is None or name == pod)


def _check_cgroup_root(cgroup_root: str) -> None:
    """A root that is no cgroup v2 tree is a bad --cgroup-root (exit 2), said before anything is
    read, in the agent's words (``dra-node-agent scan`` checks the same way)."""
    from node_agent.cgroupfs import CgroupFS

    unusable = CgroupFS(cgroup_root).unusable()
    if unusable:
        raise click.BadParameter(unusable[1], param_hint="'--cgroup-root'")


def _local(opened, nodes, cgroup_root: str, kubelet_root: str, node_flags: dict, env):
    """Scan this node's cgroup tree directly, as the agent would."""
    from node_agent.cgroupfs import CgroupFS
    from node_agent.kubeletstate import read_kubelet_state
    from node_agent.scan import scan
    from node_agent.service import check_node, choose_node, node_requests

    node, source = choose_node(nodes[0] if nodes else None, env.environ)
    inventory = opened.source.read(node_requests(node))
    check_node(inventory, node, source, opened.source.description)
    kubelet = read_kubelet_state(kubelet_root)
    for problem in kubelet.problems:
        env.error(f"warning: {problem}")
    return [scan(node, inventory, CgroupFS(cgroup_root), node_flags, kubelet=kubelet)], inventory
