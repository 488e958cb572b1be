"""The NodeOverlay feature gate off (Karpenter's default): the real controller, started with
NodeOverlay=false, reconciles a NodePool but never writes an overlay's status; `kubectl dra
overlays` must then say it has not been processed (gate unknown: OverlayNotReconciled, naming the
gate), and with --feature-gate off that Karpenter applies none of it (OverlayFeatureGateOff). A pod
that only an overlay's capacity could place gets no node from Karpenter, and explain pod with
--feature-gate off predicts none (with the gate on, it would predict one)."""

from __future__ import annotations

import yaml

import kwok
from clusterobjects import wait_for
from test_launch_oracle import _delete_pod, _karpenter_gave_up, pod
from test_overlay_oracle import _ready, node_pool, overlay


def test_with_the_gate_off_no_overlay_is_processed_and_kubectl_dra_says_so(dra, tmp_path):
    plane = kwok.prepared_plane(tmp_path / "plane")
    try:
        plane.request("POST", "/apis/karpenter.sh/v1alpha1/nodeoverlays", overlay("cheaper", 10, priceAdjustment="-10%"))
        plane.request("POST", "/apis/karpenter.sh/v1alpha1/nodeoverlays", overlay("gpus", 10, capacity={"example.com/gpu": "1"}))
        plane.request("POST", "/apis/karpenter.sh/v1/nodepools", node_pool("p"))
        proc = kwok.start(plane, tmp_path, gates="NodeOverlay=false")
        # Karpenter is running and has reconciled what was there before it
        wait_for("NodePool p Ready", lambda: proc.popen.poll() is not None or _ready(plane, "p"))
        assert proc.popen.poll() is None, plane.tail(proc)
        status = plane.request("GET", "/apis/karpenter.sh/v1alpha1/nodeoverlays/cheaper").get("status") or {}
        assert not status.get("conditions"), status  # the overlay controller does not run with the gate off

        catalog = tmp_path / "catalog.yaml"
        catalog.write_text(yaml.safe_dump(kwok.catalog(["p"])))
        kubeconfig = str(plane.kubeconfig(tmp_path / "kubeconfig"))
        unknown = dra("overlays", "--kubeconfig", kubeconfig, "--catalog", str(catalog), "-o", "json").json()
        [finding] = [f for f in unknown["findings"] if f["code"] == "OverlayNotReconciled"]
        assert "feature gate" in finding["message"]
        off = dra("overlays", "--kubeconfig", kubeconfig, "--catalog", str(catalog), "--feature-gate", "off",
                  "-o", "json").json()
        assert off["featureGate"] is False and "OverlayFeatureGateOff" in [f["code"] for f in off["findings"]]

        gpu_pod = pod({"cpu": "1", "example.com/gpu": "1"})
        gpu_pod["metadata"] = {"name": "gpu", "namespace": "default"}
        plane.request("POST", "/api/v1/namespaces/default/pods", gpu_pod)
        explain = ("explain", "pod", "gpu", "--kubeconfig", kubeconfig, "--catalog", str(catalog), "-o", "json")
        assert dra(*explain, "--feature-gate", "on").json()["karpenter"]["nodePool"] == "p"
        launch = dra(*explain, "--feature-gate", "off").json()["karpenter"]
        assert launch["nodePool"] is None, launch
        [p] = launch["nodePools"]
        assert p["rejected"][0]["reason"] == "example.com/gpu: needs 1, no such capacity", p
        assert wait_for("Karpenter's event on the pod", lambda: _karpenter_gave_up(plane, "gpu"), timeout=90)
        assert plane.request("GET", "/apis/karpenter.sh/v1/nodeclaims")["items"] == []
        _delete_pod(plane, "gpu")
    finally:
        plane.stop()
