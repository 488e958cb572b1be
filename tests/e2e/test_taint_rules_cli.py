"""DeviceTaintRules that cannot be evaluated, through the CLI on a snapshot: their devices are "cannot
tell" for `explain claim`, `explain pod` and `claims` (no false "fits"), and `taints` names the rule
on stderr with exit 4 (no false eviction, no silence). See docs/kubernetes/dra-apis.md §7.

No real component confirms these verdicts: the v1.37.2 API server refuses such a rule on create
(validateDeviceTaint), so only a snapshot, or a server of a later release with an effect this one
does not know, can hold one. "Cannot tell" is the answer because the rule's meaning is unknown
here, not because a scheduler was seen to refuse."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from builders import claim, pod, reserved_pod, resource_slice
from test_watch import fresh, taint_server, when_watching

GPU, NODE = "gpu.example.com", "worker-1"
LATER = "NoExecuteWithPodDisruptionBudget"  # an effect a newer release may add (the API comment's example)


def _snapshot(tmp_path: Path, spec: dict) -> str:
    """worker-1 with gpu-0 and gpu-1; gpu-1 is held by claim ml/held for the running pod ml/user; the
    pending pod ml/p waits for claim ml/want (one GPU); DeviceTaintRule maint has ``spec``."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": {}},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
    klass = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": GPU},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU}"'}}]}}
    rule = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "maint"}, "spec": spec}
    user = pod("user", claims={"g": "held"})
    objects = [node, klass, resource_slice(NODE, GPU, ["gpu-0", "gpu-1"]), rule,
               claim("held", devices=[(GPU, NODE, "gpu-1")], reserved_for=[reserved_pod(user)]), user,
               claim("want", devices=(), node=None), pod("p", node=None, claims={"x": "want"}, phase="Pending")]
    (tmp_path / "all.yaml").write_text(yaml.safe_dump_all(objects))
    return str(tmp_path)


SPECS = {
    # (the rule's spec, the reason named, the read problem on stderr for a field that is no string, or None)
    "effect no string": ({"deviceSelector": {"driver": GPU}, "taint": {"key": "example.com/maint", "effect": 7}},
                         "spec.taint.effect did not validate",
                         "spec.taint.effect: Input should be a valid string"),
    "effect unknown": ({"deviceSelector": {"driver": GPU}, "taint": {"key": "example.com/maint", "effect": LATER}},
                       f'spec.taint.effect "{LATER}" is none of None, NoSchedule, NoExecute (a newer release may '
                       "define it)", None),
    # the dropped driver used to match every driver: the rule refused and evicted on every driver's device
    "selector field no string": ({"deviceSelector": {"driver": ["gpu"], "pool": NODE},
                                  "taint": {"key": "example.com/maint", "effect": "NoExecute"}},
                                 "spec.deviceSelector.driver did not validate",
                                 "spec.deviceSelector.driver: Input should be a valid string"),
}


def _message(reason: str) -> str:
    return (f"DeviceTaintRule maint could not be evaluated ({reason}): whether it taints the devices it may select "
            "is unknown")


def _read_problem(snap: str, field: str) -> str:
    return (f"error: {snap}/all.yaml: DeviceTaintRule maint: {field} (the object is kept; what depends on this field "
            "is shown as unknown)")


@pytest.mark.parametrize("case", list(SPECS))
def test_explain_claim_cannot_tell_instead_of_fits(dra, tmp_path, case):
    spec, reason, field = SPECS[case]
    snap = _snapshot(tmp_path, spec)
    result = dra("explain", "claim", "want", "-n", "ml", "--snapshot", snap, "-o", "json")
    # a field that did not validate is a read problem (exit 4); an unknown effect is no bad input (exit 0)
    assert result.exit_code == (4 if field else 0), result
    assert result.stderr == (_read_problem(snap, field) + "\n" if field else "")
    allocation = result.json()["allocation"]
    assert allocation["feasibleNodes"] == []  # before: ["worker-1"], picking gpu-0
    (node,) = allocation["nodes"]
    assert not node["feasible"] and node["results"] == []
    assert node["undetermined"] == f"device {GPU}/{NODE}/gpu-0: {_message(reason)}"
    (request,) = node["requests"]
    assert {r["device"]: r["reason"] for r in request["rejected"]} == {
        f"{GPU}/{NODE}/gpu-0": "Undetermined", f"{GPU}/{NODE}/gpu-1": "AlreadyAllocated"}
    codes = [f["code"] for f in result.json()["findings"]]
    assert "AllocationUnknown" in codes and "Unsatisfiable" not in codes


def test_explain_pod_and_claims_cannot_tell_either(dra, tmp_path):
    snap = _snapshot(tmp_path, SPECS["effect unknown"][0])
    doc = dra("explain", "pod", "p", "-n", "ml", "--snapshot", snap, "-o", "json").json()
    assert doc["allocation"]["feasibleNodes"] == []
    assert doc["allocation"]["nodes"][0]["undetermined"] == f"device {GPU}/{NODE}/gpu-0: " + _message(
        SPECS["effect unknown"][1])
    codes = [f["code"] for f in doc["findings"]]
    assert "AllocationUnknown" in codes and "Unsatisfiable" not in codes
    claims = dra("claims", "-A", "--snapshot", snap, "-o", "json").json()
    findings = {i["name"]: i["findings"] for i in claims["items"]}
    assert "AllocationUnknown" in findings["want"] and "Unsatisfiable" not in findings["want"]


@pytest.mark.parametrize("case", list(SPECS))
def test_taints_names_the_rule_and_exits_partial(dra, tmp_path, case):
    spec, reason, field = SPECS[case]
    snap = _snapshot(tmp_path, spec)
    result = dra("taints", "--snapshot", snap, "-o", "json")
    assert result.exit_code == 4, result  # partial, never 1 (an eviction) nor 0 (nothing to say)
    assert result.stderr == (_read_problem(snap, field) + "\n" if field else "") + f"error: {_message(reason)}\n"
    doc = result.json()
    assert doc["problems"][-1] == _message(reason)
    devices = {d["device"]: d for d in doc["devices"]}
    assert sorted(devices) == [f"{GPU}/{NODE}/gpu-0", f"{GPU}/{NODE}/gpu-1"]
    assert all(d["unknown"] == _message(reason) and d["taints"] == [] for d in devices.values())
    assert devices[f"{GPU}/{NODE}/gpu-1"]["consumers"] == [
        {"claim": "ml/held", "pods": ["ml/user"], "outcome": "Unknown", "evictAt": None, "unknown": _message(reason)}]
    assert [f["code"] for f in doc["findings"]] == ["DeviceTaintUnknown"]
    text = dra("taints", "--snapshot", snap)
    assert text.exit_code == 4
    assert [line.split() for line in text.stdout.splitlines()[:3]] == [
        ["DEVICE", "EFFECT", "CLAIM", "PODS", "OUTCOME"],
        [f"{GPU}/{NODE}/gpu-0", "<unknown>", "<none>", "0", "-"],
        [f"{GPU}/{NODE}/gpu-1", "<unknown>", "ml/held", "1", "Unknown"]]


def test_explain_claim_of_an_allocated_claim_says_unknown(dra, tmp_path):
    snap = _snapshot(tmp_path, SPECS["effect unknown"][0])
    doc = dra("explain", "claim", "held", "-n", "ml", "--snapshot", snap, "-o", "json").json()
    assert [(f["code"], f["message"]) for f in doc["findings"] if f["code"].startswith("DeviceTaint")] == [(
        "DeviceTaintUnknown", f"what the taints of device {GPU}/{NODE}/gpu-1 do to claim ml/held is unknown, so "
                              "whether pods ml/user are evicted or keep it is not concluded: "
                              + _message(SPECS["effect unknown"][1]))]


def test_taints_watch_names_the_rule_once_and_exits_partial(make_apiserver, kubeconfig_for, dra):
    """A rule with an unknown effect arrives during ``taints -w``, then changes again: its devices
    are ADDED as Unknown (never Evicted), and stderr names it once for the whole watch, exit 4."""
    user = pod("user", claims={"g": "held"})
    server = taint_server(make_apiserver, [resource_slice(NODE, GPU, ["gpu-0", "gpu-1"]), user,
                                           claim("held", devices=[(GPU, NODE, "gpu-1")], reserved_for=[reserved_pod(user)])])
    kubeconfig = str(kubeconfig_for(server, namespace="ml"))
    spec = {"deviceSelector": {"device": "gpu-1"}, "taint": {"key": "example.com/maint", "effect": LATER}}
    maint = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "maint"}, "spec": spec}

    def changes(server):
        server.add(maint)
        time.sleep(0.4)
        server.add(fresh({**maint, "spec": {**spec, "taint": {**spec["taint"], "value": "again"}}}))

    thread = when_watching(server, "devicetaintrules", changes)
    result = dra("taints", "--kubeconfig", kubeconfig, "-w", "--request-timeout", "2500ms", "--output-watch-events")
    thread.join()
    assert result.exit_code == 4, result
    assert [" ".join(line.split()) for line in result.stdout.splitlines()] == [
        "No tainted devices.",
        "EVENT DEVICE EFFECT CLAIM PODS OUTCOME",
        f"ADDED {GPU}/{NODE}/gpu-1 <unknown> ml/held 1 Unknown"]
    assert result.stderr.count(f"error: {_message(SPECS['effect unknown'][1])}\n") == 1, result.stderr
