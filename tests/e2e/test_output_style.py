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


# -- width and pipes (issue 23, item 17) ---------------------------------------------------------

DRAIN = str(Path(EXAMPLE).parent / "taint-rules" / "drain-worker-gpu-2.yaml")
EVERYTHING = str(Path(EXAMPLE).parent / "taint-rules" / "everything.yaml")
NODE_TREE = Path(EXAMPLE).parent / "nodes" / "worker-gpu-1"
DEFAULT_VIEWS = [  # every command's default view on the example cluster (before: up to 605 columns)
    ["claims", "-A"], ["explain", "claim", "shared-gpu", "-n", "ml"],
    ["explain", "claim", "trainer-gpus-hd295", "-n", "ml"], ["explain", "claim", "ingest-gateway-nic-v2tc9", "-n", "ml"],
    ["explain", "claim", "eval-replay-gpu", "-n", "default"], ["explain", "pod", "embedder", "-n", "ml"],
    ["explain", "pod", "eval-replay", "-n", "default"], ["explain", "pod", "trainer-0-h6h2p", "-n", "ml"],
    ["verify"],
    ["verify", "--node", "worker-gpu-1", "--cgroup-root", str(NODE_TREE / "sys/fs/cgroup"),
     "--kubelet-root", str(NODE_TREE / "var/lib/kubelet")],
    ["overlays"], ["taints"], ["taints", "--dry-run", "-f", DRAIN], ["taints", "--dry-run", "-f", EVERYTHING],
    ["devices"], ["devices", "--class", "gpu.example.com"],
]


@pytest.mark.parametrize("args", DEFAULT_VIEWS, ids=[" ".join(a[:4]) for a in DEFAULT_VIEWS])
def test_default_views_fit_what_a_person_scans(args, dra):
    """kubectl get's default views fit 120 columns; tables here stay within it, prose is wrapped to it."""
    result = dra(*args, "--snapshot", EXAMPLE)
    assert result.exit_code in (0, 1), result
    widest = max(result.stdout.splitlines(), key=len)
    assert len(widest) <= 120, widest


@pytest.mark.parametrize("args,wide_only", [
    (["claims", "-A"], ["RESERVED-FOR", "DRIVER", "FINDINGS"]),
    (["verify"], ["NODE", "SEVERITY", "PREPARED-FOR", "DEVICES"]),
    (["overlays"], ["CAPACITY", "SOURCE", "SETS"]),
    (["taints"], ["NODE", "TAINTS", "SOURCE"]),
])
def test_the_rest_is_in_wide(args, wide_only, dra):
    default = set(dra(*args, "--snapshot", EXAMPLE).stdout.split())
    wide = set(dra(*args, "-o", "wide", "--snapshot", EXAMPLE).stdout.split())
    assert not default & set(wide_only) and set(wide_only) <= wide


@pytest.mark.parametrize("args,prose", [
    (["verify"], ["2 nodes, 6 pods: 5 match", "Nodes without a report", "PreparedNotReserved (error):"]),
    (["verify", "--node", "worker-gpu-1"], ["1 node, 5 pods", "Node options:"]),
    (["overlays"], ["ERROR OverlayConflict:"]),
    (["taints"], ["Findings (1)", "WARNING DeviceUnhealthy:"]),
    (["taints", "--dry-run", "-f", DRAIN], ["Dry run of DeviceTaintRule", "ERROR DeviceTaintedNoExecute:"]),
])
def test_no_headers_output_is_rows_only(args, prose, dra):
    """--no-headers is for pipes: headings, findings in words and summaries leave stdout (to stderr,
    or, for verify's per-claim notes, dropped: the FINDINGS column names them)."""
    shown = dra(*args, "--snapshot", EXAMPLE)
    piped = dra(*args, "--snapshot", EXAMPLE, "--no-headers")
    assert piped.exit_code == shown.exit_code
    for text in prose:
        assert text in shown.stdout and text not in piped.stdout, text
    moved = [t for t in prose if "(error):" not in t]
    assert all(t in piped.stderr for t in moved), piped.stderr
    rows = [line.split() for line in piped.stdout.splitlines() if line]
    table_rows = [line.split() for line in shown.stdout.splitlines()]
    assert rows and all(row in table_rows for row in rows)  # every line is a row of the shown tables


def test_agent_scan_no_headers_output_is_rows_only():
    from click.testing import CliRunner

    from node_agent.__main__ import cli as agent_cli

    args = ["scan", "--once", "--snapshot", EXAMPLE, "--node", "worker-gpu-1", "--cgroup-root",
            str(NODE_TREE / "sys/fs/cgroup"), "--kubelet-root", str(NODE_TREE / "var/lib/kubelet")]
    shown, piped = CliRunner().invoke(agent_cli, args), CliRunner().invoke(agent_cli, [*args, "--no-headers"])
    assert "1 node, 5 pods" in shown.stdout and "Node options:" in shown.stdout
    assert "1 node, 5 pods" in piped.stderr and "Node options:" in piped.stderr
    assert "1 node" not in piped.stdout and "Node options" not in piped.stdout and "(error):" not in piped.stdout
    assert max(map(len, shown.stdout.splitlines())) <= 120
