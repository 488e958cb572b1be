"""``kubectl dra explain node``: the node fetched, every slice, the claims and the node's pods read
with the Karpenter inputs (NodeOverlays, NodePools, NodeClaims, the instance types), ``nodes/explain.py``
run, one ``NodeExplanation`` printed as a tree, JSON or YAML."""

from __future__ import annotations

from pathlib import Path

from kubectl_dra.commands.inputs import (fetch_named, join_first, open_for, read_overlay_inputs, read_versions,
                                         report_problems)
from kubectl_dra.env import Environment
from kubectl_dra.exitcodes import ExitStatus
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.resource import ResourceSlice
from kubectl_dra.nodes.explain import explain_node
from kubectl_dra.printers.nodes import node_tree
from kubectl_dra.printers.options import OutputOptions
from kubectl_dra.printers.output import emit
from kubectl_dra.printers.style import Style


def run(env: Environment, *, kube: KubeOptions, output: OutputOptions, catalog: Path | None,
        feature_gate: bool | None, name: str) -> ExitStatus:
    env.color = output.color
    opened = open_for(env, kube)
    found, first = fetch_named(env, opened, Node, None, name)
    # every slice: a node also reaches slices by nodeSelector, allNodes and per-device selection
    inventory, types = read_overlay_inputs(opened, catalog, [
        ReadRequest(ResourceSlice), ReadRequest(ResourceClaim),
        ReadRequest(Pod, None, field_selector=f"spec.nodeName={name}")], require_overlays=False)
    join_first(inventory, found, first)
    result = explain_node(found, inventory, types, feature_gate)
    result.versions = read_versions(opened, [found])
    emit(env, result, output, text=lambda: node_tree(result, Style(env.use_color)))
    return report_problems(env, inventory)
