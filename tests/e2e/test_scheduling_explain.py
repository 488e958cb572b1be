"""`explain pod` on an unbound pod: the scheduling part, through the CLI, on the example cluster
(ml/feature-store is Pending for memory only because its claim maps 48Gi to node memory) and on
copies of it changed one fact at a time. The scheduler's words are checked against the real
kube-scheduler in tests/cluster/test_pending_oracle.py; here: the numbers, the flags, what is not
evaluated, and that nothing undecided is ever called a fit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster"
FEATURE_STORE = EXAMPLE / "workloads" / "feature-store.yaml"


def snapshot(tmp_path: Path, *extra: dict, edit=None) -> Path:
    """A copy of the example, with ``extra`` objects and the feature-store pod changed by ``edit``."""
    target = tmp_path / "cluster"
    shutil.copytree(EXAMPLE, target)
    if edit is not None:
        path = target / "workloads" / "feature-store.yaml"
        docs = list(yaml.safe_load_all(path.read_text()))
        edit(next(d for d in docs if d["kind"] == "Pod"))
        path.write_text(yaml.safe_dump_all(docs))
    if extra:
        (target / "workloads" / "extra.yaml").write_text(yaml.safe_dump_all(list(extra)))
    return target


def scheduling(dra, snap: Path, *flags: str, pod: str = "feature-store", namespace: str = "ml") -> dict:
    result = dra("explain", "pod", pod, "-n", namespace, "--snapshot", str(snap), "-o", "json", *flags)
    assert result.exit_code == 0, result
    return result.json()


def node_of(doc: dict, name: str) -> dict:
    return next(n for n in doc["scheduling"]["nodes"] if n["node"] == name)


def test_pending_for_memory_because_of_a_dra_mapping(dra):
    doc = scheduling(dra, EXAMPLE)
    cpu = node_of(doc, "worker-cpu-1")
    assert cpu["fits"] is False and cpu["plugin"] == "DynamicResources" and cpu["reasons"] == ["Insufficient memory"]
    [memory] = cpu["evidence"]
    # 72Gi of its own + 48Gi the dra.memory device maps (capacity 48Gi x 1); 2Gi already requested there
    assert (memory["requested"], memory["dra"], memory["used"], memory["allocatable"]) == \
        ("120Gi", "48Gi", "2Gi", "121599944Ki")
    assert doc["scheduling"]["feasibleNodes"] == [] and doc["scheduling"]["nodesChecked"] == 3
    unschedulable = [f for f in doc["findings"] if f["code"] == "Unschedulable"]
    assert len(unschedulable) == 1 and unschedulable[0]["severity"] == "error"
    assert "KEP-5517" in doc["scheduling"]["nextStep"]
    assert any(n["plugin"] == "DefaultPreemption" for n in doc["scheduling"]["notEvaluated"])


def test_without_the_claims_mapping_the_pod_would_fit(dra, tmp_path):
    """The same pod asking 60Gi: 60 + 48 + 2 < 116Gi, so worker-cpu-1 takes it and there is no message."""
    def smaller(pod):
        pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = "60Gi"
        pod["spec"]["containers"][0]["resources"]["limits"]["memory"] = "60Gi"

    doc = scheduling(dra, snapshot(tmp_path, edit=smaller))
    assert node_of(doc, "worker-cpu-1")["fits"] is True
    assert doc["scheduling"]["message"] is None and doc["scheduling"]["feasibleNodes"] == ["worker-cpu-1"]
    assert "Unschedulable" not in {f["code"] for f in doc["findings"]}


def _pod(name: str, *, node: str | None = None, memory: str = "1Gi", phase: str = "Running", priority: int = 0,
         nominated: str | None = None) -> dict:
    status = {"phase": phase}
    if nominated:
        status["nominatedNodeName"] = nominated
    spec = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"memory": memory}}}],
            "priority": priority}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": spec, "status": status}


def _fits_at_60(pod):
    pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = "60Gi"
    pod["spec"]["containers"][0]["resources"]["limits"]["memory"] = "60Gi"


@pytest.mark.parametrize("other, fits", [
    (_pod("hog", node="worker-cpu-1", memory="10Gi"), False),                  # bound: counts
    (_pod("done", node="worker-cpu-1", memory="10Gi", phase="Succeeded"), True),  # terminal: the cache drops it
    (_pod("done", node="worker-cpu-1", memory="10Gi", phase="Failed"), True),
    (_pod("next", memory="10Gi", nominated="worker-cpu-1"), False),             # nominated, same priority: holds room
    (_pod("next", memory="10Gi", nominated="worker-cpu-1", priority=-5), True),  # lower priority: does not
])
def test_what_the_pods_on_a_node_count_for(dra, tmp_path, other, fits):
    doc = scheduling(dra, snapshot(tmp_path, other, edit=_fits_at_60))
    assert node_of(doc, "worker-cpu-1")["fits"] is fits, node_of(doc, "worker-cpu-1")


def test_a_nominated_pod_is_said(dra, tmp_path):
    def nominated(pod):
        _fits_at_60(pod)
        pod["status"]["nominatedNodeName"] = "worker-cpu-1"

    doc = scheduling(dra, snapshot(tmp_path, edit=nominated))
    assert doc["scheduling"]["nominatedNode"] == "worker-cpu-1"
    text = dra("explain", "pod", "feature-store", "-n", "ml", "--snapshot", str(snapshot(tmp_path / "t", edit=nominated)))
    assert "nominated node: worker-cpu-1" in text.stdout


def test_a_gated_pod_gets_the_gated_message_and_the_nodes_it_would_find(dra, tmp_path):
    def gated(pod):
        _fits_at_60(pod)
        pod["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]

    doc = scheduling(dra, snapshot(tmp_path, edit=gated))
    assert doc["scheduling"]["message"] == "Scheduling is blocked due to non-empty scheduling gates"
    assert [w["plugin"] for w in doc["scheduling"]["waiting"]] == ["SchedulingGates"]
    assert "example.com/quota" in doc["scheduling"]["waiting"][0]["why"]
    assert node_of(doc, "worker-cpu-1")["fits"] is True
    assert "Unschedulable" not in {f["code"] for f in doc["findings"]}


def test_a_bound_pod_has_no_scheduling(dra):
    doc = scheduling(dra, EXAMPLE, pod="embedder")
    assert doc.get("scheduling") is None


def _config(tmp_path: Path, **profile) -> Path:
    path = tmp_path / "scheduler.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1",
                                    "kind": "KubeSchedulerConfiguration",
                                    "profiles": [{"schedulerName": "default-scheduler", **profile}]}))
    return path


def test_scheduler_config_disabling_a_plugin(dra, tmp_path):
    config = _config(tmp_path, plugins={"multiPoint": {"disabled": [{"name": "TaintToleration"}]}})
    doc = scheduling(dra, EXAMPLE, "--scheduler-config", str(config))
    # without TaintToleration the GPU nodes get as far as DynamicResources, which finds no dra.memory device
    assert {n["node"]: n["reasons"] for n in doc["scheduling"]["nodes"]} == {
        "worker-cpu-1": ["Insufficient memory"], "worker-gpu-1": ["cannot allocate all claims"],
        "worker-gpu-2": ["cannot allocate all claims"]}
    assert doc["scheduling"]["profile"] == f"profile default-scheduler of {config}"


def test_scheduler_config_with_an_unknown_filter_claims_no_message(dra, tmp_path):
    config = _config(tmp_path, plugins={"filter": {"enabled": [{"name": "ExampleGPUFilter"}]}})
    doc = scheduling(dra, EXAMPLE, "--scheduler-config", str(config))
    assert doc["scheduling"]["message"] is None and doc["scheduling"]["messageKnown"] is False
    assert "ExampleGPUFilter" in [n["plugin"] for n in doc["scheduling"]["notEvaluated"]]
    assert not any(n["fits"] for n in doc["scheduling"]["nodes"])  # never a fit that was not decided
    assert "Unschedulable" not in {f["code"] for f in doc["findings"]}


def test_a_pod_for_another_scheduler_is_not_decided(dra, tmp_path):
    def other(pod):
        _fits_at_60(pod)
        pod["spec"]["schedulerName"] = "volcano"

    doc = scheduling(dra, snapshot(tmp_path, edit=other))
    assert doc["scheduling"]["messageKnown"] is False and doc["scheduling"]["message"] is None
    assert any(n["plugin"] == "profile" and "volcano" in n["why"] for n in doc["scheduling"]["notEvaluated"])


@pytest.mark.parametrize("content, said", [
    ("kind: Pod\napiVersion: v1\n", "not a KubeSchedulerConfiguration"),
    ("apiVersion: v1\nkind: KubeSchedulerConfiguration\n", 'apiVersion "v1" is not kubescheduler.config.k8s.io/v1'),
    ("{unclosed\n", "scheduler.yaml"),
    ("", "expected one KubeSchedulerConfiguration document, found 0"),
])
def test_a_bad_scheduler_config_is_a_clear_error(dra, tmp_path, content, said):
    path = tmp_path / "scheduler.yaml"
    path.write_text(content)
    result = dra("explain", "pod", "feature-store", "-n", "ml", "--snapshot", str(EXAMPLE),
                 "--scheduler-config", str(path))
    assert result.exit_code == 3, result
    assert result.stderr.startswith("error: ") and said in result.stderr and "Traceback" not in result.stderr


def test_a_missing_scheduler_config_file(dra, tmp_path):
    result = dra("explain", "pod", "feature-store", "-n", "ml", "--snapshot", str(EXAMPLE),
                 "--scheduler-config", str(tmp_path / "nope.yaml"))
    assert result.exit_code == 3 and "nope.yaml" in result.stderr and "Traceback" not in result.stderr


def test_node_flag_narrows_the_nodes_not_the_message(dra):
    whole = scheduling(dra, EXAMPLE)
    one = scheduling(dra, EXAMPLE, "--node", "worker-gpu-2")
    assert [n["node"] for n in one["scheduling"]["nodes"]] == ["worker-gpu-2"]
    assert one["scheduling"]["message"] == whole["scheduling"]["message"]


def test_text_shows_the_numbers(dra):
    result = dra("explain", "pod", "feature-store", "-n", "ml", "--snapshot", str(EXAMPLE))
    assert result.exit_code == 0
    assert "Insufficient memory: pod requests 120Gi (DRA 48Gi); node allocatable 121599944Ki, already requested 2Gi" \
        in result.stdout.replace("\n      ", " ")


def test_explain_claim_and_claims_wide_quote_the_scheduler(dra):
    doc = json.loads(dra("explain", "claim", "feature-store-numa-m4t9q", "-n", "ml", "--snapshot", str(EXAMPLE),
                         "-o", "json").stdout)
    [finding] = [f for f in doc["findings"] if f["code"] == "Unschedulable"]
    assert "the scheduler last wrote: 0/3 nodes are available: 1 Insufficient memory" in finding["message"]
    listed = dra("claims", "-A", "-o", "json", "--findings", "--snapshot", str(EXAMPLE)).json()
    row = next(i for i in listed["items"] if i["name"] == "feature-store-numa-m4t9q")
    assert "Unschedulable" in row["findings"]

