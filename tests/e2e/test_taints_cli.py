"""kubectl dra taints on the example cluster: the tainted and the unhealthy device, a dry run of a
maintenance rule and of the empty-selector rule of kubernetes#141422, the JSON contract, bad input."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster"
RULES = ROOT / "examples" / "taint-rules"
OUTCOMES = {"Evicted", "EvictionPending", "WouldEvict", "Tolerated", "BlocksNewAllocations"}


def contract(doc: dict) -> None:
    assert doc["kind"] == "TaintExplanation" and doc["apiVersion"] == "kubectl-dra.io/v1alpha1"
    for device in doc["devices"]:
        assert set(device) >= {"device", "node", "taints", "consumers"} and device["device"].count("/") == 2
        for taint in device["taints"]:
            assert set(taint) >= {"key", "value", "effect", "timeAdded", "source"}
            assert taint["source"] == "slice" or taint["source"].startswith("rule/")
        for consumer in device["consumers"]:
            assert set(consumer) >= {"claim", "pods", "outcome"} and consumer["outcome"] in OUTCOMES


def test_the_example_clusters_tainted_and_unhealthy_devices(dra):
    result = dra("taints", "--snapshot", str(EXAMPLE), "-o", "json")
    assert result.exit_code == 0, result  # nothing is evicted
    doc = result.json()
    contract(doc)
    assert doc["dryRun"] is False
    (device,) = doc["devices"]
    assert device["device"] == "gpu.example.com/worker-gpu-2/gpu-3" and device["node"] == "worker-gpu-2"
    assert device["taints"] == [{"key": "gpu.example.com/unhealthy", "value": "ecc-errors", "effect": "NoSchedule",
                                 "timeAdded": "2026-11-20T09:10:00Z", "source": "slice"}]
    assert device["consumers"] == []  # free: new allocations avoid it (see explain pod batch-embed)
    (unhealthy,) = [f for f in doc["findings"] if f["code"] == "DeviceUnhealthy"]
    assert "llm-inference-7c9d8b6f5d-r772r" in unhealthy["message"] and "XID 79" in unhealthy["message"]
    table = dra("taints", "--snapshot", str(EXAMPLE)).stdout.splitlines()
    assert table[0].split() == ["DEVICE", "EFFECT", "CLAIM", "PODS", "OUTCOME"]
    assert table[1].split() == ["gpu.example.com/worker-gpu-2/gpu-3", "NoSchedule", "<none>", "0", "-"]
    wide = dra("taints", "--snapshot", str(EXAMPLE), "-o", "wide").stdout.splitlines()  # the taint in full
    assert wide[0].split()[:6] == ["DEVICE", "NODE", "EFFECT", "TAINTS", "CLAIM", "PODS"]
    assert wide[1].split()[:6] == ["gpu.example.com/worker-gpu-2/gpu-3", "worker-gpu-2", "NoSchedule",
                                   "gpu.example.com/unhealthy=ecc-errors:NoSchedule", "<none>", "<none>"]


def test_dry_run_of_a_maintenance_rule(dra):
    result = dra("taints", "--dry-run", "-f", str(RULES / "drain-worker-gpu-2.yaml"), "--snapshot", str(EXAMPLE),
                 "-o", "json")
    assert result.exit_code == 1, result  # pods would be evicted
    doc = result.json()
    contract(doc)
    assert doc["dryRun"] is True and doc["rule"] == "drain-worker-gpu-2"
    evicted = {c["claim"]: sorted(c["pods"]) for d in doc["devices"] for c in d["consumers"] if c["outcome"] == "WouldEvict"}
    assert evicted == {"ml/shared-gpu": ["ml/notebook-alice", "ml/notebook-bob"],
                       "default/eval-gpu": ["default/eval-nightly-20261119-pdb2j", "default/eval-server-0"]}
    assert {d["device"] for d in doc["devices"]} == {f"gpu.example.com/worker-gpu-2/gpu-{i}" for i in range(4)}
    # debug-shell references shared-gpu but is not reserved: the controller does not evict it
    assert "ml/debug-shell" not in str(evicted)
    text = dra("taints", "--dry-run", "-f", str(RULES / "drain-worker-gpu-2.yaml"), "--snapshot", str(EXAMPLE)).stdout
    assert text.startswith("Dry run of DeviceTaintRule drain-worker-gpu-2: nothing was applied")


def test_dry_run_of_an_empty_selector_is_an_error_with_the_pods_at_stake(dra):
    result = dra("taints", "--dry-run", "-f", str(RULES / "everything.yaml"), "--snapshot", str(EXAMPLE), "-o", "json")
    assert result.exit_code == 1
    (finding,) = [f for f in result.json()["findings"] if f["code"] == "DeviceTaintRuleTooBroad"]
    at_stake = {p for d in result.json()["devices"] for c in d["consumers"] for p in c["pods"]}
    assert finding["severity"] == "error" and f"puts {len(at_stake)} pods at stake" in finding["message"]
    assert len(at_stake) >= 8 and "kubernetes#141422" in finding["message"]


def test_bad_input(dra, tmp_path):
    no_f = dra("taints", "--dry-run", "--snapshot", str(EXAMPLE))
    assert no_f.exit_code == 2 and "--dry-run needs -f" in no_f.stderr
    apply = dra("taints", "-f", str(RULES / "everything.yaml"), "--snapshot", str(EXAMPLE))
    assert apply.exit_code == 2 and "never applies a rule" in apply.stderr
    (tmp_path / "claim.yaml").write_text((EXAMPLE / "workloads" / "spare-gpu.yaml").read_text())
    wrong = dra("taints", "--dry-run", "-f", str(tmp_path / "claim.yaml"), "--snapshot", str(EXAMPLE))
    assert wrong.exit_code == 3 and "expected one DeviceTaintRule, found 0" in wrong.stderr
    (tmp_path / "nokey.yaml").write_text("apiVersion: resource.k8s.io/v1\nkind: DeviceTaintRule\nmetadata: {name: x}\n"
                                         "spec: {deviceSelector: {}, taint: {effect: NoExecute}}\n")
    nokey = dra("taints", "--dry-run", "-f", str(tmp_path / "nokey.yaml"), "--snapshot", str(EXAMPLE))
    assert nokey.exit_code == 3 and "spec.taint.key: Required value" in nokey.stderr
    missing = dra("taints", "--dry-run", "-f", str(tmp_path / "nope.yaml"), "--snapshot", str(EXAMPLE))
    assert missing.exit_code in (2, 3) and "Traceback" not in missing.stderr


def test_explain_shows_taints_and_health(dra):
    doc = dra("explain", "claim", "llm-inference-7c9d8b6f5d-r772r-gpu-2nqcv", "-n", "ml", "--snapshot", str(EXAMPLE),
              "-o", "json").json()
    assert [f["code"] for f in doc["findings"]] == ["DeviceUnhealthy"]
    pending = dra("explain", "pod", "batch-embed", "-n", "ml", "--snapshot", str(EXAMPLE), "-o", "json").json()
    taint = [x for n in pending["allocation"]["nodes"] for r in n["requests"] for x in r["rejected"] if x["reason"] == "Taint"]
    assert taint == [{"device": "gpu.example.com/worker-gpu-2/gpu-3", "reason": "Taint",
                      "message": "taint gpu.example.com/unhealthy=ecc-errors:NoSchedule is not tolerated"}]


def test_explain_pod_shows_what_its_devices_suffer(dra, tmp_path):
    """The unhealthy GPU of the example, and a NoExecute rule on the notebooks' shared GPU as seen
    from one of the pods (through the claim it uses)."""
    pod = dra("explain", "pod", "llm-inference-7c9d8b6f5d-r772r", "-n", "ml", "--snapshot", str(EXAMPLE), "-o",
              "json").json()
    assert [f["code"] for f in pod["findings"] if f["code"].startswith("Device")] == ["DeviceUnhealthy"]
    import shutil

    snap = tmp_path / "cluster"
    shutil.copytree(EXAMPLE, snap)
    shutil.copy(RULES / "drain-worker-gpu-2.yaml", snap / "drain.yaml")  # applied: in the snapshot
    doc = dra("explain", "pod", "notebook-alice", "-n", "ml", "--snapshot", str(snap), "-o", "json").json()
    (finding,) = [f for f in doc["findings"] if f["code"] == "DeviceTaintedNoExecute"]
    assert "ml/notebook-alice" in finding["message"] and "rule/drain-worker-gpu-2" in finding["message"]
