"""``kubectl dra overlays``: which NodeOverlays change which NodePool x instance type, and how."""

from __future__ import annotations

import click

from kubectl_dra.flags.catalog import catalog_option
from kubectl_dra.flags.completion import object_names
from kubectl_dra.exitcodes import EPILOG
from kubectl_dra.flags.output import output_options
from kubectl_dra.flags.connection import kube_options


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
    # start-up: help
    from kubectl_dra.commands.overlays import run

    ctx.exit(run(ctx.obj, kube=kube, output=output, catalog=catalog, feature_gate=feature_gate, nodepools=nodepools,
                 instance_types=instance_types, overlay_names=overlay_names))
