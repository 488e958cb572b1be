"""``kubectl dra claims``."""

from __future__ import annotations

import click

from kubectl_dra.flags.completion import choices
from kubectl_dra.cli.exitcodes import EPILOG
from kubectl_dra.cli.options import check_label_selector, output_options
from kubectl_dra.flags.connection import kube_options


def sort_keys() -> list[str]:
    from kubectl_dra.claims.summary import SORT_ALIASES, SORT_KEYS

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
@click.pass_context
def claims(ctx: click.Context, kube, output, selector: str | None, only_findings: bool, sort_by: str) -> None:
    """List ResourceClaims with their state, node, devices and reservations.

    \b
    Columns: NAMESPACE (with -A) NAME STATE NODE DEVICES AGE; -o wide adds
    RESERVED-FOR DRIVER POOL PODS GROUPS NODE-ALLOCATABLE FINDINGS. STATE is
    kubectl's: pending, allocated, reserved, deleted. The plain table reads
    ResourceClaims only; -o wide, -o json and --findings also read Pods,
    ResourceSlices and PodGroups to find problems (see `kubectl dra explain
    claim` for the details of one claim).

    \b
    Examples:
      kubectl dra claims -A
      kubectl dra claims -n ml -o wide
      kubectl dra claims -A --findings
      kubectl dra claims -A --snapshot examples/cluster -o json
    """
    from kubectl_dra.claims.summary import SORT_ALIASES, SORT_KEYS, list_claims, sort_key
    from kubectl_dra.cli.runtime import open_for, report_problems, require_kinds
    from kubectl_dra.kube.reads import ReadRequest
    from kubectl_dra.model.claim import ResourceClaim
    from kubectl_dra.printers.claims import claim_names, claim_table
    from kubectl_dra.printers.output import emit
    from kubectl_dra.printers.style import Style

    if sort_key(sort_by) is None:
        raise click.BadParameter(f"{sort_by!r}; use one of {', '.join([*SORT_KEYS, *SORT_ALIASES])}",
                                 param_hint="--sort-by")
    env = ctx.obj
    env.color = output.color
    opened = open_for(env, kube)
    detailed = output.format in ("wide", "json", "yaml") or only_findings or sort_key(sort_by) is SORT_KEYS["findings"]
    wanted = ReadRequest(ResourceClaim, opened.namespace, label_selector=selector, keep_raw=False)
    # the plain table and -o name show nothing taken from pods, slices or PodGroups; the detailed
    # view needs them, but of the pods only those that can matter to a claim
    context = []
    if detailed:
        from kubectl_dra.cli.runtime import claim_user_pods
        from kubectl_dra.model.resource import ResourceSlice
        from kubectl_dra.model.scheduling import PodGroup

        context = [claim_user_pods(opened.namespace),
                   ReadRequest(ResourceSlice, keep_raw=False),
                   ReadRequest(PodGroup, opened.namespace, required=False, keep_raw=False)]
    opened.source.prime([wanted, *context])  # every kind's first page on its way at once
    inventory = opened.source.read(context)
    result = list_claims(opened.source.stream(wanted, inventory), inventory, detailed=detailed,
                         only_findings=only_findings, sort_by=sort_by)
    if result.waiting:  # pending claims pods wait for: can any node take them now?
        from kubectl_dra.claims.summary import add_allocation_findings
        from kubectl_dra.cli.runtime import add_reads
        from kubectl_dra.model.node import Node
        from kubectl_dra.model.resource import DeviceClass

        from kubectl_dra.model.resource import DeviceTaintRule

        add_reads(opened, inventory, [ReadRequest(Node, keep_raw=False), ReadRequest(DeviceClass, keep_raw=False),
                                      ReadRequest(DeviceTaintRule, required=False, keep_raw=False)])
        add_allocation_findings(result, inventory)
    if only_findings:
        result.items = [item for item in result.items if item.findings]
    require_kinds(env, inventory, ResourceClaim)
    show_namespace = opened.namespace is None
    empty_table = not result.items and output.format in ("table", "wide")
    if not empty_table:  # kubectl prints no header above nothing
        emit(env, result, output,
             text=lambda: claim_table(result, now=env.now(), all_namespaces=show_namespace, wide=output.wide,
                                      no_headers=output.no_headers, style=Style(env.use_color)),
             names=lambda: claim_names(result))
    if empty_table and not inventory.problems:
        where = "in any namespace" if show_namespace else f"in namespace {opened.namespace}"
        env.error(f"No resources found {where}.")
    ctx.exit(report_problems(env, inventory))
