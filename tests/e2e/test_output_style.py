"""How printed text reads: counted nouns agree with their number, booleans are true/false as in
YAML, and one row of quantities uses one unit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from builders import claim, pod, reserved_pod, resource_slice

from kubectl_dra.quantity import Quantity, in_one_unit
from kubectl_dra.text import plural

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "cluster")


@pytest.mark.parametrize("n,word,expected", [
    (0, "pod", "0 pods"), (1, "pod", "1 pod"), (2, "pod", "2 pods"), (1, "instance type", "1 instance type"),
    (3, "entry", "3 entries"), (2, "match", "2 matches"), (2, "NodePool", "2 NodePools"),
])
def test_plural(n, word, expected):
    assert plural(n, word) == expected


@pytest.mark.parametrize("values,expected", [
    (["26", "47810m", "21810m"], ["26000m", "47810m", "21810m"]),
    (["203264Mi", "9728Mi", "393964568Ki"], ["208142336Ki", "9961472Ki", "393964568Ki"]),
    (["1Gi", "8Gi", "7Gi"], ["1Gi", "8Gi", "7Gi"]),
    (["14Gi", "1536Mi"], ["14336Mi", "1536Mi"]),
    (["0", "192188443443"], ["0", "192188443443"]),
    (["5", "110", "105"], ["5", "110", "105"]),
    (["2000", "4k"], ["2k", "4k"]),
    (["1.5", "2"], ["1500m", "2000m"]),
    (["100n", "1"], ["100n", "1000000000n"]),
    (["-1Gi", "2Gi"], ["-1Gi", "2Gi"]),
    (["1536", "1Ki"], ["1536", "1024"]),  # not a whole number of Ki: bytes
])
def test_in_one_unit_is_exact(values, expected):
    quantities = [Quantity.parse(v) for v in values]
    shown = in_one_unit(quantities)
    assert shown == expected
    assert [Quantity.parse(s) for s in shown] == quantities  # nothing rounded


def test_explain_node_uses_one_unit_per_row(dra):
    result = dra("explain", "node", "worker-gpu-1", "--snapshot", EXAMPLE)
    rows = dict(re.findall(r"^  ([a-z0-9.-]+): (.*)$", result.stdout, re.M))
    assert rows["cpu"] == "26000m / 47810m / 21810m"
    assert rows["memory"] == "208142336Ki (DRA 9961472Ki) / 393964568Ki / 185822232Ki"
    for row in rows.values():
        units = {re.sub(r"^-?[0-9]+", "", v) for v in re.findall(r"-?[0-9]+[A-Za-z]*", row) if v != "0"}
        assert len(units) <= 1, row


def test_attributes_print_booleans_as_true_false_and_quote_spaces(dra):
    result = dra("explain", "claim", "ingest-gateway-nic-v2tc9", "-n", "ml", "--snapshot", EXAMPLE)
    block = result.stdout.split("attributes:", 1)[1].split("\n    network:")[0].split("\n    condition")[0]
    line = " ".join(block.split())  # the list, wrapped below 120 columns
    assert "dra.net/rdma=false" in line and "dra.net/sriov=false" in line
    assert "True" not in line and "False" not in line
    assert 'dra.net/pciDevice="Elastic Network Adapter (ENA)"' in line and 'dra.net/alias=""' in line


def test_counts_agree_with_their_nouns(dra, tmp_path):
    one = dra("verify", "--snapshot", EXAMPLE, "--node", "worker-cpu-1")
    assert "1 node, 1 pod: 1 match, 0 diverged, 0 unknown" in one.stdout
    slices = dra("explain", "node", "worker-cpu-1", "--snapshot", EXAMPLE).stdout
    assert "2 devices" in slices
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
    p = pod("solo", claims={"g": "c"})
    objects = [node, p, resource_slice("worker-1", "gpu.example.com", ["gpu-0"]),
               claim("c", devices=[("gpu.example.com", "worker-1", "gpu-0")], reserved_for=[reserved_pod(p)])]
    (tmp_path / "o.yaml").write_text(yaml.safe_dump_all(objects))
    lone = dra("explain", "node", "worker-1", "--snapshot", str(tmp_path)).stdout
    assert re.search(r"pool worker-1  1 device$", lone, re.M), lone
