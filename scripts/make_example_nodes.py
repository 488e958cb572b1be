"""Regenerate the example nodes' cgroup trees and the agent's reports (examples/nodes, examples/cluster/reports).

The trees are written from the prediction for the example pods, as a correct kubelet and runtime
would, then two things are planted:
- worker-gpu-1, pod ml/embedder, container reranker: memory.max lacks its DRA overhead
  (4Gi instead of 4Gi + perPod 1Gi + perContainer 512Mi): a real divergence;
- worker-gpu-1, pod ml/trainer-0-h6h2p: its container was started before the node's runc
  upgrade, so its cpu.weight uses the old linear formula: expected by design (WeightFormula).
worker-gpu-1 also gets the kubelet's DRA checkpoint (var/lib/kubelet/dra_manager_state, in the
kubelet's exact format) and the drivers' CDI specs (etc/cdi, var/run/cdi), with three things planted:
- the trainer claim's CDI spec is gone from /var/run/cdi (a reboot emptied it): CDIDeviceMissing;
- ml/ingest-gateway-nic-v2tc9 was recreated under its running pod: the node still holds the old
  claim (PreparedNotReserved) and never prepared the new one (ReservedNotPrepared);
- the previous llm-inference replica's claim is still prepared for that deleted pod (PreparedForGonePod).
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
from kubelet_files import write_cdi_spec, write_checkpoint  # noqa: E402

from kubectl_dra.cgroups import formulas as f  # noqa: E402
from kubectl_dra.cgroups.options import NodeOptions  # noqa: E402
from kubectl_dra.kube.snapshot import load_snapshot  # noqa: E402
from kubectl_dra.verify.crosscheck import pods_on  # noqa: E402
from kubectl_dra.nodescan.cgroupfs import CgroupFS  # noqa: E402
from kubectl_dra.nodescan.nodedra import read_node_dra  # noqa: E402
from node_agent.podresources import list_pod_resources  # noqa: E402
from kubectl_dra.nodescan.scan import scan  # noqa: E402
from kubectl_dra.nodescan.node import read_claims  # noqa: E402
from kubectl_dra.kube.snapshot import SnapshotSource  # noqa: E402
from kubectl_dra.model.claim import ResourceClaim  # noqa: E402
from kubectl_dra.nodestate.reconcile import claim_keys_to_read  # noqa: E402

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
        node_dra = claims = None
        if node == "worker-gpu-1":
            kubelet_root, cdi_dirs = write_dra_state(nodes_dir / node, inventory)
            node_dra = read_node_dra(str(kubelet_root), cdi_dirs, list_pod_resources=list_pod_resources)
            claims, _ = read_claims(SnapshotSource(cluster), claim_keys_to_read(pods_on(inventory, node), node_dra))
        if node in REPORTED:
            report = scan(node, inventory, CgroupFS(sys_root / "fs" / "cgroup"), {}, now=SCANNED_AT,
                          node_dra=node_dra, claims=claims)
            document = report.model_dump(mode="json", by_alias=True)
            text = f"# The dra-node-agent's report for {node}, from scanning examples/nodes/{node}.\n"
            # paths as the DaemonSet sees the node's files: under /host
            body = yaml.safe_dump(document, sort_keys=False).replace(str(nodes_dir / node), "/host")
            (reports_dir / f"{node}.yaml").write_text(text + body)
    print(f"wrote {nodes_dir} and {reports_dir}")


GPU_KIND = "k8s.gpu.example.com/gpu"  # dra-example-driver's CDI kind: one spec file per claim, a device per GPU


def _state(claim: ResourceClaim, pod_uids, uid: str | None = None) -> dict:
    devices: dict[str, list] = {}
    for r in claim.status.allocation.devices.results:
        cdi = [f"{GPU_KIND}={claim.uid}-{r.device}"] if r.driver == "gpu.example.com" else []
        devices.setdefault(r.driver, []).append({"PoolName": r.pool, "DeviceName": r.device, "ShareID": None,
                                                 "RequestNames": [r.request], "CDIDeviceIDs": cdi})
    return {"ClaimUID": uid or claim.uid, "ClaimName": claim.name, "Namespace": claim.namespace,
            "PodUIDs": {u: {} for u in pod_uids}, "DriverState": {d: {"Devices": v} for d, v in devices.items()}}


def write_dra_state(root: Path, inventory) -> tuple[Path, tuple[str, ...]]:
    """worker-gpu-1's kubelet checkpoint and CDI specs, with the three plants of the docstring."""
    pods = {p.name: p for p in pods_on(inventory, "worker-gpu-1")}
    claim = {c.name: c for c in inventory.all(ResourceClaim)}
    llm, embedder = claim["llm-inference-7c9d8b6f5d-r772r-gpu-2nqcv"], claim["embedder-gpu-qfx82"]
    trainer, nic = claim["trainer-gpus-hd295"], claim["ingest-gateway-nic-v2tc9"]
    gone = llm.model_copy()
    object.__setattr__(gone, "metadata", gone.metadata.model_copy(update={"name": "llm-inference-7c9d8b6f5d-q8wzt-gpu-7xk2m"}))
    states = [
        _state(llm, [pods["llm-inference-7c9d8b6f5d-r772r"].uid]),
        _state(embedder, [pods["embedder"].uid]),
        _state(trainer, [pods["trainer-0-h6h2p"].uid, pods["trainer-1-gl2xk"].uid]),
        _state(nic, [pods["ingest-gateway"].uid], uid="5f0c9a51-3b8e-4d2a-9c61-0e7d2b4a8f13"),  # the old claim
        _state(gone, ["0e5a7c3d-9b1f-4e62-8d4a-7f2c6b1e9a05"], uid="c2d7e8f9-1a3b-4c5d-8e6f-7a8b9c0d1e2f"),
    ]
    kubelet = root / "var" / "lib" / "kubelet"
    write_checkpoint(kubelet, states)
    static, dynamic = root / "etc" / "cdi", root / "var" / "run" / "cdi"
    static.mkdir(parents=True, exist_ok=True)
    for c in (llm, embedder):  # the trainer claim's spec is the one a reboot took
        write_cdi_spec(dynamic, f"k8s.gpu.example.com-gpu_{c.uid}.json", GPU_KIND,
                       [f"{c.uid}-{r.device}" for r in c.status.allocation.devices.results])
    write_cdi_spec(dynamic, "k8s.gpu.example.com-gpu_c2d7e8f9-1a3b-4c5d-8e6f-7a8b9c0d1e2f.json", GPU_KIND,
                   ["c2d7e8f9-1a3b-4c5d-8e6f-7a8b9c0d1e2f-gpu-0"])
    return kubelet, (str(static), str(dynamic))


if __name__ == "__main__":
    main()
