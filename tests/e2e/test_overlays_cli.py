"""``kubectl dra overlays`` and ``explain node`` through the CLI, on the example cluster and live."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from kubectl_dra.kube.snapshot import load_snapshot
from kubectl_dra.model.registry import models

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster"


def table_rows(stdout: str) -> list[list[str]]:
    block = stdout.split("\n\n")[0]
    return [line.split() for line in block.splitlines()[1:]]


def test_overlays_table_names_provenance_and_both_conflicting_overlays(dra):
    result = dra("overlays", "--snapshot", str(EXAMPLE))
    assert result.exit_code == 0, result
    rows = table_rows(result.stdout)
    assert ["gpu", "g6e.12xlarge", "on-demand", "us-west-2a", "10.49264->9.443376", "gpu-savings-plan"] in rows
    assert ["gpu", "g6e.24xlarge", "on-demand", "us-west-2b", "15.06559->13.559031", "gpu-savings-plan"] in rows
    assert ["default", "c7i.16xlarge", "spot", "us-west-2a", "1.1424", "<none>"] in rows
    wide = table_rows(dra("overlays", "--snapshot", str(EXAMPLE), "-o", "wide").stdout)  # capacity: -o wide
    assert ["default", "c7i.16xlarge", "spot", "us-west-2a", "1.1424", "<none>",
            "+hugepages-2Mi=8Gi(cpu-hugepages)"] in [r[:7] for r in wide]
    summary = {line.split()[0]: line.split() for line in result.stdout.split("\n\n")[1].splitlines()[1:]}
    assert summary["gpu-negotiated-rate"][1:5] == ["10", "Conflict", "1", "gpu-savings-plan"]
    assert summary["gpu-savings-plan"][1:5] == ["10", "Ready", "2", "gpu-negotiated-rate"]
    assert "OverlayConflict: NodeOverlay gpu-negotiated-rate (weight 10) conflicts with gpu-savings-plan" in result.stdout


def test_overlays_filters_and_json_contract(dra):
    doc = dra("overlays", "--snapshot", str(EXAMPLE), "-o", "json").json()
    assert (doc["apiVersion"], doc["kind"]) == ("kubectl-dra.io/v1alpha1", "OverlayExplanation")
    overlay = next(o for o in doc["overlays"] if o["name"] == "gpu-negotiated-rate")
    assert {"name", "weight", "status", "message", "conflictsWith", "matches"} <= set(overlay)
    assert overlay["conflictsWith"] == ["gpu-savings-plan"]
    it = doc["instanceTypes"][0]
    assert {"nodePool", "name", "offerings", "capacity", "capacityOverlays", "resourceSlices"} <= set(it)
    assert {"zone", "capacityType", "basePrice", "price", "overlay"} <= set(it["offerings"][0])
    narrowed = dra("overlays", "--snapshot", str(EXAMPLE), "--nodepool", "gpu", "--instance-type", "g6e.24xlarge",
                   "--overlay", "gpu-savings-plan", "--no-headers")
    rows = table_rows(narrowed.stdout)
    assert {(r[0], r[1]) for r in rows} == {("gpu", "g6e.24xlarge")}
    assert [line.split()[0] for line in narrowed.stdout.split("\n\n")[1].splitlines()] == ["gpu-savings-plan"]


def test_feature_gate_off_applies_nothing(dra):
    on = dra("overlays", "--snapshot", str(EXAMPLE))
    off = dra("overlays", "--snapshot", str(EXAMPLE), "--feature-gate", "off")
    # a gate that is off is a setting, not an error, and the snapshot reads in full: exit 0, as with it on
    assert (on.exit_code, off.exit_code) == (0, 0), off
    # the same offerings, each at the provider's price (the left of "base->overlaid" with the gate on)
    # and with no overlay applied
    rows_on, rows_off = table_rows(on.stdout), table_rows(off.stdout)
    assert any("->" in row[4] for row in rows_on)  # else this test would prove nothing
    assert rows_off == [row[:4] + [row[4].split("->")[0], "<none>"] for row in rows_on]
    # ... and that price is the catalog's own for the offering
    catalog = yaml.safe_load((EXAMPLE / "karpenter" / "instance-types.yaml").read_text())["instanceTypes"]
    prices = {(it["name"], o["capacityType"], o["zone"]): o["price"] for it in catalog for o in it["offerings"]}
    assert [float(row[4]) for row in rows_off] == [prices[(row[1], row[2], row[3])] for row in rows_off]
    # the warning counts the NodeOverlays the snapshot holds, none of which applies
    overlays = load_snapshot(EXAMPLE).of_kind("NodeOverlay")
    assert re.findall(r"^WARNING OverlayFeatureGateOff: .* none of the (\d+) NodeOverlays", off.stdout, re.M) == \
        [str(len(overlays))]
    assert "OverlayFeatureGateOff" not in on.stdout


def test_catalog_flag_and_bad_catalog(tmp_path, dra):
    catalog = yaml.safe_load((EXAMPLE / "karpenter" / "instance-types.yaml").read_text())
    catalog["instanceTypes"] = [t for t in catalog["instanceTypes"] if t["name"] == "g6e.12xlarge"]
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(catalog))
    result = dra("overlays", "--snapshot", str(EXAMPLE), "--catalog", str(path), "-o", "json")
    assert {it["name"] for it in result.json()["instanceTypes"]} == {"g6e.12xlarge"}
    catalog["instanceTypes"][0]["capacity"]["memory"] = "plenty"
    path.write_text(yaml.safe_dump(catalog))
    bad = dra("overlays", "--snapshot", str(EXAMPLE), "--catalog", str(path))
    # a bad entry costs that instance type, not the catalog: named, partial (issue 23)
    assert bad.exit_code == 4 and "g6e.12xlarge" in bad.stderr and "plenty" in bad.stderr
    assert "left out" in bad.stderr and "No instance types." in bad.stdout


def test_explain_node_totals_overlays_and_prediction_mismatch(tmp_path, dra):
    doc = dra("explain", "node", "worker-cpu-1", "--snapshot", str(EXAMPLE), "-o", "json").json()
    assert doc["kind"] == "NodeExplanation" and doc["node"]["nodePool"] == "default"
    assert doc["requested"]["cpu"] == "10001m" and doc["dra"] == {"cpu": "10"}
    assert [o["name"] for o in doc["overlays"]] == ["cpu-hugepages"]
    assert doc["claims"] == [{"namespace": "default", "name": "risk-engine-cpus", "devices": [
        "dra.cpu/worker-cpu-1/cpudevnuma000"], "pods": ["default/risk-engine"]}]
    assert doc["findings"] == []
    objects = [o.raw for m in models() for o in load_snapshot(EXAMPLE).all(m)]
    for obj in objects:
        if obj["kind"] == "Node" and obj["metadata"]["name"] == "worker-cpu-1":
            obj["status"]["capacity"].pop("hugepages-2Mi")  # the launch template forgot the huge pages
    (tmp_path / "all.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    (tmp_path / "catalog.yaml").write_text((EXAMPLE / "karpenter" / "instance-types.yaml").read_text())
    doc = dra("explain", "node", "worker-cpu-1", "--snapshot", str(tmp_path), "-o", "json").json()
    [finding] = doc["findings"]
    assert finding["code"] == "OverlayPredictionMismatch"
    assert "cpu-hugepages promised hugepages-2Mi=8Gi" in finding["message"]
