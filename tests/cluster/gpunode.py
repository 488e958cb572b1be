"""A GPU node as the agent sees it, without a kubelet: a Ready Node, pods bound to it, one
allocated claim per pod reserved for it, and the node's files (cgroup tree, DRA checkpoint) as a
kubelet would leave them. The agent's cluster tests and ``scripts/bench_agents.py`` share it."""

from __future__ import annotations

import shutil
from pathlib import Path

from builders import claim, pod, reserved_pod
from cgroup_tree import build_tree
from clusterobjects import ready_node
from kubelet_files import claim_state, write_checkpoint

from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.model.registry import parse_object


def gpu_node_objects(node: str, namespace: str, pods: int) -> list[dict]:
    """The Node, its pods (one running container each, with a container ID) and one claim per
    pod (device gpu-J of the node's pool), labelled ``bench-node=NODE``."""
    objects = [ready_node(node, declaredFeatures=["DRANodeAllocatableResources"])]
    for j in range(pods):
        p = pod(f"{node}-p{j}", namespace, node=node, claims={"gpu": f"{node}-c{j}"}, labels={"bench-node": node})
        container = p["spec"]["containers"][0]
        container["resources"].update({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}})
        cid = (p["metadata"]["uid"].replace("-", "") * 2)[:64]
        p["status"]["containerStatuses"] = [{"name": "main", "containerID": f"containerd://{cid}", "ready": True,
                                             "restartCount": 0, "image": "registry.example/app:1", "imageID": "",
                                             "state": {"running": {"startedAt": "2026-11-20T08:00:00Z"}}}]
        objects.append(p)
        objects.append(claim(f"{node}-c{j}", namespace, devices=[("gpu.example.com", node, f"gpu-{j}")], node=node,
                             reserved_for=[reserved_pod(p)], labels={"bench-node": node}))
    return objects


def write_node_files(root: Path, pods: list[dict], claims: list[dict]) -> None:
    """The node's cgroup tree (``root/fs``) and DRA checkpoint (``root/kubelet``) for the pods and
    claims as the API server holds them."""
    shutil.rmtree(root / "fs", ignore_errors=True)
    build_tree(root, [parse_object({"apiVersion": "v1", "kind": "Pod", **p}) for p in pods], NodeOptions())
    write_checkpoint(root / "kubelet",
                     [claim_state(c, [r["uid"] for r in c["status"].get("reservedFor", [])]) for c in claims])
