"""`explain pod`'s Karpenter section when a read fails (the fake server, for injected faults only):
NodeOverlays that cannot be read are not "no overlays": a pod that only an overlay's capacity
places must not read as "Karpenter launches nothing" without saying what was missing, and the
result is partial (exit 4)."""

from __future__ import annotations

from pathlib import Path

import yaml

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "launch" / "cluster.yaml"


def _objects() -> tuple[list[dict], dict]:
    docs = list(yaml.safe_load_all(EXAMPLE.read_text()))
    catalog = next(d for d in docs if d["kind"] == "InstanceTypeCatalog")
    return [d for d in docs if d["kind"] != "InstanceTypeCatalog"], catalog


def test_unreadable_overlays_are_said_and_make_the_result_partial(make_apiserver, kubeconfig_for, dra, tmp_path):
    objects, catalog = _objects()
    server = make_apiserver(objects)
    catalog_file = tmp_path / "catalog.yaml"
    catalog_file.write_text(yaml.safe_dump(catalog))
    args = ("explain", "pod", "encoder", "-n", "media", "--kubeconfig", str(kubeconfig_for(server)),
            "--catalog", str(catalog_file), "-o", "json")
    server.requests.clear()
    readable = dra(*args)
    assert readable.exit_code == 0, readable
    assert readable.json()["karpenter"]["nodePool"] == "general"
    # the Nodes the scheduling read serve the Karpenter section too: one list, not two
    assert len([r for r in server.requests if r.resource == "nodes" and r.is_list]) == 1

    server.fail(403, resource="nodeoverlays")
    result = dra(*args)
    assert result.exit_code == 4, result
    launch = result.json()["karpenter"]
    assert launch["nodePool"] is None  # without the overlay's capacity nothing fits ...
    assert "NodeOverlays could not be read: capacity and prices without them" in launch["assumptions"]  # ... and why
    assert "nodeoverlays" in result.stderr.lower()
