"""``kubectl dra claims``."""

from __future__ import annotations

import click

from kubectl_dra.flags.completion import choices
from kubectl_dra.exitcodes import EPILOG
from kubectl_dra.cli.options import check_label_selector
from kubectl_dra.flags.output import output_options
from kubectl_dra.flags.watch import check_watch, watch_options
from kubectl_dra.flags.connection import kube_options


def sort_keys() -> list[str]:
    """--sort-by's names (the completion's, and what the usage check accepts), from the core's table."""
    # start-up: help - the key table (no model) only when --sort-by is completed or checked
    from kubectl_dra.claims.sorting import SORT_ALIASES, SORT_KEYS

    return [*SORT_KEYS, *SORT_ALIASES]


@click.command("claims", epilog=EPILOG)
@kube_options
@output_options()
@click.option("-l", "--selector", metavar="SELECTOR", callback=check_label_selector,
              help="Label selector for claims, e.g. app=trainer.")
@click.option("--findings", "only_findings", is_flag=True,
              help="Only claims with findings (stale reservations, unreserved users, ...).")
@click.option("--sort-by", metavar="KEY", default="namespace", show_default=True, shell_complete=choices(sort_keys),
              help="name, namespace, node, state, age, devices, reservations or findings "
                   "(kubectl's .metadata.name and .metadata.creationTimestamp work too).")
@watch_options("claims")
@click.pass_context
def claims(ctx: click.Context, kube, output, selector: str | None, only_findings: bool, sort_by: str,
           watch) -> None:
    """List ResourceClaims with their state, node, devices and reservations.

    \b
    Columns: NAMESPACE (with -A) NAME STATE NODE DEVICES AGE; -o wide adds
    RESERVED-FOR DRIVER POOL PODS GROUPS NODE-ALLOCATABLE FINDINGS. STATE is
    kubectl's: pending, allocated, reserved, deleted. The plain table reads
    ResourceClaims only; -o wide, -o json and --findings also read Pods,
    ResourceSlices and PodGroups to find problems (see `kubectl dra explain
    claim` for the details of one claim).

    \b
    With -w, as kubectl get -w: the table, then one row each time a claim is
    added, changes or is deleted (a deleted claim's row as last seen), until
    Ctrl-C or --request-timeout (exit 0). Each row is the one the table would
    print; for -o wide/json/--findings each change re-reads the pods, slices
    and PodGroups (a pod's change alone prints no row). -o json: one JSON
    document per line. --output-watch-events adds an EVENT column.

    \b
    Examples:
      kubectl dra claims -A
      kubectl dra claims -n ml -o wide
      kubectl dra claims -A --findings
      kubectl dra claims -A -w
      kubectl dra claims -A --snapshot examples/cluster -o json
    """
    if sort_by not in sort_keys():
        raise click.BadParameter(f"{sort_by!r}; use one of {', '.join(sort_keys())}", param_hint="--sort-by")
    check_watch(watch, kube, output)
    # start-up: help
    from kubectl_dra.commands.claims import run

    ctx.exit(run(ctx.obj, kube=kube, output=output, selector=selector, only_findings=only_findings,
                 sort_by=sort_by, watch=watch))
