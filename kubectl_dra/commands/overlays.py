"""``kubectl dra overlays`` once its flags are parsed: the overlays, NodePools and instance types
read, the filter names checked, the evaluation, one OverlayExplanation, its tables, the exit status."""

from __future__ import annotations

from pathlib import Path

from kubectl_dra.commands.inputs import open_for, read_overlay_inputs, report_problems
from kubectl_dra.env import Environment
from kubectl_dra.exitcodes import ExitStatus
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.model.karpenter import NodeOverlay, NodePool
from kubectl_dra.overlays.explain import evaluate, unknown_name
from kubectl_dra.printers.options import OutputOptions
from kubectl_dra.printers.output import emit
from kubectl_dra.printers.overlays import filter_result, overlay_tables
from kubectl_dra.printers.style import Style


def run(env: Environment, *, kube: KubeOptions, output: OutputOptions, catalog: Path | None,
        feature_gate: bool | None, nodepools: tuple[str, ...], instance_types: tuple[str, ...],
        overlay_names: tuple[str, ...]) -> ExitStatus:
    env.color = output.color
    opened = open_for(env, kube)
    inventory, types = read_overlay_inputs(opened, catalog)
    error = unknown_name(inventory, types, nodepools=nodepools, overlays=overlay_names,
                         instance_type_names=instance_types)
    if error is not None:
        report_problems(env, inventory)
        raise error
    result = evaluate(inventory.all(NodeOverlay), inventory.all(NodePool), types, gate_enabled=feature_gate)
    result.problems = [p.message for p in inventory.problems]
    result = filter_result(result, set(nodepools), set(instance_types), set(overlay_names))
    emit(env, result, output, text=lambda: overlay_tables(result, wide=output.wide, no_headers=output.no_headers,
                                                          style=Style(env.use_color)))
    return report_problems(env, inventory)
