"""``verify``'s result from what was read: the agents' reports checked against the cluster now (or a
node scanned here), narrowed to the namespace and pod asked for, as one NodeEnforcementReportList;
and the decisions around it: what to read, when the pod or node asked about is not there (an error
to raise, never "no pods to check"), and the exit status the result implies."""

from __future__ import annotations

from kubectl_dra.errors import DRAError, InputError, NotFoundError
from kubectl_dra.exitcodes import ExitStatus
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.registry import NodeEnforcementReportObject
from kubectl_dra.verify.crosscheck import crosscheck, parse_report
from kubectl_dra.verify.report import ClaimOnNode, NodeEnforcementReport, VerifyResult


def scope(all_namespaces: bool, namespace: str | None, default_namespace: str | None,
          pod: str | None) -> str | None:
    """The namespace verify narrows to (None: every namespace). verify is node-oriented: every
    namespace unless -n, or a POD in the context's namespace, narrows it."""
    if all_namespaces:
        return None
    if namespace:
        return namespace
    return default_namespace if pod else None


def report_requests(nodes: tuple[str, ...], selector: str | None, namespace: str | None) -> list[ReadRequest]:
    """The reports (one node's by field selector when one is named), the pods to re-check them
    against, and the nodes (to know which have no report, and which a label selector chose)."""
    node_field = f"metadata.name={nodes[0]}" if len(nodes) == 1 else None
    return [ReadRequest(NodeEnforcementReportObject, field_selector=node_field),
            ReadRequest(Pod, namespace), ReadRequest(Node, label_selector=selector, required=False)]


def ambiguous_pod(inventory: Inventory, pod: str | None, namespace: str | None,
                  all_namespaces: bool) -> DRAError | None:
    """A POD named without -n in a snapshot (every namespace) must be in one of them."""
    if pod is None or namespace is not None or all_namespaces:
        return None
    holding = sorted({p.namespace or "" for p in inventory.all(Pod) if p.name == pod})
    if len(holding) > 1:
        return InputError(f'pod "{pod}" exists in namespaces {", ".join(holding)}: choose one with -n')
    return None


def unknown_node(inventory: Inventory, nodes: tuple[str, ...]) -> DRAError | None:
    """The first --node that the nodes read do not hold (only when they were all read: a file not
    read is "unknown", not "not found")."""
    known = {n.name for n in inventory.all(Node)}
    unsure = any(p.kind == "Node" and p.severity == "error" for p in inventory.problems)
    for name in nodes:
        if "Node" in inventory.read_kinds and name not in known and not unsure:
            return NotFoundError(f'node "{name}" not found')
    return None


def no_reports(inventory: Inventory, nodes: tuple[str, ...]) -> DRAError:
    """Why there is no report to show: none could be read, the API is not served, or none exists."""
    where = f" for {', '.join(nodes)}" if nodes else ""
    if "NodeEnforcementReport" not in inventory.read_kinds:
        if not any(p.not_served for p in inventory.problems if p.kind == "NodeEnforcementReport"):
            return NotFoundError(f"no NodeEnforcementReport could be read{where} (see the errors above)")
        return NotFoundError("this cluster has no NodeEnforcementReport API (its CRD is not installed): "
                             "dra-node-agent is not deployed (kubectl apply -k manifests/), or use "
                             "--cgroup-root on a node")
    return NotFoundError(f"no NodeEnforcementReport found{where}: is dra-node-agent deployed? "
                         "(kubectl apply -k manifests/), or use --cgroup-root on a node")


def pod_error(inventory: Inventory, pod: str | None, namespace: str | None, nodes: tuple[str, ...], *,
              all_namespaces: bool, here: bool) -> DRAError | None:
    """A POD that is ambiguous, not there, or runs on another node than --node is an error (exit 3),
    never "no pods to check". ``here``: only the scanned node's pods were read."""
    if pod is None:
        return None
    if (error := ambiguous_pod(inventory, pod, namespace, all_namespaces)) is not None:
        return error
    pods_unsure = any(p.kind == "Pod" and p.severity == "error" for p in inventory.problems)  # a file not read
    if "Pod" in inventory.read_kinds and not pods_unsure and not any(
            p.name == pod and (namespace is None or p.namespace == namespace) for p in inventory.all(Pod)):
        where = f" in namespace {namespace}" if namespace else ""
        on = f" on node {nodes[0]}" if here and nodes else ""
        return NotFoundError(f'pod "{pod}" not found{where}{on}')
    if nodes:
        elsewhere = sorted({p.node_name or "<unscheduled>" for p in inventory.all(Pod)
                            if p.name == pod and (namespace is None or p.namespace == namespace)} - set(nodes))
        if elsewhere and not any(p.name == pod and p.node_name in nodes for p in inventory.all(Pod)):
            return NotFoundError(f'pod "{pod}" runs on node {", ".join(elsewhere)}, not on {", ".join(nodes)}: '
                                 "drop --node, or name that node")
    return None


def unverified_count(reports: list[NodeEnforcementReport], pods_not_checked: dict[str, int]) -> int:
    """Pods not verified: Unknown or stale verdicts, pods the reports do not cover, and pods on nodes
    without a report."""
    return (sum(1 for r in reports for p in r.status.pods if p.stale or p.verdict == "Unknown")
            + sum(len(r.status.unreported_pods) for r in reports) + sum(pods_not_checked.values()))


def exit_status(reports: list[NodeEnforcementReport], pods_not_checked: dict[str, int],
                read_status: ExitStatus) -> ExitStatus:
    """The first that applies: 1 a trusted divergence or claim finding (stale verdicts do not count);
    4 pods not verified; else what the reads imply (4 when one failed)."""
    if any(r.trusted_divergences() or r.status.summary.claim_findings for r in reports):
        return ExitStatus.DIVERGED
    if unverified_count(reports, pods_not_checked):
        return ExitStatus.PARTIAL
    return read_status


def reports_to_show(inventory: Inventory, nodes: tuple[str, ...], *, selected: bool, namespace: str | None,
                    pod: str | None) -> tuple[list[NodeEnforcementReport], dict[str, int]]:
    """The agents' reports re-checked against the pods now (``selected``: a label selector chose the
    nodes read), and each node asked about that has no report, with how many wanted pods run there."""
    known = {n.name for n in inventory.all(Node)}
    reports = checked_reports(inventory, nodes, known if selected else None, namespace)
    return reports, pods_without_report(inventory, reports, known, nodes, namespace, pod)


def checked_reports(inventory: Inventory, nodes: tuple[str, ...], only: set[str] | None,
                    namespace: str | None) -> list[NodeEnforcementReport]:
    """The reports of ``nodes`` (every node when empty; only those in ``only`` when a label selector
    chose the nodes), each re-checked against the pods now. A report that does not parse is a
    problem of the read, never a hidden node: that node then counts as without a report."""
    reports = []
    for obj in inventory.all(NodeEnforcementReportObject):
        if nodes and obj.name not in nodes or only is not None and obj.name not in only:
            continue
        try:
            reports.append(parse_report(obj.raw))
        except Exception as exc:  # one bad report must not hide the others
            where = inventory.document_files.get(id(obj))
            inventory.problem(f"{where}: {exc}" if where else str(exc), kind="NodeEnforcementReport")
    for report in reports:
        crosscheck(report, inventory, namespace=namespace)
    return reports


def pods_without_report(inventory: Inventory, reports: list[NodeEnforcementReport], known_nodes: set[str],
                        nodes: tuple[str, ...], namespace: str | None, pod: str | None) -> dict[str, int]:
    """Each node asked about that has no report, with how many of the wanted pods run there unchecked."""
    reported = {r.metadata.name for r in reports}
    by_node = inventory.pods_by_node()
    return {n: sum(1 for p in by_node.get(n, ()) if not p.is_done and wanted(p, namespace, pod))
            for n in sorted(known_nodes) if n not in reported and (not nodes or n in nodes)}


def verify_result(reports: list[NodeEnforcementReport], inventory: Inventory, namespace: str | None,
                  pod: str | None, nodes_without_report: list[str]) -> VerifyResult:
    """The document: each report narrowed to the namespace and pod (its summary counted again)."""
    for report in reports:
        report.status.pods = [p for p in report.status.pods if wanted(p, namespace, pod)]
        report.status.unreported_pods = [key for key in report.status.unreported_pods
                                         if wanted_key(key, namespace, pod)]
        report.status.claims = [c for c in report.status.claims if wanted_claim(c, namespace, pod)]
        report.summarize()
    return VerifyResult(items=reports, nodes_without_report=sorted(nodes_without_report),
                        problems=[p.message for p in inventory.problems])


def wanted(p, namespace: str | None, pod: str | None) -> bool:
    """A pod (or a pod's verdict) of the namespace, and the pod named if one is."""
    return (namespace is None or p.namespace == namespace) and (pod is None or p.name == pod)


def wanted_key(key: str, namespace: str | None, pod: str | None) -> bool:
    ns, _, name = key.partition("/")
    return (namespace is None or ns == namespace) and (pod is None or name == pod)


def wanted_claim(claim: ClaimOnNode, namespace: str | None, pod: str | None) -> bool:
    """A claim of the namespace; with a pod named, only the claims that pod uses or holds."""
    if namespace is not None and claim.namespace != namespace:
        return False
    return pod is None or any(ref.split("/", 1)[-1] == pod for ref in (*claim.pods, *claim.prepared_for))

