"""A DRA pod with Karpenter's DRA simulation on (IGNORE_DRA_REQUESTS=false) and dra-kwok-driver
publishing devices on the nodes Karpenter's kwok provider makes (docs/kubernetes/nodeoverlay.md §8).

Karpenter launches a kwok node for a plain pod; the driver publishes two GPUs on it; a pod claiming
one GPU stays Pending (the node is never Ready, so kube-scheduler will not bind it). Karpenter then
neither uses those devices (the node is not initialized, so its slices do not count) nor launches a
node (the kwok provider describes no devices for its instance types): its event says
"no instance type can satisfy the allocation". kubectl-dra cannot read a provider's device
templates, so with --karpenter-ignore-dra-requests false it says "cannot tell" and no finding;
without the flag it answers for Karpenter's default and says it assumed it."""

from __future__ import annotations

import yaml

import kwok
from clusterobjects import wait_for
from test_launch_oracle import _karpenter_gave_up, pod, pool
from test_overlay_oracle import _ready

TYPE = "c-4x-amd64-linux"


def test_a_dra_pod_with_the_simulation_on(dra, tmp_path):
    plane = kwok.prepared_plane(tmp_path / "plane")
    try:
        plane.request("POST", "/apis/test.karpenter.sh/v1alpha1/draconfigs", {
            "apiVersion": "test.karpenter.sh/v1alpha1", "kind": "DRAConfig", "metadata": {"name": "gpus"},
            "spec": {"driver": "gpu.example.com", "pools": [{
                "name": "gpus", "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [TYPE]}]}],
                "resourceSlices": [{"devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}]}]}})
        plane.request("POST", "/apis/karpenter.sh/v1/nodepools",
                      pool("p", requirements=[{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [TYPE]}]))
        proc = kwok.start(plane, tmp_path, IGNORE_DRA_REQUESTS="false")
        wait_for("NodePool p Ready", lambda: proc.popen.poll() is not None or _ready(plane, "p"))
        warm = pod({"cpu": "1"})
        warm["metadata"] = {"name": "warm", "namespace": "default"}
        plane.request("POST", "/api/v1/namespaces/default/pods", warm)
        node = wait_for("a kwok node", lambda: plane.request("GET", "/api/v1/nodes")["items"], timeout=90)[0]
        kwok.start_driver(plane, tmp_path)
        wait_for("the driver's slice", lambda: plane.request("GET", "/apis/resource.k8s.io/v1/resourceslices")["items"], timeout=90)
        plane.request("POST", "/apis/resource.k8s.io/v1/deviceclasses",
                      {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
                       "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}})
        plane.request("POST", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
                      {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "one", "namespace": "default"},
                       "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}})
        trainer = pod({"cpu": "1"})
        trainer["metadata"] = {"name": "trainer", "namespace": "default"}
        trainer["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "one"}]
        trainer["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
        plane.request("POST", "/api/v1/namespaces/default/pods", trainer)
        event = wait_for("Karpenter's event", lambda: _karpenter_gave_up(plane, "trainer"), timeout=120)
        assert event == "Failed to schedule pod, allocating dynamic resources, no instance type can satisfy the allocation"
        assert len(plane.request("GET", "/apis/karpenter.sh/v1/nodeclaims")["items"]) == 1  # the plain pod's only

        catalog = tmp_path / "catalog.yaml"
        catalog.write_text(yaml.safe_dump(kwok.catalog(["p"])))
        args = ("explain", "pod", "trainer", "--kubeconfig", str(plane.kubeconfig(tmp_path / "kc")),
                "--catalog", str(catalog), "-o", "json")
        told = dra(*args, "--karpenter-ignore-dra-requests", "false").json()
        assert told["karpenter"]["known"] is False and told["karpenter"]["message"].startswith("cannot tell")
        assert "KarpenterLaunchesNothing" not in [f["code"] for f in told["findings"]]
        # the devices are there and free: the allocator would take one on the kwok node, were it Ready
        assert told["allocation"]["feasibleNodes"] == [node["metadata"]["name"]]
        assumed = dra(*args).json()["karpenter"]
        assert assumed["assumptions"] == ["Karpenter's IGNORE_DRA_REQUESTS at its default, true"], assumed
    finally:
        plane.stop()
