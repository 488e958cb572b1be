"""``verify``'s result from what was read: the agents' reports checked against the cluster now (or a
node scanned here), narrowed to the namespace and pod asked for, as one NodeEnforcementReportList."""

from __future__ import annotations

from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.registry import NodeEnforcementReportObject
from kubectl_dra.verify.crosscheck import crosscheck, parse_report
from kubectl_dra.verify.report import ClaimOnNode, NodeEnforcementReport, VerifyResult


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
