"""``kubectl dra snapshot -o DIR``: a support bundle that ``--snapshot DIR`` reads back."""

from __future__ import annotations

from pathlib import Path

import click

from kubectl_dra.exitcodes import EPILOG
from kubectl_dra.flags.connection import kube_options
from kubectl_dra.flags.paths import DirectoryPath


@click.command("snapshot", epilog=EPILOG)
@kube_options
@click.option("-o", "--output-dir", "output_dir", required=True, metavar="DIR",
              type=DirectoryPath(path_type=Path), help="Directory to write (created if missing).")
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
    (files of the old one never stay beside the new). A directory that holds
    anything else (a file you added, a subdirectory) is never replaced, and
    neither is one that changes while the cluster is read; a second snapshot
    into the same DIR at the same time is refused. A DIR that is a symlink is
    followed: the directory it names is replaced, the link stays.

    \b
    Examples:
      kubectl dra snapshot -o bundle/ -A
      kubectl dra claims -A --snapshot bundle/
    """
    # start-up: help
    from kubectl_dra.commands.snapshot import run

    ctx.exit(run(ctx.obj, kube=kube, output_dir=output_dir, overwrite=overwrite, no_headers=no_headers))
