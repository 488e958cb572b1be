"""``dra-node-agent scan --once``: one scan of this node from a node shell, printed as ``kubectl dra
verify --cgroup-root`` prints it, with kubectl dra's exit codes. Apart from the service (service.py),
so that a scan from a shell loads no publisher, metrics library or HTTP server."""

from __future__ import annotations

from kubectl_dra.env import Environment
from kubectl_dra.errors import DRAError
from kubectl_dra.kube.sources import open_source
from kubectl_dra.nodescan.node import HostPaths, NodeScan, choose_node
from kubectl_dra.printers.options import OutputOptions
from kubectl_dra.printers.problems import problem_lines
from kubectl_dra.printers.reports import unverified_pods
from kubectl_dra.printers.verify import print_scan
from kubectl_dra.printers.versions import version_lines
from kubectl_dra.text import plural
from kubectl_dra.verify.report import NodeEnforcementReport
from kubectl_dra.versions import cluster_versions, kubelet_notes
from node_agent.podresources import list_pod_resources


def exit_code(report: NodeEnforcementReport) -> int:
    """kubectl dra's table: 0 everything checked held (or nothing to check); 1 a divergence or a claim
    finding (error or warning), which outranks 4; 3 a root that is no cgroup v2 tree (nothing could
    be checked; the flag's check says so first); 4 partial: pods whose cgroups could not be read."""
    if report.status.summary.diverged or report.status.summary.claim_findings:
        return 1
    if report.status.cgroup_version != "v2":
        return 3
    return 4 if report.status.summary.unknown else 0


def run_scan_once(kube, node_flags: dict, node: str | None, host: HostPaths, output: OutputOptions,
                  env: Environment | None = None) -> int:
    """``dra-node-agent scan --once``: the node scan, its report printed as ``kubectl dra verify
    --cgroup-root`` prints it, and kubectl dra's exit code."""
    env = env or Environment()
    env.color = output.color
    name, source = choose_node(node, env.environ)
    scanner = None
    try:
        opened = open_source(kube)
        for notice in opened.notices:
            env.error(notice)
        scanner = NodeScan(opened.source, name, node_flags, host, name_source=source,
                           list_pod_resources=list_pod_resources)
        result = scanner.run()
    except DRAError as exc:
        for line in problem_lines(scanner.inventory) if scanner is not None and scanner.inventory else ():
            env.error(line)
        env.error(f"error: {exc}")
        return 3  # nothing shown: the node is no Node, the API server cannot be read
    report, inventory = result.report, result.inventory
    for severity, problem in result.problems:
        env.error(f"{severity}: {problem}")
    print_scan(env, report, output)
    if output.format not in ("json", "yaml"):  # the kubelet's release, said as verify says it
        kubelets = [n.status.node_info.kubelet_version for n in inventory.of_kind("Node") if n.name == name]
        for line in version_lines(kubelet_notes(cluster_versions(*opened.source.server_version(), kubelets))):
            env.error(line)
    if report.status.message:
        env.error(f"error: {report.status.message}")
    for line in problem_lines(inventory):
        env.error(line)
    code = exit_code(report)
    if code == 4:
        env.error(f"warning: {plural(report.status.summary.unknown, 'pod')} not verified: the result is partial: "
                  f"{unverified_pods([report])}")
    return code
