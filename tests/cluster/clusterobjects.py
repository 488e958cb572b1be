"""What the control-plane tests build again and again: a Ready node without a kubelet, a driver's
DeviceClass, a poll, and the wait for the scheduler's decision on a pod."""

from __future__ import annotations

import time

STAMP = "2026-11-20T08:00:00Z"
# a second scheduler profile of the full cluster whose DynamicResources filter gives up fast
# (test_filter_timeout.py)
SHORT_FILTER = {"schedulerName": "dra-short-filter", "pluginConfig": [{"name": "DynamicResources", "args": {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "DynamicResourcesArgs", "filterTimeout": "100ms"}}]}


def ready_node(name: str, capacity: dict | None = None, **status) -> dict:
    """A Node object as a kubelet would have registered it, Ready (the loader lifts the not-ready
    taint admission adds); ``status`` adds fields such as declaredFeatures."""
    capacity = capacity or {"cpu": "64", "memory": "256Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
            "status": {"capacity": dict(capacity), "allocatable": dict(capacity),
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "lastHeartbeatTime": STAMP, "lastTransitionTime": STAMP}],
                       "nodeInfo": {"kubeletVersion": "v1.37.2", "containerRuntimeVersion": "containerd://2.1.0",
                                    "architecture": "amd64", "operatingSystem": "linux"}, **status}}


def wait_for(what: str, check, timeout: float = 60.0, every: float = 0.3):
    """``check()``'s first truthy result, or an AssertionError naming what did not happen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


def driver_class(driver: str) -> dict:
    """A DeviceClass named after its driver, selecting every device the driver publishes."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}


def scheduled_false(pod: dict) -> dict | None:
    """The pod's PodScheduled=False condition: the scheduler could not place it (None otherwise)."""
    for condition in pod.get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return condition
    return None


def settle(plane, namespace: str, name: str, timeout: float = 45.0) -> dict:
    """The pod once the scheduler decided: bound, or PodScheduled False."""
    def decided():
        pod = plane.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
        return pod if pod["spec"].get("nodeName") or scheduled_false(pod) else None
    return wait_for(f"pod {namespace}/{name} to be bound or unschedulable", decided, timeout=timeout, every=0.1)
