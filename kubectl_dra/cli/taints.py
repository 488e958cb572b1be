"""``kubectl dra taints``."""

from __future__ import annotations

from pathlib import Path

import click

from kubectl_dra.cli.exitcodes import EPILOG
from kubectl_dra.cli.options import output_options
from kubectl_dra.flags.connection import kube_options


@click.command("taints", epilog=EPILOG)
@kube_options
@output_options(formats=("table", "wide", "json", "yaml"))
@click.option("--dry-run", "dry_run", is_flag=True,
              help="Evaluate the DeviceTaintRule in -f as if it were applied now: the devices it hits and the "
                   "pods it would evict. Nothing is created.")
@click.option("-f", "--filename", "filename", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
              metavar="FILE", help="The DeviceTaintRule for --dry-run (YAML or JSON, one object; - reads standard input).")
@click.pass_context
def taints(ctx: click.Context, kube, output, dry_run: bool, filename: Path | None) -> None:
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
    Examples:
      kubectl dra taints
      kubectl dra taints -o wide --snapshot examples/cluster
      kubectl dra taints --dry-run -f examples/taint-rules/drain-worker-gpu-2.yaml --snapshot examples/cluster
    """
    from kubectl_dra.cli.exitcodes import ExitStatus
    from kubectl_dra.cli.runtime import claim_user_pods, open_for, report_problems, require_kinds
    from kubectl_dra.kube.reads import ReadRequest
    from kubectl_dra.model.claim import ResourceClaim
    from kubectl_dra.model.resource import DeviceTaintRule, ResourceSlice
    from kubectl_dra.printers.output import emit
    from kubectl_dra.printers.style import Style
    from kubectl_dra.printers.taints import taint_table
    from kubectl_dra.taints.explain import explain_taints

    if dry_run and filename is None:
        raise click.UsageError("--dry-run needs -f FILE (the DeviceTaintRule to evaluate)")
    if filename is not None and not dry_run:
        raise click.UsageError("-f is for --dry-run: kubectl-dra never applies a rule (kubectl apply -f does)")
    if filename is not None and str(filename) == "-" and kube.snapshot == "-":
        raise click.UsageError("-f - and --snapshot - both read standard input: give one of them a file")
    rule, warnings = _read_rule(filename) if filename is not None else (None, [])
    env = ctx.obj
    for warning in warnings:  # as kubectl prints the server's warnings
        env.error(f"Warning: {warning}")
    env.color = output.color
    opened = open_for(env, kube)
    inventory = opened.source.read([
        ReadRequest(ResourceSlice, keep_raw=False), ReadRequest(ResourceClaim, None, keep_raw=False),
        claim_user_pods(None),
        ReadRequest(DeviceTaintRule, required=False, keep_raw=False)])
    require_kinds(env, inventory, ResourceSlice)
    result = explain_taints(inventory, env.now(), dry_run=rule)
    emit(env, result, output, text=lambda: taint_table(result, wide=output.wide, no_headers=output.no_headers,
                                                       style=Style(env.use_color)))
    status = report_problems(env, inventory)
    evicting = any(c.outcome in ("Evicted", "EvictionPending", "WouldEvict") for d in result.devices for c in d.consumers)
    if status == 0 and (evicting or any(f.severity == "error" for f in result.findings)):
        status = ExitStatus.DIVERGED
    ctx.exit(status)


def _read_rule(path: Path) -> tuple:
    """The rule as the server would store it, and the warnings it would give (errors: InputError)."""
    from kubectl_dra.errors import InputError
    from kubectl_dra.kube.snapshot import read_documents
    from kubectl_dra.model.registry import parse_object
    from kubectl_dra.model.resource import DeviceTaintRule

    documents = [d for d in read_documents(path, allow_stdin=True) if isinstance(d, dict)]  # "-f -": stdin
    rules = [d for d in documents if d.get("kind") == "DeviceTaintRule"]
    if len(rules) != 1:
        raise InputError(f"{path}: expected one DeviceTaintRule, found {len(rules)}")
    raw = rules[0]
    if not str(raw.get("apiVersion", "")).startswith("resource.k8s.io/"):
        raise InputError(f"{path}: a DeviceTaintRule is resource.k8s.io/v1 (found apiVersion {raw.get('apiVersion')!r})")
    rule = parse_object(raw)
    if not isinstance(rule, DeviceTaintRule) or not rule.name:
        raise InputError(f"{path}: not a DeviceTaintRule this tool can read (metadata.name is required)")
    from kubectl_dra.taints.validation import rule_problems

    errors, unknown = rule_problems(raw, rule)
    if errors:  # the server refuses it: there is nothing it would do
        raise InputError(f'{path}: DeviceTaintRule "{rule.name}" is invalid (the API server refuses it): '
                         + "; ".join(errors))
    warnings = [f"{path}: {w}: the API server drops it and stores the rule without it (kubectl apply's default "
                "--validate=strict refuses it); this dry run evaluates the rule without it" for w in unknown]
    return rule, warnings
