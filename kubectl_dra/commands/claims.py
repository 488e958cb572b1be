"""``kubectl dra claims`` once its flags are parsed: open the source, read the claims (and, for the
detailed view, what their rows are computed from), list them (claims/summary.py), print the
ClaimList, exit 0 or 4. With -w: the list, then one row per claim event (commands/watching.py)."""

from __future__ import annotations

from typing import Callable, Iterable

from kubectl_dra.claims.summary import ClaimList, add_allocation_findings, detailed_view, keep_with_findings, list_claims
from kubectl_dra.commands import watching
from kubectl_dra.commands.inputs import (add_reads, claim_user_pods, open_for, read_versions, report_problems,
                                         require_kinds)
from kubectl_dra.env import Environment
from kubectl_dra.errors import ApiError
from kubectl_dra.exitcodes import ExitStatus
from kubectl_dra.flags.watch import WatchOptions
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.kube.sources import Opened
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.printers.claims import claim_names, claim_table
from kubectl_dra.printers.options import OutputOptions
from kubectl_dra.printers.output import emit
from kubectl_dra.printers.style import Style


def run(env: Environment, *, kube: KubeOptions, output: OutputOptions, selector: str | None, only_findings: bool,
        sort_by: str, watch: WatchOptions) -> int:
    """The claims table (or its document); with -w, then its changes. Exit 0, or 4 when something
    could not be read (3, raised, when the claims themselves could not)."""
    env.color = output.color
    opened = open_for(env, kube)
    detailed = detailed_view(output.format in ("wide", "json", "yaml"), only_findings, sort_by)
    wanted = ReadRequest(ResourceClaim, opened.namespace, label_selector=selector, keep_raw=False)
    if watch.on:
        return watching.run(lambda: _watch(env, opened, output, watch, wanted, detailed, only_findings, sort_by))
    opened.source.prime([wanted, *_context(opened.namespace, detailed)])  # every kind's first page at once
    result, inventory = _claim_list(opened, lambda inventory: opened.source.stream(wanted, inventory),
                                    detailed, only_findings, sort_by)
    require_kinds(env, inventory, ResourceClaim)
    result.versions = read_versions(opened, inventory.of_kind("Node"))
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
    return report_problems(env, inventory)


def _context(namespace: str | None, detailed: bool) -> list[ReadRequest]:
    """What a claim's row needs besides the claim: nothing for the plain table and -o name; for the
    detailed view the pods that can matter to a claim, the slices and the PodGroups."""
    if not detailed:
        return []
    # start-up: light - the plain table and -o name build no slices or PodGroups (nor pods: claim_user_pods)
    from kubectl_dra.model.resource import ResourceSlice
    from kubectl_dra.model.scheduling import PodGroup

    return [claim_user_pods(namespace), ReadRequest(ResourceSlice, keep_raw=False),
            ReadRequest(PodGroup, namespace, required=False, keep_raw=False)]


def _claim_list(opened: Opened, claims: Callable[[Inventory], Iterable[ResourceClaim]], detailed: bool,
                only_findings: bool, sort_by: str) -> tuple[ClaimList, Inventory]:
    """The rows of ``claims(inventory)`` (an iterable of claims) with everything they need read:
    the list's and each watch event's rows are made here alike."""
    inventory = opened.source.read(_context(opened.namespace, detailed))
    result = list_claims(claims(inventory), inventory, detailed=detailed, only_findings=only_findings,
                         sort_by=sort_by)
    if result.waiting:  # pending claims pods wait for: can any node take them now?
        # start-up: pending - nodes and classes are read, and the allocator loaded, only for a waiting claim
        from kubectl_dra.model.node import Node
        from kubectl_dra.model.resource import DeviceClass, DeviceTaintRule

        add_reads(opened, inventory, [ReadRequest(Node, keep_raw=False), ReadRequest(DeviceClass, keep_raw=False),
                                      ReadRequest(DeviceTaintRule, required=False, keep_raw=False)])
        add_allocation_findings(result, inventory)
    if only_findings:
        keep_with_findings(result)
    return result, inventory


def _watch(env: Environment, opened: Opened, output: OutputOptions, watch: WatchOptions, wanted: ReadRequest,
           detailed: bool, only_findings: bool, sort_by: str) -> ExitStatus:
    """The list, then a row per claim event (see kubectl_dra.commands.watching). A row needs only its
    claim in the plain table; in the detailed view each event re-reads the pods, slices and
    PodGroups the row is computed from, so a row is never older than its claim. A row that could
    not be computed is said on stderr instead (exit 4)."""
    # start-up: offline - kube/watch.py brings kube/live.py and kube/client.py (~7 ms); -w is never offline
    from kubectl_dra.kube.watch import KindWatch

    stream = watching.RowStream(env, output, watch.events)
    watcher = KindWatch(opened.source, wanted, warn=lambda message: stream.error(message))
    listed, first = watcher.list()
    require_kinds(env, first, ResourceClaim)
    watcher.deadline = watching.deadline(opened)
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

    return watching.follow(stream, watcher.events(), handle)
