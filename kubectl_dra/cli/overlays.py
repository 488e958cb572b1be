"""``kubectl dra overlays``: which NodeOverlays change which NodePool x instance type, and how."""

from __future__ import annotations

from pathlib import Path

import click

from kubectl_dra.flags.catalog import catalog_option
from kubectl_dra.flags.completion import object_names
from kubectl_dra.exitcodes import EPILOG
from kubectl_dra.flags.output import output_options
from kubectl_dra.flags.connection import kube_options


def _require_names(env, inventory, flags) -> None:
    """Each name given to a filter flag must exist: an unknown one would filter everything away
    and read as "no rows" (not found: exit 3, naming what does exist)."""
    from kubectl_dra.commands.inputs import report_problems
    from kubectl_dra.errors import NotFoundError

    for what, flag, given, known in flags:
        missing = sorted(set(given) - known)
        if missing:
            report_problems(env, inventory)
            names = ", ".join(sorted(known)) or "none"
            quoted = ", ".join(f'"{m}"' for m in missing)
            raise NotFoundError(f"{flag}: {what} {quoted} not found "
                                f"(there are: {names})")


@click.command("overlays", epilog=EPILOG)
@kube_options
@output_options(formats=("table", "wide", "json", "yaml"))
@catalog_option
@click.option("--nodepool", "nodepools", multiple=True, metavar="NAME", shell_complete=object_names("NodePool"), help="Only this NodePool (repeatable).")
@click.option("--instance-type", "instance_types", multiple=True, metavar="NAME", help="Only this instance type.")
@click.option("--overlay", "overlay_names", multiple=True, metavar="NAME", shell_complete=object_names("NodeOverlay"),
              help="Only rows an overlay affects, and only that overlay in the summary.")
@click.pass_context
def overlays(ctx: click.Context, kube, output, catalog, feature_gate, nodepools, instance_types,
             overlay_names) -> None:
    """Explain Karpenter NodeOverlays: prices and capacity with their provenance.

    \b
    Re-evaluates the overlays exactly as Karpenter does (order by weight then
    name, per-NodePool matching, per-offering price with no stacking,
    per-key capacity, atomic rejection on conflict) and shows, for every
    NodePool x instance type x offering, the price before and after and the
    overlay that set it, the capacity keys and who set them, and a summary of
    every overlay: status, weight, matches, the peer it conflicts with (which
    Karpenter's status never names) and who shadows it. Predicted
    ResourceSlices from the proposed dynamicResources extension are marked
    "proposal" (-o json).

    \b
    Examples:
      kubectl dra overlays --snapshot examples/cluster
      kubectl dra overlays --nodepool gpu --overlay gpu-savings-plan
      kubectl dra overlays --catalog examples/cluster/karpenter/instance-types.yaml -o json
    """
    from kubectl_dra.commands.inputs import open_for, read_overlay_inputs, report_problems
    from kubectl_dra.model.karpenter import NodeOverlay, NodePool
    from kubectl_dra.overlays.explain import evaluate
    from kubectl_dra.printers.output import emit
    from kubectl_dra.printers.overlays import filter_result, overlay_tables
    from kubectl_dra.printers.style import Style

    env = ctx.obj
    env.color = output.color
    opened = open_for(env, kube)
    inventory, types = read_overlay_inputs(opened, catalog)
    _require_names(env, inventory, [("NodePool", "--nodepool", nodepools, {p.name for p in inventory.all(NodePool)}),
                                    ("NodeOverlay", "--overlay", overlay_names,
                                     {o.name for o in inventory.all(NodeOverlay)}),
                                    ("instance type", "--instance-type", instance_types, {t.name for t in types})])
    result = evaluate(inventory.all(NodeOverlay), inventory.all(NodePool), types, gate_enabled=feature_gate)
    result.problems = [p.message for p in inventory.problems]
    result = filter_result(result, set(nodepools), set(instance_types), set(overlay_names))
    emit(env, result, output, text=lambda: overlay_tables(result, wide=output.wide, no_headers=output.no_headers,
                                                          style=Style(env.use_color)))
    ctx.exit(report_problems(env, inventory))
