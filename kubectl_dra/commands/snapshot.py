"""``kubectl dra snapshot -o DIR`` once its flags are parsed: DIR checked, every kind read (one list
call each), the files and their marker written, a table of what was saved, the exit status."""

from __future__ import annotations

from pathlib import Path

from kubectl_dra import __version__
from kubectl_dra.commands.inputs import open_for, report_problems, require_kinds
from kubectl_dra.env import Environment
from kubectl_dra.exitcodes import ExitStatus
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.kube.snapshotdir import SnapshotTarget
from kubectl_dra.model.registry import models
from kubectl_dra.printers.table import Column, render

REQUIRED = {"Pod", "Node", "ResourceClaim", "ResourceSlice"}
"""Kinds every cluster with DRA serves: not being able to list one is an error, not a skip."""


def run(env: Environment, *, kube: KubeOptions, output_dir: Path, overwrite: bool, no_headers: bool) -> ExitStatus:
    with SnapshotTarget(output_dir, overwrite) as target:  # checked and locked before anything is read
        opened = open_for(env, kube)
        inventory = opened.source.read(
            [ReadRequest(m, opened.namespace, required=m.KIND in REQUIRED) for m in models()])
        by_kind = {m: [obj.raw for obj in inventory.all(m)] for m in models() if m.KIND in inventory.read_kinds}
        if not by_kind:
            require_kinds(env, inventory, *models())
        not_read = {m.KIND: next((p.message for p in inventory.problems if p.kind == m.KIND), "not read")
                    for m in models() if m.KIND not in inventory.read_kinds}
        about = {"createdBy": f"kubectl-dra {__version__}", "created": env.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "source": opened.source.description, "namespace": opened.namespace, "notRead": not_read}
        server_version, _ = opened.source.server_version()  # offline answers name the cluster's release too
        if server_version:
            about["serverVersion"] = server_version
        documents = {kind: list(items) for kind, items in inventory.documents.items() if items}
        files = target.write(by_kind, about, documents)
    for warning in target.warnings:
        env.error(f"warning: {warning}")
    counts = [(m.KIND, len(items)) for m, items in by_kind.items()] + [(k, len(v)) for k, v in documents.items()]
    rows = [[kind, str(count), str(path)] for (kind, count), path in zip(counts, files)]
    env.write(render([Column("KIND"), Column("OBJECTS"), Column("FILE")], rows, no_headers=no_headers))
    return report_problems(env, inventory)
