"""``--catalog`` and ``--feature-gate``: what ``overlays`` and ``explain node`` evaluate NodeOverlays with."""

from __future__ import annotations

from pathlib import Path

import click

GATE = {"on": True, "off": False, "unknown": None}


def catalog_option(command):
    command = click.option("--catalog", metavar="FILE", type=click.Path(path_type=Path, allow_dash=True),
                           help="InstanceTypeCatalog (YAML/JSON; see the README). Default: a catalog in the "
                                "snapshot, else instance types inferred from NodeClaims and Nodes (prices unknown).")(
        command)
    command = click.option("--feature-gate", type=click.Choice(["on", "off", "unknown"]), default="unknown",
                           show_default=True, callback=lambda _ctx, _param, value: GATE[value], help="Karpenter's NodeOverlay feature gate (off by default in "
                                                   "Karpenter); unknown evaluates as on.")(command)
    return command
