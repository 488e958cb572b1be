"""``kubectl dra snapshot -o DIR``: a support bundle that ``--snapshot DIR`` reads back."""

from __future__ import annotations

from pathlib import Path

import click

from kubectl_dra.exitcodes import EPILOG
from kubectl_dra.flags.connection import kube_options


@click.command("snapshot", epilog=EPILOG)
@kube_options
@click.option("-o", "--output-dir", "output_dir", required=True, metavar="DIR",
              type=click.Path(file_okay=False, path_type=Path), help="Directory to write (created if missing).")
@click.option("--overwrite", is_flag=True,
              help="Replace an earlier snapshot in DIR (only a directory this command wrote).")
@click.option("--no-headers", is_flag=True, help="Print the summary without the header line.")
@click.pass_context
def snapshot(ctx: click.Context, kube, output_dir: Path, overwrite: bool, no_headers: bool) -> None:
    """Save every object kubectl-dra reads, one file per kind.

    \b
    Reads Pods, Nodes, ResourceClaims, ResourceClaimTemplates, ResourceSlices,
    DeviceClasses, PodGroups, Deployments, ReplicaSets, StatefulSets, Jobs and,
    where Karpenter is installed, NodePools, NodeClaims and NodeOverlays: one
    list call per kind. Objects are saved exactly as the server returned them.
    Kinds the cluster does not serve or you may not list are skipped with a
    warning, and recorded as not read in DIR/.kubectl-dra-snapshot.yaml, so
    reading the snapshot back says "could not be read", never "none".
    Secrets and ConfigMaps are never read.

    \b
    DIR must be new or empty; --overwrite replaces an earlier snapshot whole
    (files of the old one never stay beside the new), and a directory this
    command did not write is never replaced.

    \b
    Examples:
      kubectl dra snapshot -o bundle/ -A
      kubectl dra claims -A --snapshot bundle/
    """
    from kubectl_dra import __version__
    from kubectl_dra.commands.inputs import open_for, report_problems, require_kinds
    from kubectl_dra.kube.reads import ReadRequest
    from kubectl_dra.kube.snapshot import check_target, write_snapshot
    from kubectl_dra.model.registry import models
    from kubectl_dra.printers.table import Column, render

    env = ctx.obj
    check_target(output_dir, overwrite)
    opened = open_for(env, kube)
    required = {"Pod", "Node", "ResourceClaim", "ResourceSlice"}
    inventory = opened.source.read(
        [ReadRequest(m, opened.namespace, required=m.KIND in required) for m in models()])
    by_kind = {m: [obj.raw for obj in inventory.all(m)] for m in models() if m.KIND in inventory.read_kinds}
    if not by_kind:
        require_kinds(env, inventory, *models())
    not_read = {m.KIND: next((p.message for p in inventory.problems if p.kind == m.KIND), "not read")
                for m in models() if m.KIND not in inventory.read_kinds}
    about = {"createdBy": f"kubectl-dra {__version__}", "created": env.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
             "source": opened.source.description, "namespace": opened.namespace, "notRead": not_read}
    try:
        documents = {kind: list(items) for kind, items in inventory.documents.items() if items}
        files = write_snapshot(output_dir, by_kind, about, documents)
    except OSError as exc:
        from kubectl_dra.errors import InputError

        raise InputError(f"cannot write snapshot to {output_dir}: {(exc.strerror or str(exc)).lower()}"
                         + (f" ({exc.filename})" if exc.filename else "")) from None
    counts = [(m.KIND, len(items)) for m, items in by_kind.items()] + [(k, len(v)) for k, v in documents.items()]
    rows = [[kind, str(count), str(path)] for (kind, count), path in zip(counts, files)]
    env.write(render([Column("KIND"), Column("OBJECTS"), Column("FILE")], rows, no_headers=no_headers))
    ctx.exit(report_problems(env, inventory))
