"""NAME arguments as kubectl takes them: ``embedder`` or, by kubectl's TYPE/NAME habit,
``pod/embedder``. The type must be the one the command explains; another is a usage error that
says which command takes it."""

from __future__ import annotations

import click

TYPES = {  # the names kubectl accepts for each kind (plural, singular, short, and group-qualified)
    "Pod": ("pods", "pod", "po"),
    "ResourceClaim": ("resourceclaims", "resourceclaim", "resourceclaims.resource.k8s.io",
                      "resourceclaim.resource.k8s.io"),
    "Node": ("nodes", "node", "no"),
}
COMMANDS = {"Pod": "explain pod", "ResourceClaim": "explain claim", "Node": "explain node"}


def typed_name(kind: str):
    """A click callback: NAME, or TYPE/NAME where TYPE names ``kind``."""

    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is None or "/" not in value:
            return value
        given, _, name = value.partition("/")
        found = next((k for k, names in TYPES.items() if given.lower() in names), None)
        if found == kind and name:
            return name
        if found is None:
            raise click.BadParameter(f'"{given}" in "{value}" is not a resource type this command takes '
                                     f"(it takes a {kind} name, or {TYPES[kind][1]}/NAME)", ctx, param)
        if not name:
            raise click.BadParameter(f'"{value}" names no {found}', ctx, param)
        raise click.BadParameter(f'"{value}" names a {found}; this command explains a {kind}: run '
                                 f"kubectl dra {COMMANDS[found]} {name}", ctx, param)

    return check
