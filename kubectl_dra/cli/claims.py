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
    from kubectl_dra.claims.summary import SORT_ALIASES, SORT_KEYS, sort_key
    from kubectl_dra.commands.inputs import open_for, report_problems, require_kinds
    from kubectl_dra.kube.reads import ReadRequest
    from kubectl_dra.model.claim import ResourceClaim
    from kubectl_dra.printers.claims import claim_names, claim_table
    from kubectl_dra.printers.output import emit
    from kubectl_dra.printers.style import Style

    if sort_key(sort_by) is None:
        raise click.BadParameter(f"{sort_by!r}; use one of {', '.join([*SORT_KEYS, *SORT_ALIASES])}",
                                 param_hint="--sort-by")
    check_watch(watch, kube, output)
    env = ctx.obj
    env.color = output.color
    opened = open_for(env, kube)
    detailed = output.format in ("wide", "json", "yaml") or only_findings or sort_key(sort_by) is SORT_KEYS["findings"]
    wanted = ReadRequest(ResourceClaim, opened.namespace, label_selector=selector, keep_raw=False)
    if watch.on:
        from kubectl_dra.commands.watching import run

        ctx.exit(run(lambda: _watch(env, opened, output, watch, wanted, detailed, only_findings, sort_by)))
    opened.source.prime([wanted, *_context(opened.namespace, detailed)])  # every kind's first page at once
    result, inventory = _claim_list(opened, lambda inventory: opened.source.stream(wanted, inventory),
                                    detailed, only_findings, sort_by)
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


def _context(namespace: str | None, detailed: bool) -> list:
    """What a claim's row needs besides the claim: nothing for the plain table and -o name; for the
    detailed view the pods that can matter to a claim, the slices and the PodGroups."""
    if not detailed:
        return []
    from kubectl_dra.commands.inputs import claim_user_pods
    from kubectl_dra.kube.reads import ReadRequest
    from kubectl_dra.model.resource import ResourceSlice
    from kubectl_dra.model.scheduling import PodGroup

    return [claim_user_pods(namespace), ReadRequest(ResourceSlice, keep_raw=False),
            ReadRequest(PodGroup, namespace, required=False, keep_raw=False)]


def _claim_list(opened, claims, detailed: bool, only_findings: bool, sort_by: str):
    """The rows of ``claims(inventory)`` (an iterable of claims) with everything they need read:
    the list's and each watch event's rows are made here alike."""
    from kubectl_dra.claims.summary import list_claims
    from kubectl_dra.kube.reads import ReadRequest

    inventory = opened.source.read(_context(opened.namespace, detailed))
    result = list_claims(claims(inventory), inventory, detailed=detailed, only_findings=only_findings,
                         sort_by=sort_by)
    if result.waiting:  # pending claims pods wait for: can any node take them now?
        from kubectl_dra.claims.summary import add_allocation_findings
        from kubectl_dra.commands.inputs import add_reads
        from kubectl_dra.model.node import Node
        from kubectl_dra.model.resource import DeviceClass, DeviceTaintRule

        add_reads(opened, inventory, [ReadRequest(Node, keep_raw=False), ReadRequest(DeviceClass, keep_raw=False),
                                      ReadRequest(DeviceTaintRule, required=False, keep_raw=False)])
        add_allocation_findings(result, inventory)
    if only_findings:
        result.items = [item for item in result.items if item.findings]
    return result, inventory


def _watch(env, opened, output, watch, wanted, detailed: bool, only_findings: bool, sort_by: str) -> int:
    """The list, then a row per claim event (see kubectl_dra.commands.watching). A row needs only its
    claim in the plain table; in the detailed view each event re-reads the pods, slices and
    PodGroups the row is computed from, so a row is never older than its claim. A row that could
    not be computed is said on stderr instead (exit 4)."""
    from kubectl_dra.claims.summary import ClaimList
    from kubectl_dra.commands.inputs import require_kinds
    from kubectl_dra.commands.watching import RowStream, deadline, follow
    from kubectl_dra.errors import ApiError
    from kubectl_dra.kube.watch import KindWatch
    from kubectl_dra.model.claim import ResourceClaim
    from kubectl_dra.printers.claims import claim_table
    from kubectl_dra.printers.style import Style

    stream = RowStream(env, output, watch.events)
    watcher = KindWatch(opened.source, wanted, warn=lambda message: stream.error(message))
    listed, first = watcher.list()
    require_kinds(env, first, ResourceClaim)
    watcher.deadline = deadline(opened)
    show_namespace = opened.namespace is None

    def show(result: ClaimList, types: list[str]) -> None:
        if not result.items:  # (--findings: a claim without findings; no header above nothing)
            return
        if output.format in ("json", "yaml"):
            for item, kind in zip(result.model_dump(mode="json", by_alias=True)["items"], types):
                stream.document(kind, item)
        elif output.format == "name":
            stream.write("".join(f"resourceclaim.resource.k8s.io/{item.name}\n" for item in result.items))
        else:
            stream.table(lambda no_headers, events: claim_table(
                result, now=env.now(), all_namespaces=show_namespace, wide=output.wide, no_headers=no_headers,
                style=Style(env.use_color), events=events), types)

    result, inventory = _claim_list(opened, lambda _: listed, detailed, only_findings, sort_by)
    inventory.problems[:0] = first.problems
    if not watch.only:
        show(result, ["ADDED"] * len(result.items))
    stream.problems(inventory)

    def handle(event) -> None:
        try:
            row, read = _claim_list(opened, lambda _: [event.object], detailed, only_findings, sort_by)
        except ApiError as exc:
            stream.error(f'{event.type} resourceclaim "{event.object.name}": its row could not be made: {exc}')
            return
        show(row, [event.type] * len(row.items))
        stream.problems(read)

    return follow(stream, watcher.events(), handle)
