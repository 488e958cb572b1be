"""Explain NodeOverlays: run the evaluation (``engine.py``), add its findings (``findings.py``) and
return the result document (``document.py``); also the slices the templates predict for one node,
and whether every name a filter flag gives exists."""

from __future__ import annotations

from kubectl_dra.errors import NotFoundError
from kubectl_dra.gcpause import gc_paused
from kubectl_dra.model.inventory import Inventory
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


def unknown_name(inventory: Inventory, instance_types: list[InstanceType], *, nodepools=(), overlays=(),
                 instance_type_names=()) -> NotFoundError | None:
    """The first filter flag that names something the input does not hold: an unknown name would
    filter everything away and read as "no rows", so it is "not found" (exit 3), naming what exists."""
    flags = [("NodePool", "--nodepool", nodepools, {p.name for p in inventory.all(NodePool)}),
             ("NodeOverlay", "--overlay", overlays, {o.name for o in inventory.all(NodeOverlay)}),
             ("instance type", "--instance-type", instance_type_names, {t.name for t in instance_types})]
    for what, flag, given, known in flags:
        missing = sorted(set(given) - known)
        if missing:
            names = ", ".join(sorted(known)) or "none"
            quoted = ", ".join(f'"{m}"' for m in missing)
            return NotFoundError(f"{flag}: {what} {quoted} not found (there are: {names})")
    return None
