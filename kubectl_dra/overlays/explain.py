"""Explain NodeOverlays: run the evaluation (``engine.py``), add its findings (``findings.py``) and
return the result document (``document.py``); also the slices the templates predict for one node."""

from __future__ import annotations

from kubectl_dra.gcpause import gc_paused
from kubectl_dra.model.karpenter import NodeOverlay, NodePool
from kubectl_dra.overlays.catalog import InstanceType
from kubectl_dra.overlays.document import OverlayExplanation
from kubectl_dra.overlays.engine import _Evaluation
from kubectl_dra.overlays.findings import OverlayFindings
from kubectl_dra.overlays.templates import predict_slices


def slices_for_node(overlays: list[NodeOverlay], nodepools: list[NodePool], instance_types: list[InstanceType], *,
                    nodepool: str, instance_type: str, node_name: str, node_labels: dict[str, str],
                    gate_enabled: bool | None = None) -> list[dict]:
    """PROPOSAL: the ResourceSlices the overlay templates predict for one real node (for
    ``explain node``): named after the node, ``matchLabelKeys`` resolved from its labels. Empty
    when the gate is off or the node's (NodePool, instance type) is not in the input."""
    if gate_enabled is False:
        return []
    with gc_paused():
        ev = _Evaluation(list(overlays), list(nodepools), list(instance_types), gate_enabled)
        ev.run()
        ctx = next((c for c in ev.contexts if c.pool.name == nodepool and c.it.name == instance_type), None)
        merged = ev.drivers.merged(ctx.index) if ctx is not None else {}
        return predict_slices(ctx.it, ctx.pool, merged, node_labels, node_name) if merged else []


def evaluate(overlays: list[NodeOverlay], nodepools: list[NodePool], instance_types: list[InstanceType], *,
             gate_enabled: bool | None = None) -> OverlayExplanation:
    """Which overlays apply where, and the prices, capacity and (proposed) slices that result.

    ``gate_enabled`` is the NodeOverlay feature gate: False means Karpenter applies nothing
    (results keep the provider's values and show the overlays' effect under ``ifEnabled``),
    None means unknown (evaluated as if on).
    """
    with gc_paused():
        ev = _Evaluation(list(overlays), list(nodepools), list(instance_types), gate_enabled)
        ev.run()
        return OverlayExplanation.model_construct(
            feature_gate=gate_enabled,
            overlays=ev.overlay_views(),
            instance_types=ev.instance_type_views(),
            findings=OverlayFindings(ev).build(),
        )
