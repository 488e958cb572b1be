"""A bad nested DRA value (a taint, a toleration, a counter, a capacity request policy, a selector,
a constraint) through the CLI: one error line naming the object and the field when the snapshot is
read, exit 4 (partial), and "cannot tell" where the field decides, never a traceback or a verdict
from what is left of the object."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

EXAMPLE = Path("examples/cluster")
SLICE = "worker-gpu-2-gpu.example.com-pzrns"  # gpu-3 carries the driver's NoSchedule taint
PROBLEM = (f"error: {{snap}}/dra/resourceslices.yaml: ResourceSlice {SLICE}: spec.devices[3].taints[0].effect: "
           "Input should be a valid string (the object is kept; what depends on this field is shown as unknown)")
UNKNOWN = (f"device gpu.example.com/worker-gpu-2/gpu-3: ResourceSlice {SLICE}: spec.devices[3].taints[0].effect "
           "did not validate")


def _bad_taint_effect(tmp_path: Path, device: str = "gpu-3") -> Path:
    """The example cluster with an effect that is no string on one of worker-gpu-2's GPUs (gpu-3
    has the driver's taint; gpu-0 is allocated to ml/shared-gpu, whose two pods run)."""
    snap = tmp_path / "cluster"
    shutil.copytree(EXAMPLE, snap)
    path = snap / "dra" / "resourceslices.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    items = [item for doc in docs for item in (doc.get("items") or [doc])]
    (found,) = [d for s in items if s["metadata"]["name"] == SLICE for d in s["spec"]["devices"] if d["name"] == device]
    found["taints"] = [{**(found.get("taints") or [{"key": "example.com/health"}])[0], "effect": 5}]
    path.write_text(yaml.safe_dump_all(docs))
    return snap


def test_a_taint_effect_that_is_no_string_is_named_and_unknown(dra, tmp_path):
    snap = _bad_taint_effect(tmp_path)
    result = dra("taints", "--snapshot", str(snap))
    assert result.exit_code == 4 and "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [PROBLEM.format(snap=snap)]
    assert result.stdout.splitlines()[:2] == [
        "DEVICE                               EFFECT      CLAIM    PODS   OUTCOME",
        "gpu.example.com/worker-gpu-2/gpu-3   <unknown>   <none>   0      -"]
    (device,) = dra("taints", "--snapshot", str(snap), "-o", "json").json()["devices"]
    assert device["unknown"] == f"ResourceSlice {SLICE}: spec.devices[3].taints[0].effect did not validate"


def test_the_allocation_on_that_device_is_cannot_tell_not_fits(dra, tmp_path):
    """Read as a dict, the taint had no usable effect and the pod "fit" on worker-gpu-2 (gpu-3 is
    the second GPU it needs): a verdict on a device whose taint nobody could read."""
    snap = _bad_taint_effect(tmp_path)
    result = dra("explain", "pod", "batch-embed", "-n", "ml", "--snapshot", str(snap), "-o", "json")
    assert result.exit_code == 4 and result.stderr.splitlines() == [PROBLEM.format(snap=snap)]
    doc = result.json()
    nodes = {n["node"]: (n["feasible"], n["undetermined"], n["error"]) for n in doc["allocation"]["nodes"]}
    assert nodes == {"worker-cpu-1": (False, None, None), "worker-gpu-1": (False, None, None),
                     "worker-gpu-2": (False, UNKNOWN, None)}
    assert [f["code"] for f in doc["findings"]] == ["ClaimNotAllocated", "AllocationUnknown"]
    assert doc["scheduling"]["feasibleNodes"] == []


def test_an_allocated_device_with_an_unreadable_taint_is_outcome_unknown(dra, tmp_path):
    """Read as a dict, effect 5 was no effect: the claim's two running pods were not at stake at all."""
    snap = _bad_taint_effect(tmp_path, "gpu-0")
    problem = PROBLEM.format(snap=snap).replace("spec.devices[3]", "spec.devices[0]")
    result = dra("taints", "--snapshot", str(snap))
    assert result.exit_code == 4 and result.stderr.splitlines() == [problem]
    assert "gpu.example.com/worker-gpu-2/gpu-0   <unknown>    ml/shared-gpu   2      Unknown" in result.stdout
    (device, _) = dra("taints", "--snapshot", str(snap), "-o", "json").json()["devices"]
    assert device["consumers"] == [{"claim": "ml/shared-gpu", "pods": ["ml/notebook-alice", "ml/notebook-bob"],
                                    "outcome": "Unknown", "evictAt": None,
                                    "unknown": f"ResourceSlice {SLICE}: spec.devices[0].taints[0].effect did not validate"}]
    claim = dra("explain", "claim", "shared-gpu", "-n", "ml", "--snapshot", str(snap))
    assert claim.exit_code == 4 and claim.stderr.splitlines() == [problem]
    assert "    taint example.com/health:<unknown> (slice)" in claim.stdout.splitlines()
