"""``kubectl dra verify``: from the example's reports, from a local tree, and end to end with the agent."""

from __future__ import annotations

from pathlib import Path

import yaml

from kubectl_dra.kube.snapshot import load_snapshot
from kubectl_dra.model.registry import models

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster"
NODES = ROOT / "examples" / "nodes"


def rows(stdout: str) -> list[list[str]]:
    """The rows of the first table in ``stdout`` (up to a blank line or the prose below it)."""
    lines = stdout.split("\n\n")[0].splitlines()
    header = len(lines[0].split())
    return [line.split() for line in lines[1:] if len(line.split()) == header and not line.startswith(" ")]


def test_example_reports(dra):
    result = dra("verify", "--snapshot", str(EXAMPLE))
    assert result.exit_code == 1, result
    hugetlb = ["1073741824", "max", "RuntimeHugetlbDisabled"]  # containerd's default: info, still a match
    divergences, claims, notes = result.stdout.split("\n\n")
    expected = [
        ["worker-cpu-1", "default", "risk-engine", "engine", "hugetlb.2MB.max", *hugetlb],
        ["worker-cpu-1", "default", "risk-engine", "engine", "hugetlb.2MB.rsvd.max", *hugetlb],
        ["worker-gpu-1", "ml", "embedder", "reranker", "memory.max", "5905580032", "4294967296", "DRAAmountMissing"],
        ["worker-gpu-1", "ml", "trainer-0-h6h2p", "trainer", "cpu.weight", "532", "313", "WeightFormula"]]
    assert rows(divergences) == [row[1:] for row in expected]  # the node: -o wide
    wide = dra("verify", "--snapshot", str(EXAMPLE), "-o", "wide").stdout
    assert [row[:-1] for row in rows(wide)] == expected  # and the severity
    # the node's DRA state: only claims with findings, each finding then in words
    assert [(r[1], r[2], r[-1]) for r in rows(claims)] == [
        ("ingest-gateway-nic-v2tc9", "false", "PreparedNotReserved,ReservedNotPrepared"),
        ("llm-inference-7c9d8b6f5d-q8wzt-gpu-7xk2m", "true", "PreparedForGonePod"),
        ("trainer-gpus-hd295", "true", "CDIDeviceMissing")]
    assert sum(line.startswith("worker-gpu-1 ml/") for line in notes.splitlines()) == 5
    assert max(map(len, result.stdout.splitlines())) <= 120
    assert "2 nodes, 6 pods: 5 match, 1 diverged, 0 unknown; 5 claims compared with the node: 5 findings" \
        in result.stdout
    assert "Nodes without a report: worker-gpu-2 (4 pods not checked)" in result.stdout


def test_example_reports_json_and_filters(dra):
    doc = dra("verify", "--snapshot", str(EXAMPLE), "-o", "json").json()
    # one result document, as every command prints (apiVersion, kind, problems), whatever the node count
    assert (doc["apiVersion"], doc["kind"]) == ("kubectl-dra.io/v1alpha1", "NodeEnforcementReportList")
    assert doc["nodesWithoutReport"] == ["worker-gpu-2"] and doc["problems"] == []
    assert [i["metadata"]["name"] for i in doc["items"]] == ["worker-cpu-1", "worker-gpu-1"]
    one = dra("verify", "--snapshot", str(EXAMPLE), "--node", "worker-cpu-1", "-o", "json")
    assert one.exit_code == 0 and one.json()["kind"] == "NodeEnforcementReportList"
    assert [i["kind"] for i in one.json()["items"]] == ["NodeEnforcementReport"]
    assert one.json()["items"][0]["status"]["summary"] == {"pods": 1, "matched": 1, "diverged": 0, "unknown": 0, "claims": 0, "claimFindings": 0}
    narrowed = dra("verify", "--snapshot", str(EXAMPLE), "-n", "default")
    # risk-engine matches, but eval-server-0 runs on worker-gpu-2, which has no report: not all clear
    assert narrowed.exit_code == 4 and [r[-1] for r in rows(narrowed.stdout)] == ["RuntimeHugetlbDisabled"] * 2
    assert "Nodes without a report: worker-gpu-2 (1 pod not checked)" in narrowed.stdout
    assert "1 pod was not verified" in narrowed.stderr
    pod = dra("verify", "embedder", "-n", "ml", "--snapshot", str(EXAMPLE), "-o", "wide", "--no-headers")
    assert pod.exit_code == 1 and pod.stdout.splitlines()[0].split()[-1] == "error"
    # --no-headers output is for pipes: the summary is said on stderr
    assert "2 nodes, 1 pod: 0 match, 1 diverged" in pod.stderr and "diverged" not in pod.stdout


def test_stale_report_is_not_trusted(tmp_path, dra):
    objects = [o.raw for m in models() for o in load_snapshot(EXAMPLE).all(m)]
    for obj in objects:
        if obj["kind"] == "Pod" and obj["metadata"]["name"] == "embedder":
            reranker = next(c for c in obj["spec"]["containers"] if c["name"] == "reranker")
            reranker["resources"]["limits"]["memory"] = "6Gi"  # resized after the agent's scan
    (tmp_path / "all.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    result = dra("verify", "embedder", "-n", "ml", "--snapshot", str(tmp_path), "--node", "worker-gpu-1")
    # neither a divergence (1) nor all clear (0): the summary and the exit code both say "not trusted"
    assert result.exit_code == 4, result
    assert "DRAAmountMissing(stale)" in result.stdout
    assert "1 node, 1 pod: 0 match, 0 diverged, 0 unknown, 1 stale (the pod changed since the scan: not trusted)" \
        in result.stdout


def test_local_cgroup_root_mode(dra):
    result = dra("verify", "--snapshot", str(EXAMPLE), "--cgroup-root", str(NODES / "worker-gpu-1" / "sys" / "fs" / "cgroup"),
                 "--node", "worker-gpu-1", "-o", "json")
    assert result.exit_code == 1, result
    doc = result.json()["items"][0]
    assert doc["status"]["weightFormula"] == "quadratic"
    diverged = [p for p in doc["status"]["pods"] if p["verdict"] == "Diverged"]
    assert [(p["name"], d["container"], d["cause"]) for p in diverged for d in p["divergences"]] == [
        ("embedder", "reranker", "DRAAmountMissing")]


def test_no_reports_is_an_error(tmp_path, dra):
    (tmp_path / "pods.yaml").write_text((EXAMPLE / "workloads" / "embedder.yaml").read_text())
    result = dra("verify", "--snapshot", str(tmp_path))
    assert result.exit_code == 3
    assert "no NodeEnforcementReport found" in result.stderr
