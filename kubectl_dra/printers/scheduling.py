"""The scheduling explanation as text: the scheduler's message, then node by node whether the pod
fits and why not in the scheduler's words, with the numbers behind each reason."""

from __future__ import annotations

from kubectl_dra.printers.style import Style
from kubectl_dra.scheduling.document import Evidence, NodeScheduling, Scheduling

SHOW_NODES = 20  # nodes listed before "+N more" (every node is in -o json)


def _numbers(e: Evidence) -> str:
    if e.resource is None:
        return e.detail or ""
    asked = e.requested or "?"
    parts = []
    if e.dra and e.dra not in ("0", "0m"):
        parts.append(f"DRA {e.dra}")
    if e.overhead:
        parts.append(f"overhead {e.overhead}")
    asked += f" ({', '.join(parts)})" if parts else ""
    return f"pod requests {asked}; node allocatable {e.allocatable or '?'}, already requested {e.used or '0'}"


def _node_lines(node: NodeScheduling, style: Style) -> list[str]:
    if node.fits:
        return [f"  {node.node}  {style('fits', 'green')}"]
    if node.fits is None:
        why = "; ".join(f"{u.plugin}: {u.why}" for u in node.undetermined) or "undetermined"
        return [f"  {node.node}  {style('cannot tell', 'yellow')}: {why}"]
    lines = [f"  {node.node}  {style('does not fit', 'red')} ({node.plugin}): {', '.join(node.reasons)}"]
    for e in node.evidence:
        if node.plugin == "DynamicResources" and e.resource is None:
            continue  # the devices: under Allocation below
        text = _numbers(e)
        if text:
            lines.append(f"    {e.reason}: {text}" if e.resource else f"    {text}")
    for more in node.also:
        lines.append(style(f"    also ({more.plugin}): {', '.join(more.reasons)}", "dim"))
    return lines


def scheduling_lines(scheduling: Scheduling | None, style: Style) -> list[str]:
    if scheduling is None:
        return []
    profile = "default profile" if scheduling.profile.startswith("the default profile") else scheduling.profile
    lines = [f"{style('Scheduling', 'bold')} (every kube-scheduler {scheduling.release} filter, {profile}; preemption "
             "not evaluated)"]
    if scheduling.message:
        lines.append(f"  scheduler: {style(scheduling.message, 'red')}")
    elif scheduling.error:
        lines.append(f"  scheduler: {style('fails with an error: ' + scheduling.error, 'red')}")
    elif not scheduling.message_known and any(u.plugin in ("release", "DynamicResources") and
                                              u.why.startswith(("kube-scheduler 1.", "the API server runs"))
                                              for u in scheduling.not_evaluated):
        lines.append("  scheduler: " + style(f"message not known: kube-scheduler {scheduling.release} may write it "
                                             "otherwise (below)", "yellow"))
    elif not scheduling.message_known:
        lines.append("  scheduler: " + style("message not known: some nodes cannot be decided (below)", "yellow"))
    else:
        lines.append(f"  scheduler: {style('fits', 'green')} on {', '.join(scheduling.feasible_nodes[:5])}"
                     + (f" +{len(scheduling.feasible_nodes) - 5} more" if len(scheduling.feasible_nodes) > 5 else ""))
    if scheduling.possible_error:
        lines.append("  scheduler: " + style(f"may fail with an error instead: {scheduling.possible_error}", "yellow"))
    for node, error in scheduling.bind_errors.items():
        lines.append("  scheduler: " + style(f"binding fails on {node} (after every filter passed): {error}", "red"))
    if scheduling.recorded and scheduling.recorded.split(" preemption:")[0] != scheduling.message:
        lines.append(style(f"  last written on the pod: {scheduling.recorded}", "dim"))
    if scheduling.nominated_node:
        lines.append(f"  nominated node: {scheduling.nominated_node} (the scheduler tries it first)")
    for waiting in scheduling.waiting:
        lines.append(f"  waiting ({waiting.plugin}): {waiting.why}")
    shown = [n for n in scheduling.nodes if n.fits is not True] + [n for n in scheduling.nodes if n.fits]
    groups: dict[tuple, list[NodeScheduling]] = {}  # nodes refused alike, with nothing more to show, on one line
    for node in shown[:SHOW_NODES]:
        lines_of = _node_lines(node, style)
        key = (node.plugin, tuple(node.reasons)) if node.fits is False and len(lines_of) == 1 else (node.node,)
        groups.setdefault(key, []).append(node)
    for key, nodes in groups.items():
        if len(nodes) == 1 or len(key) == 1:
            for node in nodes:
                lines += _node_lines(node, style)
            continue
        lines.append(f"  {', '.join(n.node for n in nodes)}  {style('do not fit', 'red')} ({key[0]}): "
                     f"{', '.join(key[1])}")
    if len(shown) > SHOW_NODES:
        lines.append(f"  ... {len(shown) - SHOW_NODES} more nodes (-o json)")
    for item in scheduling.not_evaluated:
        if item.plugin != "DefaultPreemption":
            lines.append(style(f"  not evaluated ({item.plugin}): {item.why}", "dim"))
    if scheduling.next_step:
        lines.append(f"  Next: {scheduling.next_step}")
    return lines
