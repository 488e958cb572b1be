"""``explain pod``'s "Karpenter" section: what Karpenter would launch for a pod no node can take."""

from __future__ import annotations

from kubectl_dra.overlays.document import KarpenterLaunch
from kubectl_dra.printers.style import Style


def _price(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


def launch_lines(launch: KarpenterLaunch | None, style: Style) -> list[str]:
    if launch is None:
        return []
    if not launch.node_pools:  # nothing to go through: the finding KarpenterLaunchesNothing says it all
        return [] if launch.known else [f"{style('Karpenter', 'bold')} {launch.message}"]
    lines = [f"{style('Karpenter', 'bold')} (what it would launch; NodePools in its order: weight, then name)",
             f"  {launch.message}"]
    for pool in launch.node_pools:
        mark = "launches" if pool.name == launch.node_pool else ("cannot" if pool.refused else "not reached")
        lines.append(f"  NodePool {pool.name} (weight {pool.weight or 0})  {mark}" +
                     (f": {pool.refused}" if pool.refused else ""))
        if pool.requests and not pool.refused:
            lines.append("    requests   " + ", ".join(f"{k} {v}" for k, v in pool.requests.items()))
        for kept in pool.instance_types:
            set_by = f" (overlay {kept.overlay})" if kept.overlay else ""
            lines.append(f"    allows     {kept.name}  from {_price(kept.price)}{set_by}")
        for name, overlays in pool.capacity_from_overlays.items():
            lines.append(f"    capacity   {name} from overlay {', '.join(overlays)}")
        for rejected in pool.rejected:
            lines.append(style(f"    rejects    {rejected.name}: {rejected.reason}", "dim"))
        for pick in pool.provider_pick:
            lines.append(f"    provider   {pick.instance_type} {pick.zone} {pick.capacity_type} at "
                         f"{_price(pick.base_price)} (Karpenter counts {_price(pick.price)})")
    lines += [style(f"  assumed: {text}", "dim") for text in launch.assumptions]
    return lines
