"""Pods on one node, shaped like the API server returns them, for agent and verify tests."""

from __future__ import annotations

from builders import claim, reserved_pod
from podspec import ctr, entry

from kubectl_dra.model.registry import parse_object

NODE = "worker-1"


def agent_pod(name, containers, *, qos_uid, entries=(), plr=None, init=(), runtime="containerd", conditions=(),
              resource_version=None):
    """A running pod on NODE with container IDs, shaped like the API server returns it."""
    scheme = "containerd" if runtime == "containerd" else "cri-o"
    all_containers = [*init, *containers]
    statuses = [{"name": c["name"], "containerID": f"{scheme}://{(qos_uid.replace('-', '') + c['name'].encode().hex())[:64].ljust(64, '0')}",
                 "state": {"running": {}}} for c in containers]
    init_statuses = [{"name": c["name"], "containerID": f"{scheme}://{('9' * 8 + c['name'].encode().hex()).ljust(64, '0')[:64]}",
                      "state": {"running": {}} if c.get("restartPolicy") == "Always" else
                      {"terminated": {"exitCode": 0}}} for c in init]
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml", "uid": qos_uid},
           "spec": {"nodeName": NODE, "containers": containers, "initContainers": list(init),
                    "resourceClaims": [{"name": "x", "resourceClaimName": "x"}]},
           "status": {"phase": "Running", "containerStatuses": statuses, "initContainerStatuses": init_statuses,
                      "conditions": list(conditions),
                      "nodeAllocatableResourceClaimStatuses": list(entries)}}
    if plr:
        raw["spec"]["resources"] = plr
    if resource_version:
        raw["metadata"]["resourceVersion"] = resource_version
    assert len(all_containers) >= 1
    return parse_object(raw)


def both(cpu, mem):
    return {"cpu": str(cpu), "memory": mem}


def node_pods(runtime="containerd"):
    """Guaranteed, Burstable and BestEffort pods, with DRA mapping, overhead and hugepages."""
    return [
        agent_pod("guaranteed", [ctr("engine", {**both("1m", "1Gi"), "hugepages-2Mi": "4Mi"},
                                     {**both("1m", "1Gi"), "hugepages-2Mi": "4Mi"}, claims=["x"])],
                  qos_uid="11111111-1111-1111-1111-111111111111", entries=[entry("x", ["engine"], {"cpu": "10"})],
                  runtime=runtime),
        agent_pod("burstable", [ctr("encoder", both("2", "8Gi"), both("4", "8Gi"), claims=["x"]),
                                ctr("reranker", both("1", "4Gi"), both("2", "4Gi"), claims=["x"])],
                  qos_uid="22222222-2222-2222-2222-222222222222",
                  entries=[entry("x", ["encoder", "reranker"], overhead={"memory": ("1Gi", "512Mi")})],
                  init=[ctr("fetch", both("500m", "256Mi")), ctr("proxy", both("100m", "64Mi"), sidecar=True)],
                  runtime=runtime),
        agent_pod("besteffort", [ctr("shell", claims=["x"])], qos_uid="33333333-3333-3333-3333-333333333333",
                  entries=[entry("x", ["shell"], overhead={"memory": ("1Gi", None)})], runtime=runtime),
        agent_pod("pod-level", [ctr("a", both("1", "1Gi")), ctr("b", both("1", "1Gi"), both("2", "2Gi"), claims=["x"])],
                  qos_uid="44444444-4444-4444-4444-444444444444", plr={"limits": both("6", "8Gi")},
                  entries=[entry("x", ["b"], {"memory": "1Gi"})], runtime=runtime),
    ]


NODE_OBJECT = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "uid": "0e0e0e0e-0000-4000-8000-000000000001"},
               "status": {"nodeInfo": {"containerRuntimeVersion": "containerd://2.1.0", "kubeletVersion": "v1.37.0"},
                          # the kubelet's gate is on (alpha, off by default): it applies DRA to cgroups
                          "declaredFeatures": ["DRANodeAllocatableResources"]}}


def node_claim(name: str, pods) -> dict:
    """A claim allocated on NODE (device gpu-NAME) and reserved for ``pods``."""
    return claim(name, devices=[("gpu.example.com", NODE, f"gpu-{name}")],
                 reserved_for=[reserved_pod(p.raw) for p in pods])
