"""The allocation explanation as text: per node, feasible or why not, the picks, and for each
request its candidates and the rejected devices grouped by reason."""

from __future__ import annotations

from kubectl_dra.allocation.document import Allocation
from kubectl_dra.printers.style import Style
from kubectl_dra.text import plural

SHOW_DEVICES = 3  # devices named per rejection reason before "+N more"


def _names(devices: list[str]) -> str:
    shown = ", ".join(devices[:SHOW_DEVICES])
    return shown + (f" +{len(devices) - SHOW_DEVICES} more" if len(devices) > SHOW_DEVICES else "")


def allocation_lines(allocation: Allocation | None, style: Style) -> list[str]:
    if allocation is None:
        return []
    feasible = len(allocation.feasible_nodes)
    lines = [f"{style('Allocation', 'bold')} (what the scheduler's allocator would do now: {feasible} of "
             f"{plural(allocation.nodes_checked, 'node')} can take {', '.join(allocation.claims) or 'nothing'})"]
    if allocation.extended is not None:
        lines += _extended_lines(allocation.extended)
    for node in allocation.nodes:
        if node.feasible:
            picks = ", ".join(f"{r.driver}/{r.pool}/{r.device} ({r.request})" for r in node.results) or "nothing to allocate"
            lines.append(f"  {node.node}  {style('feasible', 'green')}: would pick {picks}")
            if node.timing:
                lines.append(style(f"    search: {node.timing}", "yellow"))
            continue
        if node.undetermined:
            lines.append(f"  {node.node}  {style('cannot tell', 'yellow')}: {node.undetermined}")
        else:
            lines.append(f"  {node.node}  {style('NOT feasible', 'red')}: {node.message or ''}".rstrip())
            if node.timing:
                lines.append(style(f"    search: {node.timing}", "yellow"))
        for request in node.requests:
            lines.append(f"    {request.claim} {request.request} (wants {request.wanted}): "
                         f"{plural(len(request.candidates), 'candidate')}"
                         + (f" {_names(request.candidates)}" if request.candidates else ""))
            groups: dict[tuple[str, str], list[str]] = {}
            for rejected in request.rejected:
                groups.setdefault((rejected.reason, rejected.message), []).append(rejected.device)
            for (reason, message), devices in groups.items():
                lines.append(f"      {reason}: {_names(devices)}" + (f" — {message}" if message else ""))
    if allocation.proposals:
        lines.append("  Nodes Karpenter could launch (slices predicted by NodeOverlay templates, a proposal):")
        for proposal in allocation.proposals:
            where = f"{proposal.node_pool}/{proposal.instance_type}"
            if proposal.feasible:
                picks = ", ".join(f"{r.driver}/{r.device} ({r.request})" for r in proposal.results)
                lines.append(f"    {where}  {style('would fit', 'green')}: {picks}")
            else:
                lines.append(f"    {where}  would not fit: {proposal.message or ''}".rstrip())
    if allocation.omitted_nodes:
        lines.append(f"  ... {plural(allocation.omitted_nodes, 'more node')} that cannot take them (--node NAME, or -o json)")
    return lines


def _extended_lines(view) -> list[str]:
    """The scheduler's claim for extended resources, and the nodes that serve them without it."""
    asked = ", ".join(f"{name}: {count} (class {view.classes[name]})" for name, count in view.resources.items())
    lines = [f"  extended resources through DRA: {asked}"]
    if view.existing_claim:
        lines.append(f"    claim {view.existing_claim} from an earlier attempt: the scheduler deletes it first")
    for request in view.requests:
        users = sorted({m.container_name for m in view.mappings if m.request_name == request.name})
        lines.append(f"    request {request.name}: {request.count} x {request.device_class_name}"
                     f" (containers {', '.join(users)})")
    if view.device_plugin_nodes:
        lines.append(f"    served by the node's allocatable (a device plugin) instead on: {_names(view.device_plugin_nodes)}")
    return lines
