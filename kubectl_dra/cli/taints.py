"""``kubectl dra taints``."""

from __future__ import annotations

from pathlib import Path

import click

from kubectl_dra.exitcodes import EPILOG
from kubectl_dra.flags.output import output_options
from kubectl_dra.flags.watch import check_watch, watch_options
from kubectl_dra.flags.connection import kube_options


@click.command("taints", epilog=EPILOG)
@kube_options
@output_options(formats=("table", "wide", "json", "yaml"))
@click.option("--dry-run", "dry_run", is_flag=True,
              help="Evaluate the DeviceTaintRule in -f as if it were applied now: the devices it hits and the "
                   "pods it would evict. Nothing is created.")
@click.option("-f", "--filename", "filename", type=click.Path(path_type=Path, allow_dash=True),
              metavar="FILE", help="The DeviceTaintRule for --dry-run (YAML or JSON, one object; - reads standard input).")
@watch_options("tainted devices")
@click.pass_context
def taints(ctx: click.Context, kube, output, dry_run: bool, filename: Path | None, watch) -> None:
    """Tainted devices (driver taints in ResourceSlices and DeviceTaintRules) and what they do.

    \b
    Per device: each taint (effect, since when, the driver or the rule that set
    it) and every claim allocated the device, with its pods and the outcome:
    Evicted / EvictionPending (NoExecute, as the device taint eviction
    controller decides: tolerations of the allocation, tolerationSeconds),
    Tolerated, BlocksNewAllocations (NoSchedule: existing pods keep it). The
    kubelet's device health (Unhealthy) comes as DeviceUnhealthy findings.
    With --dry-run -f RULE, the same for a rule before it is applied (an empty
    deviceSelector selects every device: an error finding with the pods at
    stake). Exit 1 when pods are or would be evicted.

    \b
    With -w, as kubectl get -w: the table, then a device's rows each time
    they change; a device no longer tainted is printed as last seen (its
    EVENT is DELETED with --output-watch-events). ResourceSlices,
    DeviceTaintRules and ResourceClaims are watched; each change re-reads
    them and the pods and computes the rows anew (a pod's change alone prints
    nothing); findings that appear meanwhile go to stderr. -o json: one
    device document per line. Ends on Ctrl-C or
    --request-timeout with exit 0 (4 if something could not be read).

    \b
    Examples:
      kubectl dra taints
      kubectl dra taints -w
      kubectl dra taints -o wide --snapshot examples/cluster
      kubectl dra taints --dry-run -f examples/taint-rules/drain-worker-gpu-2.yaml --snapshot examples/cluster
    """
    if dry_run and filename is None:
        raise click.UsageError("--dry-run needs -f FILE (the DeviceTaintRule to evaluate)")
    if filename is not None and not dry_run:
        raise click.UsageError("-f is for --dry-run: kubectl-dra never applies a rule (kubectl apply -f does)")
    if filename is not None and str(filename) == "-" and kube.snapshot == "-":
        raise click.UsageError("-f - and --snapshot - both read standard input: give one of them a file")
    check_watch(watch, kube, output)
    if watch.on and dry_run:
        raise click.UsageError("--dry-run evaluates a rule once; it cannot be watched (drop -w)")
    # start-up: help
    from kubectl_dra.commands.taints import run

    ctx.exit(run(ctx.obj, kube=kube, output=output, filename=filename, watch=watch))
