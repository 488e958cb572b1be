"""``kubectl dra overlays``: which NodeOverlays change which NodePool x instance type, and how."""

from __future__ import annotations

from pathlib import Path

import click

from kubectl_dra.flags.completion import object_names
from kubectl_dra.cli.exitcodes import EPILOG
from kubectl_dra.flags.output import output_options
from kubectl_dra.flags.connection import kube_options


GATE = {"on": True, "off": False, "unknown": None}


def catalog_option(command):
    command = click.option("--catalog", metavar="FILE", type=click.Path(path_type=Path, allow_dash=True),
                           help="InstanceTypeCatalog (YAML/JSON; see the README). Default: a catalog in the "
                                "snapshot, else instance types inferred from NodeClaims and Nodes (prices unknown).")(
        command)
    command = click.option("--feature-gate", type=click.Choice(["on", "off", "unknown"]), default="unknown",
                           show_default=True, callback=lambda _ctx, _param, value: GATE[value], help="Karpenter's NodeOverlay feature gate (off by default in "
                                                   "Karpenter); unknown evaluates as on.")(command)
    return command


def read_overlay_inputs(opened, catalog: Path | None, extra_requests=(), *, require_overlays: bool = True):
    """Overlays, NodePools, NodeClaims, Nodes (+ extra kinds), and the instance types to evaluate.

    Without Karpenter, ``overlays`` has nothing to say (an error); ``explain node`` goes on without."""
    from kubectl_dra.errors import InputError
    from kubectl_dra.kube.reads import ReadRequest
    from kubectl_dra.kube.snapshot import read_documents
    from kubectl_dra.model.karpenter import NodeClaim, NodeOverlay, NodePool
    from kubectl_dra.model.node import Node
    from kubectl_dra.overlays.catalog import from_catalog, infer_from_cluster

    inventory = opened.source.read([ReadRequest(NodeOverlay, required=require_overlays),
                                    ReadRequest(NodePool, required=require_overlays),
                                    ReadRequest(NodeClaim, required=False), ReadRequest(Node, required=False),
                                    *extra_requests])
    if require_overlays and "NodeOverlay" not in inventory.read_kinds:
        from kubectl_dra.errors import NotFoundError

        reason = next((p.message for p in inventory.problems if p.kind == "NodeOverlay"), "")
        raise NotFoundError(f"no NodeOverlays to explain: {reason or 'they could not be read'} "
                            "(is Karpenter installed, with the NodeOverlay CRD?)")
    documents = list(inventory.documents.get("InstanceTypeCatalog", []))
    if catalog is not None:
        if str(catalog) == "-" and getattr(opened.source, "path", None) == "-":
            raise InputError("--catalog - and --snapshot - both read standard input: give one of them a file")
        documents = [d for d in read_documents(catalog, allow_stdin=True) if isinstance(d, dict)
                     and d.get("kind") == "InstanceTypeCatalog"]
        if not documents:
            raise InputError(f"{catalog}: no InstanceTypeCatalog document in it")
    from kubectl_dra.model.inventory import Problem

    instance_types, catalog_problems = [], []
    for doc in documents:
        found: list[str] = []
        instance_types.extend(from_catalog(doc, found))
        where = str(catalog) if catalog is not None else inventory.document_files.get(id(doc))
        catalog_problems += [f"{where}: {m}" if where else m for m in found]
    inventory.problems += [Problem(message=m, kind="InstanceTypeCatalog") for m in catalog_problems]
    if not documents:
        instance_types = infer_from_cluster(inventory.all(Node), inventory.all(NodeClaim), inventory.all(NodePool))
    return inventory, instance_types


def _require_names(env, inventory, flags) -> None:
    """Each name given to a filter flag must exist: an unknown one would filter everything away
    and read as "no rows" (not found: exit 3, naming what does exist)."""
    from kubectl_dra.cli.inputs import report_problems
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
    from kubectl_dra.cli.inputs import open_for, report_problems
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
