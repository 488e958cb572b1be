"""Regenerate the example nodes' cgroup trees and the agent's reports (examples/nodes, examples/cluster/reports).

The trees are written from the prediction for the example pods, as a correct kubelet and runtime
would, then two things are planted:
- worker-gpu-1, pod ml/embedder, container reranker: memory.max lacks its DRA overhead
  (4Gi instead of 4Gi + perPod 1Gi + perContainer 512Mi): a real divergence;
- worker-gpu-1, pod ml/trainer-0-h6h2p: its container was started before the node's runc
  upgrade, so its cpu.weight uses the old linear formula: expected by design (WeightFormula).
The agent's report is then produced by scanning the tree, exactly as the DaemonSet would.
Run: .venv/bin/python scripts/make_example_nodes.py
"""

from __future__ import annotations

import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from cgroup_tree import build_tree, set_file  # noqa: E402

from kubectl_dra.cgroups import formulas as f  # noqa: E402
from kubectl_dra.cgroups.options import NodeOptions  # noqa: E402
from kubectl_dra.kube.snapshot import load_snapshot  # noqa: E402
from kubectl_dra.verify.crosscheck import pods_on  # noqa: E402
from node_agent.cgroupfs import CgroupFS  # noqa: E402
from node_agent.scan import scan  # noqa: E402

SCANNED_AT = datetime(2026, 11, 20, 9, 35, tzinfo=timezone.utc)
REPORTED = ("worker-gpu-1", "worker-cpu-1")  # worker-gpu-2 has no agent yet: verify lists it


def main() -> None:
    cluster = ROOT / "examples" / "cluster"
    inventory = load_snapshot(cluster)
    nodes_dir = ROOT / "examples" / "nodes"
    reports_dir = cluster / "reports"
    shutil.rmtree(nodes_dir, ignore_errors=True)
    shutil.rmtree(reports_dir, ignore_errors=True)
    reports_dir.mkdir(parents=True)
    for node in ("worker-gpu-1", "worker-gpu-2", "worker-cpu-1"):
        sys_root = nodes_dir / node / "sys"
        dirs = build_tree(sys_root, pods_on(inventory, node), NodeOptions())
        if node == "worker-gpu-1":
            set_file(dirs[("embedder", "reranker")], "memory.max", str(4 << 30))
            trainer = next(p for p in pods_on(inventory, node) if p.name.startswith("trainer-0"))
            shares = f.milli_cpu_to_shares(trainer.spec.containers[0].resources.requests["cpu"].milli_value())
            set_file(dirs[(trainer.name, "trainer")], "cpu.weight", str(f.weight_linear(shares)))
        if node in REPORTED:
            report = scan(node, inventory, CgroupFS(sys_root / "fs" / "cgroup"), {}, now=SCANNED_AT)
            document = report.model_dump(mode="json", by_alias=True)
            text = f"# The dra-node-agent's report for {node}, from scanning examples/nodes/{node}.\n"
            (reports_dir / f"{node}.yaml").write_text(text + yaml.safe_dump(document, sort_keys=False))
    print(f"wrote {nodes_dir} and {reports_dir}")


if __name__ == "__main__":
    main()
