"""Values for shell completion, from the cluster or snapshot the words typed so far point at:
object names, namespaces, the known values of a free-text flag. Each is a click ``shell_complete``
callback, and each returns nothing (never an error) when it cannot read."""

from __future__ import annotations

from typing import Callable

import click
from click.shell_completion import CompletionItem

from kubectl_dra.kube.options import KubeOptions

COMPLETION_TIMEOUT = "4s"  # each request; kubectl_dra/cli/completion.py bounds the whole answer by 5 s


def _kube_options(ctx: click.Context):
    """The connection flags typed so far, before or after the command name."""
    fields = KubeOptions.__dataclass_fields__
    given: dict = {}
    for c in reversed([ctx, *_parents(ctx)]):  # the root first; a later (inner) value wins
        given.update({k: v for k, v in c.params.items() if k in fields and v not in (None, (), False)})
    given.setdefault("request_timeout", COMPLETION_TIMEOUT)
    if given.get("snapshot") == "-":  # standard input belongs to the shell here, not to a snapshot
        raise LookupError("no snapshot to read while completing")
    return KubeOptions(**given)


def _parents(ctx: click.Context) -> list[click.Context]:
    out = []
    while ctx.parent is not None:
        ctx = ctx.parent
        out.append(ctx)
    return out


def object_names(kind: str) -> Callable:
    """A ``shell_complete`` callback: names of ``kind`` (Pod, ResourceClaim, Node, ...) in the
    namespace the words so far select; nothing (never an error) when they cannot be read."""

    def names(ctx: click.Context, param: click.Parameter, incomplete: str):
        try:
            # start-up: help
            from kubectl_dra.kube.reads import ReadRequest
            from kubectl_dra.kube.sources import open_source
            from kubectl_dra.model.registry import models

            model = next(m for m in models() if m.KIND == kind)
            opened = open_source(_kube_options(ctx))
            inventory = opened.source.read([ReadRequest(model, opened.namespace if model.NAMESPACED else None,
                                                        required=False, keep_raw=False)])
            found = sorted({obj.name for obj in inventory.all(model)})
        except Exception:  # completion must never print a traceback into the user's shell
            return []
        return [CompletionItem(name) for name in found if name.startswith(incomplete)]

    return names


def slice_values(field: str) -> Callable:
    """A ``shell_complete`` callback: the drivers (``field`` "driver") or pool names ("pool") the
    cluster's ResourceSlices publish; nothing when they cannot be read."""

    def values(ctx: click.Context, param: click.Parameter, incomplete: str):
        try:
            # start-up: help
            from kubectl_dra.kube.reads import ReadRequest
            from kubectl_dra.kube.sources import open_source
            from kubectl_dra.model.resource import ResourceSlice

            opened = open_source(_kube_options(ctx))
            inventory = opened.source.read([ReadRequest(ResourceSlice, required=False, keep_raw=False)])
            found = sorted({rs.spec.driver if field == "driver" else rs.spec.pool.name
                            for rs in inventory.all(ResourceSlice)})
        except Exception:
            return []
        return [CompletionItem(v) for v in found if v and v.startswith(incomplete)]

    return values


def namespaces(ctx: click.Context, param: click.Parameter, incomplete: str):
    """``-n <TAB>``: the cluster's namespaces, or those a snapshot's objects live in."""
    try:
        # start-up: help
        from kubectl_dra.kube.reads import ReadRequest
        from kubectl_dra.kube.sources import open_source
        from kubectl_dra.model.registry import models

        opened = open_source(_kube_options(ctx))
        if opened.live:
            listed = opened.source.session.get("/api/v1/namespaces", [("limit", "500")])
            found = {(item.get("metadata") or {}).get("name", "") for item in listed.get("items") or []}
        else:
            inventory = opened.source.read([ReadRequest(m, None, required=False, keep_raw=False)
                                            for m in models() if m.NAMESPACED])
            found = {obj.namespace for m in models() if m.NAMESPACED for obj in inventory.all(m)}
    except Exception:
        return []
    return [CompletionItem(name) for name in sorted(n for n in found if n) if name.startswith(incomplete)]


def choices(values: Callable[[], list[str]]) -> Callable:
    """A ``shell_complete`` callback for a free-text flag with known good values (``--sort-by``)."""

    def complete_values(ctx: click.Context, param: click.Parameter, incomplete: str):
        return [CompletionItem(v) for v in values() if v.startswith(incomplete)]

    return complete_values
